"""The OpenAI-compatible endpoint sends cache-stable packs upstream (issue 14).

An OpenAI client resends its whole conversation on every request. What the endpoint forwards must
let the upstream's prompt cache serve the front of each request: the client's system messages first
and as sent, the conversation exactly as sent while it fits, and between compaction steps each
request starting with the previous one up to its per-turn tail.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from tests.fake_openai import FakeOpenAI, fake_openai
from tests.providers.test_cache_hints import plain
from tests.server.test_openai_compat import Service, service, store
from tierwise.memory.compaction import CompactionEvent
from tierwise.packing.packer import TAIL_LEAD
from tierwise.packing.prefix import shared_prefix, stable_prefix
from tierwise.providers import OpenAICompatProvider
from tierwise.providers.base import ModelRequest
from tierwise.providers.testing import FunctionModel
from tierwise.store import Store
from tierwise.tokens import get_counter

__all__ = ["fake_openai", "store"]

pytestmark = pytest.mark.anyio

SESSION = {"X-Tierwise-Session": "cache"}
SYSTEM = [
    {"role": "system", "content": "You are a concise planning assistant.\n\nAnswer in one line.  "},
    {"role": "developer", "content": "Prices are in euros; say so. ✓"},
]


def answer(request: ModelRequest) -> str:
    return f"Noted ({len(request.messages)} messages)."


CATERERS = ("Quillon", "Brambleworth", "Ostrava Kitchens", "Pemberly Fare")
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


def note(i: int) -> str:
    """A client message; the first few name a caterer that later questions ask about."""
    caterer = f" The caterer {CATERERS[i]} serves it." if i < len(CATERERS) else ""
    return (
        f"Note {i}: venue option {i} in district {i % 17} costs {i * 7} euros, seats {20 + i} people, "
        f"has parking for {i % 9} cars and a terrace facing {('north', 'south', 'east')[i % 3]}.{caterer}"
    )


def per_turn_start(messages: Sequence[dict[str, Any]]) -> int:
    """Where the per-turn part of an upstream request begins: its tail message, else its input."""
    users = [
        i
        for i, m in enumerate(messages)
        if m["role"] == "user" and not str(m.get("content") or "").startswith(TAIL_LEAD)
    ]
    start = users[-1]
    if start > 0 and str(messages[start - 1].get("content") or "").startswith(TAIL_LEAD):
        start -= 1
    return start


async def ask(svc: Service, messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    """One request of the client's conversation; its answer is appended to ``messages``."""
    async with svc.http() as http:
        response = await http.post(
            "/v1/chat/completions", json={"model": "m", "messages": messages, **extra}, headers=SESSION
        )
    assert response.status_code == 200, response.text
    message = response.json()["choices"][0]["message"]
    messages.append({"role": "assistant", "content": message["content"]})
    return dict(response.headers)


def steps(svc: Service, headers: dict[str, Any]) -> list[CompactionEvent]:
    """The compaction steps the session's chat has taken so far (those that moved working memory)."""
    held = svc.engine.memories.held(svc.user, headers["x-tierwise-chat"])
    assert held is not None
    return [event for event in held.memory.events if event.changed]


async def test_the_clients_system_messages_go_first_byte_for_byte(store: Store) -> None:
    model = FunctionModel(answer)
    svc = service(store, model, window=1_000, reserve=200)
    messages: list[dict[str, Any]] = [*SYSTEM]
    sent: list[list[dict[str, Any]]] = []
    for i in range(24):  # past the budget: memory's head and tail come in after the system messages
        messages.append({"role": "user", "content": note(i)})
        sent.append([dict(m) for m in messages])
        await ask(svc, messages)
    assert get_counter().count_messages(messages) > 1_000
    assert model.requests[-1].messages != sent[-1]  # memory packed it
    for request in model.requests:
        assert request.messages[: len(SYSTEM)] == SYSTEM
        assert [m["content"] for m in request.messages].count(SYSTEM[0]["content"]) == 1


async def test_while_the_conversation_fits_the_upstream_gets_it_exactly_as_sent(store: Store) -> None:
    model = FunctionModel(answer)
    svc = service(store, model, window=8_000, reserve=500)
    messages: list[dict[str, Any]] = [*SYSTEM]
    for i in range(6):
        messages.append({"role": "user", "content": note(i)})
        if i == 3:  # a client-side tool call and its result, as an OpenAI client sends them back
            call = {
                "id": "call_w",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Porto"}'},
            }
            messages += [
                {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "call_w", "content": "Sunny, 24 °C."},
            ]
        sent = [dict(m) for m in messages]
        await ask(svc, messages, tools=[WEATHER])
        assert model.requests[-1].messages == sent  # nothing inserted, nothing rewritten
        assert model.requests[-1].tools == [WEATHER]


