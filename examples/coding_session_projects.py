"""The coding session's script: 2. Cursor pagination for GET /api/projects.

One stretch of ``coding_session_data.py``'s day.
"""

from __future__ import annotations

from coding_session_tools import AFTER_PAGINATION, Session, grep, pytest_run, read, sh, suite, tests, write

__all__ = ["cursor_pagination"]

# ---------------------------------------------------------------------------------------------
# 2. Cursor pagination for GET /api/projects.
# ---------------------------------------------------------------------------------------------

PROJECTS_HEAD = '''\
"""/api/projects: list, create, read, update and archive projects."""

from __future__ import annotations

from fastapi import APIRouter, Depends, HTTPException, Query
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.auth.deps import current_user
from app.db.models import Project, User
from app.db.session import get_db
from app.schemas import ProjectIn, ProjectOut, ProjectPage

router = APIRouter(prefix="/api/projects", tags=["projects"])


@router.get("", response_model=ProjectPage)
def list_projects(
    offset: int = Query(0, ge=0),
    limit: int = Query(50, ge=1, le=200),
    archived: bool = False,
    db: Session = Depends(get_db),
    user: User = Depends(current_user),
) -> ProjectPage:
    base = select(Project).where(Project.tenant_id == user.tenant_id, Project.archived == archived)
    total = db.scalar(select(func.count()).select_from(base.subquery()))
    rows = db.scalars(base.order_by(Project.created_at.desc()).offset(offset).limit(limit)).all()
    return ProjectPage(items=[ProjectOut.model_validate(p) for p in rows], total=total, offset=offset)
'''

PROJECTS_CURSOR = '''\
from fastapi import APIRouter, Depends, HTTPException, Query
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.api.pagination import MAX_PAGE_SIZE, PAGE_SIZE, decode_cursor, encode_cursor
from app.auth.deps import current_user
from app.db.models import Project, User
from app.db.session import get_db
from app.schemas import ProjectIn, ProjectOut, ProjectPage

router = APIRouter(prefix="/api/projects", tags=["projects"])


@router.get("", response_model=ProjectPage)
def list_projects(
    cursor: str | None = None,
    limit: int = Query(PAGE_SIZE, ge=1, le=MAX_PAGE_SIZE),
    archived: bool = False,
    db: Session = Depends(get_db),
    user: User = Depends(current_user),
) -> ProjectPage:
    """Newest first, one page at a time; ``next_cursor`` is None on the last page."""
    query = select(Project).where(Project.tenant_id == user.tenant_id, Project.archived == archived)
    if cursor:
        after = decode_cursor(cursor)
        query = query.where(Project.created_at < after.created_at)
    query = query.order_by(Project.created_at.desc(), Project.id.desc()).limit(limit + 1)
    rows = db.scalars(query).all()
    page, more = rows[:limit], len(rows) > limit
    next_cursor = encode_cursor(page[-1].created_at, page[-1].id) if more else None
    return ProjectPage(items=[ProjectOut.model_validate(p) for p in page], next_cursor=next_cursor)
'''

PAGINATION = '''\
"""Opaque keyset cursors: base64url of the last row's (created_at, id)."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from datetime import datetime

from fastapi import HTTPException

PAGE_SIZE = 50
MAX_PAGE_SIZE = 100


@dataclass(frozen=True)
class Cursor:
    created_at: datetime
    id: str


def encode_cursor(created_at: datetime, id: str) -> str:
    raw = json.dumps({"c": created_at.isoformat(), "i": id}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(value: str) -> Cursor:
    try:
        data = json.loads(base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)))
        return Cursor(datetime.fromisoformat(data["c"]), str(data["i"]))
    except (ValueError, KeyError, TypeError) as exc:
        raise HTTPException(status_code=400, detail="invalid cursor") from exc
'''

OLD_PROJECT_TESTS = """\
def test_list_projects_offset(client, auth_headers, make_projects):
    names = [p.name for p in make_projects(75)]
    resp = client.get("/api/projects", params={"offset": 50, "limit": 50}, headers=auth_headers)
    assert resp.status_code == 200
    assert [p["name"] for p in resp.json()["items"]] == names[::-1][50:]


def test_list_projects_total(client, auth_headers, make_projects):
    make_projects(75)
    resp = client.get("/api/projects", params={"limit": 10}, headers=auth_headers)
    assert resp.json()["total"] == 75
"""

