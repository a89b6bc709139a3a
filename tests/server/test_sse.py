"""The web chat's event stream: framing, keep-alive pings while quiet, and a client that goes away."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx

from tierwise.budget import Budget
from tierwise.chat.engine import ChatEngine
from tierwise.providers import TextDelta
from tierwise.providers.testing import Script, ScriptedModel
from tierwise.server import create_app
from tierwise.server.sse import PING, EventStream, frame
from tierwise.server.threaded import serve_in_thread
from tierwise.store import Store


def test_an_event_is_framed_as_sse_starlette_framed_it() -> None:
    assert frame("done", '{"type": "done"}') == b'event: done\r\ndata: {"type": "done"}\r\n\r\n'
    assert frame("text", "two\nlines") == b"event: text\r\ndata: two\r\ndata: lines\r\n\r\n"


async def _call(response: EventStream, disconnect: asyncio.Event | None = None) -> list[dict[str, Any]]:
    """Run the response as an ASGI server would (spec 2.3, as uvicorn's); what it sent."""
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        if disconnect is None:
            await asyncio.Event().wait()  # never
        else:
            await disconnect.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "asgi": {"spec_version": "2.3"}, "method": "POST"}
    await response(scope, receive, send)
    return sent


def _bodies(sent: list[dict[str, Any]]) -> list[bytes]:
    return [m["body"] for m in sent if m["type"] == "http.response.body"]


def test_a_quiet_stream_is_pinged_and_never_after_its_end() -> None:
    async def events() -> AsyncIterator[bytes]:
        yield frame("text", "a")
        await asyncio.sleep(0.35)  # a slow tool: quiet for several ping intervals
        yield frame("done", "{}")

    async def run() -> tuple[list[bytes], list[bytes]]:
        sent = await _call(EventStream(events(), ping_s=0.1))
        during = _bodies(sent)
        await asyncio.sleep(0.25)  # the timer must be gone with the stream
        return during, _bodies(sent)

    during, after = asyncio.run(run())
    assert during[0] == frame("text", "a") and during[-2:] == [frame("done", "{}"), b""]
    assert 2 <= during.count(PING) <= 4  # one per quiet 0.1 s, none while events flow
    assert after == during


def test_a_busy_stream_is_not_pinged() -> None:
    async def events() -> AsyncIterator[bytes]:  # 1 s in all, twice the ping's wait; each gap a tenth of it
        for i in range(20):
            yield frame("text", str(i))
            await asyncio.sleep(0.05)

    assert PING not in _bodies(asyncio.run(_call(EventStream(events(), ping_s=0.5))))


def test_a_client_that_goes_away_closes_the_events_at_once() -> None:
    closed: list[str] = []

    async def events() -> AsyncIterator[bytes]:
        try:
            yield frame("text", "a")
            await asyncio.sleep(30)  # a long turn
            yield frame("done", "{}")
        finally:
            closed.append("closed")

    async def run() -> tuple[list[dict[str, Any]], float]:
        gone = asyncio.Event()
        started = time.perf_counter()
        task = asyncio.create_task(_call(EventStream(events()), gone))
        await asyncio.sleep(0.05)
        gone.set()
        sent = await asyncio.wait_for(task, 5)
        return sent, time.perf_counter() - started

    sent, took = asyncio.run(run())
    assert closed == ["closed"] and took < 2
    assert _bodies(sent) == [frame("text", "a")]  # nothing after the client left


def _read_first_event(sock: socket.socket) -> bytes:
    seen = b""
    while b"event: text" not in seen:
        chunk = sock.recv(4096)
        assert chunk, "the stream ended before its first text"
        seen += chunk
    return seen


def test_closing_the_web_chats_stream_stops_the_turn(tmp_path: Any) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'c.db'}")
    model = ScriptedModel()
    model.enqueue(Script(*(TextDelta(f"word{i} ") for i in range(50)), delay=0.2))  # 10 s in all
    engine = ChatEngine(store, model, budget=Budget(window=8_000, reserve=500))
    app = create_app(store, engine)
    user = app.state.local_user
    try:
        with serve_in_thread(app) as base:
            chat = httpx.post(f"{base}/api/chats", json={}).json()["id"]
            host, port = base.removeprefix("http://").rsplit(":", 1)
            body = json.dumps({"content": "Tell me everything."}).encode()
            with socket.create_connection((host, int(port))) as sock:
                sock.sendall(
                    f"POST /api/chats/{chat}/messages HTTP/1.1\r\nHost: x\r\n".encode()
                    + f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode()
                    + body
                )
                _read_first_event(sock)
                assert engine.is_running(user, chat)
            started = time.perf_counter()  # the user closed the tab mid-answer
            while engine.is_running(user, chat):
                assert time.perf_counter() - started < 5, "the turn ran on after its client left"
                time.sleep(0.05)
            messages = store.list_messages(user, chat)
    finally:
        store.close()
    said = str(messages[-1].content)
    assert messages[-1].role == "assistant" and said.startswith("word0") and "word49" not in said
