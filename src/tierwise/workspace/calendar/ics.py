"""iCalendar (RFC 5545) export and import of the local calendar, with the :mod:`icalendar` library.

::

    export_ics(store, user_id)          calendar_events ──▶ VCALENDAR (one VEVENT per event)
    import_ics(store, user_id, data)    VCALENDAR ──▶ calendar_events, upserted by (user_id, UID)

Export writes each event in the zone it was planned in (``DTSTART;TZID=…`` with a ``VTIMEZONE``, or
``VALUE=DATE`` for an all-day event), its ``RRULE``, attendees, and two private properties:
``X-TIERWISE-TIMEZONE`` (the zone, which a date alone cannot carry) and ``X-TIERWISE-TASK-ID`` (the
linked task). Import is one transaction: a file that is not iCalendar writes nothing; an event that
cannot be read (a bad ``RRULE``, no ``DTSTART``) is skipped and named in
:attr:`ImportResult.problems`, and the others are imported. Floating times and dates are taken in
``X-TIERWISE-TIMEZONE`` if present, else the user's profile zone, else UTC. Changes to single
occurrences (``RECURRENCE-ID``) are skipped; ``EXDATE`` and ``RDATE`` are ignored (noted).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, tzinfo
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

import icalendar
import sqlalchemy as sa
from sqlalchemy.orm import Session

from tierwise.errors import InputError
from tierwise.store import models as store_models
from tierwise.store.errors import NotFoundError
from tierwise.store.models import utcnow
from tierwise.workspace.calendar.base import CheckedEvent, check_event
from tierwise.workspace.calendar.local import owns_task
from tierwise.workspace.calendar.recurrence import load_zone
from tierwise.workspace.ids import new_workspace_id
from tierwise.workspace.models import CalendarEvent, UserProfile

if TYPE_CHECKING:
    from tierwise.store import Store

__all__ = ["TASK_PROPERTY", "TIMEZONE_PROPERTY", "ImportResult", "export_ics", "import_ics"]

TASK_PROPERTY = "X-TIERWISE-TASK-ID"
"""The private property that carries an event's linked task id."""

TIMEZONE_PROPERTY = "X-TIERWISE-TIMEZONE"
"""The private property that carries the zone an event was planned in (an all-day date has none)."""

_HASHED = ("SUMMARY", "DTSTART", "DTEND", "DURATION", "RRULE", "LOCATION", "DESCRIPTION")


@dataclass(frozen=True, slots=True)
class ImportResult:
    """What :func:`import_ics` did.

    Attributes:
        created: events that were new for this user.
        updated: events whose UID this user already had (updated in place, not duplicated).
        skipped: events that could not be read (each named in ``problems``).
        problems: one line per skipped event, and per detail dropped from an imported one.
    """

    created: int = 0
    updated: int = 0
    skipped: int = 0
    problems: list[str] = field(default_factory=list)


# --- export ------------------------------------------------------------------------------------


def _address(attendee: Any) -> tuple[str, str | None] | None:
    """An attendee entry as ``(mailto: address, common name)``; ``None`` if it names no one."""
    if isinstance(attendee, dict):
        email, name = attendee.get("email"), attendee.get("name")
    else:
        email, name = attendee, None
    if not isinstance(email, str) or not email.strip():
        return None
    email = email.strip()
    if not email.lower().startswith("mailto:"):
        email = f"mailto:{email}"
    return email, name if isinstance(name, str) and name.strip() else None


