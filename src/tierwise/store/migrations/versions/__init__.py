"""Migration scripts, numbered forward (``0001_initial``, ``0002_…``); Alembic skips this file."""
