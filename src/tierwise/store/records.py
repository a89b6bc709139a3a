"""What the store returns: frozen dataclasses, detached from the database.

Their JSON fields are plain lists and dicts, copies of what was stored: changing one changes
nothing in the database (use the :class:`~tierwise.store.repository.Store` methods for that).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from tierwise.store import models

__all__ = [
    "Audit",
    "AuditRecord",
    "BlobInfo",
    "BlobRef",
    "Chat",
    "Snapshot",
    "StoredMessage",
    "StoredSegment",
    "ToolCallRecord",
    "User",
]


@dataclass(frozen=True, slots=True)
class Audit:
    """An audit-log entry to append (:meth:`~tierwise.store.repository.Store.audit_many`)."""

    event: str
    chat_id: str | None = None
    checksum: str | None = None
    details: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class User:
    """A user."""

    id: str
    name: str
    created_at: datetime

    @classmethod
    def of(cls, row: models.User) -> User:
        """The record of a row."""
        return cls(row.id, row.name, row.created_at)


@dataclass(frozen=True, slots=True)
class Chat:
    """A chat and its running context state (``message_count`` is the next message's ``seq``)."""

    id: str
    user_id: str
    context_type: str
    entity_id: str | None
    title: str
    title_generated: bool
    conversation_summary: str | None
    key_decisions: list[Any]
    created_entities: list[Any]
    total_tokens_used: int
    token_limit: int | None  # the tokens its prompts may use; ``None``: the server's budget
    message_count: int
    messages_archived: int
    last_compression_at: datetime | None
    narrative: dict[str, Any] | None
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, row: models.Chat | sa.Row[Any]) -> Chat:
        """The record of a row (a mapped object, or a Core row of the chats table)."""
        return cls(
            row.id,
            row.user_id,
            row.context_type,
            row.entity_id,
            row.title,
            row.title_generated,
            row.conversation_summary,
            list(row.key_decisions),
            list(row.created_entities),
            row.total_tokens_used,
            row.token_limit,
            row.message_count,
            row.messages_archived,
            row.last_compression_at,
            row.narrative,
            row.created_at,
            row.updated_at,
        )


@dataclass(frozen=True, slots=True)
class StoredMessage:
    """A stored message: the OpenAI fields, its position ``seq`` (0-based) and its bookkeeping.

    ``content`` is the text (for a list of content parts, their text parts joined by newlines);
    ``content_parts`` keeps such a list as sent. :attr:`message` rebuilds the OpenAI dict.
    """

    id: str
    chat_id: str
    user_id: str
    seq: int
    role: str
    content: str | None
    content_parts: list[Any] | None
    name: str | None
    tool_calls: list[Any] | None
    tool_call_id: str | None
    tool_results: list[Any] | None
    extra: dict[str, Any] | None
    is_archived: bool
    is_in_summary: bool
    segment_id: str | None
    token_count: int
    created_at: datetime
    metadata: dict[str, Any]

    @property
    def message(self) -> dict[str, Any]:
        """The OpenAI-format message as it was added (``content`` always present, maybe ``None``)."""
        out: dict[str, Any] = {
            "role": self.role,
            "content": self.content_parts if self.content_parts is not None else self.content,
        }
        for key in ("name", "tool_calls", "tool_call_id"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        out.update(self.extra or {})
        return out

    @classmethod
    def of(cls, row: models.ChatMessage) -> StoredMessage:
        """The record of a row."""
        return cls(
            row.id,
            row.chat_id,
            row.user_id,
            row.seq,
            row.role,
            row.content,
            row.content_parts,
            row.name,
            row.tool_calls,
            row.tool_call_id,
            row.tool_results,
            row.extra,
            row.is_archived,
            row.is_in_summary,
            row.segment_id,
            row.token_count,
            row.created_at,
            dict(row.metadata_),
        )


@dataclass(frozen=True, slots=True)
class ToolCallRecord:
    """One tool execution; a large result may live in a blob (``blob_sha256``)."""

    id: str
    chat_id: str
    message_id: str
    user_id: str
    tool_name: str
    arguments: dict[str, Any]
    result: Any
    blob_sha256: str | None
    duration_ms: int | None
    success: bool
    error: str | None
    created_at: datetime

    @classmethod
    def of(cls, row: models.ChatToolCall) -> ToolCallRecord:
        """The record of a row."""
        return cls(
            row.id,
            row.chat_id,
            row.message_id,
            row.user_id,
            row.tool_name,
            dict(row.arguments),
            row.result,
            row.blob_sha256,
            row.duration_ms,
            row.success,
            row.error,
            row.created_at,
        )


@dataclass(frozen=True, slots=True)
class StoredSegment:
    """A segment: messages ``first_seq``..``last_seq`` (inclusive) with their header and summary."""

    id: str
    chat_id: str
    user_id: str
    seq: int
    first_seq: int
    last_seq: int
    started_at: datetime | None
    ended_at: datetime | None
    header: str
    summary: str
    entities: list[Any]
    topic: str | None
    outcome: str | None
    token_count: int
    boundary_reason: str | None
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, row: models.Segment | sa.Row[Any]) -> StoredSegment:
        """The record of a row."""
        return cls(
            row.id,
            row.chat_id,
            row.user_id,
            row.seq,
            row.first_seq,
            row.last_seq,
            row.started_at,
            row.ended_at,
            row.header,
            row.summary,
            list(row.entities),
            row.topic,
            row.outcome,
            row.token_count,
            row.boundary_reason,
            row.created_at,
            row.updated_at,
        )


@dataclass(frozen=True, slots=True)
class BlobRef:
    """How to refer to stored content: its sha256, size in bytes and MIME type."""

    sha256: str
    size: int
    mime: str


@dataclass(frozen=True, slots=True)
class BlobInfo:
    """A blob's description without its content; ``hits`` counts the puts that stored it."""

    sha256: str
    size: int
    mime: str
    summary: str | None
    entities: list[Any]
    hits: int
    created_at: datetime

    @property
    def ref(self) -> BlobRef:
        """The blob's reference."""
        return BlobRef(self.sha256, self.size, self.mime)


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What one pack spent (seed 004's context snapshot; ``chat_id`` is the seed's ``session_id``)."""

    id: str
    chat_id: str
    user_id: str
    tier_breakdown: dict[str, Any]
    total_tokens: int
    budget_percent: float
    pruning_strategy: dict[str, Any]
    checksum: str | None
    created_at: datetime

    @classmethod
    def of(cls, row: models.ContextSnapshot) -> Snapshot:
        """The record of a row."""
        return cls(
            row.id,
            row.session_id,
            row.user_id,
            dict(row.tier_breakdown),
            row.total_tokens,
            row.budget_percent,
            dict(row.pruning_strategy),
            row.checksum,
            row.created_at,
        )


@dataclass(frozen=True, slots=True)
class AuditRecord:
    """One audit-log entry."""

    id: str
    user_id: str
    chat_id: str | None
    event: str
    checksum: str | None
    details: dict[str, Any]
    created_at: datetime

    @classmethod
    def of(cls, row: models.AuditEntry) -> AuditRecord:
        """The record of a row."""
        return cls(
            row.id, row.user_id, row.chat_id, row.event, row.checksum, dict(row.details), row.created_at
        )
