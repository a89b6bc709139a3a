"""The coding session's script: 3. The database layer on SQLAlchemy 2 async sessions.

One stretch of ``coding_session_data.py``'s day.
"""

from __future__ import annotations

from coding_session_tools import AFTER_PAGINATION, Session, grep, pytest_run, read, sh, suite, tests, write

__all__ = ["ASYNC_AFTER", "async_db"]

# ---------------------------------------------------------------------------------------------
# 3. The database layer on SQLAlchemy 2 async sessions (asyncpg).
# ---------------------------------------------------------------------------------------------

SESSION_OLD = '''\
"""Engine and sessions (sync: FastAPI runs the endpoints in its threadpool)."""

from __future__ import annotations

from collections.abc import Iterator

from sqlalchemy import create_engine
from sqlalchemy.orm import Session, sessionmaker

from app.config import settings

engine = create_engine(
    str(settings.database_url),  # postgresql+psycopg2://...
    pool_size=settings.db_pool_size,
    max_overflow=settings.db_max_overflow,
    pool_pre_ping=True,
)
SessionLocal = sessionmaker(bind=engine, autoflush=False, expire_on_commit=False)


def get_db() -> Iterator[Session]:
    db = SessionLocal()
    try:
        yield db
    finally:
        db.close()
'''

SESSION_DRAFT = '''\
"""Engine and sessions: SQLAlchemy 2 asyncio on asyncpg. Alembic keeps a sync engine (env.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker, create_async_engine

from app.config import settings

engine = create_async_engine(
    str(settings.database_url).replace("postgresql+psycopg2://", "postgresql+asyncpg://", 1),
    pool_size=settings.db_pool_size,
    max_overflow=settings.db_max_overflow,
    pool_pre_ping=True,
)
SessionLocal = async_sessionmaker(engine, autoflush=False)


async def get_session() -> AsyncIterator[AsyncSession]:
    async with SessionLocal() as session:
        yield session
'''

CONFLICT = """\
@router.get("", response_model=ProjectPage)
<<<<<<< HEAD
def list_projects(
    cursor: str | None = None,
    limit: int = Query(PAGE_SIZE, ge=1, le=MAX_PAGE_SIZE),
    archived: bool = False,
    db: Session = Depends(get_db),
    user: User = Depends(current_user),
) -> ProjectPage:
    \"\"\"Newest first, one page at a time; ``next_cursor`` is None on the last page.\"\"\"
    query = select(Project).where(Project.tenant_id == user.tenant_id, Project.archived == archived)
    if cursor:
        after = decode_cursor(cursor)
        query = query.where(tuple_(Project.created_at, Project.id) < (after.created_at, after.id))
    query = query.order_by(Project.created_at.desc(), Project.id.desc()).limit(limit + 1)
    rows = db.scalars(query).all()
=======
async def list_projects(
    offset: int = Query(0, ge=0),
    limit: int = Query(50, ge=1, le=200),
    archived: bool = False,
    session: AsyncSession = Depends(get_session),
    user: User = Depends(current_user),
) -> ProjectPage:
    base = select(Project).where(Project.tenant_id == user.tenant_id, Project.archived == archived)
    total = await session.scalar(select(func.count()).select_from(base.subquery()))
    rows = (await session.scalars(base.order_by(Project.created_at.desc()).offset(offset).limit(limit))).all()
>>>>>>> 4d7be21 (db: async sessions (WIP, tests not converted))
"""

RESOLVED = '''\
@router.get("", response_model=ProjectPage)
async def list_projects(
    cursor: str | None = None,
    limit: int = Query(PAGE_SIZE, ge=1, le=MAX_PAGE_SIZE),
    archived: bool = False,
    session: AsyncSession = Depends(get_session),
    user: User = Depends(current_user),
) -> ProjectPage:
    """Newest first, one page at a time; ``next_cursor`` is None on the last page."""
    query = select(Project).where(Project.tenant_id == user.tenant_id, Project.archived == archived)
    if cursor:
        after = decode_cursor(cursor)
        query = query.where(tuple_(Project.created_at, Project.id) < (after.created_at, after.id))
    query = query.order_by(Project.created_at.desc(), Project.id.desc()).limit(limit + 1)
    rows = (await session.scalars(query)).all()
'''

