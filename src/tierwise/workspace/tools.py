"""Seed 001's twelve tools, progressive disclosure first: list/search → detail → action → calendar.

========================  ========  ===============================================================
tool                      tier      returns
========================  ========  ===============================================================
``list_tasks``            list      a page of abbreviated tasks (previews, hints), total, next_offset
``search_projects``       list      abbreviated projects (500-char context preview, statistics)
``search_notes``          list      abbreviated notes (200-char previews)
``get_task_details``      detail    the whole task: texts, subtasks, dependencies, project
``get_project_details``   detail    the whole project: context, phases; tasks/notes/dumps on request
``get_note_details``      detail    the whole note
``create_task``           action    the new task, abbreviated
``update_task``           action    the task, abbreviated, and what changed
``update_project_context`` action   replace / append / prepend the project's markdown context
``get_calendar_events``   calendar  abbreviated events in a window (default: the next 7 days)
``find_available_slots``  calendar  free slots in working hours, preferred hours first
``schedule_task``         calendar  an event linked to the task (optionally recurring)
========================  ========  ===============================================================

Names and parameters are seed 001's. Where we differ, on purpose: ``list_tasks`` also takes a
``query`` (the seed's model could only find "the webhook task" by listing everything);
``create_task`` also takes ``recurrence_pattern`` and ``details``; limits are clamped to the schema's
maximum instead of being refused; counts are integers.

Lists serve a model's first, unfiltered call (issue 17). ``list_tasks`` without ``status`` shows open
tasks only (with a ``query``, done ones too, after the open ones), and without ``sort_by`` the work
due first: overdue or starting within 7 days, then by priority. ``search_projects`` puts active
projects first. Every list (and ``get_calendar_events``) is a page cut to the tool's declared
``result_tokens`` (:mod:`tierwise.workspace.pages`), with ``has_more`` and ``next_offset`` for the
``offset`` parameter. A detail tool given an unknown id searches with the id's words and names what
it found (:mod:`tierwise.workspace.similar`) instead of seed 000's fallback of listing every task.

Seed 000 §10: with ``extras["prefetch"]`` (a :class:`~tierwise.workspace.prefetch.Prefetcher`) a list
call has its top row's detail made in the background and the detail tool serves it if asked next;
with ``extras["adaptive"]`` (:class:`~tierwise.workspace.adaptive.AdaptiveBudgets`) ``get_note_details``
reports the note it opened, so a project chat's related layer grows when used.

Schemas are :func:`~tierwise.tools.compact.compact`: optional parameters without ``null`` (the
validation still accepts it, as "not given"), no defaults that say nothing, one-line descriptions —
they are sent on every model call.

Each tool reads its user, store and clock from :class:`~tierwise.tools.ToolContext` (``extras``:
``clock`` — a function returning the current aware datetime — and ``calendar``), so a user can only
ever reach their own rows. An unknown id raises :class:`~tierwise.workspace.repository.WorkspaceNotFound`
("not found; call list_tasks …"), which the executor's failure strategies turn into a result the
model can act on.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from tierwise.store.models import utcnow
from tierwise.tools.compact import compact
from tierwise.tools.definition import Tool, ToolContext, tool
from tierwise.tools.strategies import DEFAULT_STRATEGIES, FailureStrategy
from tierwise.workspace.adaptive import AdaptiveBudgets
from tierwise.workspace.pages import drop, fit_page, lean, shorten
from tierwise.workspace.prefetch import Prefetcher
from tierwise.workspace.queries import OPEN_TASK_STATUSES
from tierwise.workspace.recaps import RECAPS
from tierwise.workspace.repository import Workspace
from tierwise.workspace.similar import or_similar
from tierwise.workspace.views import PREVIEW_LIMITS, preview

__all__ = ["LIST_TOOLS", "WORKSPACE_STRATEGIES", "WORKSPACE_TOOL_NAMES", "workspace_tools"]

Status = Literal["backlog", "in_progress", "done", "blocked"]
Priority = Literal["low", "medium", "high"]
ProjectStatus = Literal["active", "paused", "completed", "archived"]


def _clamp(low: int, high: int) -> Callable[[int], int]:
    def clamp(value: int) -> int:
        return max(low, min(high, value))

    return clamp


def _limit(default: int, maximum: int, what: str) -> Any:
    return Annotated[
        int,
        AfterValidator(_clamp(1, maximum)),
        Field(
            default=default,
            json_schema_extra={"maximum": maximum},
        ),
    ]


class TaskUpdates(BaseModel):
    """Only the fields to change."""

    model_config = ConfigDict(extra="forbid")

    title: str | None = None
    description: str | None = None
    details: str | None = None
    status: Status | None = None
    priority: Priority | None = None
    start_date: Annotated[str | None, Field(json_schema_extra={"format": "date"})] = None
    duration_minutes: Annotated[int | None, Field(ge=1, le=1440)] = None


def session(ctx: ToolContext) -> tuple[Workspace, str, datetime]:
    """The workspace, the user and the current time for a tool call."""
    if ctx.store is None or ctx.user_id is None:
        raise RuntimeError(
            "workspace tools need a store and a user: run them through a ToolExecutor with both"
        )
    workspace = ctx.extras.get("workspace")
    if not isinstance(workspace, Workspace):
        workspace = Workspace(ctx.store)
    clock = ctx.extras.get("clock", utcnow)
    return workspace, ctx.user_id, clock()


# -- list / search ---------------------------------------------------------------------------------


def _prefetch(ctx: ToolContext, kind: str, rows: list[Any], detail: Callable[[str], Any]) -> None:
    """Seed 000 §10.1: make the top row's detail in the background (``extras["prefetch"]``)."""
    prefetcher = ctx.extras.get("prefetch")
    if isinstance(prefetcher, Prefetcher) and rows and ctx.user_id is not None:
        top = str(rows[0]["id"])
        prefetcher.offer(ctx.store, ctx.user_id, kind, top, lambda: detail(top))


