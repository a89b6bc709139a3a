"""What every part of the store shares: sessions, ownership checks and input checks."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.orm import Session, sessionmaker

from tierwise.store import models
from tierwise.store.checkpoint import Checkpointer
from tierwise.store.engine import WRITE
from tierwise.store.errors import NotFoundError, StoreError

# What prepared Core statements in several parts of the store share: a chat's messages, by user and chat.
MESSAGES: sa.Table = models.ChatMessage.__table__  # type: ignore[assignment]
OWN_MESSAGES = (MESSAGES.c.user_id == sa.bindparam("b_user"), MESSAGES.c.chat_id == sa.bindparam("b_chat"))


class WriteGate:
    """The SQLite writers of one process, one at a time, in the order they came (a ticket lock).

    SQLite has one writer per database. Without a gate, a thread that wants to write while another
    holds the lock polls for it in SQLite's busy handler, sleeping up to 100 ms between tries, and a
    writer that commits and writes again at once (a long history stored in slices) usually wins the
    race again: the others starve. Through the gate, each waiting writer is handed the lock when
    the one before it commits, in turn.

    Example:
        >>> gate = WriteGate()
        >>> gate.acquire(); gate.release()
    """

    def __init__(self, timeout_s: float = 30.0) -> None:
        self.timeout_s = timeout_s
        self._mutex = threading.Lock()
        self._held = False
        self._waiting: deque[threading.Lock] = deque()

    def acquire(self) -> None:
        """Wait for the turn to write (``timeout_s`` at most).

        Raises:
            StoreError: the gate was not handed over within ``timeout_s`` (a writer holds it too long).
        """
        with self._mutex:
            if not self._held:
                self._held = True
                return
            turn = threading.Lock()
            turn.acquire()
            self._waiting.append(turn)
        if turn.acquire(timeout=self.timeout_s):
            return  # handed over by release(): the gate stayed held
        with self._mutex:
            try:
                self._waiting.remove(turn)
            except ValueError:  # handed over just now after all
                return
        raise StoreError(f"the database stayed busy for {self.timeout_s:g} s; try again")

    def release(self) -> None:
        """Hand the gate to the writer waiting longest, or open it."""
        with self._mutex:
            if self._waiting:
                self._waiting.popleft().release()
            else:
                self._held = False


class StoreBase:
    """Sessions on one engine; every query helper takes the ``user_id`` it is scoped to."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        # SQLite: this process's writers queue here rather than in SQLite's busy handler.
        self._gate = WriteGate() if engine.dialect.name == "sqlite" else None
        self._reader = sessionmaker(bind=engine, expire_on_commit=False)
        self._writing = engine.execution_options(**{WRITE: True})
        self._writer = sessionmaker(bind=self._writing, expire_on_commit=False)
        self._batch = threading.local()  # the open batch transaction of this thread, if any
        self._checkpointer: Checkpointer | None = None  # a SQLite file's (set by Store.open)

    @property
    def engine(self) -> Engine:
        """The SQLAlchemy engine (for tools and tests; the API never needs it)."""
        return self._engine

    @contextmanager
    def _read(self) -> Iterator[Session]:
        current: Session | None = getattr(self._batch, "session", None)
        if current is not None:  # inside a batch that has written: read what it wrote
            yield current
            return
        with self._reader() as session, session.begin():
            yield session

    @contextmanager
    def _write(self) -> Iterator[Session]:
        """A transaction committed when the block ends (on SQLite it holds the write lock throughout).

        Inside :meth:`batch`, the batch's transaction is used instead (committed when the batch ends).
        """
        if getattr(self._batch, "open", False):
            current: Session | None = self._batch.session
            if current is None:  # the batch's first write opens its transaction
                self._enter_gate()
                self._batch.gated = self._gate is not None
                current = self._batch.session = self._writer()
                current.begin()
            if not self._batch.savepoints:
                yield current
                return
            with current.begin_nested():  # a savepoint: a failed call leaves the batch usable
                yield current
            return
        self._enter_gate()
        try:
            with self._writer() as session, session.begin():
                yield session
        finally:
            self._leave_gate()

    @contextmanager
    def _read_core(self) -> Iterator[Connection]:
        """:meth:`_read` on a Core connection, for the reads of every request (prepared Core statements).

        A session costs about as much again as the statement it runs (~0.14 ms a transaction on
        SQLite); a Core connection runs the same statements without it. Inside a batch that has
        written, the batch's connection (it reads what the batch wrote).
        """
        current: Session | None = getattr(self._batch, "session", None)
        if current is not None:
            yield current.connection()
            return
        with self._engine.connect() as connection, connection.begin():
            yield connection

    @contextmanager
    def _write_core(self) -> Iterator[Connection]:
        """:meth:`_write` on a Core connection (see :meth:`_read_core`); part of a batch inside one."""
        if getattr(self._batch, "open", False):
            with self._write() as session:
                yield session.connection()
            return
        self._enter_gate()
        try:
            with self._writing.begin() as connection:
                yield connection
        finally:
            self._leave_gate()

    def erase_soon(self) -> None:
        """After a delete: on a SQLite file, truncate the write-ahead log soon, in the background.

        With ``secure_delete`` the database file's freed bytes are zeros at once; the log still holds
        the pages the deleted rows were written in until a truncating checkpoint
        (:meth:`Checkpointer.truncate_soon <tierwise.store.checkpoint.Checkpointer.truncate_soon>`).
        Inside :meth:`batch` it is asked for when the batch commits. PostgreSQL: nothing here (dead
        rows stay in the table files until vacuumed; see ARCHITECTURE's decision on deletes).
        """
        if self._checkpointer is None:
            return
        if getattr(self._batch, "open", False):
            self._batch.erase = True
            return
        self._checkpointer.truncate_soon()

    def _enter_gate(self) -> None:
        if self._gate is not None:
            self._gate.acquire()

    def _leave_gate(self) -> None:
        if self._gate is not None:
            self._gate.release()

    @contextmanager
    def session(self, *, write: bool = False) -> Iterator[Session]:
        """A SQLAlchemy session for code that keeps its own tables in this database (the workspace).

        ``write=True`` is a write transaction (committed when the block ends, rolled back if it
        raises; inside :meth:`batch`, part of the batch); otherwise a read transaction. Scope every
        query by ``user_id``: the store cannot do it for tables it does not know.
        """
        with self._write() if write else self._read() as session:
            yield session

    @contextmanager
    def batch(self, *, savepoints: bool = True) -> Iterator[None]:
        """Make every write in the block one transaction: one commit instead of one per call.

        The writes become visible together when the block ends; if the block raises, none is kept.
        Batches nest (an inner batch joins the outer one); reads in the block see the batch's writes.
        Each call in the block is a savepoint, so one that fails (and is caught) leaves the rest;
        ``savepoints=False`` saves two statements a call for blocks that catch no store error (a
        failed call then fails the whole batch). A batch that writes nothing costs nothing.

        Example:
            >>> from tierwise.store import Store
            >>> store = Store.open("sqlite://")
            >>> with store.batch():
            ...     ada = store.create_user("ada")
            ...     chat = store.create_chat(ada.id)
            >>> store.get_chat(ada.id, chat.id).title
            'New Chat'
        """
        if getattr(self._batch, "open", False):
            yield
            return
        self._batch.open, self._batch.session, self._batch.savepoints = True, None, savepoints
        self._batch.gated = self._batch.erase = False
        try:
            yield
        except BaseException:
            session = self._batch.session
            if session is not None:
                session.rollback()
            raise
        else:
            session = self._batch.session
            if session is not None:
                session.commit()
                if self._batch.erase and self._checkpointer is not None:
                    self._checkpointer.truncate_soon()
        finally:
            session = self._batch.session
            self._batch.open, self._batch.session = False, None
            try:
                if session is not None:
                    session.close()
            finally:
                if self._batch.gated:
                    self._batch.gated = False
                    self._leave_gate()

    def _insert(self, table: type[models.Base]) -> Any:
        """The dialect's ``INSERT`` (with ``ON CONFLICT``) for ``table``."""
        if self._engine.dialect.name == "postgresql":
            return postgresql.insert(table)
        return sqlite.insert(table)

    @staticmethod
    def _user(session: Session, user_id: str) -> models.User:
        row = session.get(models.User, user_id)
        if row is None:
            raise NotFoundError("user", user_id, user_id)
        return row

    @staticmethod
    def _chat(session: Session, user_id: str, chat_id: str, *, lock: bool = False) -> models.Chat:
        """The chat if it belongs to ``user_id``, else :class:`NotFoundError` (whoever owns it)."""
        query = sa.select(models.Chat).where(models.Chat.id == chat_id, models.Chat.user_id == user_id)
        if lock:
            query = query.with_for_update()
        row = session.scalars(query).one_or_none()
        if row is None:
            raise NotFoundError("chat", chat_id, user_id)
        return row
