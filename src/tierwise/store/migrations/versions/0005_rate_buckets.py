"""Rate limits kept in the database, so every process serving it counts the same requests.

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
    """Create ``rate_buckets``: one token bucket per limited key."""
    op.create_table(
        "rate_buckets",
        sa.Column("key", sa.String(255), nullable=False),
        sa.Column("tokens", sa.Float(), nullable=False),
        sa.Column("at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("key", name="pk_rate_buckets"),
    )


def downgrade() -> None:
    """Drop ``rate_buckets`` (the buckets start full again)."""
    op.drop_table("rate_buckets")
