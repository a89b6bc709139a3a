"""The privacy policy, enforced (issue 32): what memory re-sends after its turn is scrubbed.

README "Privacy": the conversation is stored as the user sent it (messages, tool calls, tool results'
blobs, a ``/v1`` response's messages); everything memory writes is scrubbed; and, by default
(``MemoryPolicy.scrub_resent``, ``TIERWISE_SCRUB_RESENT``), so is everything memory sends again after
its turn: retrieved turns, recalled segments, the summary model's input, a title's prompt.

A long chat plants four secrets in its first turns, talks on until they are archived, then asks
questions that make retrieval bring them back, has the model call ``recall_segments`` for the
segments in full, and lets a summary model summarise. Every request the model got (answers,
summaries, narrative merges, the title) is then read: a planted secret may appear only in a message
that *is* its turn, sent as the client sent it (the recent turns). Every column of every table of
the store is read the same way (found by inspection, so a new table is covered): a secret may
appear only in the tables that hold the conversation. Both ways in: the web chat (``/api``) and the
OpenAI-compatible gateway (``/v1``). Before: 43 requests of the web chat carried an archived secret.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import column, inspect, select, table

from tierwise.budget import Budget
from tierwise.chat.engine import ChatEngine
from tierwise.chat.memories import summarizing_memory
from tierwise.chat.summaries import model_summarizer
from tierwise.providers.base import ModelRequest, ModelResponse, Usage
from tierwise.providers.testing import FunctionModel, tool_call
from tierwise.server import create_app
from tierwise.store import Store

pytestmark = pytest.mark.anyio

SUMMARY_MODEL = "summary-model"
API_KEY = "sk-proj-7Hq2LmX9vR4tK8wN3pZ6yB1cF5gJ0dS2aE7uI4oQ9xW3"
PASSWORD = "Tr0ub4dor&3xQ"
EMAIL = "maria.keller@northwind-mail.com"
CARD = "4111 1111 1111 1111"
SECRETS = (API_KEY, PASSWORD, EMAIL, CARD)
PLANTED = (
    f"Hi! Please write to Maria at {EMAIL} about the staging rollout for the Falcon project.",
    f"For the staging deploy of Falcon use the API key {API_KEY} in the pipeline settings.",
    f"The VPN login for the Falcon build box is password: {PASSWORD} until Friday.",
    f"Book the Lisbon hotel for the Falcon offsite with my card {CARD}, expiry 09/29.",
)
TOPICS = (
    "the garden shed roof",
    "the quarterly tax forms",
    "the choir rehearsal schedule",
    "the bicycle repair",
    "the kitchen tiles",
    "the piano lessons",
    "the library fines",
    "the marathon training plan",
)
QUESTIONS = (
    "What was the API key for the Falcon staging deploy pipeline?",
    "What was the VPN password for the Falcon build box?",
    "Which card did I give for the Lisbon hotel booking of the Falcon offsite?",
    "What is Maria's email address for the Falcon staging rollout?",
)
RECALL = "Please recall the first segments in full so we can check the Falcon details."
TABLES_RAW = frozenset({"chat_messages", "chat_tool_calls", "blobs", "api_responses"})
"""The conversation as the user sent it (and a ``/v1`` response's messages, for
``previous_response_id``): the only tables a secret may be in."""


def filler(i: int) -> str:
    topic = TOPICS[(i // 4) % len(TOPICS)]
    return (
        f"Let us talk about {topic} again, note number {i}. I would like a short plan with three "
        f"steps, who should do each one, and what it costs; keep it brief and friendly please."
    )


def answer_text(i: int) -> str:
    return (
        f"Here is a plan for note {i}: first gather what is needed, then do the work on Saturday, "
        "finally check it together. It should cost little and take an afternoon."
    )


def conversation() -> list[str]:
    """The user's messages: the planted ones, 36 ordinary ones, the questions, the recall."""
    return [*PLANTED, *(filler(i) for i in range(36)), *QUESTIONS, RECALL]


def answer(request: ModelRequest) -> ModelResponse:
    """The scripted model: summaries, titles and answers; ``recall_segments`` when asked to recall."""
    usage = Usage(100, 10, 110)
    if request.model == SUMMARY_MODEL:
        return ModelResponse(text="They went over the plan.", usage=usage)
    last = request.messages[-1]
    offered = {t["function"]["name"] for t in request.tools}
    if last.get("role") == "user" and last.get("content") == RECALL and "recall_segments" in offered:
        return ModelResponse(tool_calls=[tool_call("recall_segments", ids=["S1", "S2", "S3"], form="full")])
    return ModelResponse(text=answer_text(len(request.messages)), usage=usage)


def kind(request: ModelRequest, message: dict[str, Any]) -> str:
    """What a request carrying a secret was, for the failure's message."""
    text = str(message.get("content") or "")
    if request.model == SUMMARY_MODEL:
        return "summary"
    if text.startswith("Give this conversation a title"):
        return "title"
    if message.get("role") == "tool":
        return "recall"
    return "retrieved" if "Retrieved" in text else "other"


