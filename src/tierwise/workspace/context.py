"""The assistant's abbreviated context: system prompt, profile, location and related layers.

A chat has a *location* (seed 001's ``context_type`` and ``entity_id``): ``global``, ``project``,
``task`` or ``calendar``. :class:`WorkspaceContext` is the chat engine's context source: for each turn
it renders, in seed 001's abbreviated markdown,

- ``profile``: who the user is and how they work (truncatable);
- ``location``: today's date and time, then the project (status, completion, period, counts,
  executive summary, a 500-character context preview, top active tasks), the task (previews, subtask
  count), the calendar (the next days' events, today's free time) or the global view (active
  projects, overdue and due-soon tasks, today's events), and seed 000 §5.2's instructions for that
  location;
- ``related``: for a project its recent notes and brain dumps, for a task its parent, dependencies
  and subtasks — titles and ids only.

Everything else stays one tool call away, which is what keeps the initial context under 1,500 tokens.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import date, datetime, timedelta
from typing import Any

import sqlalchemy as sa

from tierwise.packing.layers import ContextLayer
from tierwise.store import Chat, Store
from tierwise.store.models import utcnow
from tierwise.workspace.adaptive import AdaptiveBudgets
from tierwise.workspace.calendar import Calendar, LocalCalendar
from tierwise.workspace.context_cache import ContextCache
from tierwise.workspace.models import BrainDump, Note
from tierwise.workspace.repository import Profile, Workspace, WorkspaceNotFound
from tierwise.workspace.views import PREVIEW_LIMITS, preview

__all__ = ["CONTEXT_TYPES", "SYSTEM_PROMPT", "WorkspaceContext", "context_instructions"]

CONTEXT_TYPES = ("global", "project", "task", "calendar", "calendar_date")

SYSTEM_PROMPT = """\
You are tierwise's assistant for a person who juggles many projects. Be calm and concise: short \
bullets, one question at a time.

## Progressive information access
1. List/search tools return previews: use them first, even when the user names an item.
2. Detail tools (get_*_details) return everything: only for one item the user asks about, whose \
full text you need, or that you will change; never for every item of a list.
3. Say what an action changed; times are local.
Ids come from the context or tool results (task_…, proj_…, note_…); never invent one."""

_INSTRUCTIONS = {
    "project": (
        "## Current context: project\n"
        '"Tasks" without a project means this project\'s: pass its project_id to list_tasks.'
    ),
    "task": (
        "## Current context: task\n"
        "The user likely means this task: its subtasks, dependencies, schedule or changes."
    ),
    "calendar": (
        "## Current context: calendar\nThe user is planning time: confirm a slot before schedule_task."
    ),
    "global": (
        "## Current context: overview\n"
        "No project is selected: search_projects or list_tasks finds what the user means."
    ),
}

_RECENT = 5
_TOP_TASKS = 5


def context_instructions(context_type: str) -> str:
    """Seed 000 §5.2's prompt addition for a location (``global`` for unknown types)."""
    kind = "calendar" if context_type == "calendar_date" else context_type  # one day of it
    return _INSTRUCTIONS.get(kind, _INSTRUCTIONS["global"])


def _when(moment: datetime, zone: Any) -> str:
    return moment.astimezone(zone).strftime("%a %d %b %H:%M")


def _day(moment: datetime, zone: Any) -> str:
    return "all day " + moment.astimezone(zone).strftime("%a %d %b")


_PROFILE = ("profile",)  # the profile's entry in the cache (location keys are (kind, entity, …))


