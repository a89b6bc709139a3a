"""Prompt caching in the status API, the usage routes and the OpenAI-compatible endpoint's records."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from tierwise.budget import Budget
from tierwise.chat.engine import ChatEngine
from tierwise.providers.pricing import Price
from tierwise.providers.testing import ScriptedModel
from tierwise.server import create_app
from tierwise.store import Store

PRICES = {"cached-model": Price(input=2.0, output=10.0, cached_input=0.5)}  # USD per 1M tokens


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def client(app: FastAPI) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")


def app_for(store: Store, model: ScriptedModel) -> FastAPI:
    engine = ChatEngine(store, model, budget=Budget(window=8_000, reserve=500), prices=PRICES)
    return create_app(store, engine)


async def turn(c: httpx.AsyncClient, chat: str, text: str) -> dict[str, Any]:
    response = await c.post(f"/api/chats/{chat}/messages", json={"content": text})
    assert response.status_code == 200, response.text
    lines = response.text.splitlines()
    data: dict[str, Any] = json.loads(lines[lines.index("event: usage") + 1].split(":", 1)[1])
    return data


def test_the_status_shows_the_cache_hit_share_and_the_dollars_saved() -> None:
    store = Store.open("sqlite://")
    model = ScriptedModel("Lisbon, in May.", "About 12,000 euros.", model="cached-model", cache="prefix")
    app = app_for(store, model)

    async def go() -> None:
        async with client(app) as c:
            chat = (await c.post("/api/chats", json={})).json()["id"]
            empty = (await c.get("/api/context/status", params={"sessionId": chat})).json()["cache"]
            assert empty["hitShare"] is None and empty["source"] is None
            assert empty["lastPackPrefixTokens"] is None and empty["savedDollars"] == 0.0
            first = await turn(c, chat, "Where is the offsite?")
            second = await turn(c, chat, "And the budget?")
            assert first["cached_tokens"] == 0 and second["cached_tokens"] > 0
            assert second["saved_dollars"] == pytest.approx(second["cached_tokens"] * 1.5 / 1e6, abs=1e-6)
            status = (await c.get("/api/context/status", params={"sessionId": chat})).json()
            cache = status["cache"]
            prompt = first["prompt_tokens"] + second["prompt_tokens"]
            assert cache["source"] == "provider" and cache["promptTokens"] == prompt
            assert cache["cachedTokens"] == second["cached_tokens"]
            assert cache["hitShare"] == round(second["cached_tokens"] / prompt, 4)
            assert cache["savedDollars"] == pytest.approx(second["saved_dollars"], abs=1e-6)
            assert cache["expectedTokens"] == second["prefix_tokens"] > 0
            assert cache["lastPackPrefixTokens"] == second["prefix_tokens"]
            assert status["snapshot"]["tier_breakdown"]["total"]["prefix_tokens"] == second["prefix_tokens"]
            usage = (await c.get(f"/api/chats/{chat}/usage")).json()
            assert usage["cache"]["hit_share"] == cache["hitShare"] and usage["cache"]["source"] == "provider"
            assert usage["cache"]["saved_dollars"] == cache["savedDollars"]
            assert usage["dollars"] == pytest.approx(first["dollars"] + second["dollars"], abs=1e-6)
            detail = (await c.get(f"/api/chats/{chat}/context")).json()
            assert detail["pack"]["prefix_tokens"] == second["prefix_tokens"]
            assert [t["cached_tokens"] for t in detail["turns"]] == [0, second["cached_tokens"]]
            assert [t["prefix_tokens"] for t in detail["turns"]] == [None, second["prefix_tokens"]]
            mine = (await c.get("/api/usage")).json()
            assert mine["month"]["cache"]["cached_tokens"] == second["cached_tokens"]

    run(go())
    store.close()


def test_without_cached_tokens_from_the_model_the_share_is_expected() -> None:
    store = Store.open("sqlite://")
    app = app_for(store, ScriptedModel("One.", "Two.", model="cached-model"))

    async def go() -> None:
        async with client(app) as c:
            chat = (await c.post("/api/chats", json={})).json()["id"]
            first = await turn(c, chat, "Hello")
            one = (await c.get("/api/context/status", params={"sessionId": chat})).json()["cache"]
            assert one["source"] is None and one["hitShare"] == 0.0  # nothing repeated yet
            second = await turn(c, chat, "And then?")
            cache = (await c.get("/api/context/status", params={"sessionId": chat})).json()["cache"]
            prompt = first["prompt_tokens"] + second["prompt_tokens"]
            assert cache["source"] == "expected" and cache["cachedTokens"] == 0
            assert cache["hitShare"] == round(second["prefix_tokens"] / prompt, 4) > 0
            assert cache["savedDollars"] == 0.0

    run(go())
    store.close()


def test_the_openai_endpoint_records_cached_tokens_and_the_expected_prefix() -> None:
    store = Store.open("sqlite://")
    model = ScriptedModel("One.", "Two.", model="cached-model", cache="prefix")
    app = app_for(store, model)
    system = {"role": "system", "content": "You plan offsites. Keep answers short."}

    async def go() -> None:
        async with client(app) as c:
            history: list[dict[str, Any]] = [system, {"role": "user", "content": "First?"}]
            headers = {"X-Tierwise-Session": "s"}
            first = await c.post("/v1/chat/completions", json={"messages": history}, headers=headers)
            assert first.json()["usage"]["prompt_tokens_details"] == {"cached_tokens": 0}
            history += [{"role": "assistant", "content": "One."}, {"role": "user", "content": "Second?"}]
            second = await c.post("/v1/chat/completions", json={"messages": history}, headers=headers)
            cached = second.json()["usage"]["prompt_tokens_details"]["cached_tokens"]
            assert cached > 0
            await app.state.openai_sessions.drain()
            (chat,) = store.list_chats("local", context_type="api")
            turns = store.list_audit("local", chat_id=chat.id, event="turn")
            usage = next(t.details["usage"] for t in turns if t.details["usage"]["cached_tokens"])
            assert usage["cached_tokens"] == cached and usage["prefix_tokens"] > 0
            assert usage["saved_dollars"] == pytest.approx(cached * 1.5 / 1e6, abs=1e-6)
            status = (await c.get("/api/context/status", params={"sessionId": chat.id})).json()
            assert status["cache"]["source"] == "provider" and status["cache"]["cachedTokens"] == cached

    run(go())
    store.close()
