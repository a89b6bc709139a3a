"""Which chats have a turn running, and stopping one: in this process, or in any process serving the store.

The web chat streams a turn from the process its request reached; the stop request, the chat's status
and a second message may reach another (``serve --workers``, several hosts). :class:`RunningTurns`
answers for all of them:

- one process alone keeps its turns' stop events in memory, as before;
- ``shared`` (processes share the store): a turn also holds a lease in the store
  (:meth:`~tierwise.store.shared.SharedMixin.take_turn`), renewed every :data:`RENEW_SECONDS`
  while it streams (:meth:`RunningTurns.held`). A second message to the chat from any process is a
  409; a stop request from any process marks the lease, and the running turn's process sets its
  stop event at the next renewal (so stopping from another process takes up to half a second). A
  process that dies stops renewing: its lease lapses after
  :data:`~tierwise.store.shared.LEASE_SECONDS`.

Store calls go to a worker thread (on PostgreSQL they wait on a socket).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import uuid
from collections.abc import AsyncIterator

import anyio

from tierwise.chat.engine import ChatEngine
from tierwise.server.errors import ApiError

__all__ = ["RENEW_SECONDS", "RUNNING", "RunningTurns"]

log = logging.getLogger(__name__)

RENEW_SECONDS = 0.5
RUNNING = "a turn is already running in this chat; stop it or wait for it to finish"


class RunningTurns:
    """The app's running turns (``app.state.running``)."""

    def __init__(self, engine: ChatEngine, *, shared: bool) -> None:
        self.engine, self.store, self.shared = engine, engine.store, shared
        self.owner = f"{socket.gethostname()[:32]}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._stops: dict[tuple[str, str], asyncio.Event] = {}

    async def start(self, user_id: str, chat_id: str) -> asyncio.Event:
        """Mark a turn of the chat running here; its stop event.

        Raises:
            ApiError: 409, a turn is running in the chat (in this process or, shared, another).
        """
        if self.engine.is_running(user_id, chat_id):
            raise ApiError(409, RUNNING)
        if self.shared:
            taken = await anyio.to_thread.run_sync(self.store.take_turn, user_id, chat_id, self.owner)
            if not taken:
                raise ApiError(409, RUNNING)
        stop = self._stops[(user_id, chat_id)] = asyncio.Event()
        return stop

    @contextlib.asynccontextmanager
    async def held(self, user_id: str, chat_id: str, stop: asyncio.Event) -> AsyncIterator[None]:
        """While the turn :meth:`start` returned ``stop`` for streams: its lease renewed, then let go.

        (A turn whose stream never starts, its client gone first, has its lease lapse.)
        """
        renewing = None
        if self.shared:
            renewing = asyncio.get_running_loop().create_task(self._renew(user_id, chat_id, stop))
        try:
            yield
        finally:
            if self._stops.get((user_id, chat_id)) is stop:
                del self._stops[(user_id, chat_id)]
            if renewing is not None:
                renewing.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await renewing
                try:
                    await anyio.to_thread.run_sync(self.store.end_turn, user_id, chat_id, self.owner)
                except Exception:  # the lease lapses by itself
                    log.exception("letting the turn lease of chat %s go failed", chat_id)

    async def stop(self, user_id: str, chat_id: str) -> bool:
        """Ask the chat's running turn to stop (what it said so far is kept): whether one runs."""
        stop = self._stops.get((user_id, chat_id))
        if stop is not None:
            stop.set()
            return True
        if self.shared:
            return await anyio.to_thread.run_sync(self.store.stop_turn, user_id, chat_id)
        return False

    def is_running(self, user_id: str, chat_id: str) -> bool:
        """Whether a turn of the chat is running, here or (shared) in another process.

        Blocking when shared (a store read): for routes that run in a worker thread.
        """
        if self.engine.is_running(user_id, chat_id):
            return True
        return self.shared and self.store.turn_running(user_id, chat_id)

    async def _renew(self, user_id: str, chat_id: str, stop: asyncio.Event) -> None:
        """Renew the lease until cancelled; set ``stop`` when another process asked for it."""
        while True:
            await asyncio.sleep(RENEW_SECONDS)
            try:
                asked = await anyio.to_thread.run_sync(self.store.renew_turn, user_id, chat_id, self.owner)
            except Exception:  # the database is away for a moment: try again at the next beat
                log.warning("renewing the turn lease of chat %s failed", chat_id, exc_info=True)
                continue
            if asked:
                stop.set()
