"""The workspace calendar: recurrence, free slots, the local calendar (SQLite and PostgreSQL).

ICS import and export: ``test_calendar_ics.py``.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from tests.workspace.calendar_support import FAR, LISBON, NEW_YORK, UTC_ZONE, add_task, at
from tierwise.errors import InputError, TierwiseError
from tierwise.store import NotFoundError, Store
from tierwise.workspace.calendar import (
    RULES,
    Calendar,
    CalendarError,
    CalendarReconnectRequired,
    LocalCalendar,
    Occurrence,
    Slot,
    check_rrule,
    expand,
    free_slots,
    recurrence,
    rule_for,
)
from tierwise.workspace.models import RECURRENCES


def local(spans: list[tuple[datetime, datetime]], zone: ZoneInfo) -> list[str]:
    return [s.astimezone(zone).strftime("%a %Y-%m-%d %H:%M") for s, _ in spans]


# --- recurrence ----------------------------------------------------------------------------------


def test_rules_cover_every_seed_recurrence() -> None:
    assert set(RULES) == set(RECURRENCES)
    assert rule_for("weekdays") == "FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR"
    assert rule_for(" Monthly ") == "FREQ=MONTHLY"
    with pytest.raises(InputError, match="unknown recurrence 'hourly': use one of daily, weekdays"):
        rule_for("hourly")


@pytest.mark.parametrize(
    ("pattern", "days"),
    [
        ("daily", [2, 3, 4, 5, 6, 7, 8, 9, 10, 11]),
        ("weekdays", [2, 3, 4, 5, 6, 9, 10, 11, 12, 13]),
        ("weekly", [2, 9, 16, 23, 30]),
        ("biweekly", [2, 16, 30]),
    ],
)
def test_patterns_expand(pattern: str, days: list[int]) -> None:
    start = at(LISBON, 2025, 6, 2, 9)  # a Monday
    spans = expand(
        start,
        start + timedelta(hours=1),
        rule_for(pattern),
        "Europe/Lisbon",
        start,
        at(LISBON, 2025, 7, 1),
        limit=10,
    )
    assert [s.astimezone(LISBON).day for s, _ in spans] == days
    assert all(s.astimezone(LISBON).hour == 9 and e - s == timedelta(hours=1) for s, e in spans)
    assert all(s.tzinfo is UTC for s, _ in spans)


def test_monthly_pattern_keeps_the_day_of_month() -> None:
    start = at(LISBON, 2025, 1, 15, 18, 30)
    spans = expand(start, start + timedelta(minutes=30), rule_for("monthly"), "Europe/Lisbon", start, FAR, 4)
    assert local(spans, LISBON) == [
        "Wed 2025-01-15 18:30",
        "Sat 2025-02-15 18:30",
        "Sat 2025-03-15 18:30",
        "Tue 2025-04-15 18:30",
    ]


@pytest.mark.parametrize(
    ("zone", "first", "utc_hours"),
    [(LISBON, (2025, 3, 24, 9), [9, 8]), (NEW_YORK, (2025, 3, 3, 9), [14, 13])],
)
def test_weekly_keeps_local_time_across_dst(
    zone: ZoneInfo, first: tuple[int, ...], utc_hours: list[int]
) -> None:
    start = at(zone, *first)
    spans = expand(start, start + timedelta(hours=1), "FREQ=WEEKLY", zone.key, start, FAR, limit=2)
    assert [s.astimezone(zone).hour for s, _ in spans] == [9, 9]
    assert [e.astimezone(zone).hour for _, e in spans] == [10, 10]
    assert [s.hour for s, _ in spans] == utc_hours  # the UTC time moved with the clocks


def test_dst_back_in_autumn() -> None:
    start = at(NEW_YORK, 2025, 10, 31, 9)  # Friday; clocks go back on Sunday 2 November
    spans = expand(start, start + timedelta(hours=1), rule_for("weekdays"), "America/New_York", start, FAR, 2)
    assert local(spans, NEW_YORK) == ["Fri 2025-10-31 09:00", "Mon 2025-11-03 09:00"]
    assert [s.hour for s, _ in spans] == [13, 14]


def test_count_and_until() -> None:
    start = at(UTC, 2025, 6, 2, 9)
    assert len(expand(start, start + timedelta(hours=1), "FREQ=DAILY;COUNT=3", "UTC", start, FAR)) == 3
    until = expand(start, start + timedelta(hours=1), "FREQ=DAILY;UNTIL=20250605T090000Z", "UTC", start, FAR)
    assert [s.day for s, _ in until] == [2, 3, 4, 5]  # UNTIL is inclusive
    by_date = expand(start, start + timedelta(hours=1), "FREQ=DAILY;UNTIL=20250604", "UTC", start, FAR)
    assert [s.day for s, _ in by_date] == [2, 3, 4]  # a date UNTIL includes that whole day
    # UNTIL in UTC against a local rule: 20250605T080000Z is 09:00 in Lisbon (summer time).
    lisbon = at(LISBON, 2025, 6, 2, 9)
    spans = expand(
        lisbon, lisbon + timedelta(hours=1), "FREQ=DAILY;UNTIL=20250605T080000Z", "Europe/Lisbon", lisbon, FAR
    )
    assert [s.astimezone(LISBON).day for s, _ in spans] == [2, 3, 4, 5]


def test_window_overlap() -> None:
    start = at(UTC, 2025, 6, 2, 9)
    end = start + timedelta(hours=2)
    window = at(UTC, 2025, 6, 4, 10)  # in the middle of the third occurrence
    spans = expand(start, end, "FREQ=DAILY", "UTC", window, window + timedelta(days=1))
    assert [(s.day, s.hour) for s, _ in spans] == [(4, 9), (5, 9)]
    at_end = expand(start, end, "FREQ=DAILY", "UTC", at(UTC, 2025, 6, 4, 11), at(UTC, 2025, 6, 5, 9))
    assert at_end == []  # ends exactly when the window starts; the next starts exactly at its end
    assert expand(start, end, None, "UTC", window, FAR) == []
    assert expand(start, end, None, "UTC", at(UTC, 2025, 6, 2, 10), FAR) == [(start, end)]


def test_unbounded_rules_are_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    start = at(UTC, 2000, 1, 1, 9)
    assert len(expand(start, start + timedelta(hours=1), "FREQ=HOURLY", "UTC", start, FAR, limit=5)) == 5
    monkeypatch.setattr(recurrence, "MAX_STEPS", 50)
    spans = expand(start, start + timedelta(minutes=30), "FREQ=HOURLY", "UTC", start, FAR)
    assert len(spans) == 50


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ("FREQ=FORTNIGHTLY", "FREQ must be one of"),
        ("FREQ=MINUTELY", "FREQ must be one of"),
        ("BYDAY=MO", "FREQ must be one of"),
        ("FREQ=WEEKLY;BYDAY=XX", "invalid 'BYDAY'"),
        ("FREQ=WEEKLY;INTERVAL=0", "INTERVAL must be a whole number"),
        ("FREQ=DAILY;COUNT=2;UNTIL=20250101T000000Z", "COUNT or UNTIL, not both"),
        ("FREQ=DAILY;UNTIL=tomorrow", "UNTIL"),
        ("FREQ=DAILY\nRDATE:20250101", "without DTSTART, RDATE or EXDATE"),
        ("FREQ", "is not NAME=VALUE"),
        ("  ", "empty"),
    ],
)
def test_invalid_rrules(rule: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        check_rrule(rule)


def test_check_rrule_normalises() -> None:
    assert check_rrule("RRULE:freq=weekly;byday=mo,we") == "FREQ=WEEKLY;BYDAY=MO,WE"


# --- free slots ----------------------------------------------------------------------------------

MONDAY = at(UTC, 2025, 6, 2)  # slots in UTC: expectations read as clock times


def starts(slots: list[Slot], zone: ZoneInfo = UTC_ZONE) -> list[str]:
    return [s.start.astimezone(zone).strftime("%a %H:%M") for s in slots]


def test_busy_time_is_carved_out() -> None:
    busy = [
        (MONDAY.replace(hour=9), MONDAY.replace(hour=10)),
        (MONDAY.replace(hour=11), MONDAY.replace(hour=16)),
    ]
    slots = free_slots(busy, MONDAY, MONDAY + timedelta(days=1), duration_minutes=60, tz="UTC", now=MONDAY)
    # two free stretches: 10-11 (one slot) and 16-17 (one slot)
    assert starts(slots) == ["Mon 10:00", "Mon 16:00"]
    assert all(s.end - s.start == timedelta(hours=1) and not s.preferred for s in slots)
    assert all(not (s.start < b_end and s.end > b_start) for s in slots for b_start, b_end in busy)


def test_working_hours_and_days() -> None:
    saturday = at(LISBON, 2025, 6, 7)
    window_end = saturday + timedelta(days=3)  # Sat, Sun, Mon
    slots = free_slots(
        [], saturday, window_end, duration_minutes=90, tz="Europe/Lisbon", now=saturday, limit=50
    )
    assert {s.start.astimezone(LISBON).date() for s in slots} == {date(2025, 6, 9)}
    assert min(s.start.astimezone(LISBON).hour for s in slots) == 9
    assert max(s.end.astimezone(LISBON) for s in slots) == at(LISBON, 2025, 6, 9, 17)
    assert all(s.start.tzinfo == LISBON for s in slots)
    weekend = free_slots(
        [],
        saturday,
        window_end,
        duration_minutes=90,
        tz="Europe/Lisbon",
        now=saturday,
        work_days=[6],
        work_start_hour=7,
        work_end_hour=12,
    )
    assert starts(weekend, LISBON)[0] == "Sat 07:00"
    assert {s.start.astimezone(LISBON).weekday() for s in weekend} == {5}
    assert all(s.end.astimezone(LISBON).hour <= 12 for s in weekend)


def test_preferred_hours_come_first() -> None:
    busy = [(MONDAY.replace(hour=12), MONDAY.replace(hour=13))]
    slots = free_slots(
        busy,
        MONDAY,
        MONDAY + timedelta(days=2),
        duration_minutes=60,
        tz="UTC",
        now=MONDAY,
        preferred_hours=[14, 15],
        limit=4,
    )
    # one slot per free stretch (Mon 9-12, Mon 13-17, Tue 9-17), preferred first; then one more to fill
    assert [(x, s.preferred) for x, s in zip(starts(slots), slots, strict=True)] == [
        ("Mon 14:00", True),
        ("Mon 14:30", True),
        ("Tue 14:00", True),
        ("Mon 09:00", False),
    ]
    plain = free_slots(
        busy, MONDAY, MONDAY + timedelta(days=2), duration_minutes=60, tz="UTC", now=MONDAY, limit=3
    )
    assert starts(plain) == ["Mon 09:00", "Mon 13:00", "Tue 09:00"]


def test_one_slot_per_free_interval_unless_few() -> None:
    days = [MONDAY + timedelta(days=d) for d in range(5)]
    # a meeting 12-13 every day: two free stretches a day, ten in the week
    busy = [(d.replace(hour=12), d.replace(hour=13)) for d in days]
    spread = free_slots(busy, MONDAY, MONDAY + timedelta(days=5), duration_minutes=30, tz="UTC", now=MONDAY)
    assert starts(spread) == [
        f"{d} {h}" for d in ("Mon", "Tue", "Wed", "Thu", "Fri") for h in ("09:00", "13:00")
    ]
    # only one free stretch: fill from it
    one_day = free_slots(
        [], MONDAY, MONDAY + timedelta(days=1), duration_minutes=30, tz="UTC", now=MONDAY, limit=3
    )
    assert starts(one_day) == ["Mon 09:00", "Mon 09:30", "Mon 10:00"]
    # three stretches, limit 5: one from each, then more from the earliest
    few = free_slots(
        [busy[0], (MONDAY.replace(hour=15), MONDAY.replace(hour=16))],
        MONDAY,
        MONDAY + timedelta(days=1),
        duration_minutes=60,
        tz="UTC",
        now=MONDAY,
        limit=5,
    )
    assert starts(few) == ["Mon 09:00", "Mon 09:30", "Mon 10:00", "Mon 13:00", "Mon 16:00"]


def test_duration_longer_than_any_gap_gives_nothing() -> None:
    busy = [(MONDAY.replace(hour=12), MONDAY.replace(hour=13))]
    end = MONDAY + timedelta(days=1)
    assert free_slots(busy, MONDAY, end, duration_minutes=240, tz="UTC", now=MONDAY) != []
    assert free_slots(busy, MONDAY, end, duration_minutes=241, tz="UTC", now=MONDAY) == []
    assert free_slots([], MONDAY, end, duration_minutes=9 * 60, tz="UTC", now=MONDAY) == []


def test_dst_day_keeps_local_working_hours() -> None:
    saturday = at(NEW_YORK, 2025, 3, 8)  # clocks go forward on Sunday 9 March at 02:00
    sunday = at(NEW_YORK, 2025, 3, 9)
    week = range(1, 8)
    two_days = free_slots(
        [],
        saturday,
        sunday + timedelta(days=1),
        duration_minutes=60,
        tz="America/New_York",
        now=saturday,
        work_days=week,
        limit=2,
    )  # one slot per day: each day's 09:00, local
    assert starts(two_days, NEW_YORK) == ["Sat 09:00", "Sun 09:00"]
    assert [s.start.astimezone(UTC).hour for s in two_days] == [14, 13]  # EST, then EDT
    whole_day = free_slots(
        [],
        sunday,
        sunday + timedelta(days=1),
        duration_minutes=60,
        tz="America/New_York",
        now=saturday,
        work_days=week,
        limit=20,
    )
    assert len(whole_day) == 15  # 09:00 … 16:00 every half hour: the short day keeps its 8 working hours
    assert whole_day[-1].end == at(NEW_YORK, 2025, 3, 9, 17)
    # early work hours inside the gap: 02:00 does not exist, the day opens at 03:00
    early = free_slots(
        [],
        at(NEW_YORK, 2025, 3, 9),
        at(NEW_YORK, 2025, 3, 10),
        duration_minutes=30,
        tz="America/New_York",
        now=saturday,
        work_days=[7],
        work_start_hour=2,
        work_end_hour=5,
        limit=1,
    )
    assert early[0].start == at(NEW_YORK, 2025, 3, 9, 3)


def test_nothing_before_now() -> None:
    now = MONDAY.replace(hour=13, minute=10)
    slots = free_slots(
        [], MONDAY, MONDAY + timedelta(days=1), duration_minutes=60, tz="UTC", now=now, limit=3
    )
    assert starts(slots) == ["Mon 13:30", "Mon 14:00", "Mon 14:30"]
    late = MONDAY.replace(hour=16, minute=1)  # the next step, 16:30, leaves 30 minutes
    assert starts(
        free_slots([], MONDAY, MONDAY + timedelta(days=1), duration_minutes=30, tz="UTC", now=late)
    ) == ["Mon 16:30"]
    assert free_slots([], MONDAY, MONDAY + timedelta(days=1), duration_minutes=60, tz="UTC", now=late) == []


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"duration_minutes": 4}, "duration_minutes must be a whole number from 5 to 1440"),
        ({"duration_minutes": 1441}, "duration_minutes must be a whole number from 5 to 1440"),
        ({"work_start_hour": 24}, "work_start_hour must be a whole number from 0 to 23"),
        ({"work_start_hour": 17, "work_end_hour": 9}, "must be after work_start_hour"),
        ({"preferred_hours": [9, 24]}, "preferred hour must be a whole number from 0 to 23"),
        ({"work_days": [0]}, "work_days entry must be a whole number from 1 to 7"),
        ({"tz": "Mars/Olympus"}, "unknown time zone 'Mars/Olympus'"),
        ({"end": MONDAY}, "end must be after start"),
        ({"start": datetime(2025, 6, 2)}, "start must be a timezone-aware datetime"),
    ],
)
def test_free_slot_validation(changes: dict[str, Any], message: str) -> None:
    arguments: dict[str, Any] = {
        "busy": [],
        "start": MONDAY,
        "end": MONDAY + timedelta(days=1),
        "duration_minutes": 30,
        "tz": "UTC",
        "now": MONDAY,
        **changes,
    }
    with pytest.raises(InputError, match=message):
        free_slots(**arguments)


# --- the local calendar (SQLite and PostgreSQL) --------------------------------------------------


@pytest.fixture
def calendar(store: Store) -> LocalCalendar:
    return LocalCalendar(store)


@pytest.fixture
def maya(store: Store) -> str:
    return store.create_user("maya").id


@pytest.fixture
def omar(store: Store) -> str:
    return store.create_user("omar").id


def test_errors_are_in_the_tree() -> None:
    error = CalendarReconnectRequired("google")
    assert isinstance(error, CalendarError) and isinstance(error, TierwiseError)
    assert "requires reconnection" in str(error) and "reconnect it in settings" in str(error)
    assert issubclass(LocalCalendar, Calendar)


def test_add_events_busy_delete(calendar: LocalCalendar, store: Store, maya: str) -> None:
    task = add_task(store, maya, "task_report0000001")
    start = at(LISBON, 2025, 6, 2, 10)
    focus = calendar.add_event(
        maya,
        summary=" Focus ",
        start=start,
        end=start + timedelta(hours=2),
        timezone="Europe/Lisbon",
        description="deep work",
        location="home",
        attendees=["ann@example.com"],
        linked_task_id=task,
    )
    assert isinstance(focus, Occurrence)
    assert (focus.summary, focus.start, focus.end, focus.recurring) == (
        "Focus",
        start,
        start + timedelta(hours=2),
        False,
    )
    assert focus.start.tzinfo is UTC and focus.timezone == "Europe/Lisbon"
    assert (focus.attendees, focus.linked_task_id, focus.uid) == (
        ("ann@example.com",),
        task,
        f"{focus.event_id}@tierwise",
    )
    assert focus.event_id.startswith("evt_")
    lunch = calendar.add_event(
        maya,
        summary="Lunch",
        start=start + timedelta(hours=1, minutes=30),
        end=start + timedelta(hours=3),
        timezone="Europe/Lisbon",
    )
    holiday = calendar.add_event(
        maya,
        summary="Holiday",
        start=date(2025, 6, 2),
        end=date(2025, 6, 3),
        timezone="Europe/Lisbon",
        all_day=True,
    )
    assert holiday.start == at(LISBON, 2025, 6, 2) and holiday.end == at(LISBON, 2025, 6, 3)
    day = (at(LISBON, 2025, 6, 2), at(LISBON, 2025, 6, 3))
    assert [o.summary for o in calendar.events(maya, *day)] == ["Holiday", "Focus", "Lunch"]
    assert [o.summary for o in calendar.events(maya, *day, limit=2)] == ["Holiday", "Focus"]
    # merged, all-day excluded, clipped to the window
    assert calendar.busy(maya, *day) == [(start, start + timedelta(hours=3))]
    assert calendar.busy(maya, start + timedelta(hours=1), day[1]) == [
        (start + timedelta(hours=1), start + timedelta(hours=3))
    ]
    assert calendar.get_event(maya, lunch.event_id) == lunch
    assert calendar.delete_event(maya, lunch.event_id) is True
    assert calendar.delete_event(maya, lunch.event_id) is False
    assert calendar.get_event(maya, lunch.event_id) is None
    assert [o.summary for o in calendar.events(maya, *day)] == ["Holiday", "Focus"]


def test_recurring_events_expand(calendar: LocalCalendar, maya: str) -> None:
    start = at(LISBON, 2025, 3, 3, 9)  # Monday, before the clocks change
    standup = calendar.add_event(
        maya,
        summary="Standup",
        start=start,
        end=start + timedelta(minutes=15),
        timezone="Europe/Lisbon",
        rrule=rule_for("weekdays"),
    )
    assert standup.recurring and standup.start == start
    calendar.add_event(
        maya, summary="Old", start=start - timedelta(days=30), end=start - timedelta(days=29), timezone="UTC"
    )
    window = (at(LISBON, 2025, 3, 28), at(LISBON, 2025, 4, 2))  # Fri … Tue, across the change
    found = calendar.events(maya, *window)
    assert [o.start.astimezone(LISBON).strftime("%a %d %H:%M") for o in found] == [
        "Fri 28 09:00",
        "Mon 31 09:00",
        "Tue 01 09:00",
    ]
    assert {o.event_id for o in found} == {standup.event_id}
    assert [o.start.hour for o in found] == [9, 8, 8]  # UTC
    assert len(calendar.events(maya, *window, limit=2)) == 2
    # a long event that started before the window still counts
    calendar.add_event(
        maya,
        summary="Trip",
        start=window[0] - timedelta(days=3),
        end=window[0] + timedelta(hours=12),
        timezone="Europe/Lisbon",
    )
    assert calendar.events(maya, *window)[0].summary == "Trip"


def test_users_cannot_see_each_others_events(calendar: LocalCalendar, maya: str, omar: str) -> None:
    start = at(UTC, 2025, 6, 2, 9)
    secret = calendar.add_event(
        maya,
        summary="Secret",
        start=start,
        end=start + timedelta(hours=1),
        timezone="UTC",
        rrule="FREQ=DAILY",
    )
    window = (start - timedelta(days=1), start + timedelta(days=7))
    assert calendar.events(omar, *window) == []
    assert calendar.busy(omar, *window) == []
    assert calendar.get_event(omar, secret.event_id) is None
    assert calendar.delete_event(omar, secret.event_id) is False
    assert len(calendar.events(maya, *window)) == 7  # still there
    # the same UID is fine for another user, not twice for one
    calendar.add_event(
        omar, summary="Mine", start=start, end=start + timedelta(hours=1), timezone="UTC", uid=secret.uid
    )
    with pytest.raises(InputError, match="exists: delete it first"):
        calendar.add_event(
            maya, summary="Again", start=start, end=start + timedelta(hours=1), timezone="UTC", uid=secret.uid
        )


def test_add_event_validation(calendar: LocalCalendar, store: Store, maya: str, omar: str) -> None:
    start = at(UTC, 2025, 6, 2, 9)
    good: dict[str, Any] = {
        "summary": "Call",
        "start": start,
        "end": start + timedelta(hours=1),
        "timezone": "UTC",
    }
    cases: list[tuple[dict[str, Any], str]] = [
        ({"end": start}, "must end after it starts"),
        ({"summary": "  "}, "needs a summary"),
        ({"timezone": "Europe/Atlantis"}, "unknown time zone 'Europe/Atlantis'"),
        ({"rrule": "FREQ=SOMETIMES"}, "invalid RRULE"),
        ({"rrule": "FREQ=DAILY;UNTIL=20200101T000000Z"}, "yields no occurrence"),
        ({"start": datetime(2025, 6, 2, 9)}, "timezone-aware"),
        ({"start": date(2025, 6, 2)}, "give dates only with all_day=True"),
        ({"attendees": "ann@example.com"}, "wrap it in a list"),
        (
            {"linked_task_id": add_task(store, omar, "task_omars0000001")},
            "no task 'task_omars0000001' to link",
        ),
    ]
    for change, message in cases:
        with pytest.raises(InputError, match=message):
            calendar.add_event(maya, **{**good, **change})
    with pytest.raises(NotFoundError):
        calendar.add_event("nobody", **good)
    with pytest.raises(InputError, match="end must be after start"):
        calendar.events(maya, start, start)
    assert calendar.events(maya, start - timedelta(days=1), FAR) == []  # nothing was written
