"""A long stored chat never holds the event loop: it is loaded (and its head made) in a worker thread,
once however many ask for it, and a backlog of trios is made after the answer (issue 16)."""

from __future__ import annotations

import asyncio
import gc
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from tierwise import Budget
from tierwise.bench.synthetic import synthetic_history, timestamped
from tierwise.chat import memories
from tierwise.chat.engine import ChatEngine
from tierwise.chat.events import DoneEvent, TextEvent
from tierwise.chat.memories import ChatMemories, default_memory
from tierwise.memory.engine import Memory
from tierwise.memory.persist import ChatMemory, StoreBlobs
from tierwise.providers.testing import ScriptedModel
from tierwise.store import Store

pytestmark = pytest.mark.anyio


def _stored_chat(tmp_path: Path, messages: int = 60) -> tuple[Store, str, str]:
    """A SQLite file with one chat of ``messages`` timestamped messages, stored without trios."""
    store = Store.open(f"sqlite:///{tmp_path / 'chats.db'}")
    user = store.create_user("ada").id
    chat = store.create_chat(user).id
    memory = ChatMemory(store, user, chat, default_memory(StoreBlobs(store, user)))
    for message in timestamped(synthetic_history(messages + 2)[1:-1]):
        body = {k: v for k, v in message.items() if k != "timestamp"}
        memory.stage([body], at=datetime.fromisoformat(message["timestamp"]))
    memory.flush()
    return store, user, chat


class _Ticker:
    """How long the event loop went without running a 5 ms ticker (the longest gap)."""

    def __init__(self) -> None:
        self.longest = 0.0
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        last = time.perf_counter()
        while True:
            await asyncio.sleep(0.005)
            now = time.perf_counter()
            self.longest = max(self.longest, now - last)
            last = now

    def __enter__(self) -> _Ticker:
        self._task = asyncio.get_running_loop().create_task(self._run())
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()


async def test_a_long_chat_is_loaded_and_first_packed_off_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, user, chat = _stored_chat(tmp_path)
    monkeypatch.setattr(memories, "HEAVY_MESSAGES", 20)  # the 60-message chat counts as long
    threads: dict[str, list[str]] = {"load": [], "pack": []}
    real_load, real_pack = ChatMemory.load.__func__, ChatMemory.pack  # type: ignore[attr-defined]

    def slow_load(cls: type[ChatMemory], *args: Any, **kwargs: Any) -> ChatMemory:
        threads["load"].append(threading.current_thread().name)
        time.sleep(0.4)  # a long history: the loop must not wait for it
        return real_load(cls, *args, **kwargs)  # type: ignore[no-any-return]

    def slow_pack(self: ChatMemory, *args: Any, **kwargs: Any) -> Any:
        threads["pack"].append(threading.current_thread().name)
        if self.memory.frame is None:  # the head made anew after the load
            time.sleep(0.4)
        return real_pack(self, *args, **kwargs)

    monkeypatch.setattr(ChatMemory, "load", classmethod(slow_load))
    monkeypatch.setattr(ChatMemory, "pack", slow_pack)
    engine = ChatEngine(store, ScriptedModel("Noted.", "Done."), budget=Budget(window=4000, reserve=500))
    main = threading.current_thread().name
    gc.collect()  # the whole suite's heap is not this chat's: a full collection of it stalled the loop
    gc.freeze()  # 0.85 s once in CI (the chat's own work is off the loop)
    try:
        with _Ticker() as ticker:
            first = await engine.run(user, chat, "What is left on the Apollo launch?")
    finally:
        gc.unfreeze()
    assert first.done.reason == "answer"
    assert ticker.longest < 0.3  # the loop kept running while the chat loaded and packed
    assert threads["load"] and main not in threads["load"]
    assert threads["pack"][0] != main  # the first pack after the load: a worker thread
    second = await engine.run(user, chat, "And the website redesign?")
    assert second.done.reason == "answer"
    assert threads["pack"][-1] == main  # later packs of a held chat: on the loop, as before
    assert len(threads["load"]) == 1
    store.close()


async def test_a_short_chat_is_still_loaded_on_the_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, user, chat = _stored_chat(tmp_path, messages=10)
    seen: list[str] = []
    real_load = ChatMemory.load.__func__  # type: ignore[attr-defined]

    def spy(cls: type[ChatMemory], *args: Any, **kwargs: Any) -> ChatMemory:
        seen.append(threading.current_thread().name)
        return real_load(cls, *args, **kwargs)  # type: ignore[no-any-return]

    monkeypatch.setattr(ChatMemory, "load", classmethod(spy))
    engine = ChatEngine(store, ScriptedModel("Noted."))
    assert (await engine.run(user, chat, "Hello?")).done.reason == "answer"
    assert seen == [threading.current_thread().name]  # decision 33: small work stays on the loop
    store.close()


def test_two_callers_get_one_memory_loaded_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store, user, chat = _stored_chat(tmp_path, messages=20)
    held = ChatMemories(store, default_memory)
    loads: list[int] = []
    real_load = ChatMemory.load.__func__  # type: ignore[attr-defined]

    def slow(cls: type[ChatMemory], *args: Any, **kwargs: Any) -> ChatMemory:
        loads.append(1)
        time.sleep(0.3)  # both callers arrive while the first load runs
        return real_load(cls, *args, **kwargs)  # type: ignore[no-any-return]

    monkeypatch.setattr(ChatMemory, "load", classmethod(slow))
    got: list[ChatMemory] = []
    callers = [threading.Thread(target=lambda: got.append(held.load(user, chat)[0])) for _ in range(3)]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join(10)
    assert len(got) == 3 and all(memory is got[0] for memory in got)
    assert loads == [1]
    assert held.held(user, chat) is got[0]
    store.close()


