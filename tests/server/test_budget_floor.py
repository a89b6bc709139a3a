"""A chat's budget cannot be set below what its guaranteed layers need (issue 32).

``PATCH token_limit=1000`` used to answer 200, and then every turn with tools failed ("the
guaranteed layers need 1216 tokens but the budget is 1000"). Now the smallest budget that works
is checked when a chat is made or changed, named in the 422, and documented as the minimum.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tierwise.budget import Budget
from tierwise.chat.engine import ChatEngine
from tierwise.chat.floor import budget_floor
from tierwise.providers.testing import ScriptedModel, tool_call
from tierwise.server import create_app
from tierwise.store import Store
from tierwise.tools import tool

_LONG = " ".join(f"Detail {i}: what the field means and when to use it." for i in range(25))


def _tool(name: str) -> Any:
    def run(query: str, limit: int = 10) -> list[str]:
        return [f"{name}: {query}"][:limit]

    run.__name__ = name
    run.__doc__ = f"Look things up in {name}. {_LONG}"
    return tool(tier="list")(run)


TOOLS = [_tool(f"search_{kind}") for kind in ("tasks", "notes", "projects", "events")]


@pytest.fixture
def served() -> Iterator[tuple[ChatEngine, Any]]:
    store = Store.open("sqlite://")
    engine = ChatEngine(store, ScriptedModel(), tools=TOOLS, budget=Budget(window=16_000, reserve=1_000))
    yield engine, create_app(store, engine)
    store.close()


def _client(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")


def _done(body: str) -> dict[str, Any]:
    data = [json.loads(line[5:]) for line in body.splitlines() if line.startswith("data:")]
    done: dict[str, Any] = data[-1]
    return done


def test_a_budget_below_the_guaranteed_layers_is_refused_and_the_smallest_works(
    served: tuple[ChatEngine, Any],
) -> None:
    engine, app = served
    least = budget_floor(engine)
    assert 1_000 < least < engine.budget.available  # these tools alone take more than 1,000
    engine.provider.enqueue(tool_call("search_tasks", query="venue"), "One task: book the venue.")  # type: ignore[attr-defined]

    async def go() -> None:
        async with _client(app) as c:
            chat = (await c.post("/api/chats", json={})).json()["id"]
            refused = await c.patch(f"/api/chats/{chat}", json={"token_limit": 1_000})
            assert refused.status_code == 422
            assert f"the smallest budget that works is {least:,} tokens" in refused.json()["error"]
            assert (await c.get(f"/api/chats/{chat}")).json()["token_limit"] == engine.budget.available
            made = await c.post("/api/chats", json={"token_limit": least - 1})
            assert made.status_code == 422 and f"{least:,}" in made.json()["error"]
            assert (await c.patch(f"/api/chats/{chat}", json={"token_limit": least})).status_code == 200
            turn = await c.post(f"/api/chats/{chat}/messages", json={"content": "What is left?"})
            assert _done(turn.text)["reason"] == "answer", turn.text  # tools offered, called, answered
            schema = (await c.get("/openapi.json")).json()["components"]["schemas"]
            for name in ("NewChat", "Rename"):
                field = schema[name]["properties"]["token_limit"]
                branch = next(b for b in field.get("anyOf", [field]) if b.get("type") == "integer")
                assert branch["minimum"] == least and branch["maximum"] == engine.budget.available
                assert f"at least {least:,}" in field["description"]

    asyncio.run(go())


def test_what_was_accepted_before_failed_every_turn(served: tuple[ChatEngine, Any]) -> None:
    """The budget the API used to accept fails every turn with these tools; the floor grows with them."""
    engine, app = served
    more_tools = ChatEngine(engine.store, ScriptedModel(), tools=[*TOOLS, _tool("search_files")])
    assert budget_floor(more_tools) > budget_floor(engine)  # each tool's definition counts
    user = app.state.local_user
    chat = engine.store.create_chat(user, token_limit=1_000)  # what PATCH used to accept
    engine.provider.enqueue("Fine.")  # type: ignore[attr-defined]

    async def go() -> None:
        async with _client(app) as c:
            turn = await c.post(f"/api/chats/{chat.id}/messages", json={"content": "What is left?"})
            assert _done(turn.text)["reason"] == "error"
            assert "the guaranteed layers need" in turn.text

    asyncio.run(go())
