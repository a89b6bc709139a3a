"""API keys: per-user keys for the HTTP service, stored as SHA-256 hashes only.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | None = None
depends_on: str | None = None

ID = sa.String(36)
TIME = sa.DateTime(timezone=True)


def upgrade() -> None:
    """Create ``api_keys`` and its indexes."""
    op.create_table(
        "api_keys",
        sa.Column("id", ID, nullable=False),
        sa.Column("user_id", ID, nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("prefix", sa.Text(), nullable=False),
        sa.Column("key_hash", sa.Text(), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("last_used_at", TIME, nullable=True),
        sa.Column("revoked_at", TIME, nullable=True),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name="fk_api_keys_user_id_users", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_api_keys"),
        sa.UniqueConstraint("key_hash", name="uq_api_keys_key_hash"),
    )
    op.create_index("ix_api_keys_key_hash", "api_keys", ["key_hash"])
    op.create_index("ix_api_keys_user_id_created_at", "api_keys", ["user_id", "created_at"])


def downgrade() -> None:
    """Drop ``api_keys``."""
    op.drop_table("api_keys")
