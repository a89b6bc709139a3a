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

from collections.abc import AsyncIterator, Callable
from datetime import datetime
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
from tierwise.workspace.assistant.calendar_plans import CalendarPlans
from tierwise.workspace.assistant.intents import OPEN_STATUSES, keywords, recognise
from tierwise.workspace.assistant.planning import (
    DETAIL_TOOL,
    ID_ARG,
    OFFLINE_HINT,
    Next,
    NoTools,
    Stop,
)
from tierwise.workspace.assistant.reading import Item, RequestView, is_preview
from tierwise.workspace.assistant.today import TodayPlans

__all__ = ["OFFLINE_HINT", "OfflineAssistant"]

_CAPABILITIES = (
    "- list tasks: “my high priority tasks for the Q4 launch”, “what's overdue”\n"
    "- details: “tell me more about the API docs task”, “the second one”\n"
    "- projects and notes: “show my active projects”, “find notes about pricing”\n"
    "- calendar: “what's on my calendar today”, “find a free hour tomorrow morning”\n"
    "- changes: “add a task: call the bank Friday”, “mark the webhook task done”, "
    "“schedule the API docs task tomorrow at 10”, “book it in the second slot”"
)
_MAX_STEPS = 7


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


class _Planner(CalendarPlans, TodayPlans):
    """One request's plan: which call comes next given this turn's results, or the answer."""

    def run(self) -> str | ToolCall:
        handler = getattr(self, f"_{self.intent.kind}")
        if sum(s.name != MORE_TOOLS for s in self.view.steps) >= _MAX_STEPS:  # asking for tools is free
            return self.partial("I took too many steps")
        try:
            reply: str | ToolCall = handler()
        except Next as need:
            return need.call
        except Stop as stop:
            return self.partial(str(stop))
        except NoTools as missing:
            return f"{_NO_TOOLS.format(name=missing)}\n\n{OFFLINE_HINT}"
        return reply

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
        tool = DETAIL_TOOL[item.kind]
        extra = {"include_tasks": True} if item.kind == "project" else {}  # seed 000 §4.3, example 2
        step = self.done(tool, **{ID_ARG[item.kind]: item.id}, **extra)
        if step is None:
            return self.call(tool, **{ID_ARG[item.kind]: item.id}, **extra)
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
