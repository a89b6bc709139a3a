"""A stored chat as a person reads it, for ``tierwise chat --session`` (issue 33).

A resumed chat shows its last exchanges: what the user said, what the assistant did in plain words
("looked up 3 tasks · opened a task"), and what it answered, its markdown read as text::

    you › what tasks do I have?
      looked up 5 tasks
    assistant › Open tasks (172): [high] Plan a trip to the Madrid office · backlog · …

Never the stored calls and results themselves: no tool names, arguments, JSON or blob hashes. The
engine's own tools (``more_tools``, ``open_blob``, ``update_narrative``) are left out; a tool this
module has no words for is named by its words (``send_invoice`` → "used send invoice").

Counts come from the stored tool executions (``Store.list_tool_calls``: the whole result even when
the message holds a blob's summary), else from the tool message's JSON.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tierwise.store import Store, StoredMessage

__all__ = ["EXCHANGES", "Exchange", "activity", "exchanges", "history_lines", "plain_text"]

EXCHANGES = 3
"""How many of a resumed chat's last exchanges (a user message and what answered it) are shown."""

_CHARS = 160

# A tool's words: (verb, noun, whether the count is of the items its result lists).
_WORDS: Mapping[str, tuple[str, str, bool]] = {
    "list_tasks": ("looked up", "task", True),
    "search_projects": ("looked up", "project", True),
    "search_notes": ("looked up", "note", True),
    "get_calendar_events": ("looked up", "calendar event", True),
    "find_available_slots": ("found", "free slot", True),
    "get_task_details": ("opened", "task", False),
    "get_project_details": ("opened", "project", False),
    "get_note_details": ("read", "note", False),
    "create_task": ("created", "task", False),
    "update_task": ("updated", "task", False),
    "update_project_context": ("updated", "project", False),
    "schedule_task": ("scheduled", "task", False),
    "record_decision": ("noted", "decision", False),
}
_PHRASES: Mapping[str, str] = {"recall_segments": "recalled earlier parts of this chat"}
_UNSHOWN = frozenset({"more_tools", "open_blob", "update_narrative"})
"""The engine's housekeeping, not something the assistant did for the user."""

_MARKER = re.compile(r"^\s*(?:#{1,6}\s+|[-*+•]\s+|\d{1,3}[.)]\s+|>\s*)")
_EMPHASIS = re.compile(r"\*\*|__|`")


@dataclass
class _Call:
    name: str
    result: Any = None
    success: bool = True


@dataclass
class Exchange:
    """A user message and what answered it: the tool calls made and the assistant's text."""

    said: str | None
    calls: list[_Call] = field(default_factory=list)
    answer: list[str] = field(default_factory=list)
    stopped: bool = False


def plain_text(markdown: str) -> str:
    r"""Markdown as one line of text: markers and emphasis gone, lines joined with " · ".

    Example:
        >>> plain_text("**Open tasks** (2):\n- Plan the trip\n- Book a massage")
        'Open tasks (2): Plan the trip · Book a massage'
    """
    out = ""
    for line in markdown.splitlines():
        text = " ".join(_EMPHASIS.sub("", _MARKER.sub("", line)).split())
        if not text:
            continue
        out += ("" if not out else " " if out.endswith(":") else " · ") + text
    return out


