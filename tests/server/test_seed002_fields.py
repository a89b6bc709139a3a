"""Seed 002's chat and message fields are real or gone (issue 17, item 4).

``token_limit`` is the chat's budget (set on create and PATCH, honoured by the engine and the
status); ``conversation_summary`` is the narrative; ``last_compression_at``, ``is_in_summary`` and
``created_entities`` are written when they happen; ``tool_results`` is not returned; a
``calendar_date`` chat opens on one day."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from tierwise.budget import Budget
from tierwise.chat.engine import ChatEngine
from tierwise.memory.narrative import Narrative
from tierwise.memory.persist import record_pack
from tierwise.packing import ContextLayer, pack
from tierwise.providers.testing import ScriptedModel, tool_call
from tierwise.server import create_app
from tierwise.store import Audit, Store
from tierwise.store.models import User
from tierwise.tools import tool
from tierwise.workspace.context import WorkspaceContext


@tool(tier="action")
def create_task(title: str) -> dict[str, Any]:
    """Create a task."""
    return {"task": {"id": "task_0000000000ab", "title": title}, "message": f"Created task '{title}'."}


@pytest.fixture
def store() -> Iterator[Store]:
    db = Store.open("sqlite://")
    yield db
    db.close()


def _client(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")


def _user(store: Store) -> str:
    with store.session() as session:
        return str(session.scalars(sa.select(User.id)).one())


def _app(store: Store, model: ScriptedModel, **kw: Any) -> tuple[ChatEngine, Any]:
    engine = ChatEngine(store, model, budget=Budget(window=16_000, reserve=1_000), **kw)
    return engine, create_app(store, engine)


def test_token_limit_is_the_chats_budget_set_on_create_and_patch(store: Store) -> None:
    """Before: every chat said 10,000 while the engine packed with 15,000."""
    model = ScriptedModel()
    model.enqueue("Sure.", "Again.")
    _, app = _app(store, model)

    async def go() -> None:
        async with _client(app) as c:
            default = (await c.post("/api/chats", json={})).json()
            assert default["token_limit"] == 15_000  # what the engine uses, not seed 002's 10,000
            chat = (await c.post("/api/chats", json={"token_limit": 3_000})).json()
            assert chat["token_limit"] == 3_000
            await c.post(f"/api/chats/{chat['id']}/messages", json={"content": "Plan my day"})
            status = (await c.get("/api/context/status", params={"sessionId": chat["id"]})).json()
            assert status["tokenLimit"] == 3_000 == status["budget"]["available"]
            assert status["snapshot"]["pruning_strategy"]["budget"] == 3_000  # the engine packed with it
            assert model.requests[-1].max_tokens == 1_000
            changed = await c.patch(f"/api/chats/{chat['id']}", json={"token_limit": 5_000})
            assert changed.status_code == 200 and changed.json()["token_limit"] == 5_000
            await c.post(f"/api/chats/{chat['id']}/messages", json={"content": "And tomorrow?"})
            snapshots = (await c.get(f"/api/chats/{chat['id']}/snapshots")).json()["snapshots"]
            assert snapshots[0]["pruning_strategy"]["budget"] == 5_000
            for bad in ({"token_limit": 500}, {"token_limit": 90_000}):
                refused = await c.post("/api/chats", json=bad)
                assert refused.status_code == 422 and "token_limit" in refused.json()["error"]
            over = await c.patch(f"/api/chats/{chat['id']}", json={"token_limit": 90_000})
            assert over.status_code == 422
            assert "and 15,000" in over.json()["error"] and "--budget" in over.json()["error"]
            for empty in ({}, {"title": None}):
                nothing = await c.patch(f"/api/chats/{chat['id']}", json=empty)
                assert nothing.status_code == 422 and "Traceback" not in nothing.text
            renamed = await c.patch(f"/api/chats/{chat['id']}", json={"title": "Day plan"})
            assert renamed.json()["title"] == "Day plan" and renamed.json()["token_limit"] == 5_000

    asyncio.run(go())


def test_a_calendar_date_chat_opens_on_that_day(store: Store) -> None:
    """Before: ``calendar_date`` was refused with 422."""
    _, app = _app(store, ScriptedModel())

    async def go() -> None:
        async with _client(app) as c:
            made = await c.post(
                "/api/chats", json={"context_type": "calendar_date", "entity_id": "2026-01-13"}
            )
            assert made.status_code == 201, made.text
            body = made.json()
            assert body["context"]["type"] == "calendar_date" and body["context"]["name"] == "2026-01-13"
            status = (await c.get("/api/context/status", params={"sessionId": body["id"]})).json()
            assert status["currentContext"]["type"] == "calendar_date"
            assert status["currentContext"]["name"] == "Tuesday 13 January 2026"
            for bad, needle in (
                ({"context_type": "calendar_date"}, "YYYY-MM-DD"),
                ({"context_type": "calendar_date", "entity_id": "13/01/2026"}, "YYYY-MM-DD"),
                ({"context_type": "calendar_date", "entity_id": "2026-02-30"}, "not a day"),
                ({"context_type": "calendar_date", "entity_id": "2026-W03-2"}, "YYYY-MM-DD"),
                ({"context_type": "calendar_date", "entity_id": " 2026-01-13"}, "YYYY-MM-DD"),
            ):
                refused = await c.post("/api/chats", json=bad)
                assert refused.status_code == 422 and needle in refused.json()["error"], refused.text

    asyncio.run(go())
    user = _user(store)
    chat = store.list_chats(user)[0]
    layers = WorkspaceContext(store)(user, chat)
    location = next(layer for layer in layers if layer.kind == "location").content
    assert "Calendar: Tuesday 13 January 2026" in str(location)


def test_conversation_summary_is_the_narrative(store: Store) -> None:
    """Before: ``conversation_summary`` was always null."""
    _, app = _app(store, ScriptedModel())

    async def go() -> dict[str, Any]:
        async with _client(app) as c:
            chat = (await c.post("/api/chats", json={})).json()
            assert chat["conversation_summary"] is None
            narrative = Narrative().merge(objective="Plan the Q4 launch.", entities=["Dana"])
            store.update_chat(_user(store), chat["id"], narrative=narrative.to_dict())
            return dict((await c.get(f"/api/chats/{chat['id']}")).json())

    got = asyncio.run(go())
    assert got["conversation_summary"] == "Objective: Plan the Q4 launch.\nNames: Dana"


def test_last_compression_at_is_written_when_a_step_changes_something(store: Store) -> None:
    """Before: ``last_compression_at`` was never written."""
    user = store.create_user("maya").id
    chat = store.create_chat(user).id
    made = pack([ContextLayer("input", "input", [{"role": "user", "content": "Hi"}])], Budget(window=1_000))
    details = {
        "action": "step",
        "threshold": 0.5,
        "tokens_before": 900,
        "tokens_after": 900,
        "changed": False,
    }
    record_pack(store, user, chat, made, also=[Audit("compaction", chat, details=details)])
    assert store.get_chat(user, chat).last_compression_at is None  # a step that changed nothing
    moved = {**details, "tokens_after": 400, "changed": True}
    record_pack(store, user, chat, made, also=[Audit("compaction", chat, details=moved)])
    assert store.get_chat(user, chat).last_compression_at is not None


def test_is_in_summary_marks_the_messages_of_a_summarised_segment(store: Store) -> None:
    """Before: ``is_in_summary`` stayed false on every message."""
    user = store.create_user("maya").id
    chat = store.create_chat(user).id
    for n in range(4):
        store.add_message(
            user, chat, {"role": "user" if n % 2 == 0 else "assistant", "content": f"m{n}"}, token_count=3
        )
    store.save_segment(user, chat, "S1", seq=1, first_seq=0, last_seq=1, header="h", summary="Two lines.")
    store.save_segment(user, chat, "S2", seq=2, first_seq=2, last_seq=3, header="h")  # no summary yet
    flags = [m.is_in_summary for m in store.list_messages(user, chat)]
    assert flags == [True, True, False, False]
    store.save_segment(user, chat, "S1", seq=1, first_seq=0, last_seq=0, header="h", summary="One.")
    assert [m.is_in_summary for m in store.list_messages(user, chat)][:2] == [True, False]


def test_created_entities_are_recorded_and_tool_results_not_returned(store: Store) -> None:
    """Before: ``created_entities`` stayed [] and messages carried a never-written ``tool_results``."""
    model = ScriptedModel()
    model.enqueue(tool_call("create_task", title="Book the venue"), "Created it.")
    _, app = _app(store, model, tools=[create_task])

    async def go() -> tuple[dict[str, Any], list[dict[str, Any]]]:
        async with _client(app) as c:
            chat = (await c.post("/api/chats", json={})).json()["id"]
            await c.post(f"/api/chats/{chat}/messages", json={"content": "Add a task to book the venue"})
            got = (await c.get(f"/api/chats/{chat}")).json()
            messages = (await c.get(f"/api/chats/{chat}/messages")).json()["messages"]
            return got, messages

    chat, messages = asyncio.run(go())
    assert [(e["type"], e["id"], e["title"], e["tool"]) for e in chat["created_entities"]] == [
        ("task", "task_0000000000ab", "Book the venue", "create_task")
    ]
    assert messages and all("tool_results" not in m for m in messages)
