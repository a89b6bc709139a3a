"""One request of an OpenAI-compatible session, as :mod:`tierwise.server.openai_sessions` prepares it.

:class:`Prepared` is what packing a request made (the chat's memory, the pack, what it compacted)
and how far storing it has got; the sessions' steps (settle, answer, finish) move it on.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field
from typing import Any

from tierwise.memory.compaction import CompactionEvent
from tierwise.memory.persist import ChatMemory
from tierwise.packing.report import Pack

__all__ = ["Prepared"]


@dataclass
class Prepared:
    """A request's chat, its pack and what packing compacted; ``added`` messages are new.

    ``kept_up``: memory upkeep ran for it, ``recorded``: its messages are stored and its pack audited
    (:meth:`Sessions.settle`), ``answered``: its answer is in memory (:meth:`Sessions.take_answer`);
    ``lost``: the chat changed or went away under it, so nothing more of it is stored.
    """

    key: str
    memory: ChatMemory
    pack: Pack
    compaction: list[CompactionEvent]
    added: int
    lock: threading.Lock  # the session's (kept here: the session may be forgotten meanwhile)
    kept_up: bool = False
    recorded: bool = False
    answered: bool = False
    lost: bool = False
    heavy: bool = False  # a long history: its store and memory work runs off the loop
    steps: int = 1  # upstream requests for the answer (more when tierwise answered its retrieval tools)
    retrieval: list[dict[str, Any]] = field(default_factory=list)  # those calls: name, ok, ms
    sent: tuple[list[dict[str, Any]], int] | None = None  # the pack as forwarded, its tokens (resent)
    settling: asyncio.Task[None] | None = None  # storing the request's messages (begin)
    fault: str | None = None  # why they could not be stored
    hurry: asyncio.Event = field(default_factory=asyncio.Event)  # the answer is here: store, don't wait

    @property
    def chat_id(self) -> str:
        """The session's chat."""
        return self.memory.chat_id
