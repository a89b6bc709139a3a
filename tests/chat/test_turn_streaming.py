"""A turn's text events as a caller reads them: one per chunk, or joined when the caller falls behind."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from tierwise import Budget
from tierwise.chat.engine import ChatEngine
from tierwise.chat.events import DoneEvent, TextEvent
from tierwise.providers.base import Done, Event, ModelRequest, Provider, TextDelta
from tierwise.store import Store

CHUNKS = [f"w{i} " for i in range(40)]


class Burst(Provider):
    """Streams :data:`CHUNKS`, all at once or one per ``gap_s``."""

    name = model = "burst"

    def __init__(self, gap_s: float = 0.0) -> None:
        self.gap_s = gap_s

    async def stream(self, request: ModelRequest) -> AsyncIterator[Event]:
        for text in CHUNKS:
            if self.gap_s:
                await asyncio.sleep(self.gap_s)
            yield TextDelta(text)
        yield Done("stop", self.model)


def _turn(gap_s: float, reader_pause_s: float) -> list[object]:
    store = Store.open("sqlite://")
    user = store.create_user("ada").id
    chat = store.create_chat(user).id
    engine = ChatEngine(store, Burst(gap_s), budget=Budget(window=8_000, reserve=500))

    async def read() -> list[object]:
        events = []
        async for event in engine.turn(user, chat, "Say forty words."):
            events.append(event)
            if isinstance(event, TextEvent) and reader_pause_s:
                await asyncio.sleep(reader_pause_s)  # a busy server: the model gets ahead of it
        return events

    try:
        return asyncio.run(read())
    finally:
        store.close()


def test_a_caller_that_keeps_up_gets_each_chunk() -> None:
    events = _turn(gap_s=0.002, reader_pause_s=0.0)
    texts = [e.text for e in events if isinstance(e, TextEvent)]
    assert texts == CHUNKS


def test_a_caller_that_falls_behind_gets_what_it_missed_in_one_event() -> None:
    events = _turn(gap_s=0.0, reader_pause_s=0.01)
    texts = [e.text for e in events if isinstance(e, TextEvent)]
    assert "".join(texts) == "".join(CHUNKS)  # nothing lost, nothing reordered
    assert len(texts) < len(CHUNKS) // 2  # fewer events: each is a send to the client
    done = events[-1]
    assert isinstance(done, DoneEvent) and done.text == "".join(CHUNKS)
