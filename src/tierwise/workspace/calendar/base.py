"""The calendar interface every backend implements, what it returns, and how it fails.

A :class:`Calendar` answers for one user at a time (every method takes the ``user_id`` it is scoped
to) and speaks in :class:`Occurrence` objects: one per time an event happens, so a weekly meeting is
many occurrences of one event. Times are timezone-aware UTC; each occurrence also names the zone
its event was planned in, in which an all-day event's days are counted.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any, NamedTuple

from tierwise.errors import InputError, TierwiseError
from tierwise.workspace.calendar.recurrence import check_rrule, load_zone

__all__ = [
    "Calendar",
    "CalendarError",
    "CalendarReconnectRequired",
    "CheckedEvent",
    "Occurrence",
    "check_event",
    "merge_intervals",
]


@dataclass(frozen=True, slots=True)
class Occurrence:
    """One occurrence of a calendar event (a recurring event has many, with the same ``event_id``).

    Attributes:
        event_id: the event's id (``evt_…``).
        uid: the event's iCalendar UID, stable across export and import.
        summary: the event's title.
        start: when this occurrence starts (timezone-aware, UTC).
        end: when it ends (exclusive; after ``start``).
        all_day: whether it takes whole days (``start`` and ``end`` are midnights in ``timezone``).
        description: free text, if any.
        location: where, if anywhere.
        attendees: who is invited (e-mail addresses, or ``{"email", "name"}`` objects).
        linked_task_id: the task it is time set aside for, if any.
        recurring: whether the event repeats.
        timezone: the IANA zone the event was planned in (its recurrences follow that zone's clock).
    """

    event_id: str
    uid: str
    summary: str
    start: datetime
    end: datetime
    all_day: bool = False
    description: str | None = None
    location: str | None = None
    attendees: tuple[Any, ...] = ()
    linked_task_id: str | None = None
    recurring: bool = False
    timezone: str = "UTC"


class CalendarError(TierwiseError):
    """A calendar backend failed (the local calendar raises :class:`~tierwise.errors.InputError`)."""


class CalendarReconnectRequired(CalendarError):
    """A connected calendar's credentials expired or were revoked: the user must reconnect it.

    Attributes:
        calendar: the calendar's name (``"google"`` …).
    """

    def __init__(self, calendar: str) -> None:
        super().__init__(f"the calendar {calendar!r} requires reconnection: reconnect it in settings")
        self.calendar = calendar


class CheckedEvent(NamedTuple):
    """An event's fields after :func:`check_event`: ready to store."""

    summary: str
    start: datetime
    end: datetime
    timezone: str
    rrule: str | None
    attendees: list[Any]


def _as_utc(name: str, value: datetime) -> datetime:
    if not isinstance(value, datetime) or value.tzinfo is None or value.utcoffset() is None:
        raise InputError(f"{name} must be a timezone-aware datetime (got {value!r}); give it a tzinfo")
    return value.astimezone(UTC)


def check_event(
    *,
    summary: str,
    start: datetime | date,
    end: datetime | date,
    timezone: str,
    all_day: bool = False,
    rrule: str | None = None,
    attendees: Sequence[Any] = (),
) -> CheckedEvent:
    """Check a new event's fields and normalise them; an :class:`InputError` names what to fix.

    Moments become UTC. An all-day event's ``start`` and ``end`` (dates, or datetimes whose local
    day is taken) become midnights in ``timezone``; its ``end`` is exclusive, and a datetime ``end``
    after midnight covers the rest of that day.

    Example:
        >>> checked = check_event(summary=" Offsite ", start=date(2025, 5, 2), end=date(2025, 5, 3),
        ...                       timezone="Europe/Lisbon", all_day=True)
        >>> checked.summary, checked.start.isoformat(), checked.end.isoformat()
        ('Offsite', '2025-05-01T23:00:00+00:00', '2025-05-02T23:00:00+00:00')
    """
    if not isinstance(summary, str) or not summary.strip():
        raise InputError("an event needs a summary: give it a short, non-empty title")
    zone = load_zone(timezone)
    if all_day:

        def day(value: datetime | date, *, is_end: bool) -> date:
            if not isinstance(value, datetime):
                return value
            local = _as_utc("end" if is_end else "start", value).astimezone(zone)
            return local.date() + timedelta(days=1) if is_end and local.time() != time() else local.date()

        first, after = day(start, is_end=False), day(end, is_end=True)
        if after <= first:
            raise InputError(f"an all-day event must end after it starts (start {first}, end {after})")
        start_at = datetime.combine(first, time(), zone).astimezone(UTC)
        end_at = datetime.combine(after, time(), zone).astimezone(UTC)
    else:
        if not isinstance(start, datetime) or not isinstance(end, datetime):
            raise InputError("start and end must be datetimes; give dates only with all_day=True")
        start_at, end_at = _as_utc("start", start), _as_utc("end", end)
        if end_at <= start_at:
            raise InputError(
                f"an event must end after it starts (start {start.isoformat()}, end {end.isoformat()})"
            )
    if isinstance(attendees, str | bytes):
        raise InputError("attendees is a list of e-mail addresses, not one string: wrap it in a list")
    return CheckedEvent(
        summary=summary.strip(),
        start=start_at,
        end=end_at,
        timezone=zone.key,
        rrule=None if rrule is None or not rrule.strip() else check_rrule(rrule),
        attendees=list(attendees),
    )


def merge_intervals(intervals: Sequence[tuple[datetime, datetime]]) -> list[tuple[datetime, datetime]]:
    """``intervals`` sorted, with overlapping and touching ones merged; empty ones dropped.

    Example:
        >>> t = [datetime(2025, 1, 1, h, tzinfo=UTC) for h in range(8)]
        >>> merge_intervals([(t[3], t[5]), (t[1], t[2]), (t[2], t[4]), (t[6], t[6])]) == [(t[1], t[5])]
        True
    """
    merged: list[tuple[datetime, datetime]] = []
    for start, end in sorted(intervals):
        if end <= start:
            continue
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


class Calendar(ABC):
    """A user's calendar: read occurrences, add and delete events, ask when the user is busy.

    Every method is scoped by ``user_id``: an event of another user is never returned, and its id
    looks like an unknown one. Backends that need the user to sign in again raise
    :class:`CalendarReconnectRequired`.
    """

    @abstractmethod
    def events(
        self, user_id: str, start: datetime, end: datetime, *, limit: int | None = None
    ) -> list[Occurrence]:
        """The occurrences that overlap ``[start, end)``, recurrences expanded, by ``(start, summary)``.

        Args:
            user_id: whose calendar.
            start: the window's start (timezone-aware); an occurrence already running counts.
            end: the window's end (exclusive).
            limit: return at most this many (the earliest).
        """

    @abstractmethod
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
        """Add an event and return its first occurrence (see :func:`check_event` for the checks).

        Args:
            user_id: whose calendar.
            summary: the title (non-empty).
            start: when it starts (timezone-aware; a date for an all-day event).
            end: when it ends (after ``start``; exclusive).
            timezone: the IANA zone it is planned in; recurrences keep its wall-clock time.
            all_day: whether it takes whole days (it then blocks no time in :meth:`busy`).
            description: free text.
            location: where.
            attendees: e-mail addresses, or ``{"email", "name"}`` objects.
            rrule: an RFC 5545 RRULE (``"FREQ=WEEKLY;BYDAY=MO"``), or ``None`` for a one-off event.
            linked_task_id: a task of this user the event sets time aside for.
            uid: the iCalendar UID (generated unless given; unique per user).
        """

    @abstractmethod
    def get_event(self, user_id: str, event_id: str) -> Occurrence | None:
        """The event's first occurrence, or ``None`` if this user has no event with that id."""

    @abstractmethod
    def delete_event(self, user_id: str, event_id: str) -> bool:
        """Delete the event (all its occurrences); ``False`` if this user has no event with that id."""

    def busy(self, user_id: str, start: datetime, end: datetime) -> list[tuple[datetime, datetime]]:
        """When the user is busy in ``[start, end)``: merged UTC intervals, clipped to the window.

        All-day events do not block time: they mark days (a holiday, a deadline, someone's
        birthday), not hours, and a day-long trip should be entered with its hours.
        """
        window_start, window_end = _as_utc("start", start), _as_utc("end", end)
        spans = [
            (max(o.start, window_start), min(o.end, window_end))
            for o in self.events(user_id, window_start, window_end)
            if not o.all_day
        ]
        return merge_intervals(spans)
