"""Initial schema: users, chats, messages, tool calls, segments, blobs, context snapshots, audit log.

Revision ID: 0001
Revises:
Create Date: 2025-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | None = None
depends_on: str | None = None

ID = sa.String(36)
SHA = sa.String(64)
TIME = sa.DateTime(timezone=True)


def _json() -> sa.JSON:
    return sa.JSON(none_as_null=True).with_variant(postgresql.JSONB(none_as_null=True), "postgresql")


def _chat_fk(table: str, column: str = "chat_id") -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        [column, "user_id"],
        ["chats.id", "chats.user_id"],
        name=f"fk_{table}_{column}_user_id_chats",
        ondelete="CASCADE",
    )


def upgrade() -> None:
    """Create every table and index."""
    op.create_table(
        "users",
        sa.Column("id", ID, nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_users"),
    )
    op.create_table(
        "chats",
        sa.Column("id", ID, nullable=False),
        sa.Column("user_id", ID, nullable=False),
        sa.Column("context_type", sa.Text(), nullable=False),
        sa.Column("entity_id", sa.Text(), nullable=True),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("title_generated", sa.Boolean(), nullable=False),
        sa.Column("conversation_summary", sa.Text(), nullable=True),
        sa.Column("key_decisions", _json(), nullable=False),
        sa.Column("created_entities", _json(), nullable=False),
        sa.Column("total_tokens_used", sa.Integer(), nullable=False),
        sa.Column("token_limit", sa.Integer(), nullable=False),
        sa.Column("message_count", sa.Integer(), nullable=False),
        sa.Column("messages_archived", sa.Integer(), nullable=False),
        sa.Column("last_compression_at", TIME, nullable=True),
        sa.Column("narrative", _json(), nullable=True),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("updated_at", TIME, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_chats"),
        sa.UniqueConstraint("id", "user_id", name="uq_chats_id_user_id"),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], name="fk_chats_user_id_users", ondelete="CASCADE"),
    )
    op.create_index("ix_chats_user_id_updated_at", "chats", ["user_id", "updated_at"])
    op.create_index(
        "ix_chats_user_id_context_type_entity_id", "chats", ["user_id", "context_type", "entity_id"]
    )
    op.create_table(
        "chat_messages",
        sa.Column("id", ID, nullable=False),
        sa.Column("chat_id", ID, nullable=False),
        sa.Column("user_id", ID, nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("role", sa.Text(), nullable=False),
        sa.Column("content", sa.Text(), nullable=True),
        sa.Column("content_parts", _json(), nullable=True),
        sa.Column("name", sa.Text(), nullable=True),
        sa.Column("tool_calls", _json(), nullable=True),
        sa.Column("tool_call_id", sa.Text(), nullable=True),
        sa.Column("tool_results", _json(), nullable=True),
        sa.Column("extra", _json(), nullable=True),
        sa.Column("is_archived", sa.Boolean(), nullable=False),
        sa.Column("is_in_summary", sa.Boolean(), nullable=False),
        sa.Column("segment_id", sa.Text(), nullable=True),
        sa.Column("token_count", sa.Integer(), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("metadata", _json(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_chat_messages"),
        _chat_fk("chat_messages"),
        sa.UniqueConstraint("chat_id", "seq", name="uq_chat_messages_chat_id_seq"),
    )
    op.create_index("ix_chat_messages_user_id_chat_id_seq", "chat_messages", ["user_id", "chat_id", "seq"])
    op.create_index("ix_chat_messages_chat_id_is_archived", "chat_messages", ["chat_id", "is_archived"])
    op.create_table(
        "blobs",
        sa.Column("user_id", ID, nullable=False),
        sa.Column("sha256", SHA, nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("mime", sa.Text(), nullable=False),
        sa.Column("content", sa.LargeBinary(), nullable=False),
        sa.Column("summary", sa.Text(), nullable=True),
        sa.Column("entities", _json(), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("hits", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("user_id", "sha256", name="pk_blobs"),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], name="fk_blobs_user_id_users", ondelete="CASCADE"),
    )
    op.create_table(
        "chat_tool_calls",
        sa.Column("id", ID, nullable=False),
        sa.Column("chat_id", ID, nullable=False),
        sa.Column("message_id", ID, nullable=False),
        sa.Column("user_id", ID, nullable=False),
        sa.Column("tool_name", sa.Text(), nullable=False),
        sa.Column("arguments", _json(), nullable=False),
        sa.Column("result", _json(), nullable=True),
        sa.Column("blob_sha256", SHA, nullable=True),
        sa.Column("duration_ms", sa.Integer(), nullable=True),
        sa.Column("success", sa.Boolean(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_at", TIME, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_chat_tool_calls"),
        _chat_fk("chat_tool_calls"),
        sa.ForeignKeyConstraint(
            ["message_id"],
            ["chat_messages.id"],
            name="fk_chat_tool_calls_message_id_chat_messages",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id", "blob_sha256"],
            ["blobs.user_id", "blobs.sha256"],
            name="fk_chat_tool_calls_user_id_blob_sha256_blobs",
        ),
    )
    op.create_index("ix_chat_tool_calls_user_id_chat_id", "chat_tool_calls", ["user_id", "chat_id"])
    op.create_index("ix_chat_tool_calls_message_id", "chat_tool_calls", ["message_id"])
    op.create_index("ix_chat_tool_calls_tool_name", "chat_tool_calls", ["tool_name"])
    op.create_table(
        "segments",
        sa.Column("chat_id", ID, nullable=False),
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("user_id", ID, nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("first_seq", sa.Integer(), nullable=False),
        sa.Column("last_seq", sa.Integer(), nullable=False),
        sa.Column("started_at", TIME, nullable=True),
        sa.Column("ended_at", TIME, nullable=True),
        sa.Column("header", sa.Text(), nullable=False),
        sa.Column("summary", sa.Text(), nullable=False),
        sa.Column("entities", _json(), nullable=False),
        sa.Column("topic", sa.Text(), nullable=True),
        sa.Column("outcome", sa.Text(), nullable=True),
        sa.Column("token_count", sa.Integer(), nullable=False),
        sa.Column("boundary_reason", sa.Text(), nullable=True),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("updated_at", TIME, nullable=False),
        sa.PrimaryKeyConstraint("chat_id", "id", name="pk_segments"),
        _chat_fk("segments"),
    )
    op.create_index("ix_segments_user_id_chat_id_seq", "segments", ["user_id", "chat_id", "seq"])
    op.create_table(
        "context_snapshots",
        sa.Column("id", ID, nullable=False),
        sa.Column("session_id", ID, nullable=False),
        sa.Column("user_id", ID, nullable=False),
        sa.Column("tier_breakdown", _json(), nullable=False),
        sa.Column("total_tokens", sa.Integer(), nullable=False),
        sa.Column("budget_percent", sa.Float(), nullable=False),
        sa.Column("pruning_strategy", _json(), nullable=False),
        sa.Column("checksum", sa.Text(), nullable=True),
        sa.Column("created_at", TIME, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_context_snapshots"),
        _chat_fk("context_snapshots", "session_id"),
    )
    # Seed 004's three indexes, then the one the store's per-chat lookups use.
    op.create_index("idx_context_snapshots_session", "context_snapshots", ["session_id"])
    op.create_index("idx_context_snapshots_user", "context_snapshots", ["user_id"])
    op.create_index("idx_context_snapshots_created", "context_snapshots", [sa.text("created_at DESC")])
    op.create_index(
        "ix_context_snapshots_user_id_session_id_created_at",
        "context_snapshots",
        ["user_id", "session_id", "created_at"],
    )
    op.create_table(
        "audit_log",
        sa.Column("id", ID, nullable=False),
        sa.Column("user_id", ID, nullable=False),
        sa.Column("chat_id", ID, nullable=True),
        sa.Column("event", sa.Text(), nullable=False),
        sa.Column("checksum", sa.Text(), nullable=True),
        sa.Column("details", _json(), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_audit_log"),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name="fk_audit_log_user_id_users", ondelete="CASCADE"
        ),
    )
    op.create_index("ix_audit_log_user_id_created_at", "audit_log", ["user_id", "created_at"])
    op.create_index("ix_audit_log_user_id_chat_id", "audit_log", ["user_id", "chat_id"])


def downgrade() -> None:
    """Drop everything (children first)."""
    for table in (
        "audit_log",
        "context_snapshots",
        "segments",
        "chat_tool_calls",
        "blobs",
        "chat_messages",
        "chats",
        "users",
    ):
        op.drop_table(table)
