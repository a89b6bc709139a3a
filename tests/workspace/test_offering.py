"""Tools offered per model call (issue 17): which tools each step gets, the escape, withheld calls."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import UTC, date, datetime
from itertools import pairwise
from typing import Any

import pytest

from tierwise.budget import Budget
from tierwise.chat.events import ToolCallComplete
from tierwise.chat.housekeeping import memory_tools
from tierwise.providers.base import ModelRequest, ToolCall
from tierwise.providers.testing import FunctionModel
from tierwise.store import Store
from tierwise.tokens import get_counter
from tierwise.tools import ToolContext, ToolExecutor, ToolRegistry
from tierwise.tools.offering import MORE_TOOLS, OfferView, asked_for, escape_tool, offered
from tierwise.workspace.app import assistant_engine
from tierwise.workspace.assistant import OfflineAssistant
from tierwise.workspace.offering import WorkspaceOffering
from tierwise.workspace.repository import Workspace
from tierwise.workspace.sample import generate_workspace
from tierwise.workspace.tools import workspace_tools

TASK, PROJ, NOTE = "task_4k7d2x9q1m3a", "proj_4k7d2x9q1m3b", "note_4k7d2x9q1m3c"
NOW = datetime(2026, 11, 23, 10, 30, tzinfo=UTC)
offer = WorkspaceOffering()


def _registry() -> ToolRegistry:
    return ToolRegistry([*workspace_tools(), *memory_tools(), escape_tool()])


def _names(definitions: list[dict[str, Any]]) -> list[str]:
    return [d["function"]["name"] for d in definitions]


def _call(name: str, arguments: dict[str, Any], call_id: str = "c1") -> dict[str, Any]:
    function = {"name": name, "arguments": json.dumps(arguments)}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call_id, "type": "function", "function": function}],
    }


def _result(name: str, content: str, call_id: str = "c1") -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "name": name, "content": content}


# -- the policy ---------------------------------------------------------------------------------------


def test_a_first_step_gets_the_tools_its_message_asks_for() -> None:
    assert set(offer(OfferView(1, "What's on my calendar today?"))) == {"get_calendar_events"}
    assert set(offer(OfferView(1, "Find notes about pricing"))) == {"search_notes"}
    assert set(offer(OfferView(1, "Find me a free hour tomorrow morning"))) == {
        "find_available_slots",
        "get_calendar_events",
    }


def test_a_message_naming_a_project_in_view_gets_the_project_search() -> None:
    """Was: "tasks for the Q4 launch" got list_tasks only; the model asked for search_projects through
    the escape, a model call more (issue 17)."""
    overview = (
        "- Q4 Product Launch · 21% · 30 open tasks · proj_cx8zbrbakffn\n- Tax & Finances · proj_2c1jwd2qamxz"
    )
    asked = "What are my high priority tasks for the Q4 launch?"
    assert set(offer(OfferView(1, asked, seen=overview))) == {"list_tasks", "search_projects"}
    assert set(offer(OfferView(1, "What are my high priority tasks?", seen=overview))) == {"list_tasks"}
    recap = '{"projects":[{"id":"proj_d0ggcmc63p13","name":"Hiring: Senior Backend Engineer"}]}'
    assert "search_projects" in offer(OfferView(1, "Tasks for hiring?", seen=recap))


def test_detail_and_change_tools_need_an_id_of_their_kind_in_view() -> None:
    assert "get_note_details" not in offer(OfferView(1, "Tell me more about the first one"))
    seen = f"- Pricing research ({NOTE})\n- Draft ({TASK})"
    chosen = set(offer(OfferView(1, "Tell me more about the first one", seen=seen)))
    assert {"get_note_details", "get_task_details"} <= chosen and "get_project_details" not in chosen
    assert "update_task" not in offer(OfferView(1, "Mark the changelog task as done"))
    assert "update_task" in offer(OfferView(1, "Mark the changelog task as done", seen=seen))


def test_the_step_after_results_gets_only_what_can_follow() -> None:
    listed = _result("list_tasks", json.dumps({"tasks": [{"id": TASK, "title": "Update changelog"}]}))
    turn = [_call("list_tasks", {"query": "changelog"}), listed]
    assert set(offer(OfferView(2, "Mark the changelog task as done", turn=turn))) == {"update_task"}
    assert set(offer(OfferView(2, "List my tasks", turn=turn))) == set()  # the answer step
    found = _result("search_projects", json.dumps({"projects": [{"id": PROJ, "name": "Q4"}]}))
    turn = [_call("search_projects", {"query": "q4"}), found]
    assert set(offer(OfferView(2, "High priority tasks for the Q4 launch?", turn=turn))) == {"list_tasks"}
    changed = [
        *turn,
        _call("update_task", {"task_id": TASK}, "c2"),
        _result("update_task", f'{{"id": "{TASK}"}}', "c2"),
    ]
    assert set(offer(OfferView(3, "Mark the changelog task as done", turn=changed))) == set()


def test_a_message_no_rule_knows_gets_the_locations_tools() -> None:
    assert set(offer(OfferView(1, "hmm?"))) == {
        "list_tasks",
        "search_projects",
        "search_notes",
        "get_calendar_events",
    }
    in_project = set(offer(OfferView(1, "hmm?", location=("project", PROJ))))
    assert in_project == {"list_tasks", "search_notes", "get_project_details"}


def test_retrieval_tools_only_with_something_to_retrieve() -> None:
    assert not {"open_blob", "recall_segments"} & set(offer(OfferView(1, "List my tasks")))
    blob = "[tool result list_tasks · blob sha256:" + "ab" * 32 + " (open with open_blob)]"
    assert "open_blob" in offer(OfferView(2, "List my tasks", seen=blob))
    assert "recall_segments" in offer(OfferView(1, "List my tasks", segments=True))
    assert "recall_segments" not in offer(OfferView(2, "List my tasks", segments=True))


# -- the escape and its guarantees -------------------------------------------------------------------


def test_the_escape_names_every_withheld_tool_in_one_line() -> None:
    registry = _registry()
    sent = offered(registry, offer, OfferView(1, "What's on my calendar today?"))
    assert _names(sent) == ["get_calendar_events", MORE_TOOLS]
    line = sent[-1]["function"]["description"]
    withheld = set(registry.names()) - {"get_calendar_events", MORE_TOOLS}
    assert all(name in line for name in withheld) and "\n" not in line
    assert get_counter("o200k_base").count_tools(sent) < 200  # all sixteen: ~1,100
    everything = offered(registry, lambda view: registry.names(), OfferView(1))
    assert MORE_TOOLS not in _names(everything) and len(everything) == len(registry) - 1
    assert MORE_TOOLS not in _names(offered(registry, None, OfferView(1)))  # no offering: all, no escape


def test_tools_asked_for_stay_offered_and_a_failed_tool_stays_to_be_fixed() -> None:
    registry = _registry()
    turn = [_call(MORE_TOOLS, {"names": ["schedule_task", "nope"]}), _result(MORE_TOOLS, "Offered …")]
    assert asked_for(turn) == {"schedule_task", "nope"}
    sent = _names(offered(registry, offer, OfferView(2, "What's on my calendar today?", turn=turn)))
    assert "schedule_task" in sent and "nope" not in sent
    failed = [
        _call("update_task", {"task_id": "x"}, "c9"),
        _result("update_task", "error: invalid arguments", "c9"),
    ]
    assert "update_task" in _names(offered(registry, offer, OfferView(2, "hmm", turn=failed)))


def test_more_tools_describes_what_it_offers_and_names_the_tools_when_asked_for_none() -> None:
    registry = _registry()
    executor = ToolExecutor(registry)
    context = ToolContext(extras={"registry": registry})

    def run(arguments: dict[str, Any]) -> str:
        return asyncio.run(executor.execute("c1", MORE_TOOLS, json.dumps(arguments), context=context)).content

    said = run({"names": ["schedule_task"]})
    assert (
        said.startswith("Offered from your next step:")
        and "schedule_task: Put a task on the calendar" in said
    )
    wrong = run({"names": ["book_meeting"]})
    assert wrong.startswith("error: no tool named book_meeting") and "schedule_task" in wrong


# -- the engine -----------------------------------------------------------------------------------------


@pytest.fixture
def sample() -> Iterator[tuple[Store, str]]:
    store = Store.open("sqlite://")
    user = store.create_user("maya").id
    generate_workspace(store, user, scale=1, seed=0, today=date(2026, 11, 23))
    yield store, user
    store.close()


def _scripted(store: Store, replies: list[str | ToolCall], **options: Any) -> tuple[Any, list[list[str]]]:
    """The assistant's engine over a model answering ``replies`` in order; the tool names each call got."""
    answers, sent = iter(replies), []

    def model(request: ModelRequest) -> str | ToolCall:
        sent.append(_names(list(request.tools)))
        return next(answers)

    return _engine(store, model, **options), sent


