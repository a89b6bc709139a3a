"""The tables, as SQLAlchemy 2 typed declarative models (the schema of ``migrations/versions``).

Portable across SQLite and PostgreSQL: ids are strings (time-ordered UUIDs from :func:`new_id`),
JSON columns are ``JSON`` (``JSONB`` on PostgreSQL), timestamps are timezone-aware UTC on both
(:class:`UTCDateTime`). Every row that belongs to a chat carries the chat's ``user_id`` too, tied to
it by a composite foreign key ``(chat_id, user_id) → chats(id, user_id)``: the database itself
guarantees a row can only be reached under the user who owns its chat. Deleting a chat cascades to
its messages, tool calls, segments and snapshots; blobs belong to the user, audit entries (and the
cost guard's usage rows) outlive the chat they mention.

These classes are internal: :class:`~tierwise.store.repository.Store` returns frozen records.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from datetime import UTC, datetime
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Dialect,
    Float,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

__all__ = [
    "AuditEntry",
    "Base",
    "Blob",
    "Chat",
    "ChatMessage",
    "ChatToolCall",
    "ContextSnapshot",
    "Segment",
    "UTCDateTime",
    "UsageEntry",
    "User",
    "new_id",
    "utcnow",
]

NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_N_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

_id_lock = threading.Lock()
_last_ms = 0
_counter = 0


def new_id() -> str:
    """A new UUID (version 7 layout): time-ordered, and strictly increasing within this process.

    Sorting rows by ``(created_at, id)`` therefore keeps insertion order even when two rows share a
    timestamp.
    """
    global _last_ms, _counter
    with _id_lock:
        ms = time.time_ns() // 1_000_000
        if ms > _last_ms:
            _last_ms, _counter = ms, int.from_bytes(os.urandom(2)) & 0x3FF
        else:  # same millisecond (or the clock went back): count on from the last id
            _counter += 1
            if _counter > 0xFFF:
                _last_ms, _counter = _last_ms + 1, 0
        ms, counter = _last_ms, _counter
    rand = int.from_bytes(os.urandom(8)) & ((1 << 62) - 1)
    value = (ms & ((1 << 48) - 1)) << 80 | 0x7 << 76 | counter << 64 | 0b10 << 62 | rand
    return str(uuid.UUID(int=value))


def utcnow() -> datetime:
    """The current time, timezone-aware, in UTC."""
    return datetime.now(UTC)


class UTCDateTime(TypeDecorator[datetime]):
    """A timezone-aware datetime stored in UTC; naive datetimes are refused, results are always UTC.

    SQLite keeps no offset, so values are converted to UTC before they are stored and marked UTC
    when read; PostgreSQL stores ``timestamptz`` and returns it in the session's zone, which is
    converted to UTC as well.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        """UTC for the database; a naive datetime is a bug in the caller."""
        if value is None:
            return None
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError(f"naive datetime {value.isoformat()}: give a timezone (UTC)")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        """Always timezone-aware UTC."""
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def json_type() -> JSON:
    """Portable JSON: ``JSON`` on SQLite, ``JSONB`` on PostgreSQL; Python ``None`` is SQL ``NULL``."""
    return JSON(none_as_null=True).with_variant(JSONB(none_as_null=True), "postgresql")


# Ids are 36-character UUID strings; ids that come from elsewhere (segments, tool calls) are text.
ID = String(36)


class Base(DeclarativeBase):
    """Declarative base with deterministic constraint names."""

    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map: ClassVar[dict[Any, Any]] = {
        datetime: UTCDateTime(),
        dict[str, Any]: json_type(),
        list[Any]: json_type(),
    }


def _chat_fk() -> ForeignKeyConstraint:
    return ForeignKeyConstraint(["chat_id", "user_id"], ["chats.id", "chats.user_id"], ondelete="CASCADE")


class User(Base):
    """Someone whose rows the store keeps apart from everyone else's."""

    __tablename__ = "users"

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    name: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime]


