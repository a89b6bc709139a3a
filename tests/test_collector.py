"""The collector while long work runs: older generations held, survivors frozen, nothing leaked."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator

import pytest

from tierwise import collector
from tierwise.budget import Budget
from tierwise.chat.memories import default_memory
from tierwise.memory.assemble import pack_turn
from tierwise.memory.blobs import InMemoryBlobStore
from tierwise.memory.persist import ChatMemory
from tierwise.store import Store


@pytest.fixture
def serving() -> Iterator[None]:
    """The collector on (as ``tierwise serve`` sets it), the process's settings restored after."""
    thresholds = gc.get_threshold()
    collector.enable()
    try:
        yield
    finally:
        collector.enable(False)
        gc.set_threshold(*thresholds)
        gc.unfreeze()


def test_off_changes_nothing() -> None:
    """Off unless a serving process turns it on: a library call must not change the collector."""
    was = collector.enabled()
    collector.enable(False)
    try:
        thresholds, frozen = gc.get_threshold(), gc.get_freeze_count()
        with collector.long_work():
            assert gc.get_threshold() == thresholds
        assert gc.get_freeze_count() == frozen
    finally:
        collector.enable(was)


def test_off_in_a_fresh_process() -> None:
    import subprocess
    import sys

    code = "from tierwise import collector; import tierwise.chat.engine; print(collector.enabled())"
    assert (
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"
    )


def test_long_work_holds_older_generations_then_freezes_survivors(serving: None) -> None:
    thresholds = gc.get_threshold()
    kept: list[list[int]] = []
    with collector.long_work():
        assert gc.get_threshold()[0] == thresholds[0]  # the youngest are still collected
        assert min(gc.get_threshold()[1:]) > 1_000_000
        kept.extend([i] for i in range(1_000))
        frozen = gc.get_freeze_count()
    assert gc.get_threshold() == thresholds
    assert gc.get_freeze_count() >= frozen + len(kept)  # out of every later scan


def test_nested_and_concurrent_long_work_restore_once(serving: None) -> None:
    thresholds = gc.get_threshold()
    inside = threading.Event()
    release = threading.Event()

    def other() -> None:
        with collector.long_work():
            inside.set()
            release.wait(5)

    thread = threading.Thread(target=other)
    with collector.long_work():
        thread.start()
        assert inside.wait(5)
    assert gc.get_threshold() != thresholds  # the other thread's work still runs
    release.set()
    thread.join(5)
    assert gc.get_threshold() == thresholds


def test_run_long_returns_and_restores_after_an_error(serving: None) -> None:
    thresholds = gc.get_threshold()
    assert collector.run_long(lambda: 42) == 42
    with pytest.raises(ZeroDivisionError):
        collector.run_long(lambda: 1 // 0)
    assert gc.get_threshold() == thresholds


def test_a_chat_memory_holds_no_reference_cycles() -> None:
    """Frozen memories are freed by reference counting alone: a cycle would leak when dropped."""
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        memory = default_memory(InMemoryBlobStore())
        for i in range(600):
            role = "user" if i % 2 == 0 else "assistant"
            memory.add({"role": role, "content": f"note {i}: the venue holds {i} people."}, id=f"m{i}")
        memory.maintain()
        pack_turn(memory, Budget(window=4_000, reserve=500), [{"role": "user", "content": "the venue?"}])
        del memory
        assert gc.collect() == 0
    finally:
        if was:
            gc.enable()


@pytest.fixture
def breaths(serving: None, monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Every breath taken (its length), with long work breathing at every :func:`breathe` call."""
    taken: list[float] = []
    monkeypatch.setattr(collector, "WORK_S", 0.0)
    monkeypatch.setattr(collector, "_requests", 2)  # the long work's request and another
    monkeypatch.setattr(collector.time, "sleep", taken.append)
    return taken


def test_long_work_breathes_and_nothing_else_does(breaths: list[float]) -> None:
    """Long work lets the loop's thread have the interpreter lock; other code never sleeps for it."""
    collector.breathe()
    assert breaths == []  # not in long work
    with collector.long_work():
        for _ in range(3):
            collector.breathe()
    assert breaths == [collector.BREATH_S] * 3
    collector.breathe()
    assert len(breaths) == 3  # long work over
    collector.enable(False)
    with collector.long_work():
        collector.breathe()
    assert len(breaths) == 3  # off: a library call never slows itself down


def test_only_the_thread_of_long_work_breathes(breaths: list[float]) -> None:
    inside, release = threading.Event(), threading.Event()

    def other() -> None:
        with collector.long_work():
            inside.set()
            release.wait(5)

    thread = threading.Thread(target=other)
    thread.start()
    assert inside.wait(5)
    collector.breathe()  # this thread runs no long work
    release.set()
    thread.join(5)
    assert breaths == []


def test_a_long_history_breathes_as_it_is_remembered_stored_and_loaded(
    breaths: list[float], store: Store
) -> None:
    """Each message remembered (staged), stored and loaded again takes its breath when one is due."""
    user = store.create_user("maya")
    chat = store.create_chat(user.id)
    memory = ChatMemory(store, user.id, chat.id)
    history = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"note {i}"} for i in range(40)]
    with collector.long_work():
        memory.stage(history)
        assert len(breaths) >= 40
        staged = len(breaths)
        memory.flush()
        assert len(breaths) >= staged + 40
        loaded = len(breaths)
        ChatMemory.load(store, user.id, chat.id)
        assert len(breaths) >= loaded + 40


def test_a_long_backlogs_upkeep_breathes(breaths: list[float]) -> None:
    """Summarising a long history's backlog (a third of a 100,001-message ingest) takes its breaths.

    ``maintain`` ran every closed segment's summary without one: the event loop's thread waited a
    switch interval for the interpreter lock at each of its socket or SQLite calls meanwhile.
    """
    memory = default_memory(InMemoryBlobStore())
    for i in range(400):
        memory.add({"role": "user" if i % 2 == 0 else "assistant", "content": f"Note {i}: the venue."})
    waiting = len(memory._unsettled)
    assert waiting >= 5
    with collector.long_work():
        memory.maintain()
    assert not memory.unsummarized
    assert len(breaths) >= 2 * waiting  # a breath between segments and between a header and its summary


def test_long_work_alone_does_not_breathe(breaths: list[float]) -> None:
    """Nobody else wants the lock while only the long work's own request is in flight."""
    collector._requests = 0
    with collector.long_work():
        with collector.request():
            collector.breathe()
        assert breaths == []
        with collector.request(), collector.request():
            collector.breathe()
        assert breaths == [collector.BREATH_S]
    assert collector._requests == 0


def test_the_server_counts_its_requests_in_flight(store: Store) -> None:
    from fastapi.testclient import TestClient

    from tierwise.chat.engine import ChatEngine
    from tierwise.providers.testing import ScriptedModel
    from tierwise.server import create_app

    app = create_app(store, ChatEngine(store, ScriptedModel([])))
    seen: list[int] = []

    @app.get("/_counted")
    def counted() -> dict[str, int]:
        seen.append(collector._requests)
        return {}

    with TestClient(app) as client:
        before = collector._requests
        assert client.get("/_counted").status_code == 200
        assert seen == [before + 1] and collector._requests == before
