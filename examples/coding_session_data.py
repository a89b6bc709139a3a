"""The coding session's script: dialogue, the files the assistant reads and writes, the tool output.

Part of ``make_coding_session.py`` (stdlib only). Each public function adds one stretch of the day
to a ``Session`` (``user``, ``say``, ``call``, ``calls``); the helpers below build the tool calls
and print their output the way the tools would (numbered file lines, pytest runs, exit codes).
The repository is ``ledgerline`` at /home/ana/ledgerline; the test suite starts at 187 tests.
"""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["async_db", "cursor_pagination", "docker_image", "jwt_fix", "release"]

Spec = tuple[str, dict[str, Any], str]


class Session(Protocol):
    """What the script needs from ``make_coding_session.Session``."""

    def user(self, text: str) -> None: ...
    def say(self, text: str) -> None: ...
    def call(self, name: str, args: dict[str, Any], output: str, text: str | None = None) -> None: ...
    def calls(self, *specs: Spec, text: str | None = None) -> None: ...


# ---------------------------------------------------------------------------------------------
# Tool calls and their output.
# ---------------------------------------------------------------------------------------------


def _lines(n: int) -> str:
    return f"{n} line" if n == 1 else f"{n} lines"


def read(path: str, text: str, start: int | None = None, total: int | None = None) -> Spec:
    """read_file of a whole file, or of the excerpt ``text`` that begins at line ``start`` (of ``total``)."""
    lines = text.rstrip("\n").split("\n")
    args: dict[str, Any] = {"path": path}
    if start is not None:
        args |= {"start_line": start, "end_line": start + len(lines) - 1}
    first = start or 1
    out = "\n".join(f"{first + i:>4}  {line}".rstrip() for i, line in enumerate(lines))
    return "read_file", args, out + (f"\n[{path}: {total} lines]" if total else "")


def write(path: str, content: str, start: int | None = None, end: int | None = None) -> Spec:
    """write_file of a whole file, or of lines ``start``-``end`` (``end = start - 1`` inserts)."""
    n = content.count("\n") + (not content.endswith("\n"))
    args: dict[str, Any] = {"path": path, "content": content}
    if start is None or end is None:
        return "write_file", args, f"Wrote {_lines(n)} to {path}"
    args |= {"start_line": start, "end_line": end}
    if end < start:
        return "write_file", args, f"Inserted {_lines(n)} before line {start} of {path}"
    return "write_file", args, f"Replaced lines {start}-{end} of {path} with {_lines(n)}"


def sh(command: str, output: str, code: int = 0, timeout: int | None = None) -> Spec:
    """run_command: the command's output, then its exit code."""
    args: dict[str, Any] = {"command": command} | ({"timeout": timeout} if timeout else {})
    return "run_command", args, f"{output.strip(chr(10))}\n[exit code {code}]".lstrip("\n")


def grep(query: str, output: str, path: str | None = None, regex: bool = False) -> Spec:
    """search_code: ripgrep-style ``path:line:text`` hits."""
    args: dict[str, Any] = (
        {"query": query} | ({"regex": True} if regex else {}) | ({"path": path} if path else {})
    )
    return "search_code", args, output.strip()


def tests(output: str, path: str | None = None, env: dict[str, str] | None = None) -> Spec:
    """run_tests: one pytest run."""
    args: dict[str, Any] = ({"path": path} if path else {}) | ({"env": env} if env else {})
    return "run_tests", args, output


def _bar(text: str, char: str = "=") -> str:
    return f" {text} ".center(80, char) if text else char * 80


