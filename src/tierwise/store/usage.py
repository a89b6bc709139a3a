"""Spending read back from the audit log: what each chat's turns used and cost, summed in the database.

Every turn that reached a model leaves a ``turn`` audit entry whose ``usage`` holds its
``prompt_tokens``, ``completion_tokens``, ``dollars`` and ``price_known`` (the chat engine and the
OpenAI-compatible endpoint both write them) and, since prompt caching is accounted, its
``cached_tokens`` (reported by the model), ``prefix_tokens`` (the packs' expected cache hit) and
``saved_dollars``; every model call leaves one ``pack`` entry. Audit
entries outlive the chat they mention, so a deleted chat's spending still counts for its user.

The cost guard's ledger is here too: :meth:`UsageMixin.record_usage` writes a turn's ``usage``
audit entry with a row of ``usage_log`` (the same figures in columns), and
:meth:`UsageMixin.usage_totals` sums a chat's and the user's current period in one statement over
indexes that cover it, however many turns the user has taken.

Mixed into :class:`~tierwise.store.repository.Store`; the same per-user scoping applies.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from tierwise.errors import InputError
from tierwise.store import models
from tierwise.store._base import StoreBase
from tierwise.store.checks import check_count, check_text, check_time
from tierwise.store.errors import NotFoundError

__all__ = ["AuditCount", "SpendGroup", "UsageMixin", "UsageTotals"]

_USAGE: sa.Table = models.UsageEntry.__table__  # type: ignore[assignment]
_AUDIT: sa.Table = models.AuditEntry.__table__  # type: ignore[assignment]


def _totals_query() -> sa.CompoundSelect[Any]:
    """The chat's usage (all time) and the user's since ``:b_since``: two rows, one statement.

    Each half reads only its own index (``user_id, chat_id, …`` and ``user_id, created_at, …``),
    which also holds the summed columns, so no table row (and no JSON) is read.
    """
    usage = _USAGE.c

    def summed(part: int, *where: Any) -> sa.Select[Any]:
        zero: sa.ColumnClause[int] = sa.literal_column(
            "0"
        )  # constants in the SQL: nothing to bind on every check
        return sa.select(
            sa.literal_column(str(part), sa.Integer),
            sa.func.coalesce(sa.func.sum(usage.tokens), zero),
            sa.func.coalesce(sa.func.sum(usage.dollars), zero),
        ).where(usage.user_id == sa.bindparam("b_user"), *where)

    return sa.union_all(
        summed(0, usage.chat_id == sa.bindparam("b_chat")),
        summed(1, usage.created_at >= sa.bindparam("b_since", type_=models.UTCDateTime())),
    )


_TOTALS = _totals_query()
_INSERT_USAGE = sa.insert(_USAGE)
_INSERT_USAGE_AUDIT = sa.insert(_AUDIT)


@dataclass(frozen=True, slots=True)
class UsageTotals:
    """What the cost guard sums: a chat's tokens and dollars (all time), and the user's since a moment."""

    chat_tokens: int = 0
    chat_dollars: float = 0.0
    since_tokens: int = 0
    since_dollars: float = 0.0


@dataclass(frozen=True, slots=True)
class SpendGroup:
    """The summed usage of one chat's turns on one model, priced or not."""

    chat_id: str | None
    model: str | None
    price_known: bool
    turns: int
    prompt_tokens: int
    completion_tokens: int
    dollars: float
    last_at: datetime
    cached_tokens: int = 0
    prefix_tokens: int = 0
    saved_dollars: float = 0.0

    @property
    def tokens(self) -> int:
        """Prompt and completion tokens together."""
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True, slots=True)
class AuditCount:
    """How many audit entries of one event a chat has, and when the newest was written."""

    chat_id: str | None
    count: int
    last_at: datetime


