"""Workspace read routes for the UI: projects, tasks, notes and calendar, abbreviated or whole.

They return the same records the model's tools return (``tierwise.workspace.views``), scoped to the
request's user; an id of another user's row is a 404 like any unknown id.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo

from fastapi import APIRouter, Query, Request

from tierwise.server.errors import ApiError
from tierwise.store.models import utcnow
from tierwise.workspace.calendar import LocalCalendar
from tierwise.workspace.calendar_tools import abbreviated_event
from tierwise.workspace.repository import Workspace

__all__ = ["router"]

router = APIRouter(prefix="/api")

Status = Literal["backlog", "in_progress", "done", "blocked"]
Priority = Literal["low", "medium", "high"]


def _ws(request: Request) -> tuple[Workspace, str]:
    return Workspace(request.app.state.store), request.app.state.user_of(request)


@router.get("/projects")
def projects(
    request: Request,
    query: str | None = None,
    status: Literal["active", "paused", "completed", "archived"] | None = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 50,
) -> Any:
    """Projects, abbreviated, best matches first."""
    ws, user = _ws(request)
    found, total = ws.search_projects(user, query=query, status=status, limit=limit)
    return {"projects": found, "total": total}


@router.get("/projects/{project_id}")
def project(project_id: str, request: Request) -> Any:
    """One project in full, with its phases and abbreviated tasks."""
    ws, user = _ws(request)
    return ws.project_details(user, project_id, include_tasks=True, include_notes=True)


@router.get("/tasks")
def tasks(
    request: Request,
    project_id: str | None = None,
    status: Annotated[list[Status] | None, Query()] = None,
    priority: Annotated[list[Priority] | None, Query()] = None,
    query: str | None = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
) -> Any:
    """Tasks, abbreviated, by priority."""
    ws, user = _ws(request)
    found, total = ws.list_tasks(
        user, project_id=project_id, status=status, priority=priority, query=query, limit=limit
    )
    return {"tasks": found, "total": total}


@router.get("/tasks/{task_id}")
def task(task_id: str, request: Request) -> Any:
    """One task in full, with subtasks, dependencies and project."""
    ws, user = _ws(request)
    return ws.task_details(user, task_id)


@router.get("/notes")
def notes(request: Request, query: str | None = None, limit: Annotated[int, Query(ge=1, le=100)] = 50) -> Any:
    """Notes, abbreviated, newest first."""
    ws, user = _ws(request)
    found, total = ws.search_notes(user, query=query, limit=limit)
    return {"notes": found, "total": total}


# A calendar date, months' lengths and leap years included (year 0000 too, as JSON Schema's `date`
# format has it), and a time of day with an optional offset: the published schema and the check
# below are this one pattern, so every value the schema admits is answered and none other is.
_DAY = (
    r"(?:[0-9]{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)"
    r"|02-(?:0[1-9]|1[0-9]|2[0-8]))"
    r"|(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)-02-29)"
)
_TIME = (
    r"T(?:[01][0-9]|2[0-3]):[0-5][0-9](?::[0-5][0-9](?:\.[0-9]{1,6})?)?"
    r"(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])?"
)
_MOMENT = re.compile(f"{_DAY}(?:{_TIME})?")
_FIRST, _LAST = datetime.min.replace(tzinfo=UTC), datetime.max.replace(tzinfo=UTC)


def _moment_query(alias: str, default: str) -> Any:
    """The ``from`` / ``to`` parameter: a date (``format: date``) or a date and time, in the schema."""
    description = (
        f"A local date (YYYY-MM-DD: midnight in the user's time zone) or date and time "
        f"(YYYY-MM-DDTHH:MM[:SS], local unless it ends in Z or an offset such as +01:00). Default: {default}."
    )
    branches = [{"type": "string", "format": "date"}, {"type": "string", "pattern": f"^{_DAY}{_TIME}$"}]
    return Query(alias=alias, description=description, json_schema_extra={"anyOf": branches})


def _moment(text: str, zone: ZoneInfo, name: str) -> datetime:
    """``text`` (see :func:`_moment_query`) as a UTC moment; one beyond what Python holds, the first or last.

    Raises:
        ApiError: 422, not a date or date and time of that form.
    """
    if _MOMENT.fullmatch(text) is None:
        shown = text if len(text) <= 40 else text[:40] + "…"
        raise ApiError(
            422,
            f"{name}: {shown!r} is not a date; use YYYY-MM-DD or YYYY-MM-DDTHH:MM (local time, or with Z "
            "or an offset such as +01:00)",
        )
    if text.startswith("0000"):  # a year before the first Python can hold
        return _FIRST
    value = datetime.fromisoformat(text)
    try:
        return (value if value.tzinfo is not None else value.replace(tzinfo=zone)).astimezone(UTC)
    except OverflowError:  # within a day of year 1 or 9999, shifted past it by the zone
        return _FIRST if value.year == 1 else _LAST


@router.get("/calendar")
def calendar(
    request: Request,
    start: Annotated[str | None, _moment_query("from", "now")] = None,
    end: Annotated[str | None, _moment_query("to", "7 days after from")] = None,
) -> Any:
    """Events between ``from`` and ``to`` (local dates or times; default: the next 7 days).

    A ``to`` not after ``from`` is an empty window: no events.
    """
    ws, user = _ws(request)
    zone = ws.profile(user).zone
    begin = _moment(start, zone, "from") if start is not None else utcnow()
    if end is not None:
        finish = _moment(end, zone, "to")
    else:
        finish = begin + timedelta(days=7) if begin < _LAST - timedelta(days=7) else _LAST
    if finish <= begin:
        return {"events": [], "total": 0}
    events = LocalCalendar(request.app.state.store).events(user, begin, finish)
    return {"events": [abbreviated_event(e, zone) for e in events[:500]], "total": len(events)}
