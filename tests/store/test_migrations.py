"""The store's schema, migrations and settings: blank database to head, drift, packaging, URLs."""

from __future__ import annotations

from datetime import timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from tierwise.errors import UserError
from tierwise.server import keys as key_models
from tierwise.store import (
    NotFoundError,
    Store,
    StoreError,
    create_engine,
    current_revision,
    data_dir,
    database_url,
    head_revision,
    migrate,
)
from tierwise.store.models import Base, new_id
from tierwise.workspace import models as workspace_models

UNICODE = {
    "emoji": "🧠✨ café",
    "cjk": "日本語のテキスト",
    "rtl": "שלום עולם",
    "escapes": 'quote " backslash \\ tab \t line\u2028sep',
    "nested": [{"ключ": ["значение", 1, 2.5, True, None]}],
}
IST = timezone(timedelta(hours=5, minutes=30))
TABLES = {
    "users",
    "chats",
    "chat_messages",
    "chat_tool_calls",
    "segments",
    "blobs",
    "context_snapshots",
    "audit_log",
    "usage_log",
}


def _tool_turn(call_id: str = "call_1") -> list[dict[str, Any]]:
    call = {"id": call_id, "type": "function", "function": {"name": "search", "arguments": '{"q": "x"}'}}
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id, "content": "found 3 results"},
    ]


def test_migrate_blank_database_to_head_and_again_is_a_no_op(blank_store_url: str) -> None:
    engine = create_engine(blank_store_url)
    try:
        assert current_revision(engine) is None
        migrate(blank_store_url)
        assert current_revision(engine) == head_revision() == "0009"
        tables = set(sa.inspect(engine).get_table_names())
        assert tables >= TABLES | {"alembic_version"}
        migrate(blank_store_url)
        assert current_revision(engine) == "0009"
        with engine.connect() as connection:
            assert connection.execute(sa.text("SELECT count(*) FROM alembic_version")).scalar() == 1
        assert set(sa.inspect(engine).get_table_names()) == tables
    finally:
        engine.dispose()


def test_hand_written_migration_matches_the_models(blank_store_url: str) -> None:
    migrate(blank_store_url)
    engine = create_engine(blank_store_url)
    try:
        with engine.connect() as connection:
            context = MigrationContext.configure(connection, opts={"compare_type": True})
            assert workspace_models.Task.__table__.metadata is Base.metadata  # one schema, one chain
            assert key_models.ApiKey.__table__.metadata is Base.metadata
            assert compare_metadata(context, Base.metadata) == []
        indexes = {i["name"] for i in sa.inspect(engine).get_indexes("context_snapshots")}
        assert indexes >= {
            "idx_context_snapshots_session",
            "idx_context_snapshots_user",
            "idx_context_snapshots_created",
        }
    finally:
        engine.dispose()


