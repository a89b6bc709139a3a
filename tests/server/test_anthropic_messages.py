"""``POST /v1/messages`` and ``/v1/messages/count_tokens``, driven by the official ``anthropic`` SDK.

In-process through ``httpx2.ASGITransport`` (the SDK's HTTP client), LangChain's ``ChatAnthropic``
against the app served on loopback; the upstream is a scripted model (OpenAI-shaped events).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import anthropic
import httpx2
import pytest
from anthropic.types import MessageParam, ToolParam

from tierwise.budget import Budget
from tierwise.chat.engine import ChatEngine
from tierwise.providers.base import ModelResponse, Provider
from tierwise.providers.errors import ProviderError
from tierwise.providers.testing import ScriptedModel, tool_call
from tierwise.server import create_app
from tierwise.server.keys import create_key
from tierwise.server.threaded import serve_in_thread
from tierwise.store import Store
from tierwise.tokens import get_counter

pytestmark = pytest.mark.anyio

WEATHER: ToolParam = {
    "name": "get_weather",
    "description": "The weather in a city.",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
HI: list[MessageParam] = [{"role": "user", "content": "Hi, I'm Maya."}]


@pytest.fixture
def store() -> Iterator[Store]:
    opened = Store.open("sqlite://")
    yield opened
    opened.close()


class Service:
    """tierwise's app over ``provider``, and the official SDK pointed at it (in-process)."""

    def __init__(self, store: Store, provider: Provider, **options: Any) -> None:
        self.store = store
        self.engine = ChatEngine(store, provider, budget=Budget(window=4_000, reserve=500))
        self.app = create_app(store, self.engine, **options)
        self.user = self.app.state.local_user

    def http(self) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(transport=httpx2.ASGITransport(app=self.app), base_url="http://test")

    @asynccontextmanager
    async def client(self, api_key: str = "x") -> AsyncIterator[anthropic.AsyncAnthropic]:
        async with self.http() as http:
            yield anthropic.AsyncAnthropic(
                base_url="http://test", api_key=api_key, http_client=http, max_retries=0
            )

    async def chats(self, context_type: str = "api", user: str | None = None) -> list[Any]:
        sessions = getattr(self.app.state, "openai_sessions", None)
        if sessions is not None:  # (answers are stored after the client has them)
            await sessions.drain()
        return self.store.list_chats(user or self.user, context_type=context_type)

    async def stored(self, chat_id: str) -> list[dict[str, Any]]:
        await self.chats()
        return [dict(m.message) for m in self.store.list_messages(self.user, chat_id)]