class WorkspaceContext:
    """The chat engine's context source for the workspace (see the module docstring).

    Args:
        store: the store holding the workspace.
        calendar: the calendar (default: the local calendar in the store).
        clock: the current time, aware (default: the system clock); benchmarks and tests fix it.
        cache: where built locations are kept between turns until a write (seed 000 §10.2;
            :mod:`tierwise.workspace.context_cache`); ``None`` builds every turn.
        adaptive: how many related items each location shows, following use (seed 000 §10.3;
            :mod:`tierwise.workspace.adaptive`); ``None`` shows five notes everywhere.

    Example:
        >>> store = Store.open("sqlite://")
        >>> maya = store.create_user("maya").id
        >>> layers = WorkspaceContext(store)(maya, store.create_chat(maya))
        >>> [layer.kind for layer in layers]
        ['location']
    """

    def __init__(
        self,
        store: Store,
        *,
        calendar: Calendar | None = None,
        clock: Callable[[], datetime] = utcnow,
        cache: ContextCache | None = None,
        adaptive: AdaptiveBudgets | None = None,
    ) -> None:
        self.store = store
        self.workspace = Workspace(store)
        self.calendar = calendar or LocalCalendar(store)
        self.clock = clock
        self.cache = cache
        self.adaptive = adaptive

    def __call__(self, user_id: str, chat: Chat) -> Sequence[ContextLayer]:
        """The layers for one turn of ``chat``."""
        return self.layers(user_id, chat.context_type, chat.entity_id)

    def layers(
        self, user_id: str, context_type: str = "global", entity_id: str | None = None
    ) -> list[ContextLayer]:
        """Profile, location and related layers for a location (unknown entities fall back to global)."""
        now = self.clock()
        if self.cache is None:
            profile = self.workspace.profile(user_id)
        else:  # read on every turn, changed by set_profile (which moves the version on)
            profile = self.cache.get(
                self.store, user_id, _PROFILE, lambda: self.workspace.profile(user_id), counted=False
            )
        kind = context_type if context_type in CONTEXT_TYPES else "global"
        where = (kind, entity_id)
        adapts = self.adaptive is not None and kind == "project"
        allowance = self.adaptive.allowance(user_id, where) if self.adaptive and adapts else _RECENT
        if self.cache is None:
            kind, location, related, shown = self._build(user_id, kind, entity_id, profile, now, allowance)
        else:
            kind, location, related, shown = self.cache.get(
                self.store,
                user_id,
                (kind, entity_id, profile.timezone, allowance),
                lambda: self._build(user_id, kind, entity_id, profile, now, allowance),
            )
        if self.adaptive is not None and adapts:
            self.adaptive.shown(user_id, where, shown)
        local = now.astimezone(profile.zone)
        header = f"Now: {local.strftime('%A %Y-%m-%d %H:%M')} ({profile.timezone})"
        layers = []
        about = _profile_text(profile)
        if about:
            layers.append(ContextLayer("profile", "profile", about))
        text = f"{header}\n\n{location.strip()}\n\n{context_instructions(kind)}"
        layers.append(ContextLayer("location", "location", text))
        if related:
            layers.append(ContextLayer("related", "related", related))
        return layers

    def _build(
        self,
        user_id: str,
        kind: str,
        entity_id: str | None,
        profile: Profile,
        now: datetime,
        allowance: int = _RECENT,
    ) -> tuple[str, str, str, list[str]]:
        """(kind shown, location, related, related ids shown) for a location: what :attr:`cache` keeps."""
        context_type, shown = kind, list[str]()
        try:
            if kind == "project" and entity_id:
                location = self.project(user_id, entity_id, now)
                related, shown = self._project_related(user_id, entity_id, allowance)
            elif kind == "task" and entity_id:
                location, related = (
                    self.task(user_id, entity_id, now),
                    self._task_related(user_id, entity_id, now),
                )
            elif kind == "calendar":
                location, related = self.calendar_view(user_id, profile, now), ""
            elif kind == "calendar_date" and entity_id:  # one day (YYYY-MM-DD, checked on creation)
                location, related = self.calendar_view(user_id, profile, now, day=entity_id), ""
            else:
                kind, location, related = "global", self.overview(user_id, profile, now), ""
        except WorkspaceNotFound:  # the chat's project or task was deleted: say so, show the overview
            kind, related = "global", ""
            location = f"(The chat's {context_type} {entity_id} no longer exists.)\n\n" + self.overview(
                user_id, profile, now
            )
        return kind, location, related, shown

    # -- locations ----------------------------------------------------------------------------------

    def project(self, user_id: str, project_id: str, now: datetime) -> str:
        """Seed 001's abbreviated project context."""
        details = self.workspace.project_details(user_id, project_id, include_phases=False)
        tasks, _ = self.workspace.list_tasks(
            user_id,
            project_id=project_id,
            status=("in_progress", "blocked", "backlog"),
            limit=_TOP_TASKS,
            now=now,
        )
        context = details.get("context") or ""
        # seed 000 §3.2: the executive summary; the description only stands in when there is none
        summary = details.get("executive_summary") or details.get("description") or "No summary yet"
        limit = PREVIEW_LIMITS["project_context"]
        cut = preview(context, limit) or "No context captured"
        more = "\n... [use get_project_details for full context]" if len(context.strip()) > limit else ""
        top = "\n".join(
            f"- [{t['priority']}] {t['title']}"
            + (f" ({t['start_date']})" if "start_date" in t else "")
            + f" · {t['id']}"
            for t in tasks
        )
        return (
            f"## Current Project: {details['name']} ({details['id']})\n"
            f"- Status: {details['status']} | {details['completion_percentage']}% complete\n"
            f"- Period: {details.get('start_date') or 'Not set'} to {details.get('end_date') or 'Not set'}\n"
            f"- Tasks: {details['in_progress_task_count']} in progress, {details['active_task_count']} open, "
            f"{details['completed_task_count']} done, {details['task_count']} total\n\n"
            f"### Executive Summary\n{summary}\n\n"
            f"### Context Preview ({limit} chars)\n{cut}{more}\n\n"
            f"### Top Active Tasks\n{top or '- none'}"
        )

    def task(self, user_id: str, task_id: str, now: datetime) -> str:
        """Seed 001's abbreviated task context."""
        task = self.workspace.task_details(user_id, task_id, include_subtasks=False, now=now)
        limit = PREVIEW_LIMITS["task_description"]
        project = task.get("project", {}).get("name", "No project")
        repeat = f"\n- Recurring: {task['recurrence_pattern']}" if task.get("recurrence_pattern") else ""
        subtasks = task["subtask_count"]
        description = preview(task.get("description"), limit) or "No description"
        details = preview(task.get("details"), limit) or "No details"
        return (
            f"## Current Task: {task['title']} ({task['id']})\n"
            f"- Status: {task['status']} | Priority: {task['priority']}\n"
            f"- Project: {project}\n"
            f"- Schedule: {task.get('start_date') or 'Not scheduled'} "
            f"({task.get('duration_minutes') or 60} min){repeat}\n\n"
            f"### Description Preview ({limit} chars)\n{description}\n\n"
            f"### Details Preview ({limit} chars)\n{details}\n\n"
            f"{f'Has {subtasks} subtasks' if subtasks else 'No subtasks'}\n\n"
            f"Use get_task_details('{task['id']}') for complete information."
        )

    def calendar_view(self, user_id: str, profile: Profile, now: datetime, day: str | None = None) -> str:
        """The next three days' events, abbreviated (with ``day``, YYYY-MM-DD: that day's)."""
        if day is not None:
            start = datetime.combine(date.fromisoformat(day), datetime.min.time(), profile.zone)
            events = self.calendar.events(user_id, start, start + timedelta(days=1))
        else:
            events = self.calendar.events(user_id, now, now + timedelta(days=3))
        lines = [
            f"- {_day(e.start, profile.zone) if e.all_day else _when(e.start, profile.zone)} {e.summary}"
            + (f" · task {e.linked_task_id}" if e.linked_task_id else "")
            for e in events[:12]
        ]
        more = f"\n- … {len(events) - 12} more (get_calendar_events)" if len(events) > 12 else ""
        hours = f"{profile.work_start_hour:02d}:00–{profile.work_end_hour:02d}:00"
        when = f"{date.fromisoformat(day).strftime('%A %d %B %Y')}" if day else "the next 3 days"
        return (
            f"## Calendar: {when} (working hours {hours})\n"
            + ("\n".join(lines) or "- nothing scheduled")
            + more
        )

    def overdue(
        self, user_id: str, now: datetime, limit: int = _TOP_TASKS
    ) -> tuple[list[dict[str, Any]], int]:
        """Overdue open tasks: the first ``limit``, highest priority first (then the oldest), and the count.

        Before, the overview showed the five oldest of the 50 earliest dated tasks: months-old medium
        chores ahead of this week's high-priority ones, and a count that stopped at 50.
        """
        return self.workspace.list_tasks(
            user_id,
            status=("backlog", "in_progress", "blocked"),
            overdue=True,
            sort_by="priority",
            limit=limit,
            now=now,
        )

    def overview(self, user_id: str, profile: Profile, now: datetime) -> str:
        """Active projects, overdue tasks, and today's events — counts and titles only."""
        projects, total = self.workspace.search_projects(user_id, status="active", limit=8)
        overdue, late = self.overdue(user_id, now)
        local = now.astimezone(profile.zone)
        day_end = local.replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=1)
        today = [e for e in self.calendar.events(user_id, now, day_end) if not e.all_day]
        lines = [f"## Overview: {total} active projects"]
        lines += [
            f"- {p['name']} · {p['completion_percentage']}% · {p['active_task_count']} open tasks · {p['id']}"
            for p in projects
        ]
        if total > len(projects):
            lines.append(f"- … {total - len(projects)} more (search_projects)")
        shown = f" (first {len(overdue)}, by priority)" if late > len(overdue) else ""
        lines.append(f"\n### Overdue: {late} task(s){shown}")
        lines += [f"- [{t['priority']}] {t['title']} (since {t['start_date']}) · {t['id']}" for t in overdue]
        lines.append(f"\n### Rest of today: {len(today)} event(s)")
        lines += [f"- {_when(e.start, profile.zone)} {e.summary}" for e in today[:6]]
        return "\n".join(lines)

    # -- related --------------------------------------------------------------------------------------

    def _project_related(self, user_id: str, project_id: str, limit: int = _RECENT) -> tuple[str, list[str]]:
        """The related layer of a project (``limit`` recent notes, some brain dumps) and its note ids."""
        with self.store.session() as session:
            notes = session.execute(
                sa.select(Note.id, Note.title)
                .where(Note.user_id == user_id, Note.project_id == project_id)
                .order_by(Note.created_at.desc(), Note.id)
                .limit(limit)
            ).all()
            dumps = session.execute(
                sa.select(BrainDump.id, BrainDump.title)
                .where(BrainDump.user_id == user_id, BrainDump.project_id == project_id)
                .order_by(BrainDump.created_at.desc(), BrainDump.id)
                .limit(min(3, limit))
            ).all()
        lines = []
        if notes:
            lines.append(
                "Recent notes (get_note_details): " + "; ".join(f"{t or 'Untitled'} · {i}" for i, t in notes)
            )
        if dumps:
            # titles only: no tool opens one dump by id (get_project_details includes them)
            lines.append("Recent brain dumps: " + "; ".join(t or "Untitled" for _, t in dumps))
        return "\n".join(lines), [i for i, _ in notes]

    def _task_related(self, user_id: str, task_id: str, now: datetime) -> str:
        task = self.workspace.task_details(user_id, task_id, include_subtasks=True, now=now)
        lines = []
        if "parent_task" in task:
            p = task["parent_task"]
            lines.append(f"Parent task: {p['title']} ({p['status']}) · {p['id']}")
        if task["dependencies"]:
            lines.append(
                "Depends on: "
                + "; ".join(f"{d['title']} ({d['status']}) · {d['id']}" for d in task["dependencies"])
            )
        if task.get("subtasks"):
            lines.append(
                "Subtasks: "
                + "; ".join(f"{s['title']} ({s['status']}) · {s['id']}" for s in task["subtasks"])
            )
        return "\n".join(lines)


def _profile_text(profile: Profile) -> str:
    parts = []
    if profile.who_i_am.strip():
        parts.append(f"Who I am: {profile.who_i_am.strip()}")
    if profile.how_i_work.strip():
        parts.append(f"How I work: {profile.how_i_work.strip()}")
    if not parts:
        return ""
    days = "".join("MTWTFSS"[d - 1] for d in profile.work_days if 1 <= d <= 7)
    parts.append(f"Working hours: {profile.work_start_hour:02d}:00–{profile.work_end_hour:02d}:00 ({days})")
    return "\n".join(parts)
