"""The audit log is read by event: an index on (user, event, chat, time).

The status of a chat sums its turns' usage (``event = 'turn'``) and counts its packs (``event =
'pack'``); with only ``(user_id, chat_id)`` to go by, SQLite read every entry of the chat to test its
event: a chat with 5,000 ``usage`` entries took 4.3 ms per status request for two answers that are
empty. With the event in the index those reads touch only the entries they sum.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-24
"""

from __future__ import annotations

from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | None = None
depends_on: str | None = None

_NAME = "ix_audit_log_user_id_event_chat_id_created_at"


def upgrade() -> None:
    """Add the index."""
    op.create_index(_NAME, "audit_log", ["user_id", "event", "chat_id", "created_at"])


def downgrade() -> None:
    """Drop it."""
    op.drop_index(_NAME, table_name="audit_log")
