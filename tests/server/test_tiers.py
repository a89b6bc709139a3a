"""Seed 004's view (issue 17, item 5): tiers 1–4 in snapshots and the status API, the pack's share of
its budget, where the chat is, the strategy in force and why, a live view while a turn runs,
compaction steps that changed something, and dollar limits for models without a price."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tierwise.budget import Budget
from tierwise.chat.costguard import CostGuard, Limits, MemoryLedger
from tierwise.chat.engine import ChatEngine
from tierwise.packing import ContextLayer, pack
from tierwise.packing.tiers import TIERS, tier_breakdown
from tierwise.providers import TextDelta
from tierwise.providers.pricing import Price
from tierwise.providers.testing import Script, ScriptedModel
from tierwise.server import create_app
from tierwise.store import Store


def _client(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")


@pytest.fixture
def store() -> Iterator[Store]:
    db = Store.open("sqlite://")
    yield db
    db.close()


def _engine(store: Store, model: ScriptedModel, **kw: Any) -> ChatEngine:
    return ChatEngine(store, model, budget=Budget(window=8_000, reserve=500), **kw)


def test_every_layer_kind_has_one_tier_and_the_breakdown_sums_the_pack() -> None:
    kinds = [k for t in TIERS for k in t.kinds]
    assert len(kinds) == len(set(kinds))
    assert set(kinds) >= {"system", "tools", "input", "narrative", "headers", "profile", "location"}
    layers = [
        ContextLayer("system", "system", "You are helpful."),
        ContextLayer("input", "input", [{"role": "user", "content": "What is due?"}]),
        ContextLayer("location", "location", "Project Apollo: launch on Friday."),
        ContextLayer("related", "related", "Note: venue booked."),
        ContextLayer("retrieved", "retrieved", "Earlier: the budget is 4,000 euros."),
        ContextLayer(
            "history",
            "history",
            [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}],
        ),
    ]
    report = pack(layers, Budget(window=2_000)).report
    tiers = tier_breakdown(report)
    assert [t["tier"] for t in tiers] == [1, 2, 3, 4]
    assert [t["name"] for t in tiers] == ["core", "workspace", "referenced", "history"]
    assert tiers[0]["layers"] == ["system", "input"] or set(tiers[0]["layers"]) == {"system", "input"}
    assert set(tiers[1]["layers"]) == {"location", "related"} and tiers[1]["items"] == 2
    assert tiers[2]["layers"] == ["retrieved"] and tiers[3]["layers"] == ["history"]
    assert sum(t["tokens"] for t in tiers) == sum(r.tokens for r in report.layers)
    assert sum(t["tokens"] for t in tiers) <= report.total_tokens  # framing is the pack's, no tier's
    assert all(t["tokens"] > 0 and 0 < t["percent"] < 100 for t in tiers)


def test_status_gives_tiers_budget_percent_context_and_strategy_without_spending_limits(store: Store) -> None:
    """Before: ``budgetPercent`` was 0.0 without a spending limit; no tiers, context or strategy."""
    model = ScriptedModel()
    model.enqueue("Two tasks are due.")
    engine = _engine(store, model)
    app = create_app(store, engine)

    async def go() -> None:
        async with _client(app) as c:
            chat = (await c.post("/api/chats", json={})).json()["id"]
            before = (await c.get("/api/context/status", params={"sessionId": chat})).json()
            assert before["budgetPercent"] is None
            assert [t["tokens"] for t in before["tierBreakdown"]] == [0, 0, 0, 0]
            await c.post(f"/api/chats/{chat}/messages", json={"content": "What is due this week?"})
            status = (await c.get("/api/context/status", params={"sessionId": chat})).json()
            snapshot = status["snapshot"]
            assert status["budgetPercent"] == round(100 * snapshot["total_tokens"] / 7_500, 1) > 0
            assert snapshot["budget_percent"] == status["budgetPercent"]
            tiers = status["tierBreakdown"]
            assert [t["tier"] for t in tiers] == [1, 2, 3, 4]
            assert {"system", "tools", "input"} <= set(tiers[0]["layers"]) and tiers[0]["tokens"] > 0
            assert snapshot["tier_breakdown"]["tiers"] == tiers  # stored with the snapshot
            assert status["currentContext"] == {"type": "global", "entityId": None, "name": None, "tokens": 0}
            assert status["strategy"]["band"] is None and status["strategy"]["references"] == "full"
            assert "No spending limit" in status["strategy"]["reason"]
            assert status["tokenLimit"] == 7_500 == status["budget"]["available"]
            assert status["live"] is False

    asyncio.run(go())


def test_strategy_names_the_band_in_force_and_why(store: Store) -> None:
    model = ScriptedModel()
    guard = CostGuard(Limits(session_tokens=10_000), MemoryLedger())
    engine = _engine(store, model, guard=guard)
    app = create_app(store, engine)

    async def go() -> None:
        async with _client(app) as c:
            chat = (await c.post("/api/chats", json={})).json()["id"]
            guard.record(_users(store)[0], chat, tokens=5_000, dollars=0.0)  # half spent: warning
            strategy = (await c.get("/api/context/status", params={"sessionId": chat})).json()["strategy"]
            assert strategy["band"] == "warning"
            assert (strategy["historyMessages"], strategy["relatedItems"], strategy["references"]) == (
                2,
                3,
                "summary",
            )
            assert "50%" in strategy["reason"] and "warning band (40%–60%)" in strategy["reason"]

    asyncio.run(go())


def _users(store: Store) -> list[str]:
    import sqlalchemy as sa

    from tierwise.store.models import User

    with store.session() as session:
        return list(session.scalars(sa.select(User.id)))


def test_a_running_turn_shows_its_pack_live(store: Store) -> None:
    """Before: the status changed only after the turn's records were written, after ``done``."""
    model = ScriptedModel()
    model.enqueue(Script(TextDelta("Working "), TextDelta("on it."), delay=0.6))
    engine = _engine(store, model)
    app = create_app(store, engine)

    async def go() -> None:
        async with _client(app) as c:
            chat = (await c.post("/api/chats", json={})).json()["id"]
            turn = asyncio.create_task(
                c.post(f"/api/chats/{chat}/messages", json={"content": "Plan my week"})
            )
            status: dict[str, Any] = {}
            for _ in range(200):
                await asyncio.sleep(0.01)
                status = (await c.get("/api/context/status", params={"sessionId": chat})).json()
                if status["live"]:
                    break
            assert status["live"] is True and status["snapshot"] is None
            assert status["budgetPercent"] is not None and status["budgetPercent"] > 0
            assert status["tierBreakdown"][0]["tokens"] > 0
            await turn
            after = (await c.get("/api/context/status", params={"sessionId": chat})).json()
            assert after["live"] is False and after["snapshot"] is not None

    asyncio.run(go())


