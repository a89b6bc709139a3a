"""Engines and migrations: SQLite (WAL, foreign keys, real transactions) or PostgreSQL (psycopg 3).

:func:`migrate` upgrades a database to the newest schema with the Alembic scripts shipped inside
the package (``tierwise/store/migrations``; no ``alembic.ini``). It works on a blank database, and
running it again does nothing. On PostgreSQL an advisory lock lets concurrent processes migrate
safely; on SQLite the migration holds the write lock.
"""

from __future__ import annotations

import functools
import threading
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import URL, Connection, Engine
from sqlalchemy.exc import ArgumentError
from sqlalchemy.pool import StaticPool

from tierwise.store import settings
from tierwise.store.errors import StoreError

__all__ = [
    "MIGRATIONS_DIR",
    "WRITE",
    "alembic_config",
    "create_engine",
    "current_revision",
    "head_revision",
    "migrate",
    "migrate_engine",
    "normalize_url",
    "sqlite_memory",
]

MIGRATIONS_DIR = Path(__file__).resolve().with_name("migrations")

# Execution option of write transactions: on SQLite they start with BEGIN IMMEDIATE, so a
# read-then-write transaction waits for the write lock up front instead of failing half-way.
WRITE = "tierwise_write"

# pg_advisory_xact_lock key serialising concurrent migrations ("tierwise" in ASCII, as an int8).
_MIGRATION_LOCK = 0x7469657277697365
_SQLITE_BUSY_SECONDS = 30.0


def normalize_url(url: str | URL | None = None) -> URL:
    """The URL to connect to (``None`` → :func:`~tierwise.store.settings.database_url`).

    ``postgres://`` and ``postgresql://`` select psycopg 3. Only SQLite and PostgreSQL are supported.

    Raises:
        StoreError: the URL cannot be parsed or names another database.
    """
    raw = settings.database_url() if url is None else url
    if isinstance(raw, str) and raw.startswith("postgres://"):
        raw = "postgresql://" + raw.removeprefix("postgres://")
    try:
        parsed = sa.make_url(raw)
    except ArgumentError as exc:
        raise StoreError(f"not a database URL: {raw!r}; use sqlite:///path or postgresql://…") from exc
    if parsed.drivername == "postgresql":
        parsed = parsed.set(drivername="postgresql+psycopg")
    if parsed.get_backend_name() not in ("sqlite", "postgresql"):
        raise StoreError(
            f"unsupported database {parsed.get_backend_name()!r} in {parsed.render_as_string()!r}; "
            "tierwise stores to SQLite or PostgreSQL"
        )
    return parsed


def sqlite_memory(url: URL) -> bool:
    """Whether ``url`` is an in-memory SQLite database."""
    return url.database in (None, "", ":memory:") or "mode=memory" in str(url.query)


def create_engine(
    url: str | URL | None = None, *, background_checkpoints: bool = False, **kwargs: Any
) -> Engine:
    """An engine for ``url`` (see :func:`normalize_url`), set up for the store.

    SQLite: the file's directory is created; every connection turns on foreign keys, WAL,
    ``secure_delete`` (what a delete frees is overwritten with zeros) and a busy timeout, and
    transactions are real (``BEGIN``, or ``BEGIN IMMEDIATE`` for writes). With
    ``background_checkpoints`` no commit checkpoints the WAL (run a
    :class:`~tierwise.store.checkpoint.Checkpointer`). An in-memory database is one shared
    connection (for tests and single-threaded use only).
    """
    parsed = normalize_url(url)
    if parsed.get_backend_name() != "sqlite":
        return sa.create_engine(parsed, pool_pre_ping=True, **kwargs)
    if sqlite_memory(parsed):
        kwargs.setdefault("poolclass", StaticPool)
        kwargs.setdefault("connect_args", {"check_same_thread": False})
    else:
        assert parsed.database is not None
        if not parsed.database.startswith("file:"):
            Path(parsed.database).expanduser().parent.mkdir(parents=True, exist_ok=True)
        kwargs.setdefault("connect_args", {"timeout": _SQLITE_BUSY_SECONDS})
    engine = sa.create_engine(parsed, **kwargs)
    memory = sqlite_memory(parsed)

    @sa.event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # the driver never opens transactions; we do
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute("PRAGMA foreign_keys = ON")
            cursor.execute("PRAGMA secure_delete = ON")  # deleted rows' bytes zeroed, not left free
            cursor.execute(f"PRAGMA busy_timeout = {int(_SQLITE_BUSY_SECONDS * 1000)}")
            if not memory:
                cursor.execute("PRAGMA journal_mode = WAL")
                cursor.execute("PRAGMA synchronous = NORMAL")
                if background_checkpoints:
                    cursor.execute("PRAGMA wal_autocheckpoint = 0")
        finally:
            cursor.close()

    @sa.event.listens_for(engine, "begin")
    def _on_begin(connection: Connection) -> None:
        write = connection.get_execution_options().get(WRITE, False)
        driver = connection.connection.driver_connection  # sqlite3's: a statement through
        assert driver is not None  # SQLAlchemy costs ~4x more, and this is every transaction
        driver.execute("BEGIN IMMEDIATE" if write else "BEGIN")

    return engine


