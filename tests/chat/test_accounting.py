from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tierwise import Budget, conversation_layers, pack
from tierwise.chat.costguard import BudgetExceeded, CostGuard, Limits, MemoryLedger, StoreLedger
from tierwise.chat.titles import fallback_title, make_title
from tierwise.chat.trace import Tracer
from tierwise.chat.usage import ToolUsage, usage_report
from tierwise.errors import InputError

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def test_health_and_bands_follow_spend() -> None:
    guard = CostGuard(Limits(session_tokens=10_000, month_dollars=5.0), MemoryLedger())
    assert guard.health("u", "c", NOW) == 1.0 and guard.band("u", "c", NOW).name == "healthy"  # type: ignore[union-attr]
    guard.record("u", "c", tokens=3_000, dollars=0.5, at=NOW)
    assert guard.health("u", "c", NOW) == pytest.approx(0.7)
    guard.record("u", "other", tokens=100, dollars=3.0, at=NOW)  # another chat, same month
    assert guard.health("u", "c", NOW) == pytest.approx(0.3)  # the monthly dollars are stricter
    assert guard.band("u", "c", NOW).name == "critical"  # type: ignore[union-attr]
    assert CostGuard(Limits(), MemoryLedger()).health("u", "c") is None


def test_over_the_hard_limit_a_turn_is_refused_with_the_fix() -> None:
    guard = CostGuard(Limits(session_tokens=1_000), MemoryLedger())
    guard.check("u", "c", NOW)
    guard.record("u", "c", tokens=1_000, dollars=0.0, at=NOW)
    with pytest.raises(BudgetExceeded, match="TIERWISE_SESSION_TOKEN_LIMIT") as info:
        guard.check("u", "c", NOW)
    assert "1,000 of 1,000 tokens" in str(info.value)
    guard.check("u", "new-chat", NOW)  # a new chat starts fresh


def test_last_months_spending_does_not_count() -> None:
    guard = CostGuard(Limits(month_tokens=1_000), MemoryLedger())
    guard.record("u", "c", tokens=900, dollars=0, at=NOW - timedelta(days=40))
    assert guard.health("u", "c2", NOW) == 1.0


def test_limits_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIERWISE_SESSION_TOKEN_LIMIT", "5000")
    monkeypatch.setenv("TIERWISE_MONTHLY_DOLLAR_LIMIT", "2.5")
    assert Limits.from_env() == Limits(session_tokens=5000, month_dollars=2.5)
    monkeypatch.setenv("TIERWISE_SESSION_TOKEN_LIMIT", "lots")
    with pytest.raises(InputError, match="not a number"):
        Limits.from_env()


def test_store_ledger_survives_and_is_scoped(store: Any) -> None:
    a, b = store.create_user("a"), store.create_user("b")
    chat = store.create_chat(a.id)
    guard = CostGuard(Limits(session_tokens=100), StoreLedger(store))
    guard.record(a.id, chat.id, tokens=100, dollars=0.01)
    with pytest.raises(BudgetExceeded):
        CostGuard(Limits(session_tokens=100), StoreLedger(store)).check(a.id, chat.id)
    assert guard.spend(b.id, chat.id).session_tokens == 0


def test_store_ledger_sums_like_the_memory_ledger(store: Any) -> None:
    a, b = store.create_user("a").id, store.create_user("b").id
    chats = [store.create_chat(a).id for _ in range(3)]
    ledgers = [MemoryLedger(), StoreLedger(store)]
    month = NOW.replace(day=1, hour=0)
    spending = [
        (a, chats[0], 100, 0.5, NOW),
        (a, chats[1], 30, 0.25, NOW - timedelta(days=2)),
        (a, chats[0], 70, 1.0, month - timedelta(seconds=1)),  # last month, this chat
        (a, chats[2], 5, 0.0, month),  # the month's first moment counts
        (b, chats[0], 999, 9.0, NOW),  # another user
    ]
    for ledger in ledgers:
        for user, chat, tokens, dollars, at in spending:
            ledger.record(user, chat, tokens, dollars, at, cached_tokens=1)
    for user in (a, b):
        for chat in [*chats, "no-such-chat"]:
            memory, stored = (ledger.spend(user, chat, month) for ledger in ledgers)
            assert (stored.session_tokens, stored.month_tokens) == (
                memory.session_tokens,
                memory.month_tokens,
            )
            assert stored.session_dollars == pytest.approx(memory.session_dollars)
            assert stored.month_dollars == pytest.approx(memory.month_dollars)
    spent = StoreLedger(store).spend(a, chats[0], month)
    assert (spent.session_tokens, spent.month_tokens) == (170, 135)