def pytest_run(
    files: list[tuple[str, str]], secs: float, failures: str = "", errors: str = "", warnings: str = ""
) -> str:
    """Print a pytest run; ``files`` are (path, marks) with marks among ``.``, ``F``, ``s`` and ``E``.

    An ``E`` is an error at teardown: its test has its own mark, so it adds no test to the count.
    """
    marks = "".join(m for _, m in files)
    total = len(marks) - marks.count("E")
    out = [
        _bar("test session starts"),
        "platform linux -- Python 3.12.7, pytest-8.3.3, pluggy-1.5.0",
        "rootdir: /home/ana/ledgerline",
        "configfile: pyproject.toml",
        "plugins: anyio-4.6.2, cov-5.0.0",
        f"collected {total} items",
        "",
    ]
    done = 0
    for path, m in files:
        done += len(m) - m.count("E")
        pct = f"[{100 * done // total:3d}%]"
        out.append(f"{path} {m}".ljust(80 - len(pct)) + pct)
    out.append("")
    for title, text in (("ERRORS", errors), ("FAILURES", failures)):
        if text:  # "____ name ____" headers re-centred; "#" lines go to the short summary only
            body = [line for line in text.strip("\n").split("\n") if not line.startswith("#")]
            out += [_bar(title), *(_bar(ln.strip("_ "), "_") if ln.startswith("___") else ln for ln in body)]
    if warnings:
        out += [
            _bar("warnings summary"),
            warnings.strip("\n"),
            "",
            "-- Docs: https://docs.pytest.org/en/stable/how-to/capture-warnings.html",
        ]
    counts = [(marks.count("F"), "failed"), (marks.count("."), "passed"), (marks.count("s"), "skipped")]
    n_warn = sum(line.startswith("tests/") for line in warnings.split("\n"))
    counts.append((n_warn, "warning" if n_warn == 1 else "warnings"))
    counts.append((marks.count("E"), "error" if marks.count("E") == 1 else "errors"))
    if "F" in marks or "E" in marks:
        out.append(_bar("short test summary info"))
        out += [line for line in (failures + "\n" + errors).split("\n") if line.startswith("#")]
    summary = ", ".join(f"{n} {word}" for n, word in counts if n)
    out.append(_bar(f"{summary} in {secs:.2f}s"))
    return "\n".join(line.removeprefix("#") for line in out)


_SUITE = {
    "audit": "." * 9,
    "auth": "." * 42,
    "billing": "." * 12 + "s" + "." * 7 + "s" + "." * 6,
    "health": "...",
    "members": "." * 21,
    "projects": "." * 16,
    "search": "." * 12,
    "tasks": "." * 38,
    "webhooks": "." * 19,
}
AFTER_JWT = {"auth": "." * 46}
AFTER_PAGINATION = AFTER_JWT | {"projects": "." * 14, "projects_pagination": "." * 5}


def suite(**marks: str) -> list[tuple[str, str]]:
    """The whole test suite's files and marks, with some files' marks replaced."""
    files = _SUITE | marks
    return [(f"tests/test_{name}.py", files[name]) for name in sorted(files, key=lambda n: f"test_{n}.py")]


# ---------------------------------------------------------------------------------------------
# 1. The JWT expiry bug.
# ---------------------------------------------------------------------------------------------

STAGING_TRACEBACK = """\
2026-10-15 08:52:11,406 ERROR ledgerline.auth request_id=7f3e1c2a path=/api/me
Traceback (most recent call last):
  File "/app/app/auth/jwt.py", line 44, in decode_token
    payload = jwt.decode(token, settings.jwt_secret, algorithms=[ALGORITHM], leeway=10)
              ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/usr/local/lib/python3.12/site-packages/jwt/api_jwt.py", line 222, in decode
    decoded = self.decode_complete(
  File "/usr/local/lib/python3.12/site-packages/jwt/api_jwt.py", line 167, in decode_complete
    self._validate_claims(
  File "/usr/local/lib/python3.12/site-packages/jwt/api_jwt.py", line 262, in _validate_claims
    self._validate_exp(payload, now, leeway)
  File "/usr/local/lib/python3.12/site-packages/jwt/api_jwt.py", line 363, in _validate_exp
    raise ExpiredSignatureError("Signature has expired")
jwt.exceptions.ExpiredSignatureError: Signature has expired

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "/app/app/auth/deps.py", line 31, in current_user
    payload = decode_token(token, expected_type="access")
  File "/app/app/auth/jwt.py", line 46, in decode_token
    raise TokenError("token expired") from exc
app.auth.jwt.TokenError: token expired"""

