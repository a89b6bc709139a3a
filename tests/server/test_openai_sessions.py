"""When the OpenAI-compatible endpoint stores a request's messages: with its answer, or without one."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from tests.server.test_openai_compat import backend_store, service
from tierwise.budget import Budget
from tierwise.chat.engine import ChatEngine
from tierwise.providers.base import ModelResponse, TextDelta, Usage
from tierwise.providers.errors import ProviderError
from tierwise.providers.testing import Script, ScriptedModel
from tierwise.server import create_app
from tierwise.server.openai_sessions import Sessions, Turn
from tierwise.server.spent import Spent
from tierwise.server.threaded import serve_in_thread
from tierwise.store import Store

__all__ = ["backend_store"]

pytestmark = pytest.mark.anyio

SESSION = {"X-Tierwise-Session": "s"}


async def test_a_failed_upstream_stores_the_request_once_and_a_retry_carries_on(backend_store: Store) -> None:
    failing = Script(error=ProviderError("overloaded", status=529, retryable=False))
    svc = service(backend_store, ScriptedModel(failing, "Ninety euros."))
    history: list[dict[str, Any]] = [{"role": "user", "content": "What does catering cost?"}]
    async with svc.http() as http:
        failed = await http.post("/v1/chat/completions", json={"messages": history}, headers=SESSION)
        assert failed.status_code == 529  # the upstream's status, as it gave it (issue 30)
        (chat,) = await svc.api_chats()
        assert [m["content"] for m in await svc.stored(chat.id)] == ["What does catering cost?"]
        retried = await http.post("/v1/chat/completions", json={"messages": history}, headers=SESSION)
    assert retried.status_code == 200, retried.text
    (same,) = await svc.api_chats()
    assert same.id == chat.id
    assert [m["content"] for m in await svc.stored(chat.id)] == ["What does catering cost?", "Ninety euros."]


def test_a_client_that_leaves_mid_stream_leaves_its_question_stored(store: Store) -> None:
    slow = Script(*(TextDelta(f"word{i} ") for i in range(50)), delay=0.02)
    svc = service(store, ScriptedModel(slow, "Short answer."))
    history: list[dict[str, Any]] = [{"role": "user", "content": "Tell me everything."}]
    body = {"messages": history, "stream": True}

    def stored() -> list[str]:
        chats = store.list_chats(svc.user, context_type="api")
        return [m.message["content"] for c in chats for m in store.list_messages(svc.user, c.id)]

    with serve_in_thread(svc.app) as base, httpx.Client(base_url=base, timeout=10) as http:
        with http.stream("POST", "/v1/chat/completions", json=body, headers=SESSION) as response:
            for line in response.iter_lines():
                if "word2" in line:
                    break  # leave: the connection closes before the answer is complete
        deadline = time.monotonic() + 5
        while not stored() and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.3)  # the rest of the stream would have arrived by now
        assert stored() == ["Tell me everything."]  # the question, without a half answer
        again = http.post("/v1/chat/completions", json={"messages": history}, headers=SESSION)
        assert again.json()["choices"][0]["message"]["content"] == "Short answer."
        deadline = time.monotonic() + 5
        while len(stored()) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
    assert stored() == ["Tell me everything.", "Short answer."]


async def test_a_chat_written_by_another_writer_meanwhile_is_reloaded_not_corrupted(store: Store) -> None:
    svc = service(store, ScriptedModel("unused"))
    sessions = Sessions(svc.engine)
    budget = Budget(window=4_000, reserve=500)
    answer = ModelResponse(
        text="Yours.", tool_calls=[], finish_reason="stop", model="m", usage=Usage(9, 2, 11)
    )
    history: list[dict[str, Any]] = [{"role": "user", "content": "Mine?"}]
    first = sessions.prepare(svc.user, "s", Turn(history, None, [], budget))
    sessions.finish(first, answer, Spent(9, 2, 0.0, True))
    history += [{"role": "assistant", "content": "Yours."}, {"role": "user", "content": "Again?"}]
    prepared = sessions.prepare(svc.user, "s", Turn(history, None, [], budget))
    # Another process appends to the same chat between the request and its answer.
    store.add_message(svc.user, prepared.chat_id, {"role": "user", "content": "Theirs."}, token_count=3)
    sessions.finish(prepared, answer, Spent(9, 2, 0.0, True))
    stored = store.list_messages(svc.user, prepared.chat_id)
    assert [(m.seq, m.message["content"]) for m in stored] == [(0, "Mine?"), (1, "Yours."), (2, "Theirs.")]
    # The client's next request: memory is loaded again, sees the history differ, starts afresh.
    history += [{"role": "assistant", "content": "Yours."}, {"role": "user", "content": "And?"}]
    again = sessions.prepare(svc.user, "s", Turn(history, None, [], budget))
    assert again.chat_id != prepared.chat_id
    sessions.finish(again, answer, Spent(9, 2, 0.0, True))
    assert [m.message["content"] for m in store.list_messages(svc.user, again.chat_id)] == [
        "Mine?",
        "Yours.",
        "Again?",
        "Yours.",
        "And?",
        "Yours.",
    ]


async def test_a_new_sessions_chat_is_stored_with_its_first_write(store: Store) -> None:
    svc = service(store, ScriptedModel("unused"))
    sessions = Sessions(svc.engine)
    budget = Budget(window=4_000, reserve=500)
    answer = ModelResponse(text="Yes.", tool_calls=[], finish_reason="stop", model="m", usage=Usage(9, 2, 11))
    first = sessions.prepare(svc.user, "s", Turn([{"role": "user", "content": "Ready?"}], None, [], budget))
    assert store.list_chats(svc.user, context_type="api") == []  # nothing stored on the request's path
    # The client edits its first message before that request's write: the old chat is stored retired.
    edited = sessions.prepare(svc.user, "s", Turn([{"role": "user", "content": "Set?"}], None, [], budget))
    sessions.finish(first, answer, Spent(9, 2, 0.0, True))
    sessions.finish(edited, answer, Spent(9, 2, 0.0, True))
    (current,) = store.list_chats(svc.user, context_type="api")
    (retired,) = store.list_chats(svc.user, context_type="api-superseded")
    assert (current.id, retired.id) == (edited.chat_id, first.chat_id)
    assert current.entity_id == retired.entity_id == "s"
    assert [m.message["content"] for m in store.list_messages(svc.user, current.id)] == ["Set?", "Yes."]
    assert [m.message["content"] for m in store.list_messages(svc.user, retired.id)] == ["Ready?", "Yes."]


async def test_the_answer_is_stored_before_the_client_has_it(store: Store) -> None:
    model = ScriptedModel("One.", "Two.")
    svc = service(store, model, shared=False)  # one process serves the store
    transport = httpx.ASGITransport(app=svc.app)
    history: list[dict[str, Any]] = [{"role": "user", "content": "First?"}]
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
        first = await http.post("/v1/chat/completions", json={"messages": history}, headers=SESSION)
        sessions: Sessions = svc.app.state.openai_sessions
        pending = sessions._pending.get((svc.user, "s"))
        assert pending is None or pending.started  # stored before the answer went out (decision 77)
        assert first.headers["X-Tierwise-Stored"] == "true"
        (chat,) = await svc.api_chats()
        assert [m["content"] for m in await svc.stored(chat.id)] == ["First?", "One."]
        history += [{"role": "assistant", "content": "One."}, {"role": "user", "content": "Second?"}]
        await http.post("/v1/chat/completions", json={"messages": history}, headers=SESSION)
    # The second request was packed with the first answer.
    assert any(m.get("content") == "One." for m in model.requests[1].messages)
    (chat,) = await svc.api_chats()
    assert [m["content"] for m in await svc.stored(chat.id)] == ["First?", "One.", "Second?", "Two."]
    assert [m.seq for m in store.list_messages(svc.user, chat.id)] == [0, 1, 2, 3]
    assert len(store.list_audit(svc.user, chat_id=chat.id, event="turn")) == 2  # each answer once
    assert len(store.list_audit(svc.user, chat_id=chat.id, event="pack")) == 2


async def test_with_a_cost_guard_the_next_request_records_the_previous_spend_first(store: Store) -> None:
    from tierwise.chat.costguard import CostGuard, Limits, MemoryLedger

    ledger = MemoryLedger()
    engine = ChatEngine(
        store,
        ScriptedModel("One.", "Two."),
        budget=Budget(window=4_000, reserve=500),
        guard=CostGuard(Limits(session_tokens=1_000_000), ledger),
    )
    app = create_app(store, engine, shared=False)  # one process serves the store
    history: list[dict[str, Any]] = [{"role": "user", "content": "First?"}]
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as http:
        await http.post("/v1/chat/completions", json={"messages": history}, headers=SESSION)
        pending = app.state.openai_sessions._pending.get((app.state.user_of(None), "s"))
        assert pending is None or pending.started  # recorded before the answer went out (decision 77)
        (chat,) = store.list_chats(app.state.user_of(None), context_type="api")
        assert ledger.spend(chat.user_id, chat.id, datetime(2000, 1, 1, tzinfo=UTC)).session_tokens > 0
        history += [{"role": "assistant", "content": "One."}, {"role": "user", "content": "Second?"}]
        await http.post("/v1/chat/completions", json={"messages": history}, headers=SESSION)


async def test_a_chat_deleted_by_another_process_is_noticed_on_the_next_write(store: Store) -> None:
    svc = service(store, ScriptedModel("One.", "Two.", "Three."), shared=False)  # held memory trusted
    history: list[dict[str, Any]] = [{"role": "user", "content": "First?"}]
    async with svc.http() as http:
        await http.post("/v1/chat/completions", json={"messages": history}, headers=SESSION)
        (chat,) = await svc.api_chats()
        store.delete_chat(svc.user, chat.id)  # behind the server's back: its memory is still held
        history += [{"role": "assistant", "content": "One."}, {"role": "user", "content": "Second?"}]
        second = await http.post("/v1/chat/completions", json={"messages": history}, headers=SESSION)
        assert second.status_code == 200  # answered from memory; storing it finds the chat gone
        assert await svc.api_chats() == []
        history += [{"role": "assistant", "content": "Two."}, {"role": "user", "content": "Third?"}]
        third = await http.post("/v1/chat/completions", json={"messages": history}, headers=SESSION)
    assert third.status_code == 200
    (fresh,) = await svc.api_chats()
    assert fresh.id != chat.id
    contents = [m["content"] for m in await svc.stored(fresh.id)]
    assert contents == ["First?", "One.", "Second?", "Two.", "Third?", "Three."]