def test_store_ledger_with_10_000_rows_sums_them_all(store: Any) -> None:
    import sqlalchemy as sa

    from tierwise.store.models import UsageEntry, new_id

    user = store.create_user("heavy").id
    chat = store.create_chat(user).id
    now = datetime.now(UTC)
    month = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    rows = [
        {
            "id": new_id(),
            "user_id": user,
            "chat_id": chat if i % 3 else f"chat-{i % 50}",
            "tokens": 50 + i % 97,
            "dollars": (i % 13) / 1000,
            "cached_tokens": 0,
            "created_at": month + timedelta(seconds=i) if i % 4 else month - timedelta(seconds=i + 1),
        }
        for i in range(10_000)
    ]
    with store.engine.begin() as connection:  # one executemany: the ledger's table, as record() writes it
        connection.execute(sa.insert(UsageEntry.__table__), rows)
    spent = CostGuard(Limits(month_tokens=10**9), StoreLedger(store)).spend(user, chat, now)
    in_chat = [r for r in rows if r["chat_id"] == chat]
    in_month = [r for r in rows if r["created_at"] >= month]
    assert spent.session_tokens == sum(r["tokens"] for r in in_chat)
    assert spent.month_tokens == sum(r["tokens"] for r in in_month)
    assert spent.session_dollars == pytest.approx(sum(r["dollars"] for r in in_chat))
    assert spent.month_dollars == pytest.approx(sum(r["dollars"] for r in in_month))


def test_usage_report_shape() -> None:
    layers = conversation_layers(
        [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "hello"},
            {"role": "user", "content": "what's due?"},
        ]
    )
    p = pack(layers, Budget(window=1000)).report
    report = usage_report([p, p], tool_calls=[ToolUsage("list_tasks", 12, 80)], response_tokens=30)
    d = report.to_dict()
    assert d["context"]["system"] > 0 and d["conversation"]["currentMessage"] > 0
    assert d["tools"]["total"] == 92 and d["response"]["total"] == 30
    assert d["summary"]["totalUsed"] == 2 * p.total_tokens + 30
    assert d["summary"]["limit"] == 1000


@pytest.mark.parametrize(
    ("message", "title"),
    [
        (
            "Can you help me plan the Q4 product launch timeline? It's urgent.",
            "Plan the Q4 product launch timeline",
        ),
        ("hi, please show me my overdue tasks", "My overdue tasks"),
        ("???", "New chat"),
        ("日本語のタスクを整理して", "日本語のタスクを整理して"),
    ],
)
def test_fallback_titles(message: str, title: str) -> None:
    assert fallback_title(message) == title


@pytest.mark.anyio
async def test_model_titles_are_checked() -> None:
    async def good(prompt: str) -> str:
        return '"Q4 launch plan"'

    async def bad(prompt: str) -> str:
        return "Here is a title:\nQ4 launch plan"

    async def broken(prompt: str) -> str:
        raise RuntimeError("502")

    assert await make_title("plan the q4 launch", "ok", good) == ("Q4 launch plan", True)
    assert await make_title("plan the q4 launch", "ok", bad) == ("Plan the q4 launch", False)
    assert await make_title("plan the q4 launch", "ok", broken) == ("Plan the q4 launch", False)
    assert await make_title("plan the q4 launch", "ok") == ("Plan the q4 launch", False)


def test_tracer_spans_and_jsonl(tmp_path: Path) -> None:
    tracer = Tracer("t1")
    with tracer.span("context_build", layers=5):
        pass
    with pytest.raises(ValueError), tracer.span("model_call", model="m"):
        raise ValueError("boom")
    tracer.event("compaction", action="truncate")
    lines = [json.loads(line) for line in tracer.to_jsonl().splitlines()]
    assert [x["name"] for x in lines] == ["context_build", "model_call", "compaction"]
    assert lines[1]["status"] == "error" and "boom" in lines[1]["attributes"]["error"]
    assert all(x["trace_id"] == "t1" for x in lines)
    tracer.write(tmp_path / "trace.jsonl")
    assert (tmp_path / "trace.jsonl").read_text().count("\n") == 3
