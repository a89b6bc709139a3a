"""What ``GET /api/context/status`` and the dashboard say about a chat's context (seed 004's view).

- :func:`pack_status`: ``budgetPercent`` (the last pack's tokens as a share of *its* budget, always,
  whatever the spending limits) and ``tierBreakdown`` (seed 004's tiers 1–4,
  :mod:`tierwise.packing.tiers`), from the pack of the turn running now if there is one, else
  from the last snapshot;
- :func:`current_context`: where the chat is and what its location layer took;
- :func:`strategy`: the pruning band in force and, in one sentence, why;
- :func:`spending_status`: whether the dollar limits can work (a model without a price cannot
  trip them);
- :func:`compaction_steps`: the compaction log without the steps that changed nothing, labelled;
- :func:`turn_input`: what the last pack's ``input`` layer (the turn so far) holds: the question's
  tokens and the tools the turn called, so the dashboard can say it in words.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date, datetime
from typing import Any

from pydantic_core import to_jsonable_python

from tierwise.budget import PruningBand
from tierwise.chat.costguard import CostGuard, unpriced_warning
from tierwise.packing.report import PackReport
from tierwise.packing.tiers import tier_breakdown, tier_of
from tierwise.providers.pricing import Price
from tierwise.server.chat_context import context_of, names_of
from tierwise.store import AuditRecord, Chat, Snapshot, Store

__all__ = [
    "compaction_steps",
    "current_context",
    "pack_status",
    "spending_status",
    "strategy",
    "turn_input",
]

_TURN_TAIL = 60  # the messages read back to find the question of the last pack


def pack_status(snapshot: Snapshot | None, live: PackReport | None) -> dict[str, Any]:
    """``budgetPercent``, ``tierBreakdown`` and ``live`` (whether they are the running turn's pack).

    ``budgetPercent`` is ``None`` only before the first pack; the breakdown is then all zeros.
    """
    percent: float | None
    if live is not None:
        percent = round(100 * live.total_tokens / live.budget, 1) if live.budget else 0.0
        return {"budgetPercent": percent, "tierBreakdown": tier_breakdown(live), "live": True}
    if snapshot is None:
        return {"budgetPercent": None, "tierBreakdown": tier_breakdown(None), "live": False}
    stored = snapshot.tier_breakdown
    tiers = stored.get("tiers")
    if not isinstance(tiers, list):  # a snapshot written before tiers were: from its kinds
        tiers = _tiers_of_kinds(stored, snapshot.total_tokens)
    budget = snapshot.pruning_strategy.get("budget")
    if isinstance(budget, int) and budget > 0:
        percent = round(100 * snapshot.total_tokens / budget, 1)
    else:  # an older snapshot kept the spending side here, not the pack's share: unknown
        percent = None
    return {"budgetPercent": percent, "tierBreakdown": tiers, "live": False}


def _tiers_of_kinds(stored: Mapping[str, Any], total: int) -> list[dict[str, Any]]:
    out = tier_breakdown(None)
    for kind, entry in stored.items():
        if kind in ("total", "tiers") or not isinstance(entry, dict):
            continue
        tier = out[tier_of(kind) - 1]
        tier["tokens"] += int(entry.get("tokens") or 0)
        tier["items"] += int(entry.get("items") or 0)
        if entry.get("items"):
            tier["layers"].append(kind)
    for tier in out:
        tier["percent"] = round(100 * tier["tokens"] / total, 1) if total else 0.0
    return out


def current_context(
    store: Store, user_id: str, chat: Chat, snapshot: Snapshot | None, live: PackReport | None
) -> dict[str, Any]:
    """``{"type", "entityId", "name", "tokens"}``: the chat's location, its tokens in the last pack."""
    kind = "api" if chat.context_type.startswith("api") else chat.context_type
    named = context_of(chat, *names_of(store, user_id, [chat]))
    name = named["name"]
    if kind == "calendar":
        name = "Calendar"
    elif kind == "calendar_date" and chat.entity_id:
        name = _day_name(chat.entity_id)
    if live is not None:
        tokens = sum(r.tokens for r in live.layers if r.kind == "location")
    elif snapshot is not None:
        tokens = int((snapshot.tier_breakdown.get("location") or {}).get("tokens") or 0)
    else:
        tokens = 0
    return {"type": kind, "entityId": chat.entity_id, "name": name, "tokens": tokens}


def _day_name(value: str) -> str:
    try:
        return date.fromisoformat(value).strftime("%A %d %B %Y")
    except ValueError:
        return value


def strategy(guard: CostGuard | None, band: PruningBand | None, health: float | None) -> dict[str, Any]:
    """The band in force and why: ``{"band", "historyMessages", "relatedItems", "references", "reason"}``."""
    if guard is None or band is None or health is None:
        why = (
            "No spending limit is set, so no pruning band applies: every tier gets what the "
            "chat's token budget allows."
            if guard is None or not guard.limits.any()
            else "Spending health is unknown, so no pruning band applies."
        )
        return {
            "band": None,
            "historyMessages": None,
            "relatedItems": None,
            "references": "full",
            "reason": why,
        }
    bands = sorted(guard.bands, key=lambda b: b.min_health)
    above = next((b.min_health for b in bands if b.min_health > band.min_health), None)
    span = (
        f"{band.min_health:.0%} or more"
        if above is None
        else f"{band.min_health:.0%}–{above:.0%}"
        if band.min_health > 0
        else f"under {above:.0%}"
    )
    history = (
        "all recent messages the budget holds"
        if band.history_messages is None
        else (f"at most {band.history_messages} recent messages")
    )
    related = (
        "all related items" if band.related_items is None else f"at most {band.related_items} related items"
    )
    references = {"full": "in full", "summary": "as summaries", "none": "left out"}[band.references]
    return {
        "band": band.name,
        "historyMessages": band.history_messages,
        "relatedItems": band.related_items,
        "references": band.references,
        "reason": (
            f"{health:.0%} of the spending limit is left (the stricter of this chat's and this month's), "
            f"in the {band.name} band ({span}): {history}, {related}, recalled turns {references}."
        ),
    }


def spending_status(
    guard: CostGuard | None, prices: Mapping[str, Price] | None, model: str | None
) -> dict[str, Any]:
    """``{"dollarLimits", "priceKnown", "warning"}``: whether dollar limits can be reached with this model."""
    if guard is None:
        return {"dollarLimits": False, "priceKnown": None, "warning": None}
    warning = unpriced_warning(guard.limits, model, prices)
    return {"dollarLimits": guard.limits.dollars(), "priceKnown": warning is None, "warning": warning}


def compaction_steps(entries: Sequence[AuditRecord], limit: int = 50) -> list[dict[str, Any]]:
    """The compaction entries that changed something (tokens before ≠ after), newest first, labelled.

    Each keeps its raw figures and gains ``label``, with thousands separators:
    ``"compacted at 50%: 18,200 → 9,100 tokens"``.
    """
    out: list[dict[str, Any]] = []
    for entry in entries:
        details = entry.details
        before, after = details.get("tokens_before"), details.get("tokens_after")
        if before == after or details.get("changed") is False:
            continue
        out.append({**details, "at": to_jsonable_python(entry.created_at), "label": _label(details)})
        if len(out) == limit:
            break
    return out


def _label(details: Mapping[str, Any]) -> str:
    action = details.get("action")
    verb = {"step": "compacted", "summarize": "summarized"}.get(str(action), str(action or "compacted"))
    threshold = details.get("threshold")
    at = f" at {threshold:.0%}" if isinstance(threshold, int | float) else ""
    before, after = details.get("tokens_before"), details.get("tokens_after")
    return f"{verb}{at}: {_n(before)} → {_n(after)} tokens"


def _n(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int) else "?"


def turn_input(store: Store, user_id: str, chat: Chat, pack_at: datetime) -> dict[str, Any] | None:
    """The question the pack made at ``pack_at`` answered, and the tools its turn had called by then.

    ``{"question_tokens", "tool_calls"}``: the last user message stored up to ``pack_at`` (its
    tokens, counted as the pack counts a message) and the names of the tools the assistant called
    after it, in order. The rest of the pack's ``input`` layer is those calls and their results.
    ``None`` when no user message is among the chat's last 60 up to then (a long agent loop).
    """
    after = max(-1, chat.message_count - 1 - _TURN_TAIL)
    tail = [m for m in store.list_messages(user_id, chat.id, after_seq=after) if m.created_at <= pack_at]
    start = next((i for i in range(len(tail) - 1, -1, -1) if tail[i].role == "user"), None)
    if start is None:
        return None
    calls = [
        str((call.get("function") or {}).get("name") or "a tool")
        for message in tail[start + 1 :]
        for call in message.tool_calls or ()
        if isinstance(call, dict)
    ]
    return {"question_tokens": tail[start].token_count, "tool_calls": calls}