def _abbreviate(text: str, limit: int = _CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _items(result: Any) -> int | None:
    """How many things a result lists: the first list in it (``{"tasks": [...]}``), else ``None``."""
    if isinstance(result, str):
        try:
            result = json.loads(result)
        except (json.JSONDecodeError, ValueError):
            return None
    if isinstance(result, list):
        return len(result)
    if isinstance(result, dict):
        return next((len(v) for v in result.values() if isinstance(v, list)), None)
    return None


def _counted(noun: str, n: int | None) -> str:
    if n is None:
        return f"{noun}s"
    if n == 0:
        return f"no {noun}s"
    return f"a {noun}" if n == 1 else f"{n:,} {noun}s"


def activity(calls: Sequence[_Call]) -> str:
    """What the calls did, in words, in the order first done; ``""`` for nothing worth saying.

    Example:
        >>> activity([_Call("more_tools"), _Call("list_tasks", {"tasks": [1, 2, 3]}),
        ...           _Call("get_task_details"), _Call("send_invoice", success=False)])
        'looked up 3 tasks · opened a task · a tool call failed'
    """
    order: list[str] = []
    counts: dict[str, int | None] = {}
    failed = 0
    for call in calls:
        if call.name in _UNSHOWN:
            continue
        if not call.success:
            failed += 1
            continue
        if call.name not in order:
            order.append(call.name)
            counts[call.name] = 0
        words = _WORDS.get(call.name)
        if words is not None and words[2]:
            found, had = _items(call.result), counts[call.name]
            counts[call.name] = None if found is None or had is None else had + found
        else:
            counts[call.name] = (counts[call.name] or 0) + 1
    parts = []
    for name in order:
        if name in _PHRASES:
            parts.append(_PHRASES[name])
        elif name in _WORDS:
            verb, noun, _ = _WORDS[name]
            parts.append(f"{verb} {_counted(noun, counts[name])}")
        else:
            times = counts[name] or 1
            used = f"used {name.replace('_', ' ').strip()}"
            parts.append(used + (f" ({times} times)" if times > 1 else ""))
    if failed:
        parts.append("a tool call failed" if failed == 1 else f"{failed} tool calls failed")
    return " · ".join(parts)


def exchanges(messages: Iterable[StoredMessage], results: Mapping[str, list[Any]]) -> list[Exchange]:
    """The messages as exchanges, oldest first (what comes before the first user message is one too).

    ``results``: a tool call's stored result by its call id, read in preference to the tool message
    (which may hold only a blob's summary).
    """
    out: list[Exchange] = []
    calls: dict[str, _Call] = {}
    for stored in messages:
        message = stored.message
        role = message.get("role")
        if role == "system":
            continue
        if role == "user":
            out.append(Exchange(plain_text(stored.content or "") or "(no text)"))
            continue
        if not out:
            out.append(Exchange(None))
        current = out[-1]
        if role == "tool":
            call_id = str(message.get("tool_call_id") or "")
            call = calls.get(call_id) or _Call(str(message.get("name") or "tool"))
            if call_id not in calls:
                current.calls.append(call)
            if call_id not in results:
                call.result = stored.content
            call.success = bool(stored.metadata.get("success", True))
            continue
        for raw in message.get("tool_calls") or []:
            if not isinstance(raw, dict):
                continue
            call_id = str(raw.get("id") or "")
            name = str((raw.get("function") or {}).get("name") or raw.get("type") or "tool")
            recorded = results.get(call_id)
            call = _Call(name, recorded[0] if recorded else None, recorded[1] if recorded else True)
            calls[call_id] = call
            current.calls.append(call)
        if stored.content:
            current.answer.append(plain_text(stored.content))
        current.stopped = current.stopped or bool(stored.metadata.get("stopped"))
    return out


def _results(
    store: Store, user_id: str, chat_id: str, shown: Sequence[StoredMessage]
) -> dict[str, list[Any]]:
    """The stored executions of the shown messages' calls: call id → ``[result, success]``."""
    out: dict[str, list[Any]] = {}
    for stored in shown:
        raw_calls = [c for c in stored.message.get("tool_calls") or [] if isinstance(c, dict)]
        if not raw_calls:
            continue
        records = list(store.list_tool_calls(user_id, chat_id, message_id=stored.id))
        for raw in raw_calls:  # the executions of one message are recorded in its calls' order
            name = str((raw.get("function") or {}).get("name") or "")
            match = next((r for r in records if r.tool_name == name), None)
            if match is not None:
                records.remove(match)
                out[str(raw.get("id") or "")] = [match.result, match.success]
    return out


def history_lines(store: Store, user_id: str, chat_id: str, last: int = EXCHANGES) -> list[str]:
    """The chat's last ``last`` exchanges as a person reads them, oldest first.

    A line for what the user said (``you › …``), one for what the assistant did (indented, if it
    used tools), one for its answer (``assistant › …``); first, how many earlier exchanges are not
    shown, if any.
    """
    if last <= 0:
        return []
    messages = store.list_messages(user_id, chat_id)
    starts = [i for i, m in enumerate(messages) if m.message.get("role") == "user"]
    first = starts[-last] if len(starts) >= last else 0
    shown = messages[first:]
    earlier = sum(1 for i in starts if i < first)
    lines = []
    if earlier:
        lines.append(f"… {earlier:,} earlier exchange{'s' if earlier != 1 else ''} not shown")
    for exchange in exchanges(shown, _results(store, user_id, chat_id, shown)):
        if exchange.said is not None:
            lines.append(f"you › {_abbreviate(exchange.said)}")
        did = activity(exchange.calls)
        if did:
            lines.append(f"  {did}")
        said = " · ".join(a for a in exchange.answer if a)
        if said or exchange.stopped:
            lines.append("assistant › " + _abbreviate(said) + (" (stopped)" if exchange.stopped else ""))
    return lines