def _prefetched(ctx: ToolContext, kind: str, item_id: str) -> Any | None:
    """The detail :func:`_prefetch` made, if it is this one and still fresh; else ``None``."""
    prefetcher = ctx.extras.get("prefetch")
    if not isinstance(prefetcher, Prefetcher) or ctx.user_id is None:
        return None
    return prefetcher.take(ctx.store, ctx.user_id, kind, item_id)


def _offset() -> Any:
    # (no description: a page that has more says "More: offset=N.")
    return Annotated[int, AfterValidator(_clamp(0, 1_000_000)), Field(default=0)]


def _showing(what: str, offset: int, total: int, then: str) -> Callable[[int, bool], str]:
    def message(shown: int, more: bool) -> str:
        if not shown:
            return f"No {what} on this page ({total} in all)." if total else f"No {what} found."
        span = f"{offset + 1}-{offset + shown}" if shown > 1 else str(offset + 1)
        page = f" More: offset={offset + shown}." if more else ""
        return f"Showing {span} of {total} {what}.{page} {then}"

    return message


@tool(tier="list", result_tokens=600)
def list_tasks(
    ctx: ToolContext,
    project_id: str | None = None,
    status: Annotated[list[Status] | None, Field(description="Default: open (with a query: all)")] = None,
    priority: list[Priority] | None = None,
    has_date: Annotated[bool | None, Field(description="Only scheduled tasks")] = None,
    overdue: bool | None = None,
    query: Annotated[str | None, Field(description="Words in title or description")] = None,
    limit: _limit(20, 50, "tasks") = 20,  # type: ignore[valid-type]
    sort_by: Annotated[
        Literal["priority", "start_date", "created_at"] | None,
        Field(description="Default: overdue and due soon, then priority"),
    ] = None,
    offset: _offset() = 0,  # type: ignore[valid-type]
) -> dict[str, Any]:
    """Tasks, abbreviated (100-char previews); get_task_details for one in full."""
    ws, user, now = session(ctx)
    tasks, total = ws.list_tasks(
        user,
        project_id=project_id,
        status=status or (None if query else OPEN_TASK_STATUSES),  # a search finds done ones too, last
        priority=priority,
        has_date=has_date,
        query=query,
        limit=limit,
        sort_by=sort_by or "due",
        now=now,
        offset=offset,
        overdue=overdue,
    )
    what = "tasks" if status else "tasks (open first)" if query else "open tasks"
    what = f"overdue {what.removeprefix('open ')}" if overdue else what
    page = fit_page(
        [lean(t) for t in tasks],
        key="tasks",
        budget=list_tasks.result_tokens,
        total=total,
        offset=offset,
        message=_showing(what, offset, total, "Use get_task_details(task_id) for full information."),
        shrink=(drop("details_preview"), drop("description_preview")),
    )
    _prefetch(ctx, "task", page["tasks"], lambda i: ws.task_details(user, i, now=now))
    return page