JWT_OLD = '''\
"""Access and refresh tokens (HS256) for the Ledgerline API."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any
from uuid import uuid4

import jwt

from app.config import settings

ACCESS_TTL = timedelta(minutes=15)
REFRESH_TTL = timedelta(days=7)  # TODO: 7 or 30 days? ask product
ALGORITHM = "HS256"


class TokenError(Exception):
    """The token is missing, malformed, expired or of the wrong type."""


def _expiry(ttl: timedelta) -> int:
    return int((datetime.utcnow() + ttl).timestamp())


def create_access_token(user_id: str, scopes: list[str]) -> str:
    payload = {
        "sub": user_id,
        "scopes": scopes,
        "type": "access",
        "iat": int(datetime.utcnow().timestamp()),
        "exp": _expiry(ACCESS_TTL),
    }
    return jwt.encode(payload, settings.jwt_secret, algorithm=ALGORITHM)


def create_refresh_token(user_id: str) -> str:
    payload = {"sub": user_id, "type": "refresh", "jti": uuid4().hex, "exp": _expiry(REFRESH_TTL)}
    return jwt.encode(payload, settings.jwt_secret, algorithm=ALGORITHM)


def decode_token(token: str, expected_type: str) -> dict[str, Any]:
    try:
        payload = jwt.decode(token, settings.jwt_secret, algorithms=[ALGORITHM], leeway=10)
    except jwt.ExpiredSignatureError as exc:
        raise TokenError("token expired") from exc
    except jwt.InvalidTokenError as exc:
        raise TokenError("invalid token") from exc
    if payload.get("type") != expected_type:
        raise TokenError(f"expected a {expected_type} token")
    return payload
'''

JWT_NEW = '''\
"""Access and refresh tokens (HS256) for the Ledgerline API.

Times are aware UTC datetimes (PyJWT turns them into epoch seconds): the host's TZ must not matter.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import uuid4

import jwt

from app.config import settings

ACCESS_TTL = timedelta(minutes=15)
ALGORITHM = "HS256"


class TokenError(Exception):
    """The token is missing, malformed, expired or of the wrong type."""


def create_access_token(user_id: str, scopes: list[str]) -> str:
    now = datetime.now(UTC)
    payload = {"sub": user_id, "scopes": scopes, "type": "access", "iat": now, "exp": now + ACCESS_TTL}
    return jwt.encode(payload, settings.jwt_secret, algorithm=ALGORITHM)


def create_refresh_token(user_id: str) -> str:
    now = datetime.now(UTC)
    payload = {
        "sub": user_id,
        "type": "refresh",
        "jti": uuid4().hex,
        "iat": now,
        "exp": now + timedelta(days=settings.refresh_token_days),
    }
    return jwt.encode(payload, settings.jwt_secret, algorithm=ALGORITHM)


def decode_token(token: str, expected_type: str) -> dict[str, Any]:
    try:
        payload = jwt.decode(token, settings.jwt_secret, algorithms=[ALGORITHM], leeway=10)
    except jwt.ExpiredSignatureError as exc:
        raise TokenError("token expired") from exc
    except jwt.InvalidTokenError as exc:
        raise TokenError("invalid token") from exc
    if payload.get("type") != expected_type:
        raise TokenError(f"expected a {expected_type} token")
    return payload
'''

CONFIG = '''\
"""Settings, read from the environment (and from .env in development)."""

from __future__ import annotations

from pydantic import PostgresDsn
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_file=".env", extra="ignore")

    database_url: PostgresDsn
    jwt_secret: str
    cors_origins: list[str] = ["http://localhost:5173"]
    db_pool_size: int = 20
    db_max_overflow: int = 10
    log_level: str = "INFO"


settings = Settings()
'''