def _engine(store: Store, model: Any, **options: Any) -> Any:
    """The assistant's engine over ``model`` (a function of the request), at a fixed clock."""
    return assistant_engine(
        store,
        FunctionModel(model),
        budget=Budget(window=60_000),
        clock=lambda: NOW,
        title_provider=None,
        **options,
    )


def test_the_engine_offers_per_step_and_the_escape_reaches_a_withheld_tool(sample: tuple[Store, str]) -> None:
    store, user = sample
    seen: list[list[str]] = []

    def model(request: ModelRequest) -> str | ToolCall:
        names = _names(list(request.tools))
        seen.append(names)
        if len(seen) == 1:
            assert "update_project_context" not in names and MORE_TOOLS in names
            return ToolCall("c1", MORE_TOOLS, json.dumps({"names": ["update_project_context"]}))
        if len(seen) == 2:
            assert "update_project_context" in names  # asked for: offered now
            return ToolCall("c2", "search_projects", "{}")
        return "done"

    engine = _engine(store, model, tool_offering=WorkspaceOffering())
    chat = store.create_chat(user)
    result = asyncio.run(engine.run(user, chat.id, "What's on my calendar today?"))
    assert result.done.reason == "answer" and len(seen) == 3
    assert seen[0] == ["get_calendar_events", MORE_TOOLS]
    assert "update_project_context" in seen[2]  # it stays for the rest of the turn


