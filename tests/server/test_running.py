"""A web chat's running turn, seen from every process serving the store: 409, status, stop, a dead owner."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tierwise.budget import Budget
from tierwise.chat.engine import ChatEngine
from tierwise.providers import TextDelta
from tierwise.providers.testing import Script, ScriptedModel
from tierwise.server import create_app
from tierwise.store import Store

pytestmark = pytest.mark.anyio


class Process:
    """One process serving the store: its own connection, engine and app."""

    def __init__(self, url: str, model: ScriptedModel) -> None:
        self.store = Store.open(url)
        self.model = model
        self.engine = ChatEngine(self.store, model, budget=Budget(window=8_000, reserve=500))
        self.app = create_app(self.store, self.engine, shared=True)

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.ASGITransport(app=self.app), base_url="http://test")


@pytest.fixture
def two(store_url: str) -> Iterator[tuple[Process, Process]]:
    first, second = Process(store_url, ScriptedModel()), Process(store_url, ScriptedModel())
    yield first, second
    first.store.close()
    second.store.close()


def _last_event(body: str) -> dict[str, Any]:
    data = [line.split(":", 1)[1] for line in body.splitlines() if line.startswith("data:")]
    return dict(json.loads(data[-1]))


async def _until_running(process: Process, chat: str) -> None:
    async with process.client() as c:
        for _ in range(300):
            if (await c.get(f"/api/chats/{chat}")).json()["running"]:
                return
            await asyncio.sleep(0.01)
    raise AssertionError("the turn never started")


async def test_another_process_sees_the_turn_refuses_a_second_and_stops_it(
    two: tuple[Process, Process],
) -> None:
    first, second = two
    first.model.enqueue(Script(TextDelta("The venue "), TextDelta("is booked."), delay=5))
    async with first.client() as a, second.client() as b:
        chat = (await a.post("/api/chats", json={})).json()["id"]
        turn = asyncio.create_task(a.post(f"/api/chats/{chat}/messages", json={"content": "Venue?"}))
        await _until_running(second, chat)  # the other process sees it running
        status = (await b.get("/api/context/status", params={"sessionId": chat})).json()
        assert status["running"] is True
        busy = await b.post(f"/api/chats/{chat}/messages", json={"content": "again"})
        assert busy.status_code == 409, busy.text
        assert (await b.delete(f"/api/chats/{chat}")).status_code == 409
        await asyncio.sleep(0.1)  # the first words are out
        started = time.perf_counter()
        assert (await b.post(f"/api/chats/{chat}/stop")).json() == {"stopping": True}
        done = _last_event((await asyncio.wait_for(turn, 10)).text)
        assert done["reason"] == "stopped"
        assert time.perf_counter() - started < 3  # within a renewal or two, not the stream's 5 s
        assert (await b.get(f"/api/chats/{chat}")).json()["running"] is False
        assert (await b.post(f"/api/chats/{chat}/stop")).json() == {"stopping": False}
        messages = (await b.get(f"/api/chats/{chat}/messages")).json()["messages"]
        assert messages[-1]["content"] == "The venue "
        second.model.enqueue("Yes.")  # the chat is free again, from any process
        reply = await b.post(f"/api/chats/{chat}/messages", json={"content": "Booked?"})
        assert _last_event(reply.text)["reason"] == "answer"


async def test_a_dead_processes_turn_lapses(
    two: tuple[Process, Process], monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = two
    monkeypatch.setattr("tierwise.store.shared.LEASE_SECONDS", 0.3)
    async with second.client() as b:
        chat = (await b.post("/api/chats", json={})).json()["id"]
        user = first.app.state.local_user
        assert first.store.take_turn(user, chat, "a process that died")
        assert (await b.get(f"/api/chats/{chat}")).json()["running"] is True
        assert (await b.post(f"/api/chats/{chat}/messages", json={"content": "Hi"})).status_code == 409
        await asyncio.sleep(0.4)  # not renewed: lapsed
        assert (await b.get(f"/api/chats/{chat}")).json()["running"] is False
        second.model.enqueue("Hello.")
        reply = await b.post(f"/api/chats/{chat}/messages", json={"content": "Hi"})
        assert _last_event(reply.text)["reason"] == "answer"
