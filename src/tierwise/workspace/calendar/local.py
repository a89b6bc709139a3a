"""The local calendar: events in the store's ``calendar_events`` table, recurrences expanded on read.

Every query filters by ``user_id``, so another user's event id looks exactly like an unknown one.
A window query reads only the rows that can matter, on ``ix_calendar_events_user_id_start_at``:
those that start before the window ends and either end after it starts or repeat; the repeating
ones are expanded in Python (:func:`~tierwise.workspace.calendar.recurrence.expand`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from tierwise.errors import InputError
from tierwise.store import models as store_models
from tierwise.store.errors import NotFoundError
from tierwise.store.models import utcnow
from tierwise.workspace.calendar.base import Calendar, Occurrence, check_event
from tierwise.workspace.calendar.recurrence import expand
from tierwise.workspace.ids import new_workspace_id
from tierwise.workspace.models import CalendarEvent, Task

if TYPE_CHECKING:
    from tierwise.store import Store

__all__ = ["LocalCalendar", "first_occurrence", "occurrence", "owns_task"]

_FOREVER = datetime.max.replace(tzinfo=UTC)


def occurrence(row: CalendarEvent, start: datetime, end: datetime) -> Occurrence:
    """The occurrence of ``row``'s event from ``start`` to ``end``."""
    return Occurrence(
        event_id=row.id,
        uid=row.uid,
        summary=row.summary,
        start=start,
        end=end,
        all_day=row.all_day,
        description=row.description,
        location=row.location,
        attendees=tuple(row.attendees or ()),
        linked_task_id=row.linked_task_id,
        recurring=row.rrule is not None,
        timezone=row.timezone,
    )


def first_occurrence(row: CalendarEvent) -> Occurrence:
    """``row``'s first occurrence (its stored start, for a rule that yields nothing at all)."""
    spans = expand(row.start_at, row.end_at, row.rrule, row.timezone, row.start_at, _FOREVER, limit=1)
    start, end = spans[0] if spans else (row.start_at, row.end_at)
    return occurrence(row, start, end)


def owns_task(session: Session, user_id: str, task_id: str) -> bool:
    """Whether ``user_id`` has a task ``task_id`` that is not deleted."""
    query = sa.select(Task.id).where(Task.id == task_id, Task.user_id == user_id, Task.deleted_at.is_(None))
    return session.scalars(query).first() is not None


def _aware(name: str, value: datetime) -> datetime:
    if not isinstance(value, datetime) or value.tzinfo is None or value.utcoffset() is None:
        raise InputError(f"{name} must be a timezone-aware datetime (got {value!r}); give it a tzinfo")
    return value.astimezone(UTC)


def _text(value: str | None) -> str | None:
    return value.strip() or None if isinstance(value, str) else None


