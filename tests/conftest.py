"""Test isolation: no network beyond loopback, a private data dir, no stray keys."""

from __future__ import annotations

import functools
import ipaddress
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from tierwise.server.threaded import free_port

# Properties run 100 examples each: CI derandomized (a failure reproduces), a developer's run random
# (each run explores new ones). HYPOTHESIS_PROFILE=thorough runs 1,000 each (~5 minutes more on 2
# cores; it was CI's default until the suite had to fit in 4 minutes, issue 33).
_QUIET = [HealthCheck.too_slow, HealthCheck.data_too_large]
settings.register_profile(
    "ci", max_examples=100, deadline=None, derandomize=True, suppress_health_check=_QUIET
)
settings.register_profile("dev", max_examples=100, deadline=None, suppress_health_check=_QUIET)
settings.register_profile(
    "thorough", max_examples=1000, deadline=None, derandomize=True, suppress_health_check=_QUIET
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))

SHARED = Path(__file__).resolve().parents[1].parent / "shared"

_real_connect = socket.socket.connect


def _loopback_only(self: socket.socket, address: object) -> object:
    host = address[0] if isinstance(address, tuple) else None
    if isinstance(host, str):
        try:
            allowed = ipaddress.ip_address(host).is_loopback
        except ValueError:
            allowed = host == "localhost"
        if not allowed:
            raise OSError(f"tests may not reach {host}: only loopback is allowed")
    return _real_connect(self, address)  # type: ignore[arg-type]


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    monkeypatch.setattr(socket.socket, "connect", _loopback_only)
    for key in list(os.environ):
        if key.startswith("TIERWISE_") or key.endswith("_API_KEY"):
            monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("TIERWISE_DATA_DIR", str(tmp_path_factory.mktemp("data")))
    yield


# --- the store: SQLite, and a throwaway PostgreSQL server the tests start themselves ----------


def _postgres_bindir() -> Path | None:
    """The directory of ``initdb`` and ``pg_ctl``: ``pg_config --bindir``, else the newest install."""
    import glob
    import shutil
    import subprocess

    candidates: list[Path] = []
    pg_config = shutil.which("pg_config")
    if pg_config:
        try:
            done = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, timeout=30)
            candidates.append(Path(done.stdout.strip()))
        except (OSError, subprocess.SubprocessError):
            pass
    installed = [Path(p) for p in glob.glob("/usr/lib/postgresql/*/bin")]
    candidates += sorted(
        installed, key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0, reverse=True
    )
    if shutil.which("initdb"):
        candidates.append(Path(shutil.which("initdb") or "").parent)
    return next((d for d in candidates if (d / "initdb").is_file() and (d / "pg_ctl").is_file()), None)


def _no_postgres(reason: str) -> None:
    """Skip (no PostgreSQL here); in CI, where PostgreSQL must be tested, fail instead."""
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI must run the PostgreSQL tests)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def postgresql_url() -> Iterator[str]:
    """A PostgreSQL server of its own for this test session, on a free loopback port.

    ``initdb`` runs as the ``postgres`` OS user when we are root (PostgreSQL refuses to run as
    root), else as ourselves; the server and its directory are gone when the session ends.
    """
    import pwd
    import shutil
    import subprocess
    import tempfile

    import psycopg

    bindir = _postgres_bindir()
    if bindir is None:
        _no_postgres(
            "PostgreSQL is not installed (no initdb in `pg_config --bindir` or /usr/lib/postgresql/*/bin)"
        )
    assert bindir is not None
    prefix: list[str] = []
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        try:
            owner = pwd.getpwnam("postgres")
        except KeyError:
            _no_postgres("running as root, PostgreSQL needs the `postgres` OS user, and there is none")
        runuser = shutil.which("runuser")
        if runuser is None:
            _no_postgres("running as root, starting PostgreSQL needs `runuser`, and there is none")
        prefix = [str(runuser), "-u", "postgres", "--"]
    root = Path(tempfile.mkdtemp(prefix="tierwise-pg-"))
    if prefix:
        os.chown(root, owner.pw_uid, owner.pw_gid)
    data, log = root / "data", root / "server.log"

    def run(*args: object) -> subprocess.CompletedProcess[str]:
        command = [*prefix, *(str(a) for a in args)]
        return subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=120)

    started = False
    try:
        done = run(
            bindir / "initdb", "-D", data, "-A", "trust", "-U", "tierwise", "-E", "UTF8", "--locale=C", "-N"
        )
        if done.returncode != 0:
            pytest.fail(f"initdb failed: {done.stderr.strip()}", pytrace=False)
        for _attempt in range(3):  # a free port can be taken before the server binds it
            port = free_port()
            options = f"-k {root} -h 127.0.0.1 -p {port} -F -c full_page_writes=off -c synchronous_commit=off"
            done = run(bindir / "pg_ctl", "-D", data, "-l", log, "-o", options, "-w", "-t", "60", "start")
            if done.returncode == 0:
                started = True
                break
        if not started:
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else done.stderr
            pytest.fail(f"PostgreSQL did not start: {tail.strip()}", pytrace=False)
        with psycopg.connect(
            host="127.0.0.1", port=port, user="tierwise", dbname="postgres", autocommit=True
        ) as conn:
            conn.execute("CREATE DATABASE tierwise_test")
        yield f"postgresql+psycopg://tierwise@127.0.0.1:{port}/tierwise_test"
    finally:
        if started:
            run(bindir / "pg_ctl", "-D", data, "-m", "fast", "-w", "stop")
        shutil.rmtree(root, ignore_errors=True)


