"""Usage and cost per chat and per user: figures from the store's records, unknown prices said, by user."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from fastapi import FastAPI

from tierwise.budget import Budget
from tierwise.chat.engine import ChatEngine
from tierwise.providers.pricing import Price
from tierwise.providers.testing import ScriptedModel
from tierwise.server import create_app
from tierwise.server.keys import create_key
from tierwise.server.usage import month_start
from tierwise.store import Store
from tierwise.store.models import AuditEntry

PRICES = {"priced-model": Price(input=2.0, output=10.0)}  # USD per 1M tokens


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def client(app: FastAPI) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")


def app_for(store: Store, model: str, **kwargs: Any) -> tuple[FastAPI, ScriptedModel]:
    scripted = ScriptedModel(model=model)
    engine = ChatEngine(store, scripted, budget=Budget(window=8_000, reserve=500), prices=PRICES)
    return create_app(store, engine, **kwargs), scripted


def usage_event(body: str) -> dict[str, Any]:
    """The ``usage`` event of an SSE turn."""
    lines = body.splitlines()
    at = lines.index("event: usage")
    data: dict[str, Any] = json.loads(lines[at + 1].split(":", 1)[1])
    return data


async def turn(c: httpx.AsyncClient, chat: str, text: str, **kwargs: Any) -> dict[str, Any]:
    response = await c.post(f"/api/chats/{chat}/messages", json={"content": text}, **kwargs)
    assert response.status_code == 200, response.text
    return usage_event(response.text)


def test_a_chats_usage_is_what_its_turns_recorded() -> None:
    store = Store.open("sqlite://")
    app, model = app_for(store, "priced-model")
    model.enqueue("The venue is booked.", "Invites go out Friday.")

    async def go() -> None:
        async with client(app) as c:
            chat = (await c.post("/api/chats", json={"title": "Offsite"})).json()["id"]
            empty = (await c.get(f"/api/chats/{chat}/usage")).json()
            assert empty["tokens"] == 0 and empty["dollars"] == 0.0 and empty["price_known"] is True
            assert empty["turns"] == 0 and empty["model_calls"] == 0 and empty["last_updated"] is None
            first = await turn(c, chat, "Is the venue booked?")
            second = await turn(c, chat, "And the invites?")
            usage = (await c.get(f"/api/chats/{chat}/usage")).json()
            prompt = first["prompt_tokens"] + second["prompt_tokens"]
            completion = first["completion_tokens"] + second["completion_tokens"]
            assert usage["prompt_tokens"] == prompt and usage["completion_tokens"] == completion
            assert usage["tokens"] == prompt + completion == store.get_chat("local", chat).total_tokens_used
            assert usage["dollars"] == pytest.approx(first["dollars"] + second["dollars"], abs=1e-6)
            assert usage["dollars"] == pytest.approx((prompt * 2.0 + completion * 10.0) / 1e6, abs=1e-6)
            assert usage["price_known"] is True and usage["unpriced_tokens"] == 0
            assert usage["turns"] == 2 and usage["model_calls"] == 2
            assert usage["models"] == ["priced-model"] and usage["notes"] == []
            assert usage["title"] == "Offsite" and usage["context"]["type"] == "global"
            assert datetime.fromisoformat(usage["last_updated"]) <= datetime.now(UTC)

    run(go())
    store.close()


def test_an_unknown_price_is_null_and_flagged_never_zero() -> None:
    store = Store.open("sqlite://")
    app, model = app_for(store, "my-local-model")
    model.enqueue("Done.")

    async def go() -> None:
        async with client(app) as c:
            chat = (await c.post("/api/chats", json={})).json()["id"]
            spent = await turn(c, chat, "Hello")
            assert spent["price_known"] is False
            usage = (await c.get(f"/api/chats/{chat}/usage")).json()
            assert usage["tokens"] > 0 and usage["dollars"] is None and usage["price_known"] is False
            assert usage["unpriced_tokens"] == usage["tokens"]
            assert usage["unpriced_models"] == ["my-local-model"]
            assert "my-local-model" in usage["notes"][0] and "TIERWISE_PRICES" in usage["notes"][0]
            mine = (await c.get("/api/usage")).json()
            assert mine["month"]["dollars"] is None and mine["all_time"]["price_known"] is False

    run(go())
    store.close()


def test_the_users_month_all_time_and_top_chats() -> None:
    store = Store.open("sqlite://")
    app, model = app_for(store, "priced-model")
    model.enqueue("One.", "Two.", "Three.", "Four.")

    async def go() -> None:
        async with client(app) as c:
            big = (await c.post("/api/chats", json={"title": "Big"})).json()["id"]
            small = (await c.post("/api/chats", json={"title": "Small"})).json()["id"]
            gone = (await c.post("/api/chats", json={"title": "Gone"})).json()["id"]
            await c.post("/api/chats", json={"title": "Unused"})
            spent = [await turn(c, big, "A long question " * 40), await turn(c, big, "more")]
            spent.append(await turn(c, small, "hi"))
            spent.append(await turn(c, gone, "hello"))
            total = sum(u["prompt_tokens"] + u["completion_tokens"] for u in spent)
            dollars = sum(u["dollars"] for u in spent)
            gone_tokens = spent[3]["prompt_tokens"] + spent[3]["completion_tokens"]
            assert (await c.delete(f"/api/chats/{gone}")).status_code == 204

            # The first turn in "big" happened last month: in all time, not in this month.
            old = month_start() - timedelta(days=3)
            with store.session(write=True) as session:
                first = session.scalars(
                    sa.select(AuditEntry)
                    .where(AuditEntry.chat_id == big, AuditEntry.event == "turn")
                    .order_by(AuditEntry.created_at)
                ).first()
                assert first is not None
                first.created_at = old
            old_tokens = spent[0]["prompt_tokens"] + spent[0]["completion_tokens"]

            mine = (await c.get("/api/usage", params={"top": 2})).json()
            assert mine["all_time"]["tokens"] == total and mine["all_time"]["turns"] == 4
            assert mine["all_time"]["dollars"] == pytest.approx(dollars, abs=1e-6)
            assert mine["all_time"]["model_calls"] == 4
            assert mine["month"]["tokens"] == total - old_tokens and mine["month"]["turns"] == 3
            assert mine["month"]["dollars"] == pytest.approx(dollars - spent[0]["dollars"], abs=1e-6)
            assert mine["month"]["start"] == month_start().isoformat().replace("+00:00", "Z")
            assert mine["deleted_chats"]["tokens"] == gone_tokens and mine["deleted_chats"]["turns"] == 1
            assert [x["title"] for x in mine["chats"]] == ["Big", "Small"] and mine["chat_count"] == 2
            assert mine["chats"][0]["turns"] == 2 and mine["chats"][0]["price_known"] is True
            assert mine["notes"] == []
            one = await c.get("/api/usage", params={"top": 1})
            assert len(one.json()["chats"]) == 1
            assert (await c.get("/api/usage", params={"top": 0})).status_code == 422

    run(go())
    store.close()


def test_tokens_a_chat_counted_without_turn_records_are_reported_as_unrecorded() -> None:
    store = Store.open("sqlite://")
    app, _ = app_for(store, "priced-model")
    legacy = store.create_chat("local", title="API old client", context_type="api", entity_id="k")
    store.add_tokens_used("local", legacy.id, 500)

    async def go() -> None:
        async with client(app) as c:
            usage = (await c.get(f"/api/chats/{legacy.id}/usage")).json()
            assert usage["tokens"] == 500 and usage["unrecorded_tokens"] == 500
            assert usage["dollars"] is None and usage["price_known"] is False and usage["turns"] == 0
            assert "without per-turn records" in usage["notes"][0]
            mine = (await c.get("/api/usage")).json()
            assert mine["all_time"]["tokens"] == 500 and mine["month"]["tokens"] == 0
            assert mine["chats"][0]["context"]["type"] == "api"
            assert "not in this month's" in mine["notes"][0]

    run(go())
    store.close()


def test_usage_is_scoped_by_user() -> None:
    store = Store.open("sqlite://")
    store.create_user("ada", user_id="ada")
    store.create_user("bob", user_id="bob")
    app, model = app_for(store, "priced-model", require_key=True)
    ada, _ = create_key(store, "ada", "a")
    bob, _ = create_key(store, "bob", "b")
    model.enqueue("Bob's answer.")

    async def go() -> None:
        async with client(app) as c:
            as_ada, as_bob = {"Authorization": f"Bearer {ada}"}, {"Authorization": f"Bearer {bob}"}
            chat = (await c.post("/api/chats", json={}, headers=as_bob)).json()["id"]
            await turn(c, chat, "hi", headers=as_bob)
            stolen = await c.get(f"/api/chats/{chat}/usage", headers=as_ada)
            assert stolen.status_code == 404 and "no chat" in stolen.json()["error"]
            assert "bob" not in stolen.text.lower()
            adas = (await c.get("/api/usage", headers=as_ada)).json()
            assert adas["all_time"]["tokens"] == 0 and adas["chats"] == []
            bobs = (await c.get("/api/usage", headers=as_bob)).json()
            assert bobs["all_time"]["tokens"] > 0 and [x["chat_id"] for x in bobs["chats"]] == [chat]
            assert (await c.get("/api/usage")).status_code == 401

    run(go())
    store.close()


@pytest.mark.parametrize(
    ("path", "status", "needle"),
    [
        ("/api/chats/nope/usage", 404, "no chat"),
        ("/api/usage?top=101", 422, "top"),
        ("/api/usage?top=many", 422, "top"),
    ],
)
def test_bad_usage_requests_are_json_errors(path: str, status: int, needle: str) -> None:
    store = Store.open("sqlite://")
    app, _ = app_for(store, "priced-model")

    async def go() -> None:
        async with client(app) as c:
            response = await c.get(path)
            assert response.status_code == status and needle in response.json()["error"]
            assert "Traceback" not in response.text

    run(go())
    store.close()


def test_spend_sums_on_each_backend(store: Store) -> None:
    """The store's sums (JSON paths in SQL) on SQLite and PostgreSQL."""
    user = store.create_user("ada").id
    other = store.create_user("bob").id
    chat = store.create_chat(user).id

    def record(who: str, model: str, prompt: int, completion: int, dollars: float, known: bool) -> None:
        usage = {"prompt_tokens": prompt, "completion_tokens": completion, "dollars": dollars}
        store.audit(
            who, "turn", chat_id=chat, details={"model": model, "usage": {**usage, "price_known": known}}
        )

    record(user, "m", 100, 10, 0.5, True)
    record(user, "m", 200, 20, 0.25, True)
    record(user, "x", 7, 3, 0.0, False)
    record(other, "m", 1000, 1000, 9.0, True)
    store.audit(user, "turn", chat_id=chat, details={"model": "m", "usage": None})  # refused: no usage
    store.audit(user, "pack", chat_id=chat, details={})
    groups = sorted(store.spend_groups(user), key=lambda g: g.model or "")
    assert [(g.model, g.price_known, g.turns, g.prompt_tokens, g.completion_tokens) for g in groups] == [
        ("m", True, 2, 300, 30),
        ("x", False, 1, 7, 3),
    ]
    assert groups[0].dollars == pytest.approx(0.75) and groups[0].last_at.tzinfo is not None
    assert store.spend_groups(user, chat_id="elsewhere") == []
    assert store.spend_groups(user, since=datetime.now(UTC) + timedelta(minutes=1)) == []
    counts = store.audit_counts(user, "pack")
    assert [(c.chat_id, c.count) for c in counts] == [(chat, 1)]
    assert store.audit_counts(user, "pack", since=datetime.now(UTC) + timedelta(minutes=1)) == []
