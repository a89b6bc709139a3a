"""The packer: candidate layers + a budget → the messages sent to a model, with a report.

Policy ``deterministic-v2``, in order:

1. **Band.** If a pruning band is given (from budget health), it limits history messages and
   related items and chooses whole / summary / no retrieved references.
2. **Order.** Layers are filled by ``(priority, kind rank, id)``; with a seed, ties inside a
   priority and kind are broken by ``sha256(seed, id)`` instead of the id. Layers are dropped in the
   reverse of that order.
3. **Reserve.** Guaranteed layers are reserved first, at their smallest allowed size (whole, or the
   minimum fragment if truncatable). If they alone exceed the budget, :class:`BudgetError` says by
   how much and which layer is largest.
4. **Fill.** Each layer in fill order gets what remains after the reservations, no more than its
   kind's allocation if it is truncatable. It goes in whole, or truncated (text cut at a sentence or
   word with a visible marker, never below the minimum fragment; messages lose their oldest
   tool-call groups), or it is dropped. Once a layer is dropped for lack of budget, every layer after
   it in fill order is dropped too, unless guaranteed: a lower priority never gets in ahead of a
   higher one.
5. **Spill.** Budget left over goes back to layers cut by their allocation, in fill order.
6. **Render and verify.** The pack is ordered by how often its parts change, so that it repeats
   the previous pack from the start for as long as possible (providers cache prompt prefixes):
   tools go to ``tools``; the ``system`` layer comes first, as given; the other text layers placed
   in the *head* follow as one system message (sections in kind order); then the message layers
   (history); then the text layers placed in the *tail* as one message; then the ``input`` layer.
   The result is counted exactly; if joining sections made it larger than the sum of its parts,
   layers are shrunk in drop order until it fits.
7. **Checksum.** sha256 over the canonical JSON of policy, messages and tools.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from tierwise.budget import Budget, PruningBand
from tierwise.errors import BudgetError, InputError
from tierwise.packing.groups import MessageGroups
from tierwise.packing.layers import KIND_ORDER, TRUNCATION_MARKER, ContextLayer, truncate_text
from tierwise.packing.report import LayerReport, LayerStatus, Pack, PackReport
from tierwise.tokens import REPLY_PRIMING, TOKENS_PER_MESSAGE, TokenCounter, get_counter

__all__ = ["POLICY", "TAIL_LEAD", "Packer", "pack", "tail_opening"]

POLICY = "deterministic-v2"
TAIL_LEAD = "(Context for the next message, added from memory; not written by the user.)"
"""The first line of the tail message when it is sent as a user message."""
_KIND_RANK = {kind: i for i, kind in enumerate(KIND_ORDER)}


class _Candidate:
    """Mutable packing state of one layer."""

    __slots__ = (
        "band_reason",
        "cost",
        "cut_by_allocation",
        "floor",
        "form",
        "groups",
        "kept",
        "key",
        "layer",
        "messages_full",
        "notes",
        "reason",
        "source",
        "start",
        "status",
        "text",
        "tokens_full",
        "whole",
    )

    def __init__(self, layer: ContextLayer, key: tuple[Any, ...], counter: TokenCounter) -> None:
        self.layer = layer
        self.form = layer.form
        self.key = key
        self.notes: list[str] = []
        self.groups: MessageGroups | None = None
        self.messages_full = 0
        self.text: str | None = None
        self.source = ""  # text the layer is packed from (a band may swap in its summary)
        self.band_reason: str | None = None
        self.start = 0  # messages: index of the oldest message kept
        self.floor = 0  # messages: the band allows nothing older than this index
        content = layer.content
        if self.form == "text":
            assert isinstance(content, str)
            self.source = content
            self.tokens_full = self.whole = counter.count(layer.render())
        elif self.form == "tools":
            self.tokens_full = self.whole = counter.count_tools(content)  # type: ignore[arg-type]
        else:
            assert not isinstance(content, str)
            self.messages_full = len(content)
            groups = self.groups = MessageGroups(content, counter.message_costs(content))
            self.tokens_full = groups.total
            self.whole = groups.whole_cost  # the layer sent whole, orphans left out
            if groups.orphans:
                self.notes.append(
                    f"{len(groups.orphans)} unpaired tool call/result message(s) left out: "
                    "providers reject a call without its result and a result without its call"
                )
        self.cost = 0
        self.status = "pending"
        self.reason: str | None = None
        self.cut_by_allocation = False
        self.kept = False

    # -- sizes -----------------------------------------------------------------------------------

    def whole_cost(self) -> int:
        return self.whole

    def min_cost(self, budget: Budget, counter: TokenCounter) -> int:
        """Smallest size this layer may take when guaranteed."""
        whole = self.whole
        if not self.layer.truncatable:
            return whole
        if self.groups is not None:
            return self.groups.newest(self.messages_full, stop=self.floor, max_groups=1)[1]
        if self.form == "text":
            heading = counter.count(self.layer.heading) if self.layer.heading else 0
            return min(whole, heading + budget.min_fragment_tokens + counter.count(TRUNCATION_MARKER))
        return whole

    def fit(self, target: int, budget: Budget, counter: TokenCounter) -> bool:
        """Take the largest form of this layer costing at most ``target``; False if none."""
        whole = self.whole
        if whole <= target:
            self.start = self.floor
            self.text = self.source if self.form == "text" else None
            self.cost, self.status, self.kept = whole, "kept", True
            return True
        if not self.layer.truncatable:
            return False
        if self.groups is not None:
            end = self.messages_full
            start, cost = self.groups.newest(end, stop=self.floor, budget=target)
            if start == end:
                return False
            if self.layer.kind == "history":  # a cut history starts on a user turn
                start, dropped = self.groups.start_on("user", start, end)
                cost -= dropped
            self.start, self.cost, self.status, self.kept = start, cost, "truncated", True
            return True
        if self.form == "text":
            heading_tokens = counter.count(self.layer.heading) if self.layer.heading else 0
            for _ in range(4):
                cut = truncate_text(
                    self.source,
                    target - heading_tokens,
                    counter,
                    min_tokens=budget.min_fragment_tokens,
                    force=self.layer.guaranteed,
                )
                if cut is None:
                    return False
                cost = counter.count(self.layer.render(cut))
                if cost <= target:
                    self.text, self.cost, self.status, self.kept = cut, cost, "truncated", True
                    return True
                heading_tokens += cost - target
            return False
        return False

    def drop(self, reason: str) -> None:
        self.cost, self.status, self.reason, self.kept = 0, "dropped", reason, False

    def kept_messages(self) -> Sequence[Mapping[str, Any]]:
        assert self.groups is not None
        return self.groups.kept(self.start, self.messages_full)


@dataclass
class Packer:
    """Packs context layers into a budget, deterministically.

    Example:
        >>> from tierwise import Budget, ContextLayer, Packer
        >>> layers = [ContextLayer("system", "system", "You are terse."),
        ...           ContextLayer("input", "input", [{"role": "user", "content": "Hi"}])]
        >>> Packer().pack(layers, Budget(window=100)).report.total_tokens
        16
    """

    counter: TokenCounter | None = None
    tail_role: str = "user"
    """Role of the tail message: ``user`` (every provider and chat template accepts it there) or
    ``system`` (where a system message may stand mid-conversation, e.g. OpenAI)."""

    def __post_init__(self) -> None:
        if self.counter is None:
            self.counter = get_counter()

    def pack(
        self,
        layers: Sequence[ContextLayer],
        budget: Budget,
        *,
        seed: str | int | None = None,
        band: PruningBand | None = None,
        health: float | None = None,
    ) -> Pack:
        """Pack ``layers`` into ``budget``; see the module docstring for the policy.

        Raises:
            BudgetError: the guaranteed layers alone exceed the budget.
            InputError: two layers share an id.
        """
        counter = self.counter
        assert counter is not None
        seen: set[str] = set()
        for layer in layers:
            if layer.id in seen:
                raise InputError(f"two layers share the id {layer.id!r}; give each layer its own id")
            seen.add(layer.id)
        seed_text = None if seed is None else str(seed)
        cands = [_Candidate(layer, _order_key(layer, seed_text), counter) for layer in layers]
        order = sorted(cands, key=lambda c: c.key)
        if band is not None:
            _apply_band(order, band, budget, counter)

        available = budget.available
        framing = _Framing(counter, self.tail_role)

        # 3. reserve guaranteed layers at their minimum size
        reserve: dict[int, int] = {}
        reserved_text: set[str] = set()
        for c in order:
            if c.layer.guaranteed and c.status != "dropped":
                frame = framing.cost(c.layer, reserved_text)
                reserve[id(c)] = c.min_cost(budget, counter) + frame
        needed = REPLY_PRIMING + sum(reserve.values())
        if needed > available:
            guaranteed = [c for c in order if id(c) in reserve]
            largest = max(guaranteed, key=lambda c: reserve[id(c)])
            raise BudgetError(
                f"the guaranteed layers need {needed} tokens but the budget is {available} "
                f"(over by {needed - available}); the largest is {largest.layer.id!r} "
                f"({reserve[id(largest)]} tokens): shorten it, make it truncatable, "
                "or raise the budget",
                over_by=needed - available,
                largest_layer=largest.layer.id,
            )

        # 4. fill in order
        used = REPLY_PRIMING
        outstanding = sum(reserve.values())
        text_kept: set[str] = set()
        kind_used: dict[str, int] = {}
        stopped_by: str | None = None
        for c in order:
            if c.status == "dropped":  # by the band
                continue
            outstanding -= reserve.get(id(c), 0)
            if stopped_by is not None and not c.layer.guaranteed:
                c.drop(f"lower in fill order than {stopped_by!r}, which did not fit")
                continue
            frame = framing.cost(c.layer, text_kept, add=False)
            room = available - used - outstanding - frame
            target = room
            ceiling = budget.ceiling(c.layer.kind) if budget.allocations else None
            if ceiling is not None and c.layer.truncatable and c.form != "tools":
                share = max(0, ceiling - kind_used.get(c.layer.kind, 0))
                floor = c.min_cost(budget, counter)
                target = min(room, max(share, floor))
            ok = c.fit(target, budget, counter)
            if not ok and target < room:  # the allocation was too small to hold any fragment
                ok = c.fit(room, budget, counter)
            elif ok and c.status == "truncated" and target < room:
                c.cut_by_allocation = True
                c.reason = "cut to its kind's allocation"
            if ok:
                if c.status == "truncated" and c.reason is None:
                    c.reason = "cut to fit the budget"
                used += c.cost + frame
                kind_used[c.layer.kind] = kind_used.get(c.layer.kind, 0) + c.cost
                framing.cost(c.layer, text_kept)
            elif c.layer.guaranteed:  # cannot happen: its minimum was reserved
                raise AssertionError(f"guaranteed layer {c.layer.id!r} did not fit its reservation")
            else:
                c.drop(f"did not fit: {c.min_cost(budget, counter)} tokens needed, {max(room, 0)} left")
                stopped_by = c.layer.id

        # 5. spill what is left to layers cut by their allocation
        if budget.spill:
            for c in order:
                if not (c.cut_by_allocation and c.status == "truncated"):
                    continue
                left = available - used
                if left <= 0:
                    break
                before = c.cost
                c.fit(before + left, budget, counter)
                used += c.cost - before
                if c.status == "kept":
                    c.cut_by_allocation, c.reason = False, None

        for c in order:
            if c.kept and c.band_reason is not None:
                c.status = "truncated"
                c.reason = c.band_reason if c.reason is None else f"{c.band_reason}; {c.reason}"

        # 6. render, count exactly, shrink in drop order if joining sections cost more
        messages, tools, total = _render(cands, counter, self.tail_role)
        for _ in range(len(order) * 4):
            if total <= available:
                break
            victim = next(
                (c for c in reversed(order) if c.kept and not c.layer.guaranteed),
                None,
            )
            if victim is None:
                raise BudgetError(
                    f"the guaranteed layers need {total} tokens once joined but the budget is "
                    f"{available}; raise the budget by {total - available}",
                    over_by=total - available,
                    largest_layer=max(cands, key=lambda c: c.cost).layer.id,
                )
            excess = total - available
            if not victim.fit(victim.cost - excess, budget, counter):
                victim.drop("did not fit once sections were joined")
            messages, tools, total = _render(cands, counter, self.tail_role)

        return _finish(
            cands, order, messages, tools, total, budget, counter, seed_text, band, health, self.tail_role
        )


def pack(
    layers: Sequence[ContextLayer],
    budget: Budget,
    *,
    encoding: str = "o200k_base",
    seed: str | int | None = None,
    band: PruningBand | None = None,
    health: float | None = None,
) -> Pack:
    """Pack ``layers`` into ``budget`` with the shared counter for ``encoding``."""
    return Packer(get_counter(encoding)).pack(layers, budget, seed=seed, band=band, health=health)


def _order_key(layer: ContextLayer, seed: str | None) -> tuple[Any, ...]:
    rank = _KIND_RANK.get(layer.kind, len(KIND_ORDER))
    tie = layer.id if seed is None else hashlib.sha256(f"{seed}\0{layer.id}".encode()).hexdigest()
    return (layer.priority, rank, layer.kind, tie, layer.id)


def _apply_band(order: list[_Candidate], band: PruningBand, budget: Budget, counter: TokenCounter) -> None:
    related = 0
    why = f"pruning band {band.name!r}"
    for c in order:
        kind = c.layer.kind
        if kind == "history" and c.groups is not None and band.history_messages is not None:
            limit, end = band.history_messages, c.messages_full
            floor, cost = c.groups.newest(end, max_messages=limit)
            if floor == end:
                c.drop(f"{why} keeps no history messages")
            elif cost < c.whole:
                c.band_reason = f"{why} keeps at most {limit} history messages"
                c.floor, c.whole = floor, cost
        elif kind == "related" and band.related_items is not None and not c.layer.guaranteed:
            related += 1
            if related > band.related_items:
                c.drop(f"{why} keeps {band.related_items} related item(s)")
        elif kind == "retrieved" and not c.layer.guaranteed:
            if band.references == "none":
                c.drop(f"{why} leaves out references")
            elif band.references == "summary" and c.form == "text":
                if c.layer.summary is not None:
                    c.source = c.layer.summary
                else:
                    marker = counter.count(TRUNCATION_MARKER)
                    cut = truncate_text(
                        c.source,
                        budget.min_fragment_tokens + marker,
                        counter,
                        min_tokens=budget.min_fragment_tokens,
                    )
                    c.source = cut if cut is not None else c.source
                if c.source != c.layer.content:
                    c.band_reason = f"{why} sends references as summaries"
                    c.whole = counter.count(c.layer.render(c.source))


class _Framing:
    """What a text layer adds besides its section.

    A message's framing if it opens its message (the system, head or tail message), else the
    separator between sections.
    """

    def __init__(self, counter: TokenCounter, tail_role: str) -> None:
        self.separator = counter.count("\n\n")
        system = TOKENS_PER_MESSAGE + counter.count("system")
        tail = TOKENS_PER_MESSAGE + counter.count(tail_role)
        if tail_role == "user":
            tail += counter.count(TAIL_LEAD) + self.separator
        self.opening = {"system": system, "head": system, "tail": tail}

    def cost(self, layer: ContextLayer, opened: set[str], *, add: bool = True) -> int:
        """The framing ``layer`` adds, given the messages already ``opened`` (updated if ``add``)."""
        if layer.form != "text":
            return 0
        where = layer.placement
        if where in opened:
            return self.separator
        if add:
            opened.add(where)
        return self.opening[where]


def tail_opening(counter: TokenCounter, tail_role: str = "user") -> int:
    """Tokens the tail message takes besides its sections: framing and, in a user message, the lead."""
    return _Framing(counter, tail_role).opening["tail"]


def _presentation(c: _Candidate) -> tuple[Any, ...]:
    return (_KIND_RANK.get(c.layer.kind, len(KIND_ORDER)), *c.key)


def _render(
    cands: Sequence[_Candidate], counter: TokenCounter, tail_role: str = "user"
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int]:
    """The pack's messages and tools, and their exact token count.

    Order (see the module docstring): system layer · head message · history · tail message · input.
    Message counts are additive (each message carries its own framing), so only the joined text
    messages and the tool definitions are counted afresh; the total equals
    ``counter.count_messages(messages) + counter.count_tools(tools)``.
    """
    kept = [c for c in cands if c.kept]
    kept.sort(key=_presentation)
    messages: list[dict[str, Any]] = []
    total = REPLY_PRIMING

    def text_message(role: str, sections: list[str]) -> None:
        nonlocal total
        if not sections:
            return
        message = {"role": role, "content": "\n\n".join(sections)}
        counter.count_joined(sections, "\n\n")  # exact from the sections' counts; primes the cache
        messages.append(message)
        total += counter.count_message(message)

    def add_messages(c: _Candidate) -> None:
        nonlocal total
        kept_messages = c.kept_messages()
        if c.layer.plain:
            messages.extend(kept_messages)  # type: ignore[arg-type]
        else:
            messages.extend(dict(m) for m in kept_messages)
        total += c.cost

    texts = [c for c in kept if c.form == "text"]
    for c in kept:
        if c.layer.kind == "system" and c.form == "messages":
            add_messages(c)
    text_message("system", [c.layer.render(c.text) for c in texts if c.layer.placement == "system"])
    for c in kept:  # an agent loop's task: it changes less often than the head (memory/engine.py)
        if c.layer.kind == "task" and c.form == "messages":
            add_messages(c)
    text_message("system", [c.layer.render(c.text) for c in texts if c.layer.placement == "head"])
    inputs: list[_Candidate] = []
    for c in kept:
        if c.form == "messages" and c.layer.kind not in ("system", "task"):
            if c.layer.kind == "input":
                inputs.append(c)
            else:
                add_messages(c)
    tail = [c.layer.render(c.text) for c in texts if c.layer.placement == "tail"]
    text_message(tail_role, [TAIL_LEAD, *tail] if tail and tail_role == "user" else tail)
    for c in inputs:
        add_messages(c)
    tools: list[dict[str, Any]] = []
    tool_layers = 0
    for c in kept:
        if c.form == "tools":
            definitions = c.layer.content
            assert not isinstance(definitions, str)
            tools.extend(t if t.__class__ is dict else dict(t) for t in definitions)
            tool_layers += 1
            total += c.cost
    if tool_layers > 1:  # definitions share one framing: count them together
        total += counter.count_tools(tools) - sum(c.cost for c in kept if c.form == "tools")
    return messages, tools, total


def canonical_json(messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]) -> bytes:
    """The canonical bytes a pack's checksum is taken over: compact UTF-8 JSON, keys sorted.

    orjson writes it (an order of magnitude faster than the standard library on big packs); values
    orjson cannot encode (integers beyond 64 bits, non-string keys) fall back to ``json``.
    """
    body = {"policy": POLICY, "messages": messages, "tools": tools}
    try:
        return orjson.dumps(body, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        return json.dumps(
            body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=dict
        ).encode("utf-8", "surrogatepass")  # a lone surrogate (orjson refuses it) is hashed, not fatal


def _finish(
    cands: Sequence[_Candidate],
    order: Sequence[_Candidate],
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    total: int,
    budget: Budget,
    counter: TokenCounter,
    seed: str | None,
    band: PruningBand | None,
    health: float | None,
    tail_role: str = "user",
) -> Pack:
    reports = []
    everything = REPLY_PRIMING
    framing = _Framing(counter, tail_role)
    opened: set[str] = set()
    for c in order:
        layer = c.layer
        everything += c.tokens_full + framing.cost(layer, opened)
        if not c.kept:
            status: LayerStatus = "dropped"
        else:
            status = "truncated" if c.status == "truncated" else "kept"
        reports.append(
            LayerReport(
                layer.id,
                layer.kind,
                layer.priority,
                layer.guaranteed,
                layer.truncatable,
                c.tokens_full,
                c.cost,
                status,
                c.reason,
                tuple(c.notes),
                c.messages_full,
                len(c.kept_messages()) if c.kept and c.groups is not None else 0,
            )
        )
    report = PackReport(
        POLICY,
        counter.encoding_name,
        budget.window,
        budget.reserve,
        budget.window - budget.reserve,
        total,
        everything,
        seed,
        band.name if band else None,
        health,
        tuple(reports),
        lambda: canonical_json(messages, tools),
    )
    return Pack(messages, tools, report)
