"""Earlier tool results as recaps (issue 17): what the workspace tools' results are re-sent as.

On the sample workspace: each recap keeps every record's id (and title), is a fraction of the result,
and says which tool gives the record in full; the offline assistant still resolves "the first one"
and names from recapped history, and answers "show me the X project" from the list's preview.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, date, datetime
from typing import Any

import pytest

from tierwise.chat.events import ToolCallStart
from tierwise.providers.base import Event, ModelRequest, Provider
from tierwise.store import Store
from tierwise.tokens import get_counter
from tierwise.tools import ToolContext, ToolExecutor, ToolRegistry
from tierwise.workspace.app import assistant_engine
from tierwise.workspace.assistant import OfflineAssistant
from tierwise.workspace.recaps import RECAPS, recap_result
from tierwise.workspace.sample import generate_workspace
from tierwise.workspace.tools import WORKSPACE_STRATEGIES, workspace_tools

NOW = datetime(2026, 11, 23, 10, 30, tzinfo=UTC)


class Recording(Provider):
    name = "offline"

    def __init__(self) -> None:
        self.inner = OfflineAssistant()
        self.model = self.inner.model
        self.requests: list[ModelRequest] = []

    async def stream(self, request: ModelRequest) -> AsyncIterator[Event]:
        self.requests.append(request)
        async for event in self.inner.stream(request):
            yield event


class Sample:
    def __init__(self) -> None:
        self.store = Store.open("sqlite://")
        self.user = self.store.create_user("maya").id
        generate_workspace(self.store, self.user, scale=1, seed=0, today=date(2026, 11, 23))
        registry = ToolRegistry(workspace_tools())
        self.executor = ToolExecutor(registry, store=self.store, strategies=WORKSPACE_STRATEGIES)

    def text(self, name: str, **arguments: Any) -> str:
        ctx = ToolContext(user_id=self.user, extras={"clock": lambda: NOW})
        result = asyncio.run(self.executor.execute("c", name, json.dumps(arguments), context=ctx))
        assert result.success, result.content
        return result.content

    def turns(self, *messages: str, **chat: Any) -> tuple[Recording, list[list[str]], list[str]]:
        """Run ``messages`` in one new chat: the model's requests, each turn's tool calls and answers."""
        provider = Recording()
        engine = assistant_engine(self.store, provider, clock=lambda: NOW)
        chat_id = self.store.create_chat(self.user, **chat).id
        calls, answers = [], []
        for message in messages:
            result = asyncio.run(engine.run(self.user, chat_id, message))
            calls.append([e.name for e in result.events if isinstance(e, ToolCallStart)])
            answers.append(result.text)
        return provider, calls, answers


@pytest.fixture(scope="module")
def sample() -> Iterator[Sample]:
    s = Sample()
    yield s
    s.store.close()


_RECORDS = ("task", "project", "note", "tasks", "projects", "notes", "subtasks", "brain_dumps")


def _ids(value: Any) -> set[str]:
    """The ids of the records a result shows: its rows, its record, and the record's rows."""
    found: set[str] = set()
    if isinstance(value, dict):
        found |= {value[k] for k in ("id", "project_id") if isinstance(value.get(k), str)}
        for key in _RECORDS:
            found |= _ids(value.get(key))
    elif isinstance(value, list):
        for row in value:
            found |= _ids(row)
    return found


_FIRST = {"task_id": ("list_tasks", "tasks", "API documentation"), "project_id": ("search_projects",
    "projects", "Q4 launch"), "note_id": ("search_notes", "notes", "ROI calculator")}  # fmt: skip


