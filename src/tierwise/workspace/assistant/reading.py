"""What the offline assistant reads from a request: this turn's tool steps and the items shown before.

:class:`RequestView` reads a :class:`~tierwise.providers.base.ModelRequest` for
:class:`~tierwise.workspace.assistant.model.OfflineAssistant`: the local "now", the chat's current project
or task, the user's last message, the items earlier results and answers showed, and this turn's tool
calls and results as :class:`Step` objects (a result too large to read whole keeps its sha256). The
functions around it read a tool result (:func:`parse_result`, :func:`result_items`), recover items
from an answer's text (:func:`answer_items`, :func:`answer_single`) and match titles
(:func:`match_score`).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Union

from tierwise.providers.base import ModelRequest
from tierwise.workspace.assistant.intents import keywords

__all__ = [
    "Item",
    "RequestView",
    "Shown",
    "Step",
    "answer_items",
    "answer_single",
    "context_items",
    "is_preview",
    "match_score",
    "parse_result",
    "result_items",
]

_LISTING = frozenset({"list_tasks", "search_projects", "search_notes", "get_project_details"})


@dataclass
class Step:
    """One tool call of this turn and its result: ``data`` (a JSON object) or ``error`` (text)."""

    name: str
    arguments: dict[str, Any]
    data: dict[str, Any] | None = None
    error: str | None = None
    blob: str | None = None  # the sha256 of a result too large to read whole (open_blob reads it)
    text: str = ""  # the content as it came


Shown = Union["Item", tuple[str | None, str]]
"""An item an answer showed: the tool's :class:`Item` when a result had it, else ``(kind, title)``."""


@dataclass
class Item:
    """A task, project or note the conversation has shown, with its record as the tool returned it."""

    kind: str
    id: str
    title: str
    record: dict[str, Any] = field(default_factory=dict)


# -- reading the request -------------------------------------------------------------------------


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return ""


def parse_result(content: Any) -> tuple[dict[str, Any] | None, str | None]:
    """A tool message's content as a JSON object, or an error text (errors, summaries, garbage)."""
    text = _text(content).strip()
    if text.lower().startswith("error"):
        return None, text
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None, "the result is not available (compressed or unreadable)"
    if not isinstance(value, dict):
        return None, "the result has an unexpected shape"
    return value, None


def result_items(data: Mapping[str, Any]) -> tuple[list[Item], Item | None]:
    """The items a result lists, and the single item it is about (details, a new or changed task)."""
    listed: list[Item] = []
    single: Item | None = None
    for key, kind, label in (
        ("tasks", "task", "title"),
        ("projects", "project", "name"),
        ("notes", "note", "title"),
    ):
        rows = data.get(key)
        if isinstance(rows, list):
            listed += [x for x in (_item(kind, row, label) for row in rows) if x is not None]
    for key, kind, label in (
        ("task", "task", "title"),
        ("project", "project", "name"),
        ("note", "note", "title"),
    ):
        record = data.get(key)
        if isinstance(record, dict):
            single = _item(kind, record, label)
            nested = record.get("tasks")
            if isinstance(nested, list):
                listed += [x for x in (_item("task", row, "title") for row in nested) if x is not None]
    event = data.get("event")
    if single is None and isinstance(data.get("task_id"), str) and isinstance(event, dict):
        single = Item("task", data["task_id"], str(event.get("summary") or data["task_id"]))
    return listed, single


_PREVIEW_HINTS = {"task": "is_overdue", "project": "completion_percentage", "note": "created_at"}
"""A key every abbreviated record of a kind has (views.py) and its recap (recaps.py) lacks."""


def is_preview(item: Item) -> bool:
    """Whether ``item``'s record is its preview (a list's abbreviated record) or more, not a recap."""
    hint = _PREVIEW_HINTS.get(item.kind)
    return hint is not None and hint in item.record


def _item(kind: str, row: Any, label: str) -> Item | None:
    if not isinstance(row, dict) or not isinstance(row.get("id"), str):
        return None
    return Item(kind, row["id"], str(row.get(label) or "Untitled"), row)