def export_ics(store: Store, user_id: str, *, name: str = "tierwise") -> bytes:
    """Every event of ``user_id`` as an iCalendar file (``VCALENDAR``, one ``VEVENT`` per event).

    Args:
        store: the store whose ``calendar_events`` to read.
        user_id: whose events.
        name: the calendar's display name (``X-WR-CALNAME``).

    Example:
        >>> from tierwise.store import Store
        >>> store = Store.open("sqlite://")
        >>> export_ics(store, store.create_user("maya").id).splitlines()[0]
        b'BEGIN:VCALENDAR'
    """
    query = (
        sa.select(CalendarEvent)
        .where(CalendarEvent.user_id == user_id)
        .order_by(CalendarEvent.start_at, CalendarEvent.id)
    )
    with store.session() as session:
        rows = list(session.scalars(query))
    calendar = icalendar.Calendar()
    calendar.add("prodid", "-//tierwise//calendar//EN")
    calendar.add("version", "2.0")
    calendar.add("calscale", "GREGORIAN")
    calendar.add("x-wr-calname", name)
    for row in rows:
        zone = ZoneInfo(row.timezone)
        event = icalendar.Event()
        event.add("uid", row.uid)
        event.add("dtstamp", row.updated_at)
        event.add("created", row.created_at)
        event.add("last-modified", row.updated_at)
        event.add("summary", row.summary)
        start, end = row.start_at.astimezone(zone), row.end_at.astimezone(zone)
        if row.all_day:
            event.add("dtstart", start.date())
            event.add("dtend", end.date())
        else:
            event.add("dtstart", start)
            event.add("dtend", end)
        event.add(TIMEZONE_PROPERTY, row.timezone)
        if row.rrule:
            event.add("rrule", icalendar.vRecur.from_ical(row.rrule))
        if row.description:
            event.add("description", row.description)
        if row.location:
            event.add("location", row.location)
        for attendee in row.attendees or ():
            address = _address(attendee)
            if address is not None:
                email, common_name = address
                if common_name:
                    event.add("attendee", icalendar.vCalAddress(email), parameters={"CN": common_name})
                else:
                    event.add("attendee", icalendar.vCalAddress(email))
        if row.linked_task_id:
            event.add(TASK_PROPERTY, row.linked_task_id)
        calendar.add_component(event)
    add_timezones = getattr(calendar, "add_missing_timezones", None)  # icalendar >= 6.1
    if callable(add_timezones):
        add_timezones()
    data: bytes = calendar.to_ical()
    return data


# --- import ------------------------------------------------------------------------------------


def _zone_name(value: tzinfo | None) -> str | None:
    """The IANA name of ``value`` (zoneinfo, pytz or UTC), or ``None`` if it has none."""
    for attribute in ("key", "zone"):  # zoneinfo, pytz
        name = getattr(value, attribute, None)
        if isinstance(name, str):
            try:
                return load_zone(name).key
            except InputError:
                return None
    if value is not None and value.utcoffset(None) == timedelta(0) and value.tzname(None) in ("UTC", "Z"):
        return "UTC"
    return None


def _text(event: icalendar.Component, name: str) -> str | None:
    value = event.get(name)
    if isinstance(value, list):
        value = value[0] if value else None
    text = str(value).strip() if value is not None else ""
    return text or None


def _derived_uid(event: icalendar.Component) -> str:
    """A UID for an event that has none: the same content always gives the same UID."""
    digest = hashlib.sha256()
    for name in _HASHED:
        value = event.get(name)
        for item in value if isinstance(value, list) else [value]:
            if item is None:
                continue
            params = sorted(getattr(item, "params", {}).items())
            ical = item.to_ical() if hasattr(item, "to_ical") else str(item).encode()
            digest.update(f"{name};{params}:".encode() + (ical if isinstance(ical, bytes) else ical.encode()))
            digest.update(b"\n")
    return f"{digest.hexdigest()[:32]}@import.tierwise"


def _moment(event: icalendar.Component, name: str) -> date | datetime | None:
    if name not in event:
        return None
    value = event.decoded(name)
    if isinstance(value, list):
        value = value[0] if value else None
    if not isinstance(value, date):
        raise InputError(f"{name} {event.get(name)!r} is not a date or a date-time")
    return value


@dataclass(slots=True)
class _Read:
    """A VEVENT read into the local calendar's terms, and what was dropped on the way."""

    uid: str
    checked: CheckedEvent
    all_day: bool
    description: str | None
    location: str | None
    task_id: str | None
    notes: list[str]