def test_a_withheld_tool_called_by_name_still_runs(sample: tuple[Store, str]) -> None:
    store, user = sample
    calls: list[str | ToolCall] = [ToolCall("c1", "search_notes", json.dumps({"query": "pricing"})), "done"]
    engine, sent = _scripted(store, calls, tool_offering=WorkspaceOffering())
    chat = store.create_chat(user)
    result = asyncio.run(engine.run(user, chat.id, "What's on my calendar today?"))
    done = [e for e in result.events if isinstance(e, ToolCallComplete)]
    assert "search_notes" not in sent[0] and done[0].success and '"notes"' in done[0].content


def test_the_offline_assistant_answers_every_bench_request_as_with_all_tools() -> None:
    from tierwise.bench.disclosure import BUDGET, DIALOGUES, TODAY
    from tierwise.bench.disclosure import NOW as BENCH_NOW

    answers: dict[str, list[str]] = {}
    schemas: dict[str, int] = {}
    counter = get_counter("o200k_base")
    modes = {"growing": {}, "per_call": {"tools_grow": False}, "all": {"tool_offering": None}}
    for mode, options in modes.items():
        store = Store.open("sqlite://")
        user = store.create_user("bench").id
        generate_workspace(store, user, scale=1, seed=0, today=TODAY)
        requests: list[ModelRequest] = []
        assistant = OfflineAssistant()

        def record(
            request: ModelRequest, assistant: OfflineAssistant = assistant, kept: list[Any] = requests
        ) -> str | ToolCall:
            kept.append(request)
            return assistant.reply(request)

        engine = assistant_engine(
            store,
            FunctionModel(record),
            budget=BUDGET,
            clock=lambda: BENCH_NOW,
            title_provider=None,
            **options,
        )
        texts = []
        for dialogue in DIALOGUES:
            entity = None
            if dialogue.project:
                entity = Workspace(store).search_projects(user, query=dialogue.project, limit=1)[0][0]["id"]
            chat = store.create_chat(user, context_type="project" if entity else "global", entity_id=entity)
            for message in dialogue.requests:
                result = asyncio.run(engine.run(user, chat.id, message))
                assert result.done.reason == "answer", (message, result.text)
                texts.append(result.text)
        answers[mode] = texts
        schemas[mode] = sum(counter.count_tools(r.tools) for r in requests)
        store.close()
    assert answers["growing"] == answers["per_call"] == answers["all"]
    assert schemas["per_call"] < schemas["all"] / 4
    assert schemas["per_call"] < schemas["growing"] < schemas["all"] / 3


