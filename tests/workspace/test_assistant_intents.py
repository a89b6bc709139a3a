"""The offline assistant's intent recognition: what a message asks for, and the days and times in it."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

import pytest

from tierwise.workspace.assistant.intents import find_day, find_time, find_window, keywords, recognise

NOW = datetime(2026, 11, 23, 14, 5, tzinfo=UTC)  # Monday; Lisbon is on UTC in November
LOCAL = NOW.replace(tzinfo=None)


def _case(message: str, kind: str, **fields: Any) -> Any:
    return pytest.param(message, kind, fields, id=message or "empty")


CASES = [
    _case(
        "What are my high priority tasks for the Q4 launch?",
        "list_tasks",
        priority=("high",),
        project="Q4 launch",
    ),
    _case("list my tasks", "list_tasks", priority=(), project=""),
    _case("what are my urgent tasks", "list_tasks", priority=("high",)),
    _case("show blocked tasks", "list_tasks", status=("blocked",)),
    _case("what's in progress", "list_tasks", status=("in_progress",)),
    _case("What's overdue?", "list_tasks", overdue=True),
    _case("what tasks are done", "list_tasks", status=("done",)),
    _case("Which tasks are overdue?", "list_tasks", overdue=True, project=""),
    _case("what are the subtasks", "details", target="task", pronoun=True),
    _case("what's next week look like", "calendar", window_label="next week"),
    _case(
        "Create a task to prepare interview questions for the hiring project, high priority, on Friday",
        "create_task",
        title="Prepare interview questions",
        project="hiring",
        priority=("high",),
        start_date="2026-11-27",
    ),
    _case("Q4 launch tasks", "list_tasks", project="Q4 launch"),
    _case("show me the tasks in the renovation project", "list_tasks", project="renovation"),
    _case("tasks about webhooks", "list_tasks", subject="webhooks", project=""),
    _case("what's on my plate", "list_tasks", status=("backlog", "in_progress", "blocked")),
    _case("what should I work on today", "plan_day", window_label="today"),
    _case(
        "Tell me more about the API documentation task", "details", subject="API documentation", target="task"
    ),
    _case("details on the webhook task", "details", subject="webhook", target="task"),
    _case("what's in the pricing note", "details", subject="pricing", target="note"),
    _case("the second one", "details", ordinal=2),
    _case("tell me more about the first one", "details", ordinal=1),
    _case("#3", "details", ordinal=3),
    _case("the last one", "details", ordinal=-1),
    _case("more about it", "details", pronoun=True),
    _case("I want to work on the Q4 launch project", "details", subject="Q4 launch", target="project"),
    _case("let's focus on marathon training", "details", subject="marathon training", target="project"),
    _case("Show me my active projects", "list_projects", project_status="active"),
    # "show me X" asks for its preview (a list answers it); "open", "in detail", "more about": details
    _case("Show me the hiring project", "details", subject="hiring", target="project", preview=True),
    _case("pull up the pricing note", "details", subject="pricing", target="note", preview=True),
    _case("open the hiring project", "details", subject="hiring", target="project", preview=False),
    _case("show me the first one", "details", ordinal=1, preview=False),
    _case("show me it", "details", pronoun=True, preview=False),
    _case("tell me more about the hiring project", "details", subject="hiring", preview=False),
    _case("what projects do I have", "list_projects", project_status=None),
    _case("projects about tax", "list_projects", subject="tax"),
    _case("find notes about pricing", "search_notes", subject="pricing"),
    _case("notes for the marathon project", "search_notes", project="marathon", subject=""),
    _case("what notes do I have", "search_notes", subject=""),
    _case("what's on my calendar today", "calendar", window_label="today"),
    _case("what's my schedule tomorrow", "calendar", window_label="tomorrow"),
    _case("do I have meetings this week", "calendar", window_label="this week"),
    _case("what's on next week", "calendar", window_label="next week"),
    _case("show my agenda", "calendar", window=None),
    _case("find a free hour tomorrow", "free_slots", duration_minutes=60, window_label="tomorrow"),
    _case(
        "find 30 minutes this week in the morning",
        "free_slots",
        duration_minutes=30,
        preferred_hours=(9, 10, 11),
    ),
    _case(
        "when am I free on Friday afternoon",
        "free_slots",
        preferred_hours=(13, 14, 15, 16),
        duration_minutes=60,
    ),
    _case(
        "create a task: Call the accountant tomorrow",
        "create_task",
        title="Call the accountant",
        start_date="2026-11-24",
    ),
    _case(
        "remind me to buy running shoes on Saturday",
        "create_task",
        title="Buy running shoes",
        start_date="2026-11-28",
    ),
    _case("add a task to call the bank", "create_task", title="Call the bank", project=""),
    _case(
        "new task: Review PR #42 for project Webhooks",
        "create_task",
        title="Review PR #42",
        project="Webhooks",
    ),
    _case(
        "add a task for the marathon: book physio, low priority",
        "create_task",
        title="Book physio",
        project="marathon",
        priority=("low",),
    ),
    _case("add a task: water plants every day", "create_task", title="Water plants", recurrence="daily"),
    _case("mark the webhook task as done", "update_task", subject="webhook", updates=(("status", "done"),)),
    _case(
        "set the API docs task to high priority",
        "update_task",
        subject="API docs",
        updates=(("priority", "high"),),
    ),
    _case("move the venue booking to tomorrow", "update_task", updates=(("start_date", "2026-11-24"),)),
    _case(
        "the pricing page is blocked", "update_task", subject="pricing page", updates=(("status", "blocked"),)
    ),
    _case(
        "I finished the release notes", "update_task", subject="release notes", updates=(("status", "done"),)
    ),
    _case("mark it done", "update_task", pronoun=True),
    _case("start the API docs task", "update_task", updates=(("status", "in_progress"),)),
    _case("rename the docs task to Docs portal v2", "update_task", updates=(("title", "Docs portal v2"),)),
    _case(
        "schedule the API docs task tomorrow at 10",
        "schedule_task",
        subject="API docs",
        start_time="2026-11-24T10:00",
    ),
    _case(
        "put weekly review on my calendar every Monday at 9",
        "schedule_task",
        subject="weekly review",
        recurrence="weekly",
        start_time="2026-11-30T09:00",
    ),
    _case(
        "schedule the tempo run every weekday at 7am",
        "schedule_task",
        recurrence="weekdays",
        start_time="2026-11-24T07:00",
    ),
    _case("schedule the standup every other week", "schedule_task", recurrence="biweekly", start_time=None),
    _case(
        "book time for tax filing tomorrow morning",
        "schedule_task",
        subject="tax filing",
        preferred_hours=(9, 10, 11),
    ),
    _case("schedule it on Friday", "schedule_task", pronoun=True),
    _case(
        "schedule 1:1 prep tomorrow at 2:30pm for 45 minutes",
        "schedule_task",
        start_time="2026-11-24T14:30",
        duration_minutes=45,
    ),
    _case("hi", "greeting"),
    _case("Good morning!", "greeting"),
    _case("thanks!", "thanks"),
    _case("what can you do?", "help"),
    _case("", "help"),
    _case("what's the weather like", "unknown"),
    _case("write me a poem about Lisbon", "unknown"),
    _case("write me a haiku about my tasks", "unknown"),
    _case("tell me a joke about my projects", "unknown"),
    _case("rewrite my notes about the launch", "unknown"),
    _case("add a task: write a poem for Mum", "create_task", title="Write a poem for Mum"),
]


@pytest.mark.parametrize(("message", "kind", "fields"), CASES)
def test_recognise(message: str, kind: str, fields: dict[str, Any]) -> None:
    intent = recognise(message, LOCAL)
    assert intent.kind == kind, intent
    for name, value in fields.items():
        assert getattr(intent, name) == value, (name, intent)


def _day(text: str) -> date:
    found = find_day(text, date(2026, 11, 23))
    assert found is not None, text
    return found[0]


def _time(text: str) -> tuple[int, int]:
    found = find_time(text)
    assert found is not None, text
    return found[0], found[1]


def test_dates_and_times() -> None:
    assert find_day("call Ana on Friday", date(2026, 11, 23)) == (date(2026, 11, 27), "on Friday")
    assert _day("next monday") == date(2026, 11, 30)
    assert _day("monday") == date(2026, 11, 23)
    assert _day("by 2026-12-01") == date(2026, 12, 1)
    assert _day("Dec 3") == date(2026, 12, 3)
    assert _day("3rd of January") == date(2027, 1, 3)
    assert _day("in 3 days") == date(2026, 11, 26)
    assert find_day("no day here", date(2026, 11, 23)) is None
    assert _time("at 10") == (10, 0) and _time("at 2:30pm") == (14, 30) and _time("at 3") == (15, 0)
    assert _time("at noon") == (12, 0) and _time("12am") == (0, 0)
    assert find_time("task 42") is None
    window = find_window("this weekend", LOCAL)
    assert window is not None
    assert (window[0].date(), window[1].date(), window[2]) == (
        date(2026, 11, 28),
        date(2026, 11, 30),
        "this weekend",
    )
    assert find_window("nothing", LOCAL) is None
    assert keywords("Tell me about the Q4 launch project") == ["q4", "launch"]
