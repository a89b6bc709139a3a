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

Optional parameters appear in the schema without ``null`` (the validation still accepts ``null``, as
"not given"): smaller schemas cost fewer tokens on every call.

Each tool reads its user, store and clock from :class:`~tierwise.tools.ToolContext` (``extras``:
``clock`` — a function returning the current aware datetime — and ``calendar``), so a user can only
ever reach their own rows. An unknown id raises :class:`~tierwise.workspace.repository.WorkspaceNotFound`
("not found; call list_tasks …"), which the executor's failure strategies turn into a result the
model can act on.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from tierwise.store.models import utcnow
from tierwise.tools.definition import Tool, ToolContext, tool
from tierwise.tools.strategies import DEFAULT_STRATEGIES, FailureStrategy
from tierwise.workspace.pages import drop, fit_page, lean, shorten
from tierwise.workspace.queries import OPEN_TASK_STATUSES
from tierwise.workspace.repository import Workspace
from tierwise.workspace.similar import or_similar

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
            description=f"Maximum {what} to return (at most {maximum})",
            json_schema_extra={"maximum": maximum},
        ),
    ]


class TaskUpdates(BaseModel):
    """The fields of a task to change; leave out what stays."""

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


def _offset() -> Any:
    return Annotated[
        int, AfterValidator(_clamp(0, 1_000_000)), Field(default=0, description="From next_offset")
    ]


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
    project_id: Annotated[str | None, Field(description="Filter by specific project")] = None,
    status: Annotated[
        list[Status] | None, Field(description="Filter by status (default: open; with a query: all)")
    ] = None,
    priority: Annotated[
        list[Priority] | None, Field(description="Filter by priority (multiple allowed)")
    ] = None,
    has_date: Annotated[bool | None, Field(description="Only tasks with start_date")] = None,
    query: Annotated[str | None, Field(description="Words to find in the title or description")] = None,
    limit: _limit(20, 50, "tasks") = 20,  # type: ignore[valid-type]
    sort_by: Annotated[
        Literal["priority", "start_date", "created_at"] | None,
        Field(description="Default: overdue and due soon first, then priority"),
    ] = None,
    offset: _offset() = 0,  # type: ignore[valid-type]
) -> dict[str, Any]:
    """Get abbreviated list of tasks. Returns task summaries with first 100 chars of descriptions.

    Use get_task_details for complete information about specific tasks.
    """
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
    )
    what = "tasks" if status else "tasks (open first)" if query else "open tasks"
    return fit_page(
        [lean(t) for t in tasks],
        key="tasks",
        budget=list_tasks.result_tokens,
        total=total,
        offset=offset,
        message=_showing(what, offset, total, "Use get_task_details(task_id) for full information."),
        shrink=(drop("details_preview"), drop("description_preview")),
    )


@tool(tier="list", result_tokens=600)
def search_projects(
    ctx: ToolContext,
    query: Annotated[str | None, Field(description="Search in name, description, tags")] = None,
    status: ProjectStatus | None = None,
    has_active_tasks: Annotated[bool | None, Field(description="Only projects with active tasks")] = None,
    limit: _limit(10, 20, "projects") = 10,  # type: ignore[valid-type]
    offset: _offset() = 0,  # type: ignore[valid-type]
) -> dict[str, Any]:
    """Search projects returning abbreviated info with 500 char context preview.

    Use get_project_details for full context and detailed information.
    """
    ws, user, _ = session(ctx)
    projects, total = ws.search_projects(
        user, query=query, status=status, has_active_tasks=has_active_tasks, limit=limit, offset=offset
    )
    return fit_page(
        [lean(drop("slug", "in_progress_task_count")(p)) for p in projects],
        key="projects",
        budget=search_projects.result_tokens,
        total=total,
        offset=offset,
        message=_showing("projects", offset, total, "Use get_project_details(project_id) for full context."),
        shrink=(drop("context_preview"), drop("executive_summary")),
    )


@tool(tier="list", result_tokens=600)
def search_notes(
    ctx: ToolContext,
    query: Annotated[str | None, Field(description="Search in title and content")] = None,
    project_id: Annotated[str | None, Field(description="Filter by project")] = None,
    category: Annotated[str | None, Field(description="Filter by category")] = None,
    limit: _limit(10, 50, "notes") = 10,  # type: ignore[valid-type]
    offset: _offset() = 0,  # type: ignore[valid-type]
) -> dict[str, Any]:
    """Search notes returning abbreviated content (200 char preview).

    Use get_note_details for full content.
    """
    ws, user, _ = session(ctx)
    notes, total = ws.search_notes(
        user, query=query, project_id=project_id, category=category, limit=limit, offset=offset
    )
    return fit_page(
        notes,
        key="notes",
        budget=search_notes.result_tokens,
        total=total,
        offset=offset,
        message=_showing("notes", offset, total, "Use get_note_details(note_id) for full content."),
        shrink=(shorten("content_preview", 100), drop("content_preview")),
    )


# -- details ---------------------------------------------------------------------------------------


