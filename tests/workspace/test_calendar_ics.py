"""The workspace calendar's ICS export and import (RFC 5545): round trips, updates, refusals."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, timedelta
from typing import Any

import pytest
import sqlalchemy as sa

from tests.workspace.calendar_support import LISBON, NEW_YORK, add_task, at, set_zone
from tierwise.errors import InputError
from tierwise.store import NotFoundError, Store
from tierwise.workspace.calendar import LocalCalendar, Occurrence, export_ics, import_ics
from tierwise.workspace.models import CalendarEvent


@pytest.fixture
def mem_store() -> Iterator[Store]:
    opened = Store.open("sqlite://")
    yield opened
    opened.close()


def comparable(occurrences: list[Occurrence]) -> list[tuple[Any, ...]]:
    return [
        (
            o.uid,
            o.summary,
            o.start,
            o.end,
            o.all_day,
            o.description,
            o.location,
            o.attendees,
            o.recurring,
            o.timezone,
        )
        for o in occurrences
    ]


def count_events(store: Store, user_id: str) -> int:
    with store.session() as session:
        query = sa.select(sa.func.count()).select_from(CalendarEvent).where(CalendarEvent.user_id == user_id)
        return int(session.scalar(query) or 0)


def seed(calendar: LocalCalendar, store: Store, user_id: str) -> None:
    task = add_task(store, user_id, "task_linked000001")
    start = at(LISBON, 2025, 3, 17, 9, 30)
    calendar.add_event(
        user_id,
        summary="Weekly review, planning; next",
        start=start,
        end=start + timedelta(hours=1),
        timezone="Europe/Lisbon",
        rrule="FREQ=WEEKLY;BYDAY=MO;UNTIL=20250501T000000Z",
        description="Line one\nLine two",
        location="Room 1",
        attendees=["ann@example.com", {"email": "bo@example.com", "name": "Bo Li"}],
        linked_task_id=task,
    )
    calendar.add_event(
        user_id,
        summary="Offsite",
        start=date(2025, 3, 28),
        end=date(2025, 3, 30),
        timezone="America/New_York",
        all_day=True,
    )
    calendar.add_event(
        user_id, summary="Flight", start=at(UTC, 2025, 3, 20, 22), end=at(UTC, 2025, 3, 21, 6), timezone="UTC"
    )


def test_export_then_import_reproduces_the_events(mem_store: Store) -> None:
    calendar = LocalCalendar(mem_store)
    maya, omar = mem_store.create_user("maya").id, mem_store.create_user("omar").id
    seed(calendar, mem_store, maya)
    data = export_ics(mem_store, maya, name="Maya")
    text = data.decode()
    for expected in (
        "BEGIN:VCALENDAR",
        "X-WR-CALNAME:Maya",
        "DTSTART;TZID=Europe/Lisbon:20250317T093000",
        "DTSTART;VALUE=DATE:20250328",
        "DTEND;VALUE=DATE:20250330",
        "RRULE:FREQ=WEEKLY;",
        "BEGIN:VTIMEZONE",
        "X-TIERWISE-TASK-ID:task_linked000001",
        'ATTENDEE;CN="Bo Li":mailto:bo@example.com',
        "SUMMARY:Weekly review\\, planning\\; next",
        "DTSTART:20250320T220000Z",
    ):
        assert expected in text
    result = import_ics(mem_store, omar, data)
    assert (result.created, result.updated, result.skipped) == (3, 0, 0)
    assert len(result.problems) == 1
    assert result.problems[0].endswith("linked task 'task_linked000001' not found, link dropped")
    window = (at(UTC, 2025, 1, 1), at(UTC, 2026, 1, 1))
    theirs, ours = calendar.events(omar, *window), calendar.events(maya, *window)
    assert len(ours) == 9  # 7 Mondays until 1 May, the offsite, the flight
    assert comparable(theirs) == comparable(ours)
    assert [o.linked_task_id for o in theirs] == [None] * len(theirs)  # omar has no such task
    offsite = next(o for o in theirs if o.all_day)
    assert offsite.start == at(NEW_YORK, 2025, 3, 28) and offsite.end == at(NEW_YORK, 2025, 3, 30)


def test_reimport_updates_instead_of_duplicating(mem_store: Store) -> None:
    calendar = LocalCalendar(mem_store)
    maya, omar = mem_store.create_user("maya").id, mem_store.create_user("omar").id
    seed(calendar, mem_store, maya)
    data = export_ics(mem_store, maya)
    assert import_ics(mem_store, omar, data).created == 3
    changed = data.replace(b"SUMMARY:Flight", b"SUMMARY:Flight to Lisbon")
    again = import_ics(mem_store, omar, changed)
    assert (again.created, again.updated, again.skipped) == (0, 3, 0)
    assert count_events(mem_store, omar) == 3
    assert "Flight to Lisbon" in [
        o.summary for o in calendar.events(omar, at(UTC, 2025, 3, 20), at(UTC, 2025, 3, 22))
    ]
    # the task exists for maya: re-importing her own file keeps the link
    mine = import_ics(mem_store, maya, data)
    assert (mine.created, mine.updated, mine.problems) == (0, 3, [])
    assert (
        calendar.events(maya, at(UTC, 2025, 3, 17), at(UTC, 2025, 3, 18))[0].linked_task_id
        == "task_linked000001"
    )


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"hello, this is not a calendar", "not an iCalendar file: expected BEGIN:VCALENDAR"),
        ("", "not an iCalendar file: expected BEGIN:VCALENDAR"),
        (b"BEGIN:VCALENDAR\r\nthis line is broken\r\nEND:VCALENDAR\r\n", "not a valid iCalendar file"),
        (b"\xff\xfe\x00garbage", "not UTF-8"),
    ],
)
def test_garbage_is_refused_and_nothing_written(mem_store: Store, data: bytes | str, message: str) -> None:
    maya = mem_store.create_user("maya").id
    with pytest.raises(InputError, match=message):
        import_ics(mem_store, maya, data)
    assert count_events(mem_store, maya) == 0


EVENTS = """BEGIN:VCALENDAR
VERSION:2.0
PRODID:-//test//EN
BEGIN:VEVENT
UID:floating-1
SUMMARY:Dentist
DTSTART:20250303T090000
END:VEVENT
BEGIN:VEVENT
UID:allday-1
SUMMARY:Holiday
DTSTART;VALUE=DATE:20250305
END:VEVENT
BEGIN:VEVENT
UID:bad-rule
SUMMARY:Broken
DTSTART:20250303T100000Z
RRULE:FREQ=SOMETIMES
END:VEVENT
BEGIN:VEVENT
SUMMARY:No UID
DTSTART:20250304T120000Z
DURATION:PT45M
END:VEVENT
BEGIN:VEVENT
UID:nostart
SUMMARY:Nothing
END:VEVENT
END:VCALENDAR
"""


def test_floating_times_all_day_and_skipped_events(mem_store: Store) -> None:
    calendar = LocalCalendar(mem_store)
    maya, omar = mem_store.create_user("maya").id, mem_store.create_user("omar").id
    set_zone(mem_store, maya, "America/New_York")
    result = import_ics(mem_store, maya, EVENTS)
    assert (result.created, result.updated, result.skipped) == (3, 0, 2)
    assert any(p.startswith("event bad-rule: skipped, invalid RRULE") for p in result.problems)
    assert any(p.startswith("event nostart: skipped, it has no DTSTART") for p in result.problems)
    found = {o.summary: o for o in calendar.events(maya, at(UTC, 2025, 3, 1), at(UTC, 2025, 3, 10))}
    assert set(found) == {"Dentist", "Holiday", "No UID"}
    dentist = found["Dentist"]
    assert dentist.start == at(NEW_YORK, 2025, 3, 3, 9) and dentist.start.hour == 14  # profile zone
    assert dentist.end - dentist.start == timedelta(hours=1) and dentist.timezone == "America/New_York"
    holiday = found["Holiday"]
    assert (
        holiday.all_day
        and holiday.start == at(NEW_YORK, 2025, 3, 5)
        and holiday.end == at(NEW_YORK, 2025, 3, 6)
    )
    assert calendar.busy(maya, at(NEW_YORK, 2025, 3, 5), at(NEW_YORK, 2025, 3, 6)) == []
    no_uid = found["No UID"]
    assert no_uid.end - no_uid.start == timedelta(minutes=45)
    assert no_uid.uid.endswith("@import.tierwise")
    # no profile: floating time is UTC; the derived UID is stable, so a re-import updates
    import_ics(mem_store, omar, EVENTS)
    theirs = {o.summary: o for o in calendar.events(omar, at(UTC, 2025, 3, 1), at(UTC, 2025, 3, 10))}
    assert theirs["Dentist"].start == at(UTC, 2025, 3, 3, 9) and theirs["Holiday"].timezone == "UTC"
    assert theirs["No UID"].uid == no_uid.uid
    again = import_ics(mem_store, maya, EVENTS.encode())
    assert (again.created, again.updated) == (0, 3)
    assert count_events(mem_store, maya) == 3


def test_import_needs_a_user(mem_store: Store) -> None:
    with pytest.raises(NotFoundError):
        import_ics(mem_store, "nobody", EVENTS)
