"""What every part of the store shares: sessions, ownership checks and input checks."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session, sessionmaker

from tierwise.store import models
from tierwise.store.checkpoint import Checkpointer
from tierwise.store.engine import WRITE
from tierwise.store.errors import NotFoundError

# What prepared Core statements in several parts of the store share: a chat's messages, by user and chat.
MESSAGES: sa.Table = models.ChatMessage.__table__  # type: ignore[assignment]
OWN_MESSAGES = (MESSAGES.c.user_id == sa.bindparam("b_user"), MESSAGES.c.chat_id == sa.bindparam("b_chat"))


class StoreBase:
    """Sessions on one engine; every query helper takes the ``user_id`` it is scoped to."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._reader = sessionmaker(bind=engine, expire_on_commit=False)
        self._writer = sessionmaker(bind=engine.execution_options(**{WRITE: True}), expire_on_commit=False)
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
                current = self._batch.session = self._writer()
                current.begin()
            if not self._batch.savepoints:
                yield current
                return
            with current.begin_nested():  # a savepoint: a failed call leaves the batch usable
                yield current
            return
        with self._writer() as session, session.begin():
            yield session

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
        finally:
            session = self._batch.session
            self._batch.open, self._batch.session = False, None
            if session is not None:
                session.close()

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
