"""What the calendar tests share: zones, a local-time constructor, a task and a profile to link to."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from tierwise.store import Store
from tierwise.store.models import utcnow
from tierwise.workspace.models import Task, UserProfile

__all__ = ["FAR", "LISBON", "NEW_YORK", "UTC_ZONE", "add_task", "at", "set_zone"]

LISBON = ZoneInfo("Europe/Lisbon")
NEW_YORK = ZoneInfo("America/New_York")
UTC_ZONE = ZoneInfo("UTC")
FAR = datetime(2100, 1, 1, tzinfo=UTC)


def at(zone: ZoneInfo, *parts: int) -> datetime:
    return datetime(*parts, tzinfo=zone)  # type: ignore[misc]


def add_task(store: Store, user_id: str, task_id: str) -> str:
    now = utcnow()
    with store.session(write=True) as session:
        session.add(
            Task(
                id=task_id,
                user_id=user_id,
                project_id=None,
                parent_task_id=None,
                title="Write report",
                status="backlog",
                priority="medium",
                start_at=None,
                duration_minutes=None,
                description=None,
                details=None,
                task_type="one_off",
                recurrence_pattern=None,
                dependencies=[],
                completed_at=None,
                deleted_at=None,
                created_at=now,
                updated_at=now,
            )
        )
    return task_id


def set_zone(store: Store, user_id: str, zone: str) -> None:
    with store.session(write=True) as session:
        session.add(
            UserProfile(
                user_id=user_id,
                who_i_am="",
                how_i_work="",
                timezone=zone,
                work_start_hour=9,
                work_end_hour=17,
                work_days=[1, 2, 3, 4, 5],
                updated_at=utcnow(),
            )
        )
