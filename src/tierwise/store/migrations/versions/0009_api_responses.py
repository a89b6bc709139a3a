"""Responses API responses in the store: ``previous_response_id`` and ``GET`` in every process.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | None = None
depends_on: str | None = None


def _json() -> sa.JSON:
    return sa.JSON(none_as_null=True).with_variant(postgresql.JSONB(none_as_null=True), "postgresql")


def upgrade() -> None:
    """Create ``api_responses`` (a response, the messages it added to its base's, its object)."""
    op.create_table(
        "api_responses",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("user_id", sa.String(36), nullable=False),
        sa.Column("session_key", sa.Text(), nullable=False),
        sa.Column("base_id", sa.String(64), nullable=True),
        sa.Column("system", _json(), nullable=False),
        sa.Column("added", _json(), nullable=False),
        sa.Column("response", _json(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name="fk_api_responses_user_id_users", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_api_responses"),
    )
    op.create_index("ix_api_responses_base_id", "api_responses", ["base_id"])


def downgrade() -> None:
    """Drop ``api_responses`` (stored responses can no longer be continued or fetched)."""
    op.drop_index("ix_api_responses_base_id", table_name="api_responses")
    op.drop_table("api_responses")