async def test_create_answers_a_message_and_stores_the_turn(store: Store) -> None:
    model = ScriptedModel("Hello Maya.")
    svc = Service(store, model)
    async with svc.client() as client:
        raw = await client.messages.with_raw_response.create(
            model="claude-test",
            max_tokens=256,
            system=[{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
            messages=HI,
            stop_sequences=["END"],
            extra_body={"temperature": 0.3},  # (this SDK's typed params no longer list it; the API takes it)
            extra_headers={"anthropic-beta": "prompt-caching-2024-07-31"},
        )
        message = await raw.parse()
    assert message.type == "message" and message.role == "assistant"
    assert [b.type for b in message.content] == ["text"]
    assert message.content[0].text == "Hello Maya."  # type: ignore[union-attr]
    assert message.stop_reason == "end_turn"
    assert message.usage.input_tokens > 0 and message.usage.output_tokens > 0
    assert raw.headers["x-tierwise-session"].startswith("auto-")
    (request,) = model.requests
    # (the client's cache marker is stored, not sent to a Chat Completions upstream: decision 73)
    assert request.messages[0] == {"role": "system", "content": [{"type": "text", "text": "Be brief."}]}
    assert request.messages[-1] == {"role": "user", "content": "Hi, I'm Maya."}
    assert request.temperature == 0.3 and request.params == {"stop": ["END"], "max_tokens": 256}
    (chat,) = await svc.chats()
    assert [m["content"] for m in await svc.stored(chat.id)] == ["Hi, I'm Maya.", "Hello Maya."]


async def test_a_stream_reaches_get_final_message_and_keeps_anthropics_event_order(store: Store) -> None:
    model = ScriptedModel("The venue is booked.", "Again.")
    svc = Service(store, model)
    async with (
        svc.client() as client,
        client.messages.stream(model="c", max_tokens=128, messages=HI) as stream,
    ):
        texts = [text async for text in stream.text_stream]
        final = await stream.get_final_message()
    assert "".join(texts) == "The venue is booked."
    assert final.content[0].text == "The venue is booked."  # type: ignore[union-attr]
    assert final.stop_reason == "end_turn" and final.usage.output_tokens > 0
    body = {
        "model": "c",
        "max_tokens": 64,
        "stream": True,
        "messages": [{"role": "user", "content": "Once more"}],
    }
    async with svc.http() as http:
        answer = await http.post("/v1/messages", json=body)
    assert answer.headers["content-type"].startswith("text/event-stream")
    kinds = [line.removeprefix("event: ") for line in answer.text.splitlines() if line.startswith("event: ")]
    assert kinds == [
        "message_start",
        "content_block_start",
        "ping",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]


async def test_a_tool_round_trip_stays_one_chat_with_its_ids_and_arguments(store: Store) -> None:
    call = tool_call("get_weather", city="Paris")
    model = ScriptedModel(call, "It is 18°C in Paris.")
    svc = Service(store, model)
    history: list[MessageParam] = [{"role": "user", "content": "Weather in Paris?"}]
    async with svc.client() as client:
        async with client.messages.stream(
            model="c", max_tokens=128, messages=history, tools=[WEATHER]
        ) as stream:
            first = await stream.get_final_message()
        assert first.stop_reason == "tool_use"
        (use,) = first.content
        assert use.type == "tool_use" and use.id == call.id and use.input == {"city": "Paris"}
        history += [
            {"role": "assistant", "content": first.to_param()["content"]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "18°C"}]},
        ]
        second = await client.messages.create(model="c", max_tokens=128, messages=history, tools=[WEATHER])
    assert second.content[0].text == "It is 18°C in Paris."  # type: ignore[union-attr]
    assert model.requests[0].tools == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": WEATHER["description"],
                "parameters": WEATHER["input_schema"],
            },
        }
    ]
    sent = model.requests[1].messages
    assert [m["role"] for m in sent] == ["user", "assistant", "tool"]
    assert sent[1]["tool_calls"][0]["id"] == call.id
    assert json.loads(sent[1]["tool_calls"][0]["function"]["arguments"]) == {"city": "Paris"}
    assert sent[2] == {"role": "tool", "tool_call_id": call.id, "content": "18°C"}
    (chat,) = await svc.chats()  # one chat: the round trip continued it
    assert await svc.chats("api-superseded") == []
    stored = await svc.stored(chat.id)
    assert [m["role"] for m in stored] == ["user", "assistant", "tool", "assistant"]
    assert stored[1]["tool_calls"][0]["id"] == call.id


async def test_a_moved_cache_marker_continues_the_session_and_the_end_user_scopes_it(store: Store) -> None:
    model = ScriptedModel("One.", "Two.", "Other.")
    svc = Service(store, model)
    mark = {"type": "ephemeral"}
    opening: MessageParam = {"role": "user", "content": [{"type": "text", "text": "Plan the offsite."}]}
    marked: MessageParam = {
        "role": "user",
        "content": [{"type": "text", "text": "Plan the offsite.", "cache_control": mark}],
    }
    async with svc.client() as client:  # as Claude Code does: the marker on the conversation's last block
        await client.messages.create(model="c", max_tokens=64, messages=[marked], metadata={"user_id": "u1"})
        later: list[MessageParam] = [
            opening,
            {"role": "assistant", "content": "One."},
            {"role": "user", "content": [{"type": "text", "text": "Go on.", "cache_control": mark}]},
        ]
        await client.messages.create(model="c", max_tokens=64, messages=later, metadata={"user_id": "u1"})
        await client.messages.create(model="c", max_tokens=64, messages=[marked], metadata={"user_id": "u2"})
    chats = await svc.chats()
    assert len(chats) == 2  # u1's conversation continued, u2's is its own
    assert {c.entity_id.split("/")[0] for c in chats} == {"u1", "u2"}
    assert "cache_control" not in model.requests[1].messages[-1]["content"][0]  # (decision 73)


