"""The cost guard: tokens and dollars per session and per user per month, against limits.

Before a turn, :meth:`CostGuard.check` refuses it with a clear message when a hard limit is reached
(never a silently cut answer). Between, :meth:`CostGuard.health` is the share of the budget still
unspent — the stricter of session and month, tokens and dollars — which chooses the packer's pruning
band (:func:`tierwise.budget.band_for_health`). Spending is kept in a :class:`Ledger`: in memory, or
in the store (``usage`` audit events, summed in one indexed SQL aggregate) so it survives restarts.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from tierwise.budget import BANDS, PruningBand, band_for_health
from tierwise.errors import InputError, UserError
from tierwise.providers.pricing import Price, lookup_price
from tierwise.store import Store

__all__ = [
    "BudgetExceeded",
    "CostGuard",
    "Limits",
    "MemoryLedger",
    "Spend",
    "StoreLedger",
    "unpriced_warning",
]


class BudgetExceeded(UserError):
    """A hard spending limit is reached; the message names it and how to raise it."""


@dataclass(frozen=True)
class Limits:
    """Hard limits (``None``: no limit)."""

    session_tokens: int | None = None
    session_dollars: float | None = None
    month_tokens: int | None = None
    month_dollars: float | None = None

    @classmethod
    def from_env(cls) -> Limits:
        """Limits from the environment, read now (never at import).

        ``TIERWISE_SESSION_TOKEN_LIMIT``, ``TIERWISE_SESSION_DOLLAR_LIMIT``,
        ``TIERWISE_MONTHLY_TOKEN_LIMIT``, ``TIERWISE_MONTHLY_DOLLAR_LIMIT``; unset means no limit.
        """

        def read(name: str, kind: Callable[[str], float]) -> float | None:
            raw = os.environ.get(f"TIERWISE_{name}")
            if raw is None or raw.strip() == "":
                return None
            try:
                value = kind(raw)
            except ValueError:
                raise InputError(
                    f"TIERWISE_{name}={raw!r} is not a number; set it like TIERWISE_{name}=5"
                ) from None
            if value <= 0:
                raise InputError(f"TIERWISE_{name} must be positive (or unset for no limit)")
            return value

        st, mt = read("SESSION_TOKEN_LIMIT", int), read("MONTHLY_TOKEN_LIMIT", int)
        return cls(
            session_tokens=int(st) if st is not None else None,
            session_dollars=read("SESSION_DOLLAR_LIMIT", float),
            month_tokens=int(mt) if mt is not None else None,
            month_dollars=read("MONTHLY_DOLLAR_LIMIT", float),
        )

    def dollars(self) -> bool:
        """Whether a dollar limit (session or month) is set."""
        return self.session_dollars is not None or self.month_dollars is not None

    def any(self) -> bool:
        """Whether any limit is set."""
        return any(
            v is not None
            for v in (self.session_tokens, self.session_dollars, self.month_tokens, self.month_dollars)
        )


@dataclass(frozen=True)
class Spend:
    """Tokens and dollars spent in a session and by its user this month."""

    session_tokens: int = 0
    session_dollars: float = 0.0
    month_tokens: int = 0
    month_dollars: float = 0.0


class Ledger(Protocol):
    """Where spending is recorded."""

    def record(
        self, user_id: str, chat_id: str, tokens: int, dollars: float, at: datetime, cached_tokens: int = 0
    ) -> None:
        """Add one turn's spending (``cached_tokens``: its prompt tokens the model's cache served)."""
        ...

    def spend(self, user_id: str, chat_id: str, month_start: datetime) -> Spend:
        """What the session and the user (since ``month_start``) have spent."""
        ...


class MemoryLedger:
    """An in-process ledger (tests, one-off scripts)."""

    def __init__(self) -> None:
        self._rows: list[tuple[str, str, int, float, datetime]] = []
        self._lock = threading.Lock()

    def record(
        self, user_id: str, chat_id: str, tokens: int, dollars: float, at: datetime, cached_tokens: int = 0
    ) -> None:
        """Add one turn's spending (cached tokens are not kept: limits count every token)."""
        with self._lock:
            self._rows.append((user_id, chat_id, tokens, dollars, at))

    def spend(self, user_id: str, chat_id: str, month_start: datetime) -> Spend:
        """Sum the session's and the user's month."""
        st = sd = mt = md = 0.0
        for u, c, tokens, dollars, at in self._rows:
            if u != user_id:
                continue
            if c == chat_id:
                st, sd = st + tokens, sd + dollars
            if at >= month_start:
                mt, md = mt + tokens, md + dollars
        return Spend(int(st), sd, int(mt), md)


class StoreLedger:
    """Spending in the store (per user, survives restarts): ``usage`` audit entries with indexed rows.

    :meth:`spend` is one SQL aggregate over the chat's rows and the user's rows of the month
    (:meth:`~tierwise.store.Store.usage_totals`), whatever the user spent before.
    """

    def __init__(self, store: Store) -> None:
        self.store = store

    def record(
        self, user_id: str, chat_id: str, tokens: int, dollars: float, at: datetime, cached_tokens: int = 0
    ) -> None:
        """Add one turn's spending: a ``usage`` entry with its tokens, dollars and cached tokens."""
        self.store.record_usage(
            user_id, chat_id, tokens=tokens, dollars=dollars, cached_tokens=cached_tokens, at=at
        )

    def spend(self, user_id: str, chat_id: str, month_start: datetime) -> Spend:
        """Sum the session's and the user's month, in the database."""
        totals = self.store.usage_totals(user_id, chat_id, month_start)
        return Spend(totals.chat_tokens, totals.chat_dollars, totals.since_tokens, totals.since_dollars)


