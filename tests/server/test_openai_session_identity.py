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


async def test_two_conversations_with_one_opening_interleaved_are_two_chats(store: Store) -> None:
    """Before: each request diverged from the one before it — 5 chats for 6 requests."""
    svc = service(store, ScriptedModel(*(f"Answer {i}." for i in range(6))))
    opening = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi."}]
    threads: dict[str, list[dict[str, Any]]] = {"a": list(opening), "b": list(opening)}
    chats: dict[str, set[str]] = {"a": set(), "b": set()}
    async with svc.http() as http:
        for turn in range(3):
            for name, history in threads.items():
                if turn:
                    history.append({"role": "user", "content": f"{name} asks {turn}"})
                response = await http.post("/v1/chat/completions", json={"messages": history})
                assert response.status_code == 200, response.text
                history.append(response.json()["choices"][0]["message"])
                chats[name].add(response.headers["x-tierwise-chat"])
    # "b" forks "a"'s chat (it has "a"'s opening), then each request continues its own branch
    assert len(chats["a"]) == len(chats["b"]) == 1 and chats["a"] != chats["b"]
    assert len(await svc.api_chats()) == 1 and len(await svc.api_chats("api-superseded")) == 1


async def test_a_regenerate_is_a_branch_and_the_old_branch_can_be_taken_up_again(store: Store) -> None:
    svc = service(store, ScriptedModel("First try.", "Second try.", "Go on (second).", "Go on (first)."))
    question = [{"role": "user", "content": "Name a colour."}]
    async with svc.http() as http:

        async def ask(messages: list[dict[str, Any]]) -> str:
            response = await http.post("/v1/chat/completions", json={"messages": messages})
            assert response.status_code == 200, response.text
            return response.headers["x-tierwise-chat"]

        first = await ask(question)
        regenerated = await ask(question)  # the same question again: a regenerate
        more = {"role": "user", "content": "More?"}
        second = await ask([*question, {"role": "assistant", "content": "Second try."}, more])
        back = await ask([*question, {"role": "assistant", "content": "First try."}, more])
    assert regenerated != first and second == regenerated and back == first
    (active,) = await svc.api_chats()
    assert active.id == first  # the branch the last request was on
    stored = [m["content"] for m in await svc.stored(first)]
    assert stored == ["Name a colour.", "First try.", "More?", "Go on (first)."]