async def test_a_thinking_block_is_stored_unchanged_and_not_sent_to_chat_completions(store: Store) -> None:
    thinking = {"type": "thinking", "thinking": "Maya said her name.", "signature": "EqQBCkYIARgCIkB+sig=="}
    redacted = {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"}
    model = ScriptedModel("Maya.")
    svc = Service(store, model)
    history: list[MessageParam] = [
        *HI,
        {"role": "assistant", "content": [thinking, redacted, {"type": "text", "text": "Hello Maya."}]},  # type: ignore[list-item]
        {"role": "user", "content": "What is my name?"},
    ]
    async with svc.client() as client:
        await client.messages.create(model="c", max_tokens=64, messages=history)
    (chat,) = await svc.chats()
    stored = await svc.stored(chat.id)
    assert stored[1]["content"] == "Hello Maya."
    assert stored[1]["thinking_blocks"] == [thinking, redacted]  # signature and all
    (request,) = model.requests
    assert all("thinking_blocks" not in m for m in request.messages)


async def test_max_tokens_above_the_models_output_limit_is_lowered_to_it(store: Store) -> None:
    model = ScriptedModel("Short.", model="gpt-4o")  # a known model: 16,384 output tokens at most
    svc = Service(store, model)
    async with (
        svc.client() as client,
        client.messages.stream(model="c", max_tokens=32_000, messages=HI) as stream,
    ):
        message = await stream.get_final_message()  # (Claude Code asks for 32,000, streaming)
    assert message.content[0].text == "Short."  # type: ignore[union-attr]
    assert model.requests[0].params["max_tokens"] == 16_384


async def test_count_tokens_is_tierwise_count_of_what_would_be_sent(store: Store) -> None:
    svc = Service(store, ScriptedModel())
    async with svc.client() as client:
        counted = await client.messages.count_tokens(
            model="c", system="Be brief.", messages=HI, tools=[WEATHER]
        )
    counter = get_counter()
    tool = {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": WEATHER["description"],
            "parameters": WEATHER["input_schema"],
        },
    }
    expected = counter.count_messages(
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": HI[0]["content"]}]
    ) + counter.count_tools([tool])
    assert counted.input_tokens == expected
    assert await svc.chats() == []  # counting stores nothing


async def test_an_upstream_429_is_a_rate_limit_error_with_its_retry_after(store: Store) -> None:
    limited = ProviderError(
        "upstream: HTTP 429",
        status=429,
        retryable=True,
        detail={
            "message": "Rate limit reached for requests",
            "type": "requests",
            "code": "rate_limit_exceeded",
        },
        headers={"retry-after": "7"},
    )
    svc = Service(store, ScriptedModel(limited))
    async with svc.client() as client:
        with pytest.raises(anthropic.RateLimitError) as caught:
            await client.messages.create(model="c", max_tokens=64, messages=HI)
    assert caught.value.status_code == 429
    assert caught.value.response.headers["retry-after"] == "7"
    assert caught.value.body == {
        "type": "error",
        "error": {"type": "rate_limit_error", "message": "Rate limit reached for requests"},
    }


async def test_a_stream_that_breaks_ends_with_an_error_event(store: Store) -> None:
    from tierwise.providers.base import TextDelta
    from tierwise.providers.testing import Script

    broken = Script(
        TextDelta("Half an "), error=ProviderError("upstream: stream cut", detail={"message": "cut"})
    )
    svc = Service(store, ScriptedModel(broken))
    async with svc.client() as client:
        with pytest.raises(anthropic.APIStatusError, match="cut"):
            async with client.messages.stream(model="c", max_tokens=64, messages=HI) as stream:
                await stream.get_final_message()


