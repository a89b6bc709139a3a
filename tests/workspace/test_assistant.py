"""The offline assistant: whole turns through the chat engine over a workspace, and the provider alone.

Intent recognition: ``test_assistant_intents.py``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

import pytest

from tierwise.chat.engine import ChatEngine
from tierwise.chat.events import ToolCallStart
from tierwise.providers.base import ModelRequest, ToolCall
from tierwise.store import Store
from tierwise.workspace.assistant import OFFLINE_HINT, OfflineAssistant
from tierwise.workspace.assistant.answers import render
from tierwise.workspace.assistant.reading import Step
from tierwise.workspace.calendar import LocalCalendar
from tierwise.workspace.context import WorkspaceContext
from tierwise.workspace.repository import Workspace
from tierwise.workspace.tools import workspace_tools

NOW = datetime(2026, 11, 23, 14, 5, tzinfo=UTC)  # Monday; Lisbon is on UTC in November


def _clock() -> datetime:
    return NOW


# -- the workspace ------------------------------------------------------------------------------------


@dataclass
class World:
    store: Store
    ws: Workspace
    user: str
    ids: dict[str, str]
    engine: ChatEngine

    def chat(self, **options: Any) -> str:
        return self.store.create_chat(self.user, **options).id

    def turn(self, chat_id: str, message: str) -> tuple[list[ToolCallStart], str]:
        result = asyncio.run(self.engine.run(self.user, chat_id, message))
        assert result.error is None, result.error
        calls = [e for e in result.events if isinstance(e, ToolCallStart)]
        return calls, result.text


def _names(calls: list[ToolCallStart]) -> list[str]:
    return [c.name for c in calls]


def _args(call: ToolCallStart) -> dict[str, Any]:
    value = json.loads(call.arguments)
    assert isinstance(value, dict)
    return value


@pytest.fixture
def world() -> Iterator[World]:
    store = Store.open("sqlite://")
    user = store.create_user("maya").id
    ws = Workspace(store)
    ws.set_profile(user, timezone="Europe/Lisbon", who_i_am="Product lead", how_i_work="Mornings")
    ids: dict[str, str] = {}
    ids["q4"] = ws.create_project(
        user,
        name="Q4 Product Launch",
        description="Ship the Q4 release",
        executive_summary="Launching AI features",
    )["id"]
    ids["marathon"] = ws.create_project(user, name="Marathon Training", description="First marathon")["id"]
    ids["site"] = ws.create_project(user, name="Old Website", status="paused")["id"]
    ids["api"] = ws.create_task(
        user,
        title="Design API documentation portal",
        project_id=ids["q4"],
        priority="high",
        start_date="2026-11-20",
        description="Create comprehensive API documentation with interactive examples",
        details="Next.js 14 with App Router\nMDX for content",
    )["id"]
    ws.update_task(user, ids["api"], {"status": "in_progress"})
    ids["sub"] = ws.create_task(user, title="Set up Next.js documentation site", parent_task_id=ids["api"])[
        "id"
    ]
    ids["webhook"] = ws.create_task(
        user, title="Implement webhook system", project_id=ids["q4"], priority="high"
    )["id"]
    ids["pricing"] = ws.create_task(
        user, title="Pricing page copy", project_id=ids["q4"], duration_minutes=30
    )["id"]
    ids["tempo"] = ws.create_task(user, title="Tempo run", project_id=ids["marathon"], priority="low")["id"]
    ids["note"] = ws.create_note(
        user,
        title="Pricing research",
        content="Competitors charge per seat.\nWe should charge per workflow.",
        category="research",
        project_id=ids["q4"],
    )["id"]
    calendar = LocalCalendar(store)
    for summary, start, end in (
        ("Standup", (23, 15, 0), (23, 15, 30)),
        ("Design review", (24, 9, 0), (24, 10, 0)),
    ):
        calendar.add_event(
            user,
            summary=summary,
            start=datetime(2026, 11, start[0], start[1], start[2], tzinfo=UTC),
            end=datetime(2026, 11, end[0], end[1], end[2], tzinfo=UTC),
            timezone="Europe/Lisbon",
        )
    engine = ChatEngine(
        store,
        OfflineAssistant(),
        tools=workspace_tools(),
        context=WorkspaceContext(store, clock=_clock),
        tool_extras={"clock": _clock},
    )
    yield World(store, ws, user, ids, engine)
    store.close()


# -- whole turns --------------------------------------------------------------------------------------


def test_seed_dialogue(world: World) -> None:
    chat = world.chat()
    calls, text = world.turn(chat, "What are my high priority tasks for the Q4 launch?")
    # seed 000 §4.3's first call: the overview lists the project with its id, so no search first
    assert _names(calls) == ["list_tasks"]
    assert _args(calls[0])["project_id"] == world.ids["q4"]
    assert _args(calls[0])["priority"] == ["high"]
    assert "- [high] Design API documentation portal · in progress · 2026-11-20 (overdue)" in text
    assert "Implement webhook system" in text and "Pricing page copy" not in text
    assert text.endswith("Ask about any of them for details.")

    calls, text = world.turn(chat, "Tell me more about the API documentation task")
    assert _names(calls) == ["get_task_details"]  # resolved from the list shown: no search
    assert _args(calls[0])["task_id"] == world.ids["api"]
    assert "**Design API documentation portal**" in text and "interactive examples" in text
    assert "Subtasks (0/1 done): Set up Next.js documentation site" in text

    calls, text = world.turn(chat, "Show me my active projects")
    assert _names(calls) == ["search_projects"] and _args(calls[0])["status"] == "active"
    assert "Q4 Product Launch" in text and "Marathon Training" in text and "Old Website" not in text

    calls, text = world.turn(chat, "I want to work on the Q4 launch project")
    # seed 000 §4.3's one call: the details with the first open tasks, abbreviated
    assert _names(calls) == ["get_project_details"]
    assert _args(calls[0]) == {"project_id": world.ids["q4"], "include_tasks": True}
    assert text.startswith("**Q4 Product Launch** · active") and "Top open tasks" in text
    recorded = [c.tool_name for c in world.store.list_tool_calls(world.user, chat)]
    assert recorded.count("get_task_details") == 1  # never a detail call per listed item


def test_a_project_the_overview_does_not_list_is_searched(world: World) -> None:
    # the overview lists active projects with their ids; a paused one is found by a search
    calls, _ = world.turn(world.chat(), "What are my tasks for the old website project?")
    assert _names(calls)[0] == "search_projects"
    assert _args(calls[-1])["project_id"] == world.ids["site"]


def test_details_search_first_when_nothing_was_listed(world: World) -> None:
    calls, text = world.turn(world.chat(), "Tell me more about the webhook system task")
    assert _names(calls) == ["list_tasks", "get_task_details"]
    assert _args(calls[0])["query"] == "webhook system"
    assert _args(calls[1])["task_id"] == world.ids["webhook"]
    assert "Implement webhook system" in text


def test_details_of_a_task_the_overview_lists_need_no_search(world: World) -> None:
    # the API task is overdue: the overview lists it with its id, as a model would read it
    calls, text = world.turn(world.chat(), "Tell me more about the API documentation task")
    assert _names(calls) == ["get_task_details"]
    assert _args(calls[0])["task_id"] == world.ids["api"]
    assert "Design API documentation portal" in text


def test_ordinals_refer_to_the_last_list(world: World) -> None:
    chat = world.chat()
    _, listed = world.turn(chat, "list my tasks")
    second = listed.splitlines()[2]
    calls, text = world.turn(chat, "the second one")
    # memory keeps the earlier list as a blob: the assistant reads it again (open_blob), like a model would
    assert _names(calls) in (["get_task_details"], ["open_blob", "get_task_details"])
    title = text.splitlines()[0].split("**")[1]
    assert title in second
    calls, text = world.turn(chat, "mark it done")
    assert _names(calls) == ["update_task"]
    assert f"Updated **{title}**: status → done." == text


def test_notes(world: World) -> None:
    chat = world.chat()
    calls, text = world.turn(chat, "find notes about pricing")
    assert _names(calls) == ["search_notes"] and _args(calls[0])["query"] == "pricing"
    assert "**Pricing research** · research · Q4 Product Launch" in text
    calls, text = world.turn(chat, "what's in the pricing note")
    assert _names(calls) == ["get_note_details"] and _args(calls[0])["note_id"] == world.ids["note"]
    assert "We should charge per workflow." in text


def test_calendar_today(world: World) -> None:
    calls, text = world.turn(world.chat(), "What's on my calendar today?")
    assert _names(calls) == ["get_calendar_events"]
    assert (
        _args(calls[0])["timeMin"] == "2026-11-23T00:00" and _args(calls[0])["timeMax"] == "2026-11-24T00:00"
    )
    assert "- Mon 23 Nov 15:00–15:30 Standup" in text and "Design review" not in text


def test_free_slot(world: World) -> None:
    calls, text = world.turn(world.chat(), "find a free hour tomorrow morning")
    assert _names(calls) == ["find_available_slots"]
    args = _args(calls[0])
    assert args["duration_minutes"] == 60 and args["preferred_hours"] == [9, 10, 11]
    assert args["timeMin"] == "2026-11-24T09:00" and args["timeMax"] == "2026-11-24T12:00"  # the morning
    assert text.startswith("**Free 1-hour slots tomorrow morning (09:00–12:00)**:")
    assert "- Tue 24 Nov 10:00–11:00" in text  # 9:00 is the design review
    assert "09:00–10:00" not in text and "13:00" not in text


def test_create_task(world: World) -> None:
    message = "add a task to the Q4 launch project: write release notes, high priority, due Friday"
    calls, text = world.turn(world.chat(), message)
    assert _names(calls) == ["create_task"]  # the project's id is in the overview
    assert _args(calls[0]) == {
        "title": "Write release notes",
        "project_id": world.ids["q4"],
        "priority": "high",
        "start_date": "2026-11-27",
    }
    assert text.startswith(
        "Created **Write release notes** · [high] · in Q4 Product Launch · starts 2026-11-27"
    )
    tasks, _ = world.ws.list_tasks(world.user, query="release notes")
    assert [t["title"] for t in tasks] == ["Write release notes"]


def test_create_task_in_a_project_chat_uses_that_project(world: World) -> None:
    chat = world.chat(context_type="project", entity_id=world.ids["marathon"])
    calls, _ = world.turn(chat, "remind me to buy gels tomorrow")
    assert _names(calls) == ["create_task"]
    assert _args(calls[0])["project_id"] == world.ids["marathon"]
    calls, text = world.turn(chat, "list my tasks")
    assert _names(calls) == ["list_tasks"] and _args(calls[0])["project_id"] == world.ids["marathon"]
    assert "Buy gels" in text and "Tempo run" in text and "Pricing" not in text


def test_update_task(world: World) -> None:
    calls, text = world.turn(world.chat(), "mark the webhook task as done")
    assert _names(calls) == ["list_tasks", "update_task"]
    assert _args(calls[1]) == {"task_id": world.ids["webhook"], "updates": {"status": "done"}}
    assert text == "Updated **Implement webhook system**: status → done."
    assert world.ws.task_details(world.user, world.ids["webhook"])["status"] == "done"


def test_schedule_at_a_time(world: World) -> None:
    calls, text = world.turn(world.chat(), "schedule the pricing page tomorrow at 10")
    # the calendar is read for that half hour first: nothing there, so it is booked
    assert _names(calls) == ["list_tasks", "get_calendar_events", "schedule_task"]
    assert _args(calls[2]) == {
        "task_id": world.ids["pricing"],
        "start_time": "2026-11-24T10:00",
        "duration_minutes": 30,  # its estimate
    }
    assert text == "Scheduled **Pricing page copy** on Tue 24 Nov 10:00–10:30 (30 min, its estimate)."
    events = LocalCalendar(world.store).events(world.user, NOW, datetime(2026, 11, 25, tzinfo=UTC))
    assert [e.linked_task_id for e in events if e.summary == "Pricing page copy"] == [world.ids["pricing"]]


def test_schedule_recurring_finds_a_slot_first(world: World) -> None:
    calls, text = world.turn(world.chat(), "schedule the tempo run every weekday")
    assert _names(calls) == ["list_tasks", "find_available_slots", "schedule_task"]
    scheduled = _args(calls[2])
    assert scheduled["task_id"] == world.ids["tempo"] and scheduled["recurrence_pattern"] == "weekdays"
    assert text.startswith("Scheduled **Tempo run** on ") and text.endswith("repeating weekdays.")


def test_task_chat_pronoun(world: World) -> None:
    chat = world.chat(context_type="task", entity_id=world.ids["webhook"])
    calls, _ = world.turn(chat, "schedule it tomorrow at 2pm")
    # its estimate (details) and the calendar at that time are read first
    assert _names(calls) == ["get_task_details", "get_calendar_events", "schedule_task"]
    assert _args(calls[-1]) == {
        "task_id": world.ids["webhook"],
        "start_time": "2026-11-24T14:00",
        "duration_minutes": 60,  # its estimate (create_task's default)
    }


def test_not_found_is_said(world: World) -> None:
    calls, text = world.turn(world.chat(), "mark the quantum flux capacitor as done")
    assert _names(calls)[0] == "list_tasks" and "update_task" not in _names(calls)
    assert "couldn't find a task" in text


def test_unknown_request_is_honest(world: World) -> None:
    calls, text = world.turn(world.chat(), "What's the weather in Lisbon?")
    assert calls == []
    assert "offline assistant" in text and "TIERWISE_BASE_URL" in text and "TIERWISE_MODEL" in text


@pytest.mark.parametrize(
    "message",
    [
        "write me a haiku about my tasks",
        "Write a short poem about the Q4 launch project",
        "tell me a joke about my projects",
        "translate my notes about the launch into French",
        "please draft an email to the team about the launch tasks",
    ],
)
def test_requests_it_cannot_do_get_the_offline_reply_not_a_tool_call(world: World, message: str) -> None:
    calls, text = world.turn(world.chat(), message)
    assert calls == []  # before: a project search or a task list for the words "tasks", "projects"
    assert text.startswith("**I can't do that offline.**") and "TIERWISE_BASE_URL" in text


def test_greeting(world: World) -> None:
    calls, text = world.turn(world.chat(), "hi")
    assert calls == [] and "offline assistant" in text and "list tasks" in text


def test_sample_workspace_dialogue() -> None:
    sample = pytest.importorskip("tierwise.workspace.sample")
    store = Store.open("sqlite://")
    user = store.create_user("maya").id
    sample.generate_workspace(store, user, today=date(2026, 11, 23))
    engine = ChatEngine(
        store,
        OfflineAssistant(),
        tools=workspace_tools(),
        context=WorkspaceContext(store, clock=_clock),
        tool_extras={"clock": _clock},
    )
    world = World(store, Workspace(store), user, {}, engine)
    chat = world.chat()
    calls, text = world.turn(chat, "What are my high priority tasks for the Q4 launch?")
    assert _names(calls) == ["list_tasks"] and "[high]" in text
    calls, text = world.turn(chat, "Tell me more about the API documentation task")
    assert _names(calls)[-1] == "get_task_details" and "API documentation" in text
    calls, text = world.turn(chat, "Show me my active projects")
    assert _names(calls) == ["search_projects"]
    calls, text = world.turn(chat, "I want to work on the Q4 launch project")
    assert "get_project_details" in _names(calls) and "Q4 Product Launch" in text
    assert "get_task_details" not in _names(calls)
    # a big project (38 tasks): its details are never read back from a stored blob, chunk by chunk
    assert "open_blob" not in _names(calls), _names(calls)
    assert "Top open tasks:" in text and "[high] Design API documentation portal" in text
    calls, text = world.turn(chat, "write me a haiku about my tasks")
    assert calls == [] and text.startswith("**I can't do that offline.**")
    store.close()


# -- the provider alone -------------------------------------------------------------------------------


def _request(messages: list[dict[str, Any]], *, tool_choice: str | None = None) -> ModelRequest:
    tools = [t.to_openai() for t in workspace_tools()]
    system = {"role": "system", "content": "Now: Monday 2026-11-23 14:05 (Europe/Lisbon)"}
    return ModelRequest([system, *messages], tools, tool_choice=tool_choice)


def _answer(request: ModelRequest) -> tuple[str, list[ToolCall]]:
    response = asyncio.run(OfflineAssistant().complete(request))
    assert response.model == "tierwise-offline"
    return response.text, response.tool_calls


def test_list_answers_say_what_they_left_out() -> None:
    # a page of 4 of 6 projects once answered "Projects (6)" with four bullets and nothing more
    projects = [{"id": f"proj_{n}", "name": f"P{n}", "status": "active"} for n in range(4)]
    text = render(Step("search_projects", {}, {"projects": projects, "total": 6, "has_more": True}), NOW)
    assert "**Projects** (6):" in text and "- … and 2 more" in text
    events = [{"summary": f"E{n}", "start": "2026-11-24 09:00", "end": "2026-11-24 10:00"} for n in range(14)]
    text = render(Step("get_calendar_events", {}, {"events": events, "total": 20}), NOW)
    assert "- … and 8 more" in text  # 12 shown of the calendar's 20, not of the page's 14
    tasks = [{"id": "task_1", "title": "T", "status": "backlog", "priority": "low"}]
    text = render(Step("list_tasks", {}, {"tasks": tasks, "has_more": True}), NOW)
    assert "- … and more on the next page" in text
    text = render(Step("search_projects", {}, {"projects": projects, "total": 4}), NOW)
    assert "more" not in text.split("\n\n")[0]


def test_tool_choice_none_answers_with_text() -> None:
    text, calls = _answer(_request([{"role": "user", "content": "list my tasks"}], tool_choice="none"))
    assert calls == [] and "couldn't finish" in text and OFFLINE_HINT in text


def test_missing_tool_answers_with_text() -> None:
    request = ModelRequest([{"role": "user", "content": "show my active projects"}], [])
    text, calls = _answer(request)
    assert calls == [] and "search_projects" in text and "TIERWISE_BASE_URL" in text
    assert "came with none" in text and "`tierwise chat`" in text  # and where it would work


def test_empty_history() -> None:
    text, calls = _answer(ModelRequest([]))
    assert calls == [] and "offline assistant" in text


def test_call_ids_are_deterministic() -> None:
    request = _request([{"role": "user", "content": "list my tasks"}])
    first, second = _answer(request)[1], _answer(request)[1]
    assert first == second and first[0].id.startswith("call_")


def test_error_results_are_relayed() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "list_tasks", "arguments": '{"query": "x"}'}}
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "tell me more about the x task"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "error: list_tasks failed: database is locked"},
    ]
    text, calls = _answer(_request(messages))
    assert calls == [] and text == "I couldn't search for “x”: list_tasks failed: database is locked"


GARBAGE: list[Any] = [
    "not json",
    "[1, 2, 3]",
    '{"tasks": "nope", "projects": [1, null], "notes": [{"id": 5}]}',
    '{"tasks": [{"id": "task_x"}], "task": {"id": "task_x", "subtasks": "x", "project": 3}}',
    '{"slots": [{"start": 7}], "events": [{"start": null}], "event": {"summary": null}}',
    '{"project": {"id": "proj_x", "tasks": [null, {"id": "task_1", "title": 2}], "phases": [1]}}',
    "error: boom",
    "",
    None,
    [{"type": "text", "text": "{}"}],
    "[tool result list_tasks · 9 kB · blob sha256:" + "ab" * 32 + " (open with open_blob)] summary",
]
MESSAGES = [
    "list my tasks",
    "tell me more about the API task",
    "the second one",
    "mark it done",
    "schedule the docs task",
    "schedule the docs task tomorrow at 10",
    "what's on my calendar today",
    "find a free hour",
    "add a task to the Q4 project: ship it",
    "show my active projects",
    "find notes about pricing",
    "what's in the pricing note",
]


@pytest.mark.parametrize("content", GARBAGE)
@pytest.mark.parametrize(
    "tool", ["list_tasks", "search_projects", "get_task_details", "find_available_slots", "open_blob"]
)
def test_garbage_results_never_crash(content: Any, tool: str) -> None:
    for message in MESSAGES:
        for earlier in (False, True):
            call = {"id": "c1", "type": "function", "function": {"name": tool, "arguments": "{}"}}
            exchange = [
                {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "c1", "name": tool, "content": content},
            ]
            if earlier:
                messages = [
                    {"role": "user", "content": "before"},
                    *exchange,
                    {"role": "user", "content": message},
                ]
            else:
                messages = [{"role": "user", "content": message}, *exchange]
            text, calls = _answer(_request(messages))
            assert text or calls
            assert "couldn't work that out" not in text, (message, content)


def test_which_tasks_are_overdue_counts_them_all_on_the_sample_workspace() -> None:
    """Was "**Overdue tasks** (5+): … and 0+ more": the page's overdue rows counted, not the tasks."""
    from tierwise.workspace.sample import generate_workspace

    store = Store.open("sqlite://")
    user = store.create_user("maya").id
    generate_workspace(store, user, today=date(2026, 11, 23))
    clock = lambda: datetime(2026, 11, 23, 10, 30, tzinfo=UTC)  # noqa: E731
    context = WorkspaceContext(store, clock=clock)
    late = context.overdue(user, clock())[1]
    engine = ChatEngine(
        store, OfflineAssistant(), tools=workspace_tools(), context=context, tool_extras={"clock": clock}
    )
    chat = store.create_chat(user).id
    result = asyncio.run(engine.run(user, chat, "Which tasks are overdue?"))
    call = next(e for e in result.events if isinstance(e, ToolCallStart))
    assert json.loads(call.arguments)["overdue"] is True
    shown = result.text.count("(overdue)")
    assert f"**Overdue tasks** ({late}):" in result.text and f"… and {late - shown} more" in result.text
    assert "0+" not in result.text and late > shown > 0
    # the most important first, as the overview lists them (was: the oldest, all medium priority)
    first = result.text.splitlines()[1]
    assert json.loads(call.arguments)["sort_by"] == "priority" and first.startswith("- [high] "), first
    store.close()