CONFTEST = '''\
import asyncio

import pytest
from httpx import ASGITransport, AsyncClient

from app.db.session import engine
from app.main import app
from tests.factories import install_factories  # make_projects, make_tasks, user, auth_headers


@pytest.fixture(scope="session")
def anyio_backend():
    return "asyncio"


@pytest.fixture
async def client():
    async with AsyncClient(transport=ASGITransport(app=app), base_url="http://test") as c:
        yield c


@pytest.fixture(autouse=True)
async def _clean_db():
    async with engine.begin() as conn:
        await conn.exec_driver_sql("TRUNCATE tenants, users, projects, tasks, audit_events CASCADE")
    yield


@pytest.fixture(autouse=True)
async def no_leaked_connections(_clean_db):
    """Every session goes back to the pool when the request and its background tasks end."""
    yield
    await asyncio.sleep(0)  # let background tasks finish
    assert engine.pool.checkedout() == 0, (
        f"{engine.pool.checkedout()} connection(s) still checked out after the test"
    )


install_factories(globals())
'''

GREENLET = (
    "sqlalchemy.exc.MissingGreenlet: greenlet_spawn has not been called; can't call await_only() here. "
    "Was IO attempted in an unexpected place? (Background on this error at: https://sqlalche.me/e/20/xd2s)"
)

ASYNC_FAILURES = f"""\
_______________________ test_list_tasks_includes_project _______________________

    async def test_list_tasks_includes_project(client, auth_headers, make_tasks):
        make_tasks(3)
>       resp = await client.get("/api/tasks", headers=auth_headers)

tests/test_tasks.py:41:
_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _
app/api/tasks.py:38: in list_tasks
    return [TaskOut.from_task(t) for t in rows]
app/schemas.py:88: in from_task
    project_name=task.project.name,
.venv/lib/python3.12/site-packages/sqlalchemy/orm/attributes.py:566: in __get__
    return self.impl.get(state, dict_)  # type: ignore[no-any-return]
.venv/lib/python3.12/site-packages/sqlalchemy/util/_concurrency_py3k.py:123: in await_only
    raise exc.MissingGreenlet(
E   {GREENLET}
#FAILED tests/test_tasks.py::test_list_tasks_includes_project - sqlalchemy.exc.MissingGreenlet: gre...
#FAILED tests/test_tasks.py::test_get_task - sqlalchemy.exc.MissingGreenlet: greenlet_spawn has not ...
#FAILED tests/test_tasks.py::test_task_assignee_embedded - sqlalchemy.exc.MissingGreenlet: greenlet_..."""

LEAK_ERROR = """\
_______________ ERROR at teardown of test_audit_on_project_delete _______________

    @pytest.fixture(autouse=True)
    async def no_leaked_connections(_clean_db):
        \"\"\"Every session goes back to the pool when the request and its background tasks end.\"\"\"
        yield
        await asyncio.sleep(0)  # let background tasks finish
>       assert engine.pool.checkedout() == 0, (
            f"{engine.pool.checkedout()} connection(s) still checked out after the test"
        )
E       AssertionError: 1 connection(s) still checked out after the test
E       assert 1 == 0
E        +  where 1 = checkedout()

tests/conftest.py:37: AssertionError
#ERROR tests/test_audit.py::test_audit_on_project_delete - AssertionError: 1 connection(s) still ch..."""

GC_WARNING = (
    "tests/test_audit.py::test_audit_on_project_delete\n"
    "  /home/ana/ledgerline/.venv/lib/python3.12/site-packages/sqlalchemy/pool/base.py:1068: SAWarning: The "
    "garbage collector is trying to clean up non-checked-in connection <AdaptedConnection "
    "<asyncpg.connection.Connection object at 0x7f0e3c2b1a40>>, which will be dropped, as it cannot be "
    "safely terminated.  Please ensure that SQLAlchemy pooled connections are returned to the pool "
    "explicitly, either by calling ``close()`` or by using appropriate context managers to manage their "
    "lifecycles."
)

TASKS_QUERY = """\
@router.get("", response_model=list[TaskOut])
async def list_tasks(
    project_id: str | None = None,
    status: list[TaskStatus] = Query(default=[]),
    session: AsyncSession = Depends(get_session),
    user: User = Depends(current_user),
) -> list[TaskOut]:
    query = select(Task).where(Task.tenant_id == user.tenant_id)
"""

