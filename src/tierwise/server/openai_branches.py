"""A ``/v1`` session's branches: an edit or a regenerate forks it, and a request picks its branch again.

A session (:func:`~tierwise.server.openai_history.session_key`) is a family of chats that share its
key (``entity_id``): one *active* (``context_type="api"``), the others earlier branches
(``"api-superseded"``, shown as such in the web page, never deleted). A request whose history
diverges from the active chat (an edit, a regenerate, a second conversation with the same opening)
continues the branch that it still matches, the one with the most messages, and that branch becomes
the active one; only a history that no branch holds forks a new one. Two conversations interleaved
under one key are therefore two chats, not a new chat per request, and memory follows the branch the
request is on: each branch is a chat with its own memory, held or loaded like any other.

Branches are found among those this process retired (their rows may not be stored yet: a session's
first write comes with its request's answer) and those the store holds (another process's, or from
before a restart), the :data:`MAX_BRANCHES` most recent of each.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tierwise.chat.memories import ChatMemories
from tierwise.memory.persist import ChatMemory
from tierwise.server.openai_history import diverged, entity_id
from tierwise.store import NotFoundError, Store

__all__ = ["MAX_BRANCHES", "RETIRED_CONTEXT_TYPE", "Branches"]

RETIRED_CONTEXT_TYPE = "api-superseded"
"""An earlier branch of a session: kept, left out of the default chat list."""

MAX_BRANCHES = 8
"""The most recently used earlier branches a diverged request is compared with (per source)."""

_MAX_SESSIONS = 10_000


class Branches:
    """The earlier branches of the process's sessions, and the switch from one branch to another.

    ``set_type(user, chat_id, context_type)`` marks a chat active or retired, stored or not yet.
    """

    def __init__(
        self, store: Store, memories: ChatMemories, set_type: Callable[[str, str, str], None]
    ) -> None:
        self.store = store
        self.memories = memories
        self.set_type = set_type
        self._known: OrderedDict[tuple[str, str], list[str]] = OrderedDict()
        self._guard = threading.Lock()

    def switch(
        self, user: str, key: str, left: str, conversation: Sequence[Mapping[str, Any]], active: str
    ) -> ChatMemory | None:
        """Leave chat ``left`` (the request diverged from it) for the branch ``conversation`` continues.

        ``left`` is retired; the branch found, if any, is made the session's ``active`` context type
        and returned; ``None``: no branch holds the request's history (the caller forks a new one).
        """
        branch = self.continued(user, key, conversation, exclude=left)
        self.set_type(user, left, RETIRED_CONTEXT_TYPE)
        with self._guard:
            known = self._known.setdefault((user, key), [])
            self._known.move_to_end((user, key))
            taken = (left, branch.chat_id if branch else None)
            known[:] = [left, *(c for c in known if c not in taken)][:MAX_BRANCHES]
            while len(self._known) > _MAX_SESSIONS:
                self._known.popitem(last=False)
        if branch is not None:
            self.set_type(user, branch.chat_id, active)
        return branch

    def continued(
        self, user: str, key: str, conversation: Sequence[Mapping[str, Any]], *, exclude: str
    ) -> ChatMemory | None:
        """The earlier branch of session ``key`` that ``conversation`` continues, with the most messages."""
        with self._guard:
            ids = list(self._known.get((user, key), ()))
        stored = self.store.list_chats(
            user, context_type=RETIRED_CONTEXT_TYPE, entity_id=entity_id(key), limit=MAX_BRANCHES
        )
        ids += [chat.id for chat in stored if chat.id not in ids]
        best: ChatMemory | None = None
        for chat_id in ids:
            if chat_id == exclude:
                continue
            memory = self.memories.held(user, chat_id)
            if memory is None:
                try:
                    memory = self.memories.load(user, chat_id)[0]
                except NotFoundError:  # deleted meanwhile
                    continue
            messages = memory.memory.messages
            if best is not None and len(messages) <= len(best.memory.messages):
                continue
            if len(messages) <= len(conversation) and not diverged(messages, conversation):
                best = memory
        return best
