"""Seed 001's three calendar tools, on the :class:`~tierwise.workspace.calendar.Calendar` interface.

The calendar comes from ``ToolContext.extras["calendar"]`` (any :class:`Calendar`: the local one in
the store by default, an external one when the application has it). Times the model writes without
an offset are the user's local time; times it reads are local too. A calendar that needs the user
to reconnect raises :class:`~tierwise.workspace.calendar.CalendarReconnectRequired`, which the
workspace's failure strategies turn into "tell the user to reconnect" (seed 000 §8.2).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Annotated, Any, Literal

from pydantic import Field

from tierwise.errors import InputError
from tierwise.tools.definition import Tool, ToolContext, tool
from tierwise.workspace.calendar import Calendar, LocalCalendar, Occurrence, free_slots, rule_for
from tierwise.workspace.pages import drop, fit_page, lean
from tierwise.workspace.repository import parse_moment
from tierwise.workspace.tools import _clamp, _offset, _showing, session
from tierwise.workspace.views import PREVIEW_LIMITS, preview

__all__ = ["CALENDAR_TOOLS", "abbreviated_event", "window"]

_DEFAULT_DAYS = 7
_MAX_WINDOW_DAYS = 92


def _calendar(ctx: ToolContext) -> Calendar:
    calendar = ctx.extras.get("calendar")
    if isinstance(calendar, Calendar):
        return calendar
    assert ctx.store is not None  # checked by session()
    return LocalCalendar(ctx.store)


def _fmt(moment: datetime, zone: Any, all_day: bool) -> str:
    local = moment.astimezone(zone)
    return local.date().isoformat() if all_day else local.strftime("%Y-%m-%d %H:%M")


def abbreviated_event(event: Occurrence, zone: Any) -> dict[str, Any]:
    """Seed 001's ``AbbreviatedCalendarEvent`` (plus a short description preview and the location)."""
    record: dict[str, Any] = {
        "id": event.event_id,
        "summary": event.summary or "No title",
        "start": _fmt(event.start, zone, event.all_day),
        "end": _fmt(event.end, zone, event.all_day),
        "is_all_day": event.all_day,
        "has_description": bool(event.description),
        "has_attendees": bool(event.attendees),
    }
    if event.description:
        record["description_preview"] = preview(event.description, PREVIEW_LIMITS["task_description"])
    if event.location:
        record["location"] = event.location
    if event.linked_task_id:
        record["linked_task_id"] = event.linked_task_id
    if event.recurring:
        record["is_recurring"] = True
    return record


def window(
    time_min: str | None, time_max: str | None, zone: Any, now: datetime, days: int = _DEFAULT_DAYS
) -> tuple[datetime, datetime]:
    """The window a calendar tool reads, at most 92 days.

    From ``time_min`` (default: now) to ``time_max`` (default: ``days`` on; a bare end date
    includes that whole day).
    """
    start = parse_moment(time_min, zone, "timeMin") if time_min else now
    end = parse_moment(time_max, zone, "timeMax") if time_max else start + timedelta(days=days)
    if time_max and len(time_max.strip()) == 10:  # a bare end date includes that whole day
        end += timedelta(days=1)
    if end <= start:
        raise InputError("timeMax must be after timeMin; give an ISO date-time such as 2026-11-24T18:00")
    if end - start > timedelta(days=_MAX_WINDOW_DAYS):
        raise InputError(f"the window is longer than {_MAX_WINDOW_DAYS} days; ask for a shorter range")
    return start, end


@tool(tier="calendar", result_tokens=600)
def get_calendar_events(
    ctx: ToolContext,
    timeMin: Annotated[
        str | None,
        Field(description="Default: now", json_schema_extra={"format": "date-time"}),
    ] = None,
    timeMax: Annotated[
        str | None,
        Field(description="Default: 7 days on", json_schema_extra={"format": "date-time"}),
    ] = None,
    limit: Annotated[
        int,
        Field(json_schema_extra={"maximum": 100}),
    ] = 20,
    offset: _offset() = 0,  # type: ignore[valid-type]
) -> dict[str, Any]:
    """Calendar events, abbreviated."""
    ws, user, now = session(ctx)
    zone = ws.profile(user).zone
    start, end = window(timeMin, timeMax, zone, now)
    events = _calendar(ctx).events(user, start, end)
    shown = events[offset : offset + _clamp(1, 100)(limit)]
    return fit_page(
        [lean(abbreviated_event(e, zone)) for e in shown],
        key="events",
        budget=get_calendar_events.result_tokens,
        total=len(events),
        offset=offset,
        message=_showing("events", offset, len(events), "Linked tasks: get_task_details(task_id)."),
        shrink=(drop("description_preview"), drop("location")),
        extra={"time_range": {"start": _fmt(start, zone, False), "end": _fmt(end, zone, False)}},
    )