_EMPTY_PLPGSQL = """
DO $$
DECLARE name text;
BEGIN
    SET LOCAL session_replication_role = replica;  -- foreign keys unchecked: any order
    FOR name IN SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'alembic_version'
    LOOP EXECUTE 'DELETE FROM ' || quote_ident(name); END LOOP;
    FOR name IN SELECT sequencename FROM pg_sequences WHERE schemaname = 'public'
    LOOP EXECUTE 'ALTER SEQUENCE ' || quote_ident(name) || ' RESTART'; END LOOP;
END $$
"""


@functools.cache
def _admin_engine(url: str) -> Any:
    import sqlalchemy as sa

    return sa.create_engine(url, pool_size=1, max_overflow=0)


def _empty_postgresql(url: str, *, blank: bool) -> str:
    """The session server's database emptied: every row deleted if it is at the head, else wiped.

    Emptying keeps the migrated schema (one round trip, ~5 ms; dropping it made every test run the
    migrations again, ~0.2 s each on PostgreSQL); ``blank`` drops the schema whatever it holds.
    """
    from tierwise.store.engine import head_revision

    with _admin_engine(url).begin() as connection:
        versioned = connection.exec_driver_sql("SELECT to_regclass('public.alembic_version') IS NOT NULL")
        at_head = versioned.scalar_one() and connection.exec_driver_sql(
            "SELECT version_num FROM alembic_version"
        ).scalars().all() == [head_revision()]
        if at_head and not blank:
            connection.exec_driver_sql(_EMPTY_PLPGSQL)
        else:
            connection.exec_driver_sql("DROP SCHEMA public CASCADE")
            connection.exec_driver_sql("CREATE SCHEMA public")
    return url


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty database on each backend: a new SQLite file, or the session server's, emptied.

    Its schema may be at the head already (PostgreSQL's is kept between tests): a test of the
    migrations themselves takes :func:`blank_store_url`.
    """
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'tierwise.db'}"
    return _empty_postgresql(request.getfixturevalue("postgresql_url"), blank=False)


@pytest.fixture(params=["sqlite", "postgresql"])
def blank_store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A database with nothing in it, not even a schema, on each backend."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'tierwise.db'}"
    return _empty_postgresql(request.getfixturevalue("postgresql_url"), blank=True)


@pytest.fixture
def store(store_url: str) -> Iterator[object]:
    """A migrated :class:`tierwise.store.Store` on each backend, closed after the test."""
    from tierwise.store import Store

    opened = Store.open(store_url)
    yield opened
    opened.close()


@pytest.fixture(autouse=True)
def _block_model_requests(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No test may reach a real model provider (loopback fakes stay allowed)."""
    from tierwise.providers import base

    monkeypatch.setattr(base, "ALLOW_MODEL_REQUESTS", False)
    yield


@pytest.fixture
def anyio_backend() -> str:
    """Async tests run on asyncio."""
    return "asyncio"
