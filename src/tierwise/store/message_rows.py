"""A ``chat_messages`` row as the store's prepared ``INSERT`` takes it, and the record it returns.

:meth:`Store.add_message <tierwise.store.repository.Store.add_message>` and ``add_messages`` write
plain rows through a Core ``INSERT`` (an ORM row costs more than the write); these build them.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from tierwise.store import models
from tierwise.store.records import StoredMessage

__all__ = ["message_row", "stored_message"]


def message_row(
    chat_id: str,
    user_id: str,
    seq: int,
    columns: Mapping[str, Any],
    token_count: int,
    at: datetime,
    metadata: dict[str, Any],
    tool_results: list[Any] | None,
    analysis: tuple[str, str] | None = None,
) -> dict[str, Any]:
    """A ``chat_messages`` row: the message's columns (see ``message_columns``) and its bookkeeping.

    ``analysis``: the ``terms`` and ``words`` columns (memory's, see ``Store.message_analyses``).
    """
    terms, words = analysis if analysis is not None else (None, None)
    return {
        "id": models.new_id(),
        "chat_id": chat_id,
        "user_id": user_id,
        "seq": seq,
        "role": None,
        "content": None,
        "content_parts": None,
        "name": None,
        "tool_calls": None,
        "tool_call_id": None,
        "extra": None,
        **columns,
        "tool_results": tool_results,
        "is_archived": False,
        "is_in_summary": False,
        "segment_id": None,
        "token_count": token_count,
        "created_at": at,
        "metadata": metadata,
        "terms": terms,
        "words": words,
    }


def stored_message(row: dict[str, Any]) -> StoredMessage:
    """The record of a row :func:`message_row` made (memory's analysis columns left out)."""
    return StoredMessage(**{k: v for k, v in row.items() if k not in ("terms", "words")})
