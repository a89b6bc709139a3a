"""The offline assistant follows the conversation (issue 33, findings 5 and 6), end to end.

Each test talks to the reference assistant as ``tierwise chat`` does — :func:`assistant_engine`
with the offline assistant, the workspace context and tool offering — over a small workspace whose
day is known: Monday 23 November 2026, 08:30 in Lisbon (UTC in November), working hours 09:00-17:00.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from tierwise.chat.engine import ChatEngine
from tierwise.chat.events import ToolCallStart
from tierwise.store import Store
from tierwise.workspace.app import assistant_engine
from tierwise.workspace.assistant import OfflineAssistant
from tierwise.workspace.calendar import LocalCalendar
from tierwise.workspace.repository import Workspace

NOW = datetime(2026, 11, 23, 8, 30, tzinfo=UTC)  # Monday; Lisbon is on UTC in November

DESCRIPTION = (
    "Create comprehensive API documentation with interactive examples, authentication guides, and SDKs "
    "for Python, JavaScript, and Go. The portal should include versioning support, automatic code "
    "generation from OpenAPI specs, and integrated testing capabilities."
)
DETAILS = (
    "Technical requirements:\n- Next.js 14 with App Router\n- MDX for documentation content\n"
    "- Shiki for syntax highlighting\n- OpenAPI 3.1 specification support\n"
    "- Interactive API explorer using Swagger UI\n- Authentication flow diagrams with Mermaid\n"
    "- Search powered by Algolia DocSearch\n\nContent requirements:\n- Getting started guide\n"
    "- Error handling reference"
)


@dataclass
class Chat:
    """One chat with the reference assistant: ``say`` a message, get the tools it called and its answer."""

    store: Store
    user: str
    engine: ChatEngine
    ids: dict[str, str]
    chat_id: str = ""

    def say(self, message: str) -> tuple[list[ToolCallStart], str]:
        if not self.chat_id:
            self.chat_id = self.store.create_chat(self.user).id
        result = asyncio.run(self.engine.run(self.user, self.chat_id, message))
        assert result.error is None, result.error
        return [e for e in result.events if isinstance(e, ToolCallStart)], result.text


def _names(calls: list[ToolCallStart]) -> list[str]:
    return [c.name for c in calls]


def _args(call: ToolCallStart) -> dict[str, Any]:
    value = json.loads(call.arguments)
    assert isinstance(value, dict)
    return value


def _bullets(text: str) -> list[str]:
    """The titles of the task bullets an answer shows, in order."""
    return [m[1] for m in re.finditer(r"^\s*- \[\w+\] (.+?)(?: · |$)", text, re.M)]


@pytest.fixture
def chat() -> Iterator[Chat]:
    store = Store.open("sqlite://")
    user = store.create_user("maya").id
    ws = Workspace(store)
    ws.set_profile(user, timezone="Europe/Lisbon", who_i_am="Product lead", how_i_work="Mornings")
    q4 = ws.create_project(user, name="Q4 Product Launch", description="Ship the Q4 release")["id"]
    home = ws.create_project(user, name="Home", description="The flat")["id"]
    ids = {"q4": q4, "home": home}
    tasks: list[tuple[str, str, str, dict[str, Any]]] = [
        ("api", "Design API documentation portal", "high", {"start_date": "2026-11-20 10:00"}),
        ("audit", "Review security audit", "high", {"start_date": "2026-11-18 10:00"}),
        ("webhook", "Implement webhook system", "high", {"start_date": "2026-11-26 09:00"}),
        ("webdocs", "Write webhook system docs", "medium", {"start_date": "2026-11-30 09:00"}),
        ("plants", "Water the plants", "medium", {"start_date": "2026-10-15 11:00", "project_id": home}),
        ("gym", "Renew gym membership", "medium", {"start_date": "2026-10-16 11:00", "project_id": home}),
        ("bills", "Sort old bills", "medium", {"start_date": "2026-10-17 11:00", "project_id": home}),
        ("expenses", "File expense report", "low", {"start_date": "2026-10-10 11:00"}),
        ("accountant", "Call the accountant", "medium", {"start_date": "2026-11-23 11:00"}),
        ("deck", "Prepare board deck", "high", {"start_date": "2026-11-23 15:00"}),
        ("hiring", "Draft hiring plan", "high", {}),
        ("pricing", "Pricing page copy", "medium", {"duration_minutes": 30}),
    ]
    durations = {"api": 240, "webhook": 480, "deck": 90, "audit": 60}
    for key, title, priority, fields in tasks:
        fields = {"project_id": q4, "duration_minutes": durations.get(key, 60), **fields}
        ids[key] = ws.create_task(user, title=title, priority=priority, **fields)["id"]
    ws.update_task(user, ids["api"], {"description": DESCRIPTION})
    ws.update_task(user, ids["api"], {"details": DETAILS, "status": "in_progress"})
    ws.update_task(user, ids["webdocs"], {"description": "Document the webhook system for customers"})
    calendar = LocalCalendar(store)
    for summary, day, start, end in (
        ("Standup", 23, (9, 30), (10, 0)),
        ("Team lunch", 23, (12, 30), (13, 30)),
        ("Dinner with Sofia", 23, (19, 0), (21, 0)),
        ("Design review", 24, (9, 0), (10, 0)),
        ("Customer call", 24, (13, 0), (14, 0)),
        ("Offsite workshop", 25, (9, 0), (12, 30)),
    ):
        calendar.add_event(
            user,
            summary=summary,
            start=datetime(2026, 11, day, *start, tzinfo=UTC),
            end=datetime(2026, 11, day, *end, tzinfo=UTC),
            timezone="Europe/Lisbon",
        )
    engine = assistant_engine(store, OfflineAssistant(), clock=lambda: NOW, prefetch=None)
    yield Chat(store, user, engine, ids)
    store.close()


# -- finding 5: a detail request shows the record's full text ------------------------------------------


def test_details_show_the_whole_description_and_keep_markdown_lists(chat: Chat) -> None:
    calls, text = chat.say("Tell me more about the API documentation task")
    assert _names(calls)[-1] == "get_task_details"
    assert DESCRIPTION in text  # before: "… and integrated te…"
    assert "Authentication flow diagrams with Mermaid" in text and "Mermai…" not in text
    # the markdown list as written, one item a line (before: flattened into one line)
    assert "Technical requirements:\n- Next.js 14 with App Router\n- MDX for documentation content" in text
    assert "\n\nContent requirements:\n- Getting started guide\n- Error handling reference" in text
    assert "…" not in text


# -- finding 6a: "the second one", "it" follow what the user saw ----------------------------------------


def test_the_second_one_is_the_second_of_the_list_on_screen_not_of_a_hidden_result(chat: Chat) -> None:
    calls, text = chat.say("what's overdue?")
    shown = _bullets(text)
    assert len(shown) >= 3
    # the answer's details of one task, found by a search the user never saw (two results)
    calls, text = chat.say("tell me more about the webhook system task")
    assert _names(calls) == ["list_tasks", "get_task_details"]
    assert text.startswith("**Implement webhook system**")
    calls, text = chat.say("the second one")
    assert text.startswith(f"**{shown[1]}**"), text  # before: the search's second row, "Write webhook…"
    calls, text = chat.say("the last one")
    assert text.startswith(f"**{shown[-1]}**"), text
    calls, text = chat.say("the first")
    assert text.startswith(f"**{shown[0]}**"), text


def test_the_last_one_is_the_last_shown_not_the_last_of_the_page(chat: Chat) -> None:
    _, text = chat.say("I want to work on the Q4 launch project")  # its details: 5 of its open tasks shown
    shown = _bullets(text)
    assert text.startswith("**Q4 Product Launch**") and len(shown) == 5
    _, text = chat.say("the last one")
    assert text.startswith(f"**{shown[-1]}**"), text  # before: the result's 10th task, never shown
    _, text = chat.say("the 7th")
    assert text == "The last list I showed had 5 items; which one do you mean?"


def test_the_second_one_with_nothing_listed_asks_which(chat: Chat) -> None:
    calls, text = chat.say("tell me more about the webhook system task")
    assert _names(calls) == ["list_tasks", "get_task_details"]  # a search listed two, unseen
    calls, text = chat.say("the second one")
    assert calls == [] and "Which list do you mean?" in text, text  # before: "Write webhook system docs"


def test_it_and_that_task_are_what_the_last_answer_was_about(chat: Chat) -> None:
    chat.say("tell me more about the webhook system task")
    calls, text = chat.say("what's on my calendar today?")
    calls, text = chat.say("show me that task")
    assert text.startswith("**Implement webhook system**"), text
    _, listed = chat.say("what's overdue?")
    calls, text = chat.say("mark it done")  # several were just listed: which one?
    assert calls == [] and "Which task do you mean?" in text, text  # before: searched "Overdue tasks"
    calls, text = chat.say("the second one")
    calls, text = chat.say("mark it done")
    assert _names(calls) == ["update_task"] and text == f"Updated **{_bullets(listed)[1]}**: status → done."


# -- finding 6b: a part of the day ---------------------------------------------------------------------


def test_a_free_hour_tomorrow_morning_is_in_the_morning(chat: Chat) -> None:
    calls, text = chat.say("find a free hour tomorrow morning")
    assert _names(calls) == ["find_available_slots"]
    args = _args(calls[0])
    assert args["timeMin"] == "2026-11-24T09:00" and args["timeMax"] == "2026-11-24T12:00"
    assert "tomorrow morning (09:00–12:00)" in text, text
    times = re.findall(r"Tue 24 Nov (\d\d:\d\d)–(\d\d:\d\d)", text)
    assert times and all(a >= "09:00" and b <= "12:00" for a, b in times), text  # before: 13:00, 15:00…
    assert ("11:30", "12:30") not in times


def test_a_part_of_day_with_no_free_slot_says_so(chat: Chat) -> None:
    _calls, text = chat.say("find a free hour on Wednesday morning")
    assert text.startswith("No free hour Wednesday 25 Nov, morning (09:00–12:00)."), text
    assert "13:00" not in text and "12:30" not in text


def test_afternoon_and_tonight(chat: Chat) -> None:
    _, text = chat.say("when am I free this afternoon for 2 hours?")
    assert "this afternoon (12:00–17:00)" in text, text
    times = re.findall(r"Mon 23 Nov (\d\d:\d\d)–(\d\d:\d\d)", text)
    assert times and all(a >= "13:30" and b <= "17:00" for a, b in times), text
    # tonight is after working hours: the calendar says when it is free
    _calls, text = chat.say("find a free hour tonight")
    assert "tonight (18:00–23:00)" in text and "outside your working hours" in text, text
    assert "18:00–19:00" in text and "21:00–22:00" in text and "19:30" not in text, text


def test_the_second_slot_is_the_second_free_slot_on_screen(chat: Chat) -> None:
    _, text = chat.say("find a free hour tomorrow afternoon")
    shown = re.findall(r"^- Tue 24 Nov (\d\d:\d\d)–", text, re.M)
    assert len(shown) >= 2, text
    calls, text = chat.say("schedule the pricing page copy in the second slot")
    assert _names(calls)[-1] == "schedule_task", text
    assert _args(calls[-1])["start_time"] == f"2026-11-24T{shown[1]}"
    assert text.startswith(f"Scheduled **Pricing page copy** on Tue 24 Nov {shown[1]}"), text


def test_book_the_last_one_books_the_task_talked_about_in_the_last_slot(chat: Chat) -> None:
    chat.say("tell me more about the pricing page copy task")
    _, text = chat.say("find a free hour tomorrow morning")
    shown = re.findall(r"^- Tue 24 Nov (\d\d:\d\d)–", text, re.M)
    calls, text = chat.say("book the last one")
    assert _names(calls)[-1] == "schedule_task", text
    booked = _args(calls[-1])
    assert (booked["task_id"], booked["start_time"]) == (chat.ids["pricing"], f"2026-11-24T{shown[-1]}")


def test_a_slot_past_the_list_asks_which_and_with_no_slots_shown_the_second_one_is_a_task(chat: Chat) -> None:
    chat.say("find a free hour tomorrow morning")
    calls, text = chat.say("schedule the pricing page copy in the ninth slot")
    assert "schedule_task" not in _names(calls) and "which one do you mean?" in text, text
    _, listed = chat.say("what's overdue?")
    second = _bullets(listed)[1]
    calls, text = chat.say("schedule the second one on Friday at 9")
    assert _names(calls)[-1] == "schedule_task", text
    assert text.startswith(f"Scheduled **{second}** on Fri 27 Nov 09:00"), text


# -- finding 6c: scheduling warns of conflicts and respects the estimate -------------------------------


def test_scheduling_over_events_warns_and_proposes_a_free_slot(chat: Chat) -> None:
    chat.say("tell me more about the webhook system task")
    calls, text = chat.say("schedule it tomorrow at 10")
    assert "schedule_task" not in _names(calls), text  # before: booked 10:00-18:00 over two meetings
    assert "8 h" in text and "estimate" in text
    assert "Overlaps: Customer call (13:00–14:00)" in text
    assert "past your working hours" in text
    assert "Thu 26 Nov 09:00–17:00" in text, text  # a free stretch of the needed length
    assert "book it anyway" in text
    events = LocalCalendar(chat.store).events(chat.user, NOW, datetime(2026, 12, 1, tzinfo=UTC))
    assert not [e for e in events if e.summary == "Implement webhook system"]
    calls, text = chat.say("book it anyway")
    assert _names(calls)[-1] == "schedule_task", text
    assert _args(calls[-1])["start_time"] == "2026-11-24T10:00"
    assert text.startswith("Scheduled **Implement webhook system** on Tue 24 Nov 10:00–18:00"), text
    assert "Customer call" in text


def test_scheduling_a_free_time_books_it_and_says_how_long(chat: Chat) -> None:
    calls, text = chat.say("schedule the pricing page copy tomorrow at 2pm")
    assert _names(calls)[-1] == "schedule_task"
    assert text.startswith("Scheduled **Pricing page copy** on Tue 24 Nov 14:00–14:30"), text
    assert "30 min" in text and "estimate" in text, text
    # nothing waits to be booked now: "book it anyway" moves nothing (it moved the task to a free slot)
    calls, text = chat.say("book it anyway")
    assert "schedule_task" not in _names(calls), text
    assert text.startswith("Nothing is waiting to be booked"), text


# -- finding 6d: what to work on today -----------------------------------------------------------------


def test_what_should_i_work_on_today(chat: Chat) -> None:
    calls, text = chat.say("what should I work on today?")
    assert "get_calendar_events" in _names(calls)
    assert "Standup" in text and "Team lunch" in text  # today's schedule
    shown = _bullets(text)
    # overdue first by priority, then due today, then high priority
    assert shown[:2] == ["Review security audit", "Design API documentation portal"], shown
    assert shown.index("Prepare board deck") < shown.index("Draft hiring plan")
    assert shown.index("Call the accountant") < shown.index("Draft hiring plan")
    assert shown.index("Design API documentation portal") < shown.index("Water the plants")
    lines = {t: next(line for line in text.splitlines() if f"] {t} " in line) for t in shown}
    assert "overdue since Wed 18 Nov" in lines["Review security audit"]
    assert "due today 11:00" in lines["Call the accountant"]
    assert "high priority" in lines["Draft hiring plan"]


def test_a_task_due_earlier_today_is_listed_when_more_than_a_page_is_overdue(chat: Chat) -> None:
    ws = Workspace(chat.store)
    for n in range(25):  # a page of overdue tasks, all more important than the one due today
        ws.create_task(
            chat.user, title=f"Old urgent thing {n}", priority="high", start_date="2026-10-01 09:00"
        )
    ws.create_task(chat.user, title="Pay the rent", priority="medium", start_date="2026-11-23 07:00")
    _calls, text = chat.say("what should I work on today?")
    rent = next((line for line in text.splitlines() if "] Pay the rent " in line), None)
    assert rent is not None and "due today 07:00 (passed)" in rent, text
