"""The workspace's writes, and :class:`Workspace`: every read and write of the workspace, per user.

:class:`Workspace` adds the actions (create, update, schedule, change a project's context) to the reads
of :class:`~tierwise.workspace.queries.WorkspaceQueries`; every call is scoped by the ``user_id`` it is
given, and another user's id looks exactly like an id that does not exist (:class:`WorkspaceNotFound`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from datetime import date, datetime
from typing import Any, TypeVar

import sqlalchemy as sa

from tierwise.errors import InputError
from tierwise.store.models import utcnow
from tierwise.workspace.context_cache import touch
from tierwise.workspace.ids import new_workspace_id
from tierwise.workspace.models import (
    MERGE_STRATEGIES,
    PRIORITIES,
    PROJECT_STATUSES,
    RECURRENCES,
    TASK_STATUSES,
    TASK_TYPES,
    Note,
    Project,
    Task,
)
from tierwise.workspace.queries import (
    TASK_UPDATE_FIELDS,
    Profile,
    WorkspaceNotFound,
    WorkspaceQueries,
    check_choice,
    parse_moment,
)
from tierwise.workspace.views import abbreviated_note, abbreviated_project, abbreviated_task

__all__ = ["TASK_UPDATE_FIELDS", "Profile", "Workspace", "WorkspaceNotFound", "parse_moment"]

F = TypeVar("F", bound=Callable[..., Any])


def _writes(method: F) -> F:
    """A write: then (even if it failed) the user's cached contexts and prefetched details are stale."""

    @functools.wraps(method)
    def wrapper(self: Workspace, user_id: str, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, user_id, *args, **kwargs)
        finally:
            touch(self.store, user_id)

    return wrapper  # type: ignore[return-value]


