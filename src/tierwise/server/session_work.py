"""Where a ``/v1`` session's store and memory work runs: on the event loop for SQLite, else in threads.

:class:`SessionWork` is the part of :class:`~tierwise.server.openai_sessions.Sessions` that decides
where and when a piece of work runs (decisions 33, 47, 50): :meth:`SessionWork.run` for work a
request waits for, :meth:`SessionWork.later` for background pieces (one at a time, the loop served
between them), :meth:`SessionWork._spawn` for background tasks and :meth:`SessionWork.drain` to wait
for them on shutdown.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import anyio

from tierwise.collector import run_long

__all__ = ["SessionWork"]

T = TypeVar("T")


class SessionWork:
    """Runs a session's pieces of work: inline on the loop (``inline``: SQLite) or in worker threads."""

    def __init__(self, inline: bool) -> None:
        self.inline = inline
        self._background: set[asyncio.Task[None]] = set()
        self._one_piece = asyncio.Lock()  # background pieces on the loop: one at a time
        self._heavy = 0  # heavy pieces running in threads (then the others leave the loop too)

    async def run(self, work: Callable[[], T], *, heavy: bool = False) -> T:
        """Run store-and-memory ``work``: on the event loop for SQLite, in a worker thread otherwise.

        SQLite is in the process: its calls are CPU work that a worker thread would only contend for
        the interpreter lock with (measured: added p99 1.7 s with threads vs 0.15 s inline, 50
        clients). A PostgreSQL call waits on a socket, so it goes to a worker thread.

        ``heavy`` work (a long history to ingest or load) goes to a worker thread even on SQLite: it
        would hold the loop, and every other client, for its whole length. While heavy work runs,
        every other piece goes to a thread too: SQLite has one writer, and a small write on the loop
        would wait there for the heavy one's commit, holding the loop (measured: 3.2 s).
        """
        if self.inline and not heavy and not self._heavy:
            return work()
        return await self._in_thread(work, heavy)

    async def _in_thread(self, work: Callable[[], T], heavy: bool) -> T:
        """``work`` in a worker thread (counted while it runs, when ``heavy``)."""
        if not heavy:
            return await anyio.to_thread.run_sync(work)
        self._heavy += 1
        try:
            return await anyio.to_thread.run_sync(run_long, work)
        finally:
            self._heavy -= 1

    async def later(self, work: Callable[[], T], *, heavy: bool = False) -> T:
        """:meth:`run` background ``work`` (a piece of it): on the loop, one piece at a time.

        Each piece first lets the loop serve what is waiting (new requests, chunks to relay), and
        pieces of different sessions queue for their turn instead of running back to back: a
        request waits for one piece at most, not for every session's. While heavy work runs they
        go to threads (as in :meth:`run`), still one at a time: twenty streams' pieces in threads at
        once fought the pieces requests wait for, and the heavy work, for the interpreter lock.
        """
        if not self.inline or heavy:
            return await self._in_thread(work, heavy)
        if self._heavy > 0:
            async with self._one_piece:
                return await self._in_thread(work, heavy)
        async with self._one_piece:
            await asyncio.sleep(0)
            if self._heavy > 0:  # heavy work started while this piece waited its turn
                return await self._in_thread(work, heavy)
            return work()

    def _spawn(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """Run ``work`` in the background (:meth:`drain` waits for it)."""
        task = asyncio.get_running_loop().create_task(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    async def drain(self) -> None:
        """Wait for every request and answer still being stored (on shutdown)."""
        while self._background:
            await asyncio.gather(*self._background, return_exceptions=True)
