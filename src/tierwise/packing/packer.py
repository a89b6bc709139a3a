"""The packer: candidate layers + a budget → the messages sent to a model, with a report.

Policy ``deterministic-v1``, in order:

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
6. **Render and verify.** Text layers become one system message (sections in kind order), message
   layers follow in kind order, tools go to ``tools``. The result is counted exactly; if joining
   sections made it larger than the sum of its parts, layers are shrunk in drop order until it fits.
7. **Checksum.** sha256 over the canonical JSON of policy, messages and tools.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tierwise.budget import Budget, PruningBand
from tierwise.errors import BudgetError, InputError
from tierwise.packing.conversation import group_messages
from tierwise.packing.layers import KIND_ORDER, TRUNCATION_MARKER, ContextLayer, truncate_text
from tierwise.packing.report import LayerReport, LayerStatus, Pack, PackReport
from tierwise.tokens import REPLY_PRIMING, TOKENS_PER_MESSAGE, TokenCounter, get_counter

__all__ = ["POLICY", "Packer", "pack"]

POLICY = "deterministic-v1"
_KIND_RANK = {kind: i for i, kind in enumerate(KIND_ORDER)}


class _Candidate:
    """Mutable packing state of one layer."""

    __slots__ = (
        "band_reason",
        "cost",
        "cut_by_allocation",
        "first_group",
        "form",
        "group_costs",
        "groups",
        "kept",
        "key",
        "layer",
        "messages_full",
        "notes",
        "orphans",
        "reason",
        "source",
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
        self.groups: list[tuple[int, int]] = []
        self.group_costs: list[int] = []
        self.orphans: list[int] = []
        self.messages_full = 0
        self.text: str | None = None
        self.source = ""  # text the layer is packed from (a band may swap in its summary)
        self.band_reason: str | None = None
        self.first_group = 0
        content = layer.content
        if self.form == "text":
            assert isinstance(content, str)
            self.source = content
            self.tokens_full = counter.count(layer.render())
        elif self.form == "tools":
            self.tokens_full = counter.count_tools(content)  # type: ignore[arg-type]
        else:
            assert not isinstance(content, str)
            self.messages_full = len(content)
            costs = [counter.count_message(m) for m in content]
            self.tokens_full = sum(costs)
            self.groups, self.orphans = group_messages(content)
            self.group_costs = [sum(costs[a:b]) for a, b in self.groups]
            if self.orphans:
                self.notes.append(
                    f"{len(self.orphans)} unpaired tool call/result message(s) left out: "
                    "providers reject a call without its result and a result without its call"
                )
        self.cost = 0
        self.status = "pending"
        self.reason: str | None = None
        self.cut_by_allocation = False
        self.kept = False
        self.whole = self.tokens_full

    # -- sizes -----------------------------------------------------------------------------------

    def whole_cost(self) -> int:
        if self.form == "messages":
            return sum(self.group_costs)
        return self.whole

    def min_cost(self, budget: Budget, counter: TokenCounter) -> int:
        """Smallest size this layer may take when guaranteed."""
        whole = self.whole_cost()
        if not self.layer.truncatable:
            return whole
        if self.form == "messages":
            return self.group_costs[-1] if self.group_costs else 0
        if self.form == "text":
            heading = counter.count(self.layer.heading) if self.layer.heading else 0
            return min(whole, heading + budget.min_fragment_tokens + counter.count(TRUNCATION_MARKER))
        return whole

    def fit(self, target: int, budget: Budget, counter: TokenCounter) -> bool:
        """Take the largest form of this layer costing at most ``target``; False if none."""
        whole = self.whole_cost()
        if whole <= target:
            self._take_whole(whole)
            return True
        if not self.layer.truncatable:
            return False
        if self.form == "messages":
            total, first = 0, len(self.groups)
            for i in range(len(self.groups) - 1, -1, -1):
                if total + self.group_costs[i] > target:
                    break
                total += self.group_costs[i]
                first = i
            if first == len(self.groups):
                return False
            if self.layer.kind == "history":
                first, total = self._start_on_user(first, total)
            self.first_group, self.cost, self.status, self.kept = first, total, "truncated", True
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

    def _start_on_user(self, first: int, total: int) -> tuple[int, int]:
        """Move a cut history forward to its first user message, as a reader would expect."""
        content = self.layer.content
        assert not isinstance(content, str)
        for i in range(first, len(self.groups)):
            if content[self.groups[i][0]].get("role") == "user":
                return i, total - sum(self.group_costs[first:i])
        return first, total

    def _take_whole(self, whole: int) -> None:
        self.first_group = 0
        self.text = self.source if self.form == "text" else None
        self.cost, self.status, self.kept = whole, "kept", True

    def drop(self, reason: str) -> None:
        self.cost, self.status, self.reason, self.kept = 0, "dropped", reason, False

    def kept_messages(self) -> list[Mapping[str, Any]]:
        content = self.layer.content
        assert not isinstance(content, str)
        out: list[Mapping[str, Any]] = []
        for a, b in self.groups[self.first_group :]:
            out.extend(content[a:b])
        return out


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
        system_frame = TOKENS_PER_MESSAGE + counter.count("system")
        separator = counter.count("\n\n")

        # 3. reserve guaranteed layers at their minimum size
        reserve: dict[int, int] = {}
        reserved_text = 0
        for c in order:
            if c.layer.guaranteed and c.status != "dropped":
                frame = 0
                if c.form == "text":
                    frame = system_frame if reserved_text == 0 else separator
                    reserved_text += 1
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
        text_kept = 0
        kind_used: dict[str, int] = {}
        stopped_by: str | None = None
        for c in order:
            if c.status == "dropped":  # by the band
                continue
            outstanding -= reserve.get(id(c), 0)
            if stopped_by is not None and not c.layer.guaranteed:
                c.drop(f"lower in fill order than {stopped_by!r}, which did not fit")
                continue
            frame = (system_frame if text_kept == 0 else separator) if c.form == "text" else 0
            room = available - used - outstanding - frame
            target = room
            ceiling = budget.ceiling(c.layer.kind)
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
                if c.form == "text":
                    text_kept += 1
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
        messages, tools = _render(cands)
        total = counter.count_messages(messages) + counter.count_tools(tools)
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
            messages, tools = _render(cands)
            total = counter.count_messages(messages) + counter.count_tools(tools)

        return _finish(cands, order, messages, tools, total, budget, counter, seed_text, band, health)


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
        if kind == "history" and c.form == "messages" and band.history_messages is not None:
            limit, count, first = band.history_messages, 0, len(c.groups)
            for i in range(len(c.groups) - 1, -1, -1):
                a, b = c.groups[i]
                if count + (b - a) > limit:
                    break
                count += b - a
                first = i
            if first == len(c.groups):
                c.drop(f"{why} keeps no history messages")
            elif first > 0:
                c.band_reason = f"{why} keeps at most {limit} history messages"
                c.groups, c.group_costs = c.groups[first:], c.group_costs[first:]
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


def _render(cands: Sequence[_Candidate]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    kept = sorted((c for c in cands if c.kept), key=lambda c: (_KIND_RANK.get(c.layer.kind, 99), *c.key))
    sections = [c.layer.render(c.text) for c in kept if c.form == "text"]
    messages: list[dict[str, Any]] = []
    if sections:
        messages.append({"role": "system", "content": "\n\n".join(sections)})
    tools: list[dict[str, Any]] = []
    for c in kept:
        if c.form == "messages":
            messages.extend(dict(m) for m in c.kept_messages())
        elif c.form == "tools":
            tools.extend(dict(t) for t in c.layer.content)  # type: ignore[arg-type]
    return messages, tools


def _status(c: _Candidate) -> LayerStatus:
    if not c.kept:
        return "dropped"
    return "truncated" if c.status == "truncated" else "kept"


def canonical_json(messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]) -> bytes:
    """The canonical bytes a pack's checksum is taken over."""
    body = {"policy": POLICY, "messages": messages, "tools": tools}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


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
) -> Pack:
    checksum = hashlib.sha256(canonical_json(messages, tools)).hexdigest()
    reports = []
    for c in order:
        kept_messages = (
            sum(b - a for a, b in c.groups[c.first_group :]) if c.kept and c.form == "messages" else 0
        )
        reports.append(
            LayerReport(
                id=c.layer.id,
                kind=c.layer.kind,
                priority=c.layer.priority,
                guaranteed=c.layer.guaranteed,
                truncatable=c.layer.truncatable,
                tokens_full=c.tokens_full,
                tokens=c.cost,
                status=_status(c),
                reason=c.reason,
                notes=tuple(c.notes),
                messages_full=c.messages_full,
                messages=kept_messages,
            )
        )
    everything = REPLY_PRIMING + sum(r.tokens_full for r in reports)
    if any(c.form == "text" for c in cands):
        everything += TOKENS_PER_MESSAGE + counter.count("system")
        everything += counter.count("\n\n") * (sum(1 for c in cands if c.form == "text") - 1)
    report = PackReport(
        policy=POLICY,
        encoding=counter.encoding_name,
        window=budget.window,
        reserve=budget.reserve,
        budget=budget.available,
        total_tokens=total,
        tokens_all_layers=everything,
        seed=seed,
        band=band.name if band else None,
        health=health,
        checksum=checksum,
        layers=tuple(reports),
    )
    return Pack(messages=messages, tools=tools, report=report)
