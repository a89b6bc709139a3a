"""SQLite has one writer: a small write waits for a long one instead of failing (issue 16)."""

from __future__ import annotations

import threading
import time
from datetime import datetime
from pathlib import Path

import pytest
import sqlalchemy as sa

from tierwise.bench.synthetic import synthetic_history, timestamped
from tierwise.memory.engine import Memory, MemoryPolicy
from tierwise.memory.persist import SEGMENTS_PER_COMMIT, ChatMemory
from tierwise.store import Store
from tierwise.store import engine as store_engine


def test_every_write_transaction_has_the_busy_timeout(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'db.sqlite'}")
    with store.session(write=True) as session:  # BEGIN IMMEDIATE: the connection that waits
        assert session.execute(sa.text("PRAGMA busy_timeout")).scalar() == 30_000
    with store.batch():
        store.create_user("ada")
        with store.session(write=True) as session:  # a batch's transaction
            assert session.execute(sa.text("PRAGMA busy_timeout")).scalar() == 30_000
    store.close()


def test_a_small_write_waits_for_a_long_batch_of_segments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_engine, "_SQLITE_BUSY_SECONDS", 2.0)  # what a writer waits at most
    store = Store.open(f"sqlite:///{tmp_path / 'db.sqlite'}")
    user = store.create_user("ada").id
    chat, other = store.create_chat(user).id, store.create_chat(user).id
    said = [{"role": "user", "content": f"note {i}"} for i in range(30_000)]
    store.add_messages(user, chat, said, token_counts=[3] * len(said))
    begun, errors, took = threading.Event(), [], {}

    def long_batch() -> None:  # a long history's segments, in one transaction (was ~6 s: each save
        # read every message of the chat to find those the segment no longer covers)
        try:
            with store.batch(savepoints=False):
                for i in range(1_500):
                    store.save_segment(
                        user, chat, f"S{i + 1}", seq=i + 1, first_seq=20 * i, last_seq=20 * i + 19, header="h"
                    )
                    begun.set()
        except Exception as exc:
            errors.append(exc)

    def small_write() -> None:  # another client's message, meanwhile
        begun.wait(10)
        started = time.perf_counter()
        try:
            store.add_message(user, other, {"role": "user", "content": "Hello?"}, token_count=3)
        except Exception as exc:
            errors.append(exc)
        took["small"] = time.perf_counter() - started

    threads = [threading.Thread(target=long_batch), threading.Thread(target=small_write)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []  # was: "database is locked" — the batch held the writer past the busy timeout
    assert "small" in took
    assert [m.content for m in store.list_messages(user, other)] == ["Hello?"]
    assert len(store.list_segments(user, chat)) == 1_500


def test_saving_a_segment_reads_only_its_own_messages(tmp_path: Path) -> None:
    """A segment's save touches its own span of messages by index, never a scan of the chat's.

    What made the long batch above slow (~6 s for 1,500 segments over 30,000 messages): each save read
    every message of the chat. Checked by the query plans of the statements a save runs, not by a
    clock, so a busy machine cannot fail it.
    """
    store = Store.open(f"sqlite:///{tmp_path / 'db.sqlite'}")
    user = store.create_user("ada").id
    chat = store.create_chat(user).id
    said = [{"role": "user", "content": f"note {i}"} for i in range(200)]
    store.add_messages(user, chat, said, token_counts=[3] * len(said))
    store.save_segment(user, chat, "S1", seq=1, first_seq=0, last_seq=19, header="h")
    ran: list[tuple[str, object]] = []

    def seen(_conn: object, _cursor: object, statement: str, parameters: object, *_: object) -> None:
        if "chat_messages" in statement:
            ran.append((statement, parameters))

    sa.event.listen(store.engine, "before_cursor_execute", seen)
    try:  # a new segment and a changed one (its span moves: messages it no longer covers lose its id)
        store.save_segment(user, chat, "S2", seq=2, first_seq=20, last_seq=39, header="h", summary="s")
        store.save_segment(user, chat, "S1", seq=1, first_seq=0, last_seq=9, header="h", summary="s")
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", seen)
    assert ran, "a save no longer touches the messages: update this test"
    with store.engine.connect() as connection:
        driver = connection.connection.driver_connection
        assert driver is not None
        for statement, parameters in ran:
            plan = driver.execute(f"EXPLAIN QUERY PLAN {statement}", parameters).fetchall()
            details = " / ".join(str(row[-1]) for row in plan)
            assert "SCAN chat_messages" not in details, (statement, details)
    store.close()
    store.close()


def test_a_segment_moved_releases_only_the_messages_it_left(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'db.sqlite'}")
    user = store.create_user("ada").id
    chat = store.create_chat(user).id
    store.add_messages(
        user, chat, [{"role": "user", "content": str(i)} for i in range(10)], token_counts=[1] * 10
    )
    store.save_segment(user, chat, "S1", seq=1, first_seq=0, last_seq=5)
    store.save_segment(user, chat, "S2", seq=2, first_seq=6, last_seq=9)
    store.save_segment(user, chat, "S1", seq=1, first_seq=0, last_seq=3)  # it shrank
    assert [m.segment_id for m in store.list_messages(user, chat)] == ["S1"] * 4 + [None] * 2 + ["S2"] * 4
    store.close()


def test_many_segments_are_written_in_slices(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'db.sqlite'}")
    user = store.create_user("ada").id
    chat = store.create_chat(user).id
    memory = ChatMemory(store, user, chat, Memory(policy=MemoryPolicy(defer_summaries=True)))
    for message in timestamped(synthetic_history(1_202)[1:-1]):
        body = {k: v for k, v in message.items() if k != "timestamp"}
        memory.stage([body], at=datetime.fromisoformat(message["timestamp"]))
    for segment in memory.memory.segments[:-1]:  # trios as upkeep would make them (cheaply here)
        memory.memory.restore(segment, f"{segment.id} header", f"{segment.id} summary", [])
    closed = len(memory.memory.segments) - 1
    assert closed > 2 * SEGMENTS_PER_COMMIT
    commits: list[int] = []
    sa.event.listen(store.engine, "commit", lambda connection: commits.append(1))
    memory.flush()  # the messages, then the segments in slices, then the rest
    assert len(commits) >= 2 + closed // SEGMENTS_PER_COMMIT
    assert len(store.list_segments(user, chat)) == closed
    assert store.get_chat(user, chat).message_count == 1_200
    commits.clear()
    memory.add({"role": "user", "content": "And now?"})  # a few segments or none: one commit, as before
    assert len(commits) == 1
    store.close()


def test_a_long_staged_history_is_stored_in_slices_and_other_writes_get_in_between(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'db.sqlite'}")
    user = store.create_user("ada").id
    chat, other = store.create_chat(user).id, store.create_chat(user).id
    memory = ChatMemory(store, user, chat, Memory())
    said = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"note {i}"} for i in range(5_001)]
    memory.stage(said)
    commits: list[int] = []
    order: list[str] = []
    sliced, written = threading.Event(), threading.Event()

    def on_commit(connection: object) -> None:
        commits.append(1)
        if len(commits) == 1:  # the first slice is in: another client writes now
            sliced.set()
            written.wait(5)  # … and is first in line for the writer lock when this commit ends

    sa.event.listen(store.engine, "commit", on_commit)

    def small_write() -> None:
        sliced.wait(10)
        threading.Timer(0.2, written.set).start()  # queued at the gate by then
        store.add_message(user, other, {"role": "user", "content": "Hello?"}, token_count=3)
        order.append(f"small after {store.get_chat(user, chat).message_count}")

    thread = threading.Thread(target=small_write)
    thread.start()
    memory.store_staged(per_commit=1_000)  # a commit per 1,000 while more than 1,000 wait
    thread.join(10)
    assert order == ["small after 1000"]  # next in line when the first slice ends (was: polling, by luck)
    assert store.get_chat(user, chat).message_count == 5_000  # a prefix: the rest goes with what it changed
    memory.flush()
    assert [m.content for m in store.list_messages(user, chat)] == [m["content"] for m in said]
    store.close()