TEST_AUTH_HEAD = """\
import time

import pytest

from app.auth.jwt import TokenError, create_access_token, create_refresh_token, decode_token
from tests.helpers import bearer, login


def test_login_returns_both_tokens(client, user):
    tokens = login(client, user)
    assert set(tokens) == {"access_token", "refresh_token", "token_type"}
    assert tokens["token_type"] == "bearer"
"""

TEST_AUTH_TZ = '''

@pytest.mark.parametrize("tz", ["UTC", "Europe/Berlin", "Pacific/Kiritimati", "America/Los_Angeles"])
def test_token_expiry_ignores_host_timezone(monkeypatch, tz):
    """Regression (2026-10-15): naive utcnow().timestamp() minted expired tokens east of UTC."""
    monkeypatch.setenv("TZ", tz)
    time.tzset()
    try:
        access = decode_token(create_access_token("usr_1", ["projects:read"]), "access")
        assert 14 * 60 < access["exp"] - time.time() <= 15 * 60
        refresh = decode_token(create_refresh_token("usr_1"), "refresh")
        assert refresh["exp"] - time.time() == pytest.approx(14 * 86400, abs=5)
    finally:
        monkeypatch.undo()
        time.tzset()
'''

REFRESH_FAILURE = """\
_________________________________ test_refresh _________________________________

client = <starlette.testclient.TestClient object at 0x7f3a2c1d5e50>
user = <User id='usr_8f2c' email='ana@example.com'>

    def test_refresh(client, user):
        tokens = login(client, user)
        resp = client.post("/api/auth/refresh", json={"refresh_token": tokens["refresh_token"]})
        assert resp.status_code == 200
        me = client.get("/api/me", headers=bearer(resp.json()["access_token"]))
>       assert me.status_code == 200
E       assert 401 == 200
E        +  where 401 = <Response [401 Unauthorized]>.status_code

tests/test_auth.py:88: AssertionError
#FAILED tests/test_auth.py::test_refresh - AssertionError: assert 401 == 200"""

JWT_DIFF = '''\
 app/auth/jwt.py    | 34 ++++++++++++++++------------------
 app/config.py      |  1 +
 tests/test_auth.py | 16 ++++++++++++++++
 3 files changed, 33 insertions(+), 18 deletions(-)
diff --git a/app/auth/jwt.py b/app/auth/jwt.py
@@ -1,16 +1,19 @@
-"""Access and refresh tokens (HS256) for the Ledgerline API."""
+"""Access and refresh tokens (HS256) for the Ledgerline API.
+
+Times are aware UTC datetimes (PyJWT turns them into epoch seconds): the host's TZ must not matter.
+"""
-from datetime import datetime, timedelta
+from datetime import UTC, datetime, timedelta
 ACCESS_TTL = timedelta(minutes=15)
-REFRESH_TTL = timedelta(days=7)  # TODO: 7 or 30 days? ask product
 ALGORITHM = "HS256"
@@ -19,25 +22,24 @@ class TokenError(Exception):
-def _expiry(ttl: timedelta) -> int:
-    return int((datetime.utcnow() + ttl).timestamp())
-
-
 def create_access_token(user_id: str, scopes: list[str]) -> str:
-    payload = {
-        "sub": user_id,
-        "scopes": scopes,
-        "type": "access",
-        "iat": int(datetime.utcnow().timestamp()),
-        "exp": _expiry(ACCESS_TTL),
-    }
+    now = datetime.now(UTC)
+    payload = {"sub": user_id, "scopes": scopes, "type": "access", "iat": now, "exp": now + ACCESS_TTL}
@@ -37,5 +40,13 @@ def create_refresh_token(user_id: str) -> str:
-    payload = {"sub": user_id, "type": "refresh", "jti": uuid4().hex, "exp": _expiry(REFRESH_TTL)}
+    now = datetime.now(UTC)
+    payload = {
+        "sub": user_id,
+        "type": "refresh",
+        "jti": uuid4().hex,
+        "iat": now,
+        "exp": now + timedelta(days=settings.refresh_token_days),
+    }'''


