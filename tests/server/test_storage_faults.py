"""Issue 32, part 4: storage faults are told, nothing is lost without the client being told.

The disk is filled for real: SQLite's ``PRAGMA max_page_count`` on the store's one in-memory
connection, so the next write that needs a page fails with ``database or disk is full``, as a full
disk makes it. A read-only database is a ``?mode=ro`` URL (the tests may run as root, whom a
``chmod`` does not stop); ``tierwise serve`` is refused a read-only directory through a read-only
bind mount where the machine allows one (``unshare -m``).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from tierwise.budget import Budget
from tierwise.chat.engine import ChatEngine
from tierwise.providers.base import ModelRequest
from tierwise.providers.testing import FunctionModel, ScriptedModel
from tierwise.server import create_app
from tierwise.server.threaded import serve_in_thread
from tierwise.store import Store
from tierwise.store.faults import StoreNotWritable, check_writable, storage_fault

LONG = "lorem ipsum dolor " * 1_000  # ~18 KB: a write that needs new pages
FULL = "the disk holding the database is full (database or disk is full)"


def _pragma(store: Store, sql: str) -> Any:
    with store.engine.connect() as connection:
        return connection.exec_driver_sql(sql).scalar()


@contextmanager
def disk_full(store: Store) -> Iterator[None]:
    """The store's database cannot grow by a page while the block runs."""
    _pragma(store, f"PRAGMA max_page_count = {_pragma(store, 'PRAGMA page_count')}")
    try:
        yield
    finally:
        _pragma(store, "PRAGMA max_page_count = 1073741823")


def fill(store: Store) -> None:
    _pragma(store, f"PRAGMA max_page_count = {_pragma(store, 'PRAGMA page_count')}")


def _events(body: str) -> list[tuple[str, dict[str, Any]]]:
    out, kind = [], "message"
    for line in body.splitlines():
        if line.startswith("event:"):
            kind = line.split(":", 1)[1].strip()
        elif line.startswith("data:"):
            out.append((kind, json.loads(line.split(":", 1)[1].strip())))
    return out


@pytest.fixture
def store() -> Iterator[Store]:
    opened = Store.open("sqlite://")
    yield opened
    opened.close()