@tool(tier="calendar", result_tokens=400)
def find_available_slots(
    ctx: ToolContext,
    timeMin: Annotated[str, Field(json_schema_extra={"format": "date-time"})],
    timeMax: Annotated[str, Field(json_schema_extra={"format": "date-time"})],
    duration_minutes: Annotated[int, Field(ge=5, le=1440)] = 60,
    preferred_hours: Annotated[
        list[Annotated[int, Field(ge=0, le=23)]] | None,
        Field(description="e.g. [9,10,11]"),
    ] = None,
) -> dict[str, Any]:
    """Free slots in working hours, preferred hours first."""
    ws, user, now = session(ctx)
    profile = ws.profile(user)
    zone = profile.zone
    start, end = window(timeMin, timeMax, zone, now)
    busy = _calendar(ctx).busy(user, start, end)
    slots = free_slots(
        busy,
        start,
        end,
        duration_minutes=duration_minutes,
        tz=profile.timezone,
        work_start_hour=profile.work_start_hour,
        work_end_hour=profile.work_end_hour,
        work_days=profile.work_days,
        preferred_hours=preferred_hours,
        now=now,
    )
    found = [
        {"start": _fmt(s.start, zone, False), "end": _fmt(s.end, zone, False)}
        | ({"preferred": True} if s.preferred else {})
        for s in slots
    ]
    hours = f"{profile.work_start_hour:02d}:00-{profile.work_end_hour:02d}:00"
    message = (
        f"Found {len(found)} free {duration_minutes}-minute slots within working hours ({hours}, "
        f"{profile.timezone}). Use schedule_task(task_id, start_time) to book one."
        if found
        else f"No free {duration_minutes}-minute slot within working hours ({hours}) in this window; "
        "try a wider window or a shorter duration."
    )
    page = fit_page(
        found,
        key="slots",
        budget=find_available_slots.result_tokens,
        total=len(found),
        offset=0,
        message=lambda shown, more: (
            message + (f" Showing the first {shown}; ask for a shorter window for others." if more else "")
        ),
    )
    page.pop("next_offset", None)
    return page


@tool(tier="calendar", result_tokens=400)
def schedule_task(
    ctx: ToolContext,
    task_id: str,
    start_time: Annotated[str, Field(json_schema_extra={"format": "date-time"})],
    duration_minutes: Annotated[int | None, Field(ge=5, le=1440)] = None,
    recurrence_pattern: Literal["daily", "weekdays", "weekly", "biweekly", "monthly"] | None = None,
) -> dict[str, Any]:
    """Put a task on the calendar (a linked event, maybe recurring); says what it overlaps.

    No time given: find_available_slots first.
    """
    ws, user, now = session(ctx)
    profile = ws.profile(user)
    task = ws.task_details(user, task_id.strip(), include_subtasks=False, now=now)
    start = parse_moment(start_time, profile.zone, "start_time")
    minutes = duration_minutes or task.get("duration_minutes") or 60
    end = start + timedelta(minutes=minutes)
    calendar = _calendar(ctx)
    conflicts = [e for e in calendar.events(user, start, end) if not e.all_day]
    description = preview(task.get("description"), 300) or ""
    assert ctx.store is not None  # checked by session()
    with ctx.store.batch():  # the event and the task's schedule change together
        event = calendar.add_event(
            user,
            summary=task["title"],
            start=start,
            end=end,
            timezone=profile.timezone,
            description=f"{description}\n\n[tierwise task {task['id']}]".strip(),
            rrule=rule_for(recurrence_pattern) if recurrence_pattern else None,
            linked_task_id=task["id"],
        )
        ws.mark_scheduled(user, task["id"], start, minutes, recurrence_pattern, now=now)
    zone = profile.zone
    repeat = f", repeating {recurrence_pattern}" if recurrence_pattern else ""
    warning = f" It overlaps {len(conflicts)} event(s): see conflicts." if conflicts else ""
    return {
        "event": abbreviated_event(event, zone),
        "task_id": task["id"],
        "conflicts": [abbreviated_event(e, zone) for e in conflicts],
        "message": f"Scheduled '{task['title']}' on {_fmt(start, zone, False)} for {minutes} min"
        f"{repeat}.{warning}",
    }


CALENDAR_TOOLS: tuple[Tool, ...] = (get_calendar_events, find_available_slots, schedule_task)
