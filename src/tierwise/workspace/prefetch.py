"""Seed 000 §10.1: after a list call, the likely next detail is made in the background.

Seed 000 observes that after ``list_tasks`` a model asks ``get_task_details`` about one of the tasks
more often than not, usually the first ("tell me more about the first one"). :class:`Prefetcher`
acts on that: when a list tool returns a page, the top row's detail is computed in a worker thread,
off the request path, and the detail tool serves it from there if the model asks for exactly that
detail next — with the default arguments, within ``ttl_s``, and with no write to the user's workspace
in between (:func:`~tierwise.workspace.context_cache.touch` moves the version on, so a prefetched
detail is never older than the last write). Anything else — another id, other arguments, a failed
prefetch — computes the detail as usual.

It keeps the futures it starts (no fire-and-forget work), one at a time per list (the newest offer
replaces older ones of the same user), and counts what it did (:class:`PrefetchStats`): offered,
hits, misses, and the time the hits saved on the request path, reported by
``tierwise bench disclosure``.

An in-memory SQLite store is never prefetched from: its single shared connection is not for two
threads at once. The thread pool is the process's; :meth:`Prefetcher.close` waits for it.

Example:
    >>> import tempfile, pathlib
    >>> from tierwise.store import Store
    >>> store = Store.open(f"sqlite:///{pathlib.Path(tempfile.mkdtemp()) / 'w.db'}")
    >>> prefetcher = Prefetcher()
    >>> prefetcher.offer(store, "u1", "task", "task_1", lambda: {"id": "task_1"})
    True
    >>> prefetcher.take(store, "u1", "task", "task_1")
    {'id': 'task_1'}
    >>> prefetcher.take(store, "u1", "task", "task_1") is None  # served once
    True
    >>> prefetcher.close()
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from tierwise.store.engine import sqlite_memory
from tierwise.workspace.context_cache import CacheStats, workspace_version

__all__ = ["PrefetchStats", "Prefetcher"]


@dataclass
class PrefetchStats(CacheStats):
    """What a :class:`Prefetcher` did: ``saved_ms`` is build time the hits took off the request path.

    ``misses``: details asked for that were not the one prefetched (or stale, or failed).
    """

    offered: int = 0

    def as_dict(self) -> dict[str, Any]:
        """The figures, rounded, for reports."""
        return {"offered": self.offered, **super().as_dict()}


@dataclass
class _Pending:
    key: tuple[str, str]  # (kind, item id)
    version: int
    started: float
    future: Future[tuple[Any, float]]


def _timed(build: Callable[[], Any]) -> tuple[Any, float]:
    started = time.perf_counter()
    value = build()
    return value, (time.perf_counter() - started) * 1000


class Prefetcher:
    """Details made ahead in a worker thread, served once if asked for next (module docstring).

    Args:
        ttl_s: how long a prefetched detail may be served (seconds).
        clock: monotonic seconds (tests pass their own).
    """

    def __init__(self, *, ttl_s: float = 120.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl_s, self.clock = ttl_s, clock
        self.stats = PrefetchStats()
        self._pending: dict[tuple[int, str], _Pending] = {}  # (store, user) → the newest offer
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tierwise-prefetch")

    def offer(self, store: Any, user_id: str, kind: str, item_id: str, build: Callable[[], Any]) -> bool:
        """Make ``build()``, the detail of ``kind`` ``item_id``, in the background; ``False`` if not."""
        engine = getattr(store, "engine", None)
        if engine is None or sqlite_memory(engine.url):
            return False
        pending = _Pending(
            (kind, item_id),
            workspace_version(store, user_id),
            self.clock(),
            self._pool.submit(_timed, build),
        )
        with self._lock:
            self._pending[(id(store), user_id)] = pending
            self.stats.offered += 1
        return True

    def take(self, store: Any, user_id: str, kind: str, item_id: str) -> Any | None:
        """The prefetched detail of ``kind`` ``item_id`` (a copy), or ``None`` to compute it as usual."""
        with self._lock:
            pending = self._pending.get((id(store), user_id))
            if pending is None or pending.key != (kind, item_id):
                self.stats.misses += 1
                return None
            del self._pending[(id(store), user_id)]
        fresh = (
            pending.version == workspace_version(store, user_id)
            and self.clock() - pending.started < self.ttl_s
        )
        waited = time.perf_counter()
        try:
            value, took = pending.future.result() if fresh else (None, 0.0)
        except Exception:  # the detail tool computes it again and reports the error itself
            value, took = None, 0.0
        waited_ms = (time.perf_counter() - waited) * 1000
        with self._lock:
            if value is None:
                self.stats.misses += 1
                self.stats.stale += not fresh
                return None
            self.stats.hits += 1
            self.stats.build_ms += took
            self.stats.saved_ms += max(0.0, took - waited_ms)
        return copy.deepcopy(value)

    def close(self) -> None:
        """Wait for work under way and stop the worker thread."""
        self._pool.shutdown(wait=True)
