"""What the processes serving one database share: rate limits, and which chats have a turn running.

Several processes (``tierwise serve --workers``, or hosts behind a load balancer) serve one
PostgreSQL; what one process would keep in memory is kept here, each operation one statement, atomic
on PostgreSQL and SQLite alike. Time is the database's clock, the same for every host.

- **Rate limits** (:meth:`SharedMixin.take_request`, for
  :class:`~tierwise.server.auth.SharedRateLimiter`): a token bucket per key, refilled for the time
  since it was last counted and taken from in one ``INSERT … ON CONFLICT DO UPDATE … WHERE …
  RETURNING``, so two processes never take the same token.
- **Running turns** (:meth:`SharedMixin.take_turn` and the rest, for
  :class:`~tierwise.server.running.RunningTurns`): the process running a chat's turn holds a lease
  and renews it every half second; another process asked to stop the turn marks the lease, and the
  owner sees the mark when it renews. A lease not renewed for :data:`LEASE_SECONDS` is a dead
  process's, and free.
- **Setting up** (:meth:`SharedMixin.exclusive`): what only one process may do at a time, such as
  creating the local user and loading the sample workspace when several start at once.

Mixed into :class:`~tierwise.store.repository.Store`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from tierwise.store import models
from tierwise.store._base import StoreBase

__all__ = ["LEASE_SECONDS", "SharedMixin"]

LEASE_SECONDS = 10.0
"""A running turn's lease lapses when not renewed for this long (its process died)."""

_BUCKETS: sa.Table = models.RateBucket.__table__  # type: ignore[assignment]
_LEASES: sa.Table = models.TurnLease.__table__  # type: ignore[assignment]


def _now(dialect: str) -> Any:
    """The database's clock in seconds (fractions included)."""
    if dialect == "postgresql":
        return sa.func.extract("epoch", sa.func.clock_timestamp())
    return (sa.func.julianday("now") - 2440587.5) * 86400.0  # SQLite: the Unix epoch's Julian day


class SharedMixin(StoreBase):
    """Token buckets in ``rate_buckets`` and running turns in ``turn_leases``."""

    def _upsert(self, table: sa.Table) -> Any:
        dialect = self._engine.dialect.name
        return (postgresql.insert if dialect == "postgresql" else sqlite.insert)(table)

    def take_request(self, key: str, rate: int, burst: int) -> float | None:
        """Take a token from ``key``'s bucket: ``None`` if there was one, else the seconds to wait.

        The bucket holds up to ``burst`` tokens (full at first) and refills at ``rate`` a minute.
        """
        per_second = rate / 60.0
        now = _now(self._engine.dialect.name)
        table = _BUCKETS
        refilled = table.c.tokens + (now - table.c.at) * per_second
        capped = sa.case((refilled > burst, float(burst)), else_=refilled)
        statement = (
            self._upsert(table)
            .values(key=key, tokens=float(burst) - 1.0, at=now)
            .on_conflict_do_update(
                index_elements=[table.c.key], set_={"tokens": capped - 1.0, "at": now}, where=capped >= 1.0
            )
            .returning(table.c.tokens)
        )
        with self._write() as session:
            if session.execute(statement).first() is not None:
                return None
            tokens = session.execute(sa.select(capped).where(table.c.key == key)).scalar_one()
        return max(0.0, (1.0 - float(tokens)) / per_second)

    def take_turn(self, user_id: str, chat_id: str, owner: str) -> bool:
        """Hold the chat's running-turn lease for ``owner``: ``False`` if a live one holds it."""
        now = _now(self._engine.dialect.name)
        table = _LEASES
        statement = (
            self._upsert(table)
            .values(user_id=user_id, chat_id=chat_id, owner=owner, beat=now, stop=False)
            .on_conflict_do_update(
                index_elements=[table.c.user_id, table.c.chat_id],
                set_={"owner": owner, "beat": now, "stop": False},
                where=table.c.beat < now - LEASE_SECONDS,  # a dead process's lease
            )
            .returning(table.c.owner)
        )
        with self._write() as session:
            return session.execute(statement).first() is not None

    def renew_turn(self, user_id: str, chat_id: str, owner: str) -> bool | None:
        """Renew ``owner``'s lease: whether it was asked to stop (``None``: the lease is not its own)."""
        table = _LEASES
        statement = (
            sa.update(table)
            .where(table.c.user_id == user_id, table.c.chat_id == chat_id, table.c.owner == owner)
            .values(beat=_now(self._engine.dialect.name))
            .returning(table.c.stop)
        )
        with self._write() as session:
            row = session.execute(statement).first()
        return None if row is None else bool(row[0])

    def end_turn(self, user_id: str, chat_id: str, owner: str) -> None:
        """Let ``owner``'s lease go (the turn ended)."""
        table = _LEASES
        where = (table.c.user_id == user_id, table.c.chat_id == chat_id, table.c.owner == owner)
        with self._write() as session:
            session.execute(sa.delete(table).where(*where))

    def stop_turn(self, user_id: str, chat_id: str) -> bool:
        """Ask the chat's running turn, in whichever process, to stop: whether one is running."""
        table = _LEASES
        now = _now(self._engine.dialect.name)
        live = (table.c.user_id == user_id, table.c.chat_id == chat_id, table.c.beat >= now - LEASE_SECONDS)
        statement = sa.update(table).where(*live).values(stop=True).returning(table.c.owner)
        with self._write() as session:
            return session.execute(statement).first() is not None

    def turn_running(self, user_id: str, chat_id: str) -> bool:
        """Whether a live process holds the chat's running-turn lease."""
        table = _LEASES
        now = _now(self._engine.dialect.name)
        query = sa.select(table.c.owner).where(
            table.c.user_id == user_id, table.c.chat_id == chat_id, table.c.beat >= now - LEASE_SECONDS
        )
        with self._read() as session:
            return session.execute(query).first() is not None

    @contextmanager
    def exclusive(self, name: str) -> Iterator[None]:
        """While inside, no other process is inside ``exclusive(name)`` on this database.

        A PostgreSQL advisory lock, held on a connection of its own; on SQLite (one process serves
        it) nothing is taken.
        """
        if self._engine.dialect.name != "postgresql":
            yield
            return
        key = int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)
        with self._engine.connect() as connection:
            connection.execute(sa.text("SELECT pg_advisory_lock(:key)"), {"key": key})
            connection.commit()
            try:
                yield
            finally:
                connection.execute(sa.text("SELECT pg_advisory_unlock(:key)"), {"key": key})
                connection.commit()
