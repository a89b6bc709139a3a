"""Which session a ``/v1`` request continues, as real clients send it (issue 30)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.server.test_openai_compat import WEATHER, service
from tierwise.providers.testing import ScriptedModel, tool_call
from tierwise.store import Store

pytestmark = pytest.mark.anyio


def _call(call_id: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": "get_weather", "arguments": arguments}}


@pytest.mark.parametrize("resend", [json.dumps, lambda a: json.dumps(a, separators=(",", ":"))])
async def test_a_tool_call_resent_in_another_spelling_continues_the_chat(store: Store, resend: Any) -> None:
    """LangChain resends ``{"city":"Paris"}`` as ``{"city": "Paris"}``, pydantic-ai the other way round."""
    model = ScriptedModel(tool_call("get_weather", city="Paris"), "Sunny in Paris.", "You asked about Paris.")
    svc = service(store, model)
    history: list[dict[str, Any]] = [{"role": "user", "content": "Weather in Paris?"}]
    async with svc.http() as http:
        first = await http.post("/v1/chat/completions", json={"messages": history, "tools": [WEATHER]})
        call = first.json()["choices"][0]["message"]["tool_calls"][0]
        arguments = resend({"city": "Paris", **json.loads(call["function"]["arguments"])})
        history += [
            {"role": "assistant", "content": None, "tool_calls": [_call(call["id"], " " + arguments)]},
            {"role": "tool", "tool_call_id": call["id"], "content": "sunny, 21°C"},
        ]
        second = await http.post("/v1/chat/completions", json={"messages": history, "tools": [WEATHER]})
        history += [
            {"role": "assistant", "content": "Sunny in Paris."},
            {"role": "user", "content": "Where?"},
        ]
        third = await http.post("/v1/chat/completions", json={"messages": history, "tools": [WEATHER]})
    chats = {r.headers["x-tierwise-chat"] for r in (first, second, third)}
    assert len(chats) == 1, chats
    assert [c.id for c in await svc.api_chats()] == list(chats)
    assert await svc.api_chats("api-superseded") == []


async def test_changed_arguments_are_still_a_divergence(store: Store) -> None:
    svc = service(store, ScriptedModel(tool_call("get_weather", city="Paris"), "Sunny.", "Rainy."))
    history: list[dict[str, Any]] = [{"role": "user", "content": "Weather in Paris?"}]
    async with svc.http() as http:
        first = await http.post("/v1/chat/completions", json={"messages": history, "tools": [WEATHER]})
        call_id = first.json()["choices"][0]["message"]["tool_calls"][0]["id"]
        history += [
            {"role": "assistant", "content": None, "tool_calls": [_call(call_id, '{"city": "Rome"}')]},
            {"role": "tool", "tool_call_id": call_id, "content": "rain"},
        ]
        second = await http.post("/v1/chat/completions", json={"messages": history, "tools": [WEATHER]})
    assert first.headers["x-tierwise-chat"] != second.headers["x-tierwise-chat"]


async def test_the_end_user_scopes_sessions_and_does_not_name_one(store: Store) -> None:
    """OpenAI advises ``user`` = the end user's id: each of their conversations is still its own."""
    svc = service(store, ScriptedModel("One.", "Two.", "Three.", "Four."))
    async with svc.http() as http:

        async def ask(user: str, messages: list[dict[str, Any]]) -> str:
            response = await http.post("/v1/chat/completions", json={"messages": messages, "user": user})
            assert response.status_code == 200, response.text
            return response.headers["x-tierwise-chat"]

        opening = [{"role": "user", "content": "Plan my week."}]
        alice = await ask("alice", opening)
        bob = await ask("bob", opening)  # the same opening, another end user: another session
        other = await ask("alice", [{"role": "user", "content": "Summarise my notes."}])
        again = await ask(
            "alice", [*opening, {"role": "assistant", "content": "One."}, {"role": "user", "content": "And?"}]
        )
    assert len({alice, bob, other}) == 3 and again == alice
    assert await svc.api_chats("api-superseded") == []


@pytest.mark.parametrize(
    ("field", "value"),
    [("prompt_cache_key", "conv-42"), ("metadata", {"session_id": "conv-42"})],
)
async def test_a_key_the_client_names_wins_over_the_opening(store: Store, field: str, value: Any) -> None:
    """Codex CLI sends its conversation's id as ``prompt_cache_key``; its compaction rewrites the opening."""
    svc = service(store, ScriptedModel("One.", "Two."))
    async with svc.http() as http:
        first = await http.post(
            "/v1/chat/completions", json={"messages": [{"role": "user", "content": "Hi."}], field: value}
        )
        second = await http.post(
            "/v1/chat/completions", json={"messages": [{"role": "user", "content": "Other."}], field: value}
        )
    assert first.headers["x-tierwise-session"] == second.headers["x-tierwise-session"] == "conv-42"


async def test_a_session_has_a_readable_title_and_its_status_is_found_by_its_key(store: Store) -> None:
    svc = service(store, ScriptedModel("Done."))
    body = {"messages": [{"role": "user", "content": "Please fix the login bug in auth.py"}]}
    async with svc.http() as http:
        answered = await http.post("/v1/chat/completions", json=body)
        key = answered.headers["x-tierwise-session"]
        (chat,) = await svc.api_chats()
        status = await http.get("/api/context/status", params={"sessionId": key})
        unknown = await http.get("/api/context/status", params={"sessionId": "no-such-session"})
    assert key.startswith("auto-") and chat.title == "Fix the login bug in auth"
    assert status.status_code == 200 and status.json()["sessionId"] == chat.id
    assert unknown.status_code == 404
