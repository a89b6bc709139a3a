"""Long work in a serving process: the garbage collector held, and the interpreter lock shared.

CPython's cyclic collector stops every thread while it scans, and its scans grow with what is
young. A long history remembered at once (100,001 messages: ~500,000 tracked objects, a turn and
its analysis each) is all young: the next collection of the middle generation scanned it for
160–190 ms, and a full one for longer, every other client's stream stopped meanwhile (issue 16).

While long work runs (:func:`long_work`, counted across threads), only the youngest generation is
collected. When the last long work ends, what survived is moved out of the collector's future
scans (:func:`gc.freeze`, which takes constant time), as :func:`tierwise.server.app.tune_for_serving`
does with the imports at start-up. Reference counting still frees those objects when a chat's
memory is dropped: a memory holds no reference cycles (a test checks). The price: a reference cycle
that became garbage during those seconds, and was still in use at one youngest-generation
collection, is never collected (bounded by what other requests left in cycles meanwhile).

**The interpreter lock.** Long work is CPU work in a worker thread; the event loop's thread gives
the lock up at every socket or SQLite call and gets it back only when the worker is asked to let
go, after the switch interval. A loop turn of twenty streams makes dozens of such calls, so it took
40–200 ms while a 100,001-message history was remembered, and the other clients' requests beside
it gained 0.6–1.6 s at p99. Long work's loops call :func:`breathe`, which sleeps :data:`BREATH_S`
after every :data:`WORK_S` of work while the process serves other requests (:func:`request`
counts them): the loop's thread then runs its turns at full speed (others' added p99 beside the
neighbour: 30 ms, from 660), for up to ~20% more time on the long work. With no other request in flight,
nobody needs the lock, and long work does not breathe.

Off by default: a library call must not change the process's collector or slow itself down.
:func:`enable` turns it on, in ``tierwise serve`` and the benchmarks.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

__all__ = ["breathe", "enable", "enabled", "long_work", "request", "run_long"]

T = TypeVar("T")

_UNTIL_DONE = 1_000_000_000
"""The older generations' thresholds while long work runs: not reached."""

WORK_S = 0.005
"""How long long work runs between two breaths (:func:`breathe`)."""
BREATH_S = 0.001
"""How long a breath is: the interpreter lock is free for the event loop's thread meanwhile."""

_lock = threading.Lock()
_local = threading.local()
_running = 0
_requests = 0  # in flight in this process (:func:`request`)
_thresholds: tuple[int, int, int] | None = None
_enabled = False


def enable(on: bool = True) -> None:
    """Let :func:`long_work` hold the older generations' collections (a serving process's setting)."""
    global _enabled
    _enabled = on


def enabled() -> bool:
    """Whether :func:`long_work` holds collections in this process."""
    return _enabled


@contextmanager
def long_work() -> Iterator[None]:
    """Run long work (a long history to remember or load) without the older generations' collections.

    Nested and concurrent uses count: the collector's thresholds come back, and the survivors are
    frozen, when the last one ends. In the thread that runs it, :func:`breathe` breathes. Does
    nothing unless :func:`enable` was called.
    """
    global _running, _thresholds
    if not _enabled:
        yield
        return
    with _lock:
        _running += 1
        if _running == 1:
            _thresholds = gc.get_threshold()
            gc.set_threshold(_thresholds[0], _UNTIL_DONE, _UNTIL_DONE)
    outer = getattr(_local, "due", None)
    _local.due = time.perf_counter() + WORK_S
    try:
        yield
    finally:
        _local.due = outer
        with _lock:
            _running -= 1
            if _running == 0 and _thresholds is not None:
                gc.freeze()
                gc.set_threshold(*_thresholds)
                _thresholds = None


def run_long(work: Callable[[], T]) -> T:
    """``work()`` as :func:`long_work` (to hand to a worker thread)."""
    with long_work():
        return work()


def breathe() -> None:
    """In long work, after every :data:`WORK_S` of it: sleep :data:`BREATH_S`; otherwise nothing.

    Only while two or more requests are in flight (:func:`request`): the long work's own, and
    another the event loop serves meanwhile. Cheap enough to call once per message of a long
    history. Outside long work, or unless :func:`enable` was called, it returns at once.
    """
    due = getattr(_local, "due", None)
    if due is None or time.perf_counter() < due:
        return
    if _requests > 1:  # the long work's own request and another (only then is the lock wanted)
        time.sleep(BREATH_S)
    _local.due = time.perf_counter() + WORK_S


@contextmanager
def request() -> Iterator[None]:
    """A request in flight in this process (the server counts each: :func:`breathe` reads them)."""
    global _requests
    with _lock:
        _requests += 1
    try:
        yield
    finally:
        with _lock:
            _requests -= 1
