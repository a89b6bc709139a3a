"""Alembic environment: migrates the connection :func:`tierwise.store.migrate` hands over.

Importing this file outside an Alembic command (pytest's doctest collection does) does nothing.
"""

from __future__ import annotations

from alembic import context

from tierwise.store.models import Base


def run() -> None:
    """Run the pending migrations on ``config.attributes["connection"]`` (online mode only)."""
    connection = context.config.attributes.get("connection")
    if connection is None or context.is_offline_mode():
        raise RuntimeError("tierwise migrations run through tierwise.store.migrate(url), online only")
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


# Alembic sets ``context.config`` only while one of its commands runs.
if hasattr(context, "config"):
    run()
