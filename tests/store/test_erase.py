"""Delete means gone: after a chat is deleted, no byte of it is left in the SQLite files (issue 32).

The chat is written through the web chat API (a user message, a tool call and its result, the
answer, a long message past one page), deleted, and the raw bytes of ``.db``, ``-wal`` and ``-shm``
are searched for its marker: once the background checkpointer has truncated the log, and again
after the store is closed and opened.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx

from tierwise.budget import Budget
from tierwise.chat.engine import ChatEngine
from tierwise.providers.testing import ScriptedModel, tool_call
from tierwise.server import create_app
from tierwise.store import Store
from tierwise.store.checkpoint import Checkpointer
from tierwise.store.errors import NotFoundError
from tierwise.tools import tool

MARKER = "zq9MARKERx7k"


@tool(tier="list")
def look_up(key: str) -> str:
    """Look up a key."""
    return f"the value of {key} is {MARKER}-tool " + "filler " * 200


def _leftovers(path: Path) -> dict[str, int]:
    """How many times the marker occurs in each of the database's files (UTF-8 and UTF-16)."""
    found = {}
    for name in (path.name, path.name + "-wal", path.name + "-shm"):
        file = path.with_name(name)
        if file.exists():
            data = file.read_bytes()
            found[name] = data.count(MARKER.encode()) + data.count(MARKER.encode("utf-16-le"))
    return found


async def _write_chat(store: Store, engine: ChatEngine, checkpointer: Checkpointer) -> str:
    """Write two chats, checkpoint them into the database file, delete the one with the marker."""
    app = create_app(store, engine)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        keep = (await client.post("/api/chats", json={"title": "kept"})).json()["id"]
        await client.post(f"/api/chats/{keep}/messages", json={"content": "an ordinary question"})
        chat = (await client.post("/api/chats", json={"title": f"about {MARKER}"})).json()["id"]
        sent = await client.post(f"/api/chats/{chat}/messages", json={"content": f"my secret is {MARKER}"})
        assert sent.status_code == 200
        long = f"{MARKER} " + "a long message past one page " * 400
        await client.post(f"/api/chats/{chat}/messages", json={"content": long})
        checkpointer.checkpoint()  # as the thread does every second: the chat is in the .db now
        assert _leftovers(store_path(store))[store_path(store).name] > 0
        assert (await client.delete(f"/api/chats/{chat}")).status_code == 204
    return str(keep)


def store_path(store: Store) -> Path:
    """The SQLite file of ``store``."""
    database = store.engine.url.database
    assert database is not None
    return Path(database)


def test_a_deleted_chat_leaves_no_byte_in_the_database_files(tmp_path: Path) -> None:
    path = tmp_path / "gone.db"
    store = Store.open(f"sqlite:///{path}")
    model = ScriptedModel()
    model.enqueue("Fine.", tool_call("look_up", key="k"), f"It is {MARKER}-answer.", "Noted.")
    engine = ChatEngine(store, model, tools=[look_up], budget=Budget(window=16_000, reserve=500))
    try:
        checkpointer = store._checkpointer
        assert isinstance(checkpointer, Checkpointer)
        checkpointer.interval_s = 3600.0  # only the delete's request wakes it
        keep = asyncio.run(_write_chat(store, engine, checkpointer))
        assert checkpointer.wait_truncated(10)
        assert sum(_leftovers(path).values()) == 0, _leftovers(path)
    finally:
        store.close()
    assert sum(_leftovers(path).values()) == 0, _leftovers(path)
    again = Store.open(f"sqlite:///{path}")
    try:
        assert sum(_leftovers(path).values()) == 0, _leftovers(path)
        with again.engine.connect() as connection:  # the other chat is whole
            sql = "SELECT count(*) FROM chat_messages WHERE chat_id = ?"
            assert connection.exec_driver_sql(sql, (keep,)).scalar() == 2
    finally:
        again.close()


def test_the_search_finds_a_chat_that_is_there(tmp_path: Path) -> None:
    """The marker is in the files while the chat exists (the search above can find it)."""
    path = tmp_path / "kept.db"
    store = Store.open(f"sqlite:///{path}")
    try:
        ada = store.create_user("ada")
        chat = store.create_chat(ada.id)
        store.add_message(ada.id, chat.id, {"role": "user", "content": MARKER}, token_count=3)
        assert sum(_leftovers(path).values()) > 0
    finally:
        store.close()


def test_a_deleted_chat_takes_the_blobs_only_it_used(store: Store) -> None:
    ada = store.create_user("ada")
    gone, kept = store.create_chat(ada.id), store.create_chat(ada.id)
    own = store.put_blob(ada.id, f"{MARKER} only in the deleted chat".encode()).sha256
    shared = store.put_blob(ada.id, b"used by both chats").sha256
    pointed = store.put_blob(ada.id, b"a compressed result the kept chat points at").sha256
    for chat, shas in ((gone, (own, shared, pointed)), (kept, (shared,))):
        asked = store.add_message(ada.id, chat.id, {"role": "assistant", "content": "looking"}, token_count=2)
        for sha in shas:
            store.add_tool_call(ada.id, chat.id, asked.id, "read", {}, blob_sha256=sha)
    store.add_message(ada.id, kept.id, {"role": "tool", "content": f"[stored as {pointed}]"}, token_count=9)
    store.delete_chat(ada.id, gone.id)
    left = {sha for sha in (own, shared, pointed) if _has_blob(store, ada.id, sha)}
    assert left == {shared, pointed}


def _has_blob(store: Store, user_id: str, sha: str) -> bool:
    try:
        store.blob_info(user_id, sha)
    except NotFoundError:
        return False
    return True


def test_every_sqlite_connection_zeroes_what_it_deletes(tmp_path: Path) -> None:
    """Not every SQLite build has ``secure_delete`` on by default (Debian's has; python.org's not)."""
    for url in (f"sqlite:///{tmp_path / 's.db'}", "sqlite://"):
        store = Store.open(url)
        try:
            with store.engine.connect() as connection:
                assert connection.exec_driver_sql("PRAGMA secure_delete").scalar() == 1
        finally:
            store.close()


def test_a_deleted_response_leaves_no_byte_either(tmp_path: Path) -> None:
    """``DELETE /v1/responses/{id}`` of a response nothing builds on: its row goes, and the log too."""
    path = tmp_path / "responses.db"
    store = Store.open(f"sqlite:///{path}")
    try:
        checkpointer = store._checkpointer
        assert isinstance(checkpointer, Checkpointer)
        checkpointer.interval_s = 3600.0
        ada = store.create_user("ada")
        said = [{"role": "user", "content": f"my secret is {MARKER}"}]
        answer = {"id": "resp_1", "output": [{"type": "message", "content": [{"text": f"{MARKER}!"}]}]}
        store.put_api_response(ada.id, answer, session_key="k", base_id=None, system=[], added=said)
        checkpointer.checkpoint()
        assert _leftovers(path)[path.name] > 0
        assert store.delete_api_response(ada.id, "resp_1")
        assert checkpointer.wait_truncated(10)
        assert sum(_leftovers(path).values()) == 0, _leftovers(path)
    finally:
        store.close()
