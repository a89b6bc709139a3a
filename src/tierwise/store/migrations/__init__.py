"""Alembic migrations of the store (run by :func:`tierwise.store.migrate`; no ``alembic.ini``)."""