def test_api_chats_are_offered_the_chats_toolbox(sample: tuple[Store, str]) -> None:
    """The web chat's turns (``POST /api/chats/{id}/messages``) run the assistant's engine: its offering."""
    import httpx

    from tierwise.server import create_app

    store, _ = sample
    store.create_user("local", user_id="local")
    generate_workspace(store, "local", scale=1, seed=1, today=date(2026, 11, 23))
    engine, sent = _scripted(store, [ToolCall("c1", "get_calendar_events", "{}"), "Two meetings."])

    async def go() -> None:
        transport = httpx.ASGITransport(app=create_app(store, engine))
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
            chat = (await c.post("/api/chats", json={})).json()
            asked = {"content": "What's on my calendar today?"}
            await c.post(f"/api/chats/{chat['id']}/messages", json=asked)

    asyncio.run(go())
    assert sent[0] == ["get_calendar_events", MORE_TOOLS] and sent[1] == sent[0]  # kept: the cache too


def _grows(before: list[str], after: list[str]) -> bool:
    """``after`` keeps ``before``'s tools first, in order (the escape, always last, aside)."""
    kept = [n for n in before if n != MORE_TOOLS]
    return [n for n in after if n != MORE_TOOLS][: len(kept)] == kept


@pytest.mark.parametrize("options", [{}, {"tool_offering": None}], ids=["toolbox", "every tool"])
def test_by_default_a_chats_tool_list_only_grows_at_its_end(
    sample: tuple[Store, str], options: dict[str, Any]
) -> None:
    """The tool list leads the prompt: by default it only grows, so a prompt cache keeps its front."""
    store, user = sample
    replies: list[str | ToolCall] = [
        ToolCall("c1", "list_tasks", "{}"),
        ToolCall("c2", "get_calendar_events", "{}"),
        "Done.",
        ToolCall("c3", "search_notes", json.dumps({"query": "pricing"})),
        "Same.",
    ]
    engine, sent = _scripted(store, replies, **options)
    chat = store.create_chat(user)
    asyncio.run(engine.run(user, chat.id, "What should I work on today?"))
    asyncio.run(engine.run(user, chat.id, "And my notes about pricing?"))
    assert len(sent) == 5
    if options:  # every tool: one list for a turn's calls; later only the retrieval tools join, once
        assert sent[0] == sent[1] == sent[2] and MORE_TOOLS not in sent[0] and set(sent[0]) <= set(sent[3])
        assert {"list_tasks", "get_task_details", "search_notes"} <= set(sent[0])
    else:  # the toolbox: what the turns needed, a tool joining at the end when first offered
        assert all(_grows(a, b) for a, b in pairwise(sent))
        assert len(sent[0]) < len(sent[4]) and "search_notes" not in sent[0] and "search_notes" in sent[3]
