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
from tierwise.memory.engine import Form, Memory
from tierwise.packing.layers import ContextLayer
from tierwise.packing.packer import Packer
from tierwise.packing.report import Pack
from tierwise.tokens import REPLY_PRIMING

__all__ = ["pack_text", "pack_turn", "recap_history"]

Recap = Callable[[Mapping[str, Any]], Mapping[str, Any] | None]


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
    if current:
        base.append(ContextLayer("input", "input", current))
    texts = any(layer.form == "text" for layer in base)
    reserved = REPLY_PRIMING + sum(layer.tokens(counter) for layer in base) + (4 if texts else 0)
    query = next(
        (str(m.get("content") or "") for m in reversed(current) if m.get("role") == "user"),
        None,
    )
    limit = band.history_messages if band is not None else None
    chosen = memory.layers(
        query,
        budget,
        reserved=reserved,
        requested=requested,
        upto=upto,
        caller=layers,
        max_messages=limit,
    )
    if recap is not None:
        chosen = recap_history(chosen, recap)
    return Packer(counter, tail_role=tail_role).pack(
        base + chosen, budget, seed=seed, band=band, health=health
    )


def recap_history(layers: Sequence[ContextLayer], recap: Recap) -> list[ContextLayer]:
    """``layers`` with the tool results in the history layer replaced by their recaps.

    Only memory's ``history`` layer is changed: the turn in progress travels in the input layer, so
    a result is always read whole in the turn that asked for it.

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
            messages = [recap(m) or m if m.get("role") == "tool" else m for m in layer.content]
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
    parts: list[str] = []
    for message in pack.messages:
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
        for call in message.get("tool_calls") or ():
            fn = call.get("function") or {}
            parts.append(f"{fn.get('name', '')}({fn.get('arguments', '')})")
    return "\n".join(parts)
