"""What every part of the store shares: sessions, ownership checks and input checks."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session, sessionmaker

from tierwise.store import models
from tierwise.store.engine import WRITE
from tierwise.store.errors import NotFoundError


class StoreBase:
    """Sessions on one engine; every query helper takes the ``user_id`` it is scoped to."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._reader = sessionmaker(bind=engine, expire_on_commit=False)
        self._writer = sessionmaker(bind=engine.execution_options(**{WRITE: True}), expire_on_commit=False)

    @property
    def engine(self) -> Engine:
        """The SQLAlchemy engine (for tools and tests; the API never needs it)."""
        return self._engine

    @contextmanager
    def _read(self) -> Iterator[Session]:
        with self._reader() as session, session.begin():
            yield session

    @contextmanager
    def _write(self) -> Iterator[Session]:
        """A transaction committed when the block ends (on SQLite it holds the write lock throughout)."""
        with self._writer() as session, session.begin():
            yield session

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
