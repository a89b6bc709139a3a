"""The chats' memories a process holds (:class:`ChatMemories`), so a chat is not loaded per turn.

One object per chat, whoever touches it (the chat engine's turns, the web UI, the
OpenAI-compatible endpoint); the least recently used are let go past ``capacity``. Thread-safe:
turns run on the event loop, the OpenAI-compatible endpoint's work in worker threads on PostgreSQL.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from functools import partial

from tierwise.memory.blobs import BlobStore
from tierwise.memory.engine import Memory, MemoryPolicy
from tierwise.memory.persist import ChatMemory, StoreBlobs
from tierwise.store import Chat, Store
from tierwise.summarize.base import Summarizer

__all__ = ["ChatMemories", "default_memory", "summarizing_memory"]


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

    def load(self, user_id: str, chat_id: str) -> tuple[ChatMemory, Chat]:
        """The chat's memory and row: the one held if the store has not moved on, else loaded again.

        Raises:
            NotFoundError: ``user_id`` has no chat ``chat_id``.
        """
        chat = self.store.get_chat(user_id, chat_id)
        with self._lock:
            held = self._held.get((user_id, chat_id))
            if held is not None and len(held.memory.turns) == chat.message_count:
                self._held.move_to_end((user_id, chat_id))
                return held, chat
        loaded = ChatMemory.load(self.store, user_id, chat_id, self.factory(StoreBlobs(self.store, user_id)))
        self._hold(user_id, chat_id, loaded)
        return loaded, chat

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
    :func:`tierwise.chat.summaries.model_summarizer` for a model).
    """
    return Memory(blobs=blobs, policy=MemoryPolicy(defer_summaries=True), summarizer=summarizer)


def summarizing_memory(summarizer: Summarizer | None) -> Callable[[BlobStore], Memory]:
    """A memory factory like :func:`default_memory` whose memories summarise with ``summarizer``.

    One summarizer serves every chat (it is thread-safe): its counts are the process's.
    """
    if summarizer is None:
        return default_memory
    return partial(default_memory, summarizer=summarizer)