def test_compaction_shows_only_steps_that_changed_something_with_separators(store: Store) -> None:
    """Before: every logged step was listed, the no-op ones ("1820 → 1820 tokens") included."""
    engine = _engine(store, ScriptedModel())
    app = create_app(store, engine)

    async def go() -> None:
        async with _client(app) as c:
            chat = (await c.post("/api/chats", json={})).json()["id"]
            user = _users(store)[0]
            base = {"action": "step", "threshold": 0.5, "budget": 20_000}
            store.audit(
                user,
                "compaction",
                chat_id=chat,
                details={**base, "tokens_before": 1_820, "tokens_after": 1_820, "changed": False},
            )
            store.audit(
                user,
                "compaction",
                chat_id=chat,
                details={**base, "tokens_before": 18_200, "tokens_after": 9_100, "changed": True},
            )
            old = {"action": "summarize", "threshold": 0.8, "tokens_before": 1_820, "tokens_after": 1_820}
            store.audit(user, "compaction", chat_id=chat, details=old)
            shown = (await c.get(f"/api/chats/{chat}/context")).json()["compactions"]
            assert len(shown) == 1
            assert shown[0]["tokens_before"] == 18_200 and shown[0]["tokens_after"] == 9_100
            assert shown[0]["label"] == "compacted at 50%: 18,200 → 9,100 tokens"

    asyncio.run(go())


def test_a_dollar_limit_warns_when_the_model_has_no_price_and_takes_a_configured_one(store: Store) -> None:
    """Before: a model without a price cost $0 and a dollar limit silently never tripped."""
    model = ScriptedModel(model="my-local-model")
    model.enqueue("Done.", "Done again.")
    unpriced = _engine(
        store, model, guard=CostGuard(Limits(session_dollars=0.001), MemoryLedger()), prices={}
    )
    app = create_app(store, unpriced)

    async def go(app: Any, expect_warning: bool) -> dict[str, Any]:
        async with _client(app) as c:
            chat = (await c.post("/api/chats", json={})).json()["id"]
            status = (await c.get("/api/context/status", params={"sessionId": chat})).json()
            spending = status["spending"]
            assert spending["dollarLimits"] is True
            assert (spending["warning"] is not None) is expect_warning
            if expect_warning:
                assert "my-local-model" in spending["warning"] and "TIERWISE_PRICES" in spending["warning"]
            await c.post(f"/api/chats/{chat}/messages", json={"content": "x " * 2_000})
            second = await c.post(f"/api/chats/{chat}/messages", json={"content": "And again?"})
            return {"chat": chat, "body": second.text}

    first = asyncio.run(go(app, True))

    async def usage_notes() -> list[str]:
        async with _client(app) as c:
            return list((await c.get("/api/usage")).json()["notes"])

    assert any("no known price" in note for note in asyncio.run(usage_notes()))
    assert "spending limit is reached" not in first["body"]  # $0 per call: never trips
    guard = CostGuard(Limits(session_dollars=0.001), MemoryLedger())
    priced = _engine(store, model, guard=guard, prices={"*": Price(1.0, 2.0)})
    model.enqueue("Done.", "Done again.")
    second = asyncio.run(go(create_app(store, priced), False))
    assert "spending limit is reached" in second["body"]  # ~2,000 tokens at $1/1M > $0.001
