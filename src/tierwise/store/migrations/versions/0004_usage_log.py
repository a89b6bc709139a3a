"""The cost guard's usage rows: one indexed row per turn, summed in one aggregate.

The ``usage`` audit entries written so far are copied in (same id, time, chat, tokens, dollars and
cached tokens); the audit entries stay as they are.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-10
"""

from __future__ import annotations

import math
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | None = None
depends_on: str | None = None

ID = sa.String(36)
TIME = sa.DateTime(timezone=True)
_BATCH = 5_000


def _json() -> sa.JSON:
    return sa.JSON(none_as_null=True).with_variant(postgresql.JSONB(none_as_null=True), "postgresql")


def _number(details: Any, key: str, kind: type[int] | type[float]) -> int | float:
    """``details[key]`` as the cost guard read it (``int(...)``/``float(...)``); 0 when unreadable."""
    try:
        value = kind(details.get(key, 0) or 0)
    except (TypeError, ValueError, OverflowError, AttributeError):
        return kind(0)
    return value if math.isfinite(value) else kind(0)


def upgrade() -> None:
    """Create ``usage_log`` with its covering indexes and copy the ``usage`` audit entries into it."""
    usage = op.create_table(
        "usage_log",
        sa.Column("id", ID, nullable=False),
        sa.Column("user_id", ID, nullable=False),
        sa.Column("chat_id", ID, nullable=True),
        sa.Column("tokens", sa.BigInteger(), nullable=False),
        sa.Column("dollars", sa.Float(), nullable=False),
        sa.Column("cached_tokens", sa.BigInteger(), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_usage_log"),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name="fk_usage_log_user_id_users", ondelete="CASCADE"
        ),
    )
    op.create_index(
        "ix_usage_log_user_id_created_at", "usage_log", ["user_id", "created_at", "tokens", "dollars"]
    )
    op.create_index("ix_usage_log_user_id_chat_id", "usage_log", ["user_id", "chat_id", "tokens", "dollars"])
    audit = sa.table(
        "audit_log",
        sa.column("id", ID),
        sa.column("user_id", ID),
        sa.column("chat_id", ID),
        sa.column("event", sa.Text()),
        sa.column("details", _json()),
        sa.column("created_at", TIME),
    )
    bind = op.get_bind()
    query = sa.select(audit.c.id, audit.c.user_id, audit.c.chat_id, audit.c.details, audit.c.created_at)
    rows = bind.execute(query.where(audit.c.event == "usage").order_by(audit.c.id)).all()
    for start in range(0, len(rows), _BATCH):
        batch = rows[start : start + _BATCH]
        values = [
            {
                "id": id_,
                "user_id": user_id,
                "chat_id": chat_id,
                "tokens": int(_number(details, "tokens", int)),
                "dollars": float(_number(details, "dollars", float)),
                "cached_tokens": int(_number(details, "cached_tokens", int)),
                "created_at": created_at,
            }
            for id_, user_id, chat_id, details, created_at in batch
        ]
        bind.execute(sa.insert(usage), values)


def downgrade() -> None:
    """Drop ``usage_log`` (the ``usage`` audit entries still hold what it held)."""
    op.drop_table("usage_log")