@pytest.mark.parametrize(
    ("name", "arguments", "at_most"),
    [
        ("list_tasks", {}, 0.45),
        ("search_projects", {}, 0.3),
        ("search_notes", {"query": "pricing"}, 0.3),
        ("get_calendar_events", {}, 0.5),
        ("get_task_details", {"task_id": None}, 0.3),  # its subtasks were already abbreviated
        ("get_project_details", {"project_id": None, "include_tasks": True}, 0.25),
        ("get_note_details", {"note_id": None}, 0.6),
    ],
)
def test_a_recap_keeps_every_id_in_a_fraction_of_the_tokens(
    sample: Sample, name: str, arguments: dict[str, Any], at_most: float
) -> None:
    for key, (tool, rows, query) in _FIRST.items():  # a detail's id: the first hit of a search
        if key in arguments:
            arguments = {**arguments, key: json.loads(sample.text(tool, query=query))[rows][0]["id"]}
    text = sample.text(name, **arguments)
    recap = recap_result(name, text)
    assert recap is not None and RECAPS[name](text) == recap
    data, short = json.loads(text), json.loads(recap)
    if name == "get_calendar_events":  # no event tool takes an id: events keep title and times
        assert [e["summary"] for e in short["events"]] == [e["summary"] for e in data["events"]]
    else:
        assert _ids(short) == _ids(data) and len(_ids(short)) >= 1
        assert "_id)" in short["message"]  # which tool gives a record in full
    assert short["message"].startswith("Recap of an earlier result;")
    counter = get_counter()
    assert counter.count(recap) <= at_most * counter.count(text), (counter.count(recap), counter.count(text))


def test_actions_slots_and_errors_are_kept_as_they_came(sample: Sample) -> None:
    created = sample.text("create_task", title="Recap test task")
    assert recap_result("create_task", created) is None
    slots = sample.text("find_available_slots", timeMin="2026-11-24T09:00", timeMax="2026-11-24T18:00")
    assert recap_result("find_available_slots", slots) is None
    assert recap_result("list_tasks", "error: task 'x' not found; call list_tasks") is None
    assert recap_result("list_tasks", "[1, 2]") is None and recap_result("list_tasks", "{}") is None
    tools = {t.name: t for t in workspace_tools()}
    assert {n for n, t in tools.items() if t.recap is not None} == set(RECAPS)


def test_later_requests_get_the_recap_and_ordinals_still_resolve(sample: Sample) -> None:
    provider, calls, answers = sample.turns("List my tasks", "Tell me more about the first one")
    assert calls == [["list_tasks"], ["get_task_details"]]
    first_turn, later = provider.requests[1], provider.requests[2]
    whole = [m["content"] for m in first_turn.messages if m["role"] == "tool"]
    assert "description_preview" in whole[0]  # read whole in the turn that asked for it
    recapped = [m["content"] for m in later.messages if m["role"] == "tool"]
    assert "description_preview" not in recapped[0] and "Recap of an earlier result" in recapped[0]
    shown_first = answers[0].splitlines()[1]
    assert answers[1].splitlines()[0].split("**")[1] in shown_first  # the first one shown, opened


def test_show_me_a_project_answers_from_its_preview_and_work_on_it_opens_it(sample: Sample) -> None:
    """Was: "show me the hiring project" made three calls (search, details, top tasks) — issue 17."""
    _, calls, answers = sample.turns("Show me the hiring project", "I want to work on it")
    assert calls[0] == ["search_projects"]
    assert answers[0].startswith("**Hiring: Senior Backend Engineer** · active")
    assert "- Context: # Hiring: Senior Backend Engineer" in answers[0] and "work on it" in answers[0]
    assert calls[1][0] == "get_project_details" and "Top open tasks" in answers[1]


def test_a_list_the_turn_moved_on_from_is_recapped_within_the_turn(sample: Sample) -> None:
    provider, calls, _ = sample.turns("Mark the changelog task as done")
    assert calls == [["list_tasks", "update_task"]]
    step2, step3 = ([m["content"] for m in r.messages if m["role"] == "tool"] for r in provider.requests[1:])
    assert "description_preview" in step2[0]  # the list, whole, while the task is being found
    assert "Recap of an earlier result" in step3[0] and "Updated 'Update changelog'" in step3[1]
