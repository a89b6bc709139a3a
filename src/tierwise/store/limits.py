"""Rate limits every process serving the database shares: a token bucket per key, in one statement.

:meth:`LimitsMixin.take_request` is the store's half of
:class:`~tierwise.server.auth.SharedRateLimiter`: it refills the key's bucket for the time since it
was last counted and takes a token, in one ``INSERT … ON CONFLICT DO UPDATE … WHERE … RETURNING``
(atomic on PostgreSQL and SQLite alike, so two processes never take the same token). Time is the
database's clock, the same for every host behind a load balancer.

Mixed into :class:`~tierwise.store.repository.Store`.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from tierwise.store import models
from tierwise.store._base import StoreBase

__all__ = ["LimitsMixin"]

_BUCKETS: sa.Table = models.RateBucket.__table__  # type: ignore[assignment]


def _now(dialect: str) -> Any:
    """The database's clock in seconds (fractions included)."""
    if dialect == "postgresql":
        return sa.func.extract("epoch", sa.func.clock_timestamp())
    return (sa.func.julianday("now") - 2440587.5) * 86400.0  # SQLite: the Unix epoch's Julian day


class LimitsMixin(StoreBase):
    """Token buckets in ``rate_buckets``, shared by every process on the database."""

    def take_request(self, key: str, rate: int, burst: int) -> float | None:
        """Take a token from ``key``'s bucket: ``None`` if there was one, else the seconds to wait.

        The bucket holds up to ``burst`` tokens (full at first) and refills at ``rate`` a minute.
        """
        per_second = rate / 60.0
        dialect = self._engine.dialect.name
        now = _now(dialect)
        table = _BUCKETS
        insert = (postgresql.insert if dialect == "postgresql" else sqlite.insert)(table)
        refilled = table.c.tokens + (now - table.c.at) * per_second
        capped = sa.case((refilled > burst, float(burst)), else_=refilled)
        statement = (
            insert.values(key=key, tokens=float(burst) - 1.0, at=now)
            .on_conflict_do_update(
                index_elements=[table.c.key],
                set_={"tokens": capped - 1.0, "at": now},
                where=capped >= 1.0,
            )
            .returning(table.c.tokens)
        )
        with self._write() as session:
            taken = session.execute(statement).first()
            if taken is not None:
                return None
            tokens = session.execute(sa.select(capped).where(table.c.key == key)).scalar_one()
        return max(0.0, (1.0 - float(tokens)) / per_second)
