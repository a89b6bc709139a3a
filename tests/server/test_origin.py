"""Local mode refuses other pages (Origin) and other names (Host): CSRF and DNS rebinding get 403."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tierwise.budget import Budget
from tierwise.chat.engine import ChatEngine
from tierwise.providers.testing import ScriptedModel
from tierwise.server import create_app
from tierwise.store import Store

pytestmark = pytest.mark.anyio

LOOPBACK = ["127.0.0.1", "localhost", "::1"]


@pytest.fixture
def store() -> Iterator[Store]:
    opened = Store.open("sqlite://")
    yield opened
    opened.close()


def client(store: Store, *, base: str = "http://127.0.0.1:8000", **options: object) -> httpx.AsyncClient:
    engine = ChatEngine(store, ScriptedModel("Hi."), budget=Budget(window=4_000, reserve=500))
    app = create_app(store, engine, **options)  # type: ignore[arg-type]
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=base)


async def test_another_pages_origin_is_refused_with_403_and_nothing_runs(store: Store) -> None:
    async with client(store, hosts=LOOPBACK) as http:
        evil = {"Origin": "https://evil.example"}
        made = await http.post("/api/chats", json={}, headers=evil)
        assert made.status_code == 403
        assert "evil.example" in made.json()["error"] and "--require-key" in made.json()["error"]
        spent = await http.post(
            "/v1/chat/completions",
            content='{"messages": [{"role": "user", "content": "Hi"}]}',
            headers={**evil, "content-type": "text/plain"},
        )
        assert spent.status_code == 403 and spent.json()["error"]["code"] == "forbidden"
        assert (await http.get("/api/chats")).json()["chats"] == []  # nothing was created


async def test_the_servers_own_page_and_programs_without_origin_are_served(store: Store) -> None:
    async with client(store, hosts=LOOPBACK) as http:
        own = await http.post("/api/chats", json={}, headers={"Origin": "http://127.0.0.1:8000"})
        assert own.status_code == 201
        assert (await http.get("/api/chats")).status_code == 200  # no Origin: curl, SDKs
        models = await http.get("/v1/models")
        assert models.status_code == 200
    async with client(store, base="http://localhost:8000", hosts=LOOPBACK) as http:
        assert (await http.get("/api/chats", headers={"Origin": "http://localhost:8000"})).status_code == 200


async def test_a_name_that_rebinds_to_loopback_is_refused(store: Store) -> None:
    async with client(store, base="http://rebind.evil.example:8000", hosts=LOOPBACK) as http:
        same_origin = {"Origin": "http://rebind.evil.example:8000"}  # what a rebinding page sends
        refused = await http.get("/api/chats", headers=same_origin)
    assert refused.status_code == 403 and "rebind.evil.example" in refused.json()["error"]


async def test_the_null_origin_of_a_sandboxed_page_is_refused(store: Store) -> None:
    async with client(store) as http:
        assert (await http.get("/api/chats", headers={"Origin": "null"})).status_code == 403


async def test_with_keys_required_the_keys_protect_and_origin_is_not_checked(store: Store) -> None:
    async with client(store, require_key=True) as http:
        response = await http.get("/api/chats", headers={"Origin": "https://app.example"})
    assert response.status_code == 401  # asked for a key, not refused for its origin