class LocalCalendar(Calendar):
    """A :class:`Calendar` kept in the store's database.

    Example:
        >>> from tierwise.store import Store
        >>> store = Store.open("sqlite://")
        >>> maya = store.create_user("maya").id
        >>> calendar = LocalCalendar(store)
        >>> start = datetime(2025, 6, 2, 9, tzinfo=UTC)
        >>> standup = calendar.add_event(maya, summary="Standup", start=start, end=start.replace(minute=15),
        ...                              timezone="Europe/Lisbon", rrule="FREQ=DAILY;COUNT=3")
        >>> [o.start.day for o in calendar.events(maya, start, start.replace(day=9))]
        [2, 3, 4]
    """

    def __init__(self, store: Store) -> None:
        self._store = store

    def events(
        self, user_id: str, start: datetime, end: datetime, *, limit: int | None = None
    ) -> list[Occurrence]:
        """The occurrences that overlap ``[start, end)``, recurrences expanded, by ``(start, summary)``."""
        window_start, window_end = _aware("start", start), _aware("end", end)
        if window_end <= window_start:
            raise InputError(f"end must be after start (start {start.isoformat()}, end {end.isoformat()})")
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
            raise InputError(f"limit must be a whole number, 1 or more (got {limit!r}), or None for all")
        query = (
            sa.select(CalendarEvent)
            .where(
                CalendarEvent.user_id == user_id,
                CalendarEvent.start_at < window_end,
                sa.or_(CalendarEvent.end_at > window_start, CalendarEvent.rrule.is_not(None)),
            )
            .order_by(CalendarEvent.start_at, CalendarEvent.id)
        )
        with self._store.session() as session:
            rows = list(session.scalars(query))
        found = [
            occurrence(row, occ_start, occ_end)
            for row in rows
            for occ_start, occ_end in expand(
                row.start_at, row.end_at, row.rrule, row.timezone, window_start, window_end, limit
            )
        ]
        found.sort(key=lambda o: (o.start, o.summary, o.event_id))
        return found[:limit] if limit is not None else found

    def add_event(
        self,
        user_id: str,
        *,
        summary: str,
        start: datetime | date,
        end: datetime | date,
        timezone: str,
        all_day: bool = False,
        description: str | None = None,
        location: str | None = None,
        attendees: Sequence[Any] = (),
        rrule: str | None = None,
        linked_task_id: str | None = None,
        uid: str | None = None,
    ) -> Occurrence:
        """Add an event and return its first occurrence (an :class:`InputError` names what to fix)."""
        checked = check_event(
            summary=summary,
            start=start,
            end=end,
            timezone=timezone,
            all_day=all_day,
            rrule=rrule,
            attendees=attendees,
        )
        if checked.rrule is not None and not expand(
            checked.start, checked.end, checked.rrule, checked.timezone, checked.start, _FOREVER, limit=1
        ):
            raise InputError(
                f"the RRULE {checked.rrule!r} yields no occurrence from {checked.start.isoformat()}: "
                "check its COUNT, UNTIL and BY… parts"
            )
        if uid is not None and (not isinstance(uid, str) or not uid.strip()):
            raise InputError("uid must be non-empty text, or None to generate one")
        event_id = new_workspace_id("event")
        now = utcnow()
        row = CalendarEvent(
            id=event_id,
            user_id=user_id,
            uid=uid.strip() if uid is not None else f"{event_id}@tierwise",
            summary=checked.summary,
            description=_text(description),
            location=_text(location),
            start_at=checked.start,
            end_at=checked.end,
            all_day=bool(all_day),
            timezone=checked.timezone,
            rrule=checked.rrule,
            attendees=checked.attendees,
            linked_task_id=linked_task_id,
            created_at=now,
            updated_at=now,
        )
        with self._store.session(write=True) as session:
            if session.get(store_models.User, user_id) is None:
                raise NotFoundError("user", user_id, user_id)
            if linked_task_id is not None and not owns_task(session, user_id, linked_task_id):
                raise InputError(
                    f"no task {linked_task_id!r} to link: give the id of one of your tasks, or leave it out"
                )
            taken = sa.select(CalendarEvent.id).where(
                CalendarEvent.user_id == user_id, CalendarEvent.uid == row.uid
            )
            if session.scalars(taken).first() is not None:
                raise InputError(
                    f"an event with UID {row.uid!r} exists: delete it first, or give another uid"
                )
            session.add(row)
        return first_occurrence(row)

    def get_event(self, user_id: str, event_id: str) -> Occurrence | None:
        """The event's first occurrence, or ``None`` if this user has no event with that id."""
        with self._store.session() as session:
            row = self._row(session, user_id, event_id)
        return first_occurrence(row) if row is not None else None

    def delete_event(self, user_id: str, event_id: str) -> bool:
        """Delete the event (all its occurrences); ``False`` if this user has no event with that id."""
        with self._store.session(write=True) as session:
            row = self._row(session, user_id, event_id)
            if row is None:
                return False
            session.delete(row)
        return True

    @staticmethod
    def _row(session: Session, user_id: str, event_id: str) -> CalendarEvent | None:
        query = sa.select(CalendarEvent).where(CalendarEvent.id == event_id, CalendarEvent.user_id == user_id)
        return session.scalars(query).one_or_none()
