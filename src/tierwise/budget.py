"""Budgets, allocations and the pruning bands chosen by budget health.

Two different things are called "budget" in the specifications; tierwise keeps them apart:

* The **budget** of one call: tokens the prompt may use, ``window - reserve`` (the model's context
  window minus the tokens reserved for its response). :class:`Budget` also carries optional
  per-kind **allocations**: ceilings in tokens (``int``) or as a share of the budget (``float``).
  Allocations *shape* truncatable layers (cut them to their share); they never drop a layer and
  never override priorities. Budget left over after filling is handed back to layers that were cut
  by their allocation, in fill order, so a generous budget is not wasted.

* **Budget health**: the share of the *spending* budget (tokens or dollars, per session and per user
  per month) that is still unspent, from 1.0 (nothing spent) to 0.0 (limit reached). The stricter of
  the session and the monthly figure wins.

Seed 004 names its bands on a ``budgetPercent`` that it computes as the share *used*, yet prunes
hardest when that number is *low* (``< 40%`` → "critical: minimal context"), and its dashboard
colours the same number green when low. Read literally, a fresh session would get the least
context. tierwise resolves it by defining the input as health (share remaining) and keeping the
seed's thresholds and contents on it: above 80% left → healthy (all tiers), 60–80% → caution,
40–60% → warning, below 40% → critical. The band therefore only gets stricter as money or tokens
are spent. With no spending limit configured, health is unknown and no band applies.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from tierwise.errors import InputError

__all__ = [
    "BANDS",
    "DEFAULT_WINDOW",
    "Budget",
    "PruningBand",
    "ReferenceMode",
    "band_for_health",
    "budget_health",
]

ReferenceMode = Literal["full", "summary", "none"]

DEFAULT_WINDOW = 16_000
"""A budget's window when none is set: the web and terminal chat's, and ``/v1``'s for a model whose
window tierwise does not know (:mod:`tierwise.providers.windows`)."""


@dataclass(frozen=True)
class Budget:
    """Tokens available for one prompt, with optional per-kind allocations.

    Args:
        window: the model's context window (or any total the call must fit), in tokens.
        reserve: tokens kept free for the response.
        allocations: per layer kind, a ceiling in tokens (``int``) or a share of the budget
            (``float`` in (0, 1]).
        min_fragment_tokens: a truncated layer is never cut below this many tokens (seed 000's
            "minimum useful size"); smaller than that, it is dropped instead.
        spill: hand budget left over after filling to layers cut by their allocation.

    Example:
        >>> Budget(window=8192, reserve=1024).available
        7168
    """

    window: int
    reserve: int = 0
    allocations: Mapping[str, int | float] = field(default_factory=dict)
    min_fragment_tokens: int = 100
    spill: bool = True

    def __post_init__(self) -> None:
        if isinstance(self.window, bool) or not isinstance(self.window, int) or self.window <= 0:
            raise InputError(f"the budget must be a positive number of tokens, got {self.window!r}")
        if isinstance(self.reserve, bool) or not isinstance(self.reserve, int) or self.reserve < 0:
            raise InputError(f"the reserve must be 0 or more tokens, got {self.reserve!r}")
        if self.reserve >= self.window:
            raise InputError(
                f"the reserve ({self.reserve}) leaves nothing of the budget ({self.window}); "
                "use a reserve smaller than the budget"
            )
        if self.min_fragment_tokens < 1:
            raise InputError("min_fragment_tokens must be at least 1")
        shares = 0.0
        for kind, value in self.allocations.items():
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise InputError(f"allocation for {kind!r} must be tokens (int) or a share (float)")
            if isinstance(value, float):
                if not 0.0 < value <= 1.0:
                    raise InputError(
                        f"allocation share for {kind!r} must be in (0, 1], got {value}; "
                        "give tokens as an int instead"
                    )
                shares += value
            elif value < 0:
                raise InputError(f"allocation for {kind!r} must be 0 or more tokens, got {value}")
        if shares > 1.0 + 1e-9:
            raise InputError(f"allocation shares add up to {shares:.2f}; they must not exceed 1.0")

    @property
    def available(self) -> int:
        """Tokens the prompt may use: ``window - reserve``."""
        return self.window - self.reserve

    def ceiling(self, kind: str) -> int | None:
        """The allocation of ``kind`` in tokens, or ``None`` when it has none."""
        value = self.allocations.get(kind)
        if value is None:
            return None
        if isinstance(value, float):
            return int(self.available * value)
        return value

    @classmethod
    def progressive(cls) -> Budget:
        """Seed 000's 10,000-token split.

        2,000 reserved for the response and tool results; 500 system, 300 profile, 1,000 location,
        500 related, 3,500 history, 500 current message.
        """
        return cls(
            window=10_000,
            reserve=2_000,
            allocations={
                "system": 500,
                "profile": 300,
                "location": 1_000,
                "related": 500,
                "history": 3_500,
                "input": 500,
            },
        )

    @classmethod
    def hierarchical(cls, window: int, reserve: int = 0) -> Budget:
        """Seed 003's split of the budget.

        Narrative 15%, recent turns 25%, headers 10%, summaries 35%, retrieved 15%.
        """
        return cls(
            window=window,
            reserve=reserve,
            allocations={
                "narrative": 0.15,
                "history": 0.25,
                "headers": 0.10,
                "summaries": 0.35,
                "retrieved": 0.15,
            },
        )


@dataclass(frozen=True)
class PruningBand:
    """What a budget-health band lets into the pack (seed 004's pruning strategy).

    Args:
        name: healthy, caution, warning or critical.
        min_health: the band applies from this health (share unspent) upwards.
        history_messages: most history messages kept (``None``: no limit besides tokens).
        related_items: most ``related`` layers kept (``None``: all).
        references: how ``retrieved`` layers enter: whole, as their summary, or not at all.
    """

    name: str
    min_health: float
    history_messages: int | None
    related_items: int | None
    references: ReferenceMode


BANDS: tuple[PruningBand, ...] = (
    PruningBand("healthy", 0.80, history_messages=10, related_items=None, references="full"),
    PruningBand("caution", 0.60, history_messages=5, related_items=None, references="full"),
    PruningBand("warning", 0.40, history_messages=2, related_items=3, references="summary"),
    PruningBand("critical", 0.0, history_messages=0, related_items=1, references="none"),
)


def budget_health(
    *,
    session_used: float = 0.0,
    session_limit: float | None = None,
    month_used: float = 0.0,
    month_limit: float | None = None,
) -> float | None:
    """Share of the spending budget still unspent, 0.0–1.0; the stricter of session and month.

    Returns ``None`` when no limit is set (health is unknown, so no band should apply).

    Example:
        >>> budget_health(session_used=30_000, session_limit=100_000)
        0.7
    """
    shares: list[float] = []
    for used, limit in ((session_used, session_limit), (month_used, month_limit)):
        if limit is None:
            continue
        if limit <= 0:
            raise InputError(f"a spending limit must be positive, got {limit}")
        shares.append(1.0 - used / limit)
    if not shares:
        return None
    return round(min(1.0, max(0.0, min(shares))), 6)


def band_for_health(health: float, bands: tuple[PruningBand, ...] = BANDS) -> PruningBand:
    """The band for ``health`` (share unspent): the first whose ``min_health`` it reaches.

    Example:
        >>> band_for_health(0.5).name
        'warning'
    """
    if not 0.0 <= health <= 1.0:
        raise InputError(f"budget health is a share between 0 and 1, got {health}")
    for band in sorted(bands, key=lambda b: -b.min_health):
        if health >= band.min_health:
            return band
    raise InputError("no pruning band covers health 0; give one band a min_health of 0")
