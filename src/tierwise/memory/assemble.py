"""One pack from memory: the caller's system prompt, tools and current input, plus memory's layers.

This is where memory meets the packer: the caller's layers are counted first (they are reserved),
memory sizes its layers to what is left, and the packer makes the final, checksummed pack. A caller's
``recap`` turns the tool results of earlier turns in memory's history into their recaps first (see
:mod:`tierwise.chat.recap`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tierwise.budget import Budget, PruningBand
from tierwise.memory.blobs import compressed_sha256
from tierwise.memory.engine import Form, Memory
from tierwise.memory.outputs import head_tail
from tierwise.packing.groups import MessageGroups
from tierwise.packing.layers import ContextLayer
from tierwise.packing.packer import Packer
from tierwise.packing.report import Pack
from tierwise.tokens import REPLY_PRIMING

__all__ = [
    "AGENT_STEPS",
    "STEP_SHARE",
    "TURN_SHARE",
    "messages_text",
    "pack_text",
    "pack_turn",
    "recap_history",
]

Recap = Callable[[Mapping[str, Any]], Mapping[str, Any] | None]

TURN_SHARE = 0.5
"""A turn in progress larger than this share of what the system prompt and tools leave is packed
step by step (an agent loop): its completed steps become memory's turns, only the newest is sent whole."""

AGENT_STEPS = 3
"""A turn packed step by step with this many completed steps or more makes the conversation an
agent loop: its later turns are packed step by step from their first step, its first user message
stays pinned, its newest steps stay whole after a compaction step, its narrative is its work."""

STEP_SHARE = 0.5
"""The step being answered may take this share of what the system prompt and tools leave; a result
that would make it larger keeps its head and tail and says where the rest is."""


def pack_turn(
    memory: Memory,
    budget: Budget,
    current: Sequence[Mapping[str, Any]],
    *,
    system: str | Sequence[Mapping[str, Any]] | None = None,
    tools: Sequence[Mapping[str, Any]] = (),
    requested: Sequence[tuple[str, Form]] = (),
    seed: str | int | None = None,
    band: PruningBand | None = None,
    health: float | None = None,
    upto: int | None = None,
    layers: Sequence[ContextLayer] = (),
    tail_role: str = "user",
    recap: Recap | None = None,
) -> Pack:
    """Pack ``current`` (the newest user message and the turn in progress) with memory's context.

    ``system`` is the system prompt: a text, or the caller's own system (or developer) messages,
    sent first and exactly as given. If ``current`` is already remembered (the chat engine stores
    every message first), pass ``upto``: the index of its first turn, so memory's layers stop
    before it and nothing is sent twice. ``layers`` are the caller's other layers (a user profile,
    the location, related items): memory holds those placed in the head as they were at its last
    compaction step and sends a changed one in the tail (see :class:`~tierwise.memory.engine.Frame`).
    ``tail_role`` is the role of the per-turn tail message (see :class:`~tierwise.packing.Packer`).
    ``recap``: each tool message of memory's history (a result of an earlier turn) → the message to
    send instead, or ``None`` to send it as it is (:func:`recap_history`).
    """
    counter = memory.counter
    base: list[ContextLayer] = []
    if system:
        base.append(ContextLayer("system", "system", system))
    if tools:
        base.append(ContextLayer("tools", "tools", tools))
    fixed = REPLY_PRIMING + sum(layer.tokens(counter) for layer in base)
    task = None
    in_turn: set[int] = set()
    note_room = 0
    step = _step_start(memory, current, upto, max(0, budget.available - fixed))
    if step:  # a step of an agent loop: the turn's completed steps are memory's turns
        assert upto is not None
        task, memory.step_turn = upto, upto
        if sum(1 for m in current[:step] if m.get("tool_calls")) >= AGENT_STEPS:
            memory.agent_loop = True  # many steps to one message: an agent loop, for good
        in_turn = memory.message_ids(upto, upto + step)
        current = fit_step(
            memory,
            current[step:],
            upto + step,
            int((budget.available - fixed) * STEP_SHARE),
            opens=any((t.get("function") or {}).get("name") == "open_blob" for t in tools),
        )
        upto += step
        note_room = int((budget.available - fixed) * memory.policy.step_retrieval_share)
    texts = any(layer.form == "text" for layer in base)
    reserved = (
        REPLY_PRIMING
        + sum(layer.tokens(counter) for layer in base)
        + (counter.count_messages(current) - REPLY_PRIMING if current else 0)
        + note_room
        + (4 if texts else 0)
    )
    query = next(
        (str(m.get("content") or "") for m in reversed(current) if m.get("role") == "user"),
        None,
    )
    if task is not None:  # a step: its call and its output name what the next action may need
        query = None
    limit = band.history_messages if band is not None else None
    chosen = memory.layers(
        query,
        budget,
        reserved=reserved,
        requested=requested,
        upto=upto,
        caller=layers,
        max_messages=limit,
        task=task,
    )
    if task is not None and current and upto is not None:  # lines of earlier output the step names
        at = upto + len(current) - 1
        note = memory.step_note(step_text(current), at, note_room) if at not in memory.notes else ""
        note = note or memory.notes.get(at, "")
        if note:
            last = current[-1]
            current = [*current[:-1], {**last, "content": f"{last.get('content') or ''}{note}"}]
    if current:
        base.append(ContextLayer("input", "input", current))
    if recap is not None:
        chosen = recap_history(chosen, recap, keep=in_turn)
    return Packer(counter, tail_role=tail_role).pack(
        base + chosen, budget, seed=seed, band=band, health=health
    )


