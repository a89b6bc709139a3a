"""Seed 000 §10.2: the abbreviated location context, built once per location and reused until a write.

Every turn of a chat asks :class:`~tierwise.workspace.context.WorkspaceContext` for its layers, and a
project chat's layers cost a handful of queries (the project, its statistics, its top tasks, its
recent notes and brain dumps). Between two turns that changed nothing, they come out the same.
:class:`ContextCache` keeps them per ``(user, context type, entity)``, and the user's profile (read on
every turn, changed only by ``set_profile``, which touches):

- **invalidation by writes**: every write of :class:`~tierwise.workspace.repository.Workspace`
  (create or update a project, task or note, schedule a task, change a project's context) calls
  :func:`touch`, which moves the user's *workspace version* on; an entry built at an older version is
  rebuilt. The version is per user, not per entity, on purpose: a task's change shows in its
  project's counts, in the overview's overdue list and in the calendar, so "what a write touches" is
  most of a user's locations anyway;
- **a time limit** (``ttl_s``, default 60 s): the layers also say what is overdue and what is on
  today, which moves with the clock, and some writes are not seen by :func:`touch`: another
  process's (a second server on the same database), and calendar events added to the calendar
  directly rather than by ``schedule_task`` (an ICS import, an external calendar). The "Now:" line
  itself is never cached.

The cache counts what it saves (:class:`CacheStats`: hits, misses, the build time saved), which
``tierwise bench disclosure`` reports. Versions and entries live in this process only.

Example:
    >>> from tierwise.store import Store
    >>> store = Store.open("sqlite://")
    >>> cache = ContextCache()
    >>> cache.get(store, "u1", ("project", "p1"), lambda: "layers")
    'layers'
    >>> cache.get(store, "u1", ("project", "p1"), lambda: "rebuilt")  # the same until a write
    'layers'
    >>> touch(store, "u1")
    >>> cache.get(store, "u1", ("project", "p1"), lambda: "rebuilt")
    'rebuilt'
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, TypeVar
from weakref import WeakKeyDictionary

__all__ = ["CacheStats", "ContextCache", "touch", "workspace_version"]

T = TypeVar("T")

_LOCK = threading.Lock()
_VERSIONS: WeakKeyDictionary[Any, dict[str, int]] = WeakKeyDictionary()


def workspace_version(store: Any, user_id: str) -> int:
    """How many workspace writes this process has seen for ``user_id`` in ``store``."""
    with _LOCK:
        return _VERSIONS.get(store, {}).get(user_id, 0)


def touch(store: Any, user_id: str) -> None:
    """Record a write to ``user_id``'s workspace: cached contexts and prefetched details go stale."""
    with _LOCK:
        versions = _VERSIONS.setdefault(store, {})
        versions[user_id] = versions.get(user_id, 0) + 1


@dataclass
class CacheStats:
    """What a :class:`ContextCache` served: ``saved_ms`` is the build time its hits did not spend."""

    hits: int = 0
    misses: int = 0
    stale: int = 0  # misses because a write (or the time limit) made the entry stale
    build_ms: float = 0.0
    saved_ms: float = 0.0

    @property
    def hit_rate(self) -> float:
        """Hits ÷ lookups (0 before any)."""
        total = self.hits + self.misses
        return self.hits / total if total else 0.0

    def as_dict(self) -> dict[str, Any]:
        """The figures, rounded, for reports."""
        return {
            "hits": self.hits,
            "misses": self.misses,
            "stale": self.stale,
            "hit_rate": round(self.hit_rate, 3),
            "build_ms": round(self.build_ms, 2),
            "saved_ms": round(self.saved_ms, 2),
        }


@dataclass(frozen=True)
class _Entry:
    value: Any
    version: int
    built_at: float
    build_ms: float


class ContextCache:
    """Built location contexts per ``(user, key)``, reused until a write or ``ttl_s`` (module docstring).

    Args:
        ttl_s: the longest an entry is reused (seconds); 0 turns the cache off.
        max_entries: the most entries kept (least recently used go first).
        clock: monotonic seconds (tests pass their own).
    """

    def __init__(
        self, *, ttl_s: float = 60.0, max_entries: int = 512, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if ttl_s < 0 or max_entries < 1:
            raise ValueError("ttl_s must be 0 or more and max_entries 1 or more")
        self.ttl_s, self.max_entries, self.clock = ttl_s, max_entries, clock
        self.stats = CacheStats()
        self._entries: OrderedDict[tuple[str, Hashable], _Entry] = OrderedDict()
        self._lock = threading.Lock()

    def get(
        self, store: Any, user_id: str, key: Hashable, build: Callable[[], T], *, counted: bool = True
    ) -> T:
        """The cached value for ``(user_id, key)``, or ``build()`` (then cached) if none is fresh.

        ``counted=False``: left out of :attr:`stats` (what a turn reads besides its location context,
        e.g. the profile, so that the figures stay about contexts).
        """
        version = workspace_version(store, user_id)
        now = self.clock()
        with self._lock:
            entry = self._entries.get((user_id, key))
            fresh = entry is not None and entry.version == version and now - entry.built_at < self.ttl_s
            if fresh:
                assert entry is not None
                self._entries.move_to_end((user_id, key))
                if counted:
                    self.stats.hits += 1
                    self.stats.saved_ms += entry.build_ms
                return entry.value  # type: ignore[no-any-return]
            if counted:
                self.stats.misses += 1
                self.stats.stale += entry is not None
        started = time.perf_counter()
        value = build()
        took = (time.perf_counter() - started) * 1000
        with self._lock:
            if counted:
                self.stats.build_ms += took
            if self.ttl_s > 0:
                self._entries[(user_id, key)] = _Entry(value, version, now, took)
                self._entries.move_to_end((user_id, key))
                while len(self._entries) > self.max_entries:
                    self._entries.popitem(last=False)
        return value

    def clear(self) -> None:
        """Forget every entry (the statistics stay)."""
        with self._lock:
            self._entries.clear()
