"""Persistence: chats, messages, tool calls, segments, blobs, context snapshots and audit, per user.

SQLite by default (a file in the data dir), PostgreSQL when ``TIERWISE_DATABASE_URL`` says so.
:func:`migrate` brings a database to the newest schema; :meth:`Store.open` migrates and returns a
:class:`Store`, whose every method is scoped to the ``user_id`` it is given.

Text is stored the same way on both backends: a NUL character (U+0000) or a lone UTF-16
surrogate, which neither can keep as text, is stored as U+FFFD (:func:`clean_text`).
"""

from __future__ import annotations

from tierwise.store.checks import clean_text
from tierwise.store.engine import create_engine, current_revision, head_revision, migrate
from tierwise.store.errors import NotFoundError, StoreError
from tierwise.store.records import (
    Audit,
    AuditRecord,
    BlobInfo,
    BlobRef,
    Chat,
    Snapshot,
    StoredMessage,
    StoredSegment,
    ToolCallRecord,
    User,
)
from tierwise.store.repository import CHAT_FIELDS, Store
from tierwise.store.settings import data_dir, database_url
from tierwise.store.usage import UsageTotals

__all__ = [
    "CHAT_FIELDS",
    "Audit",
    "AuditRecord",
    "BlobInfo",
    "BlobRef",
    "Chat",
    "NotFoundError",
    "Snapshot",
    "Store",
    "StoreError",
    "StoredMessage",
    "StoredSegment",
    "ToolCallRecord",
    "UsageTotals",
    "User",
    "clean_text",
    "create_engine",
    "current_revision",
    "data_dir",
    "database_url",
    "head_revision",
    "migrate",
]
