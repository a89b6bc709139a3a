"""A chat's location (seed 001's ``context_type`` and ``entity_id``): checked on creation, named on output.

A chat opened through ``POST /api/chats`` is ``global``, ``calendar``, on one day of the calendar
(``calendar_date``, seed 002's ``calendar_date``: ``entity_id`` is the day, ``YYYY-MM-DD``), or *on*
one of the user's projects or tasks; :func:`check_location` refuses anything else with a message
that says how to fix it. Chats the OpenAI-compatible endpoint makes (``api``, ``api-superseded``)
are created through the store and never pass here. :func:`describe` adds a ``context`` object to
chats for the UI: the type, the entity's id and name (a task's project too), and whether the entity
still exists, looked up in a couple of queries for a whole list.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date
from typing import Any

import sqlalchemy as sa
from pydantic_core import to_jsonable_python

from tierwise.memory.narrative import Narrative
from tierwise.server.errors import ApiError
from tierwise.store import Chat, Store
from tierwise.workspace.models import Project, Task

__all__ = ["RETIRED", "check_location", "context_of", "describe", "names_of"]

RETIRED = "api-superseded"
"""An OpenAI-compatible session whose history diverged: kept, but left out of the default chat list."""

_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")

_LIST_ROUTE = {"project": "GET /api/projects", "task": "GET /api/tasks?project_id=…"}


def check_location(store: Store, user_id: str, context_type: str, entity_id: str | None) -> None:
    """Refuse a location the user cannot open a chat on.

    Raises:
        ApiError: 422 for an entity id missing (project, task, calendar_date), not wanted (global,
            calendar) or not a date (calendar_date); 404 for a project or task the user does not
            have (whoever owns it).
    """
    if context_type == "calendar_date":
        if not entity_id:
            raise ApiError(
                422, "a calendar_date chat needs entity_id, the day as YYYY-MM-DD (e.g. 2026-01-13)"
            )
        if not _DAY.fullmatch(entity_id):
            raise ApiError(422, f"entity_id {entity_id!r}: write the day as YYYY-MM-DD (e.g. 2026-01-13)")
        try:
            date.fromisoformat(entity_id)
        except ValueError:
            raise ApiError(
                422,
                f"entity_id {entity_id!r} is not a day; a calendar_date chat takes the day as "
                "YYYY-MM-DD (e.g. 2026-01-13)",
            ) from None
        return
    if context_type not in ("project", "task"):
        if entity_id:
            raise ApiError(
                422,
                f"a {context_type} chat takes no entity_id; leave it out, or set context_type to "
                "project or task to open the chat on one (calendar_date for one day, YYYY-MM-DD)",
            )
        return
    if not entity_id:
        raise ApiError(
            422,
            f"a {context_type} chat needs entity_id (the {context_type}'s id); "
            f"find one with {_LIST_ROUTE[context_type]}",
        )
    with store.session() as session:
        if context_type == "project":
            found = session.scalar(
                sa.select(Project.id).where(Project.id == entity_id, Project.user_id == user_id)
            )
        else:
            found = session.scalar(
                sa.select(Task.id).where(
                    Task.id == entity_id, Task.user_id == user_id, Task.deleted_at.is_(None)
                )
            )
    if found is None:
        raise ApiError(
            404,
            f"no {context_type} {entity_id!r}; entity_id must be the id of one of your "
            f"{context_type}s — list them with {_LIST_ROUTE[context_type]}",
        )


def names_of(
    store: Store, user_id: str, chats: Sequence[Chat]
) -> tuple[dict[str, str], dict[str, tuple[str, str | None]]]:
    """Project names and task (title, project id) of the chats' entities, in two queries."""
    project_ids = {c.entity_id for c in chats if c.context_type == "project" and c.entity_id}
    task_ids = {c.entity_id for c in chats if c.context_type == "task" and c.entity_id}
    projects: dict[str, str] = {}
    tasks: dict[str, tuple[str, str | None]] = {}
    if not project_ids and not task_ids:
        return projects, tasks
    with store.session() as session:
        if task_ids:
            found = session.execute(
                sa.select(Task.id, Task.title, Task.project_id).where(
                    Task.user_id == user_id, Task.id.in_(task_ids), Task.deleted_at.is_(None)
                )
            )
            tasks = {tid: (title, pid) for tid, title, pid in found}
            project_ids |= {pid for _, pid in tasks.values() if pid}
        if project_ids:
            named = session.execute(
                sa.select(Project.id, Project.name).where(
                    Project.user_id == user_id, Project.id.in_(project_ids)
                )
            )
            projects = {pid: name for pid, name in named}
    return projects, tasks


def context_of(
    chat: Chat, projects: dict[str, str], tasks: dict[str, tuple[str, str | None]]
) -> dict[str, Any]:
    """The chat's ``context`` object: type, id, name, the task's project, and whether it still exists."""
    out: dict[str, Any] = {
        "type": chat.context_type,
        "id": chat.entity_id,
        "name": None,
        "project": None,
        "exists": True,
    }
    if chat.context_type == "project" and chat.entity_id:
        out["name"] = projects.get(chat.entity_id)
        out["exists"] = out["name"] is not None
    elif chat.context_type == "calendar_date" and chat.entity_id:
        out["name"] = chat.entity_id
    elif chat.context_type == "task" and chat.entity_id:
        found = tasks.get(chat.entity_id)
        out["exists"] = found is not None
        if found is not None:
            title, project_id = found
            out["name"] = title
            if project_id and project_id in projects:
                out["project"] = {"id": project_id, "name": projects[project_id]}
    return out


def describe(store: Store, user_id: str, chats: Sequence[Chat]) -> list[dict[str, Any]]:
    """The chats as JSON, each with its ``context`` (see :func:`context_of`).

    ``conversation_summary`` is the chat's narrative as the model reads it (made from the stored
    narrative on read, so it is never a stale copy); ``narrative`` stays the structured form.
    """
    projects, tasks = names_of(store, user_id, chats)
    return [
        {
            **to_jsonable_python(c),
            "conversation_summary": summary_of(c),
            "context": context_of(c, projects, tasks),
        }
        for c in chats
    ]


def summary_of(chat: Chat) -> str | None:
    """The chat's narrative as text (``None`` before it has one)."""
    if not chat.narrative:
        return chat.conversation_summary
    text = Narrative.from_dict(chat.narrative).render().strip()
    return text or chat.conversation_summary
