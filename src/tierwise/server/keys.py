"""API keys: who a request to the HTTP service acts for.

A key is ``tw_`` followed by 40 URL-safe characters from :mod:`secrets`. It is shown once, when it
is created; the database keeps only its SHA-256 (``key_hash``) and its first 8 characters
(``prefix``, to tell keys apart in a list). A request's key is hashed and looked up by its hash, so
the comparison never depends on how much of a stored key a guess matches. Revoked keys stay listed
(with ``revoked_at``) but no longer resolve to anyone. Keys belong to a user and go with them.

The table lives in the store's database (:class:`tierwise.store.models.Base`, migration
``0003_api_keys``).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

import sqlalchemy as sa
from sqlalchemy import ForeignKey, Index, Text
from sqlalchemy.orm import Mapped, mapped_column

from tierwise.errors import InputError
from tierwise.store import NotFoundError, Store
from tierwise.store.checks import check_text
from tierwise.store.models import ID, Base, new_id, utcnow

__all__ = [
    "KEY_PREFIX",
    "ApiKey",
    "ApiKeyInfo",
    "create_key",
    "hash_key",
    "key_owner",
    "list_all_keys",
    "list_keys",
    "revoke_key",
    "user_for_key",
]

KEY_PREFIX = "tw_"
_KEY_CHARS = 40  # URL-safe characters after the prefix
_DISPLAY = 8  # characters of the key kept for display
_MAX_KEY = 256  # longer "keys" are refused without hashing them
_MAX_NAME = 200
_TOUCH_EVERY = timedelta(minutes=1)  # last_used_at is written at most this often


class ApiKey(Base):
    """A user's API key: its hash, a display prefix, and when it was made, last used and revoked."""

    __tablename__ = "api_keys"
    __table_args__ = (
        Index("ix_api_keys_key_hash", "key_hash"),
        Index("ix_api_keys_user_id_created_at", "user_id", "created_at"),
    )

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    user_id: Mapped[str] = mapped_column(ID, ForeignKey("users.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(Text)
    prefix: Mapped[str] = mapped_column(Text)
    key_hash: Mapped[str] = mapped_column(Text, unique=True)
    created_at: Mapped[datetime]
    last_used_at: Mapped[datetime | None]
    revoked_at: Mapped[datetime | None]


@dataclass(frozen=True, slots=True)
class ApiKeyInfo:
    """What can be shown about a key (never the key itself)."""

    id: str
    user_id: str
    name: str
    prefix: str
    created_at: datetime
    last_used_at: datetime | None
    revoked_at: datetime | None

    @property
    def active(self) -> bool:
        """Whether the key still authenticates (it was not revoked)."""
        return self.revoked_at is None

    @classmethod
    def of(cls, row: ApiKey) -> ApiKeyInfo:
        """The record of a row."""
        return cls(
            row.id, row.user_id, row.name, row.prefix, row.created_at, row.last_used_at, row.revoked_at
        )


def hash_key(key: str) -> str:
    """The SHA-256 (hex) of ``key``: what the database keeps."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def create_key(store: Store, user_id: str, name: str = "default") -> tuple[str, ApiKeyInfo]:
    """A new key for ``user_id``: the plaintext (shown once, never stored) and its record.

    Raises:
        NotFoundError: no such user.
        InputError: ``name`` is not a short, non-empty string.
    """
    check_text("name", name)
    name = name.strip()
    if not name or len(name) > _MAX_NAME:
        raise InputError(f"a key's name is 1 to {_MAX_NAME} characters, got {len(name)}")
    key = KEY_PREFIX + secrets.token_urlsafe(_KEY_CHARS * 3 // 4)  # 30 bytes: 40 characters
    store.get_user(user_id)  # NotFoundError before anything is written
    row = ApiKey(
        id=new_id(),
        user_id=user_id,
        name=name,
        prefix=key[:_DISPLAY],
        key_hash=hash_key(key),
        created_at=utcnow(),
        last_used_at=None,
        revoked_at=None,
    )
    with store.session(write=True) as session:
        session.add(row)
        session.flush()
        return key, ApiKeyInfo.of(row)


def list_keys(store: Store, user_id: str, *, include_revoked: bool = True) -> list[ApiKeyInfo]:
    """The user's keys, oldest first (revoked ones too unless ``include_revoked`` is false)."""
    query = sa.select(ApiKey).where(ApiKey.user_id == user_id)
    if not include_revoked:
        query = query.where(ApiKey.revoked_at.is_(None))
    with store.session() as session:
        rows = session.scalars(query.order_by(ApiKey.created_at, ApiKey.id)).all()
        return [ApiKeyInfo.of(row) for row in rows]


def list_all_keys(store: Store) -> list[ApiKeyInfo]:
    """Every user's keys, by user then oldest first (for the operator's ``tierwise keys list``)."""
    query = sa.select(ApiKey).order_by(ApiKey.user_id, ApiKey.created_at, ApiKey.id)
    with store.session() as session:
        return [ApiKeyInfo.of(row) for row in session.scalars(query).all()]


def key_owner(store: Store, key_id: str) -> str | None:
    """The id of the user who owns the key ``key_id`` (``None`` if there is no such key)."""
    with store.session() as session:
        owner: str | None = session.scalars(sa.select(ApiKey.user_id).where(ApiKey.id == key_id)).first()
        return owner


def revoke_key(store: Store, user_id: str, key_id: str) -> ApiKeyInfo:
    """Revoke the user's key ``key_id`` (revoking it again changes nothing).

    Raises:
        NotFoundError: the user has no key ``key_id`` (whoever owns it).
    """
    query = sa.select(ApiKey).where(ApiKey.id == key_id, ApiKey.user_id == user_id)
    with store.session(write=True) as session:
        row = session.scalars(query).one_or_none()
        if row is None:
            raise NotFoundError("API key", key_id, user_id)
        if row.revoked_at is None:
            row.revoked_at = utcnow()
            session.flush()
        return ApiKeyInfo.of(row)


def user_for_key(store: Store, key: str) -> str | None:
    """The id of the user whose active key ``key`` is, else ``None`` (unknown, malformed or revoked).

    Records the use in ``last_used_at`` (at most once a minute per key, to keep reads cheap).
    """
    if not isinstance(key, str) or not key or len(key) > _MAX_KEY:
        return None
    digest = hash_key(key)
    with store.session() as session:
        row = session.scalars(sa.select(ApiKey).where(ApiKey.key_hash == digest)).one_or_none()
        if row is None or not hmac.compare_digest(row.key_hash, digest) or row.revoked_at is not None:
            return None
        key_id, user_id, last_used = row.id, row.user_id, row.last_used_at
    now = utcnow()
    if last_used is None or now - last_used >= _TOUCH_EVERY:
        with store.session(write=True) as session:
            session.execute(sa.update(ApiKey).where(ApiKey.id == key_id).values(last_used_at=now))
    return user_id
