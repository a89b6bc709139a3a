"""The store's errors: both are :class:`~tierwise.errors.UserError`, so a boundary shows their message.

``NotFoundError`` is also what another user's row looks like: the store never says whether an id
exists for someone else.
"""

from __future__ import annotations

from tierwise.errors import UserError

__all__ = ["NotFoundError", "StoreError"]


class StoreError(UserError):
    """The database cannot be used as configured (a bad URL, an unsupported backend)."""


class NotFoundError(UserError):
    """No row with this id belongs to this user.

    Attributes:
        kind: what was looked for (``"chat"``, ``"message"``, ``"blob"`` …).
        id: the id that was not found.
        user_id: the user it was looked for.
    """

    def __init__(self, kind: str, id: str, user_id: str) -> None:
        super().__init__(f"{kind} {id!r} not found for user {user_id!r}")
        self.kind = kind
        self.id = id
        self.user_id = user_id