class Chat(Base):
    """A conversation and its running context state (seed 002's ``chats``)."""

    __tablename__ = "chats"
    __table_args__ = (
        UniqueConstraint("id", "user_id"),
        Index("ix_chats_user_id_updated_at", "user_id", "updated_at"),
        Index("ix_chats_user_id_context_type_entity_id", "user_id", "context_type", "entity_id"),
    )

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    user_id: Mapped[str] = mapped_column(ID, ForeignKey("users.id", ondelete="CASCADE"))
    context_type: Mapped[str] = mapped_column(Text)
    entity_id: Mapped[str | None] = mapped_column(Text)
    title: Mapped[str] = mapped_column(Text)
    title_generated: Mapped[bool] = mapped_column(Boolean)
    conversation_summary: Mapped[str | None] = mapped_column(Text)
    key_decisions: Mapped[list[Any]]
    created_entities: Mapped[list[Any]]
    total_tokens_used: Mapped[int] = mapped_column(Integer)
    token_limit: Mapped[int | None] = mapped_column(Integer)  # its budget; NULL: the server's
    message_count: Mapped[int] = mapped_column(Integer)
    messages_archived: Mapped[int] = mapped_column(Integer)
    last_compression_at: Mapped[datetime | None]
    narrative: Mapped[dict[str, Any] | None]
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class ChatMessage(Base):
    """One OpenAI-format message at position ``seq`` (0-based, unique per chat) of a chat."""

    __tablename__ = "chat_messages"
    __table_args__ = (
        _chat_fk(),
        UniqueConstraint("chat_id", "seq"),
        Index("ix_chat_messages_user_id_chat_id_seq", "user_id", "chat_id", "seq"),
        Index("ix_chat_messages_chat_id_is_archived", "chat_id", "is_archived"),
    )

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    chat_id: Mapped[str] = mapped_column(ID)
    user_id: Mapped[str] = mapped_column(ID)
    seq: Mapped[int] = mapped_column(Integer)
    role: Mapped[str] = mapped_column(Text)
    content: Mapped[str | None] = mapped_column(Text)
    content_parts: Mapped[list[Any] | None]
    name: Mapped[str | None] = mapped_column(Text)
    tool_calls: Mapped[list[Any] | None]
    tool_call_id: Mapped[str | None] = mapped_column(Text)
    tool_results: Mapped[list[Any] | None]
    extra: Mapped[dict[str, Any] | None]
    is_archived: Mapped[bool] = mapped_column(Boolean)
    is_in_summary: Mapped[bool] = mapped_column(Boolean)
    segment_id: Mapped[str | None] = mapped_column(Text)
    token_count: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime]
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata")
    # What memory reads off the message (tierwise.memory.analysis), made once: BM25 terms and
    # content words, each joined by spaces; NULL for messages stored before migration 0006.
    terms: Mapped[str | None] = mapped_column(Text)
    words: Mapped[str | None] = mapped_column(Text)


class ChatToolCall(Base):
    """One tool execution, tied to the assistant message that asked for it."""

    __tablename__ = "chat_tool_calls"
    __table_args__ = (
        _chat_fk(),
        ForeignKeyConstraint(["user_id", "blob_sha256"], ["blobs.user_id", "blobs.sha256"]),
        Index("ix_chat_tool_calls_user_id_chat_id", "user_id", "chat_id"),
        Index("ix_chat_tool_calls_tool_name", "tool_name"),
    )

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    chat_id: Mapped[str] = mapped_column(ID)
    message_id: Mapped[str] = mapped_column(
        ID, ForeignKey("chat_messages.id", ondelete="CASCADE"), index=True
    )
    user_id: Mapped[str] = mapped_column(ID)
    tool_name: Mapped[str] = mapped_column(Text)
    arguments: Mapped[dict[str, Any]]
    result: Mapped[Any] = mapped_column(json_type(), nullable=True)
    blob_sha256: Mapped[str | None] = mapped_column(String(64))
    duration_ms: Mapped[int | None] = mapped_column(Integer)
    success: Mapped[bool] = mapped_column(Boolean)
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime]


class Segment(Base):
    """A run of messages (``first_seq``..``last_seq``) with its header and summary; id stable per chat."""

    __tablename__ = "segments"
    __table_args__ = (_chat_fk(), Index("ix_segments_user_id_chat_id_seq", "user_id", "chat_id", "seq"))

    chat_id: Mapped[str] = mapped_column(ID, primary_key=True)
    id: Mapped[str] = mapped_column(Text, primary_key=True)
    user_id: Mapped[str] = mapped_column(ID)
    seq: Mapped[int] = mapped_column(Integer)
    first_seq: Mapped[int] = mapped_column(Integer)
    last_seq: Mapped[int] = mapped_column(Integer)
    started_at: Mapped[datetime | None]
    ended_at: Mapped[datetime | None]
    header: Mapped[str] = mapped_column(Text)
    summary: Mapped[str] = mapped_column(Text)
    entities: Mapped[list[Any]]
    topic: Mapped[str | None] = mapped_column(Text)
    outcome: Mapped[str | None] = mapped_column(Text)
    token_count: Mapped[int] = mapped_column(Integer)
    boundary_reason: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class Blob(Base):
    """Content kept out of the prompt (a long tool result, a file), stored once per user and sha256."""

    __tablename__ = "blobs"

    user_id: Mapped[str] = mapped_column(ID, ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    size: Mapped[int] = mapped_column(BigInteger)
    mime: Mapped[str] = mapped_column(Text)
    content: Mapped[bytes] = mapped_column(LargeBinary)
    summary: Mapped[str | None] = mapped_column(Text)
    entities: Mapped[list[Any]]
    created_at: Mapped[datetime]
    hits: Mapped[int] = mapped_column(Integer)


class ContextSnapshot(Base):
    """What one pack spent, per tier (seed 004's ``context_snapshots``; ``session_id`` is the chat)."""

    __tablename__ = "context_snapshots"
    __table_args__ = (
        ForeignKeyConstraint(["session_id", "user_id"], ["chats.id", "chats.user_id"], ondelete="CASCADE"),
        Index("idx_context_snapshots_session", "session_id"),
        Index("idx_context_snapshots_user", "user_id"),
        Index("ix_context_snapshots_user_id_session_id_created_at", "user_id", "session_id", "created_at"),
    )

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    session_id: Mapped[str] = mapped_column(ID)
    user_id: Mapped[str] = mapped_column(ID)
    tier_breakdown: Mapped[dict[str, Any]]
    total_tokens: Mapped[int] = mapped_column(Integer)
    budget_percent: Mapped[float] = mapped_column(Float)
    pruning_strategy: Mapped[dict[str, Any]]
    checksum: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime]