@tool(tier="list", result_tokens=600)
def search_projects(
    ctx: ToolContext,
    query: Annotated[str | None, Field(description="Words in name, description, tags")] = None,
    status: ProjectStatus | None = None,
    has_active_tasks: bool | None = None,
    limit: _limit(10, 20, "projects") = 10,  # type: ignore[valid-type]
    offset: _offset() = 0,  # type: ignore[valid-type]
) -> dict[str, Any]:
    """Projects, abbreviated (500-char context previews); get_project_details for one in full."""
    ws, user, now = session(ctx)
    projects, total = ws.search_projects(
        user, query=query, status=status, has_active_tasks=has_active_tasks, limit=limit, offset=offset
    )
    page = fit_page(
        [lean(drop("slug", "in_progress_task_count")(p)) for p in projects],
        key="projects",
        budget=search_projects.result_tokens,
        total=total,
        offset=offset,
        message=_showing("projects", offset, total, "Use get_project_details(project_id) for full context."),
        shrink=(drop("context_preview"), drop("executive_summary")),
    )
    _prefetch(ctx, "project", page["projects"], lambda i: ws.project_details(user, i, now=now))
    return page


@tool(tier="list", result_tokens=600)
def search_notes(
    ctx: ToolContext,
    query: Annotated[str | None, Field(description="Words in title or content")] = None,
    project_id: str | None = None,
    category: str | None = None,
    limit: _limit(10, 50, "notes") = 10,  # type: ignore[valid-type]
    offset: _offset() = 0,  # type: ignore[valid-type]
) -> dict[str, Any]:
    """Notes, abbreviated (200-char previews); get_note_details for one in full."""
    ws, user, _ = session(ctx)
    notes, total = ws.search_notes(
        user, query=query, project_id=project_id, category=category, limit=limit, offset=offset
    )
    page = fit_page(
        notes,
        key="notes",
        budget=search_notes.result_tokens,
        total=total,
        offset=offset,
        message=_showing("notes", offset, total, "Use get_note_details(note_id) for full content."),
        shrink=(shorten("content_preview", 100), drop("content_preview")),
    )
    _prefetch(ctx, "note", page["notes"], lambda i: ws.note_details(user, i))
    return page


# -- details ---------------------------------------------------------------------------------------


@tool(tier="detail")
def get_task_details(
    ctx: ToolContext,
    task_id: str,
    include_subtasks: bool = True,
    include_project_context: bool = False,
) -> dict[str, Any]:
    """One task in full: texts, dependencies, project; subtasks abbreviated."""
    ws, user, now = session(ctx)
    asked = task_id.strip()
    ready = _prefetched(ctx, "task", asked) if include_subtasks and not include_project_context else None
    task = ready or or_similar(
        ws,
        user,
        "task",
        asked,
        now,
        lambda: ws.task_details(
            user,
            asked,
            include_subtasks=include_subtasks,
            include_project_context=include_project_context,
            now=now,
        ),
    )
    message = "Complete task details loaded including full descriptions and relationships."
    if task.get("subtasks"):  # one task in full; its subtasks like its dependencies, abbreviated
        task = {**task, "subtasks": [_subtask(s) for s in task["subtasks"]]}
        message += " Subtasks abbreviated: get_task_details(task_id) for one in full."
    return {"task": task, "message": message}