def client(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test", timeout=30)


# -- the web chat -----------------------------------------------------------------------------------


def test_a_web_turn_on_a_full_disk_says_the_message_was_not_stored(store: Store) -> None:
    model = ScriptedModel()
    app = create_app(store, ChatEngine(store, model, budget=Budget(window=16_000, reserve=500)))

    async def go() -> None:
        async with client(app) as c:
            chat = (await c.post("/api/chats", json={})).json()["id"]
            with disk_full(store):
                response = await c.post(f"/api/chats/{chat}/messages", json={"content": LONG})
            assert response.status_code == 200
            events = _events(response.text)
            assert [k for k, _ in events] == ["error", "done"], events
            error = events[0][1]
            assert error["kind"] == "storage" and error["message"].startswith("your message was not stored")
            assert FULL in error["message"]
            assert events[1][1]["reason"] == "error"
            assert model.requests == []  # nothing was sent for a message not kept
            model.enqueue("Stored now.")
            again = _events((await c.post(f"/api/chats/{chat}/messages", json={"content": LONG})).text)
            assert again[-1][1]["reason"] == "answer"
            messages = (await c.get(f"/api/chats/{chat}/messages")).json()["messages"]
            assert [m["role"] for m in messages] == ["user", "assistant"]  # nothing half-stored before

    asyncio.run(go())


def test_a_web_turn_whose_answer_cannot_be_stored_says_so(store: Store) -> None:
    def answer(request: ModelRequest) -> str:
        fill(store)  # the disk fills while the model answers
        return LONG

    app = create_app(
        store, ChatEngine(store, FunctionModel(answer), budget=Budget(window=16_000, reserve=500))
    )

    async def go() -> None:
        async with client(app) as c:
            chat = (await c.post("/api/chats", json={})).json()["id"]
            events = _events((await c.post(f"/api/chats/{chat}/messages", json={"content": "hi"})).text)
            _pragma(store, "PRAGMA max_page_count = 1073741823")
            errors = [d for k, d in events if k == "error"]
            assert errors and errors[0]["kind"] == "storage", events
            assert "could not be stored" in errors[0]["message"] and FULL in errors[0]["message"]
            assert events[-1][0] == "done" and events[-1][1]["reason"] == "error"
            messages = (await c.get(f"/api/chats/{chat}/messages")).json()["messages"]
            assert messages[0]["role"] == "user" and messages[0]["content"] == "hi"  # the user's kept

    asyncio.run(go())


def test_a_read_only_database_fails_the_first_turn_with_words(tmp_path: Path) -> None:
    path = tmp_path / "tierwise.db"
    writable = Store.open(f"sqlite:///{path}")
    user = writable.create_user("ada")
    chat = writable.create_chat(user.id)
    writable.close()
    store = Store.open(f"sqlite:///file:{path}?mode=ro&uri=true")
    try:
        engine = ChatEngine(store, ScriptedModel(), budget=Budget(window=16_000, reserve=500))
        result = asyncio.run(engine.run(user.id, chat.id, "hello"))
    finally:
        store.close()
    (error,) = [e for e in result.events if e.type == "error"]
    assert error.kind == "storage" and "the database is read-only" in error.message  # type: ignore[union-attr]
    assert "TIERWISE_DATA_DIR" in error.message  # type: ignore[union-attr]


# -- /v1 --------------------------------------------------------------------------------------------


HI = {"model": "m", "messages": [{"role": "user", "content": LONG}]}


@pytest.mark.parametrize("stream", [False, True])
def test_v1_refuses_with_503_what_it_could_not_store(store: Store, stream: bool) -> None:
    model = ScriptedModel()
    model.enqueue("never sent")
    app = create_app(store, ChatEngine(store, model, budget=Budget(window=16_000, reserve=500)))

    async def go() -> httpx.Response:
        async with client(app) as c:
            with disk_full(store):
                return await c.post("/v1/chat/completions", json={**HI, "stream": stream})

    response = asyncio.run(go())
    assert response.status_code == 503, response.text
    error = response.json()["error"]
    assert error["code"] == "storage_unavailable" and FULL in error["message"]
    assert response.headers["x-should-retry"] == "false"  # the SDKs would meet the same disk


@pytest.mark.parametrize("stream", [False, True])
def test_v1_says_when_the_answer_could_not_be_stored(
    store: Store, stream: bool, caplog: pytest.LogCaptureFixture
) -> None:
    async def answer(request: ModelRequest) -> str:
        await asyncio.sleep(0.2)  # the request's messages are stored meanwhile
        fill(store)
        return LONG

    app = create_app(  # (shared: a stream's answer is stored before [DONE], as several processes need)
        store,
        ChatEngine(store, FunctionModel(answer), budget=Budget(window=16_000, reserve=500)),
        shared=stream,
    )

    async def go() -> httpx.Response:
        async with client(app) as c:
            return await c.post("/v1/chat/completions", json={**HI, "stream": stream})

    response = asyncio.run(go())
    _pragma(store, "PRAGMA max_page_count = 1073741823")
    assert response.status_code == 200
    if stream:
        lines = response.text.splitlines()
        comment = [line for line in lines if line.startswith(": tierwise could not store this answer")]
        assert comment and FULL in comment[0]
        assert lines.index(comment[0]) < lines.index("data: [DONE]")
    else:
        assert response.headers["X-Tierwise-Stored"] == "false"
        assert response.json()["choices"][0]["message"]["content"] == LONG
    assert any("storing the answer of session" in r.message and FULL in r.message for r in caplog.records)


def test_a_stored_v1_answer_says_so(store: Store) -> None:
    model = ScriptedModel()
    model.enqueue("Fine.")
    app = create_app(store, ChatEngine(store, model, budget=Budget(window=16_000, reserve=500)))

    async def go() -> httpx.Response:
        async with client(app) as c:
            return await c.post("/v1/chat/completions", json={**HI})

    assert asyncio.run(go()).headers["X-Tierwise-Stored"] == "true"


@pytest.mark.parametrize("shared", [True, False], ids=["shared", "one-process"])
def test_the_v1_answer_is_stored_before_done(tmp_path: Path, shared: bool) -> None:
    """The client that reads ``[DONE]`` finds the answer in the database file: another process, or a
    process killed then, has it (decision 77)."""
    path = tmp_path / "tierwise.db"
    store = Store.open(f"sqlite:///{path}")
    model = ScriptedModel()
    found = []
    try:
        app = create_app(
            store, ChatEngine(store, model, budget=Budget(window=16_000, reserve=500)), shared=shared
        )
        with serve_in_thread(app) as base, httpx.Client(base_url=base, timeout=30) as http:
            for turn in range(5):
                model.enqueue(f"answer {turn}")
                body = {"model": "m", "messages": [{"role": "user", "content": f"question {turn}"}]}
                with http.stream("POST", "/v1/chat/completions", json={**body, "stream": True}) as response:
                    for line in response.iter_lines():
                        if line == "data: [DONE]":
                            with sqlite3.connect(path) as reader:
                                found.append(
                                    reader.execute(
                                        "SELECT count(*) FROM chat_messages WHERE role = 'assistant'"
                                        " AND content LIKE ?",
                                        (f"%answer {turn}%",),
                                    ).fetchone()[0]
                                )
                            break
    finally:
        store.close()
    assert found == [1] * 5


# -- serve refuses what it cannot write -----------------------------------------------------------


def _serve(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tierwise.cli", "serve", "--port", "1", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


def test_serve_refuses_a_read_only_database_url(tmp_path: Path) -> None:
    Store.open(f"sqlite:///{tmp_path / 'tierwise.db'}").close()
    done = _serve("--db", f"sqlite:///file:{tmp_path / 'tierwise.db'}?mode=ro&uri=true")
    assert done.returncode == 2, done.stderr
    assert "mode=ro" in done.stderr and "Traceback" not in done.stderr + done.stdout


def test_serve_refuses_a_data_directory_it_cannot_create(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("")
    done = _serve("--db", f"sqlite:///{tmp_path / 'a-file' / 'tierwise.db'}")
    assert done.returncode == 2
    assert "cannot create the data directory" in done.stderr and "TIERWISE_DATA_DIR" in done.stderr
    assert "Traceback" not in done.stderr + done.stdout


def _read_only_bind_works() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        ["unshare", "-m", "sh", "-c", "mount --bind / /mnt && mount -o remount,ro,bind /mnt"],
        capture_output=True,
    )
    return probe.returncode == 0


@pytest.mark.skipif(not _read_only_bind_works(), reason="needs unshare -m and bind mounts")
def test_serve_refuses_a_read_only_data_directory_even_as_root(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    Store.open(f"sqlite:///{data / 'tierwise.db'}").close()  # an existing database, read-only now
    command = (
        f"mount --bind {data} {data} && mount -o remount,ro,bind {data} && "
        f"{sys.executable} -m tierwise.cli serve --port 1"
    )
    env = {"PATH": "/usr/bin:/bin", "TIERWISE_DATA_DIR": str(data), "HOME": str(tmp_path)}
    done = subprocess.run(
        ["unshare", "-m", "sh", "-c", command], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 2, done.stderr
    assert f"the data directory {data} is not writable (it is on a read-only file system)" in done.stderr
    assert "Traceback" not in done.stderr and "TIERWISE_DATA_DIR" in done.stderr
    assert "Traceback" not in done.stderr + done.stdout


def test_check_writable_and_the_fault_words(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    check_writable(f"sqlite:///{tmp_path / 'new' / 'tierwise.db'}")  # created, writable: fine
    check_writable("sqlite://")
    monkeypatch.setattr("os.access", lambda path, mode: False)  # what a non-root user meets
    with pytest.raises(StoreNotWritable, match="is not writable; make it writable"):
        check_writable(f"sqlite:///{tmp_path / 'new' / 'tierwise.db'}")
    assert storage_fault(sqlite3.OperationalError("database is locked")) is not None
    assert storage_fault(OSError(28, "No space left on device")) == (
        "the disk holding the database is full (No space left on device); free some space"
    )
