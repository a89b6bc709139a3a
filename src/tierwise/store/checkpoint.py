"""SQLite WAL checkpoints in a background thread (:class:`Checkpointer`).

By default SQLite copies the write-ahead log back into the database file, and syncs it, inside the
commit that takes the log past 1,000 pages. That commit is whichever request happens to write
then: measured under the proxy benchmark, one such commit took 333 ms, and on the service's event
loop every stream in flight waited for it. :meth:`Store.open <tierwise.store.Store.open>` turns the
automatic checkpoints off for a SQLite file and runs them here instead, once a second
(``PASSIVE``: never waiting for readers or writers); SQLite releases the interpreter lock while it
copies and syncs. :meth:`Checkpointer.stop` checkpoints once more and truncates the log.
"""

from __future__ import annotations

import logging
import threading

import sqlalchemy as sa
from sqlalchemy.engine import Engine

__all__ = ["Checkpointer"]

log = logging.getLogger(__name__)


class Checkpointer:
    """A daemon thread checkpointing ``engine``'s SQLite WAL every ``interval_s`` seconds."""

    def __init__(self, engine: Engine, interval_s: float = 1.0) -> None:
        self.engine = engine
        self.interval_s = interval_s
        self._stopping = threading.Event()
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

    def stop(self) -> None:
        """Stop the thread, then checkpoint the whole log and truncate it."""
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join(10)
        try:
            self.checkpoint("TRUNCATE")
        except sa.exc.DBAPIError as exc:  # busy (another process reads): its next checkpoint will do
            log.debug("final checkpoint skipped: %s", exc)

    def _run(self) -> None:
        while not self._stopping.wait(self.interval_s):
            try:
                self.checkpoint()
            except Exception as exc:  # a locked or closed database: try again next time
                log.debug("checkpoint skipped: %s", exc)
