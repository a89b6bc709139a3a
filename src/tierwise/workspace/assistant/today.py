"""The offline assistant's answer to "what should I work on today?": the day's schedule and its work.

:meth:`TodayPlans._plan_day` reads the day's events and three task lists — overdue (most important
first), starting on the day, and high priority — and answers with the day's calendar and the work
that matters most, in that order: overdue by priority (then the oldest), then what is due that day
(by time; one due earlier today is found even when more than a page of tasks is overdue), then
other high-priority work. Each task says why it is listed ("overdue since Wed 18
Nov", "due today 11:00", "high priority"); old medium-priority chores never push out overdue
high-priority work.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from tierwise.providers.base import ToolCall
from tierwise.workspace.assistant.answers import render_error
from tierwise.workspace.assistant.intents import OPEN_STATUSES
from tierwise.workspace.assistant.planning import PlannerBase, Stop

__all__ = ["TodayPlans", "day_plan"]

_OVERDUE, _DUE, _HIGH, _EVENTS = 5, 5, 3, 10
_LATEST = 5  # the newest overdue tasks read when the first page of them is not all of them
_RANK = {"high": 0, "medium": 1, "low": 2}


def _moment(value: Any) -> datetime | None:
    text = str(value or "")
    for form, size in (("%Y-%m-%d %H:%M", 16), ("%Y-%m-%d", 10)):
        try:
            return datetime.strptime(text[:size], form)
        except ValueError:
            continue
    return None


def _line(task: dict[str, Any], why: str) -> str:
    """A task bullet as the other task lists write it (``- [priority] Title · …``), with its reason."""
    parts = [f"- [{task.get('priority', '?')}] {task.get('title') or 'Untitled'}", why]
    if task.get("status") in ("blocked", "in_progress"):
        parts.append(str(task["status"]).replace("_", " "))
    if task.get("project_name"):
        parts.append(str(task["project_name"]))
    return " · ".join(parts)


def day_plan(
    day: datetime,
    now: datetime,
    label: str,
    events: list[dict[str, Any]],
    overdue: list[dict[str, Any]],
    upcoming: list[dict[str, Any]],
    high: list[dict[str, Any]],
    overdue_total: int,
) -> str:
    """The answer: the day's events, then the work in order of importance, each with its reason."""
    start, end = day, day + timedelta(days=1)
    today = label == "today"
    seen: set[str] = set()
    late: list[tuple[dict[str, Any], str]] = []
    due: list[tuple[datetime, dict[str, Any], str]] = []
    for task in [*overdue, *upcoming]:
        when = _moment(task.get("start_date"))
        key = str(task.get("id"))
        if when is None or key in seen:
            continue
        if start <= when < end:
            seen.add(key)
            clock = f" {when:%H:%M}" if len(str(task.get("start_date"))) > 10 else ""
            due.append((when, task, f"due {label}{clock}" + (" (passed)" if when < now else "")))
        elif when < start and task in overdue:
            seen.add(key)
            late.append((task, f"overdue since {when:%a %d %b}"))
    late.sort(key=lambda x: (_RANK.get(str(x[0].get("priority")), 3), str(x[0].get("start_date"))))
    due.sort(key=lambda x: x[0])
    important = []
    for task in high:
        if str(task.get("id")) in seen or task.get("priority") != "high":
            continue
        seen.add(str(task.get("id")))
        when = _moment(task.get("start_date"))
        important.append((task, f"high priority, starts {when:%a %d %b}" if when else "high priority"))
    head = f"**Your plan for {label}, {day:%a %d %b}**:"
    lines = [head, "", f"**Calendar** ({len(events)} event{'s' if len(events) != 1 else ''}):"]
    for event in events[:_EVENTS]:
        begins, ends = str(event.get("start", "")), str(event.get("end", ""))
        span = "all day" if event.get("is_all_day") else f"{begins[11:16]}–{ends[11:16]}"
        over = today and (_moment(ends) or end) <= now and not event.get("is_all_day")
        lines.append(f"- {span} {event.get('summary') or 'No title'}" + (" (over)" if over else ""))
    if not events:
        lines[-1] = f"**Calendar**: nothing on it {label}."
    work = [_line(t, why) for t, why in late[:_OVERDUE]]
    work += [_line(t, why) for _, t, why in due[:_DUE]]
    work += [_line(t, why) for t, why in important[:_HIGH]]
    if not work:
        lines += [
            "",
            f"**Work**: nothing overdue, due {label} or high priority. Ask for all your open tasks.",
        ]
        return "\n".join(lines)
    lines += ["", "**Work, most important first** (overdue, then due " + label + ", then high priority):"]
    lines += work
    more = max(overdue_total, len(late)) - min(len(late), _OVERDUE)
    if more > 0:
        lines.append(f"- … and {more} more overdue (“what's overdue?” lists them)")
    first = (late or [(t, "") for _, t, _ in due] or important)[0][0]
    lines.append(f"\nStart with **{first.get('title')}**. Ask about any of them for details.")
    return "\n".join(lines)


class TodayPlans(PlannerBase):
    """The ``plan_day`` intent: the day's calendar and its most important work."""

    def _plan_day(self) -> str | ToolCall:
        now = self.view.now
        start, _ = self.intent.window or (datetime.combine(now.date(), datetime.min.time()), now)
        day = datetime.combine(start.date(), datetime.min.time())
        label = self.intent.window_label or "today"
        low, high = day.strftime("%Y-%m-%dT%H:%M"), (day + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M")
        plans: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
            ("get_calendar_events", {"timeMin": low}, {"timeMax": high, "limit": 30}),
            (
                "list_tasks",
                {"overdue": True, "sort_by": "priority"},
                {"status": list(OPEN_STATUSES), "limit": 20},
            ),
            (
                "list_tasks",
                {"sort_by": "start_date"},
                {"status": list(OPEN_STATUSES), "has_date": True, "overdue": False, "limit": 20},
            ),
            (
                "list_tasks",
                {"priority": ["high"]},
                {"status": list(OPEN_STATUSES), "overdue": False, "limit": 10},
            ),
        ]
        results: list[dict[str, Any]] = []
        for name, key, rest in plans:
            step = self.done(name, **key)
            if step is None:
                return self.call(name, **key, **rest)
            if step.error:
                return render_error(
                    step, "read your calendar" if name == "get_calendar_events" else "list tasks"
                )
            results.append(step.data or {})

        def rows(data: dict[str, Any], key: str) -> list[dict[str, Any]]:
            found = data.get(key)
            return [r for r in found if isinstance(r, dict)] if isinstance(found, list) else []

        total = results[1].get("total")
        total = total if isinstance(total, int) else 0
        overdue, upcoming = rows(results[1], "tasks"), rows(results[2], "tasks")
        offset = max(0, total - _LATEST)
        while total > len(overdue) and offset < total:  # a page by priority may leave out one due
            step = self.done("list_tasks", overdue=True, sort_by="start_date", offset=offset)  # today
            if step is None:  # the newest overdue, to the last (a page the result's size cut: the rest)
                try:
                    return self.call(
                        "list_tasks",
                        overdue=True,
                        sort_by="start_date",
                        offset=offset,
                        status=list(OPEN_STATUSES),
                        limit=_LATEST,
                    )
                except Stop:  # the turn's last step: the plan from what was read
                    break
            newest = rows(step.data or {}, "tasks")
            upcoming = newest + upcoming  # (only the day's are used from these)
            offset = offset + len(newest) if newest and not step.error else total
        return day_plan(
            day, now, label, rows(results[0], "events"), overdue, upcoming, rows(results[3], "tasks"), total
        )
