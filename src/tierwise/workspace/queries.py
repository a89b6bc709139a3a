r"""The workspace's reads: lists, searches and details of projects, tasks, notes, per user.

:class:`Workspace` sits on the store's database (``Store.session``) and scopes every query by the
``user_id`` it is given: another user's id looks exactly like an id that does not exist
(:class:`WorkspaceNotFound`, whose message names the list tool that finds real ids — seed 000 §8.2).
Reads return the JSON-able records of :mod:`tierwise.workspace.views`; the tools only shape
arguments and messages around them.

Searching is case-insensitive, matches every word of the query somewhere in the searched fields,
and escapes ``%``, ``_`` and ``\\`` (``icontains(autoescape=True)``), so user text is never a pattern.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import sqlalchemy as sa
from dateutil import parser as dateparser
from sqlalchemy.orm import Session

from tierwise.errors import InputError, UserError
from tierwise.store import Store
from tierwise.store.models import utcnow
from tierwise.workspace.context_cache import touch
from tierwise.workspace.models import (
    BrainDump,
    Note,
    Phase,
    Project,
    Task,
    UserProfile,
)
from tierwise.workspace.views import (
    abbreviated_brain_dump,
    abbreviated_note,
    abbreviated_project,
    abbreviated_task,
    local_moment,
    task_stats,
)

__all__ = [
    "OPEN_TASK_STATUSES",
    "TASK_UPDATE_FIELDS",
    "Profile",
    "WorkspaceNotFound",
    "WorkspaceQueries",
    "check_choice",
    "parse_moment",
]

_LIST_TOOL = {"task": "list_tasks", "project": "search_projects", "note": "search_notes"}
_PRIORITY_RANK = sa.case({"high": 3, "medium": 2, "low": 1}, value=Task.priority, else_=0)
_PROJECT_RANK = sa.case(
    {"active": 0, "paused": 1, "completed": 2, "archived": 3}, value=Project.status, else_=4
)
_DUE_SOON = timedelta(days=7)
_PROFILES: sa.Table = UserProfile.__table__  # type: ignore[assignment]
_PROFILE = sa.select(  # Core columns: no ORM compile on a read made every turn
    *(
        _PROFILES.c[name]
        for name in ("who_i_am", "how_i_work", "timezone", "work_start_hour", "work_end_hour", "work_days")
    )
).where(_PROFILES.c.user_id == sa.bindparam("b_user"))
OPEN_TASK_STATUSES = ("backlog", "in_progress", "blocked")
"""What "open" means for a task: not done (the statuses an unfiltered ``list_tasks`` tool call shows)."""
_WORD = re.compile(r"[^\s,;]+")
TASK_UPDATE_FIELDS = (
    "title",
    "description",
    "details",
    "status",
    "priority",
    "start_date",
    "duration_minutes",
)


class WorkspaceNotFound(UserError):
    """No row of this kind with this id belongs to the user; the message names the tool to find one.

    ``similar`` replaces that hint with what was found instead (the detail tools search with the words
    of the id they were given).
    """

    def __init__(self, kind: str, id: str, similar: str = "") -> None:
        tool = _LIST_TOOL.get(kind)
        hint = f"; call {tool} to find the {kind}'s id" if tool else ""
        super().__init__(f"{kind} {id!r} not found{similar or hint}")
        self.kind, self.id = kind, id


@dataclass(frozen=True, slots=True)
class Profile:
    """Who the user is, how they work, and when (the defaults when no profile is stored)."""

    who_i_am: str = ""
    how_i_work: str = ""
    timezone: str = "UTC"
    work_start_hour: int = 9
    work_end_hour: int = 17
    work_days: tuple[int, ...] = (1, 2, 3, 4, 5)

    @property
    def zone(self) -> ZoneInfo:
        """The user's time zone."""
        return ZoneInfo(self.timezone)


def parse_moment(text: str, zone: ZoneInfo, field: str) -> datetime:
    """A date or date-time the model wrote, as an aware UTC moment; a bare date is local midnight.

    Times without an offset are the user's local time.

    Raises:
        InputError: not a date; the message shows the expected form.

    Example:
        >>> parse_moment("2026-11-24T10:30", ZoneInfo("Europe/Lisbon"), "start_time").isoformat()
        '2026-11-24T10:30:00+00:00'
        >>> parse_moment("2026-07-01", ZoneInfo("Europe/Lisbon"), "start_date").isoformat()
        '2026-06-30T23:00:00+00:00'
    """
    try:
        value = dateparser.isoparse(text.strip())
    except (ValueError, OverflowError):
        raise InputError(
            f"{field}: {text!r} is not a date; use YYYY-MM-DD or YYYY-MM-DDTHH:MM (local time)"
        ) from None
    if value.tzinfo is None:
        value = value.replace(tzinfo=zone)
    return value.astimezone(ZoneInfo("UTC"))