def leaks(requests: list[ModelRequest]) -> list[tuple[int, str, str]]:
    """``(request, secret, kind)`` for each secret found outside its own turn in a request."""
    planted = set(PLANTED)
    found = []
    for n, request in enumerate(requests):
        for m in request.messages:
            if m.get("role") == "user" and m.get("content") in planted:
                continue  # the turn itself, in the recent turns sent whole: the conversation
            text = json.dumps(m, ensure_ascii=False)
            found += [(n, s, kind(request, m)) for s in SECRETS if s in text]
        tools = json.dumps(list(request.tools), ensure_ascii=False)
        found += [(n, s, "tools") for s in SECRETS if s in tools]
    return found


def stored_leaks(store: Store) -> list[tuple[str, str, str]]:
    """``(table, column, secret)`` for each secret found in a table that does not hold the conversation.

    The conversation's tables must hold every secret (or the search would prove nothing).
    """
    found = []
    raw: set[str] = set()
    engine = store.engine
    inspector = inspect(engine)
    with engine.connect() as connection:
        for name in inspector.get_table_names():
            columns = [c["name"] for c in inspector.get_columns(name)]
            rows = connection.execute(select(*(column(c) for c in columns)).select_from(table(name)))
            for row in rows:
                for col, value in zip(columns, row, strict=True):
                    if value is None:
                        continue
                    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
                    for secret in SECRETS:
                        if secret in text and name not in TABLES_RAW:
                            found.append((name, col, secret))
                        elif secret in text:
                            raw.add(secret)
    assert raw == set(SECRETS), "the conversation is stored as the user sent it"
    return found


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = Store.open(f"sqlite:///{tmp_path / 'privacy.db'}")  # a file: the check reads it on its own
    yield opened
    opened.close()


def engine_for(store: Store, model: FunctionModel) -> ChatEngine:
    return ChatEngine(
        store,
        model,
        budget=Budget(window=3_000, reserve=300),
        title_provider=model,
        memory_factory=summarizing_memory(model_summarizer(model, model=SUMMARY_MODEL)),
    )


async def web_chat(store: Store) -> FunctionModel:
    """The conversation through ``/api``; the model, with every request it got."""
    model = FunctionModel(answer, model="chat-model")
    engine = engine_for(store, model)
    app = create_app(store, engine, shared=False)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as http,
    ):
        chat = (await http.post("/api/chats", json={})).json()["id"]
        for text in conversation():
            response = await http.post(f"/api/chats/{chat}/messages", json={"content": text})
            assert response.status_code == 200, response.text
            assert "event: done" in response.text
        while engine._upkeep:  # the last turn's upkeep after done (its summaries)
            await asyncio.sleep(0.01)
    return model


async def test_the_web_chat_resends_no_secret_after_its_turn(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    model = await web_chat(store)
    _check(model, store)
    logged = [r.name for r in caplog.records if any(s in r.getMessage() for s in SECRETS)]
    assert not logged, f"log lines carried a secret: {logged}"


async def test_with_scrub_resent_off_memory_re_sends_what_was_said(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``TIERWISE_SCRUB_RESENT=0``: the old behaviour, which the test above would fail on; what
    memory writes (and the title) stays scrubbed."""
    monkeypatch.setenv("TIERWISE_SCRUB_RESENT", "0")
    model = await web_chat(store)
    kinds = {k for _, _, k in leaks(model.requests)}
    assert kinds == {"retrieved", "recall", "summary"}
    assert not stored_leaks(store)


async def test_the_gateway_resends_no_secret_after_its_turn(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    model = FunctionModel(answer, model="chat-model")
    app = create_app(store, engine_for(store, model), shared=False)
    history: list[dict[str, Any]] = []
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as http,
    ):
        for text in conversation():
            history.append({"role": "user", "content": text})
            response = await http.post(
                "/v1/chat/completions",
                json={"model": "m", "messages": history},
                headers={"X-Tierwise-Session": "s"},
            )
            assert response.status_code == 200, response.text
            history.append(
                {"role": "assistant", "content": response.json()["choices"][0]["message"]["content"]}
            )
        await app.state.openai_sessions.drain()
    _check(model, store)
    logged = [r.name for r in caplog.records if any(s in r.getMessage() for s in SECRETS)]
    assert not logged, f"log lines carried a secret: {logged}"


def _check(model: FunctionModel, store: Store) -> None:
    requests = model.requests
    summaries = [r for r in requests if r.model == SUMMARY_MODEL]
    assert summaries, "the summary model was asked"
    recalled = [
        r
        for r in requests
        if any(m.get("role") == "tool" and "S1" in str(m.get("content")) for m in r.messages)
    ]
    assert recalled, "recall_segments answered"
    archived = [r for r in requests if not any(m.get("content") == PLANTED[1] for m in r.messages)]
    assert archived, "the planted turns were archived"
    found = leaks(requests)
    kinds = Counter(k for _, _, k in {(n, "", k) for n, _, k in found})
    carried = len({n for n, _, _ in found})
    stored = sorted(set(stored_leaks(store)))
    assert not found and not stored, (
        f"{carried} of {len(requests)} requests re-sent a secret after its turn: {dict(kinds)}; "
        f"stored outside the conversation: {stored}"
    )
