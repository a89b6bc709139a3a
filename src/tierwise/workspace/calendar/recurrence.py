"""Recurrence rules: the seed's pattern names, RRULE checks, and expansion in local wall-clock time.

An event repeats in the zone it was planned in: a weekly 09:00 meeting in ``Europe/Lisbon`` is at
09:00 Lisbon time before and after the clocks change, so its UTC time moves by an hour. Expansion
therefore runs :mod:`dateutil.rrule` on the *naive local* start, then gives each occurrence its zone
(:mod:`zoneinfo`) and converts it to UTC. A local time that does not exist (inside a spring-forward
gap) lands just after the gap; an ambiguous one (the repeated hour in autumn) takes its first meaning.

Rules repeat at most hourly (``SECONDLY`` and ``MINUTELY`` are refused), and expansion stops at the
window's end or after :data:`MAX_STEPS` occurrences, whichever comes first, so an unbounded rule
costs a bounded amount of work.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from types import MappingProxyType
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from dateutil.rrule import rrule as RRule  # type: ignore[import-untyped,unused-ignore]
from dateutil.rrule import rrulestr  # type: ignore[import-untyped,unused-ignore]

from tierwise.errors import InputError

__all__ = ["FREQUENCIES", "MAX_STEPS", "RULES", "check_rrule", "expand", "load_zone", "rule_for"]

RULES: Mapping[str, str] = MappingProxyType(
    {
        "daily": "FREQ=DAILY",
        "weekdays": "FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR",
        "weekly": "FREQ=WEEKLY",
        "biweekly": "FREQ=WEEKLY;INTERVAL=2",
        "monthly": "FREQ=MONTHLY",
    }
)
"""The seed's recurrence names (:data:`tierwise.workspace.models.RECURRENCES`) as RRULEs."""

FREQUENCIES = ("HOURLY", "DAILY", "WEEKLY", "MONTHLY", "YEARLY")
"""The ``FREQ`` values a calendar event may use."""

MAX_STEPS = 100_000
"""The most occurrences one expansion walks through (about 270 years of a daily event)."""

_EXAMPLE = "use RFC 5545 text such as 'FREQ=WEEKLY;BYDAY=MO'"


def load_zone(name: str) -> ZoneInfo:
    """The IANA time zone ``name``, or an :class:`InputError` that says what a zone name looks like.

    Example:
        >>> load_zone("Europe/Lisbon").key
        'Europe/Lisbon'
    """
    if not isinstance(name, str) or not name.strip():
        raise InputError(f"a time zone is required: use an IANA name like 'Europe/Lisbon' (got {name!r})")
    try:
        return ZoneInfo(name.strip())
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise InputError(f"unknown time zone {name!r}: use an IANA name like 'Europe/Lisbon'") from None


def rule_for(pattern: str) -> str:
    """The RRULE of one of the seed's recurrence names (``daily``, ``weekdays`` …).

    Example:
        >>> rule_for("biweekly")
        'FREQ=WEEKLY;INTERVAL=2'
    """
    rule = RULES.get(pattern.strip().lower()) if isinstance(pattern, str) else None
    if rule is None:
        raise InputError(f"unknown recurrence {pattern!r}: use one of {', '.join(RULES)}")
    return rule


def _parts(text: str) -> list[tuple[str, str]]:
    """``FREQ=WEEKLY;BYDAY=MO`` as ``[("FREQ", "WEEKLY"), ("BYDAY", "MO")]``, upper-cased, checked."""
    if not isinstance(text, str):
        raise InputError(f"an RRULE is text, got {type(text).__name__}: {_EXAMPLE}")
    body = text.strip()
    if body.upper().startswith("RRULE:"):
        body = body[len("RRULE:") :]
    if not body:
        raise InputError(f"the RRULE is empty: {_EXAMPLE}, or leave it out")
    if any(c in body for c in "\r\n:"):
        raise InputError(
            f"invalid RRULE {text!r}: give one rule without DTSTART, RDATE or EXDATE; {_EXAMPLE}"
        )
    parts: list[tuple[str, str]] = []
    for item in body.strip(";").split(";"):
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise InputError(f"invalid RRULE {text!r}: {item!r} is not NAME=VALUE; {_EXAMPLE}")
        parts.append((key.strip().upper(), value.strip().upper()))
    keys = [key for key, _ in parts]
    duplicated = sorted({key for key in keys if keys.count(key) > 1})
    if duplicated:
        raise InputError(f"invalid RRULE {text!r}: {', '.join(duplicated)} given twice; give each part once")
    values = dict(parts)
    if values.get("FREQ") not in FREQUENCIES:
        raise InputError(
            f"invalid RRULE {text!r}: FREQ must be one of {', '.join(FREQUENCIES)} "
            f"(got {values.get('FREQ')!r}); {_EXAMPLE}"
        )
    for key in ("COUNT", "INTERVAL"):
        if key in values and not (values[key].isdigit() and int(values[key]) >= 1):
            raise InputError(f"invalid RRULE {text!r}: {key} must be a whole number, 1 or more")
    if "COUNT" in values and "UNTIL" in values:
        raise InputError(f"invalid RRULE {text!r}: give COUNT or UNTIL, not both")
    return parts