PAGINATION_TESTS = '''\
"""GET /api/projects: keyset pagination (page size 50, at most 100, opaque next_cursor)."""


def pages(client, headers, **params):
    cursor = None
    while True:
        query = params | ({"cursor": cursor} if cursor else {})
        page = client.get("/api/projects", params=query, headers=headers)
        assert page.status_code == 200, page.text
        yield page.json()["items"]
        if (cursor := page.json()["next_cursor"]) is None:
            return


def test_first_page_has_50_and_a_cursor(client, auth_headers, make_projects):
    make_projects(60)
    body = client.get("/api/projects", headers=auth_headers).json()
    assert len(body["items"]) == 50 and body["next_cursor"]


def test_walk_all_pages_no_duplicates(client, auth_headers, make_projects):
    make_projects(120)
    seen = [p["id"] for page in pages(client, auth_headers) for p in page]
    assert len(seen) == 120 and len(set(seen)) == 120


def test_cursor_stable_under_inserts(client, auth_headers, make_projects):
    old = make_projects(60)
    it = pages(client, auth_headers)
    first = next(it)
    make_projects(5)  # created while the user scrolls: must not shift the next page
    assert [p["id"] for p in first + next(it)] == [p.id for p in reversed(old)]


def test_limit_is_capped_at_100(client, auth_headers):
    assert client.get("/api/projects", params={"limit": 101}, headers=auth_headers).status_code == 422


def test_invalid_cursor_is_400(client, auth_headers):
    resp = client.get("/api/projects", params={"cursor": "not-a-cursor"}, headers=auth_headers)
    assert resp.status_code == 400 and resp.json()["detail"] == "invalid cursor"
'''

OFFSET_FAILURES = """\
__________________________ test_list_projects_offset ___________________________

>       assert [p["name"] for p in resp.json()["items"]] == names[::-1][50:]
E       AssertionError: assert ['Project 75'... 'Project 26'] == ['Project 25'... 'Project 1']
E         At index 0 diff: 'Project 75' != 'Project 25'
E         Left contains 25 more items, first extra item: 'Project 25'

tests/test_projects.py:133: AssertionError
___________________________ test_list_projects_total ___________________________

>       assert resp.json()["total"] == 75
E       KeyError: 'total'

tests/test_projects.py:139: KeyError
#FAILED tests/test_projects.py::test_list_projects_offset - AssertionError: assert ['Project 75'... 'Pro...
#FAILED tests/test_projects.py::test_list_projects_total - KeyError: 'total'"""

TIE_FAILURES = """\
______________________ test_walk_all_pages_no_duplicates _______________________

client = <starlette.testclient.TestClient object at 0x7f9b10c4a2d0>
auth_headers = {'Authorization': 'Bearer eyJhbGciOiJIUzI1NiIs...'}
make_projects = <function make_projects.<locals>.make at 0x7f9b10c3e520>

    def test_walk_all_pages_no_duplicates(client, auth_headers, make_projects):
        make_projects(120)
        seen = [p["id"] for page in pages(client, auth_headers) for p in page]
>       assert len(seen) == 120 and len(set(seen)) == 120
E       assert (50 == 120)
E        +  where 50 = len(['prj_0120', 'prj_0119', 'prj_0118', 'prj_0117', 'prj_0116', 'prj_0115', ...])

tests/test_projects_pagination.py:24: AssertionError
_______________________ test_cursor_stable_under_inserts _______________________

>       assert [p["id"] for p in first + next(it)] == [p.id for p in reversed(old)]
E       StopIteration

tests/test_projects_pagination.py:32: StopIteration
#FAILED tests/test_projects_pagination.py::test_walk_all_pages_no_duplicates - assert (50 == 120)
#FAILED tests/test_projects_pagination.py::test_cursor_stable_under_inserts - StopIteration"""