class Workspace(WorkspaceQueries):
    """Reads and writes of one database's workspace rows, each call scoped by ``user_id``.

    Args:
        store: the store whose database holds the workspace tables.

    Example:
        >>> from tierwise.store import Store
        >>> store = Store.open("sqlite://")
        >>> maya = store.create_user("maya").id
        >>> ws = Workspace(store)
        >>> ws.create_task(maya, title="Book the venue")["title"]
        'Book the venue'
        >>> [t["title"] for t in ws.list_tasks(maya)[0]]
        ['Book the venue']
    """

    @_writes
    def create_project(
        self,
        user_id: str,
        *,
        name: str,
        slug: str | None = None,
        status: str = "active",
        description: str | None = None,
        executive_summary: str | None = None,
        tags: Sequence[str] = (),
        context: str | None = None,
        start_date: date | None = None,
        end_date: date | None = None,
        now: datetime | None = None,
    ) -> dict[str, Any]:
        """Create a project (its slug from the name unless given) and return it abbreviated."""
        now = now or utcnow()
        name = name.strip()
        if not name:
            raise InputError("name is empty; give the project a name")
        check_choice("status", status, PROJECT_STATUSES)
        slug = slug or re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "project"
        with self.store.session(write=True) as session:
            taken = session.scalar(
                sa.select(sa.func.count())
                .select_from(Project)
                .where(Project.user_id == user_id, Project.slug == slug)
            )
            if taken:
                raise InputError(f"a project with slug {slug!r} exists; give another slug")
            row = Project(
                id=new_workspace_id("project"),
                user_id=user_id,
                name=name,
                slug=slug,
                status=status,
                start_date=start_date,
                end_date=end_date,
                description=description,
                executive_summary=executive_summary,
                tags=list(tags),
                context=context,
                created_at=now,
                updated_at=now,
            )
            session.add(row)
            session.flush()
            stats = self._stats(session, user_id, [row.id])[row.id]
        hints = {k: stats.pop(k) for k in ("has_phases", "has_notes", "has_brain_dumps")}
        return abbreviated_project(row, stats, hints)

    @_writes
    def create_note(
        self,
        user_id: str,
        *,
        content: str,
        title: str | None = None,
        category: str | None = None,
        tags: Sequence[str] = (),
        project_id: str | None = None,
        now: datetime | None = None,
    ) -> dict[str, Any]:
        """Create a note (optionally about a project) and return it abbreviated."""
        now = now or utcnow()
        if not content.strip():
            raise InputError("content is empty; a note needs some text")
        with self.store.session(write=True) as session:
            if project_id:
                self._project(session, user_id, project_id)
            row = Note(
                id=new_workspace_id("note"),
                user_id=user_id,
                project_id=project_id,
                title=title,
                category=category,
                content=content,
                tags=list(tags),
                created_at=now,
                updated_at=now,
            )
            session.add(row)
            session.flush()
            names = self._project_names(session, user_id, [project_id])
            return abbreviated_note(row, project_name=names.get(project_id or ""))

    @_writes
    def create_task(
        self,
        user_id: str,
        *,
        title: str,
        description: str | None = None,
        project_id: str | None = None,
        priority: str = "medium",
        task_type: str = "one_off",
        recurrence_pattern: str | None = None,
        duration_minutes: int | None = 60,
        start_date: str | None = None,
        parent_task_id: str | None = None,
        details: str | None = None,
        now: datetime | None = None,
    ) -> dict[str, Any]:
        """Create a task (a subtask inherits its parent's project) and return it abbreviated."""
        now = now or utcnow()
        title = title.strip()
        if not title:
            raise InputError("title is empty; give the task a short title")
        check_choice("priority", priority, PRIORITIES)
        check_choice("task_type", task_type, TASK_TYPES)
        if recurrence_pattern is not None:
            check_choice("recurrence_pattern", recurrence_pattern, RECURRENCES)
            task_type = "recurring"
        elif task_type == "recurring":
            raise InputError(f"a recurring task needs recurrence_pattern: one of {', '.join(RECURRENCES)}")
        zone = self.profile(user_id).zone
        start = parse_moment(start_date, zone, "start_date") if start_date else None
        with self.store.session(write=True) as session:
            if parent_task_id:
                parent = self._task(session, user_id, parent_task_id)
                if project_id and parent.project_id and project_id != parent.project_id:
                    raise InputError(
                        f"parent task {parent_task_id!r} belongs to project {parent.project_id!r}, not "
                        f"{project_id!r}; leave project_id out to use the parent's"
                    )
                project_id = project_id or parent.project_id
            if project_id:
                self._project(session, user_id, project_id)
            row = Task(
                id=new_workspace_id("task"),
                user_id=user_id,
                project_id=project_id,
                parent_task_id=parent_task_id,
                title=title,
                status="backlog",
                priority=priority,
                start_at=start,
                duration_minutes=duration_minutes,
                description=description,
                details=details,
                task_type=task_type,
                recurrence_pattern=recurrence_pattern,
                dependencies=[],
                created_at=now,
                updated_at=now,
            )
            session.add(row)
            session.flush()
            names = self._project_names(session, user_id, [project_id])
            return abbreviated_task(row, zone, now=now, project_name=names.get(project_id or ""))

    @_writes
    def update_task(
        self, user_id: str, task_id: str, updates: dict[str, Any], *, now: datetime | None = None
    ) -> tuple[dict[str, Any], list[str]]:
        """Apply ``updates`` (keys of :data:`TASK_UPDATE_FIELDS`); returns the task and what changed."""
        now = now or utcnow()
        given = {k: v for k, v in updates.items() if v is not None}
        if not given:
            raise InputError(f"updates is empty; give at least one of {', '.join(TASK_UPDATE_FIELDS)}")
        unknown = sorted(set(given) - set(TASK_UPDATE_FIELDS))
        if unknown:
            allowed = ", ".join(TASK_UPDATE_FIELDS)
            raise InputError(f"cannot update {', '.join(unknown)}; updatable: {allowed}")
        if "status" in given:
            check_choice("status", given["status"], TASK_STATUSES)
        if "priority" in given:
            check_choice("priority", given["priority"], PRIORITIES)
        if "title" in given and not str(given["title"]).strip():
            raise InputError("title cannot be empty")
        zone = self.profile(user_id).zone
        with self.store.session(write=True) as session:
            task = self._task(session, user_id, task_id)
            changed = []
            for key, value in given.items():
                column = "start_at" if key == "start_date" else key
                if key == "start_date":
                    value = parse_moment(value, zone, "start_date") if value.strip() else None
                if getattr(task, column) != value:
                    setattr(task, column, value)
                    changed.append(key)
            if "status" in changed:
                task.completed_at = now if task.status == "done" else None
            if changed:
                task.updated_at = now
            session.flush()
            names = self._project_names(session, user_id, [task.project_id])
            count = self._subtask_counts(session, user_id, [task.id]).get(task.id, 0)
            record = abbreviated_task(
                task, zone, now=now, project_name=names.get(task.project_id or ""), subtask_count=count
            )
        return record, changed

    @_writes
    def mark_scheduled(
        self,
        user_id: str,
        task_id: str,
        start: datetime,
        duration_minutes: int,
        recurrence_pattern: str | None = None,
        *,
        now: datetime | None = None,
    ) -> None:
        """Record that a task was put on the calendar: its start, duration and recurrence."""
        if recurrence_pattern is not None:
            check_choice("recurrence_pattern", recurrence_pattern, RECURRENCES)
        with self.store.session(write=True) as session:
            task = self._task(session, user_id, task_id)
            task.start_at, task.duration_minutes = start, duration_minutes
            if recurrence_pattern is not None:
                task.task_type, task.recurrence_pattern = "recurring", recurrence_pattern
            task.updated_at = now or utcnow()

    @_writes
    def update_project_context(
        self,
        user_id: str,
        project_id: str,
        context_update: str,
        merge_strategy: str = "append",
        *,
        now: datetime | None = None,
    ) -> dict[str, Any]:
        """Replace, append to or prepend to a project's markdown context (blank line between parts)."""
        check_choice("merge_strategy", merge_strategy, MERGE_STRATEGIES)
        if not context_update.strip():
            raise InputError("context_update is empty; give the markdown to add")
        with self.store.session(write=True) as session:
            project = self._project(session, user_id, project_id)
            old = (project.context or "").strip()
            new = context_update.strip()
            if merge_strategy == "append" and old:
                new = f"{old}\n\n{new}"
            elif merge_strategy == "prepend" and old:
                new = f"{new}\n\n{old}"
            project.context = new
            project.updated_at = now or utcnow()
            return {
                "project_id": project.id,
                "name": project.name,
                "merge_strategy": merge_strategy,
                "context_length": len(new),
                "previous_length": len(old),
            }
