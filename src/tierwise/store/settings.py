"""Where the store lives: read from the environment at call time, never at import.

- ``TIERWISE_DATABASE_URL``: any SQLAlchemy URL; ``postgresql://`` and ``postgres://`` mean
  ``postgresql+psycopg://`` (psycopg 3 is the driver tierwise installs).
- ``TIERWISE_DATA_DIR``: the directory of the default SQLite file ``tierwise.db``; defaults to the
  user data directory (``platformdirs.user_data_dir("tierwise")``).
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

__all__ = ["DATABASE_FILE", "data_dir", "database_url", "default_database_url"]

DATABASE_FILE = "tierwise.db"


def data_dir() -> Path:
    """The directory tierwise keeps its files in (``TIERWISE_DATA_DIR`` or the user data dir)."""
    configured = os.environ.get("TIERWISE_DATA_DIR", "").strip()
    return Path(configured).expanduser() if configured else Path(platformdirs.user_data_dir("tierwise"))


def default_database_url() -> str:
    """The SQLite file ``tierwise.db`` in :func:`data_dir`."""
    return f"sqlite:///{data_dir() / DATABASE_FILE}"


def database_url() -> str:
    """``TIERWISE_DATABASE_URL`` if set, else :func:`default_database_url`."""
    configured = os.environ.get("TIERWISE_DATABASE_URL", "").strip()
    return configured or default_database_url()
