"""Several processes serving one database: a session is right whichever of them a request reaches.

Each "process" is an app with its own store connection, chat engine and memories, over the same
database (a SQLite file or the PostgreSQL server), as ``tierwise serve --workers`` or several hosts
behind a load balancer run them.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.server.test_openai_compat import Service, service
from tierwise.budget import Budget
from tierwise.chat.costguard import CostGuard, Limits, StoreLedger
from tierwise.chat.engine import ChatEngine
from tierwise.providers.testing import FunctionModel
from tierwise.server import create_app
from tierwise.store import Store

pytestmark = pytest.mark.anyio


def _echo(request: Any) -> str:
    """The fake model's answer names the last user message, so each answer is unique and checkable."""
    last = [m for m in request.messages if m.get("role") == "user"][-1]
    return f"About {last['content']}"


@pytest.fixture
def stores(store_url: str) -> Iterator[list[Store]]:
    opened = [Store.open(store_url) for _ in range(3)]
    yield opened
    for store in opened:
        store.close()


def processes(stores: list[Store]) -> list[Service]:
    return [service(store, FunctionModel(_echo, model="fake"), shared=True) for store in stores]


async def _post(svc: Service, session: str, history: list[dict[str, Any]]) -> httpx.Response:
    async with svc.http() as http:
        return await http.post(
            "/v1/chat/completions", json={"messages": history}, headers={"X-Tierwise-Session": session}
        )


async def test_a_session_spread_over_processes_keeps_every_message_once_in_order(stores: list[Store]) -> None:
    services = processes(stores)
    pick = random.Random(7)
    histories: dict[str, list[dict[str, Any]]] = {f"s{i}": [] for i in range(6)}
    for turn in range(5):
        for session, history in histories.items():
            history.append({"role": "user", "content": f"{session} question {turn}"})
            reply = await _post(pick.choice(services), session, history)
            assert reply.status_code == 200, reply.text
            history.append({"role": "assistant", "content": reply.json()["choices"][0]["message"]["content"]})
    # Read with no process drained: every answer was stored before its client had it.
    store = stores[0]
    user = services[0].user
    chats = store.list_chats(user, context_type="api")
    assert len(chats) == len(histories)  # no session split into two chats
    assert store.list_chats(user, context_type="api-superseded") == []
    for chat in chats:
        stored = [m.message["content"] for m in store.list_messages(user, chat.id)]
        assert stored == [m["content"] for m in histories[chat.entity_id]]


async def test_a_process_packs_what_another_process_stored_since(stores: list[Store]) -> None:
    first, second = processes(stores[:2])
    history: list[dict[str, Any]] = [{"role": "user", "content": "one"}]
    for turn, svc in enumerate((first, second, first)):  # the first holds the chat from its first request
        reply = await _post(svc, "s", history)
        history += [reply.json()["choices"][0]["message"], {"role": "user", "content": f"turn {turn + 1}"}]
    # The third request (on the first process again) was packed with the second process's answer.
    model = first.engine.provider
    assert isinstance(model, FunctionModel)
    sent = [m.get("content") for m in model.requests[-1].messages]
    assert sent[-3:] == ["turn 1", "About turn 1", "turn 2"]
    (chat,) = first.store.list_chats(first.user, context_type="api")
    assert len(first.store.list_messages(first.user, chat.id)) == 6


async def test_a_chat_another_process_deleted_starts_afresh_with_the_whole_history(
    stores: list[Store],
) -> None:
    first, second = processes(stores[:2])
    history: list[dict[str, Any]] = [{"role": "user", "content": "one"}]
    reply = await _post(first, "s", history)
    history += [reply.json()["choices"][0]["message"], {"role": "user", "content": "two"}]
    (chat,) = second.store.list_chats(second.user, context_type="api")
    second.store.delete_chat(second.user, chat.id)
    again = await _post(first, "s", history)  # the first process still holds the deleted chat
    assert again.status_code == 200, again.text
    (fresh,) = first.store.list_chats(first.user, context_type="api")
    assert fresh.id != chat.id
    assert [m.message["content"] for m in first.store.list_messages(first.user, fresh.id)] == [
        "one",
        "About one",
        "two",
        "About two",
    ]


async def test_a_cost_guard_sees_the_spend_another_process_recorded(stores: list[Store]) -> None:
    apps = []
    for store in stores[:2]:
        guard = CostGuard(Limits(session_tokens=1), StoreLedger(store))  # the first turn uses it all
        engine = ChatEngine(
            store, FunctionModel(_echo, model="fake"), budget=Budget(window=4_000, reserve=500), guard=guard
        )
        apps.append(create_app(store, engine, shared=True))
    history: list[dict[str, Any]] = [{"role": "user", "content": "one"}]
    session = {"X-Tierwise-Session": "s"}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=apps[0]), base_url="http://a") as http:
        reply = await http.post("/v1/chat/completions", json={"messages": history}, headers=session)
    assert reply.status_code == 200, reply.text
    history += [reply.json()["choices"][0]["message"], {"role": "user", "content": "two"}]
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=apps[1]), base_url="http://b") as http:
        refused = await http.post("/v1/chat/completions", json={"messages": history}, headers=session)
    assert refused.status_code == 429, refused.text  # over the session's tokens, recorded by the other
