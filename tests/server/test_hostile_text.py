"""NUL and lone surrogates through the OpenAI endpoint: stored as U+FFFD, billed once, never lost."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from tests.server.test_openai_compat import backend_store
from tierwise.budget import Budget
from tierwise.chat.costguard import CostGuard, Limits, StoreLedger
from tierwise.chat.engine import ChatEngine
from tierwise.memory.persist import ChatMemory
from tierwise.providers.testing import ScriptedModel
from tierwise.server import create_app
from tierwise.store import Store

__all__ = ["backend_store"]

pytestmark = pytest.mark.anyio

SESSION = {"X-Tierwise-Session": "s", "Content-Type": "application/json"}
R = "\ufffd"
CALL = {"id": "call_1", "type": "function", "function": {"name": "balance", "arguments": "{}"}}


def _app(store: Store, *answers: str) -> tuple[Any, str]:
    guard = CostGuard(Limits(month_tokens=10**9), StoreLedger(store))
    engine = ChatEngine(store, ScriptedModel(*answers), budget=Budget(window=4_000, reserve=500), guard=guard)
    app = create_app(store, engine)
    return app, app.state.user_of(None)


async def _post(http: httpx.AsyncClient, messages: list[dict[str, Any]]) -> httpx.Response:
    # ASCII JSON: a lone surrogate travels as its escape, as a client's JSON encoder sends it
    body = json.dumps({"model": "m", "messages": messages}).encode()
    return await http.post("/v1/chat/completions", content=body, headers=SESSION)


def _spent(store: Store, user: str, chat_id: str) -> int:
    return store.usage_totals(user, chat_id, datetime(2000, 1, 1, tzinfo=UTC)).chat_tokens


async def test_nul_and_lone_surrogates_are_stored_as_replacement_and_billed(backend_store: Store) -> None:
    store = backend_store
    app, user = _app(store, "One.", "Two.", "Three.", "Four.")
    history: list[dict[str, Any]] = [{"role": "user", "content": "Balance\x00 please"}]
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as http:
        first = await _post(http, history)
        assert first.status_code == 200, first.text
        history += [
            {"role": "assistant", "content": "One."},
            {"role": "user", "content": "And now?"},
            {"role": "assistant", "content": None, "tool_calls": [CALL]},
            {"role": "tool", "tool_call_id": "call_1", "content": "BALANCE=\x00100"},
        ]
        second = await _post(http, history)
        assert second.status_code == 200, second.text
        history += [
            {"role": "assistant", "content": "Two."},
            {"role": "user", "content": "lone \ud800 surrogate"},
        ]
        third = await _post(http, history)
        assert third.status_code == 200, third.text
        await app.state.openai_sessions.drain()
        (chat,) = store.list_chats(user)  # one session, never diverged
        contents = [m.content for m in store.list_messages(user, chat.id)]
        assert f"Balance{R} please" in contents and f"lone {R} surrogate" in contents
        assert f"BALANCE={R}100" in contents
        assert not any("\x00" in (c or "") for c in contents)
        assert contents == [
            f"Balance{R} please",
            "One.",
            "And now?",
            None,
            f"BALANCE={R}100",
            "Two.",
            f"lone {R} surrogate",
            "Three.",
        ]
        turns = store.list_audit(user, chat_id=chat.id, event="turn")
        billed = sum(
            t.details["usage"]["prompt_tokens"] + t.details["usage"]["completion_tokens"] for t in turns
        )
        assert len(turns) == 3 and _spent(store, user, chat.id) == billed > 0  # every answered turn billed
        history += [{"role": "assistant", "content": "Three."}, {"role": "user", "content": "ok"}]
        later = await _post(http, history)
        assert later.status_code == 200, later.text
        await app.state.openai_sessions.drain()
        assert store.get_chat(user, chat.id).message_count == 10


async def test_the_spend_is_recorded_when_storing_the_messages_fails(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    app, user = _app(store, "One.")

    def broken(self: ChatMemory, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError("disk full")

    monkeypatch.setattr(ChatMemory, "flush", broken)
    monkeypatch.setattr(ChatMemory, "record", broken)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as http:
        answered = await _post(http, [{"role": "user", "content": "Hello?"}])
        # Not answered (decision 77: the conversation could not be stored), but the upstream was paid.
        assert answered.status_code == 503, answered.text
        assert answered.json()["error"]["code"] == "storage_unavailable"
        await app.state.openai_sessions.drain()
    (turn,) = store.list_audit(user, event="turn")
    assert turn.details["usage"]["completion_tokens"] > 0
    assert (
        _spent(store, user, turn.chat_id)
        == turn.details["usage"]["prompt_tokens"] + turn.details["usage"]["completion_tokens"]
    )


async def test_the_upstream_gets_what_is_stored_and_a_session_needs_no_header(backend_store: Store) -> None:
    store = backend_store
    model = ScriptedModel("One.", "Two.")
    guard = CostGuard(Limits(month_tokens=10**9), StoreLedger(store))
    app = create_app(store, ChatEngine(store, model, budget=Budget(window=4_000, reserve=500), guard=guard))
    body = json.dumps(
        {"model": "m", "messages": [{"role": "user", "content": "Hi\x00 \ud800 there"}]}
    ).encode()
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as http:
        # no session header and no user: the session is derived from the (surrogate-holding) opening
        response = await http.post(
            "/v1/chat/completions", content=body, headers={"Content-Type": "application/json"}
        )
        assert response.status_code == 200, response.text
        await app.state.openai_sessions.drain()
    sent = model.requests[0].messages[-1]["content"]
    assert sent == f"Hi{R} {R} there"  # as the store keeps it, not the raw characters