MIGRATION = '''\
"""projects keyset index

Revision ID: 7c1e2f9a4b3d
Revises: 5a0d3c7e91f2
Create Date: 2026-10-15 11:02:37.118204
"""

from alembic import op

revision = "7c1e2f9a4b3d"
down_revision = "5a0d3c7e91f2"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # (tenant_id, created_at, id) serves GET /api/projects' row comparison; the old index is its prefix.
    op.create_index("ix_projects_tenant_created_id", "projects", ["tenant_id", "created_at", "id"])
    op.drop_index("ix_projects_tenant_created", table_name="projects")


def downgrade() -> None:
    op.create_index("ix_projects_tenant_created", "projects", ["tenant_id", "created_at"])
    op.drop_index("ix_projects_tenant_created_id", table_name="projects")
'''

EXPLAIN = (
    " Limit  (cost=0.56..10.42 rows=51 width=214) (actual time=0.038..0.171 rows=51 loops=1)\n"
    "   ->  Index Scan Backward using ix_projects_tenant_created_id on projects"
    "  (cost=0.56..7301.87 rows=37790 width=214) (actual time=0.037..0.164 rows=51 loops=1)\n"
    "         Index Cond: ((tenant_id = 'ten_acme'::text) AND (ROW(created_at, id) < "
    "ROW('2025-02-11 09:14:07.52+00'::timestamp with time zone, 'prj_01JKQ4R8'::text)))\n"
    "         Filter: (NOT archived)\n"
    "         Rows Removed by Filter: 2\n"
    " Planning Time: 0.204 ms\n"
    " Execution Time: 0.219 ms\n"
    "(7 rows)"
)

API_DOC_OLD = """\
### List projects

`GET /api/projects?offset=0&limit=50&archived=false`

Returns the tenant's projects, newest first.

| Parameter  | Default | Notes                             |
|------------|---------|-----------------------------------|
| `offset`   | 0       | Rows to skip                      |
| `limit`    | 50      | 1-200                             |
| `archived` | false   | Only archived projects when true  |

Response: `{"items": [Project], "total": 1234, "offset": 0}`
"""

API_DOC_NEW = """\
### List projects

`GET /api/projects?limit=50&archived=false&cursor=...`

Returns the tenant's projects, newest first, one page at a time (keyset pagination).

| Parameter  | Default | Notes                                                        |
|------------|---------|--------------------------------------------------------------|
| `limit`    | 50      | 1-100                                                        |
| `cursor`   | none    | `next_cursor` of the previous page; omit it for the first page |
| `archived` | false   | Only archived projects when true                             |

Response: `{"items": [Project], "next_cursor": "eyJjIjoi..."}`. `next_cursor` is `null` on the last
page. Cursors are opaque: don't build or parse them. An invalid cursor returns 400.

> Changed in 0.4.0: `offset` and `total` were removed. Walk the pages with `next_cursor`.
"""


