"""API keys, request auth and per-user rate limits: store functions, the HTTP service, the CLI."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from fastapi import FastAPI
from typer.testing import CliRunner

from tierwise.budget import Budget
from tierwise.chat.engine import ChatEngine
from tierwise.cli import app as cli_app
from tierwise.errors import InputError, UserError
from tierwise.providers.testing import ScriptedModel
from tierwise.server import create_app
from tierwise.server.auth import RateLimiter, make_user_of, rate_limit_from_env
from tierwise.server.keys import (
    ApiKey,
    create_key,
    hash_key,
    list_keys,
    revoke_key,
    user_for_key,
)
from tierwise.store import NotFoundError, Store
from tierwise.store.models import utcnow

KEY = re.compile(r"^tw_[A-Za-z0-9_-]{40}$")
RUNNER = CliRunner()


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def client(app: FastAPI) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture
def store() -> Iterator[Store]:
    opened = Store.open("sqlite://")
    opened.create_user("ada", user_id="ada")
    opened.create_user("bob", user_id="bob")
    yield opened
    opened.close()


def engine_of(store: Store) -> ChatEngine:
    return ChatEngine(store, ScriptedModel(), budget=Budget(window=8_000, reserve=500))


# --- keys in the store ------------------------------------------------------------------------------


def test_create_list_revoke(store: Store) -> None:
    key, info = create_key(store, "ada", "laptop")
    assert KEY.match(key) and info.prefix == key[:8] and info.name == "laptop" and info.active
    assert user_for_key(store, key) == "ada"
    other, _ = create_key(store, "ada", "ci")
    assert other != key
    assert [k.name for k in list_keys(store, "ada")] == ["laptop", "ci"]
    assert list_keys(store, "bob") == []
    with pytest.raises(NotFoundError):
        revoke_key(store, "bob", info.id)  # not bob's key
    assert user_for_key(store, key) == "ada"
    revoked = revoke_key(store, "ada", info.id)
    assert revoked.revoked_at is not None and not revoked.active
    assert revoke_key(store, "ada", info.id).revoked_at == revoked.revoked_at  # idempotent
    assert user_for_key(store, key) is None
    assert user_for_key(store, other) == "ada"
    assert [k.id for k in list_keys(store, "ada", include_revoked=False)] == [list_keys(store, "ada")[1].id]
    with pytest.raises(NotFoundError):
        create_key(store, "nobody", "x")
    with pytest.raises(InputError):
        create_key(store, "ada", "  ")


def test_only_the_hash_is_stored(store: Store) -> None:
    key, _ = create_key(store, "ada", "laptop")
    with store.engine.connect() as connection:
        rows = connection.execute(sa.text("SELECT * FROM api_keys")).all()
    assert len(rows) == 1
    cells = [str(cell) for cell in rows[0]]
    assert not any(key in cell for cell in cells)
    assert not any(key[8:] in cell for cell in cells)  # not even the secret part on its own
    assert hash_key(key) in cells and len(hash_key(key)) == 64


def test_unknown_or_malformed_keys_resolve_to_nobody(store: Store) -> None:
    key, _ = create_key(store, "ada", "laptop")
    assert user_for_key(store, key[:-1]) is None
    assert user_for_key(store, key + "x") is None
    assert user_for_key(store, "") is None
    assert user_for_key(store, "tw_" + "a" * 10_000) is None


def test_last_used_is_written_at_most_once_a_minute(store: Store) -> None:
    key, info = create_key(store, "ada", "laptop")
    assert info.last_used_at is None
    user_for_key(store, key)
    first = list_keys(store, "ada")[0].last_used_at
    assert first is not None
    user_for_key(store, key)
    assert list_keys(store, "ada")[0].last_used_at == first  # within the minute: unchanged
    with store.session(write=True) as session:
        session.execute(sa.update(ApiKey).values(last_used_at=utcnow() - timedelta(minutes=2)))
    user_for_key(store, key)
    later = list_keys(store, "ada")[0].last_used_at
    assert later is not None and later >= first


def test_keys_go_with_their_user(store: Store) -> None:
    key, _ = create_key(store, "bob", "x")
    with store.engine.begin() as connection:
        connection.execute(sa.text("DELETE FROM users WHERE id = 'bob'"))
    assert user_for_key(store, key) is None
    with store.engine.connect() as connection:
        assert connection.execute(sa.text("SELECT count(*) FROM api_keys")).scalar() == 0


# --- the HTTP service -------------------------------------------------------------------------------


def test_keys_required(store: Store) -> None:
    app = create_app(store, engine_of(store), require_key=True)
    key, info = create_key(store, "ada", "laptop")

    async def go() -> None:
        async with client(app) as c:
            missing = await c.get("/api/chats")
            assert missing.status_code == 401
            assert "missing API key" in missing.json()["error"]
            assert "tierwise keys create --user NAME" in missing.text
            assert missing.headers["www-authenticate"] == "Bearer"
            wrong = await c.get("/api/chats", headers=bearer("tw_" + "x" * 40))
            assert wrong.status_code == 401 and "invalid API key" in wrong.json()["error"]
            basic = await c.get("/api/chats", headers={"Authorization": "Basic YWRhOnB3"})
            assert basic.status_code == 401 and "Bearer" in basic.json()["error"]
            empty = await c.get("/api/chats", headers={"Authorization": "Bearer "})
            assert empty.status_code == 401
            made = await c.post("/api/chats", json={"title": "Mine"}, headers=bearer(key))
            assert made.status_code == 201 and made.json()["user_id"] == "ada"
            listed = await c.get("/api/chats", headers={"X-API-Key": key})
            assert [x["title"] for x in listed.json()["chats"]] == ["Mine"]
            lower = await c.get("/api/chats", headers={"authorization": f"bearer {key}"})
            assert lower.status_code == 200
            assert (await c.get("/api/health")).status_code == 200  # no user needed
            revoke_key(store, "ada", info.id)
            revoked = await c.get("/api/chats", headers=bearer(key))
            assert revoked.status_code == 401 and "revoked" in revoked.json()["error"]

    run(go())


def test_local_mode_accepts_any_key_even_with_a_rate_limit(store: Store) -> None:
    # issue 16: the default rate limit switched key checking on, so plain `tierwise serve` answered
    # 401 to the key every OpenAI client sends. Keys are checked only when required.
    app = create_app(store, engine_of(store), require_key=False, rate_limit=100)
    key, _ = create_key(store, "ada", "laptop")

    async def go() -> None:
        async with client(app) as c:
            local = await c.post("/api/chats", json={})
            assert local.status_code == 201 and local.json()["user_id"] == "local"
            for headers in (
                bearer(key),
                bearer("tw_nope"),
                bearer("whatever"),
                {"X-API-Key": "x"},
                {"Authorization": "Basic YWRhOnB3"},
            ):
                made = await c.post("/api/chats", json={}, headers=headers)
                assert made.status_code == 201 and made.json()["user_id"] == "local", headers
            models = await c.get("/v1/models", headers=bearer("sk-anything"))
            assert models.status_code == 200

    run(go())


def test_make_user_of_checks_keys_only_when_required(store: Store) -> None:
    key, _ = create_key(store, "ada", "laptop")
    local = make_user_of(store, require_key=False, local_user_id="local", limiter=RateLimiter(100))
    required = make_user_of(store, require_key=True, local_user_id="local", limiter=RateLimiter(100))
    app = create_app(store, engine_of(store), user_of=local)
    keyed = create_app(store, engine_of(store), user_of=required)

    async def go() -> None:
        async with client(app) as c:
            assert (await c.get("/api/chats", headers=bearer("tw_nope"))).status_code == 200
        async with client(keyed) as c:
            assert (await c.get("/api/chats", headers=bearer("tw_nope"))).status_code == 401
            assert (await c.get("/api/chats", headers=bearer(key))).status_code == 200

    run(go())


def test_default_app_keeps_acting_for_the_local_user(store: Store) -> None:
    app = create_app(store, engine_of(store))

    async def go() -> None:
        async with client(app) as c:
            made = await c.post("/api/chats", json={}, headers=bearer("anything"))
            assert made.status_code == 201 and made.json()["user_id"] == "local"

    run(go())


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("get", "/api/chats/{chat}", None),
        ("patch", "/api/chats/{chat}", {"title": "stolen"}),
        ("delete", "/api/chats/{chat}", None),
        ("post", "/api/chats/{chat}/stop", None),
        ("post", "/api/chats/{chat}/messages", {"content": "hi"}),
        ("get", "/api/chats/{chat}/messages", None),
        ("get", "/api/chats/{chat}/snapshots", None),
        ("get", "/api/chats/{chat}/context", None),
        ("get", "/api/context/status?sessionId={chat}", None),
    ],
)
def test_a_key_cannot_reach_another_users_chat(store: Store, method: str, path: str, body: Any) -> None:
    app = create_app(store, engine_of(store), require_key=True)
    ada, _ = create_key(store, "ada", "a")
    bob, _ = create_key(store, "bob", "b")

    async def go() -> None:
        async with client(app) as c:
            chat = (await c.post("/api/chats", json={"title": "Bob's"}, headers=bearer(bob))).json()["id"]
            response = await c.request(method, path.format(chat=chat), json=body, headers=bearer(ada))
            assert response.status_code == 404, response.text
            assert "no chat" in response.json()["error"] and "bob" not in response.text.lower()
            assert (await c.get("/api/chats", headers=bearer(ada))).json()["chats"] == []
            mine = await c.get(f"/api/chats/{chat}", headers=bearer(bob))
            assert mine.status_code == 200 and mine.json()["title"] == "Bob's"  # untouched

    run(go())


def test_rate_limit_per_user_with_retry_after(store: Store) -> None:
    now = [1000.0]
    limiter = RateLimiter(6, burst=2, clock=lambda: now[0])  # one token every 10 s
    user_of = make_user_of(store, require_key=True, local_user_id="local", limiter=limiter)
    app = create_app(store, engine_of(store), user_of=user_of)
    ada, _ = create_key(store, "ada", "a")
    bob, _ = create_key(store, "bob", "b")

    async def go() -> None:
        async with client(app) as c:
            for _ in range(2):
                assert (await c.get("/api/chats", headers=bearer(ada))).status_code == 200
            over = await c.get("/api/chats", headers=bearer(ada))
            assert over.status_code == 429
            assert over.headers["retry-after"] == "10"
            assert over.json()["error"] == "rate limit: 6 requests per minute; retry after 10 s"
            assert (await c.get("/api/chats", headers=bearer(bob))).status_code == 200  # per user
            now[0] += 4.5
            again = await c.get("/api/chats", headers=bearer(ada))
            assert again.status_code == 429 and again.headers["retry-after"] == "6"  # 5.5 s, rounded up
            now[0] += 6.0
            assert (await c.get("/api/chats", headers=bearer(ada))).status_code == 200
            assert (await c.get("/api/chats", headers=bearer(ada))).status_code == 429
            unauth = await c.get("/api/chats")
            assert unauth.status_code == 401  # auth before the limit: no bucket for nobody

    run(go())


def test_create_app_rate_limit(store: Store) -> None:
    app = create_app(store, engine_of(store), rate_limit=1)

    async def go() -> None:
        async with client(app) as c:
            assert (await c.get("/api/chats")).status_code == 200
            over = await c.get("/api/chats")
            assert over.status_code == 429
            assert 1 <= int(over.headers["retry-after"]) <= 60

    run(go())


def test_rate_limiter_buckets() -> None:
    now = [0.0]
    limiter = RateLimiter(60, burst=3, clock=lambda: now[0])
    assert [limiter.check("a") for _ in range(3)] == [None, None, None]
    assert limiter.check("a") == pytest.approx(1.0)
    now[0] += 100.0  # refills, but never beyond the burst
    assert [limiter.check("a") for _ in range(4)][-1] == pytest.approx(1.0)
    assert RateLimiter(10).burst == 10
    for bad in (0, -1, True):
        with pytest.raises(ValueError):
            RateLimiter(bad)
    with pytest.raises(ValueError):
        RateLimiter(1, burst=0)


def test_rate_limit_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TIERWISE_RATE_LIMIT", raising=False)
    assert rate_limit_from_env() == 600 and rate_limit_from_env(local=True) is None
    agent = RateLimiter(600)  # with keys: an agent loop's 300 calls in a burst are all let through
    assert all(agent.check("agent") is None for _ in range(300))
    monkeypatch.setenv("TIERWISE_RATE_LIMIT", "30")
    assert rate_limit_from_env(local=True) == 30
    monkeypatch.setenv("TIERWISE_RATE_LIMIT", "30")
    assert rate_limit_from_env() == 30
    monkeypatch.setenv("TIERWISE_RATE_LIMIT", "off")
    assert rate_limit_from_env() is None
    monkeypatch.setenv("TIERWISE_RATE_LIMIT", "lots")
    with pytest.raises(UserError, match="TIERWISE_RATE_LIMIT"):
        rate_limit_from_env()


# --- the CLI ----------------------------------------------------------------------------------------


def _cli(*args: str) -> Any:
    result = RUNNER.invoke(cli_app, list(args))
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def test_cli_create_list_revoke(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'k.db'}"
    made = _cli("keys", "create", "--user", "carol", "--name", "laptop", "--db", db)
    assert made.exit_code == 0, made.output
    key = made.stdout.strip()
    assert KEY.match(key) and "not shown again" not in made.stdout
    assert "only time the key is shown" in made.stderr
    listed = _cli("keys", "list", "--db", db)
    assert listed.exit_code == 0 and "carol" in listed.stdout and key[:8] in listed.stdout
    assert key not in listed.output and "active" in listed.stdout
    key_id = listed.stdout.split()[0]
    with Store.open(db) as store:
        assert store.get_user("carol").name == "carol"
        assert user_for_key(store, key) == "carol"
    second = _cli("keys", "create", "--user", "carol", "--db", db)  # the user exists: reused
    assert second.exit_code == 0
    assert len(_cli("keys", "list", "--user", "carol", "--db", db).stdout.splitlines()) == 2
    revoked = _cli("keys", "revoke", key_id, "--db", db)
    assert revoked.exit_code == 0 and "revoked" in revoked.stdout
    assert "revoked" in _cli("keys", "list", "--user", "carol", "--db", db).stdout
    with Store.open(db) as store:
        assert user_for_key(store, key) is None


def test_cli_errors(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'k.db'}"
    for args in (
        ("keys", "revoke", "nope", "--db", db),
        ("keys", "list", "--user", "nobody", "--db", db),
        ("keys", "create", "--user", "x" * 40, "--db", db),
        ("keys", "create", "--user", "dan", "--name", " ", "--db", db),
    ):
        result = _cli(*args)
        assert result.exit_code == 2, (args, result.output)
        assert result.stderr.startswith("error: ") and len(result.stderr.strip().splitlines()) == 1
    with Store.open(db) as store:
        with pytest.raises(NotFoundError):
            store.get_user("dan")  # a refused key creates no user
        store.create_user("dan", user_id="dan")
    empty = _cli("keys", "list", "--user", "dan", "--db", db)
    assert empty.exit_code == 0 and "no API keys" in empty.stderr and empty.stdout == ""
    made = _cli("keys", "create", "--user", "erin", "--db", db)
    assert made.exit_code == 0
    key_id = _cli("keys", "list", "--db", db).stdout.split()[0]
    wrong_user = _cli("keys", "revoke", key_id, "--user", "dan", "--db", db)
    assert wrong_user.exit_code == 2 and "no API key" in wrong_user.stderr
    assert "active" in _cli("keys", "list", "--user", "erin", "--db", db).stdout