@tool(tier="detail")
def get_task_details(
    ctx: ToolContext,
    task_id: Annotated[str, Field(description="Task ID from list_tasks")],
    include_subtasks: Annotated[bool, Field(description="Include full subtask details")] = True,
    include_project_context: Annotated[bool, Field(description="Include parent project context")] = False,
) -> dict[str, Any]:
    """Get COMPLETE details for a specific task including full descriptions, all subtasks, dependencies, and parent project context."""  # noqa: E501
    ws, user, now = session(ctx)
    asked = task_id.strip()
    task = or_similar(
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
    return {
        "task": task,
        "message": "Complete task details loaded including full descriptions and relationships.",
    }


@tool(tier="detail", result_tokens=1200)
def get_project_details(
    ctx: ToolContext,
    project_id: Annotated[str, Field(description="Project ID from search_projects")],
    include_tasks: Annotated[bool, Field(description="Include abbreviated task list")] = False,
    include_phases: Annotated[bool, Field(description="Include project phases")] = True,
    include_notes: Annotated[bool, Field(description="Include recent notes (abbreviated)")] = False,
    include_brain_dumps: Annotated[bool, Field(description="Include recent brain dumps")] = False,
) -> dict[str, Any]:
    """Get COMPLETE project details including full context, core dimensions, all phases, and optionally tasks and notes."""  # noqa: E501
    ws, user, now = session(ctx)
    asked = project_id.strip()
    project = or_similar(
        ws,
        user,
        "project",
        asked,
        now,
        lambda: ws.project_details(
            user,
            asked,
            include_tasks=include_tasks,
            include_phases=include_phases,
            include_notes=include_notes,
            include_brain_dumps=include_brain_dumps,
            now=now,
        ),
    )
    parts = [
        f"{len(project[k])} {k.replace('_', ' ')}"
        for k in ("tasks", "phases", "notes", "brain_dumps")
        if k in project
    ]
    extra = f" with {', '.join(parts)}" if parts else ""
    return {"project": project, "message": f"Complete project details loaded{extra}."}


@tool(tier="detail", result_tokens=500)
def get_note_details(
    ctx: ToolContext, note_id: Annotated[str, Field(description="Note ID from search_notes")]
) -> dict[str, Any]:
    """Get complete note content."""
    ws, user, now = session(ctx)
    asked = note_id.strip()
    note = or_similar(ws, user, "note", asked, now, lambda: ws.note_details(user, asked))
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
    parent_task_id: Annotated[str | None, Field(description="Create as subtask of another task")] = None,
    recurrence_pattern: Annotated[
        Literal["daily", "weekdays", "weekly", "biweekly", "monthly"] | None,
        Field(description="How a recurring task repeats"),
    ] = None,
    details: Annotated[str | None, Field(description="Longer notes: steps, links, requirements")] = None,
) -> dict[str, Any]:
    """Create a new task."""
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
    return {"task": task, "message": f"Created task '{task['title']}' ({task['id']}){where}."}


@tool(tier="action", result_tokens=250)
def update_task(ctx: ToolContext, task_id: str, updates: TaskUpdates) -> dict[str, Any]:
    """Update an existing task."""
    ws, user, now = session(ctx)
    task, changed = ws.update_task(user, task_id.strip(), updates.model_dump(exclude_none=True), now=now)
    what = ", ".join(changed) if changed else "nothing (the values were already set)"
    return {"task": task, "changed": changed, "message": f"Updated '{task['title']}': {what}."}


@tool(tier="action")
def update_project_context(
    ctx: ToolContext,
    project_id: str,
    context_update: Annotated[str, Field(description="New context or addition")],
    merge_strategy: Literal["replace", "append", "prepend"] = "append",
) -> dict[str, Any]:
    """Update or append to project context."""
    ws, user, now = session(ctx)
    result = ws.update_project_context(user, project_id.strip(), context_update, merge_strategy, now=now)
    verb = {"replace": "Replaced", "append": "Appended to", "prepend": "Prepended to"}[merge_strategy]
    result["message"] = f"{verb} the context of {result['name']} ({result['context_length']} characters now)."
    return result


# -- assembly --------------------------------------------------------------------------------------


def _inline(schema: dict[str, Any]) -> dict[str, Any]:
    """Inline ``$ref``s to ``$defs`` and drop ``null`` from optional parameters (seed-shaped schemas)."""
    defs = schema.get("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(n) for n in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            target = copy.deepcopy(defs[node["$ref"].rsplit("/", 1)[-1]])
            node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        options = node.get("anyOf")
        if isinstance(options, list) and len(options) == 2 and {"type": "null"} in options:
            kept = next(o for o in options if o != {"type": "null"})
            node = {**{k: v for k, v in node.items() if k != "anyOf"}, **kept}
            if node.get("default", 0) is None:
                del node["default"]
        return {k: walk(v) for k, v in node.items() if k != "$defs"}

    return walk(schema)  # type: ignore[no-any-return]


def _seed_shaped(tool_: Tool) -> Tool:
    return dataclasses.replace(tool_, parameters=_inline(tool_.parameters))


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
    """All twelve tools, in seed 001's order, with seed-shaped schemas."""
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
    return [_seed_shaped(t) for t in tools]
