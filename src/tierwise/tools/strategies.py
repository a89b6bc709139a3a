"""What to do when a tool fails: seed 000 §8.2's failure strategies, as data.

A :class:`FailureStrategy` matches a tool (or any tool) and an error message, and names a fallback:

- ``retry``: run the tool again, up to ``retries`` more times, waiting ``backoff_s``, then twice that …;
- ``alternative``: run ``alternative_tool`` with the arguments it accepts (the rest are dropped) and
  give the model its result, prefixed with ``user_message``;
- ``explain``: give the model an error that says what to tell the user (``user_message``);
- ``skip``: give the model a short note that the tool was skipped.

The executor uses the first strategy that matches, in the order given. Strategies match runtime
failures only (exceptions and timeouts): invalid arguments are the model's to fix, and an unknown
tool has nothing to retry.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from tierwise.errors import InputError

__all__ = ["DEFAULT_STRATEGIES", "FALLBACKS", "FailureStrategy", "Fallback", "find_strategy"]

Fallback = Literal["retry", "alternative", "explain", "skip"]
FALLBACKS: tuple[Fallback, ...] = ("retry", "alternative", "explain", "skip")


@functools.lru_cache(maxsize=256)
def _pattern(text: str) -> re.Pattern[str] | None:
    try:
        return re.compile(text, re.IGNORECASE)
    except re.error:
        return None


@dataclass(frozen=True, slots=True)
class FailureStrategy:
    """One rule: when ``tool`` fails with an error matching ``error``, fall back to ``fallback``.

    Attributes:
        tool: the tool it applies to; ``None`` for any tool.
        error: a case-insensitive substring of the error message, or a regular expression searched
            in it (the message is ``"ExceptionType: message"``, or ``"timed out after N s"``).
        fallback: ``"retry"``, ``"alternative"``, ``"explain"`` or ``"skip"``.
        alternative_tool: the tool to run instead (required for ``"alternative"``).
        user_message: what the user should be told (``explain``), or the alternative result's prefix.
        retries: how many more attempts ``retry`` makes after the first failure.
        backoff_s: the wait before the first retry; each further retry waits twice as long.

    Example:
        >>> rule = FailureStrategy("schedule_task", r"rate[ _-]?limit", "retry", retries=3)
        >>> rule.matches("schedule_task", "RateLimitError: slow down")
        True
        >>> rule.matches("list_tasks", "rate_limit")  # another tool
        False
    """

    tool: str | None
    error: str
    fallback: Fallback
    alternative_tool: str | None = None
    user_message: str | None = None
    retries: int = 2
    backoff_s: float = 0.2

    def __post_init__(self) -> None:
        if self.fallback not in FALLBACKS:
            raise InputError(f"unknown fallback {self.fallback!r}; use one of {', '.join(FALLBACKS)}")
        if self.fallback == "alternative" and not self.alternative_tool:
            raise InputError("an 'alternative' strategy needs alternative_tool (the tool to run instead)")
        if not self.error:
            raise InputError("error must be a non-empty substring or regular expression to match")
        if isinstance(self.retries, bool) or not isinstance(self.retries, int) or self.retries < 0:
            raise InputError(f"retries must be a whole number, 0 or more (got {self.retries!r})")
        if self.backoff_s < 0:
            raise InputError(f"backoff_s must be 0 or more seconds (got {self.backoff_s!r})")

    def matches(self, tool: str, error: str) -> bool:
        """Whether this strategy applies to ``tool`` failing with message ``error``."""
        if self.tool is not None and self.tool != tool:
            return False
        if self.error.casefold() in error.casefold():
            return True
        pattern = _pattern(self.error)
        return pattern is not None and pattern.search(error) is not None

    def delay(self, retry: int) -> float:
        """Seconds to wait before retry number ``retry`` (1 for the first): exponential backoff."""
        return float(self.backoff_s * 2 ** max(0, retry - 1))


DEFAULT_STRATEGIES: tuple[FailureStrategy, ...] = (
    FailureStrategy(
        "get_calendar_events",
        r"requires? reconnect",
        "explain",
        user_message="Calendar disconnected. Please reconnect your calendar in settings.",
    ),
    FailureStrategy(
        "get_task_details",
        r"not[ _-]?found",
        "alternative",
        alternative_tool="list_tasks",
        user_message="Task not found. Let me search for similar tasks.",
    ),
    FailureStrategy(
        "schedule_task",
        r"rate[ _-]?limit",
        "retry",
        user_message="Calendar API limit reached. Retrying in a moment...",
    ),
)
"""Seed 000 §8.2's three strategies; the patterns also accept ``RateLimitError``, ``NotFound`` …"""


def find_strategy(strategies: Sequence[FailureStrategy], tool: str, error: str) -> FailureStrategy | None:
    """The first strategy matching ``tool`` and ``error``, or ``None``."""
    return next((s for s in strategies if s.matches(tool, error)), None)
