"""The workspace calendar: one small interface, a local backend in the store, ICS in and out.

::

    Calendar (base.py)                 events · add_event · get_event · delete_event · busy
      └── LocalCalendar (local.py)     rows of calendar_events, scoped by user_id
    recurrence.py                      RULES (daily … monthly → RRULE), expand() in local wall-clock time
    slots.py                           free_slots(busy, …) → Slot: working hours − busy, well spread
    ics.py                             export_ics(store, user) → bytes · import_ics(store, user, data)

Every moment is timezone-aware (UTC in the database and in :class:`Occurrence`); every event names
the IANA zone it was planned in, whose clock its recurrences keep across DST changes.
"""

from __future__ import annotations

from tierwise.workspace.calendar.base import (
    Calendar,
    CalendarError,
    CalendarReconnectRequired,
    Occurrence,
    check_event,
    merge_intervals,
)
from tierwise.workspace.calendar.ics import ImportResult, export_ics, import_ics
from tierwise.workspace.calendar.local import LocalCalendar
from tierwise.workspace.calendar.recurrence import RULES, check_rrule, expand, load_zone, rule_for
from tierwise.workspace.calendar.slots import Slot, free_slots

__all__ = [
    "RULES",
    "Calendar",
    "CalendarError",
    "CalendarReconnectRequired",
    "ImportResult",
    "LocalCalendar",
    "Occurrence",
    "Slot",
    "check_event",
    "check_rrule",
    "expand",
    "export_ics",
    "free_slots",
    "import_ics",
    "load_zone",
    "merge_intervals",
    "rule_for",
]