def _parse_until(value: str) -> datetime:
    """An RRULE ``UNTIL``: ``YYYYMMDD``, ``YYYYMMDDTHHMMSS`` (local) or ``…Z`` (UTC, returned aware)."""
    for layout, aware in (("%Y%m%dT%H%M%SZ", True), ("%Y%m%dT%H%M%S", False), ("%Y%m%d", False)):
        try:
            parsed = datetime.strptime(value, layout)
        except ValueError:
            continue
        if layout == "%Y%m%d":  # a date: the whole day is included
            parsed = parsed.replace(hour=23, minute=59, second=59)
        return parsed.replace(tzinfo=UTC) if aware else parsed
    raise InputError(f"invalid RRULE UNTIL {value!r}: use YYYYMMDD or YYYYMMDDTHHMMSSZ (UTC)")


def _build(text: str, dtstart: datetime, zone: ZoneInfo) -> Any:
    """A dateutil rule for ``text`` from the naive local ``dtstart``; ``UNTIL`` is made local too."""
    parts = []
    for key, value in _parts(text):
        if key == "UNTIL":
            until = _parse_until(value)
            if until.tzinfo is not None:
                until = until.astimezone(zone).replace(tzinfo=None)
            value = until.strftime("%Y%m%dT%H%M%S")
        parts.append(f"{key}={value}")
    try:
        rule = rrulestr(";".join(parts), dtstart=dtstart)
    except (ValueError, TypeError, KeyError, IndexError, AttributeError) as error:
        raise InputError(f"invalid RRULE {text!r}: {error}; {_EXAMPLE}") from None
    if not isinstance(rule, RRule):  # pragma: no cover - _parts refuses what would make a set
        raise InputError(f"invalid RRULE {text!r}: give a single rule; {_EXAMPLE}")
    return rule


def check_rrule(text: str) -> str:
    """``text`` as a checked RRULE (upper case, no ``RRULE:`` prefix), or an :class:`InputError`.

    Example:
        >>> check_rrule("RRULE:freq=weekly;byday=mo")
        'FREQ=WEEKLY;BYDAY=MO'
        >>> check_rrule("FREQ=FORTNIGHTLY")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        tierwise.errors.InputError: invalid RRULE 'FREQ=FORTNIGHTLY': FREQ must be one of HOURLY, ...
    """
    _build(text, datetime(2000, 1, 3, 9), ZoneInfo("UTC"))
    return ";".join(f"{key}={value}" for key, value in _parts(text))


def _aware(name: str, value: datetime) -> datetime:
    if not isinstance(value, datetime) or value.tzinfo is None or value.utcoffset() is None:
        raise InputError(f"{name} must be a timezone-aware datetime (got {value!r}); give it a tzinfo")
    return value


def expand(
    start: datetime,
    end: datetime,
    rrule: str | None,
    tz: str,
    window_start: datetime,
    window_end: datetime,
    limit: int | None = None,
) -> list[tuple[datetime, datetime]]:
    """The occurrences of an event that overlap ``[window_start, window_end)``, as UTC ``(start, end)``.

    Args:
        start: the first occurrence's start (timezone-aware).
        end: the first occurrence's end (after ``start``).
        rrule: the RRULE text, or ``None`` for a one-off event.
        tz: the IANA zone the event was planned in; occurrences keep its local wall-clock times.
        window_start: the window's start; an occurrence that began earlier but ends later counts.
        window_end: the window's end (exclusive).
        limit: return at most this many (the earliest).

    Example:
        >>> lisbon = ZoneInfo("Europe/Lisbon")
        >>> first = datetime(2025, 3, 24, 9, tzinfo=lisbon)  # a Monday, before the clocks change
        >>> spans = expand(first, first + timedelta(hours=1), "FREQ=WEEKLY", "Europe/Lisbon",
        ...                first, datetime(2025, 4, 1, tzinfo=UTC))
        >>> [s.astimezone(lisbon).strftime("%d %H:%M %Z") for s, _ in spans]
        ['24 09:00 WET', '31 09:00 WEST']
    """
    _aware("start", start)
    _aware("end", end)
    _aware("window_start", window_start)
    _aware("window_end", window_end)
    if end <= start:
        raise InputError(
            f"an event must end after it starts (start {start.isoformat()}, end {end.isoformat()})"
        )
    if limit is not None and limit < 1:
        return []
    if rrule is None:
        overlaps = start < window_end and end > window_start
        return [(start.astimezone(UTC), end.astimezone(UTC))] if overlaps else []
    zone = load_zone(tz)
    local_start = start.astimezone(zone).replace(tzinfo=None)
    span = end.astimezone(zone).replace(tzinfo=None) - local_start  # wall-clock length
    if span <= timedelta(0):  # a short event across a clock change: keep its real length
        span = end - start
    found: list[tuple[datetime, datetime]] = []
    for steps, occurrence in enumerate(_build(rrule, local_start, zone)):
        if steps >= MAX_STEPS:
            break
        occ_start = occurrence.replace(tzinfo=zone).astimezone(UTC)
        if occ_start >= window_end:
            break
        occ_end = (occurrence + span).replace(tzinfo=zone).astimezone(UTC)
        if occ_end <= occ_start:
            occ_end = occ_start + (end - start)
        if occ_end > window_start:
            found.append((occ_start, occ_end))
            if limit is not None and len(found) >= limit:
                break
    return found