async def test_a_malformed_body_is_a_400_in_anthropics_shape(store: Store) -> None:
    model = ScriptedModel()
    svc = Service(store, model)
    async with svc.client() as client:
        with pytest.raises(anthropic.BadRequestError) as caught:
            await client.messages.create(
                model="c",
                max_tokens=64,
                messages=[{"role": "user", "content": [{"type": "tool_result", "content": "x"}]}],  # type: ignore[typeddict-item]
            )
    assert caught.value.body == {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "messages.0.content.0.tool_use_id: Field required",
        },
    }
    async with svc.http() as http:
        not_json = await http.post("/v1/messages", content=b"{", headers={"content-type": "application/json"})
        unpaired = await http.post(
            "/v1/messages",
            json={
                "model": "c",
                "max_tokens": 5,
                "messages": [
                    {"role": "user", "content": "x"},
                    {
                        "role": "assistant",
                        "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}],
                    },
                    {"role": "user", "content": "where is the result?"},
                ],
            },
        )
    assert not_json.status_code == 400 and not_json.json()["error"]["type"] == "invalid_request_error"
    assert unpaired.status_code == 400 and "t1" in unpaired.json()["error"]["message"]
    assert model.requests == []  # nothing reached the upstream


async def test_beta_query_and_headers_are_accepted(store: Store) -> None:
    model = ScriptedModel("Beta hello.")
    svc = Service(store, model)
    async with svc.client() as client:
        message = await client.beta.messages.create(
            model="c", max_tokens=64, messages=HI, betas=["interleaved-thinking-2025-05-14"]
        )
    assert message.content[0].text == "Beta hello."  # type: ignore[union-attr]
    async with svc.http() as http:
        probe = await http.head("/")
        body = {"model": "c", "max_tokens": 8, "messages": HI}
        model.enqueue("Again.")
        answer = await http.post(
            "/v1/messages?beta=true", json=body, headers={"anthropic-version": "2023-06-01"}
        )
    assert probe.status_code == 200
    assert answer.status_code == 200 and answer.json()["content"][0]["text"] == "Again."


async def test_claude_codes_mid_conversation_system_message_keeps_its_place(store: Store) -> None:
    """Claude Code (2.1, ``mid-conversation-system`` beta) sends a system message after the prompt on
    every request; tierwise refused it with 400 and Claude Code exited on its first call."""
    model = ScriptedModel("hello")
    svc = Service(store, model)
    skills = "The following agent types and skills are available: general-purpose, Explore."
    body = {
        "model": "claude-opus-4-8",
        "max_tokens": 64000,
        "system": [{"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}}],
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "<system-reminder>Today is Friday.</system-reminder>"},
                    {"type": "text", "text": "run echo hello", "cache_control": {"type": "ephemeral"}},
                ],
            },
            {"role": "system", "content": skills},
        ],
    }
    headers = {"anthropic-version": "2023-06-01", "anthropic-beta": "mid-conversation-system-2026-04-07"}
    async with svc.http() as http:
        answer = await http.post("/v1/messages?beta=true", json=body, headers=headers)
        counted = await http.post("/v1/messages/count_tokens?beta=true", json=body, headers=headers)
    assert answer.status_code == 200, answer.text
    assert answer.json()["content"][0]["text"] == "hello"
    assert counted.status_code == 200 and counted.json()["input_tokens"] > 0
    (request,) = model.requests
    assert [m["role"] for m in request.messages] == ["system", "user", "system"]
    assert request.messages[-1] == {"role": "system", "content": skills}  # where Claude Code put it


