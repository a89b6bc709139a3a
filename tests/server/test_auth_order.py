"""Issue 32's small auth findings: wrong keys are throttled per address; auth answers before validation.

Before: 30 wrong keys got 30 × 401, and ``GET /api/context/status`` without a key got a 422 (its
``sessionId`` checked first) instead of the 401.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tierwise.budget import Budget
from tierwise.chat.engine import ChatEngine
from tierwise.providers.testing import ScriptedModel
from tierwise.server import create_app
from tierwise.server.auth import FAILED_KEYS_BURST
from tierwise.server.keys import create_key
from tierwise.store import Store


@pytest.fixture
def store() -> Iterator[Store]:
    opened = Store.open("sqlite://")
    opened.create_user("ada", user_id="ada")
    yield opened
    opened.close()


def _app(store: Store, **options: Any) -> Any:
    engine = ChatEngine(store, ScriptedModel(), budget=Budget(window=8_000, reserve=500))
    return create_app(store, engine, **options)


def _client(app: Any, address: str = "203.0.113.7") -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app, client=(address, 50_000))
    return httpx.AsyncClient(transport=transport, base_url="http://test")


def test_wrong_keys_from_one_address_are_throttled(store: Store) -> None:
    app = _app(store, require_key=True)
    key, _ = create_key(store, "ada", "laptop")

    async def go() -> None:
        async with _client(app) as guesser, _client(app, "198.51.100.4") as other:
            statuses = []
            for i in range(30):
                wrong = {"Authorization": f"Bearer tw_{'x' * 39}{i % 10}"}
                answer = await guesser.get("/api/chats", headers=wrong)
                statuses.append(answer.status_code)
            assert statuses == [401] * FAILED_KEYS_BURST + [429] * (30 - FAILED_KEYS_BURST)
            assert int(answer.headers["Retry-After"]) >= 1 and "wrong API keys" in answer.json()["error"]
            right = {"Authorization": f"Bearer {key}"}
            assert (await guesser.get("/api/chats", headers=right)).status_code == 429  # still waiting
            assert (await other.get("/api/chats", headers=right)).status_code == 200  # another address
            assert (await other.get("/api/chats")).status_code == 401  # no key: not a guess, not counted
            for _ in range(FAILED_KEYS_BURST):
                assert (await other.get("/api/chats", headers={"X-API-Key": "nope"})).status_code == 401

    asyncio.run(go())


def test_local_mode_throttles_no_key(store: Store) -> None:
    app = _app(store)

    async def go() -> None:
        async with _client(app, "127.0.0.1") as c:
            for i in range(30):
                answer = await c.get("/api/chats", headers={"Authorization": f"Bearer wrong-{i}"})
                assert answer.status_code == 200

    asyncio.run(go())


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("GET", "/api/context/status", None),  # sessionId missing: was a 422
        ("GET", "/api/context/status?sessionId=", None),
        ("POST", "/api/chats", b"{not json"),
        ("POST", "/api/chats", b'{"token_limit": "many"}'),
        ("PATCH", "/api/chats/abc", b'{"nope": 1}'),
    ],
)
def test_without_a_key_a_malformed_api_request_is_a_401_not_a_422(
    store: Store, method: str, path: str, body: bytes | None
) -> None:
    app = _app(store, require_key=True)
    key, _ = create_key(store, "ada", "laptop")

    async def go() -> None:
        async with _client(app) as c:
            headers = {"Content-Type": "application/json"}
            refused = await c.request(method, path, content=body, headers=headers)
            assert refused.status_code == 401, refused.text
            assert refused.headers["WWW-Authenticate"] == "Bearer"
            with_key = await c.request(method, path, content=body, headers={**headers, "X-API-Key": key})
            assert with_key.status_code in (400, 404, 422), with_key.text  # with a key: what is wrong

    asyncio.run(go())
