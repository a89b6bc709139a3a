"""What memory reads off each message, stored with it: its BM25 terms and content words.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    """Add ``chat_messages.terms`` and ``.words`` (empty for messages stored before: made at load)."""
    op.add_column("chat_messages", sa.Column("terms", sa.Text(), nullable=True))
    op.add_column("chat_messages", sa.Column("words", sa.Text(), nullable=True))


def downgrade() -> None:
    """Drop them (a load makes them again from the text)."""
    with op.batch_alter_table("chat_messages") as batch:
        batch.drop_column("words")
        batch.drop_column("terms")
