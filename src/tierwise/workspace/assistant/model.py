"""The offline assistant: a deterministic, rule-based stand-in for a model, so the app runs with no key.

:class:`OfflineAssistant` is a :class:`~tierwise.providers.Provider` that is *not* a language model.
It reads the conversation the chat engine sends — the system text (for "Now: …" and the chat's
current project or task), the user's last message, earlier tool results, and the tool results of
this turn so far — recognises the request with :func:`tierwise.workspace.assistant.intents.recognise`, and
makes a small plan of workspace tool calls, one step per model call, in the list → detail order of
seed 000 (search first, then the detail or action on the best match). It then answers in short
markdown bullets from the results. Anything it does not recognise gets an honest reply saying that
this is the offline assistant and how to configure a real model.

It never raises on odd input: unreadable or compressed tool results count as unavailable, tool
errors are relayed, and anything unexpected ends in an honest answer.

What it reads from a request lives in :mod:`tierwise.workspace.assistant.reading`, and the wording of
answers from tool results in :mod:`tierwise.workspace.assistant.answers`.

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
from collections.abc import AsyncIterator, Callable
from datetime import datetime, timedelta
from typing import Any

from tierwise.packing.prefix import CacheRule
from tierwise.providers.base import Event, ModelRequest, Provider, ToolCall
from tierwise.providers.testing import PromptCache, reply_events
from tierwise.tokens import TokenCounter, get_counter
from tierwise.tools.offering import MORE_TOOLS
from tierwise.workspace.assistant.answers import (
    SHOWN,
    more_line,
    render,
    render_error,
    render_preview,
    task_line,
)
from tierwise.workspace.assistant.intents import OPEN_STATUSES, Intent, keywords, recognise
from tierwise.workspace.assistant.reading import (
    Item,
    RequestView,
    Step,
    answer_items,
    answer_single,
    in_order,
    is_preview,
    match_score,
    parse_result,
    result_items,
)

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
_MAX_STEPS = 7
_CHUNK = 6_000  # bytes of a stored result read per open_blob call (well under a turn's whole-result limit)
_MAX_CHUNKS = 5


class _Next(Exception):
    """The plan needs this call before it can go on."""

    def __init__(self, call: ToolCall) -> None:
        super().__init__(call.name)
        self.call = call


class _Stop(Exception):
    """The plan cannot go on (a tool is unavailable, a call would repeat): answer with what there is."""


class _NoTools(Exception):
    """The request offers no tools at all (an OpenAI client on ``/v1`` that sends none)."""


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
        cache: the prompt cache its usage reports ``cached_tokens`` from, as an OpenAI server's would
            (a :class:`~tierwise.providers.testing.PromptCache` or its rule; default: OpenAI's rule,
            ``None`` reports none).
    """

    name = "offline"

    def __init__(
        self,
        *,
        clock: Callable[[], datetime] | None = None,
        counter: TokenCounter | None = None,
        cache: PromptCache | CacheRule | None = "openai",
    ) -> None:
        self.model: str = "tierwise-offline"
        self.clock = clock or (lambda: datetime.now().astimezone())
        self.counter = counter or get_counter()
        self.cache = PromptCache(cache) if isinstance(cache, str) else cache

    async def stream(self, request: ModelRequest) -> AsyncIterator[Event]:
        """Plan the next step for ``request``: one tool call, or the answer."""
        reply = self.reply(request)
        model = request.model or self.model
        async for event in reply_events(reply, request, model, self.counter, self.cache):
            yield event

    def reply(self, request: ModelRequest) -> str | ToolCall:
        """The next tool call or the answer (never raises)."""
        try:
            view = RequestView(request, self.clock)
            return _Planner(view, recognise(view.message, view.now)).run()
        except Exception as exc:  # a rule-based planner must not take the chat down
            return f"Sorry, I couldn't work that out ({type(exc).__name__}).\n\n{OFFLINE_HINT}"


# -- the planner -------------------------------------------------------------------------------------


