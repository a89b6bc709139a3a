"""Seed 004's four tiers, mapped onto tierwise's layer kinds (ARCHITECTURE decision 50).

Seed 004 sorts context into four tiers by *when* it enters a prompt: tier 1 always, tier 2 on
demand, tier 3 when referenced, tier 4 the conversation, pruned by spending. tierwise packs
layers, not tiers, so a tier is the sum of the layers of its kinds:

====  ===========  =================================================  ================================
tier  name         layer kinds                                        what a pruning band caps
====  ===========  =================================================  ================================
1     core         system, tools, input, task, narrative, headers     nothing: always in the pack
2     workspace    profile, location, related (application context)   ``related_items``
3     referenced   retrieved, tool_results                            ``references`` (full/summary/none)
4     history      history, summaries                                 ``history_messages``
====  ===========  =================================================  ================================

Where the seed is wrong, the mapping follows tierwise: tier 1 is every layer the packer never drops
(the seed lists only the system prompt and the query, yet tool definitions and memory's head —
the story so far and a line per segment — are sent on every call too), and the tier numbers name
kinds of context, not the order they are dropped in (that is the layers' priorities, decision 3:
tier 3 goes before tier 4 when tokens run short). A kind of the caller's own goes to tier 1 when
the pack guaranteed it, else to tier 2.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tierwise.packing.report import PackReport

__all__ = ["TIERS", "Tier", "breakdown_of_layers", "tier_breakdown", "tier_of"]


@dataclass(frozen=True)
class Tier:
    """One of seed 004's tiers: its number, short name, meaning and the layer kinds it sums."""

    number: int
    name: str
    description: str
    kinds: tuple[str, ...]


TIERS: tuple[Tier, ...] = (
    Tier(1, "core", "always sent: instructions, tools, the question, the story so far",
         ("system", "tools", "input", "task", "narrative", "headers")),
    Tier(2, "workspace", "on demand: who the user is, where the chat is, related items",
         ("profile", "location", "related")),
    Tier(3, "referenced", "when referenced: recalled turns and compressed tool results",
         ("retrieved", "tool_results")),
    Tier(4, "history", "the conversation: recent turns in full, older segments summarised",
         ("history", "summaries")),
)  # fmt: skip

_BY_KIND = {kind: tier.number for tier in TIERS for kind in tier.kinds}


def tier_of(kind: str, *, guaranteed: bool = False) -> int:
    """The tier of a layer kind; a kind of the caller's own is tier 1 if guaranteed, else tier 2.

    Example:
        >>> tier_of("location"), tier_of("history"), tier_of("notice", guaranteed=True)
        (2, 4, 1)
    """
    return _BY_KIND.get(kind, 1 if guaranteed else 2)


def tier_breakdown(report: PackReport | None) -> list[dict[str, Any]]:
    """The pack's tokens per tier: tiers 1–4 in order, zeros without a report.

    Each entry is ``{"tier", "name", "tokens", "items", "percent", "layers"}``: ``items`` counts
    the layers that went in (kept or cut), ``percent`` is the tier's share of the pack's tokens
    (one decimal), ``layers`` the kinds that went in, in fill order.

    Example:
        >>> [t["name"] for t in tier_breakdown(None)]
        ['core', 'workspace', 'referenced', 'history']
    """
    layers = report.layers if report is not None else ()
    return _breakdown(
        [(r.kind, r.guaranteed, r.tokens, r.status != "dropped") for r in layers],
        report.total_tokens if report is not None else 0,
    )


def breakdown_of_layers(layers: Sequence[Mapping[str, Any]], total_tokens: int) -> list[dict[str, Any]]:
    """:func:`tier_breakdown` from a pack audit entry's ``layers`` (``kind``, ``tokens``, ``status``)."""
    return _breakdown(
        [
            (
                str(r.get("kind")),
                bool(r.get("guaranteed")),
                int(r.get("tokens") or 0),
                r.get("status") != "dropped",
            )
            for r in layers
        ],
        total_tokens,
    )


def _breakdown(layers: Sequence[tuple[str, bool, int, bool]], total_tokens: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {"tier": t.number, "name": t.name, "tokens": 0, "items": 0, "percent": 0.0, "layers": []}
        for t in TIERS
    ]
    for kind, guaranteed, tokens, went_in in layers:
        if not went_in:
            continue
        entry = out[tier_of(kind, guaranteed=guaranteed) - 1]
        entry["tokens"] += tokens
        entry["items"] += 1
        if kind not in entry["layers"]:
            entry["layers"].append(kind)
    whole = total_tokens or sum(e["tokens"] for e in out)
    for entry in out:
        entry["percent"] = round(100 * entry["tokens"] / whole, 1) if whole else 0.0
    return out