def _aware(moment: datetime) -> datetime:
    """``max(created_at)`` is typed like the column, so already UTC-aware; naive only as a fallback."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


class UsageMixin(StoreBase):
    """Sums over the audit log of one user (no other user's entries are ever read)."""

    def spend_groups(
        self, user_id: str, *, chat_id: str | None = None, since: datetime | None = None
    ) -> list[SpendGroup]:
        """The user's turns with usage, summed per chat, model and whether the model's price was known.

        Args:
            user_id: whose spending.
            chat_id: only this chat's turns (it may be deleted: audit entries outlive chats).
            since: only turns recorded at or after this moment (timezone-aware).
        """
        check_text("chat_id", chat_id, optional=True)
        check_time("since", since)
        entry = models.AuditEntry
        prompt = entry.details[("usage", "prompt_tokens")].as_integer()
        completion = entry.details[("usage", "completion_tokens")].as_integer()
        dollars = entry.details[("usage", "dollars")].as_float()
        known = entry.details[("usage", "price_known")].as_boolean()
        cached = entry.details[("usage", "cached_tokens")].as_integer()
        prefix = entry.details[("usage", "prefix_tokens")].as_integer()
        saved = entry.details[("usage", "saved_dollars")].as_float()
        model = entry.details[("model",)].as_string()
        query = sa.select(
            entry.chat_id,
            model,
            known,
            sa.func.count(),
            sa.func.sum(prompt),
            sa.func.sum(sa.func.coalesce(completion, 0)),
            sa.func.sum(sa.func.coalesce(dollars, 0.0)),
            sa.func.max(entry.created_at),
            sa.func.sum(sa.func.coalesce(cached, 0)),
            sa.func.sum(sa.func.coalesce(prefix, 0)),
            sa.func.sum(sa.func.coalesce(saved, 0.0)),
        ).where(entry.user_id == user_id, entry.event == "turn", prompt.is_not(None))
        if chat_id is not None:
            query = query.where(entry.chat_id == chat_id)
        if since is not None:
            query = query.where(entry.created_at >= since)
        query = query.group_by(entry.chat_id, model, known)
        with self._read() as session:
            rows = session.execute(query).all()
        return [
            SpendGroup(
                chat,
                name or None,
                bool(priced) if priced is not None else False,
                int(count),
                int(p or 0),
                int(c or 0),
                float(d or 0.0),
                _aware(last),
                int(cached_sum or 0),
                int(prefix_sum or 0),
                float(saved_sum or 0.0),
            )
            for chat, name, priced, count, p, c, d, last, cached_sum, prefix_sum, saved_sum in rows
        ]

    def audit_counts(
        self, user_id: str, event: str, *, chat_id: str | None = None, since: datetime | None = None
    ) -> list[AuditCount]:
        """How many ``event`` entries the user has per chat, with the newest one's time.

        Args:
            user_id: whose entries.
            event: the event, e.g. ``pack`` (one per model call).
            chat_id: only this chat's entries.
            since: only entries written at or after this moment (timezone-aware).
        """
        check_text("event", event)
        check_text("chat_id", chat_id, optional=True)
        check_time("since", since)
        entry = models.AuditEntry
        query = sa.select(entry.chat_id, sa.func.count(), sa.func.max(entry.created_at)).where(
            entry.user_id == user_id, entry.event == event
        )
        if chat_id is not None:
            query = query.where(entry.chat_id == chat_id)
        if since is not None:
            query = query.where(entry.created_at >= since)
        with self._read() as session:
            rows = session.execute(query.group_by(entry.chat_id)).all()
        return [AuditCount(chat, int(count), _aware(last)) for chat, count, last in rows]

    # the cost guard's ledger ----------------------------------------------------------------------

    def record_usage(
        self,
        user_id: str,
        chat_id: str | None,
        *,
        tokens: int,
        dollars: float,
        cached_tokens: int = 0,
        at: datetime | None = None,
    ) -> None:
        """Record one turn's spending: a ``usage`` audit entry and its ``usage_log`` row, in one commit.

        Args:
            user_id: whose spending.
            chat_id: the chat it was spent in.
            tokens: the turn's tokens (prompt and completion).
            dollars: what they cost (finite, 0 or more).
            cached_tokens: how many of its prompt tokens the model's cache served.
            at: when (timezone-aware; default now).
        """
        chat_id = check_text("chat_id", chat_id, optional=True)
        check_count("tokens", tokens)
        check_count("cached_tokens", cached_tokens)
        check_time("at", at)
        if isinstance(dollars, bool) or not isinstance(dollars, int | float) or not math.isfinite(dollars):
            raise InputError(f"dollars must be a finite number, got {dollars!r}")
        row = {
            "id": models.new_id(),
            "user_id": user_id,
            "chat_id": chat_id,
            "tokens": tokens,
            "dollars": float(dollars),
            "cached_tokens": cached_tokens,
            "created_at": at or models.utcnow(),
        }
        details = {"tokens": tokens, "dollars": dollars, "cached_tokens": cached_tokens}
        audit = {"id": row["id"], "user_id": user_id, "chat_id": chat_id, "event": "usage"}
        audit.update(checksum=None, details=details, created_at=row["created_at"])
        with self._write() as session:
            try:
                session.execute(_INSERT_USAGE_AUDIT, audit)
                session.execute(_INSERT_USAGE, row)
            except sa.exc.IntegrityError:  # the user foreign key
                raise NotFoundError("user", user_id, user_id) from None

    def usage_totals(self, user_id: str, chat_id: str, since: datetime) -> UsageTotals:
        """The chat's recorded spending (all time) and the user's since ``since``, in one statement.

        Only :meth:`record_usage` rows count (the ``usage`` audit entries). ``since`` is
        timezone-aware, usually the start of the month.
        """
        check_time("since", since)
        params = {"b_user": user_id, "b_chat": chat_id, "b_since": since}
        with self._read() as session:
            rows = sorted(session.execute(_TOTALS, params).all())  # (the order of UNION ALL is not SQL's)
        (_, chat_tokens, chat_dollars), (_, since_tokens, since_dollars) = rows
        return UsageTotals(int(chat_tokens), float(chat_dollars), int(since_tokens), float(since_dollars))