AUDIT = """\
async def record(action: str, actor_id: str, target: str, details: dict | None = None) -> None:
    \"\"\"Write one audit event. Runs as a BackgroundTask, after the response is sent.\"\"\"
    session = SessionLocal()
    session.add(
        AuditEvent(
            action=action,
            actor_id=actor_id,
            target=target,
            details=details or {},
            created_at=datetime.utcnow(),
        )
    )
    await session.commit()
"""

AUDIT_FIXED = """\
async def record(action: str, actor_id: str, target: str, details: dict | None = None) -> None:
    \"\"\"Write one audit event. Runs as a BackgroundTask, after the response is sent.\"\"\"
    async with SessionLocal() as session, session.begin():
        session.add(
            AuditEvent(
                action=action,
                actor_id=actor_id,
                target=target,
                details=details or {},
                created_at=datetime.now(UTC),
            )
        )
"""

DATA_ERROR = """\
_________________________ test_audit_on_project_delete _________________________

E   sqlalchemy.exc.DBAPIError: (sqlalchemy.dialects.postgresql.asyncpg.Error)
E   <class 'asyncpg.exceptions.DataError'>: invalid input for query argument $5:
E   datetime.datetime(2026, 10, 15, 13, 4... (can't subtract offset-naive and offset-aware datetimes)
E   [SQL: INSERT INTO audit_events (action, actor_id, target, details, created_at) VALUES ($1::VARCHAR, ...]

app/services/audit.py:21: DBAPIError
#FAILED tests/test_audit.py::test_audit_on_project_delete - sqlalchemy.exc.DBAPIError: (sqlalchemy...
#FAILED tests/test_audit.py::test_audit_lists_actor - sqlalchemy.exc.DBAPIError: (sqlalchemy.dialec..."""

SEED = """\
def main(tenant: str, reset: bool) -> None:
    session = SessionLocal()
    if reset:
        session.execute(delete(Tenant).where(Tenant.slug == tenant))
    session.add_all(demo_rows(tenant))
    session.commit()
    print(f"seeded tenant {tenant}: {summary(session, tenant)}")
"""

SEED_ASYNC = """\
async def main(tenant: str, reset: bool) -> None:
    async with SessionLocal() as session, session.begin():
        if reset:
            await session.execute(delete(Tenant).where(Tenant.slug == tenant))
        session.add_all(demo_rows(tenant))
    async with SessionLocal() as session:
        print(f"seeded tenant {tenant}: {await summary(session, tenant)}")
"""

ASYNC_AFTER = AFTER_PAGINATION | {"audit": "." * 9}


