"""The chats' memories a process holds (:class:`ChatMemories`), so a chat is not loaded per turn.

One object per chat, whoever touches it (the chat engine's turns, the web UI, the
OpenAI-compatible endpoint); the least recently used are let go past ``capacity``. Thread-safe:
turns run on the event loop, the OpenAI-compatible endpoint's work in worker threads on PostgreSQL,
and a long chat is loaded in a worker thread (:meth:`ChatMemories.aload`). Two callers wanting the
same chat while it loads get the one object: the second waits for the first's load.
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from collections.abc import Callable
from functools import partial
from typing import TypeVar

from tierwise.collector import run_long
from tierwise.memory.blobs import BlobStore
from tierwise.memory.engine import Memory, MemoryPolicy
from tierwise.memory.persist import ChatMemory, StoreBlobs
from tierwise.memory.policy import scrub_resent_from_env
from tierwise.store import Chat, Store
from tierwise.summarize.base import Summarizer

__all__ = ["HEAVY_MESSAGES", "ChatMemories", "default_memory", "heavy", "off_loop", "summarizing_memory"]

T = TypeVar("T")

HEAVY_MESSAGES = 1_000
"""A chat longer than this is loaded, and packed while its head is made, in a worker thread (as the
OpenAI-compatible endpoint does for a request this long): the event loop keeps serving meanwhile."""


def heavy(memory: ChatMemory) -> bool:
    """Whether packing ``memory`` now is long work: a long chat whose head is to be made (a reload)."""
    inner = memory.memory
    return len(inner.turns) > HEAVY_MESSAGES and (inner.frame is None or inner.backlog)


async def off_loop(work: Callable[[], T]) -> T:
    """``work()`` as long work in a worker thread; if the caller is cancelled, after the thread is done.

    Long work holds the older generations' collections while it runs (:mod:`tierwise.collector`).

    A thread cannot be stopped: whoever handles the cancellation (a stopped turn storing what it
    has, its upkeep) must not touch the memory the thread is still changing.
    """
    task = asyncio.ensure_future(asyncio.to_thread(run_long, work))
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        await asyncio.wait([task])
        raise


class ChatMemories:
    """Memories of stored chats, by ``(user_id, chat_id)``, the ``capacity`` most recently used kept.

    Args:
        store: the store they are loaded from and written through to.
        factory: makes a chat's memory engine, given its blob store.
        capacity: how many are kept.
    """

    def __init__(self, store: Store, factory: Callable[[BlobStore], Memory], capacity: int = 64) -> None:
        self.store = store
        self.factory = factory
        self.capacity = capacity
        self._held: OrderedDict[tuple[str, str], ChatMemory] = OrderedDict()
        self._lock = threading.Lock()
        self._loading: dict[tuple[str, str], threading.Lock] = {}  # one load at a time per chat

    def load(self, user_id: str, chat_id: str) -> tuple[ChatMemory, Chat]:
        """The chat's memory and row: the one held if the store has not moved on, else loaded again.

        A chat another thread is loading is waited for, not loaded twice.

        Raises:
            NotFoundError: ``user_id`` has no chat ``chat_id``.
        """
        key = (user_id, chat_id)
        chat = self.store.get_chat(user_id, chat_id)
        with self._lock:
            held = self._current(key, chat)
            if held is not None:
                return held, chat
            loading = self._loading.setdefault(key, threading.Lock())
        with loading:
            try:
                chat = self.store.get_chat(user_id, chat_id)  # as it is now the other load is done
                with self._lock:
                    held = self._current(key, chat)
                if held is not None:
                    return held, chat
                blobs = StoreBlobs(self.store, user_id)
                loaded = ChatMemory.load(self.store, user_id, chat_id, self.factory(blobs))
                self._hold(user_id, chat_id, loaded)
                return loaded, chat
            finally:
                with self._lock:
                    if self._loading.get(key) is loading:
                        del self._loading[key]

    async def aload(self, user_id: str, chat_id: str, row: Chat | None = None) -> tuple[ChatMemory, Chat]:
        """:meth:`load` for the event loop: a long chat is loaded in a worker thread.

        A chat of more than :data:`HEAVY_MESSAGES` messages is loaded off the loop, which serves the
        other requests meanwhile; one held (and current) is returned at once. ``row``: the chat's
        row as the caller has just read it, in place of reading it again.

        Raises:
            NotFoundError: ``user_id`` has no chat ``chat_id``.
        """
        chat = row if row is not None else self.store.get_chat(user_id, chat_id)  # one indexed read
        with self._lock:
            held = self._current((user_id, chat_id), chat)
        if held is not None:
            return held, chat
        if chat.message_count > HEAVY_MESSAGES:
            return await off_loop(partial(self.load, user_id, chat_id))
        return self.load(user_id, chat_id)

    def _current(self, key: tuple[str, str], chat: Chat) -> ChatMemory | None:
        """The memory held for ``key`` if the store has not moved on past it (call under the lock)."""
        held = self._held.get(key)
        if held is None or len(held.memory.turns) != chat.message_count:
            return None
        self._held.move_to_end(key)
        return held

    def new(self, user_id: str, chat_id: str) -> ChatMemory:
        """The memory of a chat just created (nothing to load), held like the others."""
        memory = ChatMemory(self.store, user_id, chat_id, self.factory(StoreBlobs(self.store, user_id)))
        self._hold(user_id, chat_id, memory)
        return memory

    def held(self, user_id: str, chat_id: str) -> ChatMemory | None:
        """The chat's memory if it is held, without asking the store whether it moved on.

        For a caller that finds out on its next write instead
        (:class:`~tierwise.memory.persist.StaleMemory`, ``NotFoundError``) and then calls
        :meth:`forget`.
        """
        with self._lock:
            held = self._held.get((user_id, chat_id))
            if held is not None:
                self._held.move_to_end((user_id, chat_id))
            return held

    def forget(self, user_id: str, chat_id: str) -> None:
        """Let the chat's memory go: the next :meth:`load` reads it from the store."""
        with self._lock:
            self._held.pop((user_id, chat_id), None)

    def _hold(self, user_id: str, chat_id: str, memory: ChatMemory) -> None:
        with self._lock:
            self._held[(user_id, chat_id)] = memory
            while len(self._held) > self.capacity:
                self._held.popitem(last=False)


def default_memory(blobs: BlobStore, summarizer: Summarizer | None = None) -> Memory:
    """A chat's memory: tool results to the store's blobs, segment summaries made after each answer.

    ``summarizer``: who writes the summaries (default: the extractive summarizer;
    :func:`tierwise.chat.summaries.model_summarizer` for a model). What memory re-sends after its
    turn is scrubbed unless ``TIERWISE_SCRUB_RESENT=0`` (README "Privacy").
    """
    policy = MemoryPolicy(defer_summaries=True, scrub_resent=scrub_resent_from_env())
    return Memory(blobs=blobs, policy=policy, summarizer=summarizer)


def summarizing_memory(summarizer: Summarizer | None) -> Callable[[BlobStore], Memory]:
    """A memory factory like :func:`default_memory` whose memories summarise with ``summarizer``.

    One summarizer serves every chat (it is thread-safe): its counts are the process's. A bad
    ``TIERWISE_SCRUB_RESENT`` is told here, when the engine is built, not at a chat's first turn.
    """
    scrub_resent_from_env()
    if summarizer is None:
        return default_memory
    return partial(default_memory, summarizer=summarizer)
