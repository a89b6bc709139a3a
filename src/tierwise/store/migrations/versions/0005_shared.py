"""What the processes serving one database share: rate limits, and which chats have a turn running.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    """Create ``rate_buckets`` (a token bucket per limited key) and ``turn_leases`` (running turns)."""
    op.create_table(
        "rate_buckets",
        sa.Column("key", sa.String(255), nullable=False),
        sa.Column("tokens", sa.Float(), nullable=False),
        sa.Column("at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("key", name="pk_rate_buckets"),
    )
    op.create_table(
        "turn_leases",
        sa.Column("user_id", sa.String(36), nullable=False),
        sa.Column("chat_id", sa.String(36), nullable=False),
        sa.Column("owner", sa.String(64), nullable=False),
        sa.Column("beat", sa.Float(), nullable=False),
        sa.Column("stop", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("user_id", "chat_id", name="pk_turn_leases"),
    )


def downgrade() -> None:
    """Drop ``rate_buckets`` and ``turn_leases`` (buckets start full, no turn is running)."""
    op.drop_table("turn_leases")
    op.drop_table("rate_buckets")
