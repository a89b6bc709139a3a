"""The offline assistant: a deterministic, rule-based stand-in for a model, so the app runs with no key.

:class:`OfflineAssistant` is a :class:`~tierwise.providers.Provider` that is *not* a language model.
It reads the conversation the chat engine sends — the system text (for "Now: …" and the chat's
current project or task), the user's last message, earlier tool results, and the tool results of
this turn so far — recognises the request with :func:`tierwise.workspace.intents.recognise`, and
makes a small plan of workspace tool calls, one step per model call, in the list → detail order of
seed 000 (search first, then the detail or action on the best match). It then answers in short
markdown bullets from the results. Anything it does not recognise gets an honest reply saying that
this is the offline assistant and how to configure a real model.

It never raises on odd input: unreadable or compressed tool results count as unavailable, tool
errors are relayed, and anything unexpected ends in an honest answer.

Example:
    >>> import asyncio
    >>> from tierwise.providers.base import ModelRequest
    >>> request = ModelRequest([{"role": "user", "content": "hi"}])
    >>> print(asyncio.run(OfflineAssistant().complete(request)).text.splitlines()[0])
    Hi! I'm the offline assistant (rule-based, no AI model). I can:
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from tierwise.providers.base import Event, ModelRequest, Provider, ToolCall
from tierwise.providers.testing import reply_events
from tierwise.tokens import TokenCounter, get_counter
from tierwise.workspace.intents import OPEN_STATUSES, Intent, keywords, recognise

__all__ = ["OFFLINE_HINT", "OfflineAssistant"]

OFFLINE_HINT = (
    "_I'm the offline assistant: local rules, not an AI model. For a real model set `TIERWISE_BASE_URL` "
    "and `TIERWISE_MODEL` (plus `TIERWISE_API_KEY` if it needs one)._"
)
"""The line every fallback answer ends with."""

_CAPABILITIES = (
    "- list tasks: “my high priority tasks for the Q4 launch”, “what's overdue”\n"
    "- details: “tell me more about the API docs task”, “the second one”\n"
    "- projects and notes: “show my active projects”, “find notes about pricing”\n"
    "- calendar: “what's on my calendar today”, “find a free hour tomorrow morning”\n"
    "- changes: “add a task: call the bank Friday”, “mark the webhook task done”, "
    "“schedule the API docs task tomorrow at 10”"
)
_SEARCH_TOOL = {"task": "list_tasks", "project": "search_projects", "note": "search_notes"}
_DETAIL_TOOL = {"task": "get_task_details", "project": "get_project_details", "note": "get_note_details"}
_ID_ARG = {"task": "task_id", "project": "project_id", "note": "note_id"}
_LISTING = frozenset({"list_tasks", "search_projects", "search_notes", "get_project_details"})
_SINGLE = frozenset({*_DETAIL_TOOL.values(), "create_task", "update_task", "schedule_task"})
_MAX_STEPS = 7
_CHUNK = 6_000  # bytes of a stored result read per open_blob call (well under a turn's whole-result limit)
_MAX_CHUNKS = 5
_SHOWN = 10


@dataclass
class Step:
    """One tool call of this turn and its result: ``data`` (a JSON object) or ``error`` (text)."""

    name: str
    arguments: dict[str, Any]
    data: dict[str, Any] | None = None
    error: str | None = None
    blob: str | None = None  # the sha256 of a result too large to read whole (open_blob reads it)
    text: str = ""  # the content as it came


@dataclass
class Item:
    """A task, project or note the conversation has shown, with its record as the tool returned it."""

    kind: str
    id: str
    title: str
    record: dict[str, Any] = field(default_factory=dict)


class _Next(Exception):
    """The plan needs this call before it can go on."""

    def __init__(self, call: ToolCall) -> None:
        super().__init__(call.name)
        self.call = call


class _Stop(Exception):
    """The plan cannot go on (a tool is unavailable, a call would repeat): answer with what there is."""


# -- reading the request -------------------------------------------------------------------------


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return ""


def _parse(content: Any) -> tuple[dict[str, Any] | None, str | None]:
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


def _items(data: Mapping[str, Any]) -> tuple[list[Item], Item | None]:
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


def _item(kind: str, row: Any, label: str) -> Item | None:
    if not isinstance(row, dict) or not isinstance(row.get("id"), str):
        return None
    return Item(kind, row["id"], str(row.get(label) or "Untitled"), row)


class _View:
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
        users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
        start = users[-1] if users else len(messages)
        self.message = _text(messages[start].get("content")) if users else ""
        self.earlier: list[Item] = []  # every item shown before, oldest first
        self.last_list: list[Item] = []  # the last list shown, in the order the answer showed it
        self.last_single: Item | None = None  # the last item talked about alone
        self.list_blob: str | None = None  # the last list's sha256, when memory compressed it
        self.single_blob: str | None = None
        self.list_answer = ""  # the answer that showed the last list
        self.last_answer = ""  # the last answer before this message
        self.steps: list[Step] = []
        calls: dict[str, tuple[str, dict[str, Any]]] = {}
        for index, message in enumerate(messages):
            role = message.get("role")
            if role == "assistant":
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
                    self.list_answer = self.list_answer or text
                    self.last_answer = text
            elif role == "tool":
                name, arguments = calls.get(
                    str(message.get("tool_call_id")), (str(message.get("name") or ""), {})
                )
                data, error = _parse(message.get("content"))
                if index > start:
                    blob = re.search(r"sha256:([0-9a-f]{64})", _text(message.get("content")))
                    content = _text(message.get("content"))
                    sha = blob[1] if blob and not data else None
                    self.steps.append(Step(name, arguments, data, error, sha, content))
                    continue
                if data is None:
                    blob = re.search(r"sha256:([0-9a-f]{64})", _text(message.get("content")))
                    if blob and name in _LISTING:
                        self.last_list, self.list_blob, self.list_answer = [], blob[1], ""
                    if blob and name in _SINGLE:
                        self.last_single, self.single_blob = None, blob[1]
                    continue
                listed, single = _items(data)
                self.earlier += listed + ([single] if single else [])
                if listed:
                    self.last_list, self.list_blob, self.list_answer = listed, None, ""
                if single or len(listed) == 1:
                    self.last_single, self.single_blob = single or listed[0], None
        self.last_list = _in_order(self.last_list, self.list_answer)

    def _now(self, clock: Callable[[], datetime]) -> datetime:
        match = re.search(r"^Now: \w+ (\d{4}-\d{2}-\d{2}) (\d{2}:\d{2})", self.system, re.M)
        if match:
            try:
                return datetime.fromisoformat(f"{match[1]}T{match[2]}")
            except ValueError:
                pass
        return clock().replace(tzinfo=None)


def _in_order(items: list[Item], text: str) -> list[Item]:
    """``items`` in the order an answer showed them (items it did not show go last)."""
    lower = text.lower()
    shown = [(lower.find(item.title.lower()), n, item) for n, item in enumerate(items)]
    return [item for _, _, item in sorted(shown, key=lambda x: (x[0] < 0, x[0], x[1]))]


def _answer_items(text: str) -> list[tuple[str | None, str]]:
    """The ``(kind, title)`` of each item an answer listed as a bullet (tasks, projects, notes)."""
    heading = text.lstrip()[:20].lower()
    kind = "project" if "project" in heading else "note" if "note" in heading else None
    found: list[tuple[str | None, str]] = []
    for line in text.splitlines():
        task = re.match(r"^\s*- \[\w+\] (.+?)(?: · |$)", line)
        named = re.match(r"^\s*- \*\*(.+?)\*\*", line)
        if task:
            found.append(("task", task[1].strip()))
        elif named:
            found.append((kind, named[1].strip()))
    return found


def _answer_single(text: str) -> tuple[str | None, str] | None:
    """The ``(kind, title)`` of the item an answer was about (its first bold title), if any."""
    match = re.match(r"^(Created |Updated |Scheduled )?\*\*(.+?)\*\*(.*)$", text.strip().split("\n", 1)[0])
    if match is None:
        return None
    rest = match[3]
    if match[1] or re.match(r" · (?:backlog|in progress|done|blocked) · ", rest):
        return "task", match[2]
    return ("project" if "% complete" in rest else None), match[2]


def _same(a: str, b: str) -> bool:
    if a == b or a.rstrip("s") == b.rstrip("s"):
        return True
    prefix = len(a) >= 4 and len(b) >= 4 and (a.startswith(b) or b.startswith(a))
    return prefix or (len(a) >= 5 and len(b) >= 5 and a[:5] == b[:5])


def _score(words: list[str], title: str) -> tuple[float, float]:
    """How well ``title`` matches: the share of ``words`` it has, then the share of its words matched."""
    title_words = keywords(title)
    if not words or not title_words:
        return 0.0, 0.0
    hits = sum(1 for w in words if any(_same(w, t) for t in title_words))
    return hits / len(words), hits / len(title_words)


# -- the provider ------------------------------------------------------------------------------------


class OfflineAssistant(Provider):
    """The offline assistant: a rule-based planner over the workspace tools — not an AI model.

    It answers common requests (tasks, projects, notes, calendar, creating, updating and scheduling
    tasks) by calling the tools a model would call, in the list → detail order, and says plainly for
    everything else that it is the offline assistant and how to configure a real model
    (``TIERWISE_BASE_URL``, ``TIERWISE_MODEL``, and ``TIERWISE_API_KEY`` if needed).

    Args:
        clock: the local time when the system text has no "Now:" line (default: the system clock).
        counter: the token counter for usage (default: the shared one).
    """

    name = "offline"

    def __init__(
        self, *, clock: Callable[[], datetime] | None = None, counter: TokenCounter | None = None
    ) -> None:
        self.model: str = "tierwise-offline"
        self.clock = clock or (lambda: datetime.now().astimezone())
        self.counter = counter or get_counter()

    async def stream(self, request: ModelRequest) -> AsyncIterator[Event]:
        """Plan the next step for ``request``: one tool call, or the answer."""
        reply = self.reply(request)
        async for event in reply_events(reply, request, request.model or self.model, self.counter):
            yield event

    def reply(self, request: ModelRequest) -> str | ToolCall:
        """The next tool call or the answer (never raises)."""
        try:
            view = _View(request, self.clock)
            return _Planner(view, recognise(view.message, view.now)).run()
        except Exception as exc:  # a rule-based planner must not take the chat down
            return f"Sorry, I couldn't work that out ({type(exc).__name__}).\n\n{OFFLINE_HINT}"


# -- the planner -------------------------------------------------------------------------------------


class _Planner:
    """One request's plan: which call comes next given this turn's results, or the answer."""

    def __init__(self, view: _View, intent: Intent) -> None:
        self.view = view
        self.intent = intent

    def run(self) -> str | ToolCall:
        handler = getattr(self, f"_{self.intent.kind}")
        if len(self.view.steps) >= _MAX_STEPS:
            return self._partial("I took too many steps")
        try:
            reply: str | ToolCall = handler()
        except _Next as need:
            return need.call
        except _Stop as stop:
            return self._partial(str(stop))
        return reply

    # -- helpers --------------------------------------------------------------------------------------

    def call(self, name: str, **arguments: Any) -> ToolCall:
        args = {k: v for k, v in arguments.items() if v is not None and v != [] and v != ""}
        if self.view.text_only:
            raise _Stop("tools are not available for this step")
        if name not in self.view.tools:
            raise _Stop(f"the {name} tool is not available here")
        if any(s.name == name and s.arguments == args for s in self.view.steps):
            raise _Stop(f"{name} gave nothing I could use")
        text = json.dumps(args, ensure_ascii=False)
        digest = hashlib.sha256(f"{self.view.digest}:{name}:{text}".encode()).hexdigest()[:12]
        return ToolCall(f"call_{digest}", name, text)

    def done(self, name: str, **match: Any) -> Step | None:
        for step in reversed(self.view.steps):
            if step.name == name and all(step.arguments.get(k) == v for k, v in match.items()):
                return self.whole(step)
        return None

    def whole(self, step: Step) -> Step:
        """``step`` with its result read whole: a result too large for this turn is reopened first."""
        if step.blob is None or step.name == "open_blob":
            return step
        data, error = self.read_blob(step.blob)
        return Step(step.name, step.arguments, data, error)

    def read_blob(self, sha: str) -> tuple[dict[str, Any] | None, str | None]:
        """A stored result, read with ``open_blob`` in chunks small enough to be read whole."""
        text, offset = "", 0
        for _ in range(_MAX_CHUNKS):
            step = next(
                (
                    s
                    for s in self.view.steps
                    if s.name == "open_blob"
                    and s.arguments.get("sha256") == sha
                    and s.arguments.get("start") == offset
                ),
                None,
            )
            if step is None:
                raise _Next(self.call("open_blob", sha256=sha, start=offset, end=offset + _CHUNK))
            if step.blob or (step.text.startswith("error") and not text):
                return None, step.error or "the stored result is too large to read here"
            if step.text.startswith("error"):
                break  # read past the end: the previous chunk was the last
            text += step.text
            if len(step.text.encode()) < _CHUNK - 8:  # a short chunk is the last (U+FFFD may add bytes)
                break
            offset += _CHUNK
        return _parse(text)

    def _partial(self, reason: str) -> str:
        shown = next((s for s in reversed(self.view.steps) if s.data is not None), None)
        body = _render(shown, self.view.now) if shown else ""
        return f"I couldn't finish that ({reason}).\n\n" + (f"{body}\n\n" if body else "") + OFFLINE_HINT

    def pick(self, kinds: tuple[str, ...]) -> Item | str | ToolCall:
        """The item the request names: by ordinal, pronoun, earlier mention, location, or a search."""
        intent, view = self.intent, self.view
        if intent.ordinal is not None:
            shown = self.reopen(view.list_blob, view.last_list, single=False)
            if isinstance(shown, ToolCall):
                return shown
            pool: list[Item | tuple[str | None, str]] = [i for i in shown if i.kind in kinds] or list(shown)
            pool = pool or list(_answer_items(view.list_answer or view.last_answer))
            if not pool:
                return "Which list do you mean? Ask me to list your tasks, projects or notes first."
            n = intent.ordinal
            if n == 0 or abs(n) > len(pool) or n < -1:
                return f"The last list had {len(pool)} item(s); which one do you mean?"
            chosen = pool[n - 1 if n > 0 else -1]
            return chosen if isinstance(chosen, Item) else self.named(chosen, kinds)
        if intent.pronoun or not intent.subject:
            last = self.reopen(view.single_blob, [view.last_single] if view.last_single else [], single=True)
            if isinstance(last, ToolCall):
                return last
            single = last[0] if last and last[0].kind in kinds else None
            located = next((view.current[k] for k in kinds if k in view.current), None)
            found = single or located
            if found is not None:
                return found
            said = _answer_single(view.last_answer) if intent.pronoun else None
            if said is not None and said[0] in (None, *kinds):
                return self.named(said, kinds)
            what = " or ".join(kinds)
            return f"Which {what} do you mean? Name it (e.g. “the API docs {kinds[0]}”)."
        words = keywords(intent.subject)
        candidates = [i for i in view.earlier + list(view.current.values()) if i.kind in kinds]
        best = max(reversed(candidates), key=lambda i: _score(words, i.title), default=None)
        if best is not None and _score(words, best.title)[0] >= 0.5:
            return best
        return self.search(kinds, words)

    def named(self, said: tuple[str | None, str], kinds: tuple[str, ...]) -> Item | str | ToolCall:
        """The item an earlier answer named (by title only: memory dropped its result), found again."""
        kind, title = said
        words = keywords(title)
        known = [i for i in self.view.earlier if i.kind in ((kind,) if kind else kinds)]
        exact = next((i for i in reversed(known) if i.title == title), None)
        return exact or self.search((kind,) if kind else kinds, words, title)

    def reopen(self, blob: str | None, items: list[Item], *, single: bool) -> list[Item] | ToolCall:
        """``items``, or — when memory compressed the result they came from — the result reopened."""
        if items or blob is None or "open_blob" not in self.view.tools or self.view.text_only:
            return items
        data, _ = self.read_blob(blob)
        listed, one = _items(data or {})
        if single:
            return [one] if one else listed[:1] if len(listed) == 1 else []
        return _in_order(listed, self.view.list_answer)

    def search(self, kinds: tuple[str, ...], words: list[str], label: str = "") -> Item | str | ToolCall:
        queries = [" ".join(words[:5])] if words else []
        if len(words) > 1:
            queries.append(max(words, key=len))
        for kind in kinds:
            tool = _SEARCH_TOOL[kind]
            for query in queries if kind == kinds[0] else queries[:1]:
                step = self.done(tool, query=query)
                if step is None:
                    return self.call(tool, query=query, limit=10)
                if step.error:
                    return _error(step, f"search for “{query}”")
                listed = [i for i in _items(step.data or {})[0] if i.kind == kind]
                if listed:
                    return max(reversed(listed), key=lambda i: _score(words, i.title))
        what = " or ".join(kinds)
        return (
            f"I couldn't find a {what} matching “{label or self.intent.subject}”. Try other words, or ask "
            f"me to list your {kinds[0]}s."
        )

    def project(self) -> Item | str | ToolCall | None:
        """The project ``intent.project`` names (else the chat's, else ``None``), an answer, or a call."""
        if not self.intent.project:
            current = self.view.current.get("project")
            return current
        saved = self.intent
        self.intent = Intent("details", subject=saved.project, target="project")
        try:
            found = self.pick(("project",))
        finally:
            self.intent = saved
        return found

    # -- intents -------------------------------------------------------------------------------------

    def _greeting(self) -> str:
        intro = "Hi! I'm the offline assistant (rule-based, no AI model). I can:"
        return f"{intro}\n{_CAPABILITIES}\n\n{OFFLINE_HINT}"

    def _help(self) -> str:
        return f"I'm the offline assistant (rule-based, no AI model). Try:\n{_CAPABILITIES}\n\n{OFFLINE_HINT}"

    def _thanks(self) -> str:
        return "You're welcome. Anything else?"

    def _unknown(self) -> str:
        return (
            "I can't help with that: I'm the offline assistant, a few local rules rather than an AI model, "
            "so I only understand common requests like these:\n"
            f"{_CAPABILITIES}\n\nFor anything else, configure a real model: set `TIERWISE_BASE_URL` and "
            "`TIERWISE_MODEL` (plus `TIERWISE_API_KEY` if it needs one)."
        )

    def _list_tasks(self) -> str | ToolCall:
        intent = self.intent
        project = self.project()
        if isinstance(project, str | ToolCall):
            return project
        dated = intent.overdue or intent.window is not None
        args: dict[str, Any] = {
            "project_id": project.id if project else None,
            "status": list(intent.status or OPEN_STATUSES),
            "priority": list(intent.priority),
            "query": " ".join(keywords(intent.subject)[:5]),
            "has_date": True if dated else None,
            "sort_by": "start_date" if dated else None,
            "limit": 20,
        }
        step = self.done("list_tasks", **{k: v for k, v in args.items() if v not in (None, [], "")})
        if step is None:
            return self.call("list_tasks", **args)
        if step.error:
            return _error(step, "list your tasks")
        tasks = [t for t in (step.data or {}).get("tasks") or [] if isinstance(t, dict)]
        if intent.overdue:
            tasks = [t for t in tasks if t.get("is_overdue")]
        if intent.window is not None:  # due in the window, or overdue already
            low, high = (d.strftime("%Y-%m-%d") for d in intent.window)
            tasks = [
                t for t in tasks if t.get("is_overdue") or low <= str(t.get("start_date", ""))[:10] < high
            ]
        is_open = not intent.status or set(intent.status) == set(OPEN_STATUSES)
        words = ["overdue"] if intent.overdue else ["open"] if is_open else []
        words += [f"{p}-priority" for p in intent.priority]
        words += [] if is_open else [s.replace("_", " ") for s in intent.status]
        label = " ".join([*words, "tasks"])
        label = label[:1].upper() + label[1:]
        where = f" in {project.title}" if project else ""
        when = f" ({intent.window_label}, and overdue)" if intent.window_label and not intent.overdue else ""
        about = f" about “{intent.subject}”" if intent.subject else ""
        if not tasks:
            return f"No {label.lower()}{where}{about}{when}. Ask for all your tasks, or another filter."
        total = (step.data or {}).get("total")
        more = bool((step.data or {}).get("has_more")) and dated
        count = total if isinstance(total, int) and not dated else len(tasks)
        lines = [f"**{label}{where}{about}{when}** ({count}{'+' if more else ''}):"]
        lines += [_task_line(t, project=not where) for t in tasks[:_SHOWN]]
        if count > _SHOWN or more:
            lines.append(f"- … and {max(0, count - _SHOWN)}{'+' if more else ''} more")
        return "\n".join(lines) + "\n\nAsk about any of them for details."

    def _details(self) -> str | ToolCall:
        kinds = (self.intent.target,) if self.intent.target else ("task", "project", "note")
        item = self.pick(kinds)
        if not isinstance(item, Item):
            return item
        tool = _DETAIL_TOOL[item.kind]
        step = self.done(tool, **{_ID_ARG[item.kind]: item.id})
        if step is None:
            extra = {"include_tasks": True} if item.kind == "project" else {}
            return self.call(tool, **{_ID_ARG[item.kind]: item.id}, **extra)
        return _error(step, f"open {item.title}") if step.error else _render(step, self.view.now)

    def _list_projects(self) -> str | ToolCall:
        args = {"status": self.intent.project_status, "query": " ".join(keywords(self.intent.subject)[:5])}
        step = self.done("search_projects", **{k: v for k, v in args.items() if v})
        if step is None:
            return self.call("search_projects", **args, limit=10)
        return _error(step, "search your projects") if step.error else _render(step, self.view.now)

    def _search_notes(self) -> str | ToolCall:
        project = self.project() if self.intent.project else None
        if isinstance(project, str | ToolCall):
            return project
        args = {
            "query": " ".join(keywords(self.intent.subject)[:5]),
            "project_id": project.id if project else None,
        }
        step = self.done("search_notes", **{k: v for k, v in args.items() if v})
        if step is None:
            return self.call("search_notes", **args, limit=10)
        return _error(step, "search your notes") if step.error else _render(step, self.view.now)

    def _window(self, days: int = 7) -> tuple[str, str]:
        start, end = self.intent.window or (self.view.now, self.view.now + timedelta(days=days))
        return start.strftime("%Y-%m-%dT%H:%M"), end.strftime("%Y-%m-%dT%H:%M")

    def _calendar(self) -> str | ToolCall:
        low, high = self._window()
        step = self.done("get_calendar_events")
        if step is None:
            return self.call("get_calendar_events", timeMin=low, timeMax=high, limit=30)
        if step.error:
            return _error(step, "read your calendar")
        return _render(step, self.view.now, self.intent.window_label or "the next 7 days")

    def _free_slots(self) -> str | ToolCall:
        low, high = self._window()
        step = self.done("find_available_slots")
        if step is None:
            return self.call(
                "find_available_slots",
                timeMin=low,
                timeMax=high,
                duration_minutes=self.intent.duration_minutes or 60,
                preferred_hours=list(self.intent.preferred_hours),
            )
        if step.error:
            return _error(step, "find free time")
        return _render(step, self.view.now, self.intent.window_label or "in the next 7 days")

    def _create_task(self) -> str | ToolCall:
        intent = self.intent
        if not intent.title:
            return "What should the task be called? For example: “add a task: call the bank on Friday”."
        project = self.project()
        if isinstance(project, str | ToolCall):
            return project
        step = self.done("create_task")
        if step is None:
            return self.call(
                "create_task",
                title=intent.title,
                project_id=project.id if project else None,
                priority=intent.priority[0] if intent.priority else None,
                start_date=intent.start_date,
                recurrence_pattern=intent.recurrence,
                duration_minutes=intent.duration_minutes,
            )
        return _error(step, f"create “{intent.title}”") if step.error else _render(step, self.view.now)

    def _update_task(self) -> str | ToolCall:
        if not self.intent.updates:
            return "What should change? For example: “mark it done” or “set it to high priority”."
        item = self.pick(("task",))
        if not isinstance(item, Item):
            return item
        step = self.done("update_task", task_id=item.id)
        if step is None:
            return self.call("update_task", task_id=item.id, updates=self.intent.changes())
        return _error(step, f"update {item.title}") if step.error else _render(step, self.view.now)

    def _schedule_task(self) -> str | ToolCall:
        intent = self.intent
        item = self.pick(("task",))
        if not isinstance(item, Item):
            return item
        done = self.done("schedule_task", task_id=item.id)
        if done is not None:
            return _error(done, f"schedule {item.title}") if done.error else _render(done, self.view.now)
        start = intent.start_time
        if start is None:
            minutes = intent.duration_minutes or item.record.get("duration_minutes") or 60
            step = self.done("find_available_slots")
            if step is None:
                low, high = self._window()
                return self.call(
                    "find_available_slots",
                    timeMin=low,
                    timeMax=high,
                    duration_minutes=minutes if isinstance(minutes, int) else 60,
                    preferred_hours=list(intent.preferred_hours),
                )
            if step.error:
                return _error(step, "find a free slot")
            slots = [
                s for s in (step.data or {}).get("slots") or [] if isinstance(s, dict) and s.get("start")
            ]
            if not slots:
                message = (step.data or {}).get("message") or "no free slot in that window"
                return f"I couldn't find a free slot for **{item.title}**: {message}"
            start = str(slots[0]["start"]).replace(" ", "T")
        return self.call(
            "schedule_task",
            task_id=item.id,
            start_time=start,
            duration_minutes=intent.duration_minutes,
            recurrence_pattern=intent.recurrence,
        )


# -- answers -----------------------------------------------------------------------------------------


def _error(step: Step, doing: str) -> str:
    message = (step.error or "failed").strip()
    message = re.sub(r"^error:\s*", "", message, flags=re.I)
    if "tell the user:" in message:
        message = message.split("tell the user:", 1)[1].strip()
    if len(message) > 240:
        message = message[:239].rstrip() + "…"
    return f"I couldn't {doing}: {message}"


def _short(text: Any, limit: int) -> str:
    flat = re.sub(r"\s+", " ", str(text or "")).strip()
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip(" ,;:.") + "…"


def _when(value: Any) -> str:
    """``2026-11-24 14:00`` → ``Tue 24 Nov 14:00``; a bare day → ``Tue 24 Nov``."""
    text = str(value or "")
    for form, out in (("%Y-%m-%d %H:%M", "%a %d %b %H:%M"), ("%Y-%m-%d", "%a %d %b")):
        try:
            return datetime.strptime(text, form).strftime(out)
        except ValueError:
            continue
    return text


def _task_line(task: Mapping[str, Any], *, project: bool = True) -> str:
    parts = [f"- [{task.get('priority', '?')}] {task.get('title') or 'Untitled'}"]
    if task.get("status"):
        parts.append(str(task["status"]).replace("_", " "))
    if task.get("start_date"):
        parts.append(str(task["start_date"]) + (" (overdue)" if task.get("is_overdue") else ""))
    if project and task.get("project_name"):
        parts.append(str(task["project_name"]))
    return " · ".join(parts)


def _render(step: Step, now: datetime, label: str = "") -> str:
    """The answer for one tool result (never raises on an odd shape)."""
    data = step.data or {}
    renderer = _RENDERERS.get(step.name)
    try:
        text = renderer(data, now, label) if renderer else ""
    except (TypeError, ValueError, AttributeError, KeyError):
        text = ""
    if not text:
        message = data.get("message")
        return _short(message, 300) if isinstance(message, str) and message else "Done."
    return text


def _rows(data: Mapping[str, Any], key: str) -> list[dict[str, Any]]:
    rows = data.get(key)
    return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []


def _r_tasks(data: Mapping[str, Any], now: datetime, label: str) -> str:
    tasks = _rows(data, "tasks")
    if not tasks:
        return "No tasks matched."
    lines = [f"**Tasks** ({data.get('total', len(tasks))}):"] + [_task_line(t) for t in tasks[:_SHOWN]]
    return "\n".join(lines) + "\n\nAsk about any of them for details."


def _r_projects(data: Mapping[str, Any], now: datetime, label: str) -> str:
    projects = _rows(data, "projects")
    if not projects:
        return "No projects matched."
    lines = [f"**Projects** ({data.get('total', len(projects))}):"]
    for p in projects[:_SHOWN]:
        line = f"- **{p.get('name') or 'Untitled'}** · {p.get('status', '?')}"
        if "completion_percentage" in p:
            line += f" · {p['completion_percentage']}% done · {p.get('active_task_count', 0)} open tasks"
        lines.append(line)
    return "\n".join(lines) + "\n\nAsk about any of them, or say which one you want to work on."


def _r_notes(data: Mapping[str, Any], now: datetime, label: str) -> str:
    notes = _rows(data, "notes")
    if not notes:
        return "No notes matched."
    lines = [f"**Notes** ({data.get('total', len(notes))}):"]
    for n in notes[:8]:
        tags = " · ".join(str(n[k]) for k in ("category", "project_name") if n.get(k))
        line = f"- **{n.get('title') or 'Untitled'}**" + (f" · {tags}" if tags else "")
        if n.get("content_preview"):
            line += f" — {_short(n['content_preview'], 90)}"
        lines.append(line)
    return "\n".join(lines) + "\n\nAsk me to open any of them."


def _r_task(data: Mapping[str, Any], now: datetime, label: str) -> str:
    t = data.get("task")
    if not isinstance(t, dict):
        return ""
    project = t.get("project", {}).get("name") if isinstance(t.get("project"), dict) else None
    head = [
        f"**{t.get('title') or 'Untitled'}**",
        str(t.get("status", "?")).replace("_", " "),
        str(t.get("priority", "?")),
    ]
    lines = [" · ".join(head + ([project] if project else []))]
    when = (
        [str(t["start_date"]) + (" (overdue)" if t.get("is_overdue") else "")] if t.get("start_date") else []
    )
    when += [f"{t['duration_minutes']} min"] if t.get("duration_minutes") else []
    when += [f"repeats {t['recurrence_pattern']}"] if t.get("recurrence_pattern") else []
    if when:
        lines.append("- When: " + " · ".join(when))
    if t.get("description"):
        lines.append(f"- {_short(t['description'], 240)}")
    if t.get("details"):
        lines.append(f"- Details: {_short(t['details'], 240)}")
    subtasks = _rows(t, "subtasks")
    if subtasks:
        finished = sum(1 for s in subtasks if s.get("status") == "done")
        names = ", ".join(str(s.get("title")) for s in subtasks[:5]) + (", …" if len(subtasks) > 5 else "")
        lines.append(f"- Subtasks ({finished}/{len(subtasks)} done): {names}")
    deps = _rows(t, "dependencies")
    if deps:
        lines.append("- Depends on: " + ", ".join(f"{d.get('title')} ({d.get('status')})" for d in deps[:4]))
    if isinstance(t.get("parent_task"), dict):
        lines.append(f"- Part of: {t['parent_task'].get('title')}")
    return "\n".join(lines) + "\n\nI can update it, or schedule it (“schedule it tomorrow at 10”)."


def _r_project(data: Mapping[str, Any], now: datetime, label: str) -> str:
    p = data.get("project")
    if not isinstance(p, dict):
        return ""
    lines = [
        f"**{p.get('name') or 'Untitled'}** · {p.get('status', '?')} · {p.get('completion_percentage', 0)}% "
        f"complete · {p.get('active_task_count', 0)} open of {p.get('task_count', 0)} tasks"
    ]
    summary = p.get("executive_summary") or p.get("description")
    if summary:
        lines.append(_short(summary, 240))
    if p.get("start_date") or p.get("end_date"):
        lines.append(f"- Period: {p.get('start_date') or '?'} → {p.get('end_date') or '?'}")
    if p.get("context"):
        lines.append(f"- Context: {_short(p['context'], 200)}")
    phases = _rows(p, "phases")
    today = now.date().isoformat()
    if phases:
        names = [
            f"**{x.get('name')}** (now)"
            if str(x.get("start_date") or "9") <= today <= str(x.get("end_date") or "0")
            else str(x.get("name"))
            for x in phases[:6]
        ]
        lines.append("- Phases: " + ", ".join(names))
    open_tasks = [t for t in _rows(p, "tasks") if t.get("status") != "done"]
    if open_tasks:
        lines.append("- Top open tasks:")
        lines += ["  " + _task_line(t, project=False) for t in open_tasks[:5]]
    return "\n".join(lines) + "\n\nAsk about any task, or for this project's high-priority tasks."


def _r_note(data: Mapping[str, Any], now: datetime, label: str) -> str:
    n = data.get("note")
    if not isinstance(n, dict):
        return ""
    tags = " · ".join(str(n[k]) for k in ("category", "project_name") if n.get(k))
    lines = [f"**{n.get('title') or 'Untitled'}**" + (f" · {tags}" if tags else "")]
    body = [line.strip() for line in str(n.get("content") or "").splitlines() if line.strip()]
    lines += [_short(line, 160) for line in body[:8]]
    if len(body) > 8:
        lines.append(f"… ({len(body) - 8} more lines)")
    return "\n".join(lines)


def _r_events(data: Mapping[str, Any], now: datetime, label: str) -> str:
    events = _rows(data, "events")
    if not events:
        return f"Nothing on your calendar {label or 'in that window'}."
    lines = [f"**Calendar, {label}** ({data.get('total', len(events))} events):"]
    for e in events[:12]:
        start, end = str(e.get("start", "")), str(e.get("end", ""))
        if e.get("is_all_day"):
            when = f"{_when(start)} (all day)"
        else:
            when = (
                f"{_when(start)}–{end[11:16]}" if end[:10] == start[:10] else f"{_when(start)}–{_when(end)}"
            )
        extra = f" · {e['location']}" if e.get("location") else ""
        lines.append(f"- {when} {e.get('summary') or 'No title'}{extra}")
    if len(events) > 12:
        lines.append(f"- … and {len(events) - 12} more")
    return "\n".join(lines)


def _r_slots(data: Mapping[str, Any], now: datetime, label: str) -> str:
    slots = _rows(data, "slots")
    if not slots:
        return _short(data.get("message") or "No free slot in that window.", 300)
    lines = [f"**Free slots {label}**:"]
    lines += [
        f"- {_when(s.get('start'))}–{str(s.get('end', ''))[11:16]}"
        + (" (preferred)" if s.get("preferred") else "")
        for s in slots[:6]
    ]
    return "\n".join(lines) + "\n\nSay “schedule <task> <day> at <time>” to book one."


def _r_created(data: Mapping[str, Any], now: datetime, label: str) -> str:
    t = data.get("task")
    if not isinstance(t, dict):
        return ""
    parts = [f"Created **{t.get('title')}** · [{t.get('priority', 'medium')}]"]
    if t.get("project_name"):
        parts.append(f"in {t['project_name']}")
    if t.get("start_date"):
        parts.append(f"starts {t['start_date']}")
    if t.get("is_recurring"):
        parts.append("recurring")
    return " · ".join(parts) + ".\n\nSay “schedule it tomorrow at 10” to put it on your calendar."


def _r_updated(data: Mapping[str, Any], now: datetime, label: str) -> str:
    t = data.get("task")
    if not isinstance(t, dict):
        return ""
    changed = [c for c in data.get("changed") or [] if isinstance(c, str)]
    if not changed:
        return f"**{t.get('title')}** already had those values; nothing changed."
    shown = {"start_date": t.get("start_date", "none")}
    changes = ", ".join(
        f"{c.replace('_', ' ')} → {str(shown.get(c, t.get(c))).replace('_', ' ')}" for c in changed
    )
    return f"Updated **{t.get('title')}**: {changes}."


def _r_scheduled(data: Mapping[str, Any], now: datetime, label: str) -> str:
    event = data.get("event")
    if not isinstance(event, dict):
        return ""
    start, end = str(event.get("start", "")), str(event.get("end", ""))
    line = f"Scheduled **{event.get('summary')}** on {_when(start)}–{end[11:16]}"
    message = str(data.get("message") or "")
    match = re.search(r"repeating (\w+)", message)
    line += f", repeating {match[1]}." if match else "."
    conflicts = _rows(data, "conflicts")
    if conflicts:
        line += "\n- Heads-up, it overlaps: " + ", ".join(
            f"{c.get('summary')} ({_when(c.get('start'))})" for c in conflicts[:3]
        )
    return line


_RENDERERS: dict[str, Callable[[Mapping[str, Any], datetime, str], str]] = {
    "list_tasks": _r_tasks,
    "search_projects": _r_projects,
    "search_notes": _r_notes,
    "get_task_details": _r_task,
    "get_project_details": _r_project,
    "get_note_details": _r_note,
    "get_calendar_events": _r_events,
    "find_available_slots": _r_slots,
    "create_task": _r_created,
    "update_task": _r_updated,
    "schedule_task": _r_scheduled,
}