class AuditEntry(Base):
    """Something that happened, kept after the chat it mentions is gone (so ``chat_id`` is no key)."""

    __tablename__ = "audit_log"
    __table_args__ = (
        Index("ix_audit_log_user_id_created_at", "user_id", "created_at"),
        Index("ix_audit_log_user_id_chat_id", "user_id", "chat_id"),
        Index("ix_audit_log_user_id_event_chat_id_created_at", "user_id", "event", "chat_id", "created_at"),
    )

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    user_id: Mapped[str] = mapped_column(ID, ForeignKey("users.id", ondelete="CASCADE"))
    chat_id: Mapped[str | None] = mapped_column(ID)
    event: Mapped[str] = mapped_column(Text)
    checksum: Mapped[str | None] = mapped_column(Text)
    details: Mapped[dict[str, Any]]
    created_at: Mapped[datetime]


class UsageEntry(Base):
    """One turn's spending, as the cost guard sums it (the ``usage`` audit entry of the same id, in columns).

    Kept beside the audit log so that a limit check is one aggregate over an index that covers it
    (no JSON read per row): the user's rows since the month began, and the chat's rows. Like audit
    entries, they outlive the chat they mention.
    """

    __tablename__ = "usage_log"
    __table_args__ = (
        Index("ix_usage_log_user_id_created_at", "user_id", "created_at", "tokens", "dollars"),
        Index("ix_usage_log_user_id_chat_id", "user_id", "chat_id", "tokens", "dollars"),
    )

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    user_id: Mapped[str] = mapped_column(ID, ForeignKey("users.id", ondelete="CASCADE"))
    chat_id: Mapped[str | None] = mapped_column(ID)
    tokens: Mapped[int] = mapped_column(BigInteger)
    dollars: Mapped[float] = mapped_column(Float)
    cached_tokens: Mapped[int] = mapped_column(BigInteger)
    created_at: Mapped[datetime]


class ApiResponse(Base):
    """A Responses API response (``resp_…``): the point in a ``/v1`` session it ends.

    Kept for ``previous_response_id`` and ``GET /v1/responses/{id}`` in every process serving the
    database. A response's conversation is its ``base``'s (the response it continues, if any) followed by
    ``added`` — the messages its request added and its answer — so a long chain stores each message
    once; :meth:`~tierwise.store.responses.ResponsesMixin.api_response_chain` reads a chain in one
    recursive query. ``response`` is the response object as the client got it; ``NULL`` once deleted
    (the row stays while a later response builds on it).
    """

    __tablename__ = "api_responses"
    __table_args__ = (Index("ix_api_responses_base_id", "base_id"),)

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_id: Mapped[str] = mapped_column(ID, ForeignKey("users.id", ondelete="CASCADE"))
    session_key: Mapped[str] = mapped_column(Text)
    base_id: Mapped[str | None] = mapped_column(String(64))
    system: Mapped[list[Any]]
    added: Mapped[list[Any]]
    response: Mapped[dict[str, Any] | None]
    created_at: Mapped[datetime]


class RateBucket(Base):
    """A rate limit's token bucket, shared by every process serving the database.

    Taken from by :meth:`~tierwise.store.shared.SharedMixin.take_request`. ``at`` is when
    ``tokens`` were counted, in seconds on the database's clock (the same for every host).
    """

    __tablename__ = "rate_buckets"

    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    tokens: Mapped[float] = mapped_column(Float)
    at: Mapped[float] = mapped_column(Float)


class TurnLease(Base):
    """A chat turn running in some process: who runs it, when it last said so, whether to stop it.

    Written by :class:`~tierwise.store.shared.SharedMixin` while processes share the database; a
    lease whose ``beat`` is older than a few seconds belongs to a process that died, and is free.
    Times are seconds on the database's clock.
    """

    __tablename__ = "turn_leases"

    user_id: Mapped[str] = mapped_column(ID, primary_key=True)
    chat_id: Mapped[str] = mapped_column(ID, primary_key=True)
    owner: Mapped[str] = mapped_column(String(64))
    beat: Mapped[float] = mapped_column(Float)
    stop: Mapped[bool] = mapped_column(Boolean)


# Seed 004's index, newest first (declared here: a column expression needs the mapped class).
Index("idx_context_snapshots_created", ContextSnapshot.created_at.desc())