def test_the_write_gate_hands_over_in_order() -> None:
    from tierwise.store._base import WriteGate

    gate = WriteGate(timeout_s=5)
    gate.acquire()
    got: list[str] = []

    def writer(name: str) -> None:
        gate.acquire()
        got.append(name)
        gate.release()

    threads = []
    for name in ("first", "second"):
        threads.append(threading.Thread(target=writer, args=(name,)))
        threads[-1].start()
        time.sleep(0.1)  # queued in this order
    gate.release()
    gate.acquire()  # the releasing writer at once again: behind the two already waiting
    got.append("again")
    gate.release()
    for thread in threads:
        thread.join(5)
    assert got == ["first", "second", "again"]


def test_a_writer_that_waits_too_long_at_the_gate_gets_a_clear_error() -> None:
    from tierwise.store._base import WriteGate
    from tierwise.store.errors import StoreError

    gate = WriteGate(timeout_s=0.1)
    gate.acquire()
    with pytest.raises(StoreError, match="busy"):
        gate.acquire()
    gate.release()
    gate.acquire()  # the one that gave up is not in the queue any more
    gate.release()


def test_what_memory_archived_of_a_long_history_is_marked_a_slice_a_commit(tmp_path: Path) -> None:
    """One update of every archived row held SQLite's only writer ~0.5 s for 100,000 messages."""
    store = Store.open(f"sqlite:///{tmp_path / 'db.sqlite'}")
    user = store.create_user("ada").id
    chat = store.create_chat(user).id
    memory = ChatMemory(store, user, chat, Memory())
    said = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"note {i}"} for i in range(3_001)]
    memory.stage(said)
    memory.memory.archived_upto = 2_900  # as a pack over this history leaves it
    archived: list[str] = []

    def on_execute(_conn: object, _cursor: object, statement: str, *_: object) -> None:
        if statement.startswith("UPDATE chat_messages SET is_archived"):
            archived.append(statement)

    sa.event.listen(store.engine, "after_cursor_execute", on_execute)
    memory.store_staged(per_commit=1_000)
    assert len(archived) == 3  # 3,000 stored (the last one waits): 0..999, 1000..1999, 2000..2899
    assert store.get_chat(user, chat).messages_archived == 2_900
    memory.flush()
    assert store.get_chat(user, chat).messages_archived == 2_900
    stored = store.list_messages(user, chat)
    assert [m.is_archived for m in stored] == [m.seq < 2_900 for m in stored]
    store.close()