def _subtask(record: dict[str, Any]) -> dict[str, Any]:
    """A subtask of a task's details as a list shows it (seed 000 §2.3's 100-character preview)."""
    keys = ("id", "title", "status", "priority", "start_date", "duration_minutes")
    short = {k: record[k] for k in keys if record.get(k) is not None}
    described = preview(record.get("description"), PREVIEW_LIMITS["task_description"])
    return short | ({"description_preview": described} if described else {})


_PROJECT_TASKS = 10
_PROJECT_TASKS_TOKENS = 400
"""A project's details with ``include_tasks`` show its first open tasks, in list order, as titles and
dates in at most this many tokens (seed 001: "abbreviated task list even in detail view")."""


@tool(tier="detail", result_tokens=1200)
def get_project_details(
    ctx: ToolContext,
    project_id: str,
    include_tasks: bool = False,
    include_phases: bool = True,
    include_notes: bool = False,
    include_brain_dumps: bool = False,
) -> dict[str, Any]:
    """One project in full; its first open tasks, notes, brain dumps (abbreviated) if asked."""
    ws, user, now = session(ctx)
    asked = project_id.strip()
    defaults = include_phases and not (include_notes or include_brain_dumps)
    ready = _prefetched(ctx, "project", asked) if defaults else None
    project = ready or or_similar(
        ws,
        user,
        "project",
        asked,
        now,
        lambda: ws.project_details(
            user,
            asked,
            include_phases=include_phases,
            include_notes=include_notes,
            include_brain_dumps=include_brain_dumps,
            now=now,
        ),
    )
    tasks = ""
    if include_tasks:
        project, tasks = _with_open_tasks(ws, user, project, now)
    parts = [
        f"{len(project[k])} {k.replace('_', ' ')}" for k in ("phases", "notes", "brain_dumps") if k in project
    ]
    parts += [tasks] if tasks else []
    extra = f" with {', '.join(parts)}" if parts else ""
    return {"project": project, "message": f"Complete project details loaded{extra}."}


def _with_open_tasks(
    ws: Workspace, user: str, project: dict[str, Any], now: datetime
) -> tuple[dict[str, Any], str]:
    """``project`` with its first open tasks (a page fitted to :data:`_PROJECT_TASKS_TOKENS`).

    The order is list_tasks' own (overdue and due soon, then priority); the records are list
    previews without their texts or the project's name, which the project already says.
    """
    tasks, total = ws.list_tasks(
        user,
        project_id=project["id"],
        status=OPEN_TASK_STATUSES,
        limit=_PROJECT_TASKS,
        sort_by="due",
        now=now,
    )
    texts = ("description_preview", "details_preview", "project_name")
    page = fit_page(
        [{k: v for k, v in lean(t).items() if k not in texts} for t in tasks],
        key="tasks",
        budget=_PROJECT_TASKS_TOKENS,
        total=total,
        offset=0,
        message=lambda shown, more: "",
    )
    shown = len(page["tasks"])
    said = (
        f"{total} open task{'' if total == 1 else 's'}"
        if shown >= total
        else f"the first {shown} of {total} open tasks (list_tasks(project_id, offset={shown}) for more)"
    )
    return {**project, "tasks": page["tasks"]}, said


@tool(tier="detail", result_tokens=500)
def get_note_details(ctx: ToolContext, note_id: str) -> dict[str, Any]:
    """One note in full."""
    ws, user, now = session(ctx)
    asked = note_id.strip()
    note = _prefetched(ctx, "note", asked) or or_similar(
        ws, user, "note", asked, now, lambda: ws.note_details(user, asked)
    )
    adaptive = ctx.extras.get("adaptive")
    if isinstance(adaptive, AdaptiveBudgets) and user:  # seed 000 §10.3: the related layer was used
        project = note.get("project_id")
        adaptive.opened(user, str(note["id"]), ("project", project) if project else None)
    return {"note": note, "message": "Complete note loaded."}


# -- actions ---------------------------------------------------------------------------------------