def _words(query: str | None) -> list[str]:
    return [w for w in _WORD.findall(query or "") if w.strip()][:8]


def _matches(words: Sequence[str], columns: Iterable[Any]) -> Any:
    cols = list(columns)
    return sa.and_(*(sa.or_(*(c.icontains(w, autoescape=True) for c in cols)) for w in words))


def _full(row: Any, zone: ZoneInfo, *, skip: Iterable[str] = ("user_id", "deleted_at")) -> dict[str, Any]:
    """Every column of ``row`` (times in the user's zone), for the detail tools."""
    out: dict[str, Any] = {}
    for column in row.__table__.columns:
        if column.key in skip:
            continue
        value = getattr(row, column.key)
        if isinstance(value, datetime):
            local = value.astimezone(zone).isoformat(timespec="minutes")
            value = local_moment(value, zone) if column.key == "start_at" else local
        elif hasattr(value, "isoformat"):
            value = value.isoformat()
        out[column.key] = value
    if "start_at" in out:
        out["start_date"] = out.pop("start_at")
    return out


class WorkspaceQueries:
    """The profile and the reads of the workspace rows, scoped by ``user_id`` (writes: ``Workspace``).

    Args:
        store: the store whose database holds the workspace tables.
    """

    def __init__(self, store: Store) -> None:
        self.store = store

    # -- profile -----------------------------------------------------------------------------------

    def profile(self, user_id: str) -> Profile:
        """The user's profile, or the defaults (UTC, 9–17, Monday to Friday) when none is stored."""
        with self.store.session() as session:  # a prepared Core SELECT: read on every turn's context
            row = session.execute(_PROFILE, {"b_user": user_id}).one_or_none()
            if row is None:
                return Profile()
            return Profile(
                row.who_i_am,
                row.how_i_work,
                row.timezone,
                row.work_start_hour,
                row.work_end_hour,
                tuple(row.work_days or ()),
            )

    def set_profile(self, user_id: str, **fields: Any) -> Profile:
        """Create or change the user's profile (fields of :class:`Profile`); returns the new profile."""
        current = self.profile(user_id)
        merged = {f.name: getattr(current, f.name) for f in dataclasses.fields(Profile)}
        unknown = set(fields) - set(merged)
        if unknown:
            raise InputError(f"unknown profile fields {sorted(unknown)}; use {', '.join(merged)}")
        merged.update(fields)
        try:
            ZoneInfo(merged["timezone"])
        except (ZoneInfoNotFoundError, ValueError):
            zone = merged["timezone"]
            raise InputError(f"unknown time zone {zone!r}; use an IANA name such as Europe/Lisbon") from None
        start, end = merged["work_start_hour"], merged["work_end_hour"]
        if not (0 <= start < end <= 24):
            raise InputError(f"working hours {start}-{end} are not valid; use 0 <= start < end <= 24")
        merged["work_days"] = list(merged["work_days"])
        with self.store.session(write=True) as session:
            row = session.get(UserProfile, user_id)
            if row is None:
                session.add(UserProfile(user_id=user_id, updated_at=utcnow(), **merged))
            else:
                for key, value in merged.items():
                    setattr(row, key, value)
                row.updated_at = utcnow()
        touch(self.store, user_id)  # working hours and the time zone show in cached contexts
        return self.profile(user_id)

    # -- lookups ------------------------------------------------------------------------------------

    @staticmethod
    def _task(session: Session, user_id: str, task_id: str) -> Task:
        row = session.scalars(
            sa.select(Task).where(Task.id == task_id, Task.user_id == user_id, Task.deleted_at.is_(None))
        ).one_or_none()
        if row is None:
            raise WorkspaceNotFound("task", task_id)
        return row

    @staticmethod
    def _project(session: Session, user_id: str, project_id: str) -> Project:
        row = session.scalars(
            sa.select(Project).where(Project.id == project_id, Project.user_id == user_id)
        ).one_or_none()
        if row is None:
            raise WorkspaceNotFound("project", project_id)
        return row

    @staticmethod
    def _project_names(session: Session, user_id: str, ids: Iterable[str | None]) -> dict[str, str]:
        wanted = {i for i in ids if i}
        if not wanted:
            return {}
        rows = session.execute(
            sa.select(Project.id, Project.name).where(Project.user_id == user_id, Project.id.in_(wanted))
        )
        return {pid: name for pid, name in rows}

    @staticmethod
    def _subtask_counts(session: Session, user_id: str, ids: Iterable[str]) -> dict[str, int]:
        wanted = list(ids)
        if not wanted:
            return {}
        rows = session.execute(
            sa.select(Task.parent_task_id, sa.func.count())
            .where(Task.user_id == user_id, Task.parent_task_id.in_(wanted), Task.deleted_at.is_(None))
            .group_by(Task.parent_task_id)
        )
        return {pid: n for pid, n in rows if pid is not None}

    def _stats(self, session: Session, user_id: str, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Task statistics and drill-down hints for the projects ``ids``."""
        if not ids:
            return {}
        done = sa.func.sum(sa.case((Task.status == "done", 1), else_=0))
        going = sa.func.sum(sa.case((Task.status == "in_progress", 1), else_=0))
        counts = {
            pid: (total, int(d or 0), int(g or 0))
            for pid, total, d, g in session.execute(
                sa.select(Task.project_id, sa.func.count(), done, going)
                .where(Task.user_id == user_id, Task.project_id.in_(ids), Task.deleted_at.is_(None))
                .group_by(Task.project_id)
            )
        }
        present: dict[str, set[str]] = {}
        for name, model in (("has_phases", Phase), ("has_notes", Note), ("has_brain_dumps", BrainDump)):
            present[name] = set(
                session.scalars(
                    sa.select(model.project_id)
                    .where(model.user_id == user_id, model.project_id.in_(ids))
                    .distinct()
                )
            )
        out: dict[str, dict[str, Any]] = {}
        for pid in ids:
            total, d, g = counts.get(pid, (0, 0, 0))
            out[pid] = {**task_stats(total, d, g), **{k: pid in v for k, v in present.items()}}
        return out

    # -- lists and searches (abbreviated) -----------------------------------------------------------

    def list_tasks(
        self,
        user_id: str,
        *,
        project_id: str | None = None,
        status: Sequence[str] | None = None,
        priority: Sequence[str] | None = None,
        has_date: bool | None = None,
        query: str | None = None,
        limit: int = 20,
        sort_by: str = "priority",
        now: datetime | None = None,
        offset: int = 0,
        overdue: bool | None = None,
    ) -> tuple[list[dict[str, Any]], int]:
        """Abbreviated tasks matching the filters, and how many match in all.

        ``overdue``: only tasks not done whose start has passed (``False``: none of those).

        ``sort_by``: ``"priority"`` (then start), ``"start_date"``, ``"created_at"`` (newest first), or
        ``"due"`` — what needs doing first: open tasks before done ones, those overdue or starting
        within 7 days before the rest, each group by priority, then start date. ``offset`` skips that
        many in this order.
        """
        now = now or utcnow()
        zone = self.profile(user_id).zone
        where = [Task.user_id == user_id, Task.deleted_at.is_(None)]
        if project_id:
            where.append(Task.project_id == project_id)
        if status:
            where.append(Task.status.in_(list(status)))
        if priority:
            where.append(Task.priority.in_(list(priority)))
        if has_date is True:
            where.append(Task.start_at.is_not(None))
        elif has_date is False:
            where.append(Task.start_at.is_(None))
        if overdue is not None:  # as ``is_overdue`` says: started before now and not done
            late = sa.and_(Task.start_at.is_not(None), Task.start_at < now, Task.status != "done")
            where.append(late if overdue else sa.not_(late))
        words = _words(query)
        if words:
            where.append(_matches(words, (Task.title, Task.description)))
        if sort_by == "start_date":
            order: list[Any] = [Task.start_at.asc().nulls_last(), _PRIORITY_RANK.desc()]
        elif sort_by == "created_at":
            order = [Task.created_at.desc()]
        elif sort_by == "due":
            soon = sa.case((sa.and_(Task.start_at.is_not(None), Task.start_at < now + _DUE_SOON), 0), else_=1)
            finished = sa.case((Task.status == "done", 1), else_=0)
            order = [finished, soon, _PRIORITY_RANK.desc(), Task.start_at.asc().nulls_last()]
        else:
            order = [_PRIORITY_RANK.desc(), Task.start_at.asc().nulls_last()]
        if words:  # tasks whose title has every word come first
            order.insert(0, sa.case((_matches(words, (Task.title,)), 1), else_=0).desc())
        with self.store.session() as session:
            total = session.scalar(sa.select(sa.func.count()).select_from(Task).where(*where)) or 0
            rows = list(
                session.scalars(
                    sa.select(Task)
                    .where(*where)
                    .order_by(*order, Task.id)
                    .offset(max(0, offset))
                    .limit(limit)
                )
            )
            names = self._project_names(session, user_id, (r.project_id for r in rows))
            subtasks = self._subtask_counts(session, user_id, (r.id for r in rows))
        tasks = [
            abbreviated_task(
                r,
                zone,
                now=now,
                project_name=names.get(r.project_id or ""),
                subtask_count=subtasks.get(r.id, 0),
            )
            for r in rows
        ]
        return tasks, total

    def search_projects(
        self,
        user_id: str,
        *,
        query: str | None = None,
        status: str | None = None,
        has_active_tasks: bool | None = None,
        limit: int = 10,
        offset: int = 0,
    ) -> tuple[list[dict[str, Any]], int]:
        """Abbreviated projects matching the query (name, description, summary, tags).

        Name matches first, then active, paused, completed, archived; the most recently changed first.
        """
        where = [Project.user_id == user_id]
        words = _words(query)
        if words:
            fields = (Project.name, Project.slug, Project.description, Project.executive_summary)
            where.append(_matches(words, (*fields, sa.cast(Project.tags, sa.Text))))
        if status:
            where.append(Project.status == status)
        if has_active_tasks is not None:
            open_task = (
                sa.select(Task.id)
                .where(
                    Task.user_id == user_id,
                    Task.project_id == Project.id,
                    Task.deleted_at.is_(None),
                    Task.status != "done",
                )
                .exists()
            )
            where.append(open_task if has_active_tasks else ~open_task)
        by_name = sa.case((_matches(words, (Project.name,)), 1), else_=0) if words else sa.literal(0)
        with self.store.session() as session:
            total = session.scalar(sa.select(sa.func.count()).select_from(Project).where(*where)) or 0
            rows = list(
                session.scalars(
                    sa.select(Project)
                    .where(*where)
                    .order_by(by_name.desc(), _PROJECT_RANK, Project.updated_at.desc(), Project.id)
                    .offset(max(0, offset))
                    .limit(limit)
                )
            )
            stats = self._stats(session, user_id, [r.id for r in rows])
        projects = []
        for row in rows:
            s = stats[row.id]
            hints = {k: s.pop(k) for k in ("has_phases", "has_notes", "has_brain_dumps")}
            projects.append(abbreviated_project(row, s, hints))
        return projects, total

    def search_notes(
        self,
        user_id: str,
        *,
        query: str | None = None,
        project_id: str | None = None,
        category: str | None = None,
        limit: int = 10,
        offset: int = 0,
    ) -> tuple[list[dict[str, Any]], int]:
        """Abbreviated notes matching the query (title, content, tags), newest first."""
        where = [Note.user_id == user_id]
        words = _words(query)
        if words:
            where.append(_matches(words, (Note.title, Note.content, sa.cast(Note.tags, sa.Text))))
        if project_id:
            where.append(Note.project_id == project_id)
        by_title = sa.case((_matches(words, (Note.title,)), 1), else_=0) if words else sa.literal(0)
        if category:
            where.append(sa.func.lower(Note.category) == category.strip().lower())
        with self.store.session() as session:
            total = session.scalar(sa.select(sa.func.count()).select_from(Note).where(*where)) or 0
            rows = list(
                session.scalars(
                    sa.select(Note)
                    .where(*where)
                    .order_by(by_title.desc(), Note.created_at.desc(), Note.id)
                    .offset(max(0, offset))
                    .limit(limit)
                )
            )
            names = self._project_names(session, user_id, (r.project_id for r in rows))
        return [abbreviated_note(r, project_name=names.get(r.project_id or "")) for r in rows], total

    # -- details (complete) ---------------------------------------------------------------------------

    def task_details(
        self,
        user_id: str,
        task_id: str,
        *,
        include_subtasks: bool = True,
        include_project_context: bool = False,
        now: datetime | None = None,
    ) -> dict[str, Any]:
        """The whole task: full texts, subtasks, dependencies, parent, project (and its context)."""
        now = now or utcnow()
        zone = self.profile(user_id).zone
        with self.store.session() as session:
            task = self._task(session, user_id, task_id)
            record = _full(task, zone)
            record["is_overdue"] = task.start_at is not None and task.status != "done" and task.start_at < now
            if task.project_id:
                project = self._project(session, user_id, task.project_id)
                record["project"] = {
                    "id": project.id,
                    "name": project.name,
                    "status": project.status,
                    "executive_summary": project.executive_summary,
                }
                if include_project_context:
                    record["project"]["context"] = project.context
            if task.parent_task_id:
                parent = session.get(Task, task.parent_task_id)
                if parent is not None and parent.user_id == user_id:
                    record["parent_task"] = {"id": parent.id, "title": parent.title, "status": parent.status}
            subtasks = list(
                session.scalars(
                    sa.select(Task)
                    .where(Task.user_id == user_id, Task.parent_task_id == task.id, Task.deleted_at.is_(None))
                    .order_by(Task.created_at, Task.id)
                )
            )
            record["subtask_count"] = len(subtasks)
            if include_subtasks:
                record["subtasks"] = [
                    _full(s, zone, skip=("user_id", "deleted_at", "parent_task_id")) for s in subtasks
                ]
            deps = [d for d in task.dependencies or [] if isinstance(d, str)]
            record["dependencies"] = [
                {"id": d.id, "title": d.title, "status": d.status}
                for d in session.scalars(
                    sa.select(Task).where(Task.user_id == user_id, Task.id.in_(deps)).order_by(Task.id)
                )
            ]
        return record

    def project_details(
        self,
        user_id: str,
        project_id: str,
        *,
        include_tasks: bool = False,
        include_phases: bool = True,
        include_notes: bool = False,
        include_brain_dumps: bool = False,
        now: datetime | None = None,
    ) -> dict[str, Any]:
        """The whole project: full context and statistics; phases, tasks, notes, dumps on request."""
        zone = self.profile(user_id).zone
        with self.store.session() as session:
            project = self._project(session, user_id, project_id)
            record = _full(project, zone)
            stats = self._stats(session, user_id, [project.id])[project.id]
            record.update(stats)
            if include_phases:
                record["phases"] = [
                    _full(p, zone, skip=("user_id", "project_id"))
                    for p in session.scalars(
                        sa.select(Phase)
                        .where(Phase.user_id == user_id, Phase.project_id == project.id)
                        .order_by(Phase.position, Phase.id)
                    )
                ]
            if include_notes:
                record["notes"] = [
                    abbreviated_note(n)
                    for n in session.scalars(
                        sa.select(Note)
                        .where(Note.user_id == user_id, Note.project_id == project.id)
                        .order_by(Note.created_at.desc(), Note.id)
                        .limit(10)
                    )
                ]
            if include_brain_dumps:
                record["brain_dumps"] = [
                    abbreviated_brain_dump(b)
                    for b in session.scalars(
                        sa.select(BrainDump)
                        .where(BrainDump.user_id == user_id, BrainDump.project_id == project.id)
                        .order_by(BrainDump.created_at.desc(), BrainDump.id)
                        .limit(5)
                    )
                ]
        if include_tasks:  # abbreviated even here (seed 001): the open ones first
            record["tasks"], _ = self.list_tasks(user_id, project_id=project_id, limit=20, now=now)
        return record

    def note_details(self, user_id: str, note_id: str) -> dict[str, Any]:
        """The whole note, with its project's name."""
        zone = self.profile(user_id).zone
        with self.store.session() as session:
            note = session.scalars(
                sa.select(Note).where(Note.id == note_id, Note.user_id == user_id)
            ).one_or_none()
            if note is None:
                raise WorkspaceNotFound("note", note_id)
            record = _full(note, zone)
            names = self._project_names(session, user_id, [note.project_id])
        if note.project_id in names:
            record["project_name"] = names[note.project_id]
        return record


def check_choice(field: str, value: Any, allowed: Sequence[str]) -> None:
    """Refuse ``value`` unless it is one of ``allowed`` (the message lists them)."""
    if value not in allowed:
        raise InputError(f"{field} {value!r} is not valid; use one of {', '.join(allowed)}")
