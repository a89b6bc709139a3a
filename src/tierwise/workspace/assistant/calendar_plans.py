"""The offline assistant's calendar plans: events, free time in a part of the day, and booking a task.

* **free time** (:meth:`CalendarPlans._free_slots`): a part of the day the message names ("tomorrow
  morning", "this afternoon", "tonight", "at lunch") bounds the search to its local hours
  (:data:`~tierwise.workspace.assistant.when.PARTS_OF_DAY`), clipped to the working hours, and the
  answer says which hours it searched. A part that runs past the working hours (the evening,
  tonight) is read off the calendar's events instead, since ``find_available_slots`` only proposes
  working time.
* **booking** (:meth:`CalendarPlans._schedule_task`): the block is as long as the user said, else the
  task's estimate, else an hour — and the answer says which. Before booking a given time, the
  calendar is read for that block: if it overlaps events or runs past the working hours, nothing is
  booked; the answer names what it overlaps, proposes a free slot of the needed length (or says
  there is none that week and how to find shorter blocks) and how to book it anyway ("book it anyway").
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from tierwise.providers.base import ToolCall
from tierwise.workspace.assistant.answers import render, render_error
from tierwise.workspace.assistant.intents import recognise
from tierwise.workspace.assistant.planning import PlannerBase
from tierwise.workspace.assistant.reading import Item, Step
from tierwise.workspace.calendar.slots import free_slots

__all__ = ["CalendarPlans", "length_text", "work_hours"]

_FORM = "%Y-%m-%dT%H:%M"
NOT_BOOKED = "isn't booked yet"
"""What a proposal that booked nothing says: only after one does "book it anyway" book."""


def work_hours(system: str) -> tuple[int, int]:
    """The working hours the context states (``Working hours: 09:00–17:00``), else 9 to 17."""
    match = re.search(r"[Ww]orking hours:? (\d{2}):00[–-](\d{2}):00", system)
    return (int(match[1]), int(match[2])) if match else (9, 17)


def length_text(minutes: int) -> str:
    """``30`` → ``30 min``, ``480`` → ``8 h``, ``90`` → ``1 h 30 min``."""
    hours, rest = divmod(minutes, 60)
    if not hours:
        return f"{rest} min"
    return f"{hours} h" + (f" {rest} min" if rest else "")


def _span(minutes: int) -> str:
    """``60`` → ``1-hour``, ``120`` → ``2-hour``, ``30`` → ``30-minute``."""
    return f"{minutes // 60}-hour" if minutes % 60 == 0 else f"{minutes}-minute"


def _moment(value: Any) -> datetime | None:
    try:
        return datetime.strptime(str(value)[:16], "%Y-%m-%d %H:%M")
    except ValueError:
        return None


def _day_words(day: datetime, now: datetime) -> str:
    """How to name ``day`` in a request the assistant reads back: today, tomorrow, Thursday, a date."""
    ahead = (day.date() - now.date()).days
    if ahead == 0:
        return "today"
    if ahead == 1:
        return "tomorrow"
    return day.strftime("%A") if 1 < ahead < 7 else day.strftime("%Y-%m-%d")


def _at(moment: datetime) -> str:
    return f"at {moment.hour}" if moment.minute == 0 else f"at {moment:%H:%M}"


def _slot_line(start: datetime, end: datetime) -> str:
    return f"- {start:%a %d %b %H:%M}–{end:%H:%M}"


class CalendarPlans(PlannerBase):
    """The calendar intents of the planner: ``calendar``, ``free_slots``, ``schedule_task``."""

    def _window(self, days: int = 7) -> tuple[str, str]:
        start, end = self.intent.window or (self.view.now, self.view.now + timedelta(days=days))
        return start.strftime(_FORM), end.strftime(_FORM)

    def _calendar(self) -> str | ToolCall:
        low, high = self._window()
        step = self.done("get_calendar_events")
        if step is None:
            return self.call("get_calendar_events", timeMin=low, timeMax=high, limit=30)
        if step.error:
            return render_error(step, "read your calendar")
        return render(step, self.view.now, self.intent.window_label or "the next 7 days")

    # -- free time ----------------------------------------------------------------------------------

    def _window_slots(self, minutes: int) -> Step | ToolCall:
        """This turn's ``find_available_slots`` over the asked window (7 days by default), or its call."""
        step = self.done("find_available_slots")
        if step is not None:
            return step
        low, high = self._window()
        return self.call(
            "find_available_slots",
            timeMin=low,
            timeMax=high,
            duration_minutes=minutes,
            preferred_hours=list(self.intent.preferred_hours),
        )

    def _free_slots(self) -> str | ToolCall:
        intent = self.intent
        minutes = intent.duration_minutes or 60
        if intent.part is None:
            step = self._window_slots(minutes)
            if isinstance(step, ToolCall):
                return step
            if step.error:
                return render_error(step, "find free time")
            return render(step, self.view.now, intent.window_label or "in the next 7 days")
        found = self.part_slots(minutes)
        if isinstance(found, str | ToolCall):
            return found
        slots, label, outside = found
        what = "hour" if minutes == 60 else f"{_span(minutes)} slot"
        if not slots:
            past = self.view.now >= self.part_bounds()[1]
            why = (
                f" It's already {self.view.now:%H:%M}."
                if past
                else " Try another part of the day or a shorter slot."
            )
            return f"No free {what} {label}.{why}{outside}"
        lines = [f"**Free {_span(minutes)} slots {label}**{outside}:"]
        lines += [_slot_line(s, e) for s, e in slots[:6]]
        return "\n".join(lines) + "\n\nSay “schedule <task> <day> at <time>” to book one."

    def part_bounds(self) -> tuple[datetime, datetime]:
        """The first day's part of the day asked for, as local naive times (whole hours)."""
        assert self.intent.part is not None
        _, first, stop = self.intent.part
        start, _ = self.intent.window or (self.view.now, self.view.now)
        day = datetime.combine(start.date(), datetime.min.time())
        return day + timedelta(hours=first), day + timedelta(hours=stop)

    def part_label(self) -> tuple[str, int, int, bool]:
        """How the answer names the part of the day searched, its hours, and whether they are work hours."""
        assert self.intent.part is not None
        part, first, stop = self.intent.part
        work_start, work_end = work_hours(self.view.system)
        clipped = (max(first, work_start), min(stop, work_end))
        working = part not in ("evening", "tonight") and clipped[1] - clipped[0] >= 1
        low, high = clipped if working else (first, stop)
        day = self.intent.window_label or "today"
        if day == "today":
            said = part if part == "tonight" else f"this {part}" if " " not in part else f"today {part}"
        elif part == "tonight":
            said = f"{day} night"
        elif day in ("this week", "next week", "this weekend"):
            said = f"{day}, in the {part}" if " " not in part else f"{day}, {part}"
        else:
            said = f"{day} {part}" if day == "tomorrow" else f"{day}, {part}"
        said = said.replace("lunch", "at lunch") if part == "lunch" else said
        return f"{said} ({low:02d}:00–{high:02d}:00)", low, high, working

    def part_slots(self, minutes: int) -> tuple[list[tuple[datetime, datetime]], str, str] | str | ToolCall:
        """Free ``minutes``-long slots inside the part of the day asked for, its label, and a remark."""
        label, low, high, working = self.part_label()
        start, end = self.intent.window or (self.view.now, self.view.now + timedelta(days=7))
        one_day = end - start <= timedelta(days=1)
        day = datetime.combine(start.date(), datetime.min.time())
        if working:
            bounds = (day + timedelta(hours=low), day + timedelta(hours=high)) if one_day else (start, end)
            step = self.done("find_available_slots")
            if step is None:
                return self.call(
                    "find_available_slots",
                    timeMin=bounds[0].strftime(_FORM),
                    timeMax=bounds[1].strftime(_FORM),
                    duration_minutes=minutes,
                    preferred_hours=list(self.intent.preferred_hours),
                )
            if step.error:
                return render_error(step, "find free time")
            slots = []
            for row in (step.data or {}).get("slots") or []:
                begins, ends = _moment(row.get("start")), _moment(row.get("end"))
                midnight = datetime.combine(begins.date(), datetime.min.time()) if begins else None
                if (
                    begins
                    and ends
                    and midnight
                    and low <= begins.hour
                    and ends <= midnight + timedelta(hours=high)
                ):
                    slots.append((begins, ends))
            return sorted(slots), label, ""
        bounds = (day + timedelta(hours=low), day + timedelta(hours=high)) if one_day else (start, end)
        step = self.done("get_calendar_events")
        if step is None:
            low_text, high_text = (b.strftime(_FORM) for b in bounds)
            return self.call("get_calendar_events", timeMin=low_text, timeMax=high_text, limit=100)
        if step.error:
            return render_error(step, "read your calendar")
        busy = [
            (b.replace(tzinfo=UTC), e.replace(tzinfo=UTC))
            for b, e in (
                (_moment(r.get("start")), _moment(r.get("end")))
                for r in (step.data or {}).get("events") or []
                if isinstance(r, dict) and not r.get("is_all_day")
            )
            if b and e
        ]
        found = free_slots(
            busy,
            bounds[0].replace(tzinfo=UTC),
            bounds[1].replace(tzinfo=UTC),
            duration_minutes=minutes,
            tz="UTC",  # the events' local wall times, read as they are
            work_start_hour=low,
            work_end_hour=min(24, high),
            work_days=range(1, 8),
            now=self.view.now.replace(tzinfo=UTC),
        )
        work_start, work_end = work_hours(self.view.system)
        slots = sorted((s.start.replace(tzinfo=None), s.end.replace(tzinfo=None)) for s in found)
        return slots, label, f", outside your working hours ({work_start:02d}:00–{work_end:02d}:00)"

    # -- booking ------------------------------------------------------------------------------------

    def length(self, item: Item, asked: int | None) -> tuple[int, str, int | None] | ToolCall:
        """How long to book ``item`` for, why, and the ``duration_minutes`` to book it with.

        As asked, else its estimate (its record read first when only its title is at hand), else an
        hour (booked without a duration: ``schedule_task`` gives a task with none an hour).
        """
        if asked:
            return asked, length_text(asked), asked
        record = item.record
        if "duration_minutes" not in record:  # a title or a recap (or no estimate): its record says
            step = self.done("get_task_details", task_id=item.id)
            if step is None:
                return self.call("get_task_details", task_id=item.id, include_subtasks=False)
            record = ((step.data or {}).get("task") or {}) if not step.error else {}
        estimate = record.get("duration_minutes")
        if isinstance(estimate, int) and not isinstance(estimate, bool) and estimate > 0:
            return estimate, f"{length_text(estimate)}, its estimate", estimate
        return 60, "1 h: it has no estimate", None

    def _schedule_task(self) -> str | ToolCall:
        intent = self.intent
        if intent.slot is not None and not self.view.slots:  # no slots shown: "the second one" is a task
            self.intent = intent = replace(intent, slot=None, ordinal=intent.slot, pronoun=False)
        item = self.pick(("task",))
        if not isinstance(item, Item):
            return item
        start, asked = intent.start_time, intent.duration_minutes
        if intent.slot is not None:  # "in the second slot": a start the last answer listed
            slots, n = self.view.slots, intent.slot
            if n == 0 or n > len(slots) or n < -1:
                listed = f"{len(slots)} free slot{'s' if len(slots) != 1 else ''}"
                return f"My last answer listed {listed}; which one do you mean?"
            start = slots[n - 1 if n > 0 else -1].strftime(_FORM)
        if start is None and intent.insist:  # "book it anyway": the time the last answer did not book
            before = recognise(self.view.previous_message, self.view.now)
            proposed = NOT_BOOKED in self.view.last_answer
            if before.kind != "schedule_task" or not before.start_time or not proposed:
                return (
                    "Nothing is waiting to be booked: say the task and when, e.g. "
                    "“schedule the changelog task tomorrow at 10”."
                )
            start, asked = before.start_time, asked or before.duration_minutes
        booked = self.done("schedule_task", task_id=item.id)
        if booked is not None:  # booked with the duration meant (lists are recapped by now: not re-read)
            if booked.error:
                return render_error(booked, f"schedule {item.title}")
            given = booked.arguments.get("duration_minutes")
            said = "1 h: it has no estimate" if not isinstance(given, int) else length_text(given)
            said += ", its estimate" if isinstance(given, int) and not asked else ""
            text = render(booked, self.view.now, said)
            if intent.insist and self.past_hours(booked):
                work_start, work_end = work_hours(self.view.system)
                hours = f"{work_start:02d}:00–{work_end:02d}:00"
                text += f"\n- It runs past your working hours ({hours}), as you asked."
            return text
        sized = self.length(item, asked)
        if isinstance(sized, ToolCall):
            return sized
        minutes, said, duration = sized
        if start is None:
            return self.book_free_slot(item, minutes, duration)
        begins = datetime.strptime(start, _FORM)
        ends = begins + timedelta(minutes=minutes)
        if not intent.insist:
            step = self.done("get_calendar_events", timeMin=start)
            if step is None:
                return self.call("get_calendar_events", timeMin=start, timeMax=ends.strftime(_FORM), limit=20)
            conflicts = [
                e
                for e in ((step.data or {}).get("events") or [])
                if not step.error
                if isinstance(e, dict) and not e.get("is_all_day") and e.get("linked_task_id") != item.id
            ]
            work_start, work_end = work_hours(self.view.system)
            late = (
                ends > begins.replace(hour=0, minute=0) + timedelta(hours=work_end)
                or begins.hour < work_start
            )
            if conflicts or late:
                return self.propose(item, begins, ends, said, conflicts, late)
        return self.call(
            "schedule_task",
            task_id=item.id,
            start_time=start,
            duration_minutes=duration,
            recurrence_pattern=intent.recurrence,
        )

    def past_hours(self, booked: Step) -> bool:
        """Whether the event ``booked`` made starts before or ends after the working hours."""
        event = (booked.data or {}).get("event") or {}
        begins, ends = _moment(event.get("start")), _moment(event.get("end"))
        work_start, work_end = work_hours(self.view.system)
        if begins is None or ends is None:
            return False
        return ends > begins.replace(hour=0, minute=0) + timedelta(hours=work_end) or begins.hour < work_start

    def book_free_slot(self, item: Item, minutes: int, duration: int | None) -> str | ToolCall:
        """No time given: the first free slot of the needed length in the window (and part of day) asked."""
        intent = self.intent
        if intent.part is not None:
            found = self.part_slots(minutes)
            if isinstance(found, str | ToolCall):
                return found
            slots, label, _ = found
            if not slots:
                return f"I couldn't find a free {length_text(minutes)} slot for **{item.title}** {label}."
            start = slots[0][0].strftime(_FORM)
        else:
            step = self._window_slots(minutes)
            if isinstance(step, ToolCall):
                return step
            if step.error:
                return render_error(step, "find a free slot")
            rows = [s for s in (step.data or {}).get("slots") or [] if isinstance(s, dict) and s.get("start")]
            if not rows:
                message = (step.data or {}).get("message") or "no free slot in that window"
                return f"I couldn't find a free slot for **{item.title}**: {message}"
            start = str(rows[0]["start"]).replace(" ", "T")
        return self.call(
            "schedule_task",
            task_id=item.id,
            start_time=start,
            duration_minutes=duration,
            recurrence_pattern=intent.recurrence,
        )

    def propose(
        self,
        item: Item,
        begins: datetime,
        ends: datetime,
        said: str,
        conflicts: list[dict[str, Any]],
        late: bool,
    ) -> str | ToolCall:
        """Not booked: what the block overlaps, a free slot of the needed length, how to book it anyway."""
        minutes = int((ends - begins).total_seconds() // 60)
        work_start, work_end = work_hours(self.view.system)
        day = datetime.combine(begins.date(), datetime.min.time())
        slots = self.free_after(day, minutes)
        if isinstance(slots, ToolCall):
            return slots
        problems = (
            [f"overlaps {len(conflicts)} event{'s' if len(conflicts) != 1 else ''}"] if conflicts else []
        )
        problems += [f"runs past your working hours ({work_start:02d}:00–{work_end:02d}:00)"] if late else []
        lines = [
            f"**{item.title}** {NOT_BOOKED}: {begins:%a %d %b %H:%M}–{ends:%H:%M} ({said}) "
            + " and ".join(problems)
            + "."
        ]
        for event in conflicts[:5]:
            start, end = str(event.get("start", "")), str(event.get("end", ""))
            lines.append(f"- Overlaps: {event.get('summary') or 'an event'} ({start[11:16]}–{end[11:16]})")
        if slots:
            first = slots[0]
            words = f"schedule it {_day_words(first[0], self.view.now)} {_at(first[0])}"
            others = ", ".join(f"{s:%a %d %b %H:%M}" for s, _ in slots[1:3])
            lines.append(
                f"- Free for {length_text(minutes)}: **{first[0]:%a %d %b %H:%M}–{first[1]:%H:%M}**: "
                f"say “{words}”" + (f" (also free: {others})" if others else "") + "."
            )
        else:  # a shorter block then: "find 2 hours free tomorrow" shows where one fits
            lines.append(
                f"- No free {length_text(minutes)} stretch in the week from {begins:%a %d %b}: book it in "
                f"parts (“find 2 hours free {_day_words(begins, self.view.now)}”)."
            )
        when = f"{_day_words(begins, self.view.now)} {_at(begins)}"
        lines.append(
            f"\nSay “book it anyway” to keep {begins:%a %d %b %H:%M}, or give a shorter block "
            f"(“schedule it {when} for 2 hours”)."
        )
        return "\n".join(lines)

    def free_after(self, day: datetime, minutes: int) -> list[tuple[datetime, datetime]] | ToolCall:
        """Free ``minutes``-long slots in the week from ``day`` (``find_available_slots``), earliest first."""
        low = max(day, self.view.now).strftime(_FORM)
        high = (day + timedelta(days=7)).strftime(_FORM)
        step = self.done("find_available_slots", duration_minutes=minutes, timeMin=low)
        if step is None:
            return self.call("find_available_slots", timeMin=low, timeMax=high, duration_minutes=minutes)
        slots = []
        for row in (step.data or {}).get("slots") or []:
            begins, ends = _moment(row.get("start")), _moment(row.get("end"))
            if begins and ends:
                slots.append((begins, ends))
        return sorted(slots)