class RequestView:
    """What the assistant needs from a request: now, the location, the message, earlier items, this turn."""

    def __init__(self, request: ModelRequest, clock: Callable[[], datetime]) -> None:
        messages = [m for m in request.messages if isinstance(m, Mapping)]
        conversation = json.dumps(messages, sort_keys=True, default=str, ensure_ascii=False)
        self.digest = hashlib.sha256(f"{len(messages)}:{conversation}".encode()).hexdigest()
        self.system = "\n".join(_text(m.get("content")) for m in messages if m.get("role") == "system")
        self.tools = {
            str(t.get("function", {}).get("name"))
            for t in request.tools
            if isinstance(t, Mapping) and isinstance(t.get("function"), Mapping)
        }
        self.text_only = request.tool_choice == "none"
        self.now = self._now(clock)
        self.current: dict[str, Item] = {}
        for kind, header in (("project", "Current Project"), ("task", "Current Task")):
            match = re.search(rf"^## {header}: (.+) \(((?:proj|task)_[A-Za-z0-9]+)\)\s*$", self.system, re.M)
            if match:
                self.current[kind] = Item(kind, match[2], match[1])
        self.context_items = context_items(self.system)  # what the overview or location lists, with ids
        users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
        start = users[-1] if users else len(messages)
        self.message = _text(messages[start].get("content")) if users else ""
        self.previous_message = _text(messages[users[-2]].get("content")) if len(users) > 1 else ""
        self.earlier: list[Item] = []  # every item a tool result showed before, oldest first
        self.shown: list[Shown] = []  # the last list an answer showed the user, in its order
        self.shown_blob: str | None = None  # the stored result that list came from, when memory compressed it
        self.focus: Shown | None = None  # the one item the answers were last about ("it", "that task")
        self.focus_list = 0  # how many items the answer after it listed (then "it" is ambiguous)
        self.last_answer = ""  # the last answer before this message
        self.slots: list[datetime] = []  # the starts of the free slots the last answer listed, if it did
        self.events: list[str] = []  # the calendar events the last answer listed, as it wrote them
        self.steps: list[Step] = []
        known: dict[tuple[str, str], Item] = {}  # items by kind and title, as tool results had them
        calls: dict[str, tuple[str, dict[str, Any]]] = {}
        turn_blob: str | None = None
        for index, message in enumerate(messages):
            role = message.get("role")
            if role == "user":
                turn_blob = None
            elif role == "assistant":
                for call in message.get("tool_calls") or []:
                    try:
                        function = call["function"]
                        arguments = json.loads(function.get("arguments") or "{}")
                        calls[str(call["id"])] = (
                            str(function["name"]),
                            arguments if isinstance(arguments, dict) else {},
                        )
                    except (KeyError, TypeError, ValueError, AttributeError):
                        continue
                text = _text(message.get("content"))
                if text and not message.get("tool_calls") and index < start:
                    self._answered(text, known, turn_blob)
            elif role == "tool":
                name, arguments = calls.get(
                    str(message.get("tool_call_id")), (str(message.get("name") or ""), {})
                )
                data, error = parse_result(message.get("content"))
                if index > start:
                    blob = re.search(r"sha256:([0-9a-f]{64})", _text(message.get("content")))
                    content = _text(message.get("content"))
                    sha = blob[1] if blob and not data else None
                    self.steps.append(Step(name, arguments, data, error, sha, content))
                    continue
                if data is None:
                    blob = re.search(r"sha256:([0-9a-f]{64})", _text(message.get("content")))
                    if blob and name in _LISTING:
                        turn_blob = blob[1]
                    continue
                listed, single = result_items(data)
                for item in listed + ([single] if single else []):
                    self.earlier.append(item)
                    known[(item.kind, item.title.lower())] = item

    def _answered(self, text: str, known: dict[tuple[str, str], Item], blob: str | None) -> None:
        """Read an answer the user saw: the list it showed, or the one item it was about."""
        self.last_answer = text
        self.slots = answer_slots(text, self.now)
        self.events = answer_events(text)

        def resolved(kind: str | None, title: str) -> Shown:
            kinds = (kind,) if kind else ("task", "project", "note")
            found = next((known[(k, title.lower())] for k in kinds if (k, title.lower()) in known), None)
            return found if found is not None else (kind, title)

        listed = answer_items(text)
        if listed:
            self.shown, self.shown_blob = [resolved(kind, title) for kind, title in listed], blob
        said = answer_single(text)  # one item's answer (a project's may list its tasks: "it" is the project)
        if said is not None:
            self.focus, self.focus_list = resolved(*said), 0
        elif len(listed) == 1:
            self.focus, self.focus_list = self.shown[0], 0
        elif listed:
            self.focus_list = len(listed)

    def _now(self, clock: Callable[[], datetime]) -> datetime:
        match = re.search(r"^Now: \w+ (\d{4}-\d{2}-\d{2}) (\d{2}:\d{2})", self.system, re.M)
        if match:
            try:
                return datetime.fromisoformat(f"{match[1]}T{match[2]}")
            except ValueError:
                pass
        return clock().replace(tzinfo=None)


