"""Usage and cost routes: what a chat used and cost, and the user's month and all-time totals.

Figures come from the store, never estimated here: every turn that reached a model left a ``turn``
audit entry with its prompt and completion tokens, its dollars and whether the model's price was
known (the chat engine and the OpenAI-compatible endpoint both write them), and every model call a
``pack`` entry. ``chats.total_tokens_used`` is the running total on the chat; tokens it has beyond
the turns' records (API sessions from before turns were recorded) are reported as
``unrecorded_tokens``: counted in all-time totals, without a time (so not in the month) or a price.

Dollars are what the priced calls cost; ``price_known`` is false when some tokens were spent on a
model with no known price (``unpriced_tokens``, ``unpriced_models``), and ``dollars`` is ``null``
when nothing was priced at all. The month is the calendar month in UTC, like the cost guard's.

``cache`` is prompt caching (:meth:`Totals.cache`): the share of prompt tokens the model reported as
served from its cache, or, when it reported none, the share the packs repeated of the pack before
each (``source: "expected"``), and the dollars the cache saved (cached tokens at the full input price
less what they cost).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from pydantic_core import to_jsonable_python

from tierwise.chat.costguard import unpriced_warning
from tierwise.server.chat_context import describe
from tierwise.store import Chat, Store
from tierwise.store.usage import AuditCount, SpendGroup

__all__ = ["Totals", "chat_totals", "month_start", "router"]

router = APIRouter(prefix="/api")


def month_start(now: datetime | None = None) -> datetime:
    """The first moment of ``now``'s calendar month in UTC."""
    now = (now or datetime.now(UTC)).astimezone(UTC)
    return now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)


@dataclass
class Totals:
    """Usage summed over turn records (and, optionally, tokens a chat counted without records)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    priced_dollars: float = 0.0
    priced_tokens: int = 0
    unpriced_tokens: int = 0
    unrecorded_tokens: int = 0
    turns: int = 0
    model_calls: int = 0
    models: set[str] = field(default_factory=set)
    unpriced_models: set[str] = field(default_factory=set)
    last_at: datetime | None = None
    cached_tokens: int = 0
    prefix_tokens: int = 0
    saved_dollars: float = 0.0

    def add(self, group: SpendGroup) -> None:
        """Count one group of turns."""
        self.prompt_tokens += group.prompt_tokens
        self.completion_tokens += group.completion_tokens
        self.priced_dollars += group.dollars
        self.cached_tokens += group.cached_tokens
        self.prefix_tokens += group.prefix_tokens
        self.saved_dollars += group.saved_dollars
        self.turns += group.turns
        name = group.model or "unnamed model"
        self.models.add(name)
        if group.price_known:
            self.priced_tokens += group.tokens
        else:
            self.unpriced_tokens += group.tokens
            self.unpriced_models.add(name)
        self.seen(group.last_at)

    def merge(self, other: Totals) -> None:
        """Add another total to this one."""
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.priced_dollars += other.priced_dollars
        self.cached_tokens += other.cached_tokens
        self.prefix_tokens += other.prefix_tokens
        self.saved_dollars += other.saved_dollars
        self.priced_tokens += other.priced_tokens
        self.unpriced_tokens += other.unpriced_tokens
        self.unrecorded_tokens += other.unrecorded_tokens
        self.turns += other.turns
        self.model_calls += other.model_calls
        self.models |= other.models
        self.unpriced_models |= other.unpriced_models
        self.seen(other.last_at)

    def seen(self, moment: datetime | None) -> None:
        """Move ``last_at`` forward to ``moment``."""
        if moment is not None and (self.last_at is None or moment > self.last_at):
            self.last_at = moment

    @property
    def recorded_tokens(self) -> int:
        """Tokens of the turn records."""
        return self.prompt_tokens + self.completion_tokens

    @property
    def tokens(self) -> int:
        """Every token counted: the turns' and those counted without a record."""
        return self.recorded_tokens + self.unrecorded_tokens

    @property
    def dollars(self) -> float | None:
        """What the priced calls cost; ``None`` when tokens were spent and none of them was priced."""
        if self.tokens and not self.priced_tokens and not self.priced_dollars:
            return None
        return round(self.priced_dollars, 6)

    def cache(self) -> dict[str, Any]:
        """Prompt caching over the turns: the hit share, where it comes from, the dollars saved.

        ``hit_share`` is ``cached_tokens / prompt_tokens`` when the model reported cached tokens
        (``source: "provider"``); otherwise ``prefix_tokens / prompt_tokens``, the tokens the packs
        repeated of the pack before each (``source: "expected"``: what a prompt cache could serve,
        not what the provider billed); ``null`` with no prompt tokens. ``saved_dollars`` counts only
        what the model reported.
        """
        prompt = self.prompt_tokens
        source: str | None = None
        share: float | None = None
        if prompt > 0:
            source = "provider" if self.cached_tokens > 0 else "expected" if self.prefix_tokens > 0 else None
            hits = self.cached_tokens if source == "provider" else self.prefix_tokens if source else 0
            share = round(min(1.0, hits / prompt), 4)
        return {
            "hit_share": share,
            "source": source,
            "prompt_tokens": prompt,
            "cached_tokens": self.cached_tokens,
            "expected_tokens": self.prefix_tokens,
            "saved_dollars": round(self.saved_dollars, 6),
        }

    def to_json(self) -> dict[str, Any]:
        """The JSON the routes return."""
        unpriced = self.unpriced_tokens + self.unrecorded_tokens
        return {
            "tokens": self.tokens,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "unrecorded_tokens": self.unrecorded_tokens,
            "dollars": self.dollars,
            "price_known": unpriced == 0,
            "unpriced_tokens": unpriced,
            "unpriced_models": sorted(self.unpriced_models),
            "turns": self.turns,
            "model_calls": self.model_calls,
            "models": sorted(self.models),
            "last_updated": to_jsonable_python(self.last_at),
            "cache": self.cache(),
        }