_NO_TOOLS = (
    "**I couldn't look that up.** I read your workspace through tools ({name} here), and this request "
    "came with none: an OpenAI client on `/v1` offers me only the tools it sends. Ask in the web chat "
    "or with `tierwise chat`, where the workspace tools are offered."
)


class _Planner:
    """One request's plan: which call comes next given this turn's results, or the answer."""

    def __init__(self, view: RequestView, intent: Intent) -> None:
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
        except _NoTools as missing:
            return f"{_NO_TOOLS.format(name=missing)}\n\n{OFFLINE_HINT}"
        return reply

    # -- helpers --------------------------------------------------------------------------------------

    def call(self, name: str, **arguments: Any) -> ToolCall:
        args = {k: v for k, v in arguments.items() if v is not None and v != [] and v != ""}
        if self.view.text_only:
            raise _Stop("tools are not available for this step")
        if name not in self.view.tools:
            if not self.view.tools:
                raise _NoTools(name)
            asked = [s for s in self.view.steps if s.name == MORE_TOOLS and name in str(s.arguments)]
            if MORE_TOOLS not in self.view.tools or asked:
                raise _Stop(f"the {name} tool is not available here")
            name, args = MORE_TOOLS, {"names": [name]}  # withheld: ask for it (offered next step)
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
        return parse_result(text)

    def _partial(self, reason: str) -> str:
        shown = next((s for s in reversed(self.view.steps) if s.data is not None), None)
        body = render(shown, self.view.now) if shown else ""
        return f"I couldn't finish that ({reason}).\n\n" + (f"{body}\n\n" if body else "") + OFFLINE_HINT

    def pick(self, kinds: tuple[str, ...]) -> Item | str | ToolCall:
        """The item the request names: by ordinal, pronoun, earlier mention, location, or a search."""
        intent, view = self.intent, self.view
        if intent.ordinal is not None:
            shown = self.reopen(view.list_blob, view.last_list, single=False)
            if isinstance(shown, ToolCall):
                return shown
            pool: list[Item | tuple[str | None, str]] = [i for i in shown if i.kind in kinds] or list(shown)
            pool = pool or list(answer_items(view.list_answer or view.last_answer))
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
            said = answer_single(view.last_answer) if intent.pronoun else None
            if said is not None and said[0] in (None, *kinds):
                return self.named(said, kinds)
            what = " or ".join(kinds)
            return f"Which {what} do you mean? Name it (e.g. “the API docs {kinds[0]}”)."
        words = keywords(intent.subject)
        shown = view.context_items + view.earlier + list(view.current.values())  # later ones win ties
        candidates = [i for i in shown if i.kind in kinds]
        best = max(reversed(candidates), key=lambda i: match_score(words, i.title), default=None)
        if best is not None and match_score(words, best.title)[0] >= 0.5:
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
        listed, one = result_items(data or {})
        if single:
            return [one] if one else listed[:1] if len(listed) == 1 else []
        return in_order(listed, self.view.list_answer)

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
                    return render_error(step, f"search for “{query}”")
                listed = [i for i in result_items(step.data or {})[0] if i.kind == kind]
                if listed:
                    return max(reversed(listed), key=lambda i: match_score(words, i.title))
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
            "**I can't do that offline.** I'm the offline assistant, a few local rules rather than an AI "
            "model, so I only understand common requests like these:\n"
            f"{_CAPABILITIES}\n\nFor anything else, configure a real model: set `TIERWISE_BASE_URL` and "
            "`TIERWISE_MODEL` (plus `TIERWISE_API_KEY` if it needs one)."
        )

    def _list_tasks(self) -> str | ToolCall:
        intent = self.intent
        project = self.project()
        if isinstance(project, str | ToolCall):
            return project
        dated = intent.window is not None  # filtered here: the page's count is not the total
        args: dict[str, Any] = {
            "project_id": project.id if project else None,
            "status": list(intent.status or OPEN_STATUSES),
            "priority": list(intent.priority),
            "query": " ".join(keywords(intent.subject)[:5]),
            "has_date": True if dated else None,
            "overdue": True if intent.overdue and not dated else None,
            # a window reads in date order; overdue work most important first, as the overview shows it
            "sort_by": "start_date" if dated else "priority" if intent.overdue else None,
            "limit": 20,
        }
        step = self.done("list_tasks", **{k: v for k, v in args.items() if v not in (None, [], "")})
        if step is None:
            return self.call("list_tasks", **args)
        if step.error:
            return render_error(step, "list your tasks")
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
        lines += [task_line(t, project=not where) for t in tasks[:SHOWN]]
        lines += more_line(min(SHOWN, len(tasks)), count, has_more=more, at_least=more)
        return "\n".join(lines) + "\n\nAsk about any of them for details."

    def _details(self) -> str | ToolCall:
        kinds = (self.intent.target,) if self.intent.target else ("task", "project", "note")
        item = self.pick(kinds)
        if not isinstance(item, Item):
            return item
        if self.intent.preview:  # "show me X": the list's preview answers; details are one call away
            shown = self.preview(item)
            if shown is not None:
                return shown
        tool = _DETAIL_TOOL[item.kind]
        extra = {"include_tasks": True} if item.kind == "project" else {}  # seed 000 §4.3, example 2
        step = self.done(tool, **{_ID_ARG[item.kind]: item.id}, **extra)
        if step is None:
            return self.call(tool, **{_ID_ARG[item.kind]: item.id}, **extra)
        if step.error:
            return render_error(step, f"open {item.title}")
        return render(step, self.view.now)

    def preview(self, item: Item) -> str | ToolCall | None:
        """``item`` shown from its preview (a list's abbreviated record), searched for if not at hand.

        ``None``: no preview of it could be found (the caller opens its details instead).
        """
        if not is_preview(item):
            found = self.search((item.kind,), keywords(item.title), item.title)
            if isinstance(found, ToolCall):
                return found
            if not isinstance(found, Item) or found.id != item.id:
                return None
            item = found
        return render_preview(item.kind, item.record, self.view.now) if is_preview(item) else None

    def _list_projects(self) -> str | ToolCall:
        args = {"status": self.intent.project_status, "query": " ".join(keywords(self.intent.subject)[:5])}
        step = self.done("search_projects", **{k: v for k, v in args.items() if v})
        if step is None:
            return self.call("search_projects", **args, limit=10)
        return render_error(step, "search your projects") if step.error else render(step, self.view.now)

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
        return render_error(step, "search your notes") if step.error else render(step, self.view.now)

    def _window(self, days: int = 7) -> tuple[str, str]:
        start, end = self.intent.window or (self.view.now, self.view.now + timedelta(days=days))
        return start.strftime("%Y-%m-%dT%H:%M"), end.strftime("%Y-%m-%dT%H:%M")

    def _calendar(self) -> str | ToolCall:
        low, high = self._window()
        step = self.done("get_calendar_events")
        if step is None:
            return self.call("get_calendar_events", timeMin=low, timeMax=high, limit=30)
        if step.error:
            return render_error(step, "read your calendar")
        return render(step, self.view.now, self.intent.window_label or "the next 7 days")

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
            return render_error(step, "find free time")
        return render(step, self.view.now, self.intent.window_label or "in the next 7 days")

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
        return render_error(step, f"create “{intent.title}”") if step.error else render(step, self.view.now)

    def _update_task(self) -> str | ToolCall:
        if not self.intent.updates:
            return "What should change? For example: “mark it done” or “set it to high priority”."
        item = self.pick(("task",))
        if not isinstance(item, Item):
            return item
        step = self.done("update_task", task_id=item.id)
        if step is None:
            return self.call("update_task", task_id=item.id, updates=self.intent.changes())
        return render_error(step, f"update {item.title}") if step.error else render(step, self.view.now)

    def _schedule_task(self) -> str | ToolCall:
        intent = self.intent
        item = self.pick(("task",))
        if not isinstance(item, Item):
            return item
        done = self.done("schedule_task", task_id=item.id)
        if done is not None:
            return render_error(done, f"schedule {item.title}") if done.error else render(done, self.view.now)
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
                return render_error(step, "find a free slot")
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