def _step_start(memory: Memory, current: Sequence[Mapping[str, Any]], upto: int | None, free: int) -> int:
    """Where the step being answered starts in ``current`` if the turn is packed step by step, else 0.

    A turn is packed step by step once it has outgrown :data:`TURN_SHARE` of ``free``, and from then
    on until it ends (packs keep one layout), if memory holds it (``upto``: its first message). In an
    agent loop (``memory.agent_loop``: a turn of :data:`AGENT_STEPS` steps or more was) every later
    turn is too, from its first step: a harness's reminder starts a turn, not a chat.
    """
    if upto is None or len(current) < 2 or upto + len(current) != len(memory.messages):
        return 0
    if memory.step_turn != upto and not memory.agent_loop:
        costs = memory.costs[upto : upto + len(current)]
        if (
            sum(costs) <= free * TURN_SHARE
            and sum(map(memory.counter.count_message, current)) <= free * TURN_SHARE
        ):
            return 0
    groups = MessageGroups(current).groups()
    return groups[-1][0] if groups else 0


def step_text(step: Sequence[Mapping[str, Any]]) -> str:
    """A step's words: the model's text, its calls' arguments and the outputs they got."""
    parts: list[str] = []
    for message in step:
        if isinstance(message.get("content"), str):
            parts.append(message["content"])
        for call in message.get("tool_calls") or ():
            parts.append(str((call.get("function") or {}).get("arguments") or ""))
    return "\n".join(parts)


def fit_step(
    memory: Memory, step: Sequence[Mapping[str, Any]], at: int, room: int, *, opens: bool = True
) -> Sequence[Mapping[str, Any]]:
    """The step being answered, whole if it fits ``room``; else each tool result cut to its share.

    A cut result keeps its head and tail; the line between says how much was left out and, for a
    result memory keeps as a blob (``at``: the step's first message in memory) when the pack offers
    ``open_blob`` (``opens``), how to read it. A cut makes memory point back (``memory.pointed``):
    a chat engine offers its retrieval tools from the next call on.
    """
    counter = memory.counter
    costs = [counter.count_message(m) for m in step]
    if sum(costs) <= room:
        return step
    results = [i for i, m in enumerate(step) if m.get("role") == "tool" and isinstance(m.get("content"), str)]
    if not results:
        return step
    share = max(64, (room - sum(c for i, c in enumerate(costs) if i not in results)) // len(results))
    out = list(step)
    for i in results:
        if costs[i] <= share:
            continue
        content = str(step[i].get("content"))
        sha = (
            compressed_sha256(memory.messages[at + i].get("content"))
            if at + i < len(memory.messages)
            else None
        )
        where = f': open_blob(sha256="{sha}") reads all of it' if sha and opens else ""
        memory.pointed = True
        pointer = f"[… {content.count(chr(10)) + 1:,} lines in all, the middle left out{where}]"
        out[i] = {**step[i], "content": head_tail(content, counter, share - 8, pointer)}
    return out


def recap_history(
    layers: Sequence[ContextLayer], recap: Recap, *, keep: set[int] | frozenset[int] = frozenset()
) -> list[ContextLayer]:
    """``layers`` with the tool results in the history layer replaced by their recaps.

    Only memory's ``history`` layer is changed, and in it not the messages whose ``id()`` is in
    ``keep`` (the turn in progress): a result is always read whole in the turn that asked for it.

    Example:
        >>> history = ContextLayer("history", "history", [
        ...     {"role": "user", "content": "list"},
        ...     {"role": "tool", "tool_call_id": "c1", "content": "a long result"},
        ... ])
        >>> short = lambda m: {**m, "content": "short"} if m["role"] == "tool" else None
        >>> [m["content"] for m in recap_history([history], short)[0].content]
        ['list', 'short']
    """
    out: list[ContextLayer] = []
    for layer in layers:
        if layer.kind == "history" and layer.form == "messages" and not isinstance(layer.content, str):
            messages = [
                recap(m) or m if m.get("role") == "tool" and id(m) not in keep else m for m in layer.content
            ]
            if any(new is not old for new, old in zip(messages, layer.content, strict=True)):
                layer = ContextLayer(
                    layer.id,
                    layer.kind,
                    messages,
                    priority=layer.priority,
                    guaranteed=layer.guaranteed,
                    truncatable=layer.truncatable,
                    title=layer.title,
                    summary=layer.summary,
                    placement=None if layer.placement == "system" else layer.placement,
                )
        out.append(layer)
    return out


def pack_text(pack: Pack) -> str:
    """Every text the pack sends, in order (message contents, then tool definitions as JSON)."""
    return messages_text(pack.messages)


def messages_text(messages: Sequence[Mapping[str, Any]]) -> str:
    """Every text of ``messages`` in order: contents, text parts, tool calls as ``name(arguments)``."""
    parts: list[str] = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
        for call in message.get("tool_calls") or ():
            fn = call.get("function") or {}
            parts.append(f"{fn.get('name', '')}({fn.get('arguments', '')})")
    return "\n".join(parts)
