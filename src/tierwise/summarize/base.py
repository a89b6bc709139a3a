"""The Summarizer interface and the checks every summary must pass.

A summary that comes back empty, over its cap or cut mid-sentence is rejected, never stored: the
caller keeps what it had (seed 003's "summary drift" risk; STYLE.md: summaries must not silently
come back empty or truncated and overwrite the previous one).
"""

from __future__ import annotations

import re
from typing import Protocol, runtime_checkable

from tierwise.errors import TierwiseError
from tierwise.tokens import TokenCounter

__all__ = ["Summarizer", "SummaryRejected", "check_summary"]

_SENTENCE_END = re.compile(r"[.!?。！？…)\]\"']\s*$")


class SummaryRejected(TierwiseError):
    """A summary failed validation; ``reason`` says why (empty, over cap, cut mid-sentence)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@runtime_checkable
class Summarizer(Protocol):
    """Turns text into a summary of at most ``max_tokens`` tokens.

    ``focus`` names what to keep (e.g. "decisions, changes, open questions"). Implementations must
    return text that passes :func:`check_summary`, or raise :class:`SummaryRejected`.
    """

    name: str

    def summarize(self, text: str, *, max_tokens: int, focus: str | None = None) -> str:
        """Summarise ``text`` within ``max_tokens``."""
        ...


def check_summary(summary: str, max_tokens: int, counter: TokenCounter) -> str:
    """Return ``summary`` stripped if it is non-empty, within ``max_tokens`` and ends a sentence.

    Raises:
        SummaryRejected: with the reason.
    """
    text = summary.strip()
    if not text:
        raise SummaryRejected("the summary is empty")
    tokens = counter.count(text)
    if tokens > max_tokens:
        raise SummaryRejected(f"the summary has {tokens} tokens, over its cap of {max_tokens}")
    if not _SENTENCE_END.search(text):
        raise SummaryRejected("the summary stops mid-sentence")
    return text
