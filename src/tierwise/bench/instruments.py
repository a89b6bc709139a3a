"""The engine benchmark's instruments: a fake model that times its own stream, a clock on the store.

Both stand in for what the benchmark subtracts or attributes: the time inside the model is not the
engine's, and every store call is timed where it happens (writes and reads apart).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from functools import wraps
from typing import Any

from tierwise.providers.base import Event, ModelRequest, ModelResponse, Provider
from tierwise.providers.testing import reply_events
from tierwise.store import Store
from tierwise.tokens import get_counter

__all__ = ["StoreCall", "StoreClock", "TimedModel"]

_WRITES = frozenset(
    {
        "create_user",
        "create_chat",
        "rename_chat",
        "update_chat",
        "delete_chat",
        "add_message",
        "archive_messages",
        "mark_in_summary",
        "add_tool_call",
        "save_segment",
        "put_blob",
        "save_snapshot",
        "audit",
    }
)
_READS = frozenset(
    {
        "get_user",
        "get_chat",
        "list_chats",
        "list_messages",
        "get_message",
        "list_tool_calls",
        "get_segment",
        "list_segments",
        "get_blob",
        "blob_info",
        "list_snapshots",
        "latest_snapshot",
        "list_audit",
    }
)


class TimedModel(Provider):
    """A zero-cost fake model answering with queued responses; it adds up the time spent inside its stream.

    Responses carry their :class:`~tierwise.providers.base.Usage`, so nothing is counted here. Only
    the generator's own time (from being resumed to its next ``yield``) is added to ``inside_ns``:
    what the engine does with each event is the engine's time.

    Args:
        delay_s: seconds to sleep inside each call (a model's latency, to check it is subtracted).
        encoding: the tokenizer for what it streams.
    """

    name = "bench"

    def __init__(self, *, delay_s: float = 0.0, encoding: str = "o200k_base") -> None:
        self.model: str = "bench-fake"
        self.delay_s = delay_s
        self.replies: deque[ModelResponse] = deque()
        self.calls = 0
        self.inside_ns = 0
        self._counter = get_counter(encoding)

    async def stream(self, request: ModelRequest) -> AsyncIterator[Event]:
        """Stream the next queued response (text in pieces, tool calls in fragments, usage, done)."""
        start = time.perf_counter_ns()
        try:
            self.calls += 1
            if not self.replies:
                raise RuntimeError("the benchmark's fake model has no response queued")
            reply = self.replies.popleft()
            if self.delay_s:
                await asyncio.sleep(self.delay_s)
            async for event in reply_events(reply, request, self.model, self._counter):
                self.inside_ns += time.perf_counter_ns() - start
                start = 0
                yield event
                start = time.perf_counter_ns()
        finally:
            if start:
                self.inside_ns += time.perf_counter_ns() - start


@dataclass(frozen=True, slots=True)
class StoreCall:
    """One timed store call: name, whether it writes, start (epoch seconds) and duration (ns)."""

    name: str
    write: bool
    started: float
    ns: int


class StoreClock:
    """Times every public call on one :class:`~tierwise.store.Store` instance (outermost calls only).

    Example:
        >>> store = Store.open("sqlite://")
        >>> clock = StoreClock(store)
        >>> user = store.create_user("ada")
        >>> [(c.name, c.write) for c in clock.take()]
        [('create_user', True)]
    """

    def __init__(self, store: Store) -> None:
        self.calls: list[StoreCall] = []
        self._local = threading.local()
        for name in sorted(_WRITES | _READS):
            setattr(store, name, self._wrap(name, name in _WRITES, getattr(store, name)))

    def take(self) -> list[StoreCall]:
        """The calls timed since the last ``take``, and start afresh."""
        calls, self.calls = self.calls, []
        return calls

    def _wrap(self, name: str, write: bool, fn: Callable[..., Any]) -> Callable[..., Any]:
        local = self._local

        @wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            if getattr(local, "inside", False):  # a store method calling another: counted once
                return fn(*args, **kwargs)
            local.inside = True
            started, start = time.time(), time.perf_counter_ns()
            try:
                return fn(*args, **kwargs)
            finally:
                self.calls.append(StoreCall(name, write, started, time.perf_counter_ns() - start))
                local.inside = False

        return timed