def async_db(s: Session) -> None:
    """Afternoon: the move to async sessions; a lazy load, a leaked connection, a naive column."""
    s.user(
        "Back. Now the big one: the DB layer to SQLAlchemy 2 async sessions with asyncpg. Under load the "
        "threadpool is the ceiling, p95 on /api/tasks hits 180 ms at 64 concurrent users. I started this "
        "on `wip/async-db` last week: draft session.py, members, webhooks, search, tasks and auth deps are "
        "converted there, tests aren't. It predates this morning's pagination change."
    )
    s.calls(
        sh(
            "git log main..wip/async-db --format='%h %ad %s' --date=short --stat | head -n 14",
            "4d7be21 2026-10-08 db: async sessions (WIP, tests not converted)\n\n"
            " app/api/members.py  | 38 ++++++++++++++++++------------------\n"
            " app/api/projects.py | 41 ++++++++++++++++++++-------------------\n"
            " app/api/search.py   | 17 ++++++++--------\n"
            " app/api/tasks.py    | 56 +++++++++++++++++++++++++++++-----------------------\n"
            " app/api/webhooks.py | 29 +++++++++++++++--------------\n"
            " app/auth/deps.py    | 12 ++++++------\n"
            " app/db/session.py   | 26 +++++++++++++-------------\n"
            " 7 files changed, 112 insertions(+), 107 deletions(-)",
        ),
        read("app/db/session.py", SESSION_OLD),
        grep(
            "Depends(get_db)",
            "app/api/members.py: 4 matches\napp/api/projects.py: 5 matches\napp/api/search.py: 2 matches\n"
            "app/api/tasks.py: 7 matches\napp/api/webhooks.py: 3 matches\napp/auth/deps.py: 2 matches\n"
            "23 matches in 6 files",
        ),
        text="Looking at your branch, the current session module and what still uses the sync dependency.",
    )
    s.say(
        "Your commit `4d7be21` covers all six files that use `get_db` (23 call sites). Plan:\n\n"
        "1. Cherry-pick it without committing; `app/api/projects.py` will conflict with the cursor change.\n"
        "2. `async_sessionmaker(..., expire_on_commit=False)`: your draft leaves the default (`True`), and "
        "then reading any attribute after a commit triggers IO, which raises `MissingGreenlet` in async.\n"
        "3. Relationships serialized in responses must be eager-loaded (`selectinload`): no lazy loads in "
        "asyncio.\n"
        "4. Tests: `httpx.AsyncClient` over `ASGITransport`, and a teardown check that no connection is "
        "still checked out after each test, to catch leaks early.\n\n"
        "One question: convert Alembic's `env.py` to async too, or keep it on sync psycopg2?"
    )
    s.user(
        "Keep alembic sync for now, it runs in the deploy job and works. Everything else in one commit. Go."
    )
    s.call(
        *sh(
            "uv add 'sqlalchemy[asyncio]>=2.0.36' 'asyncpg>=0.30' && uv add --dev 'httpx>=0.27'",
            "Resolved 51 packages in 644ms\nPrepared 2 packages in 1.21s\nInstalled 2 packages in 9ms\n"
            " + asyncpg==0.30.0\n + greenlet==3.1.1\n"
            "Resolved 52 packages in 203ms\nInstalled 1 package in 4ms\n + httpx==0.27.2",
        ),
        text="Decision: Alembic stays sync (psycopg2); the app goes async in one commit. Dependencies first.",
    )
    s.call(
        *sh(
            "git cherry-pick --no-commit 4d7be21",
            "Auto-merging app/api/projects.py\nCONFLICT (content): Merge conflict in app/api/projects.py\n"
            "error: could not apply 4d7be21... db: async sessions (WIP, tests not converted)\n"
            "hint: after resolving the conflicts, mark the corrected paths\n"
            "hint: with 'git add <paths>' or 'git rm <paths>'",
            code=1,
        )
    )
    s.call(*read("app/api/projects.py", CONFLICT, 19))
    s.call(
        *write("app/api/projects.py", RESOLVED, 19, 46),
        text="Taking the cursor logic from `HEAD` and the async session from your commit:",
    )
    s.call(
        *sh(
            "git add app/api/projects.py && git status --short",
            "M  app/api/members.py\nM  app/api/projects.py\nM  app/api/search.py\nM  app/api/tasks.py\n"
            "M  app/api/webhooks.py\nM  app/auth/deps.py\nM  app/db/session.py\nM  pyproject.toml\nM  "
            "uv.lock",
        )
    )
    s.call(
        *sh(
            "mypy app",
            'app/api/members.py:47: error: "Coroutine[Any, Any, ScalarResult[Member]]" has no attribute '
            '"all"  '
            "[attr-defined]\n"
            'app/api/members.py:47: note: Maybe you forgot to use "await"?\n'
            "Found 1 error in 1 file (checked 42 source files)",
            code=1,
        ),
        text="Conflict resolved. Type-checking before running anything:",
    )
    s.call(
        *read(
            "app/api/members.py",
            "    query = select(Member).where(Member.project_id == project_id).order_by(Member.joined_at)\n"
            "    members = session.scalars(query).all()\n",
            46,
        )
    )
    s.call(
        *write("app/api/members.py", "    members = (await session.scalars(query)).all()\n", 47, 47),
        text="One missed `await` in your branch (it would have failed at runtime, not at import):",
    )
    s.call(
        *sh(
            "alembic current && alembic check",
            "INFO  [alembic.runtime.migration] Context impl PostgresqlImpl.\n"
            "INFO  [alembic.runtime.migration] Will assume transactional DDL.\n"
            "7c1e2f9a4b3d (head)\nNo new upgrade operations detected.",
        ),
        text="Alembic must keep working on its own sync engine:",
    )
    s.call(*read("app/db/session.py", SESSION_DRAFT))
    s.calls(
        write(
            "app/db/session.py",
            "SessionLocal = async_sessionmaker(engine, autoflush=False, expire_on_commit=False)\n",
            17,
            17,
        ),
        write("tests/conftest.py", CONFTEST),
        text="Your draft lacks `expire_on_commit=False`, as expected. Fixing that, then the test setup:",
    )
    s.call(
        *sh(
            "sed -i -E 's/^def (test_)/async def \\1/; s/([^.])client\\.(get|post|put|patch|delete)\\(/"
            "\\1await client.\\2(/' tests/test_*.py && sed -i '1i import pytest\\n\\npytestmark = "
            "pytest.mark.anyio\\n' tests/test_*.py && ruff check --fix -q tests && git diff --shortstat "
            "tests",
            " 11 files changed, 412 insertions(+), 371 deletions(-)",
        ),
        text="Converting the tests mechanically (async test functions, awaited client calls, anyio marker):",
    )
    s.call(
        *tests(
            pytest_run(
                suite(
                    **AFTER_PAGINATION,
                    audit="......E...",
                    tasks="...F....F.........F" + "." * 19,
                ),
                14.02,
                failures=ASYNC_FAILURES,
                errors=LEAK_ERROR,
                warnings=GC_WARNING,
            ),
        )
    )
    s.call(
        *read("app/api/tasks.py", TASKS_QUERY, 24),
        text=(
            "Two distinct problems:\n\n"
            "1. **`MissingGreenlet` in 3 task tests.** `TaskOut.from_task` reads `task.project.name` (and "
            "`task.assignee`); those are lazy relationships, and a lazy load is sync IO, which asyncio "
            "sessions refuse. Fix: `selectinload` both in the tasks queries.\n"
            "2. **A leaked connection** at the teardown of `test_audit_on_project_delete`: the new check "
            "found 1 connection still checked out, and SQLAlchemy's `SAWarning` says the garbage collector "
            "had to drop an asyncpg connection that was never returned. Something opens a session and never "
            "closes it. Tasks first."
        ),
    )
    s.call(
        *write(
            "app/api/tasks.py",
            "    query = (\n        select(Task)\n        .where(Task.tenant_id == user.tenant_id)\n"
            "        .options(selectinload(Task.project), selectinload(Task.assignee))\n    )\n",
            31,
            31,
        )
    )
    s.calls(
        write("app/api/tasks.py", "from sqlalchemy.orm import selectinload\n", 7, 6),
        tests(pytest_run([("tests/test_tasks.py", "." * 38)], 2.71), "tests/test_tasks.py"),
    )
    s.call(*read("app/services/audit.py", AUDIT, 10))
    s.call(
        *write("app/services/audit.py", AUDIT_FIXED, 10, 22),
        text=(
            "Found it: `record()` runs as a `BackgroundTask`, opens `SessionLocal()` and never closes it, "
            "so its connection is only reclaimed by the garbage collector. With the sync pool the same "
            "leak existed, but the GC reclaimed psycopg2 connections quietly. Fix: `async with` the "
            "session and a transaction. Tidying the `utcnow()` from this morning at the same time:"
        ),
    )
    s.call(
        *tests(
            pytest_run([("tests/test_audit.py", "..F..F...")], 1.33, failures=DATA_ERROR),
            "tests/test_audit.py",
        )
    )
    s.call(
        *write(
            "app/services/audit.py",
            "                created_at=datetime.now(UTC).replace(tzinfo=None),  # column is naive UTC\n",
            19,
            19,
        ),
        text=(
            "The leak is gone, but the tidy-up broke it: `audit_events.created_at` is `timestamp without "
            "time zone`, and asyncpg refuses aware datetimes for it (psycopg2 silently dropped the offset). "
            "Writing naive UTC explicitly; moving the column to `timestamptz` is a separate migration."
        ),
    )
    s.call(*tests(pytest_run([("tests/test_audit.py", "." * 9)], 1.29), "tests/test_audit.py"))
    s.call(*tests(pytest_run(suite(**ASYNC_AFTER), 9.87)))
    s.call(
        *sh(
            "for i in 1 2 3; do python -m pytest -q -p no:randomly -x | tail -n 1; done",
            "192 passed, 2 skipped in 9.92s\n192 passed, 2 skipped in 9.79s\n192 passed, 2 skipped in 9.85s",
        ),
        text="Green. Three more runs, since leaks and event-loop bugs like to be intermittent:",
    )
    s.say(
        "Full suite green: 192 passed, 2 skipped, no leaked connections, 9.9 s (was 12.1 s).\n\n"
        "- `app/api/projects.py`: conflict resolved (cursor pagination + `AsyncSession`).\n"
        "- `app/db/session.py`: `expire_on_commit=False`.\n"
        "- `app/api/tasks.py`: `selectinload(Task.project)` and `selectinload(Task.assignee)`.\n"
        "- `app/services/audit.py`: session closed via `async with`; naive UTC written explicitly.\n"
        "- `tests/`: async client, anyio marker, teardown leak check.\n\n"
        "Follow-up, not done: migrate `audit_events.created_at` to `timestamptz`."
    )
    s.user("How do I know there aren't more leaks like that in code the tests don't reach?")
    s.call(
        *grep(
            r"SessionLocal\(\)",
            "app/db/session.py:21:    async with SessionLocal() as session:\n"
            "app/services/audit.py:12:    async with SessionLocal() as session, session.begin():\n"
            "scripts/seed.py:19:    session = SessionLocal()\n"
            "scripts/backfill_slugs.py:14:    with SessionLocal() as session:",
            regex=True,
        )
    )
    s.calls(
        read(
            "scripts/seed.py",
            '"""Seed a demo tenant (users, projects, tasks) for local development."""\n\nimport argparse\n',
            1,
        ),
        read("scripts/seed.py", SEED, 18),
        read("scripts/seed.py", "    main(args.tenant, args.reset)\n", 43, total=43),
        text=(
            "Every request goes through `get_session`, which closes the session in `async with`, and the "
            "teardown check now guards every test. Outside the app there are two direct uses, both broken "
            "rather than leaky: `scripts/seed.py` and `scripts/backfill_slugs.py` still use the session "
            "synchronously, which no longer works with `async_sessionmaker`. `backfill_slugs.py` was a "
            "one-off for 0.2; I'd delete it. Fixing `seed.py`:"
        ),
    )
    s.calls(
        write("scripts/seed.py", "    asyncio.run(main(args.tenant, args.reset))\n", 43, 43),
        write("scripts/seed.py", SEED_ASYNC, 18, 24),
        write("scripts/seed.py", "import asyncio\n", 4, 3),
        text="Bottom-up, so the line numbers stay valid:",
    )
    s.call(
        *sh(
            "python scripts/seed.py --tenant demo --reset && git rm -q scripts/backfill_slugs.py",
            "seeded tenant demo: 3 users, 12 projects, 140 tasks, 0 audit events",
        )
    )
    s.user("ok. And the point of all this — is it faster?")
    s.call(
        *sh(
            "python scripts/loadtest.py --endpoint /api/tasks --concurrency 64 --duration 30",
            "target http://localhost:8000/api/tasks  concurrency=64  duration=30s  workers=4\n"
            "requests   31,904 (1,063.5/s)   errors 0\n"
            "latency    p50 21.4 ms   p95 58.7 ms   p99 133.0 ms   max 241.9 ms\n"
            "db pool    size 20  overflow peak 3  checked out at end 0",
            timeout=120,
        ),
        text="Same load test as your 180 ms number: 64 concurrent users on `/api/tasks`, 30 s.",
    )
    s.say(
        "Yes: p95 on `/api/tasks` at 64 concurrent users went from **180 ms to 58.7 ms**, about 1,060 "
        "requests/s, no errors. The pool peaked at 23 connections (20 + 3 overflow) and ended with none "
        "checked out."
    )
    s.user("Should we raise the pool size now that everything is async?")
    s.say(
        "Not yet. The load test peaked at 23 of the 30 allowed connections (20 + 10 overflow) per "
        "process, and Postgres on staging allows 100 connections for 4 gunicorn workers, so 4 × 30 = 120 "
        "is already over the server's limit in the worst case. I'd rather *lower* `DB_MAX_OVERFLOW` to "
        "5 (4 × 25 = 100) once we see production numbers. No change today."
    )
    s.user("ok, makes sense. commit it as one commit: 'db: SQLAlchemy 2 async sessions on asyncpg'")
    s.calls(
        sh(
            "ruff check app tests scripts && mypy app",
            "All checks passed!\nSuccess: no issues found in 42 source files",
        ),
        sh(
            "git add -A && git commit -q -m 'db: SQLAlchemy 2 async sessions on asyncpg' -m 'Alembic stays "
            "sync (psycopg2). Co-authored-by: Ana Ribeiro <ana@ledgerline.dev>' && git log --oneline -1 "
            "--shortstat",
            "e52f7d3 db: SQLAlchemy 2 async sessions on asyncpg\n"
            " 21 files changed, 603 insertions(+), 514 deletions(-)",
        ),
    )
    s.say("Committed `e52f7d3`. Local `main` is two commits ahead of origin (`c81d4f0`, `e52f7d3`).")
    s.user("thanks!")
    s.say("You're welcome. Nothing is pushed yet; both commits wait for the web app change.")