_CONTEXT_KINDS = {"proj": "project", "task": "task"}


def context_items(system: str) -> list[Item]:
    """The projects and tasks the system context lists as bullets ending in their id.

    The workspace context writes them as ``- Name · 48% · 15 open tasks · proj_…`` (the overview) and
    ``- [high] Title (since 2026-11-16 10:00) · task_…`` (overdue and top tasks); a model reads the id
    there instead of searching for the name.
    """
    found: list[Item] = []
    for line in system.splitlines():
        if not line.startswith("- ") or " · " not in line:
            continue
        parts = line[2:].split(" · ")
        match = re.fullmatch(r"(proj|task)_[A-Za-z0-9]+", parts[-1].strip())
        if match is None:
            continue
        title = re.sub(r"^\[\w+\] ", "", parts[0])
        title = re.sub(r" \((?:since )?\d{4}-\d{2}-\d{2}[^)]*\)$", "", title).strip()
        if title:
            found.append(Item(_CONTEXT_KINDS[match[1]], match[0], title))
    return found


def answer_items(text: str) -> list[tuple[str | None, str]]:
    """The ``(kind, title)`` of each item an answer listed as a bullet (tasks, projects, notes)."""
    heading = text.lstrip()[:20].lower()
    kind = "project" if "project" in heading else "note" if "note" in heading else None
    found: list[tuple[str | None, str]] = []
    for line in text.splitlines():
        task = re.match(r"^\s*- \[(?:high|medium|low|\?)\] (.+?)(?: · |$)", line)  # not "- [x] done"
        named = re.match(r"^\s*- \*\*(.+?)\*\*", line) if kind else None
        if task:
            found.append(("task", task[1].strip()))
        elif named:
            found.append((kind, named[1].strip()))
    return found


def answer_slots(text: str, now: datetime) -> list[datetime]:
    r"""The starts of the free slots an answer listed (``- Sat 28 Nov 09:00–10:00``), in its order.

    Example:
        >>> answer_slots("**Free slots**:\n- Mon 30 Nov 09:00–10:00\n- Tue 01 Dec 14:00–15:00",
        ...              datetime(2026, 11, 28, 8, 0))
        [datetime.datetime(2026, 11, 30, 9, 0), datetime.datetime(2026, 12, 1, 14, 0)]
    """
    found = []
    # a slot's line ends at its times (an event's goes on with its title)
    slot = r"^\s*- \w{3} (\d{2} \w{3}) (\d{2}:\d{2})–\d{2}:\d{2}(?: \(preferred\))?\s*$"
    for match in re.finditer(slot, text, re.M):
        for year in (now.year, now.year + 1):  # a slot is never long past: early January follows December
            try:
                moment = datetime.strptime(f"{match[1]} {year} {match[2]}", "%d %b %Y %H:%M")
            except ValueError:
                break
            if moment >= now - timedelta(days=1):
                found.append(moment)
                break
    return found


def answer_events(text: str) -> list[str]:
    """The lines of a calendar answer's events (``Tue 24 Nov 09:00–10:00 Design review``), in its order."""
    if not text.lstrip().startswith("**Calendar"):
        return []
    return [m[1] for m in re.finditer(r"^- (\w{3} \d{2} \w{3} .+)$", text, re.M)]


def answer_single(text: str) -> tuple[str | None, str] | None:
    """The ``(kind, title)`` of the item an answer was about (its first bold title), if any."""
    first = text.strip().split("\n", 1)[0]
    match = re.match(r"^(Created |Updated |Scheduled )?\*\*(.+?)\*\*(.*)$", first)
    if match is None or first.rstrip().endswith(":"):  # a list's heading ("**Overdue tasks** (5):")
        return None
    rest = match[3]
    if match[1] or re.match(r" · (?:backlog|in progress|done|blocked) · | isn't booked", rest):
        return "task", match[2]
    return ("project" if "% complete" in rest else None), match[2]


def _same(a: str, b: str) -> bool:
    if a == b or a.rstrip("s") == b.rstrip("s"):
        return True
    prefix = len(a) >= 4 and len(b) >= 4 and (a.startswith(b) or b.startswith(a))
    return prefix or (len(a) >= 5 and len(b) >= 5 and a[:5] == b[:5])


def match_score(words: list[str], title: str) -> tuple[float, float]:
    """How well ``title`` matches: the share of ``words`` it has, then the share of its words matched."""
    title_words = keywords(title)
    if not words or not title_words:
        return 0.0, 0.0
    hits = sum(1 for w in words if any(_same(w, t) for t in title_words))
    return hits / len(words), hits / len(title_words)
