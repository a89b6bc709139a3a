"""A long history is prepared and stored off the event loop, even on SQLite (issue 16, item 4)."""

from __future__ import annotations

import threading
from typing import Any

import httpx
import pytest

from tierwise.budget import Budget
from tierwise.chat.engine import ChatEngine
from tierwise.providers.testing import ScriptedModel
from tierwise.server import create_app, openai_sessions
from tierwise.store import Store

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("messages", [3, 41])
async def test_a_long_history_is_prepared_and_stored_in_a_worker_thread(
    store: Store, messages: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(openai_sessions, "HEAVY_MESSAGES", 20)
    where: dict[str, str] = {}
    prepare, finish = openai_sessions.Sessions.prepare, openai_sessions.Sessions.finish

    def spy(name: str, method: Any) -> Any:
        def wrapped(self: Any, *args: Any, **kwargs: Any) -> Any:
            where[name] = threading.current_thread().name
            return method(self, *args, **kwargs)

        return wrapped

    monkeypatch.setattr(openai_sessions.Sessions, "prepare", spy("prepare", prepare))
    monkeypatch.setattr(openai_sessions.Sessions, "finish", spy("finish", finish))
    app = create_app(
        store, ChatEngine(store, ScriptedModel("Done."), budget=Budget(window=4_000, reserve=500))
    )
    history = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"note {i}"} for i in range(messages)
    ]
    assert history[-1]["role"] == "user"
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as http:
        response = await http.post(
            "/v1/chat/completions", json={"messages": history}, headers={"X-Tierwise-Session": "long"}
        )
        assert response.status_code == 200, response.text
        await app.state.openai_sessions.drain()
    loop = threading.main_thread().name
    if messages > 20 or store.engine.dialect.name != "sqlite":  # SQLite: on the loop unless long
        assert where["prepare"] != loop and where["finish"] != loop
    else:
        assert where["prepare"] == loop and where["finish"] == loop
    (chat,) = store.list_chats(app.state.user_of(None), context_type="api")
    assert len(store.list_messages(chat.user_id, chat.id)) == messages + 1  # nothing lost


async def test_while_heavy_work_runs_the_small_pieces_leave_the_loop_too(store: Store) -> None:
    """A small write on the loop would wait there for the heavy one's commit (SQLite: one writer)."""
    import asyncio

    sessions = openai_sessions.Sessions(
        ChatEngine(store, ScriptedModel(), budget=Budget(window=4_000, reserve=500)), inline=True
    )
    loop_thread = threading.current_thread().name
    release = threading.Event()
    where: list[str] = []

    def heavy_work() -> None:
        release.wait(10)

    def small() -> None:
        where.append(threading.current_thread().name)

    await sessions.run(small)  # nothing heavy: on the loop
    heavy = asyncio.ensure_future(sessions.run(heavy_work, heavy=True))
    await asyncio.sleep(0.05)
    await sessions.run(small)
    await sessions.later(small)
    release.set()
    await heavy
    await sessions.run(small)  # heavy work done: back on the loop
    assert where[0] == loop_thread and where[-1] == loop_thread
    assert loop_thread not in where[1:3]


async def test_while_heavy_work_runs_the_background_pieces_take_turns(store: Store) -> None:
    """Off the loop, the sessions' background pieces still run one at a time (as on it).

    Twenty streams' pieces, each in its own thread at once, competed for the interpreter lock with
    the pieces a request waits for (its pack, its answer) and with the heavy work itself.
    """
    import asyncio

    sessions = openai_sessions.Sessions(
        ChatEngine(store, ScriptedModel(), budget=Budget(window=4_000, reserve=500)), inline=True
    )
    release = threading.Event()
    started = [threading.Event(), threading.Event()]
    running: list[int] = [0]
    most: list[int] = [0]
    guard = threading.Lock()

    def piece(me: int) -> None:
        with guard:
            running[0] += 1
            most[0] = max(most[0], running[0])
        started[me].set()
        started[1 - me].wait(0.5)  # the other piece, if it ran alongside, would have started meanwhile
        with guard:
            running[0] -= 1

    heavy = asyncio.ensure_future(sessions.run(lambda: release.wait(10), heavy=True))
    await asyncio.sleep(0.05)
    await asyncio.gather(sessions.later(lambda: piece(0)), sessions.later(lambda: piece(1)))
    release.set()
    await heavy
    assert most[0] == 1
