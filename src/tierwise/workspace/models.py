"""The reference assistant's tables: profile, projects and phases, tasks, notes, brain dumps, events.

They live in the store's database and schema (:class:`tierwise.store.models.Base`, migration
``0002_workspace``). Every row carries its ``user_id``; rows that point at a project or a task point at
it together with the ``user_id`` (composite foreign keys to ``(id, user_id)``), so the database itself
refuses a task in another user's project or an event linked to another user's task.

Dates that are days (a project's period, a phase's) are ``DATE``; moments (a task's start, an event)
are timezone-aware UTC timestamps, shown in the user's time zone (``UserProfile.timezone``).
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from sqlalchemy import (
    Boolean,
    Date,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Integer,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from tierwise.store.models import ID, Base

__all__ = [
    "BRAIN_DUMP_STATUSES",
    "MERGE_STRATEGIES",
    "PRIORITIES",
    "PROJECT_STATUSES",
    "RECURRENCES",
    "TASK_STATUSES",
    "TASK_TYPES",
    "BrainDump",
    "CalendarEvent",
    "Note",
    "Phase",
    "Project",
    "Task",
    "UserProfile",
]

PROJECT_STATUSES = ("active", "paused", "completed", "archived")
TASK_STATUSES = ("backlog", "in_progress", "done", "blocked")
PRIORITIES = ("low", "medium", "high")
TASK_TYPES = ("one_off", "recurring")
RECURRENCES = ("daily", "weekdays", "weekly", "biweekly", "monthly")
BRAIN_DUMP_STATUSES = ("pending", "processed", "applied")
MERGE_STRATEGIES = ("replace", "append", "prepend")


def _project_fk(column: str = "project_id") -> ForeignKeyConstraint:
    return ForeignKeyConstraint([column, "user_id"], ["projects.id", "projects.user_id"], ondelete="CASCADE")


def _task_fk(column: str) -> ForeignKeyConstraint:
    return ForeignKeyConstraint([column, "user_id"], ["tasks.id", "tasks.user_id"])


class UserProfile(Base):
    """Who the user is and how they work (seed 000's user layer), and when they work."""

    __tablename__ = "user_profiles"

    user_id: Mapped[str] = mapped_column(ID, ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    who_i_am: Mapped[str] = mapped_column(Text)
    how_i_work: Mapped[str] = mapped_column(Text)
    timezone: Mapped[str] = mapped_column(Text)  # IANA name, e.g. "Europe/Lisbon"
    work_start_hour: Mapped[int] = mapped_column(Integer)  # 0-23, local
    work_end_hour: Mapped[int] = mapped_column(Integer)  # 1-24, local, exclusive
    work_days: Mapped[list[Any]]  # ISO weekdays, 1 = Monday
    updated_at: Mapped[datetime]


class Project(Base):
    """A project: its status and period, what it is about, and its running markdown context."""

    __tablename__ = "projects"
    __table_args__ = (
        UniqueConstraint("id", "user_id"),
        UniqueConstraint("user_id", "slug"),
        Index("ix_projects_user_id_status", "user_id", "status"),
        Index("ix_projects_user_id_updated_at", "user_id", "updated_at"),
    )

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    user_id: Mapped[str] = mapped_column(ID, ForeignKey("users.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(Text)
    slug: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(Text)
    start_date: Mapped[date | None] = mapped_column(Date)
    end_date: Mapped[date | None] = mapped_column(Date)
    description: Mapped[str | None] = mapped_column(Text)
    executive_summary: Mapped[str | None] = mapped_column(Text)
    tags: Mapped[list[Any]]
    context: Mapped[str | None] = mapped_column(Text)  # markdown, grows over time
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class Phase(Base):
    """A stage of a project, in order."""

    __tablename__ = "project_phases"
    __table_args__ = (_project_fk(), Index("ix_project_phases_user_id_project_id", "user_id", "project_id"))

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    project_id: Mapped[str] = mapped_column(ID)
    user_id: Mapped[str] = mapped_column(ID)
    name: Mapped[str] = mapped_column(Text)
    description: Mapped[str | None] = mapped_column(Text)
    position: Mapped[int] = mapped_column(Integer)
    start_date: Mapped[date | None] = mapped_column(Date)
    end_date: Mapped[date | None] = mapped_column(Date)


class Task(Base):
    """A task; subtasks point at their parent, dependencies list task ids; deleting is soft."""

    __tablename__ = "tasks"
    __table_args__ = (
        UniqueConstraint("id", "user_id"),
        _project_fk(),
        _task_fk("parent_task_id"),
        Index("ix_tasks_user_id_status", "user_id", "status"),
        Index("ix_tasks_user_id_project_id", "user_id", "project_id"),
        Index("ix_tasks_user_id_parent_task_id", "user_id", "parent_task_id"),
        Index("ix_tasks_user_id_start_at", "user_id", "start_at"),
    )

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    user_id: Mapped[str] = mapped_column(ID, ForeignKey("users.id", ondelete="CASCADE"))
    project_id: Mapped[str | None] = mapped_column(ID)
    parent_task_id: Mapped[str | None] = mapped_column(ID)
    title: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(Text)
    priority: Mapped[str] = mapped_column(Text)
    start_at: Mapped[datetime | None]  # the seeds' start_date: when it is planned
    duration_minutes: Mapped[int | None] = mapped_column(Integer)
    description: Mapped[str | None] = mapped_column(Text)
    details: Mapped[str | None] = mapped_column(Text)
    task_type: Mapped[str] = mapped_column(Text)
    recurrence_pattern: Mapped[str | None] = mapped_column(Text)
    dependencies: Mapped[list[Any]]  # ids of tasks that must be done first
    completed_at: Mapped[datetime | None]
    deleted_at: Mapped[datetime | None]
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class Note(Base):
    """A note, optionally about a project."""

    __tablename__ = "notes"
    __table_args__ = (
        _project_fk(),
        Index("ix_notes_user_id_project_id", "user_id", "project_id"),
        Index("ix_notes_user_id_created_at", "user_id", "created_at"),
    )

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    user_id: Mapped[str] = mapped_column(ID, ForeignKey("users.id", ondelete="CASCADE"))
    project_id: Mapped[str | None] = mapped_column(ID)
    title: Mapped[str | None] = mapped_column(Text)
    category: Mapped[str | None] = mapped_column(Text)
    content: Mapped[str] = mapped_column(Text)
    tags: Mapped[list[Any]]
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class BrainDump(Base):
    """Unstructured thoughts as the user poured them out, their summary, and what came of them."""

    __tablename__ = "brain_dumps"
    __table_args__ = (
        _project_fk(),
        Index("ix_brain_dumps_user_id_project_id", "user_id", "project_id"),
        Index("ix_brain_dumps_user_id_created_at", "user_id", "created_at"),
    )

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    user_id: Mapped[str] = mapped_column(ID, ForeignKey("users.id", ondelete="CASCADE"))
    project_id: Mapped[str | None] = mapped_column(ID)
    title: Mapped[str | None] = mapped_column(Text)
    content: Mapped[str] = mapped_column(Text)
    ai_summary: Mapped[str | None] = mapped_column(Text)
    status: Mapped[str] = mapped_column(Text)
    operations: Mapped[list[Any]]  # what was created or changed from it: [{"op", "table", "id", …}]
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class CalendarEvent(Base):
    """An event of the local calendar (or one imported from ICS), optionally linked to a task."""

    __tablename__ = "calendar_events"
    __table_args__ = (
        _task_fk("linked_task_id"),
        UniqueConstraint("user_id", "uid"),
        Index("ix_calendar_events_user_id_start_at", "user_id", "start_at"),
        Index("ix_calendar_events_user_id_linked_task_id", "user_id", "linked_task_id"),
    )

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    user_id: Mapped[str] = mapped_column(ID, ForeignKey("users.id", ondelete="CASCADE"))
    uid: Mapped[str] = mapped_column(Text)  # iCalendar UID: stable across export and import
    summary: Mapped[str] = mapped_column(Text)
    description: Mapped[str | None] = mapped_column(Text)
    location: Mapped[str | None] = mapped_column(Text)
    start_at: Mapped[datetime]
    end_at: Mapped[datetime]
    all_day: Mapped[bool] = mapped_column(Boolean)
    timezone: Mapped[str] = mapped_column(Text)  # the zone it was planned in (recurrences follow it)
    rrule: Mapped[str | None] = mapped_column(Text)  # RFC 5545 RRULE, e.g. "FREQ=WEEKLY;BYDAY=MO"
    attendees: Mapped[list[Any]]
    linked_task_id: Mapped[str | None] = mapped_column(ID)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]
