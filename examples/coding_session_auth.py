"""The coding session's script: 1. The JWT expiry bug.

One stretch of ``coding_session_data.py``'s day.
"""

from __future__ import annotations

from coding_session_tools import AFTER_JWT, Session, grep, pytest_run, read, sh, suite, tests, write

__all__ = ["jwt_fix"]

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