class CostGuard:
    """Checks and records spending against :class:`Limits`.

    Example:
        >>> guard = CostGuard(Limits(session_tokens=1000), MemoryLedger())
        >>> guard.record("u", "c", tokens=600, dollars=0.01)
        >>> guard.health("u", "c")
        0.4
        >>> guard.band("u", "c").name
        'warning'
    """

    def __init__(self, limits: Limits, ledger: Ledger, *, bands: tuple[PruningBand, ...] = BANDS) -> None:
        self.limits = limits
        self.ledger = ledger
        self.bands = bands

    def spend(self, user_id: str, chat_id: str, now: datetime | None = None) -> Spend:
        """What has been spent (session, and the user's calendar month in UTC)."""
        now = now or datetime.now(UTC)
        month_start = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
        return self.ledger.spend(user_id, chat_id, month_start)

    def health(self, user_id: str, chat_id: str, now: datetime | None = None) -> float | None:
        """Share of the budget left, 0–1, the stricter of every limit; ``None`` without limits."""
        if not self.limits.any():
            return None
        spent = self.spend(user_id, chat_id, now)
        shares = [
            1 - used / limit
            for used, limit in (
                (spent.session_tokens, self.limits.session_tokens),
                (spent.session_dollars, self.limits.session_dollars),
                (spent.month_tokens, self.limits.month_tokens),
                (spent.month_dollars, self.limits.month_dollars),
            )
            if limit is not None
        ]
        return round(min(1.0, max(0.0, min(shares))), 6)

    def band(self, user_id: str, chat_id: str, now: datetime | None = None) -> PruningBand | None:
        """The pruning band for the current health (``None`` without limits)."""
        return self.band_at(self.health(user_id, chat_id, now))

    def band_at(self, health: float | None) -> PruningBand | None:
        """The pruning band for a :meth:`health` already read (``None`` for ``None``)."""
        return band_for_health(health, self.bands) if health is not None else None

    def check(self, user_id: str, chat_id: str, now: datetime | None = None) -> None:
        """Refuse a turn when a hard limit is reached.

        Raises:
            BudgetExceeded: naming the limit, what was spent, and the setting that raises it.
        """
        if not self.limits.any():
            return
        spent = self.spend(user_id, chat_id, now)
        checks = (
            (
                "this chat's token limit",
                spent.session_tokens,
                self.limits.session_tokens,
                "SESSION_TOKEN_LIMIT",
                "",
            ),
            (
                "this chat's spending limit",
                spent.session_dollars,
                self.limits.session_dollars,
                "SESSION_DOLLAR_LIMIT",
                "$",
            ),
            (
                "your monthly token limit",
                spent.month_tokens,
                self.limits.month_tokens,
                "MONTHLY_TOKEN_LIMIT",
                "",
            ),
            (
                "your monthly spending limit",
                spent.month_dollars,
                self.limits.month_dollars,
                "MONTHLY_DOLLAR_LIMIT",
                "$",
            ),
        )
        for label, used, limit, env, unit in checks:
            if limit is not None and used >= limit:
                shown = (
                    f"{unit}{used:,.2f} of {unit}{limit:,.2f}"
                    if unit
                    else f"{int(used):,} of {int(limit):,} tokens"
                )
                raise BudgetExceeded(
                    f"{label} is reached ({shown}); start a new chat or raise TIERWISE_{env}"
                )

    def record(
        self,
        user_id: str,
        chat_id: str,
        *,
        tokens: int,
        dollars: float,
        at: datetime | None = None,
        cached_tokens: int = 0,
    ) -> None:
        """Record one turn's spending; ``cached_tokens`` are its prompt tokens the model's cache served.

        ``dollars`` already price those at the cached rate; limits count every token all the same.
        """
        at = at or datetime.now(UTC)
        self.ledger.record(user_id, chat_id, tokens, dollars, at, cached_tokens=cached_tokens)


def unpriced_warning(limits: Limits, model: str | None, prices: Mapping[str, Price] | None) -> str | None:
    """What to say when a dollar limit is set but ``model`` has no price (``None`` when all is well).

    Such a model's calls cost $0 in the ledger, so a dollar limit would never be reached; the
    message names the setting that gives the model a price.

    Example:
        >>> unpriced_warning(Limits(session_dollars=1.0), "my-local-model", {}) is not None
        True
        >>> unpriced_warning(Limits(session_dollars=1.0), "gpt-4o-mini", {}) is None
        True
    """
    if not limits.dollars():
        return None
    if model and lookup_price(model, prices) is not None:
        return None
    named = model or "the model"
    example = model or "*"
    return (
        f"a dollar limit is set but {named} has no known price, so its calls count as $0 and the "
        "dollar limit can never be reached; give it a price in USD per 1M tokens with "
        f'TIERWISE_PRICES=\'{{"{example}": {{"input": 0.5, "output": 1.5}}}}\' '
        '(the key "*" prices every model the table lacks), or set a token limit instead'
    )
