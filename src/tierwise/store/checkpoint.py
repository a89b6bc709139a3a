"""SQLite WAL checkpoints in a background thread (:class:`Checkpointer`).

By default SQLite copies the write-ahead log back into the database file, and syncs it, inside the
commit that takes the log past 1,000 pages. That commit is whichever request happens to write
then: measured under the proxy benchmark, one such commit took 333 ms, and on the service's event
loop every stream in flight waited for it. :meth:`Store.open <tierwise.store.Store.open>` turns the
automatic checkpoints off for a SQLite file and runs them here instead, once a second
(``PASSIVE``: never waiting for readers or writers); SQLite releases the interpreter lock while it
copies and syncs. :meth:`Checkpointer.stop` checkpoints once more and truncates the log.

A delete asks for more (:meth:`Checkpointer.truncate_soon`): the log still holds every page the
deleted rows were written in, so the thread's next turn copies the log back (with
``secure_delete`` on, the freed cells and pages of the database are zeros) and truncates it to zero
bytes (``TRUNCATE``). That mode waits for readers and writers; it waits at most
``truncate_wait_s`` at a time, holding off this process's writers no longer, and is tried again on
the following turns until it succeeds. The request that deleted never waits for it.
"""

from __future__ import annotations

import logging
import threading
import time

import sqlalchemy as sa
from sqlalchemy.engine import Engine

__all__ = ["Checkpointer"]

log = logging.getLogger(__name__)


class Checkpointer:
    """A daemon thread checkpointing ``engine``'s SQLite WAL every ``interval_s`` seconds.

    ``truncate_wait_s``: how long a truncating checkpoint asked for by :meth:`truncate_soon` waits
    for readers and writers before it gives up until the next turn.
    """

    def __init__(self, engine: Engine, interval_s: float = 1.0, truncate_wait_s: float = 0.5) -> None:
        self.engine = engine
        self.interval_s = interval_s
        self.truncate_wait_s = truncate_wait_s
        self._stopping = threading.Event()
        self._wake = threading.Event()
        self._state = threading.Condition()
        self._asked = 0  # truncations asked for (a count, so one asked during a run is not lost)
        self._truncated = 0  # the count the last truncation that succeeded had seen
        self._thread = threading.Thread(target=self._run, name="tierwise-checkpoint", daemon=True)

    def start(self) -> Checkpointer:
        """Start the thread; returns ``self``."""
        self._thread.start()
        return self

    def checkpoint(self, mode: str = "PASSIVE") -> None:
        """Checkpoint now (``PASSIVE``, ``FULL``, ``RESTART`` or ``TRUNCATE``)."""
        if mode not in ("PASSIVE", "FULL", "RESTART", "TRUNCATE"):
            raise ValueError(f"unknown checkpoint mode {mode!r}")
        with self.engine.connect() as connection:
            connection.exec_driver_sql(f"PRAGMA wal_checkpoint({mode})")

    def truncate_soon(self) -> None:
        """Ask the thread to checkpoint the whole log and truncate it now (returns at once).

        Called after a delete, so that no page of the deleted rows stays in the ``-wal`` file.
        """
        with self._state:
            self._asked += 1
        self._wake.set()

    def wait_truncated(self, timeout_s: float = 10.0) -> bool:
        """Wait until every truncation asked for so far has been done; ``False`` on timeout."""
        deadline = time.monotonic() + timeout_s
        with self._state:
            asked = self._asked
            while self._truncated < asked:
                left = deadline - time.monotonic()
                if left <= 0 or not self._thread.is_alive():
                    return self._truncated >= asked
                self._state.wait(min(left, 0.1))
        return True

    def _truncate(self) -> bool:
        """One ``TRUNCATE`` checkpoint waiting at most ``truncate_wait_s``; whether it completed."""
        wait_ms = max(1, int(self.truncate_wait_s * 1000))
        with self.engine.connect() as connection:
            saved = connection.exec_driver_sql("PRAGMA busy_timeout").scalar()
            connection.exec_driver_sql(f"PRAGMA busy_timeout = {wait_ms}")
            try:
                row = connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)").one()
            finally:
                connection.exec_driver_sql(f"PRAGMA busy_timeout = {int(saved or 0)}")
        return bool(row[0] == 0)  # busy: 1 when a reader or writer kept it from finishing

    def stop(self) -> None:
        """Stop the thread, then checkpoint the whole log and truncate it."""
        self._stopping.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(10)
        try:
            self.checkpoint("TRUNCATE")
            with self._state:
                self._truncated = self._asked
                self._state.notify_all()
        except sa.exc.DBAPIError as exc:  # busy (another process reads): its next checkpoint will do
            log.debug("final checkpoint skipped: %s", exc)

    def _run(self) -> None:
        while True:
            self._wake.wait(self.interval_s)
            self._wake.clear()
            if self._stopping.is_set():
                return
            with self._state:
                asked = self._asked
            try:
                if asked > self._truncated:
                    if self._truncate():
                        with self._state:
                            self._truncated = asked
                            self._state.notify_all()
                    else:
                        log.debug("truncating checkpoint busy; trying again in %.1f s", self.interval_s)
                else:
                    self.checkpoint()
            except Exception as exc:  # a locked or closed database: try again next time
                log.debug("checkpoint skipped: %s", exc)
