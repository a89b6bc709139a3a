"""Responses API response ids: where each one is in its session, for every process serving the store.

A response id (``resp_…``) is a point in a ``/v1`` session's conversation. :class:`ResponseLog`
keeps, per id, the session key, the leading system messages, the conversation up to and including
that answer, and the response object: in process (the newest :data:`KEPT`, holding at most
:data:`KEPT_MESSAGES` messages) and, unless the client sent ``store: false``, in the store
(:mod:`tierwise.store.responses`), so ``previous_response_id``, ``GET`` and ``DELETE`` work after a
restart and in every process sharing a database (decision 48: nothing a request needs lives in one
process).

A stored response holds only what it added to its *base*: the response it continues — the
``previous_response_id``, or, for a client that resends its whole input, the session's newest
stored response when its conversation is where this one starts. A chain of a hundred steps thus
stores each message once, and is read back in one query.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, TypeVar

from anyio import to_thread
from fastapi import Request

from tierwise.chat.memories import HEAVY_MESSAGES
from tierwise.errors import TierwiseError
from tierwise.server.gateway import sessions_of
from tierwise.server.openai_sessions import Sessions
from tierwise.store import Store

__all__ = ["KEPT", "KEPT_MESSAGES", "ResponseLog", "Stored"]

log = logging.getLogger(__name__)
T = TypeVar("T")

KEPT = 1_000
"""How many responses a process keeps at hand for ``previous_response_id`` and ``GET``."""

KEPT_MESSAGES = 20_000
"""How many conversation messages the responses kept at hand hold at most, all together."""


@dataclass(frozen=True)
class Stored:
    """A response: whose, in which session, the conversation it ends, and whether the store has it."""

    user: str
    key: str
    system: list[dict[str, Any]]
    conversation: list[dict[str, Any]]
    response: dict[str, Any]
    persisted: bool = field(default=False, compare=False)


class ResponseLog:
    """Responses by id: the newest :data:`KEPT` at hand, every stored one in ``store``.

    Each response at hand holds its whole conversation, so a long agent loop's responses leave
    memory sooner (the newest is always kept: chaining needs only it). ``app.state.responses``.
    """

    def __init__(
        self,
        store: Store | None = None,
        size: int = KEPT,
        messages: int = KEPT_MESSAGES,
        *,
        shared: bool = False,
        sessions: Sessions | None = None,
    ) -> None:
        self.store = store
        self.shared = shared
        self.sessions = sessions
        self._writing: set[asyncio.Task[None]] = set()
        self.size = size
        self.messages = messages
        self._kept: OrderedDict[str, Stored] = OrderedDict()
        self._held = 0
        self._newest: dict[tuple[str, str], str] = {}  # (user, session key) -> its newest stored response

    # -- in process ----------------------------------------------------------------------------

    def _keep(self, stored: Stored) -> None:
        old = self._kept.pop(stored.response["id"], None)
        if old is not None:
            self._held -= len(old.conversation) + len(old.system)
        self._kept[stored.response["id"]] = stored
        self._held += len(stored.conversation) + len(stored.system)
        while len(self._kept) > 1 and (len(self._kept) > self.size or self._held > self.messages):
            gone_id, gone = self._kept.popitem(last=False)
            self._held -= len(gone.conversation) + len(gone.system)
            if self._newest.get((gone.user, gone.key)) == gone_id:
                del self._newest[(gone.user, gone.key)]

    def at_hand(self, user: str, response_id: str) -> Stored | None:
        """The response ``response_id`` of ``user`` if this process has it at hand."""
        stored = self._kept.get(response_id)
        return stored if stored is not None and stored.user == user else None

    def _base(self, stored: Stored, previous: Stored | None) -> Stored | None:
        """What ``stored`` builds on in the store: ``previous``, else the session's newest if it leads."""
        if previous is not None:
            return previous if previous.persisted else None
        newest_id = self._newest.get((stored.user, stored.key))
        newest = self._kept.get(newest_id) if newest_id is not None else None
        if newest is None or not newest.persisted:
            return None
        length = len(newest.conversation)
        if length > len(stored.conversation) or stored.conversation[:length] != newest.conversation:
            return None
        return newest

    # -- with the store ------------------------------------------------------------------------

    async def put(self, stored: Stored, *, previous: Stored | None = None, persist: bool = True) -> None:
        """Keep ``stored`` (``previous``: the response it continues); in the store too with ``persist``.

        At hand at once. The store's copy is written after the client has its answer — before it
        when other processes share the database (:attr:`shared`: the next request, continuing this
        response, may reach one of them), so a process's own clients never wait for the write.
        A failure to store is logged, not raised: the client has its answer, and this process still
        has the response at hand.
        """
        if not persist or self.store is None:
            self._keep(stored)
            return
        base = self._base(stored, previous)
        added = stored.conversation[len(base.conversation) :] if base is not None else stored.conversation
        stored = replace(stored, persisted=True)  # (unmarked if the write fails)
        self._keep(stored)
        self._newest[(stored.user, stored.key)] = stored.response["id"]
        job = self._persist(stored, base, added)
        if self.shared:
            await job
        else:
            task = asyncio.create_task(job)
            self._writing.add(task)
            task.add_done_callback(self._writing.discard)

    async def drain(self) -> None:
        """Wait for the writes still running (tests; shutting down)."""
        while self._writing:
            await asyncio.gather(*list(self._writing), return_exceptions=True)

    async def _persist(self, stored: Stored, base: Stored | None, added: list[dict[str, Any]]) -> None:
        rid = stored.response.get("id")
        try:
            await self._later(partial(self._write, stored, base, added), heavy=len(added) > HEAVY_MESSAGES)
            return
        except TierwiseError as exc:
            log.warning("response %s kept in process only: %s", rid, exc)
        except Exception:
            log.exception("storing response %s failed; kept in process only", rid)
        if self._kept.get(str(rid)) is stored:  # nothing may build on it in the store
            self._kept[str(rid)] = replace(stored, persisted=False)
        if self._newest.get((stored.user, stored.key)) == rid:
            del self._newest[(stored.user, stored.key)]

    async def _run(self, work: Callable[[], T]) -> T:
        """Store work as the sessions run theirs (:meth:`Sessions.run`: on the loop for SQLite)."""
        if self.sessions is not None:
            return await self.sessions.run(work)
        return await to_thread.run_sync(work)

    async def _later(self, work: Callable[[], T], *, heavy: bool) -> T:
        if self.sessions is not None:
            return await self.sessions.later(work, heavy=heavy)
        return await to_thread.run_sync(work)

    def _write(self, stored: Stored, base: Stored | None, added: list[dict[str, Any]]) -> None:
        assert self.store is not None
        self.store.put_api_response(
            stored.user,
            stored.response,
            session_key=stored.key,
            base_id=base.response["id"] if base is not None else None,
            system=stored.system,
            added=added,
        )

    async def get(self, user: str, response_id: str) -> Stored | None:
        """The response ``response_id`` of ``user``, at hand or from the store; ``None`` if there is none."""
        stored = self.at_hand(user, response_id)
        if stored is not None or self.store is None:
            return stored
        store = self.store
        rows = await self._run(lambda: store.api_response_chain(user, response_id))
        last = rows[-1] if rows else None
        if last is None or last.response is None or last.id != response_id or rows[0].base_id is not None:
            return None  # (a chain whose first response is missing: its conversation is not whole)
        conversation = [message for row in rows for message in row.added]
        found = Stored(user, last.session_key, last.system, conversation, last.response, persisted=True)
        self._keep(found)
        return found

    async def response(self, user: str, response_id: str) -> dict[str, Any] | None:
        """The response object ``response_id`` of ``user`` (``GET``), without reading its conversation."""
        stored = self.at_hand(user, response_id)
        if stored is not None:
            return stored.response
        if self.store is None:
            return None
        store = self.store
        return await self._run(lambda: store.api_response(user, response_id))

    async def delete(self, user: str, response_id: str) -> bool:
        """Forget the response ``response_id`` of ``user``, here and in the store; whether there was one."""
        stored = self.at_hand(user, response_id)
        if stored is not None:
            self._kept.pop(response_id)
            self._held -= len(stored.conversation) + len(stored.system)
            if self._newest.get((user, stored.key)) == response_id:
                del self._newest[(user, stored.key)]
        deleted = False
        if self.store is not None:
            store = self.store
            deleted = await self._run(lambda: store.delete_api_response(user, response_id))
        return deleted or stored is not None

    @classmethod
    def of(cls, request: Request) -> ResponseLog:
        """The app's log (made on first use, on the app's store; :attr:`shared` as the app is)."""
        state = request.app.state
        kept = getattr(state, "responses", None)
        if kept is None:
            shared = bool(getattr(state, "shared", False))
            kept = state.responses = cls(
                getattr(state, "store", None), shared=shared, sessions=sessions_of(request)
            )
        assert isinstance(kept, ResponseLog)
        return kept