async def test_x_api_key_is_checked_when_keys_are_required(store: Store) -> None:
    svc = Service(store, ScriptedModel("Keyed."), require_key=True)
    user = store.create_user("ada", user_id="ada").id
    key, _ = create_key(store, user, "cli")
    async with svc.client(api_key="wrong") as client:
        with pytest.raises(anthropic.AuthenticationError) as caught:
            await client.messages.create(model="c", max_tokens=8, messages=HI)
    assert caught.value.body["error"]["type"] == "authentication_error"  # type: ignore[index]
    async with svc.client(api_key=key) as client:
        message = await client.messages.create(model="c", max_tokens=8, messages=HI)
    assert message.content[0].text == "Keyed."  # type: ignore[union-attr]
    assert len(await svc.chats(user=user)) == 1


def test_langchain_chat_anthropic_invokes_a_tool(store: Store) -> None:
    from langchain_anthropic import ChatAnthropic
    from langchain_core.tools import tool

    @tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return "18°C"

    model = ScriptedModel(tool_call("get_weather", city="Paris"))
    engine = ChatEngine(store, model, budget=Budget(window=4_000, reserve=500))
    with serve_in_thread(create_app(store, engine)) as base:
        chat = ChatAnthropic(model_name="claude-test", base_url=base, api_key="x", max_retries=0, timeout=30)  # type: ignore[call-arg]
        answer = chat.bind_tools([get_weather]).invoke("Weather in Paris?")
    (call,) = answer.tool_calls
    assert (call["name"], call["args"]) == ("get_weather", {"city": "Paris"})
    (request,) = model.requests
    assert request.tools[0]["function"]["name"] == "get_weather"


def _anthropic(messages: list[dict[str, Any]]) -> tuple[str, list[MessageParam]]:
    """A Chat Completions history as Anthropic's: its system text, and its messages as blocks."""
    system, out = "", []
    for message in messages:
        role = message["role"]
        if role == "system":
            system = message["content"]
        elif role == "tool":
            out.append(
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": message["tool_call_id"],
                            "content": message["content"],
                        }
                    ],
                }
            )
        elif message.get("tool_calls"):
            uses = [
                {
                    "type": "tool_use",
                    "id": c["id"],
                    "name": c["function"]["name"],
                    "input": json.loads(c["function"]["arguments"]),
                }
                for c in message["tool_calls"]
            ]
            out.append({"role": "assistant", "content": uses})
        else:
            out.append({"role": role, "content": message["content"]})
    return system, out  # type: ignore[return-value]


async def test_tierwise_answers_its_own_retrieval_calls_out_of_an_anthropic_clients_sight(
    store: Store,
) -> None:
    from tests.server.test_openai_recall import OURS, history, log, sha

    opened = tool_call("open_blob", sha256=sha(3))
    model = ScriptedModel(
        ModelResponse(text="Let me open worker 3's log.", tool_calls=[opened]), "Step 36 took 36ms."
    )
    engine = ChatEngine(store, model, budget=Budget(window=8_000, reserve=500))
    app = create_app(store, engine)
    system, messages = _anthropic(history())
    read_log: ToolParam = {
        "name": "read_log",
        "description": "A worker's build log.",
        "input_schema": {
            "type": "object",
            "properties": {"worker": {"type": "integer"}},
            "required": ["worker"],
        },
    }
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://test") as http:
        client = anthropic.AsyncAnthropic(
            base_url="http://test", api_key="x", http_client=http, max_retries=0
        )
        async with client.messages.stream(
            model="c", max_tokens=256, system=system, messages=messages, tools=[read_log]
        ) as stream:
            final = await stream.get_final_message()
    assert [b.type for b in final.content] == ["text"]  # the retrieval call never reaches the client
    assert final.content[0].text == "Let me open worker 3's log.\n\nStep 36 took 36ms."  # type: ignore[union-attr]
    assert final.stop_reason == "end_turn"
    first, second = model.requests
    assert [t["function"]["name"] for t in first.tools] == ["read_log", *OURS]
    assert any(m.get("content") == log(3) for m in second.messages)
