"""Responses API responses, kept so any process can continue or return one (``api_responses``).

A response made on ``/v1/responses`` is a point in a ``/v1`` session: :meth:`ResponsesMixin.put_api_response`
keeps it as the messages it added to the response it continues (its *base*), so a chain of a hundred
responses stores each message once, and :meth:`ResponsesMixin.api_response_chain` reads a chain back
in one recursive query, oldest first. Every read is scoped by user: another user's id is an id that
does not exist.

Mixed into :class:`~tierwise.store.repository.Store`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import sqlalchemy as sa

from tierwise.errors import InputError
from tierwise.store import models
from tierwise.store._base import StoreBase
from tierwise.store.checks import check_json, check_text

__all__ = ["ApiResponseRow", "ResponsesMixin"]

_TABLE: sa.Table = models.ApiResponse.__table__  # type: ignore[assignment]
_ID_LENGTH = 64


@dataclass(frozen=True)
class ApiResponseRow:
    """One stored response: whose, in which session, what it added to its base, its object.

    ``response`` is ``None`` once the response was deleted (its row kept for a later one's chain).
    """

    id: str
    user_id: str
    session_key: str
    base_id: str | None
    system: list[Any]
    added: list[Any]
    response: dict[str, Any] | None


class ResponsesMixin(StoreBase):
    """The ``api_responses`` table, per user."""

    def put_api_response(
        self,
        user_id: str,
        response: dict[str, Any],
        *,
        session_key: str,
        base_id: str | None,
        system: Sequence[Any],
        added: Sequence[Any],
    ) -> None:
        """Keep ``response`` (its ``id`` is the key): ``added`` to ``base_id``'s conversation.

        Raises:
            InputError: a value the store cannot keep (not JSON, an id too long).
        """
        response_id = check_text("id", response.get("id"))
        if len(response_id) > _ID_LENGTH or len(base_id or "") > _ID_LENGTH:
            raise InputError(f"a response id has at most {_ID_LENGTH} characters")
        row = {
            "id": response_id,
            "user_id": user_id,
            "session_key": session_key,
            "base_id": base_id,
            "system": check_json("system", list(system)),
            "added": check_json("added", list(added)),
            "response": check_json("response", dict(response)),
            "created_at": models.utcnow(),
        }
        with self._write() as session:
            self._user(session, user_id)
            session.execute(sa.insert(_TABLE), [row])

    def api_response_chain(self, user_id: str, response_id: str) -> list[ApiResponseRow]:
        """``response_id`` and the responses it builds on, oldest first; empty if the user has none such.

        The last row is ``response_id``'s own (its ``response`` is ``None`` if it was deleted).
        """
        table = _TABLE.c
        start = sa.select(table.id, table.base_id, sa.literal(0).label("depth")).where(
            table.id == response_id, table.user_id == user_id
        )
        chain = start.cte("chain", recursive=True)
        step = sa.select(table.id, table.base_id, (chain.c.depth + 1).label("depth")).join(
            chain, (table.id == chain.c.base_id) & (table.user_id == user_id)
        )
        chain = chain.union_all(step)
        query = (
            sa.select(
                table.id,
                table.user_id,
                table.session_key,
                table.base_id,
                table.system,
                table.added,
                table.response,
            )
            .join(chain, table.id == chain.c.id)
            .order_by(chain.c.depth.desc())
        )
        with self._read() as session:
            rows = session.execute(query).all()
        return [ApiResponseRow(*row) for row in rows]

    def api_response(self, user_id: str, response_id: str) -> dict[str, Any] | None:
        """The response object ``response_id`` of ``user_id``; ``None`` if none (or deleted)."""
        query = sa.select(_TABLE.c.response).where(_TABLE.c.id == response_id, _TABLE.c.user_id == user_id)
        with self._read() as session:
            found = session.execute(query).scalar_one_or_none()
        return dict(found) if found is not None else None

    def delete_api_response(self, user_id: str, response_id: str) -> bool:
        """Forget the response object ``response_id``; returns whether there was one to delete.

        Its row goes too unless a later response builds on it (then its messages stay, for that
        one's conversation), and so does each deleted base left with nothing building on it.
        """
        table = _TABLE.c
        with self._write() as session:
            result = session.execute(
                sa.update(_TABLE)
                .where(table.id == response_id, table.user_id == user_id, table.response.is_not(None))
                .values(response=None)
            )
            found = cast("sa.CursorResult[Any]", result).rowcount
            current: str | None = response_id if found else None
            while current is not None:
                used = sa.select(table.id).where(table.base_id == current).limit(1)
                if session.execute(used).first() is not None:
                    break
                row = session.execute(
                    sa.select(table.base_id, table.response).where(table.id == current)
                ).first()
                if row is None or row.response is not None:
                    break
                session.execute(sa.delete(_TABLE).where(table.id == current))
                current = row.base_id
        if found:
            self.erase_soon()  # a SQLite file's log keeps the response until truncated
        return bool(found)