def test_stored_token_counts_are_taken_not_counted_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, user, chat = _stored_chat(tmp_path, messages=80)
    fresh = ChatMemory.load(store, user, chat, default_memory(StoreBlobs(store, user)))
    counted: list[int] = []
    counter = fresh.memory.counter
    real = type(counter).count_message

    def spy(self: Any, message: Any) -> int:
        counted.append(1)
        return real(self, message)

    monkeypatch.setattr(type(counter), "count_message", spy)
    loaded = ChatMemory.load(store, user, chat, default_memory(StoreBlobs(store, user)))
    assert len(counted) <= 8  # a sample checks the counts are this encoding's; the rest are taken
    assert loaded.memory.costs == fresh.memory.costs
    store.close()


def test_counts_of_another_encoding_are_counted_again(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'db.sqlite'}")
    user = store.create_user("ada").id
    chat = store.create_chat(user).id
    said = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"Note {i} on the launch."}
        for i in range(30)
    ]
    store.add_messages(user, chat, said, token_counts=[1] * len(said))  # not what memory counts
    loaded = ChatMemory.load(store, user, chat, Memory())
    assert loaded.memory.costs == [loaded.memory.counter.count_message(m) for m in said]
    store.close()


async def test_upkeep_of_a_backlog_gives_way_to_the_next_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, user, chat = _stored_chat(tmp_path, messages=400)  # ~40 segments, no trios stored
    engine = ChatEngine(
        store, ScriptedModel("Noted.", "Done.", "Fine."), budget=Budget(window=3000, reserve=300)
    )
    real_summarize = Memory._summarize

    def slow_summarize(self: Memory, segment: Any) -> None:
        time.sleep(0.15)  # each trio takes a while (~40 wait: 6 s in all)
        real_summarize(self, segment)

    monkeypatch.setattr(Memory, "_summarize", slow_summarize)
    answered = asyncio.Event()

    async def first() -> None:  # as the web UI reads a turn: to the end of its stream
        async for event in engine.turn(user, chat, "What is left on the Apollo launch?"):
            if isinstance(event, DoneEvent):
                answered.set()  # the answer is out; its upkeep (the backlog's trios) runs on

    started = time.perf_counter()
    reading = asyncio.create_task(first())
    await asyncio.wait_for(answered.wait(), 30)
    assert time.perf_counter() - started < 3.0  # the first pack made only the trios it shows (not 6 s)
    memory = engine.memories.held(user, chat)
    assert memory is not None and memory.memory.backlog  # the head was made with trios waiting
    started, waited = time.perf_counter(), 0.0
    second = []
    async for event in engine.turn(user, chat, "And the website redesign?"):
        second.append(event)
        if isinstance(event, DoneEvent):
            waited = time.perf_counter() - started  # (its own upkeep follows: the backlog's rest)
    assert isinstance(second[-1], DoneEvent) and second[-1].reason == "answer"
    assert any(isinstance(event, TextEvent) for event in second)
    assert waited < 3.0  # ~40 trios of 150 ms were left: the upkeep stopped at its next piece
    await asyncio.wait_for(reading, 30)
    monkeypatch.setattr(Memory, "_summarize", real_summarize)
    await engine.run(user, chat, "Thanks.")  # its upkeep finishes the backlog
    assert not memory.memory.backlog and memory.memory.settled(memory.memory.segments[0])
    stored = {s.id for s in store.list_segments(user, chat)}
    assert {s.id for s in memory.memory.segments if s.closed} <= stored  # written, in slices
    store.close()


async def test_a_turn_stopped_while_its_pack_is_made_off_the_loop_waits_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, user, chat = _stored_chat(tmp_path)
    monkeypatch.setattr(memories, "HEAVY_MESSAGES", 20)
    times: dict[str, float] = {}
    real_pack, real_step = ChatMemory.pack, Memory.maintain_step
    packing = threading.Event()

    def slow_pack(self: ChatMemory, *args: Any, **kwargs: Any) -> Any:
        packing.set()
        time.sleep(0.4)  # the thread cannot be stopped
        try:
            return real_pack(self, *args, **kwargs)
        finally:
            times["packed"] = time.perf_counter()

    def step(self: Memory) -> bool:
        times.setdefault("upkeep", time.perf_counter())
        return real_step(self)

    monkeypatch.setattr(ChatMemory, "pack", slow_pack)
    monkeypatch.setattr(Memory, "maintain_step", step)
    engine = ChatEngine(store, ScriptedModel("Noted."), budget=Budget(window=4000, reserve=500))
    stop = asyncio.Event()

    async def stop_when_packing() -> None:
        while not packing.is_set():
            await asyncio.sleep(0.01)
        stop.set()

    stopper = asyncio.create_task(stop_when_packing())
    result = await engine.run(user, chat, "What is left on the Apollo launch?", stop=stop)
    await stopper
    assert result.done.reason == "stopped"
    assert times["upkeep"] >= times["packed"]  # the memory was not changed under the pack's feet
    store.close()
