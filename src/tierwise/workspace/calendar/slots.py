"""Free time to propose: working hours minus busy time, as a few well-spread slots.

:func:`free_slots` is pure (no database, no clock unless ``now`` is left out)::

    for each local work day in [start, end):
        working window  [work_start_hour, work_end_hour)   local time, DST-correct
      − busy intervals                                     (Calendar.busy)
      − everything before now
      = free intervals  ──▶  slot starts every step_minutes (local clock) that fit duration_minutes

Proposals are spread out: first one slot per free interval (the earliest, or the earliest in a
preferred hour), and only when there are fewer free intervals than ``limit`` more slots from the
earliest intervals. Slots that start in a preferred hour come first.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo

from tierwise.errors import InputError
from tierwise.store.models import utcnow
from tierwise.workspace.calendar.base import merge_intervals
from tierwise.workspace.calendar.recurrence import load_zone

__all__ = ["Slot", "free_slots"]


@dataclass(frozen=True, slots=True)
class Slot:
    """A free stretch to propose.

    Attributes:
        start: when it starts (timezone-aware, in the zone :func:`free_slots` was given).
        end: ``start`` plus the requested duration.
        preferred: whether it starts in one of the preferred hours.
    """

    start: datetime
    end: datetime
    preferred: bool = False


def _aware(name: str, value: datetime) -> datetime:
    if not isinstance(value, datetime) or value.tzinfo is None or value.utcoffset() is None:
        raise InputError(f"{name} must be a timezone-aware datetime (got {value!r}); give it a tzinfo")
    return value.astimezone(UTC)


def _whole(name: str, value: object, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InputError(f"{name} must be a whole number from {low} to {high} (got {value!r})")
    return value


def _local(day: datetime, minutes: int, zone: ZoneInfo) -> datetime | None:
    """The UTC moment ``minutes`` after local midnight of ``day``, or ``None`` in a DST gap."""
    wall = day + timedelta(minutes=minutes)
    moment = wall.replace(tzinfo=zone).astimezone(UTC)
    return moment if moment.astimezone(zone).replace(tzinfo=None) == wall else None


def _subtract(
    window: tuple[datetime, datetime], busy: Sequence[tuple[datetime, datetime]]
) -> list[tuple[datetime, datetime]]:
    """``window`` minus the (merged, sorted) ``busy`` intervals."""
    cursor, stop = window
    free: list[tuple[datetime, datetime]] = []
    for busy_start, busy_end in busy:
        if busy_end <= cursor:
            continue
        if busy_start >= stop:
            break
        if busy_start > cursor:
            free.append((cursor, busy_start))
        cursor = max(cursor, busy_end)
    if cursor < stop:
        free.append((cursor, stop))
    return free


def free_slots(
    busy: Iterable[tuple[datetime, datetime]],
    start: datetime,
    end: datetime,
    *,
    duration_minutes: int,
    tz: str,
    work_start_hour: int = 9,
    work_end_hour: int = 17,
    work_days: Iterable[int] = (1, 2, 3, 4, 5),
    preferred_hours: Iterable[int] | None = None,
    step_minutes: int = 30,
    limit: int = 10,
    now: datetime | None = None,
) -> list[Slot]:
    """Free slots of ``duration_minutes`` in ``[start, end)``, inside working hours, not before ``now``.

    Args:
        busy: busy intervals (timezone-aware ``(start, end)``; any order, may overlap).
        start: the search window's start (timezone-aware).
        end: the window's end (exclusive; after ``start``).
        duration_minutes: how long each slot is, 5 to 1440 minutes.
        tz: the IANA zone whose clock working hours, work days and steps follow.
        work_start_hour: when the working day starts, local hour 0-23.
        work_end_hour: when it ends, local hour 1-24 (exclusive; after ``work_start_hour``).
        work_days: ISO weekdays worked (1 = Monday … 7 = Sunday).
        preferred_hours: local hours (0-23) whose slots come first, marked ``preferred``.
        step_minutes: slots start on multiples of this many minutes after local midnight.
        limit: return at most this many.
        now: nothing is proposed before it; defaults to the current time.

    Returns:
        Preferred slots first, then the others, each group in chronological order.

    Example:
        >>> utc = ZoneInfo("UTC")
        >>> monday = datetime(2025, 6, 2, tzinfo=utc)
        >>> meeting = (monday.replace(hour=9), monday.replace(hour=12))
        >>> slots = free_slots([meeting], monday, monday + timedelta(days=1), duration_minutes=60,
        ...                    tz="UTC", now=monday)
        >>> [s.start.strftime("%H:%M") for s in slots][:3]
        ['12:00', '12:30', '13:00']
    """
    duration = _whole("duration_minutes", duration_minutes, 5, 1440)
    first_hour = _whole("work_start_hour", work_start_hour, 0, 23)
    last_hour = _whole("work_end_hour", work_end_hour, 1, 24)
    if last_hour <= first_hour:
        raise InputError(
            f"work_end_hour ({last_hour}) must be after work_start_hour ({first_hour}): the working day "
            "runs from the start hour up to, not including, the end hour"
        )
    days = {_whole("work_days entry", d, 1, 7) for d in work_days}
    preferred = (
        None if preferred_hours is None else {_whole("preferred hour", h, 0, 23) for h in preferred_hours}
    )
    step = _whole("step_minutes", step_minutes, 1, 1440)
    count = _whole("limit", limit, 1, 1000)
    zone = load_zone(tz)
    window_start, window_end = _aware("start", start), _aware("end", end)
    if window_end <= window_start:
        raise InputError(f"end must be after start (start {start.isoformat()}, end {end.isoformat()})")
    floor = max(window_start, _aware("now", now) if now is not None else utcnow())
    merged = merge_intervals([(_aware("busy start", s), _aware("busy end", e)) for s, e in busy])
    length = timedelta(minutes=duration)

    candidates: list[list[tuple[datetime, bool]]] = []  # per free interval, its slot starts in order
    day = floor.astimezone(zone).replace(tzinfo=None, hour=0, minute=0, second=0, microsecond=0)
    last_day = (window_end - timedelta(microseconds=1)).astimezone(zone).replace(tzinfo=None)
    while day.date() <= last_day.date():
        if day.isoweekday() in days:
            # A working hour inside a spring-forward gap starts when the clock jumps past it.
            opens = (day + timedelta(hours=first_hour)).replace(tzinfo=zone).astimezone(UTC)
            closes = datetime.combine(day.date() + timedelta(days=1), time(), zone).astimezone(UTC)
            if last_hour < 24:
                closes = (day + timedelta(hours=last_hour)).replace(tzinfo=zone).astimezone(UTC)
            window = (max(opens, floor), min(closes, window_end))
            for free_start, free_end in _subtract(window, merged) if window[0] < window[1] else []:
                starts: list[tuple[datetime, bool]] = []
                offset = free_start.astimezone(zone).replace(tzinfo=None) - day
                minute = -(-int(offset.total_seconds()) // (step * 60)) * step  # round up to a step
                while minute < 24 * 60:
                    slot_start = _local(day, minute, zone)
                    minute += step
                    if slot_start is None or slot_start < free_start:
                        continue
                    if slot_start + length > free_end:
                        break
                    hour = slot_start.astimezone(zone).hour
                    starts.append((slot_start, preferred is not None and hour in preferred))
                if starts:
                    candidates.append(starts)
        day += timedelta(days=1)

    # One slot per free interval (its first preferred start, else its first) …
    chosen: set[tuple[datetime, bool]] = set()
    for starts in candidates:
        chosen.add(next((c for c in starts if c[1]), starts[0]))
    # … and, when there are fewer intervals than wanted, more from the earliest intervals.
    if len(chosen) < count:
        rest = [c for starts in candidates for c in starts if c not in chosen]
        rest.sort(key=lambda c: not c[1])  # stable: preferred first, each group by interval, in order
        chosen.update(rest[: count - len(chosen)])
    ordered = sorted(chosen, key=lambda c: (not c[1], c[0]))[:count]
    return [
        Slot(start=s.astimezone(zone), end=(s + length).astimezone(zone), preferred=p) for s, p in ordered
    ]