def _read(event: icalendar.Component, default_zone: str) -> _Read:
    """``event`` as a :class:`_Read`; an :class:`InputError` says why it cannot be imported."""
    notes: list[str] = []
    if "RECURRENCE-ID" in event:
        raise InputError(
            "it changes one occurrence of a repeating event (RECURRENCE-ID), which is not supported"
        )
    errors = getattr(event, "errors", [])
    broken = [f"invalid {prop} ({message})" for prop, message in errors if prop in _HASHED]
    if broken:
        raise InputError("; ".join(broken))
    zone_name = default_zone
    private_zone = _text(event, TIMEZONE_PROPERTY)
    if private_zone is not None:
        try:
            zone_name = load_zone(private_zone).key
        except InputError:
            notes.append(f"unknown {TIMEZONE_PROPERTY} {private_zone!r}, used {default_zone}")
    start = _moment(event, "DTSTART")
    if start is None:
        raise InputError("it has no DTSTART")
    all_day = not isinstance(start, datetime)
    if isinstance(start, datetime):
        if start.tzinfo is None:  # floating, or a TZID nobody knows
            tzid = getattr(event.get("DTSTART"), "params", {}).get("TZID")
            if tzid:
                notes.append(f"unknown time zone {tzid!r}, times taken in {zone_name}")
            start = start.replace(tzinfo=ZoneInfo(zone_name))
        else:
            known = _zone_name(start.tzinfo)
            if known is None:
                notes.append(f"time zone {start.tzname()!r} has no IANA name, repeats follow {zone_name}")
            elif private_zone is None or known != "UTC":
                zone_name = known
    end = _moment(event, "DTEND")
    if all_day:
        if isinstance(end, datetime):
            end = end.date()
        if end is None or end <= start:
            duration = event.decoded("DURATION") if "DURATION" in event else None
            days = duration.days if isinstance(duration, timedelta) else 1
            end = start + timedelta(days=max(days, 1))
    else:
        assert isinstance(start, datetime)
        if end is not None and not isinstance(end, datetime):
            raise InputError("DTSTART is a date-time but DTEND is a date: give both the same type")
        if isinstance(end, datetime) and end.tzinfo is None:
            end = end.replace(tzinfo=start.tzinfo)
        if end is None or end == start:
            duration = event.decoded("DURATION") if "DURATION" in event else None
            end = start + (
                duration
                if isinstance(duration, timedelta) and duration > timedelta(0)
                else timedelta(hours=1)
            )
    rules = event.get("RRULE")
    if isinstance(rules, list):
        if len(rules) > 1:
            notes.append("only its first RRULE is kept")
        rules = rules[0] if rules else None
    rrule = rules.to_ical().decode() if rules is not None else None
    if rrule is not None and ("EXDATE" in event or "RDATE" in event):
        notes.append("EXDATE and RDATE are not supported: every occurrence of its RRULE is kept")
    attendees: list[Any] = []
    found = event.get("ATTENDEE")
    for attendee in found if isinstance(found, list) else [found] if found is not None else []:
        email = str(attendee).strip()
        if email.lower().startswith("mailto:"):
            email = email[len("mailto:") :]
        common_name = getattr(attendee, "params", {}).get("CN")
        if email:
            attendees.append({"email": email, "name": str(common_name)} if common_name else email)
    checked = check_event(
        summary=_text(event, "SUMMARY") or "(no title)",
        start=start,
        end=end,
        timezone=zone_name,
        all_day=all_day,
        rrule=rrule,
        attendees=attendees,
    )
    return _Read(
        uid=_text(event, "UID") or _derived_uid(event),
        checked=checked,
        all_day=all_day,
        description=_text(event, "DESCRIPTION"),
        location=_text(event, "LOCATION"),
        task_id=_text(event, TASK_PROPERTY),
        notes=notes,
    )


