"""What the OpenAI-compatible endpoint's summary model uses is the chat's spend, as on the web chat."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tierwise.bench.synthetic import synthetic_history
from tierwise.budget import Budget
from tierwise.chat.costguard import CostGuard, Limits, StoreLedger
from tierwise.chat.engine import ChatEngine
from tierwise.chat.memories import summarizing_memory
from tierwise.chat.summaries import model_summarizer
from tierwise.providers.base import ModelRequest, ModelResponse, Usage
from tierwise.providers.pricing import cost
from tierwise.providers.testing import FunctionModel
from tierwise.server import create_app
from tierwise.store import Store

pytestmark = pytest.mark.anyio

SUMMARY = Usage(700, 30, 730)  # what each call of the summary model reports
ANSWER = Usage(100, 5, 105)


@pytest.fixture
def store() -> Iterator[Store]:
    opened = Store.open("sqlite://")
    yield opened
    opened.close()


async def test_summary_model_calls_of_the_endpoint_are_the_chats_spend(store: Store) -> None:
    """Before: the summaries and narrative merges made while the upstream answered were nowhere in
    the cost guard's rows or the chat's tokens — only the answers were."""
    summary_calls: list[ModelRequest] = []

    def answer(request: ModelRequest) -> ModelResponse:
        if request.model == "gpt-4o-mini":  # the summary model
            summary_calls.append(request)
            return ModelResponse(text="They went over the plan.", usage=SUMMARY)
        return ModelResponse(text="Sure.", usage=ANSWER)

    model = FunctionModel(answer, model="chat-model")
    guard = CostGuard(Limits(session_tokens=100_000_000), StoreLedger(store))
    engine = ChatEngine(
        store,
        model,
        budget=Budget(window=4_000, reserve=500),
        guard=guard,
        memory_factory=summarizing_memory(model_summarizer(model, model="gpt-4o-mini")),
    )
    app = create_app(store, engine, shared=False)
    history: list[dict[str, Any]] = [m for m in synthetic_history(80) if m["role"] != "system"]
    headers = {"X-Tierwise-Session": "s"}
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as http,
    ):
        for question in ("And next?", "Anything else?"):
            response = await http.post("/v1/chat/completions", json={"messages": history}, headers=headers)
            assert response.status_code == 200, response.text
            history += [{"role": "assistant", "content": "Sure."}, {"role": "user", "content": question}]
        await app.state.openai_sessions.drain()
    assert summary_calls, "a segment closed: the summary model was asked"
    user = app.state.local_user
    [chat] = store.list_chats(user, context_type="api")
    summaries = len(summary_calls) * SUMMARY.total_tokens
    spent = guard.spend(user, chat.id)
    assert spent.session_tokens == 2 * ANSWER.total_tokens + summaries
    assert spent.session_dollars == pytest.approx(len(summary_calls) * cost(SUMMARY, "gpt-4o-mini").dollars)
    assert store.get_chat(user, chat.id).total_tokens_used == 2 * ANSWER.total_tokens + summaries
    rows = store.list_audit(user, chat_id=chat.id, event="usage", limit=100)  # the guard's rows, as /api's
    assert sum(row.details["tokens"] for row in rows) == spent.session_tokens


async def test_without_a_summary_model_named_the_endpoint_makes_no_calls_of_its_own(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before (issue 30): summaries went to the chat model by default — 23 upstream calls for 12 turns."""
    from tierwise.chat import terminal

    monkeypatch.delenv("TIERWISE_SUMMARY_MODEL", raising=False)
    calls: list[ModelRequest] = []

    def answer(request: ModelRequest) -> ModelResponse:
        calls.append(request)
        return ModelResponse(text="Sure.", usage=ANSWER)

    engine = terminal.make_engine(store, FunctionModel(answer, model="chat-model"), window=4_000, reserve=500)
    app = create_app(store, engine, shared=False)
    history: list[dict[str, Any]] = [m for m in synthetic_history(80) if m["role"] != "system"]
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as http,
    ):
        for turn in range(12):
            response = await http.post("/v1/chat/completions", json={"messages": history})
            assert response.status_code == 200, response.text
            history += [
                {"role": "assistant", "content": "Sure."},
                {"role": "user", "content": f"And {turn}?"},
            ]
        await app.state.openai_sessions.drain()
    assert len(calls) == 12
    [chat] = store.list_chats(app.state.local_user, context_type="api")
    segments = engine.chat_memory(chat.user_id, chat.id).memory.segments
    assert any(seg.summary for seg in segments), "memory summarised, extractively"
