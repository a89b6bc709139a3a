"""Titles and summaries are spend; titles are distinct; prices for models the table lacks (issue 17)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator

import pytest

from tierwise.budget import Budget
from tierwise.chat.costguard import CostGuard, Limits, MemoryLedger, unpriced_warning
from tierwise.chat.engine import ChatEngine
from tierwise.chat.titles import distinct_title, fallback_title
from tierwise.chat.trace import Tracer
from tierwise.chat.turn import TurnState
from tierwise.chat.upkeep import store_records
from tierwise.providers.base import ModelResponse, Usage
from tierwise.providers.pricing import Price, cost, lookup_price
from tierwise.providers.testing import ScriptedModel
from tierwise.store import Store
from tierwise.summarize.llm import LLMSummarizer


@pytest.fixture
def store() -> Iterator[Store]:
    db = Store.open("sqlite://")
    yield db
    db.close()


def test_a_model_title_counts_as_the_chats_spend(store: Store) -> None:
    """Before: the title call's tokens and dollars were nowhere in the guard or the chat's total."""
    model = ScriptedModel(model="gpt-4o-mini")
    model.enqueue(ModelResponse(text="Here is the plan.", usage=Usage(1_000, 100, 1_100)))
    titler = ScriptedModel(model="gpt-4o-mini")
    titler.enqueue(ModelResponse(text="Weekly plan", usage=Usage(200, 5, 205)))
    guard = CostGuard(Limits(session_tokens=1_000_000), MemoryLedger())
    engine = ChatEngine(
        store, model, guard=guard, title_provider=titler, prices={}, budget=Budget(window=8_000)
    )
    user = store.create_user("maya").id
    chat = store.create_chat(user).id
    done = asyncio.run(engine.run(user, chat, "Plan my week")).done
    assert done.title == "Weekly plan"
    spent = guard.spend(user, chat)
    assert spent.session_tokens == 1_100 + 205
    expected = (
        cost(Usage(1_000, 100, 1_100), "gpt-4o-mini").dollars
        + cost(Usage(200, 5, 205), "gpt-4o-mini").dollars
    )
    assert spent.session_dollars == pytest.approx(expected)
    assert store.get_chat(user, chat).total_tokens_used == 1_305


class _Answer:
    def __init__(self, prompt: int, completion: int) -> None:
        self.text = "Two lines."
        self.finish_reason = "stop"
        self.usage = Usage(prompt, completion, prompt + completion)


class _SummaryModel:
    """A summary model's completion: each answer reports what it used."""

    def respond(self, messages: object, *, model: str, max_tokens: int) -> _Answer:
        return _Answer(600, 80)

    def complete(self, messages: object, *, model: str, max_tokens: int) -> str:
        return "Two lines."


def test_summary_model_calls_after_a_turn_count_as_the_chats_spend(store: Store) -> None:
    """Before: the summarizer kept its own (process-wide) count and nothing reached the guard or chat."""
    user = store.create_user("maya").id
    chat_id = store.create_chat(user).id
    engine = ChatEngine(store, ScriptedModel(), budget=Budget(window=8_000))
    chat = engine.chat_memory(user, chat_id)
    summarizer = LLMSummarizer(_SummaryModel(), model="gpt-4o-mini")
    summarizer.prompt_tokens = 50_000  # another chat's calls: never this chat's spend
    chat.memory.summarizer = summarizer
    steps = iter([True, False])

    def maintain() -> bool:
        summarizer._ask([{"role": "user", "content": "summarise"}])  # one summary per piece
        return next(steps)

    chat.memory.maintain_step = maintain  # type: ignore[method-assign]
    seen: list[tuple[Usage, str]] = []
    t = TurnState(user, chat_id, chat, 0, Tracer())
    store_records(store, t, None, spend=lambda usage, model: seen.append((usage, model)))
    assert seen == [(Usage(1_200, 160, 1_360), "gpt-4o-mini")]
    guard = CostGuard(Limits(session_tokens=1_000_000), MemoryLedger())
    engine.guard = guard
    engine._spend_upkeep(t, *seen[0])
    assert guard.spend(user, chat_id).session_tokens == 1_360
    assert guard.spend(user, chat_id).session_dollars == pytest.approx(
        cost(seen[0][0], "gpt-4o-mini").dollars
    )
    assert store.get_chat(user, chat_id).total_tokens_used == 1_360


def test_chats_started_alike_get_distinct_titles(store: Store) -> None:
    """Before: three chats were all "What are my high priority tasks"."""
    user = store.create_user("maya").id
    questions = [
        "What are my high priority tasks for the Apollo launch?",
        "What are my high priority tasks this week?",
        "What are my high priority tasks in Marketing?",
    ]
    model = ScriptedModel()
    engine = ChatEngine(store, model, budget=Budget(window=8_000))
    titles = []
    for question in questions:
        model.enqueue("Here they are.")
        chat = store.create_chat(user).id
        titles.append(asyncio.run(engine.run(user, chat, question)).done.title)
    assert len(set(titles)) == 3, titles
    assert titles[0] == fallback_title(questions[0])
    assert all(t and len(t) <= 60 for t in titles)
    assert titles == [
        "High priority tasks for the Apollo launch",
        "High priority tasks this week",
        "High priority tasks in Marketing",
    ]
    assert distinct_title("Plan", "Plan it", ["Plan", "Plan (2)"]) == "Plan (3)"
    same = "What are my high priority tasks?"
    for _ in range(2):
        model.enqueue("Here they are.")
        chat = store.create_chat(user).id
        titles.append(asyncio.run(engine.run(user, chat, same)).done.title)
    assert titles[-2:] == ["High priority tasks", "High priority tasks (2)"]


def test_a_configured_price_covers_models_the_table_lacks() -> None:
    assert lookup_price("my-local-model") is None
    assert lookup_price("my-local-model", {"*": Price(0.5, 1.5)}) == Price(0.5, 1.5)
    assert lookup_price("gpt-4o-mini", {"*": Price(9, 9)}) == Price(0.15, 0.60, 0.075)  # the table first
    assert (
        cost(Usage(1_000_000, 0, 1_000_000), "my-local-model", prices={"*": Price(0.5, 1.5)}).dollars == 0.5
    )


def test_setting_a_dollar_limit_for_a_model_without_a_price_warns(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    limits = Limits(month_dollars=5.0)
    assert unpriced_warning(Limits(month_tokens=5), "my-local-model", {}) is None  # tokens: fine
    assert unpriced_warning(limits, "my-local-model", {"*": Price(1, 1)}) is None
    warning = unpriced_warning(limits, "my-local-model", {})
    assert warning is not None and "TIERWISE_PRICES" in warning and "my-local-model" in warning
    with caplog.at_level(logging.WARNING, logger="tierwise.chat.engine"):
        ChatEngine(
            store, ScriptedModel(model="my-local-model"), guard=CostGuard(limits, MemoryLedger()), prices={}
        )
    assert any("no known price" in r.getMessage() for r in caplog.records)
