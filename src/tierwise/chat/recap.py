"""Earlier tool results re-sent as their recap: seed 000's progressive disclosure, applied to history.

A tool result is read whole in the turn that asked for it. Once that turn is over the model has used
it (and answered from it), so later packs need only what lets the model refer to it and ask again:
the tool's :attr:`~tierwise.tools.Tool.recap` — for the workspace's tools, the ids and titles of the
records shown, with a note saying which tool gives them in full (:mod:`tierwise.workspace.recaps`).
Tools without a recap (an application's own, the housekeeping tools) are re-sent as they came.

:func:`history_recap` makes the function the chat engine hands the pack
(:func:`~tierwise.memory.assemble.pack_turn`'s ``recap``): a tool message in, its recapped copy out
(or ``None`` to keep it). Recaps are made once per result text and kept (least recently used let
go): the same history is recapped the same way on every call, so the packs stay deterministic and a
provider's prompt cache sees the same prefix from one turn to the next.

Within a turn, :func:`turn_recap` recaps one kind of result only: a list's (a tool of tier
``list``) once a later call of the turn named one of its records by id (an argument ``…_id``) — the
list served to find the item, and the turn has moved on to it (list → detail, list → change). Every
other result of the turn is read whole until the turn is over.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tierwise.tools.registry import ToolRegistry

__all__ = ["MessageRecap", "history_recap", "turn_recap"]

MessageRecap = Callable[[Mapping[str, Any]], Mapping[str, Any] | None]
"""A tool message of an earlier turn → the message to send instead, or ``None`` to send it as it is."""

log = logging.getLogger(__name__)

_MAX_KEPT = 2_048
_kept: OrderedDict[tuple[Callable[[str], str | None], str], str | None] = OrderedDict()
_lock = threading.Lock()


def _recap_text(recap: Callable[[str], str | None], content: str) -> str | None:
    key = (recap, content)
    with _lock:
        if key in _kept:
            _kept.move_to_end(key)
            return _kept[key]
    try:
        text = recap(content)
    except Exception:  # a recap must never take a turn down: the result is sent as it came
        log.exception("recapping a tool result failed; it is sent whole")
        text = None
    if text is not None and len(text) >= len(content):
        text = None  # a recap is never longer than the result
    with _lock:
        _kept[key] = text
        while len(_kept) > _MAX_KEPT:
            _kept.popitem(last=False)
    return text


def history_recap(registry: ToolRegistry) -> MessageRecap | None:
    """The recap of earlier tool results for a chat with these tools (``None``: no tool has one).

    Example:
        >>> from tierwise.tools import tool
        >>> @tool(tier="list")
        ... def list_items() -> list[str]:
        ...     "Items."
        ...     return []
        >>> import dataclasses
        >>> registry = ToolRegistry([dataclasses.replace(list_items, recap=lambda text: text[:5])])
        >>> recap = history_recap(registry)
        >>> recap({"role": "tool", "name": "list_items", "tool_call_id": "c1", "content": "abcdefgh"})
        {'role': 'tool', 'name': 'list_items', 'tool_call_id': 'c1', 'content': 'abcde'}
        >>> recap({"role": "tool", "name": "other", "tool_call_id": "c2", "content": "abcdefgh"}) is None
        True
    """
    recaps = {t.name: t.recap for t in registry if t.recap is not None}
    if not recaps:
        return None

    def recap(message: Mapping[str, Any]) -> Mapping[str, Any] | None:
        content = message.get("content")
        if message.get("role") != "tool" or not isinstance(content, str):
            return None
        made = recaps.get(str(message.get("name") or ""))
        if made is None:
            return None
        text = _recap_text(made, content)
        return None if text is None else {**message, "content": text}

    return recap


def _named_ids(message: Mapping[str, Any]) -> set[str]:
    """The ids an assistant message's tool calls name (string arguments called ``…_id``)."""
    ids: set[str] = set()
    for call in message.get("tool_calls") or ():
        try:
            arguments = json.loads(call["function"]["arguments"] or "{}")
        except (KeyError, TypeError, ValueError):
            continue
        if isinstance(arguments, dict):
            ids.update(v for k, v in arguments.items() if k.endswith("_id") and isinstance(v, str) and v)
    return ids


def turn_recap(messages: Sequence[Mapping[str, Any]], registry: ToolRegistry) -> Sequence[Mapping[str, Any]]:
    """The turn so far (``messages``), with each list result a later call drew an id from recapped.

    Example:
        >>> import dataclasses
        >>> from tierwise.tools import tool
        >>> @tool(tier="list")
        ... def list_items() -> list[str]:
        ...     "Items."
        ...     return []
        >>> registry = ToolRegistry([dataclasses.replace(list_items, recap=lambda t: t[:13] + "…")])
        >>> def call(id, name, args):
        ...     return {"id": id, "type": "function", "function": {"name": name, "arguments": args}}
        >>> turn = [
        ...     {"role": "user", "content": "open the draft"},
        ...     {"role": "assistant", "content": None, "tool_calls": [call("c1", "list_items", "{}")]},
        ...     {"role": "tool", "tool_call_id": "c1", "name": "list_items",
        ...      "content": '[{"id":"i_1","title":"Draft","preview":"A long text"}]'},
        ... ]
        >>> turn_recap(turn, registry) is turn  # nothing drew on the list yet: read whole
        True
        >>> turn.append({"role": "assistant", "content": None,
        ...              "tool_calls": [call("c2", "get_item", '{"item_id": "i_1"}')]})
        >>> turn_recap(turn, registry)[2]["content"]
        '[{"id":"i_1",…'
    """
    lists = {t.name for t in registry if t.recap is not None and t.tier == "list"}
    if not lists or not any(m.get("role") == "tool" and m.get("name") in lists for m in messages):
        return messages
    recap = history_recap(registry)
    named: set[str] = set()  # ids the calls after each point name, walking back from the newest
    out = list(messages)
    for index in range(len(out) - 1, -1, -1):
        message = out[index]
        if message.get("role") == "assistant":
            named |= _named_ids(message)
        elif message.get("role") == "tool" and message.get("name") in lists and named and recap:
            content = str(message.get("content") or "")
            if any(f'"{value}"' in content for value in named):
                out[index] = recap(message) or message
    return out if any(a is not b for a, b in zip(out, messages, strict=True)) else messages