def _parse(data: bytes | str) -> list[icalendar.Component]:
    """The VEVENTs of ``data``, or an :class:`InputError` if it is not iCalendar."""
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise InputError(
                "the data is not an iCalendar file: it is not UTF-8 text; export it as .ics"
            ) from None
    elif isinstance(data, str):
        text = data.lstrip("\ufeff")
    else:
        raise InputError(f"give the iCalendar data as bytes or text, not {type(data).__name__}")
    if not text.lstrip().upper().startswith("BEGIN:VCALENDAR"):
        raise InputError(
            "the data is not an iCalendar file: expected BEGIN:VCALENDAR at its start; "
            "export the calendar as .ics"
        )
    try:
        calendars = icalendar.Calendar.from_ical(text.lstrip(), multiple=True)
    except (ValueError, KeyError, IndexError, TypeError) as error:
        raise InputError(
            f"the data is not a valid iCalendar file ({error}); export the calendar again as .ics"
        ) from None
    if not calendars or any(c.name != "VCALENDAR" for c in calendars):
        raise InputError("the data is not an iCalendar file: expected BEGIN:VCALENDAR … END:VCALENDAR")
    return [event for calendar in calendars for event in calendar.walk("VEVENT")]


def _profile_zone(session: Session, user_id: str) -> str:
    profile = session.get(UserProfile, user_id)
    if profile is not None:
        try:
            return load_zone(profile.timezone).key
        except InputError:
            pass
    return "UTC"


def import_ics(store: Store, user_id: str, data: bytes | str) -> ImportResult:
    """Import an iCalendar file into ``user_id``'s calendar, in one transaction.

    Events are upserted by UID: importing the same file twice updates the events instead of
    duplicating them. An event without a UID gets one derived from its content (so it too is
    updated on a re-import). A linked task (``X-TIERWISE-TASK-ID``) is kept only if this user has it.

    Args:
        store: the store to write to.
        user_id: whose calendar.
        data: the file's bytes (UTF-8) or text.

    Raises:
        InputError: ``data`` is not iCalendar (nothing is written).
        NotFoundError: there is no such user.
    """
    events = _parse(data)
    created = updated = skipped = 0
    problems: list[str] = []
    now = utcnow()
    with store.session(write=True) as session:
        if session.get(store_models.User, user_id) is None:
            raise NotFoundError("user", user_id, user_id)
        default_zone = _profile_zone(session, user_id)
        for event in events:
            label = _text(event, "UID") or repr(_text(event, "SUMMARY") or "(no title)")
            try:
                read = _read(event, default_zone)
            except InputError as error:
                skipped += 1
                problems.append(f"event {label}: skipped, {error}")
                continue
            problems.extend(f"event {read.uid}: {note}" for note in read.notes)
            task_id = read.task_id
            if task_id is not None and not owns_task(session, user_id, task_id):
                problems.append(f"event {read.uid}: linked task {task_id!r} not found, link dropped")
                task_id = None
            fields = {
                "summary": read.checked.summary,
                "description": read.description,
                "location": read.location,
                "start_at": read.checked.start,
                "end_at": read.checked.end,
                "all_day": read.all_day,
                "timezone": read.checked.timezone,
                "rrule": read.checked.rrule,
                "attendees": read.checked.attendees,
                "linked_task_id": task_id,
                "updated_at": now,
            }
            query = sa.select(CalendarEvent).where(
                CalendarEvent.user_id == user_id, CalendarEvent.uid == read.uid
            )
            row = session.scalars(query).one_or_none()
            if row is None:
                session.add(
                    CalendarEvent(
                        id=new_workspace_id("event"), user_id=user_id, uid=read.uid, created_at=now, **fields
                    )
                )
                created += 1
            else:
                for key, value in fields.items():
                    setattr(row, key, value)
                updated += 1
    return ImportResult(created=created, updated=updated, skipped=skipped, problems=problems)