def cursor_pagination(s: Session) -> None:
    """Late morning: keyset pagination for GET /api/projects; offset dropped; an index migration."""
    s.user(
        "ok, noted. Next: GET /api/projects. Acme has ~40k projects, 'load more' gets slow on deep pages, "
        "and Jonas saw duplicates when someone creates a project while you scroll. I want cursor "
        "pagination."
    )
    s.calls(
        read("app/api/projects.py", PROJECTS_HEAD, 1),
        grep(
            "offset",
            "app/api/projects.py:19:    offset: int = Query(0, ge=0),\n"
            "app/api/projects.py:27:    rows = db.scalars(base.order_by(Project.created_at.desc())"
            ".offset(offset).limit(limit)).all()\n"
            "app/api/projects.py:28:    return ProjectPage(items=[ProjectOut.model_validate(p) for p in "
            "rows], "
            "total=total, offset=offset)\n"
            "app/schemas.py:51:    offset: int\n"
            'tests/test_projects.py:131:    resp = client.get("/api/projects", params={"offset": 50, '
            '"limit": 50}, headers=auth_headers)\n'
            "web/src/api/projects.ts:14:  const params = new URLSearchParams({ offset: String(offset), "
            "limit: '50' });",
        ),
        text="Reading the endpoint and everything that still pages by offset.",
    )
    s.say(
        "Today it's `OFFSET n LIMIT 50` plus a `COUNT(*)` on every page: both get slower the deeper you "
        "go, and an insert shifts every later page by one, which is Jonas's duplicate.\n\n"
        "Plan (keyset pagination):\n"
        "- order by `(created_at DESC, id DESC)`; the cursor is the last row's `(created_at, id)`, "
        "base64url-encoded and opaque to clients;\n"
        "- response `{items, next_cursor}`, `next_cursor: null` on the last page;\n"
        "- fetch `limit + 1` rows to know whether there is a next page, without counting.\n\n"
        "Two questions:\n"
        "1. Keep `offset` as a deprecated fallback, or drop it? Only `web/src/api/projects.ts` uses it.\n"
        "2. `total` costs a count per page. Does the UI need it?"
    )
    s.user(
        "Page size 50, and let clients ask for up to 100 with limit. Drop offset pagination completely: "
        "the web app is the only client and we ship them together, I don't want to maintain two paths. "
        "Drop total too, the UI only shows 'load more'."
    )
    s.calls(
        write("app/api/pagination.py", PAGINATION),
        read(
            "app/schemas.py",
            "class ProjectPage(BaseModel):\n    items: list[ProjectOut]\n    total: int\n    offset: int\n",
            48,
        ),
        text=(
            "Decisions: page size 50 (`limit` at most 100), `next_cursor`; offset pagination and `total` "
            "are dropped (a breaking change for the changelog). Cursor helpers first."
        ),
    )
    s.calls(
        write(
            "app/schemas.py",
            "class ProjectPage(BaseModel):\n    items: list[ProjectOut]\n"
            "    next_cursor: str | None = None\n",
            48,
            51,
        ),
        write("app/api/projects.py", PROJECTS_CURSOR, 5, 28),
    )
    s.call(
        *tests(
            pytest_run([("tests/test_projects.py", "." * 14 + "FF")], 1.87, failures=OFFSET_FAILURES),
            "tests/test_projects.py",
        )
    )
    s.call(
        *read("tests/test_projects.py", OLD_PROJECT_TESTS, 129, total=139),
        text="Both failures are the old contract. The two tests are at the end of the file:",
    )
    s.calls(
        sh(
            "sed -i '127,139d' tests/test_projects.py && tail -n 3 tests/test_projects.py",
            '    resp = client.delete(f"/api/projects/{project.id}", headers=auth_headers)\n'
            "    assert resp.status_code == 204\n"
            '    assert client.get(f"/api/projects/{project.id}", headers=auth_headers).status_code == 404',
        ),
        write("tests/test_projects_pagination.py", PAGINATION_TESTS),
        text="Removing them (and the blank lines before them); the cursor tests get their own file.",
    )
    s.call(
        *tests(
            pytest_run([("tests/test_projects_pagination.py", ".FF..")], 1.42, failures=TIE_FAILURES),
            "tests/test_projects_pagination.py",
        )
    )
    s.call(
        *write(
            "app/api/projects.py",
            "        query = query.where(tuple_(Project.created_at, Project.id) < (after.created_at, "
            "after.id))\n",
            30,
            30,
        ),
        text=(
            "A real bug, not a test artefact: `make_projects` inserts all 120 rows in one transaction, and "
            "Postgres `now()` is the transaction's start time, so they share one `created_at`. Filtering "
            "on `created_at < cursor` alone skips every tie after the first page. CSV imports do exactly "
            "this in production. Comparing the row `(created_at, id)` instead (and importing `tuple_`):"
        ),
    )
    s.calls(
        write("app/api/projects.py", "from sqlalchemy import select, tuple_\n", 6, 6),
        tests(
            pytest_run(
                [("tests/test_projects.py", "." * 14), ("tests/test_projects_pagination.py", ".....")], 1.95
            ),
            "tests/test_projects.py tests/test_projects_pagination.py",
        ),
    )
    s.say(
        "All 19 project tests pass: 50 per page, no duplicates across 120 rows with identical timestamps, "
        "stable pages while rows are inserted, `limit=101` → 422, a bad cursor → 400."
    )
    s.user("What does a cursor actually look like? Support will ask when they see one in a URL.")
    s.call(
        *sh(
            'python -c "from app.api.pagination import encode_cursor, decode_cursor; from datetime import '
            "datetime, UTC; c = encode_cursor(datetime(2026, 10, 15, 9, 14, 7, tzinfo=UTC), 'prj_01JKQ4R8'); "
            'print(c); print(decode_cursor(c))"',
            "eyJjIjoiMjAyNi0xMC0xNVQwOToxNDowNyswMDowMCIsImkiOiJwcmpfMDFKS1E0UjgifQ\n"
            "Cursor(created_at=datetime.datetime(2026, 10, 15, 9, 14, 7, tzinfo=datetime.timezone.utc), "
            "id='prj_01JKQ4R8')",
        )
    )
    s.say(
        "About 70 characters of base64url: the last row's `created_at` and `id` as compact JSON. It "
        "isn't secret (anyone can decode it) and isn't signed: a tampered cursor just starts the page "
        "somewhere else within the caller's own tenant, because the tenant filter is always applied. "
        "Support can treat it as an opaque bookmark."
    )
    s.user(
        "ok. Will Postgres actually use an index for that tuple comparison? Acme is the case that matters."
    )
    s.call(
        *grep(
            "Index(",
            'app/db/models.py:64:    __table_args__ = (Index("ix_projects_tenant_created", "tenant_id", '
            '"created_at"),)\n'
            'app/db/models.py:97:    __table_args__ = (Index("ix_tasks_project_status", "project_id", '
            '"status"),)',
            path="app/db/models.py",
        )
    )
    s.say(
        "Only partly. `ix_projects_tenant_created (tenant_id, created_at)` can seek to the tenant and "
        "`created_at`, but the `id` tie-break then needs a filter on the heap rows. An index on "
        "`(tenant_id, created_at, id)` matches the row comparison exactly, scanned backwards for DESC. "
        "The old index is a prefix of the new one, so the migration can drop it. Add the migration?"
    )
    s.user("yes, add the migration")
    s.call(
        *sh(
            "alembic revision -m 'projects keyset index'",
            "Generating /home/ana/ledgerline/migrations/versions/7c1e2f9a4b3d_projects_keyset_index.py ...  "
            "done",
        )
    )
    s.calls(
        write("migrations/versions/7c1e2f9a4b3d_projects_keyset_index.py", MIGRATION),
        write(
            "app/db/models.py",
            '    __table_args__ = (Index("ix_projects_tenant_created_id", "tenant_id", "created_at", '
            '"id"),)\n',
            64,
            64,
        ),
    )
    s.call(
        *sh(
            "alembic upgrade head",
            "INFO  [alembic.runtime.migration] Context impl PostgresqlImpl.\n"
            "INFO  [alembic.runtime.migration] Will assume transactional DDL.\n"
            "INFO  [alembic.runtime.migration] Running upgrade 5a0d3c7e91f2 -> 7c1e2f9a4b3d, projects keyset "
            "index",
        )
    )
    s.call(
        *sh(
            "alembic downgrade -1 && alembic upgrade head && alembic check",
            "INFO  [alembic.runtime.migration] Running downgrade 7c1e2f9a4b3d -> 5a0d3c7e91f2, projects "
            "keyset "
            "index\nINFO  [alembic.runtime.migration] Running upgrade 5a0d3c7e91f2 -> 7c1e2f9a4b3d, projects "
            "keyset index\nNo new upgrade operations detected.",
        ),
        text="Round-tripping the migration, and checking the models match the schema:",
    )
    s.call(
        *sh(
            'psql "$DATABASE_URL" -c "EXPLAIN ANALYZE SELECT * FROM projects WHERE tenant_id = \'ten_acme\' '
            "AND NOT archived AND (created_at, id) < ('2025-02-11 09:14:07.52+00', 'prj_01JKQ4R8') "
            'ORDER BY created_at DESC, id DESC LIMIT 51"',
            EXPLAIN,
        ),
        text="Checking the plan on the local copy of Acme's data (40,212 projects), deep in the list:",
    )
    s.call(
        *sh(
            "python scripts/bench_projects.py --tenant ten_acme --pages 1,100,800 --runs 20",
            "tenant=ten_acme projects=40,212 page_size=50 runs=20 (p50, ms)\n"
            "page   offset+count   cursor\n"
            "   1           38.9      1.9\n"
            " 100           96.4      2.0\n"
            " 800          451.2      2.2",
        )
    )
    s.say(
        "Yes: `Index Scan Backward using ix_projects_tenant_created_id`, with the row comparison in the "
        "`Index Cond`; 0.22 ms for a page deep in Acme's list.\n\n"
        "| page | offset + count | cursor |\n|---|---|---|\n| 1 | 38.9 ms | 1.9 ms |\n"
        "| 100 | 96.4 ms | 2.0 ms |\n| 800 | 451.2 ms | 2.2 ms |\n\n"
        "Cursor pages cost the same at any depth."
    )
    s.user("nice. Update docs/api.md, and tell me what Jonas has to change in the web app.")
    s.calls(
        read("docs/api.md", API_DOC_OLD, 41),
        grep(
            "/api/projects",
            "web/src/api/projects.ts:12:export async function listProjects(offset = 0) {\n"
            "web/src/api/projects.ts:15:  return request<ProjectPage>(`/api/projects?${params}`);\n"
            "web/src/views/ProjectList.vue:58:    const page = await listProjects(items.value.length);\n"
            "web/src/views/ProjectList.vue:61:    total.value = page.total;\n"
            'scripts/export_projects.py:22:    resp = client.get("/api/projects", params={"limit": 200, '
            '"offset": offset})',
        ),
        text="Reading the docs section and every client of the endpoint.",
    )
    s.call(*write("docs/api.md", API_DOC_NEW, 41, 53))
    s.call(
        *read(
            "scripts/export_projects.py",
            "    offset = 0\n    while True:\n"
            '        resp = client.get("/api/projects", params={"limit": 200, "offset": offset})\n'
            '        items = resp.json()["items"]\n        if not items:\n            break\n'
            "        writer.writerows(row(p) for p in items)\n        offset += len(items)\n",
            20,
        ),
        text=(
            "`docs/api.md` updated (new parameters, response shape, a 'Changed in 0.4.0' note).\n\n"
            "For Jonas (`web/src/api/projects.ts` and the list view):\n"
            "- stop sending `offset`; send `cursor=<next_cursor>` from the previous response, nothing for "
            "the first page;\n"
            "- 'load more' is shown while `next_cursor` is non-null;\n"
            "- `total` is gone: anything that displays a count must go;\n"
            "- treat the cursor as an opaque string; a 400 `invalid cursor` means start over from page "
            "one.\n\n"
            "The API and the web app must deploy together: the old web app would loop on page one.\n\n"
            "One more client: `scripts/export_projects.py` pages with `offset` and `limit=200`. Fixing it:"
        ),
    )
    s.call(
        *write(
            "scripts/export_projects.py",
            '    params = {"limit": 100}\n    while True:\n'
            '        page = client.get("/api/projects", params=params).raise_for_status().json()\n'
            '        writer.writerows(row(p) for p in page["items"])\n'
            '        if page["next_cursor"] is None:\n            break\n'
            '        params["cursor"] = page["next_cursor"]\n',
            20,
            27,
        )
    )
    s.user("ok, commit.")
    s.calls(
        tests(pytest_run(suite(**AFTER_PAGINATION), 12.06)),
        sh(
            "ruff check app tests && mypy app",
            "All checks passed!\nSuccess: no issues found in 42 source files",
        ),
    )
    s.call(
        *sh(
            "git add -A app docs migrations tests && git commit -m 'projects: cursor pagination for GET "
            "/api/projects' -m 'BREAKING: offset and total are removed; walk pages with next_cursor.'",
            "[main c81d4f0] projects: cursor pagination for GET /api/projects\n"
            " 8 files changed, 152 insertions(+), 31 deletions(-)\n"
            " create mode 100644 app/api/pagination.py\n"
            " create mode 100644 migrations/versions/7c1e2f9a4b3d_projects_keyset_index.py\n"
            " create mode 100644 tests/test_projects_pagination.py",
        )
    )
    s.say(
        "Committed `c81d4f0` (192 passed, 2 skipped). Not pushed: the web app has to switch first. "
        "Push now anyway, or keep it local until the async work is in?"
    )
    s.user("keep it local for now. Lunch, back in 40 min.")
    s.say("Enjoy. Local `main` is one commit ahead of `origin/main` (`c81d4f0`).")