@tool(tier="action")
def create_task(
    ctx: ToolContext,
    title: Annotated[str, Field(min_length=1, max_length=300)],
    description: str | None = None,
    project_id: str | None = None,
    priority: Priority = "medium",
    task_type: Literal["one_off", "recurring"] = "one_off",
    duration_minutes: Annotated[int, Field(ge=1, le=1440)] = 60,
    start_date: Annotated[str | None, Field(json_schema_extra={"format": "date"})] = None,
    parent_task_id: str | None = None,
    recurrence_pattern: Literal["daily", "weekdays", "weekly", "biweekly", "monthly"] | None = None,
    details: str | None = None,
) -> dict[str, Any]:
    """Create a task."""
    ws, user, now = session(ctx)
    task = ws.create_task(
        user,
        title=title,
        description=description,
        project_id=project_id,
        priority=priority,
        task_type=task_type,
        recurrence_pattern=recurrence_pattern,
        duration_minutes=duration_minutes,
        start_date=start_date,
        parent_task_id=parent_task_id,
        details=details,
        now=now,
    )
    where = f" in {task['project_name']}" if "project_name" in task else ""
    message = f"Created task '{task['title']}' ({task['id']}){where}."
    return {"task": lean(task), "message": message}  # no false hints: a new task has none of them


@tool(tier="action", result_tokens=250)
def update_task(ctx: ToolContext, task_id: str, updates: TaskUpdates) -> dict[str, Any]:
    """Change a task's fields."""
    ws, user, now = session(ctx)
    task, changed = ws.update_task(user, task_id.strip(), updates.model_dump(exclude_none=True), now=now)
    what = ", ".join(changed) if changed else "nothing (the values were already set)"
    return {"task": lean(task), "changed": changed, "message": f"Updated '{task['title']}': {what}."}


@tool(tier="action")
def update_project_context(
    ctx: ToolContext,
    project_id: str,
    context_update: str,
    merge_strategy: Literal["replace", "append", "prepend"] = "append",
) -> dict[str, Any]:
    """Change a project's markdown context."""
    ws, user, now = session(ctx)
    result = ws.update_project_context(user, project_id.strip(), context_update, merge_strategy, now=now)
    verb = {"replace": "Replaced", "append": "Appended to", "prepend": "Prepended to"}[merge_strategy]
    result["message"] = f"{verb} the context of {result['name']} ({result['context_length']} characters now)."
    return result


# -- assembly --------------------------------------------------------------------------------------


WORKSPACE_TOOL_NAMES = (
    "list_tasks",
    "search_projects",
    "search_notes",
    "get_task_details",
    "get_project_details",
    "get_note_details",
    "create_task",
    "update_task",
    "update_project_context",
    "get_calendar_events",
    "find_available_slots",
    "schedule_task",
)
LIST_TOOLS = ("list_tasks", "search_projects", "search_notes")

WORKSPACE_STRATEGIES: tuple[FailureStrategy, ...] = (
    *(s for s in DEFAULT_STRATEGIES if s.alternative_tool != "list_tasks"),
    *(
        FailureStrategy(
            name,
            r"requires? reconnect",
            "explain",
            user_message="Calendar disconnected. Please reconnect your calendar in settings.",
        )
        for name in ("find_available_slots", "schedule_task")
    ),
)
"""Seed 000 §8.2's strategies, with the calendar's reconnection message for every calendar tool.

Seed 000's "task not found → list_tasks" alternative is left out: it listed every task (the
alternative keeps only the arguments ``list_tasks`` accepts, so none). The detail tools search with the
words of the id they were given instead, and their error names what they found."""


def workspace_tools() -> list[Tool]:
    """All twelve tools, in seed 001's order, with seed-shaped schemas and their recaps (recaps.py)."""
    from tierwise.workspace import calendar_tools

    tools = [
        list_tasks,
        search_projects,
        search_notes,
        get_task_details,
        get_project_details,
        get_note_details,
        create_task,
        update_task,
        update_project_context,
        *calendar_tools.CALENDAR_TOOLS,
    ]
    return [dataclasses.replace(compact(t), recap=RECAPS.get(t.name)) for t in tools]
