"""Spending read back from the audit log: what each chat's turns used and cost, summed in the database.

Every turn that reached a model leaves a ``turn`` audit entry whose ``usage`` holds its
``prompt_tokens``, ``completion_tokens``, ``dollars`` and ``price_known`` (the chat engine and the
OpenAI-compatible endpoint both write them) and, since prompt caching is accounted, its
``cached_tokens`` (reported by the model), ``prefix_tokens`` (the packs' expected cache hit) and
``saved_dollars``; every model call leaves one ``pack`` entry. Audit
entries outlive the chat they mention, so a deleted chat's spending still counts for its user.

Mixed into :class:`~tierwise.store.repository.Store`; the same per-user scoping applies.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import sqlalchemy as sa

from tierwise.store import models
from tierwise.store._base import StoreBase
from tierwise.store.checks import check_text, check_time

__all__ = ["AuditCount", "SpendGroup", "UsageMixin"]


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