def jwt_fix(s: Session) -> None:
    """Morning: tokens born expired on staging; the fix, a regression test, a 14-day refresh TTL."""
    s.user(
        "Morning! Staging has been logging everyone out right after login since yesterday afternoon. The "
        "web app gets a token, the very next request is a 401, then the refresh loops. From the staging "
        f"logs:\n\n```\n{STAGING_TRACEBACK}\n```\n\nCan you look at `app/auth/jwt.py`?"
    )
    s.calls(
        read("app/auth/jwt.py", JWT_OLD),
        grep(
            "utcnow",
            "app/auth/jwt.py:23:    return int((datetime.utcnow() + ttl).timestamp())\n"
            'app/auth/jwt.py:31:        "iat": int(datetime.utcnow().timestamp()),\n'
            "app/services/audit.py:19:        created_at=datetime.utcnow(),",
            path="app",
        ),
        text="Looking at the token module, and at where else naive UTC times are built.",
    )
    s.calls(
        sh(
            "git log --since=2026-10-13 --date=format:'%a %H:%M' --format='%h %ad %an  %s' -- deploy/",
            "a41d9e0 Wed 15:47 Tomasz Wójcik  deploy: set TZ=Europe/Berlin so cron reports use local time",
        ),
        sh("grep -n '^TZ' deploy/*.env", "deploy/staging.env:7:TZ=Europe/Berlin"),
        text=(
            "Likely cause: `_expiry()` adds the TTL to a *naive* `datetime.utcnow()` and calls "
            "`.timestamp()`, which reads naive datetimes as **local** time. On a UTC host that's "
            "harmless; at UTC+2 every `exp` lands two hours in the past, so a 15-minute access token is "
            "born expired, while the 7-day refresh token survives: hence the refresh loop. Did the "
            "staging timezone change yesterday?"
        ),
    )
    s.call(
        *tests(pytest_run([("tests/test_auth.py", "." * 42)], 2.98), path="tests/test_auth.py"),
        text=(
            "Yes: `a41d9e0` (Tomasz, yesterday 15:47) set `TZ=Europe/Berlin` on staging. The code was "
            "always wrong; the TZ change exposed it. Reproducing, first under UTC like CI:"
        ),
    )
    s.call(
        *tests(
            pytest_run([("tests/test_auth.py", "." * 10 + "F" + "." * 31)], 3.21, failures=REFRESH_FAILURE),
            path="tests/test_auth.py",
            env={"TZ": "Europe/Berlin"},
        ),
        text="Green under UTC. Now with staging's timezone:",
    )
    s.say(
        "Reproduced: `test_refresh` fails only under `TZ=Europe/Berlin` (1 failed, 41 passed). It's the "
        "only test that catches it because the others get their tokens from the `auth_headers` fixture, "
        "which sets `exp` explicitly.\n\n"
        "Proposed fix:\n"
        "- build `iat`/`exp` from `datetime.now(UTC)` and pass aware datetimes to PyJWT, which converts "
        "them to epoch seconds correctly; drop `_expiry()`;\n"
        "- add a regression test that mints tokens under several `TZ` values, so it fails on any host;\n"
        "- leave `app/services/audit.py` alone for now: it writes naive UTC into a naive column, which "
        "is consistent, just old-style.\n\n"
        "Also in this file: `REFRESH_TTL = timedelta(days=7)  # TODO: 7 or 30 days? ask product`. "
        "Should I settle that while I'm here?"
    )
    s.user("Wait, does PyJWT accept datetime objects for iat/exp? I thought it wanted ints.")
    s.call(
        *sh(
            "python -c \"import jwt, datetime as d; now = d.datetime.now(d.UTC); t = jwt.encode({'iat': now, "
            "'exp': now + d.timedelta(minutes=15)}, 's', 'HS256'); print(jwt.decode(t, 's', ['HS256']), "
            'int(now.timestamp()))"',
            "{'iat': 1792048812, 'exp': 1792049712} 1792048812",
        ),
        text="It should accept both; checking with the installed version (PyJWT 2.9.0):",
    )
    s.say(
        "PyJWT converts `datetime` values of `iat`, `exp` and `nbf` to epoch seconds with "
        "`timegm(value.utctimetuple())`, which is correct for aware datetimes: the token above carries "
        "ints, 900 s apart, equal to `now.timestamp()`. So passing aware datetimes is the safe option."
    )
    s.user(
        "Yes, fix it. And product answered last week: refresh tokens live 14 days. Make it a setting "
        "(REFRESH_TOKEN_DAYS) rather than a constant, default 14."
    )
    s.call(
        *read("app/config.py", CONFIG),
        text="Decision: refresh tokens live 14 days, configurable as `REFRESH_TOKEN_DAYS` (default 14).",
    )
    s.calls(
        write("app/config.py", "    refresh_token_days: int = 14  # product decision, Oct 2026\n", 14, 13),
        write("app/auth/jwt.py", JWT_NEW),
    )
    s.call(
        *tests(
            pytest_run([("tests/test_auth.py", "." * 42)], 3.08),
            "tests/test_auth.py",
            {"TZ": "Europe/Berlin"},
        )
    )
    s.call(
        *read("tests/test_auth.py", TEST_AUTH_HEAD, 1, total=412),
        text="Green under Berlin time. Adding a regression test that doesn't depend on the CI host's TZ.",
    )
    s.call(*write("tests/test_auth.py", TEST_AUTH_TZ, 413, 412))
    s.call(
        *sh(
            "for tz in UTC Europe/Berlin Pacific/Kiritimati America/Los_Angeles; do printf '%-20s' $tz; "
            "TZ=$tz python -m pytest tests/test_auth.py -q | tail -n 1; done",
            "UTC                 46 passed in 3.04s\nEurope/Berlin       46 passed in 3.11s\n"
            "Pacific/Kiritimati  46 passed in 3.09s\nAmerica/Los_Angeles 46 passed in 3.02s",
        ),
        text="Running the auth tests under four host timezones, including UTC+14 and UTC-7:",
    )
    s.call(
        *grep(
            r"\.timestamp\(\)|fromtimestamp\(",
            "app/auth/jwt.py: no matches\n"
            "app/services/reports.py:33:        bucket = int(row.created_at.timestamp()) // 86400\n"
            'app/services/webhooks.py:58:    signed_at = datetime.fromtimestamp(int(header["t"]), tz=UTC)',
            path="app",
            regex=True,
        ),
        text="Same bug class elsewhere? Looking for other epoch conversions:",
    )
    s.say(
        "One more of the same kind, outside auth: `app/services/reports.py:33` calls `.timestamp()` on "
        "`created_at` values read from a naive UTC column, so on staging (and on any host east of UTC) "
        "daily report buckets shift by two hours: tasks created just after midnight UTC land on the "
        "previous day. `webhooks.py` is fine (aware). It's a different feature; fix it now or file it?"
    )
    s.user("File it, not today. Tag it bug + reports.")
    s.call(
        *sh(
            "gh issue create --title 'reports: daily buckets use local time for naive UTC timestamps' "
            "--label bug --label reports --body 'app/services/reports.py:33 calls .timestamp() on naive UTC "
            "datetimes, which Python reads as local time: with TZ=Europe/Berlin (staging, since a41d9e0) "
            "daily buckets shift by 2h. Same bug class as 3f9c2ab (JWT expiry). Fix: "
            "row.created_at.replace(tzinfo=UTC).timestamp(), plus a test under a non-UTC TZ.'",
            "https://github.com/ledgerline/ledgerline/issues/224",
        )
    )
    s.calls(
        tests(pytest_run(suite(**AFTER_JWT), 11.84)),
        sh(
            "ruff check app tests && mypy app",
            "All checks passed!\nSuccess: no issues found in 41 source files",
        ),
    )
    s.call(*sh("git diff --stat && git diff -U0 app/auth/jwt.py", JWT_DIFF))
    s.say(
        "Fixed, and the reports bug is filed as #224. Full suite: 189 passed, 2 skipped; ruff and mypy "
        "clean.\n\n"
        "- `app/auth/jwt.py`: `iat`/`exp` from `datetime.now(UTC)`; `_expiry()` and `REFRESH_TTL` gone.\n"
        "- `app/config.py`: `refresh_token_days: int = 14` (env `REFRESH_TOKEN_DAYS`).\n"
        "- `tests/test_auth.py`: `test_token_expiry_ignores_host_timezone`, 4 timezones.\n\n"
        "Refresh tokens already issued keep their 7-day `exp`; new ones get 14 days. No migration needed."
    )
    s.user("Why didn't CI catch it? We have test_refresh.")
    s.say(
        "CI runs on GitHub's Ubuntu runners, whose timezone is UTC, and there naive "
        "`utcnow().timestamp()` happens to be right. The bug only shows on hosts east of UTC "
        "(behind UTC, tokens lived *longer* than 15 minutes, which no test checks).\n\n"
        "The new test sets `TZ` itself, so it fails on any machine, CI included. A second CI job with "
        "`TZ=Europe/Berlin` would only repeat that; I'd skip it."
    )
    s.user("Agreed, skip the CI change. Commit and push, staging deploys from main.")
    s.call(
        *sh(
            "git add app/auth/jwt.py app/config.py tests/test_auth.py && git commit -m 'auth: compute token "
            "expiry from aware UTC datetimes' -m 'Naive utcnow().timestamp() is read as local time: on "
            "staging (TZ=Europe/Berlin) tokens were minted 2h expired. Refresh tokens now live "
            "REFRESH_TOKEN_DAYS (default 14).'",
            "[main 3f9c2ab] auth: compute token expiry from aware UTC datetimes\n"
            " 3 files changed, 33 insertions(+), 18 deletions(-)",
        )
    )
    s.call(
        *sh(
            "git push origin main",
            "To github.com:ledgerline/ledgerline.git\n   9b2e417..3f9c2ab  main -> main",
        )
    )
    s.say(
        "Pushed `3f9c2ab` to `main`; the staging deploy should pick it up in about 5 minutes. Anyone "
        "stuck in the loop needs one fresh login (their access tokens were minted expired)."
    )
    s.user("ok, coffee first. ... back. Is it deployed?")
    s.call(
        *sh(
            "gh run list --workflow deploy-staging.yml --limit 1",
            "STATUS     TITLE                                                 WORKFLOW        BRANCH  EVENT  "
            "ELAPSED\ncompleted  auth: compute token expiry from aware UTC datetimes   deploy-staging  main  "
            "  push   "
            "4m12s",
        ),
    )
    s.call(
        *sh(
            "curl -s -X POST https://staging.ledgerline.dev/api/auth/login -d @.smoke-login.json -H "
            "'content-type: application/json' | jq -r .access_token | cut -d. -f2 | base64 -d 2>/dev/null | "
            "jq '{type, ttl: (.exp - .iat)}'",
            '{\n  "type": "access",\n  "ttl": 900\n}',
        )
    )
    s.say(
        "Deployed (4m12s), and a fresh staging login now gets an access token with `exp - iat = 900` "
        "seconds, minted under `TZ=Europe/Berlin`. Can you check in the browser?"
    )
    s.user("great, that worked — logged in on staging and the session survives. thanks!")
    s.say(
        "Good to hear. One leftover from the search: `app/services/audit.py:19` still uses "
        "`datetime.utcnow()`. Harmless today; I'd tidy it when we touch the DB layer."
    )


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
