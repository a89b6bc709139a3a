"""``tierwise bench workers``: a small run on a throwaway PostgreSQL (behaviour, not timing)."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from sqlalchemy.pool import NullPool
from typer.testing import CliRunner

from tierwise.bench.workers import report, run
from tierwise.cli import app


@pytest.fixture
def empty_postgresql(postgresql_url: str) -> str:
    engine = sa.create_engine(postgresql_url, poolclass=NullPool)
    with engine.begin() as connection:
        connection.exec_driver_sql("DROP SCHEMA public CASCADE")
        connection.exec_driver_sql("CREATE SCHEMA public")
    engine.dispose()
    return postgresql_url


def test_serve_workers_keeps_every_session_whole_and_one_rate_limit(empty_postgresql: str) -> None:
    result = run(empty_postgresql, processes=2, sessions=8, turns=3, rate=120, seconds=3, mode="workers")
    assert (result.requests, result.errors) == (24, 0), report(result)
    assert (result.lost, result.duplicated, result.split) == (0, 0, 0), report(result)
    assert result.refused > 0  # the clients asked beyond the limit
    assert 0.9 < result.rate_ratio < 1.1  # one limit for both workers, not one each (that would be ~2)
    assert "| workers | 2 | 8 × 3 | 24 | 0 | 0 | 0 | 0 |" in report(result)


def test_separate_processes_share_sessions(empty_postgresql: str) -> None:
    result = run(empty_postgresql, processes=2, sessions=6, turns=3, rate=600, seconds=0)
    assert (result.errors, result.lost, result.duplicated, result.split) == (0, 0, 0, 0), report(result)
    assert len(result.per_port) == 2  # both processes served requests


def test_the_bench_and_serve_refuse_several_workers_on_sqlite(tmp_path: object) -> None:
    runner = CliRunner()
    bench = runner.invoke(app, ["bench", "workers", "--database-url", "sqlite:///x.db"])
    assert bench.exit_code == 2 and "needs PostgreSQL" in bench.output
    serve = runner.invoke(app, ["serve", "--workers", "2", "--db", f"sqlite:///{tmp_path}/t.db"])
    assert serve.exit_code == 2 and "--workers 2 needs PostgreSQL" in serve.output


@pytest.mark.anyio
async def test_a_request_the_server_drops_is_an_error_never_a_crash() -> None:
    import random

    from tierwise.bench.workers import WorkersResult, _sessions
    from tierwise.server.threaded import free_port

    result = WorkersResult("hosts", 1, 1, 2)
    await _sessions([free_port()], 1, 2, random.Random(0), result)  # nothing listens there
    assert (result.requests, result.errors) == (2, 2)
