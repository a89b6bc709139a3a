"""A chat's ``token_limit`` is its budget, or unset: the server's budget.

Until now ``token_limit`` was written as seed 002's default (10,000) and read by nothing: the chat
engine packed every chat with its own budget. Now the engine honours it, so a chat nobody gave a
budget must not be held to that old default: the column becomes nullable (``NULL``: the server's
budget) and the 10,000s written as a default are cleared. A limit set since stays.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | None = None
depends_on: str | None = None

_OLD_DEFAULT = 10_000


def upgrade() -> None:
    """Make ``chats.token_limit`` nullable and clear the never-enforced default."""
    with op.batch_alter_table("chats") as batch:
        batch.alter_column("token_limit", existing_type=sa.Integer(), nullable=True)
    op.execute(
        sa.text("UPDATE chats SET token_limit = NULL WHERE token_limit = :old").bindparams(old=_OLD_DEFAULT)
    )


def downgrade() -> None:
    """Write the old default back where no budget is set, and require the column again."""
    op.execute(
        sa.text("UPDATE chats SET token_limit = :old WHERE token_limit IS NULL").bindparams(old=_OLD_DEFAULT)
    )
    with op.batch_alter_table("chats") as batch:
        batch.alter_column("token_limit", existing_type=sa.Integer(), nullable=False)
