"""Workspace read routes for the UI: projects, tasks, notes and calendar, abbreviated or whole.

They return the same records the model's tools return (``tierwise.workspace.views``), scoped to the
request's user; an id of another user's row is a 404 like any unknown id.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request

from tierwise.store.models import utcnow
from tierwise.workspace.calendar import LocalCalendar
from tierwise.workspace.calendar_tools import abbreviated_event
from tierwise.workspace.queries import parse_moment
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


@router.get("/calendar")
def calendar(
    request: Request,
    start: Annotated[str | None, Query(alias="from")] = None,
    end: Annotated[str | None, Query(alias="to")] = None,
) -> Any:
    """Events between ``from`` and ``to`` (local dates or times; default: the next 7 days)."""
    ws, user = _ws(request)
    zone = ws.profile(user).zone
    begin = parse_moment(start, zone, "from") if start else utcnow()
    finish = parse_moment(end, zone, "to") if end else begin + timedelta(days=7)
    events = LocalCalendar(request.app.state.store).events(user, begin, finish)
    return {"events": [abbreviated_event(e, zone) for e in events[:500]], "total": len(events)}