async def test_between_steps_each_request_starts_with_the_previous_one(store: Store) -> None:
    model = FunctionModel(answer)
    svc = service(store, model, window=1_500, reserve=300)
    messages: list[dict[str, Any]] = [*SYSTEM]
    for i in range(40):  # a long history first: memory packs it (one step), then turns append
        messages += [
            {"role": "user", "content": note(i)},
            {"role": "assistant", "content": f"Noted option {i}."},
        ]
    messages.append({"role": "user", "content": "Which venue had the most seats?"})
    headers = await ask(svc, messages)
    assert get_counter().count_messages(messages) > 1_500
    first_steps = len(steps(svc, headers))
    for name in CATERERS:  # about what only older turns hold: memory retrieves them into the tail
        messages.append({"role": "user", "content": f"Which caterer was {name}?"})
        await ask(svc, messages)
    assert any(m["content"].startswith(TAIL_LEAD) for r in model.requests for m in r.messages)
    assert len(steps(svc, headers)) == first_steps  # no step in these turns
    counter = get_counter()
    for before, after in zip(model.requests, model.requests[1:], strict=False):
        stable = per_turn_start(before.messages)
        assert stable > len(SYSTEM)  # a head or history, not only the system messages
        assert after.messages[:stable] == before.messages[:stable]
        repeated = shared_prefix((before.messages, before.tools), after.messages, after.tools, counter)
        assert repeated >= counter.count_messages(before.messages[:stable], prime_reply=False)


async def test_a_compaction_step_breaks_the_prefix_once_then_it_holds_again(store: Store) -> None:
    model = FunctionModel(answer)
    svc = service(store, model, window=1_000, reserve=200)
    messages: list[dict[str, Any]] = [*SYSTEM]
    stepped: list[bool] = []
    taken = 0
    for i in range(80):
        messages.append({"role": "user", "content": note(i)})
        headers = await ask(svc, messages)
        now = len(steps(svc, headers))
        stepped.append(now > taken)
        taken = now
    assert get_counter().count_messages(messages) > 3 * 1_000
    assert sum(stepped[1:]) >= 2  # the conversation outgrew the budget more than once
    kept = 0
    for n, (before, after) in enumerate(zip(model.requests, model.requests[1:], strict=False), start=1):
        stable = per_turn_start(before.messages)
        assert after.messages[: len(SYSTEM)] == SYSTEM  # the system messages survive every step
        if stepped[n]:
            continue  # a step makes the head anew: the prefix may break here, once
        assert after.messages[:stable] == before.messages[:stable], f"request {n + 1} broke the prefix"
        kept += 1
    assert kept >= len(stepped) // 2


async def upstream_messages(fake_openai: FakeOpenAI, *, cache_hints: bool) -> list[list[dict[str, Any]]]:
    """What the upstream received for each request of a growing conversation (a fresh service)."""
    backing = Store.open("sqlite://")
    try:
        provider = OpenAICompatProvider(base_url=fake_openai.url, model="m", cache_hints=cache_hints)
        svc = service(backing, provider, window=1_000, reserve=200)
        seen = len(fake_openai.requests)
        messages: list[dict[str, Any]] = [*SYSTEM]
        for i in range(24):
            question = note(i) if i < 22 else f"Which caterer was {CATERERS[i - 22]}?"
            messages.append({"role": "user", "content": question})
            fake_openai.script("Noted.")
            await ask(svc, messages)
        await svc.settled()
        await provider.aclose()
        return [body["messages"] for body in fake_openai.requests[seen:]]
    finally:
        backing.close()


async def test_with_cache_hints_the_upstream_gets_breakpoints_on_the_stable_ends_only(
    fake_openai: FakeOpenAI,
) -> None:
    off = await upstream_messages(fake_openai, cache_hints=False)
    on = await upstream_messages(fake_openai, cache_hints=True)
    assert len(on) == len(off) == 24
    assert all(isinstance(m["content"], str) for sent in off for m in sent)  # off: nothing changed
    packed = tails = 0
    for hinted, unhinted in zip(on, off, strict=True):
        unmarked, marked = plain(hinted)
        assert unmarked == unhinted  # the same text, byte for byte
        assert unhinted[: len(SYSTEM)] == SYSTEM
        # the client's last system message (its system layer's end) and the last stable message
        assert marked == sorted({len(SYSTEM) - 1, stable_prefix(unhinted) - 1})
        packed += stable_prefix(unhinted) > len(SYSTEM) and unhinted[len(SYSTEM)]["role"] == "system"
        tails += unhinted[stable_prefix(unhinted)]["content"].startswith(TAIL_LEAD)
    assert packed and tails  # memory's head and tail came in; the breakpoints kept to the history