def _per_chat(groups: list[SpendGroup], calls: list[AuditCount]) -> dict[str | None, Totals]:
    out: dict[str | None, Totals] = {}
    for group in groups:
        out.setdefault(group.chat_id, Totals()).add(group)
    for count in calls:
        totals = out.setdefault(count.chat_id, Totals())
        totals.model_calls += count.count
        totals.seen(count.last_at)
    return out


def _with_chat(totals: Totals, chat: Chat) -> Totals:
    """Add what the chat counted beyond its turn records (the counter is the chat's own total)."""
    totals.unrecorded_tokens = max(0, chat.total_tokens_used - totals.recorded_tokens)
    return totals


def _notes(totals: Totals, *, month: bool) -> list[str]:
    notes = []
    if totals.unrecorded_tokens:
        where = "counted in all-time totals, not in this month's, and " if month else ""
        notes.append(
            f"{totals.unrecorded_tokens:,} tokens were counted without per-turn records (API sessions "
            f"from before turns were recorded): {where}without a price"
        )
    if totals.unpriced_models:
        names = ", ".join(sorted(totals.unpriced_models))
        notes.append(
            f"no price is known for {names}: its tokens are not in the dollars; "
            "add one with TIERWISE_PRICES (USD per 1M tokens), e.g. "
            '{"my-model": {"input": 1.0, "output": 2.0}}'
        )
    return notes


def _ctx(request: Request) -> tuple[Store, str]:
    return request.app.state.store, request.app.state.user_of(request)


def _limit_note(request: Request) -> list[str]:
    """A dollar limit the engine's model cannot reach (it has no price), said plainly."""
    engine = getattr(request.app.state, "engine", None)
    guard = getattr(engine, "guard", None)
    if engine is None or guard is None:
        return []
    warning = unpriced_warning(guard.limits, engine.model or engine.provider.model, engine.prices)
    return [warning] if warning else []


def chat_totals(store: Store, user: str, chat: Chat) -> Totals:
    """What one chat used and cost, from its turn records (and its own token counter)."""
    groups = store.spend_groups(user, chat_id=chat.id)
    calls = store.audit_counts(user, "pack", chat_id=chat.id)
    return _with_chat(_per_chat(groups, calls).get(chat.id, Totals()), chat)


@router.get("/chats/{chat_id}/usage")
def chat_usage(chat_id: str, request: Request) -> Any:
    """What the chat used and cost: tokens, dollars (where prices are known), turns, model calls, cache."""
    store, user = _ctx(request)
    chat = store.get_chat(user, chat_id)
    totals = chat_totals(store, user, chat)
    described = describe(store, user, [chat])[0]
    return {
        "chat_id": chat.id,
        "title": chat.title,
        "context": described["context"],
        **totals.to_json(),
        "notes": _notes(totals, month=False) + _limit_note(request),
    }


@router.get("/usage")
def user_usage(request: Request, top: Annotated[int, Query(ge=1, le=100)] = 5) -> Any:
    """The user's usage this calendar month (UTC) and all time, and the ``top`` chats by tokens.

    All-time totals include chats since deleted (their turn records outlive them);
    ``deleted_chats`` says how much of it they were.
    """
    store, user = _ctx(request)
    start = month_start()
    chats = {c.id: c for c in store.list_chats(user)}
    per_chat = _per_chat(store.spend_groups(user), store.audit_counts(user, "pack"))
    for chat in chats.values():
        if chat.total_tokens_used:
            _with_chat(per_chat.setdefault(chat.id, Totals()), chat)
    all_time, deleted = Totals(), Totals()
    for key, totals in per_chat.items():
        all_time.merge(totals)
        if key not in chats:
            deleted.merge(totals)
    month = Totals()
    for group in store.spend_groups(user, since=start):
        month.add(group)
    month.model_calls = sum(c.count for c in store.audit_counts(user, "pack", since=start))
    used = [(chats[cid], t) for cid, t in per_chat.items() if cid is not None and cid in chats and t.tokens]
    ranked = sorted(used, key=lambda item: (-item[1].tokens, item[0].id))[:top]
    contexts = describe(store, user, [chat for chat, _ in ranked])
    top_chats = [
        {"chat_id": chat.id, "title": chat.title, "context": d["context"], **totals.to_json()}
        for (chat, totals), d in zip(ranked, contexts, strict=True)
    ]
    return {
        "month": {"start": to_jsonable_python(start), **month.to_json()},
        "all_time": all_time.to_json(),
        "deleted_chats": {"tokens": deleted.tokens, "dollars": deleted.dollars, "turns": deleted.turns},
        "chats": top_chats,
        "chat_count": len(used),
        "notes": _notes(all_time, month=True) + _limit_note(request),
    }