def test_sqlite_connections_use_wal_and_foreign_keys(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite:///{tmp_path / 'deep' / 'dir' / 't.db'}")
    try:
        with engine.connect() as connection:
            assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert connection.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
    finally:
        engine.dispose()


def test_migrations_ship_inside_the_package() -> None:
    import tierwise.store.engine as engine_module

    folder = engine_module.MIGRATIONS_DIR
    assert folder.parent == Path(engine_module.__file__).resolve().parent
    assert {"env.py", "script.py.mako"} <= {p.name for p in folder.iterdir()}
    assert (folder / "versions" / "0001_initial.py").is_file()


# --- settings --------------------------------------------------------------------------------------


def test_default_database_is_a_sqlite_file_in_the_data_dir(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TIERWISE_DATA_DIR", str(tmp_path / "data"))
    assert data_dir() == tmp_path / "data"
    assert database_url() == f"sqlite:///{tmp_path / 'data' / 'tierwise.db'}"
    with Store.open() as store:
        store.create_user("x")
    assert (tmp_path / "data" / "tierwise.db").is_file()
    monkeypatch.setenv("TIERWISE_DATABASE_URL", f"sqlite:///{tmp_path / 'other.db'}")
    assert database_url() == f"sqlite:///{tmp_path / 'other.db'}"  # read at call time


def test_data_dir_defaults_to_the_user_data_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    import platformdirs

    monkeypatch.delenv("TIERWISE_DATA_DIR")
    assert data_dir() == Path(platformdirs.user_data_dir("tierwise"))


def test_urls_are_checked_and_postgres_means_psycopg() -> None:
    from tierwise.store.engine import normalize_url

    assert normalize_url("postgres://u@h/db").drivername == "postgresql+psycopg"
    assert normalize_url("postgresql://u@h/db").drivername == "postgresql+psycopg"
    with pytest.raises(StoreError, match="not a database URL"):
        normalize_url("nonsense")
    with pytest.raises(StoreError, match="SQLite or PostgreSQL"):
        normalize_url("mysql://u@h/db")
    assert issubclass(StoreError, UserError) and issubclass(NotFoundError, UserError)


def test_ids_are_unique_and_time_ordered() -> None:
    ids = [new_id() for _ in range(5000)]
    assert len(set(ids)) == len(ids)
    assert ids == sorted(ids)


# --- users and chats -------------------------------------------------------------------------------


def test_usage_log_migration_keeps_the_usage_already_recorded(blank_store_url: str) -> None:
    from alembic import command

    from tierwise.store.engine import WRITE, alembic_config
    from tierwise.store.models import utcnow

    engine = create_engine(blank_store_url)
    try:
        config = alembic_config()
        with engine.execution_options(**{WRITE: True}).begin() as connection:
            config.attributes["connection"] = connection
            command.upgrade(config, "0003")
        now = utcnow()
        month = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
        audit = Base.metadata.tables["audit_log"]
        rows = [
            ("u", "c1", {"tokens": 100, "dollars": 0.5, "cached_tokens": 10}, now),
            ("u", "c2", {"tokens": 7, "dollars": 0.25}, now),
            ("u", "c1", {"tokens": 40, "dollars": 1.0}, month - timedelta(days=3)),  # last month
            ("v", "c1", {"tokens": 1000, "dollars": 9.0}, now),  # another user
            ("u", "c1", {"tokens": "lots"}, now),  # unreadable: counted as nothing, as before
        ]
        with engine.execution_options(**{WRITE: True}).begin() as connection:
            connection.execute(
                sa.insert(Base.metadata.tables["users"]),
                [{"id": u, "name": u, "created_at": now} for u in ("u", "v")],
            )
            connection.execute(
                sa.insert(audit),
                [
                    {"id": new_id(), "user_id": u, "chat_id": c, "event": "usage", "checksum": None}
                    | {"details": d, "created_at": at}
                    for u, c, d, at in rows
                ]
                + [
                    {"id": new_id(), "user_id": "u", "chat_id": "c1", "event": "turn", "checksum": None}
                    | {"details": {"tokens": 5}, "created_at": now}
                ],
            )
    finally:
        engine.dispose()
    with Store.open(blank_store_url) as store:
        totals = store.usage_totals("u", "c1", month)
        assert (totals.chat_tokens, totals.since_tokens) == (140, 107)
        assert (totals.chat_dollars, totals.since_dollars) == pytest.approx((1.5, 0.75))
        assert len(store.list_audit("u", event="usage")) == 4  # the audit entries stay


def _schema(url: str) -> list[tuple[Any, ...]]:
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            rows = connection.exec_driver_sql("SELECT type, name, tbl_name, sql FROM sqlite_master").all()
            version = connection.exec_driver_sql("SELECT version_num FROM alembic_version").all()
    finally:
        engine.dispose()
    # A table SQLite rebuilt for a migration (batch mode) lists its constraints in the order Alembic's
    # sets gave, which varies by process: compare each statement's lines as a set.
    shapes = sorted((kind, name, table, tuple(sorted(_lines(sql)))) for kind, name, table, sql in rows)
    return shapes + [tuple(v) for v in version]


def _lines(sql: str | None) -> list[str]:
    return [line.strip().rstrip(",").strip() for line in (sql or "").splitlines()]


def test_a_blank_sqlite_database_gets_the_schema_the_migrations_make(tmp_path: Path) -> None:
    """A new SQLite store is a copy of the head schema migrated once a process: the same as migrating it."""
    from alembic import command

    from tierwise.store.engine import alembic_config

    migrated = f"sqlite:///{tmp_path / 'migrated.db'}"
    engine = create_engine(migrated)
    config = alembic_config()
    with engine.begin() as connection:  # the migrations themselves, as a store made before the copy was
        config.attributes["connection"] = connection
        command.upgrade(config, "head")
    engine.dispose()
    copied = f"sqlite:///{tmp_path / 'copied.db'}"
    Store.open(copied).close()
    assert _schema(copied) == _schema(migrated)
    assert current_revision(create_engine(copied)) == head_revision()
    store = Store.open(copied)  # a file, in WAL mode, with the connection's pragmas
    with store.engine.connect() as connection:
        assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert connection.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
    ada = store.create_user("ada")
    assert store.get_user(ada.id).name == "ada"
    store.close()


def test_an_older_sqlite_database_is_still_upgraded_by_the_migrations(tmp_path: Path) -> None:
    from alembic import command

    from tierwise.store.engine import alembic_config

    url = f"sqlite:///{tmp_path / 'old.db'}"
    engine = create_engine(url)
    config = alembic_config()
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "0008")
    engine.dispose()
    Store.open(url).close()
    assert current_revision(create_engine(url)) == head_revision()