def alembic_config() -> Config:
    """An Alembic configuration pointing at the packaged migrations (no ``alembic.ini``)."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    return config


@functools.cache
def head_revision() -> str:
    """The newest revision the packaged migrations reach (read once a process)."""
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    if head is None:  # pragma: no cover - the package ships at least 0001
        raise StoreError(f"no migrations found in {MIGRATIONS_DIR}")
    return head


def current_revision(engine: Engine) -> str | None:
    """The revision ``engine``'s database is at (``None`` if it was never migrated)."""
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def migrate_engine(engine: Engine) -> None:
    """Upgrade the database behind ``engine`` to :func:`head_revision` (a no-op when it is there).

    A database at the head is left at once (its revision read, no migration script loaded). A blank
    SQLite database is given a copy of the head schema that this process migrated once, in memory
    (:func:`_sqlite_head`): the same migrations' result, ~5 ms where running them is ~170 ms, which
    every new store paid (a test suite opens thousands). Anything else goes through Alembic.
    """
    if engine.dialect.name == "sqlite" and _copy_head_if_blank(engine):
        return
    config = alembic_config()
    with engine.execution_options(**{WRITE: True}).begin() as connection:
        if connection.dialect.name == "postgresql":
            connection.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": _MIGRATION_LOCK})
        if MigrationContext.configure(connection).get_current_revision() == head_revision():
            return
        config.attributes["connection"] = connection
        command.upgrade(config, "head")


_HEAD_LOCK = threading.Lock()
_HEAD: dict[str, Any] = {}  # "engine": the in-memory database at the head, made once a process


def _sqlite_head() -> Any:
    """The sqlite3 connection of an in-memory database migrated to the head (made on first use)."""
    with _HEAD_LOCK:
        if "engine" not in _HEAD:
            head = create_engine("sqlite://")  # one connection (StaticPool), kept for the process
            config = alembic_config()
            with head.execution_options(**{WRITE: True}).begin() as connection:
                config.attributes["connection"] = connection
                command.upgrade(config, "head")
            _HEAD["engine"] = head
        return _HEAD["engine"].raw_connection().driver_connection


def _copy_head_if_blank(engine: Engine) -> bool:
    """On a SQLite database with no table yet: copy the head schema into it; whether it did."""
    with engine.connect() as connection:  # no transaction open: a backup needs none on its target
        driver = connection.connection.driver_connection
        assert driver is not None
        if driver.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
            return False
        head = _sqlite_head()
        with _HEAD_LOCK:
            head.backup(driver)
        if not sqlite_memory(engine.url):
            driver.execute("PRAGMA journal_mode = WAL")  # the copy brought the in-memory database's mode
        return True


def migrate(url: str | URL | None = None) -> None:
    """Upgrade the database at ``url`` (default: the configured one) to the newest schema.

    Works on a blank database; running it again is a no-op.
    """
    engine = create_engine(url)
    try:
        migrate_engine(engine)
    finally:
        engine.dispose()
