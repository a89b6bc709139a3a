"""The reference workspace: profiles, projects and phases, tasks, notes, brain dumps, calendar events.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | None = None
depends_on: str | None = None

ID = sa.String(36)
TIME = sa.DateTime(timezone=True)


def _json() -> sa.JSON:
    return sa.JSON(none_as_null=True).with_variant(postgresql.JSONB(none_as_null=True), "postgresql")


def _owned(table: str, column: str, target: str, *, cascade: bool = True) -> sa.ForeignKeyConstraint:
    """``(column, user_id) → target(id, user_id)``: a row can only point at its own user's rows."""
    return sa.ForeignKeyConstraint(
        [column, "user_id"],
        [f"{target}.id", f"{target}.user_id"],
        name=f"fk_{table}_{column}_user_id_{target}",
        ondelete="CASCADE" if cascade else None,
    )


def _user(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["user_id"], ["users.id"], name=f"fk_{table}_user_id_users", ondelete="CASCADE"
    )


def _stamps() -> list[sa.Column[object]]:
    return [sa.Column("created_at", TIME, nullable=False), sa.Column("updated_at", TIME, nullable=False)]


def upgrade() -> None:
    """Create the workspace tables and their indexes."""
    op.create_table(
        "user_profiles",
        sa.Column("user_id", ID, nullable=False),
        sa.Column("who_i_am", sa.Text(), nullable=False),
        sa.Column("how_i_work", sa.Text(), nullable=False),
        sa.Column("timezone", sa.Text(), nullable=False),
        sa.Column("work_start_hour", sa.Integer(), nullable=False),
        sa.Column("work_end_hour", sa.Integer(), nullable=False),
        sa.Column("work_days", _json(), nullable=False),
        sa.Column("updated_at", TIME, nullable=False),
        _user("user_profiles"),
        sa.PrimaryKeyConstraint("user_id", name="pk_user_profiles"),
    )
    op.create_table(
        "projects",
        sa.Column("id", ID, nullable=False),
        sa.Column("user_id", ID, nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("slug", sa.Text(), nullable=False),
        sa.Column("status", sa.Text(), nullable=False),
        sa.Column("start_date", sa.Date(), nullable=True),
        sa.Column("end_date", sa.Date(), nullable=True),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("executive_summary", sa.Text(), nullable=True),
        sa.Column("tags", _json(), nullable=False),
        sa.Column("context", sa.Text(), nullable=True),
        *_stamps(),
        _user("projects"),
        sa.PrimaryKeyConstraint("id", name="pk_projects"),
        sa.UniqueConstraint("id", "user_id", name="uq_projects_id_user_id"),
        sa.UniqueConstraint("user_id", "slug", name="uq_projects_user_id_slug"),
    )
    op.create_index("ix_projects_user_id_status", "projects", ["user_id", "status"])
    op.create_index("ix_projects_user_id_updated_at", "projects", ["user_id", "updated_at"])
    op.create_table(
        "project_phases",
        sa.Column("id", ID, nullable=False),
        sa.Column("project_id", ID, nullable=False),
        sa.Column("user_id", ID, nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("start_date", sa.Date(), nullable=True),
        sa.Column("end_date", sa.Date(), nullable=True),
        _owned("project_phases", "project_id", "projects"),
        sa.PrimaryKeyConstraint("id", name="pk_project_phases"),
    )
    op.create_index("ix_project_phases_user_id_project_id", "project_phases", ["user_id", "project_id"])
    op.create_table(
        "tasks",
        sa.Column("id", ID, nullable=False),
        sa.Column("user_id", ID, nullable=False),
        sa.Column("project_id", ID, nullable=True),
        sa.Column("parent_task_id", ID, nullable=True),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("status", sa.Text(), nullable=False),
        sa.Column("priority", sa.Text(), nullable=False),
        sa.Column("start_at", TIME, nullable=True),
        sa.Column("duration_minutes", sa.Integer(), nullable=True),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("details", sa.Text(), nullable=True),
        sa.Column("task_type", sa.Text(), nullable=False),
        sa.Column("recurrence_pattern", sa.Text(), nullable=True),
        sa.Column("dependencies", _json(), nullable=False),
        sa.Column("completed_at", TIME, nullable=True),
        sa.Column("deleted_at", TIME, nullable=True),
        *_stamps(),
        _user("tasks"),
        _owned("tasks", "project_id", "projects"),
        _owned("tasks", "parent_task_id", "tasks", cascade=False),
        sa.PrimaryKeyConstraint("id", name="pk_tasks"),
        sa.UniqueConstraint("id", "user_id", name="uq_tasks_id_user_id"),
    )
    op.create_index("ix_tasks_user_id_parent_task_id", "tasks", ["user_id", "parent_task_id"])
    op.create_index("ix_tasks_user_id_project_id", "tasks", ["user_id", "project_id"])
    op.create_index("ix_tasks_user_id_start_at", "tasks", ["user_id", "start_at"])
    op.create_index("ix_tasks_user_id_status", "tasks", ["user_id", "status"])
    op.create_table(
        "notes",
        sa.Column("id", ID, nullable=False),
        sa.Column("user_id", ID, nullable=False),
        sa.Column("project_id", ID, nullable=True),
        sa.Column("title", sa.Text(), nullable=True),
        sa.Column("category", sa.Text(), nullable=True),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("tags", _json(), nullable=False),
        *_stamps(),
        _user("notes"),
        _owned("notes", "project_id", "projects"),
        sa.PrimaryKeyConstraint("id", name="pk_notes"),
    )
    op.create_index("ix_notes_user_id_created_at", "notes", ["user_id", "created_at"])
    op.create_index("ix_notes_user_id_project_id", "notes", ["user_id", "project_id"])
    op.create_table(
        "brain_dumps",
        sa.Column("id", ID, nullable=False),
        sa.Column("user_id", ID, nullable=False),
        sa.Column("project_id", ID, nullable=True),
        sa.Column("title", sa.Text(), nullable=True),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("ai_summary", sa.Text(), nullable=True),
        sa.Column("status", sa.Text(), nullable=False),
        sa.Column("operations", _json(), nullable=False),
        *_stamps(),
        _user("brain_dumps"),
        _owned("brain_dumps", "project_id", "projects"),
        sa.PrimaryKeyConstraint("id", name="pk_brain_dumps"),
    )
    op.create_index("ix_brain_dumps_user_id_created_at", "brain_dumps", ["user_id", "created_at"])
    op.create_index("ix_brain_dumps_user_id_project_id", "brain_dumps", ["user_id", "project_id"])
    op.create_table(
        "calendar_events",
        sa.Column("id", ID, nullable=False),
        sa.Column("user_id", ID, nullable=False),
        sa.Column("uid", sa.Text(), nullable=False),
        sa.Column("summary", sa.Text(), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("location", sa.Text(), nullable=True),
        sa.Column("start_at", TIME, nullable=False),
        sa.Column("end_at", TIME, nullable=False),
        sa.Column("all_day", sa.Boolean(), nullable=False),
        sa.Column("timezone", sa.Text(), nullable=False),
        sa.Column("rrule", sa.Text(), nullable=True),
        sa.Column("attendees", _json(), nullable=False),
        sa.Column("linked_task_id", ID, nullable=True),
        *_stamps(),
        _user("calendar_events"),
        _owned("calendar_events", "linked_task_id", "tasks", cascade=False),
        sa.PrimaryKeyConstraint("id", name="pk_calendar_events"),
        sa.UniqueConstraint("user_id", "uid", name="uq_calendar_events_user_id_uid"),
    )
    op.create_index(
        "ix_calendar_events_user_id_linked_task_id", "calendar_events", ["user_id", "linked_task_id"]
    )
    op.create_index("ix_calendar_events_user_id_start_at", "calendar_events", ["user_id", "start_at"])


def downgrade() -> None:
    """Drop the workspace tables (children first)."""
    for table in (
        "calendar_events",
        "brain_dumps",
        "notes",
        "tasks",
        "project_phases",
        "projects",
        "user_profiles",
    ):
        op.drop_table(table)
