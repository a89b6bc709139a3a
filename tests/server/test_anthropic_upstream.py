"""tierwise in front of an Anthropic Messages upstream (``AnthropicProvider`` → the fake server).

Clients of each kind drive it with their own SDK: the official ``anthropic`` one (``create`` and
``stream``, a tool round trip with thinking blocks going back unchanged), the ``openai`` one (Chat
Completions, a tool round trip translated both ways) and LangChain's ``ChatAnthropic``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import pytest
from anthropic.types import MessageParam, ToolParam

from tests.fake_anthropic import AnthropicReply, FakeAnthropic, fake_anthropic
from tests.server.test_anthropic_messages import Service
from tests.server.test_openai_compat import service
from tierwise.budget import Budget
from tierwise.chat.engine import ChatEngine
from tierwise.providers.anthropic_api import AnthropicProvider
from tierwise.providers.base import ChoiceDelta, ModelResponse, TextDelta
from tierwise.providers.retry import RetryPolicy
from tierwise.server import create_app
from tierwise.server.threaded import serve_in_thread
from tierwise.server.wire_anthropic import StreamEncoder, message_object, usage_object
from tierwise.store import Store

__all__ = ["fake_anthropic"]

pytestmark = pytest.mark.anyio

WEATHER: ToolParam = {
    "name": "get_weather",
    "description": "The weather in a city.",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
ASK: MessageParam = {"role": "user", "content": "Weather in Paris?"}
BETA = "interleaved-thinking-2025-05-14"
SIGNED = ("The user wants the weather; call the tool.", "EqQBCkYIARgCIkB+sig-one==")
SIGNED_AGAIN = ("Sunny, say so.", "EqQBCkYIARgCIkB+sig-two==")


@pytest.fixture
def store() -> Iterator[Store]:
    opened = Store.open("sqlite://")
    yield opened
    opened.close()


def upstream(fake: FakeAnthropic) -> AnthropicProvider:
    policy = RetryPolicy(max_retries=0)
    return AnthropicProvider(
        base_url=fake.url, api_key="sk-ant-upstream", model="claude-test", retry_policy=policy
    )


async def test_an_anthropic_client_s_tool_round_trip_keeps_thinking_blocks(
    store: Store, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.script(
        AnthropicReply(
            thinking=[SIGNED],
            tool_calls=[{"id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}],
        ),
        AnthropicReply(text="It is sunny in Paris.", thinking=[SIGNED_AGAIN]),
    )
    svc = Service(store, upstream(fake_anthropic))
    thinking = {"type": "enabled", "budget_tokens": 1024}
    async with svc.client() as client:
        first = await client.messages.create(
            model="c",
            max_tokens=2048,
            messages=[ASK],
            tools=[WEATHER],
            thinking=thinking,  # type: ignore[arg-type]
            extra_body={"top_k": 5},  # (not among this SDK's typed params; the API takes it)
            extra_headers={"anthropic-beta": BETA},
        )
        assert [b.type for b in first.content] == ["thinking", "tool_use"]
        assert first.content[0].signature == SIGNED[1] and first.content[0].thinking == SIGNED[0]  # type: ignore[union-attr]
        assert first.stop_reason == "tool_use"
        use = first.content[1]
        assert use.type == "tool_use" and use.input == {"city": "Paris"} and use.id == "toolu_1"
        result: MessageParam = {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "18°C, sunny"}],
        }
        history: list[MessageParam] = [ASK, {"role": "assistant", "content": first.content}, result]  # type: ignore[typeddict-item]
        async with client.messages.stream(
            model="c",
            max_tokens=2048,
            messages=history,
            tools=[WEATHER],
            thinking=thinking,  # type: ignore[arg-type]
            extra_headers={"anthropic-beta": BETA},
        ) as stream:
            texts = [text async for text in stream.text_stream]
            final = await stream.get_final_message()
    assert "".join(texts) == "It is sunny in Paris."
    assert [b.type for b in final.content] == ["thinking", "text"]
    assert final.content[0].signature == SIGNED_AGAIN[1]  # type: ignore[union-attr]
    one, two = fake_anthropic.requests
    assert one["thinking"] == thinking and one["top_k"] == 5 and one["max_tokens"] == 2048
    assert [t["name"] for t in one["tools"]] == ["get_weather"]
    assert all(
        h["anthropic-beta"] == BETA and h["x-api-key"] == "sk-ant-upstream" for h in fake_anthropic.headers
    )
    # the thinking block went back first in the assistant's content, byte for byte
    assistant = next(m for m in two["messages"] if m["role"] == "assistant")
    block = {"type": "thinking", "thinking": SIGNED[0], "signature": SIGNED[1]}
    assert assistant["content"][0] == block
    assert [b["type"] for b in assistant["content"]] == ["thinking", "tool_use"]
    results = two["messages"][-1]["content"]
    assert results[0]["type"] == "tool_result" and results[0]["tool_use_id"] == "toolu_1"
    blocks = [*two.get("system", ()), *two["tools"], *(b for m in two["messages"] for b in m["content"])]
    assert 0 < sum("cache_control" in b for b in blocks) <= 4
    (chat,) = await svc.chats()
    stored = [m for m in await svc.stored(chat.id) if m["role"] == "assistant"]
    assert stored[0]["thinking_blocks"] == [block]  # stored with the answer it came with
    assert stored[-1]["thinking_blocks"][0]["signature"] == SIGNED_AGAIN[1]


async def test_an_upstream_error_reaches_the_anthropic_client_with_its_status(
    store: Store, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.fail(529, headers={"retry-after": "3"})
    svc = Service(store, upstream(fake_anthropic))
    async with svc.client() as client:
        with pytest.raises(anthropic.APIStatusError) as caught:
            await client.messages.create(model="c", max_tokens=64, messages=[ASK])
    assert caught.value.status_code == 529
    assert caught.value.body["error"]["type"] == "overloaded_error"  # type: ignore[index]
    assert caught.value.response.headers["retry-after"] == "3"


async def test_a_chat_completions_client_s_tool_round_trip_through_an_anthropic_upstream(
    store: Store, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.script(
        AnthropicReply(
            text="Checking.", tool_calls=[{"id": "toolu_9", "name": "get_weather", "input": {"city": "Rome"}}]
        ),
        AnthropicReply(
            text="Rome: 21°C.", usage={"input_tokens": 40, "output_tokens": 6, "cache_read_input_tokens": 900}
        ),
    )
    svc = service(store, upstream(fake_anthropic))
    tools: list[Any] = [
        {"type": "function", "function": {"name": "get_weather", "parameters": WEATHER["input_schema"]}}
    ]
    messages: list[Any] = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Rome?"},
    ]
    async with svc.client() as client:
        first = await client.chat.completions.create(
            model="m", messages=messages, tools=tools, stop=["END"], parallel_tool_calls=False
        )
        answer = first.choices[0].message
        assert first.choices[0].finish_reason == "tool_calls" and answer.content == "Checking."
        (tool_call,) = answer.tool_calls or []
        assert tool_call.id == "toolu_9" and json.loads(tool_call.function.arguments) == {"city": "Rome"}  # type: ignore[union-attr]
        messages += [
            answer.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": "toolu_9", "content": "21°C"},
        ]
        stream = await client.chat.completions.create(
            model="m", messages=messages, tools=tools, stream=True, stream_options={"include_usage": True}
        )
        chunks = [chunk async for chunk in stream]
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Rome: 21°C."
    usage = next(c.usage for c in chunks if c.usage is not None)
    assert usage.prompt_tokens == 940 and usage.prompt_tokens_details.cached_tokens == 900  # type: ignore[union-attr]
    one, two = fake_anthropic.requests
    assert one["system"][0]["text"] == "Be brief." and one["stop_sequences"] == ["END"]
    assert one["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}
    assert one["tools"][0]["name"] == "get_weather" and "thinking" not in one
    roles = [m["role"] for m in two["messages"]]
    assert roles == ["user", "assistant", "user"]
    use = {k: v for k, v in two["messages"][1]["content"][-1].items() if k != "cache_control"}
    assert use == {"type": "tool_use", "id": "toolu_9", "name": "get_weather", "input": {"city": "Rome"}}
    result = two["messages"][2]["content"][0]
    assert (
        result["type"] == "tool_result" and result["tool_use_id"] == "toolu_9" and result["content"] == "21°C"
    )
    assert "anthropic-beta" not in fake_anthropic.headers[0]


def test_langchain_chat_anthropic_through_an_anthropic_upstream(
    store: Store, fake_anthropic: FakeAnthropic
) -> None:
    from langchain_anthropic import ChatAnthropic

    fake_anthropic.script("Bonjour, Maya.")
    engine = ChatEngine(store, upstream(fake_anthropic), budget=Budget(window=4_000, reserve=500))
    with serve_in_thread(create_app(store, engine)) as base:
        chat = ChatAnthropic(model_name="claude-test", base_url=base, api_key="x", max_retries=0, timeout=30)  # type: ignore[call-arg]
        answer = chat.invoke("Say hello to Maya in French.")
    assert answer.content in ("Bonjour, Maya.", [{"type": "text", "text": "Bonjour, Maya."}])
    (sent,) = fake_anthropic.requests
    assert sent["messages"][-1]["content"][0]["text"] == "Say hello to Maya in French."


def test_the_encoder_relays_carried_blocks_before_the_text() -> None:
    redacted = {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"}
    thinking = {"type": "thinking", "thinking": "Hm.", "signature": "sig=="}
    answer = ModelResponse(
        "Hi.",
        extras=[
            ChoiceDelta(0, {"thinking_blocks": [thinking]}),
            ChoiceDelta(0, {"thinking_blocks": [redacted]}),
        ],
    )
    whole = message_object(answer, "msg_1", "m", usage_object(10, 2))
    assert whole["content"] == [thinking, redacted, {"type": "text", "text": "Hi."}]
    encoder = StreamEncoder("msg_1", "m")
    events = [*encoder.start(10), *encoder.event(answer.extras[0]), *encoder.event(answer.extras[1])]
    events += [*encoder.event(TextDelta("Hi.")), *encoder.finish("end_turn", usage_object(10, 2))]
    data = [json.loads(e.split("data: ", 1)[1]) for e in events]
    starts = [d["content_block"] for d in data if d["type"] == "content_block_start"]
    assert starts == [
        {"type": "thinking", "thinking": "", "signature": ""},
        redacted,
        {"type": "text", "text": ""},
    ]
    deltas = [d["delta"] for d in data if d["type"] == "content_block_delta"]
    assert deltas[:2] == [
        {"type": "thinking_delta", "thinking": "Hm."},
        {"type": "signature_delta", "signature": "sig=="},
    ]
    assert [d["index"] for d in data if d["type"] == "content_block_stop"] == [0, 1, 2]


def test_a_stop_sequence_reaches_the_anthropic_client_as_one() -> None:
    answer = ModelResponse("Done", finish_reason="stop", fields={"stop_sequence": "END"})
    whole = message_object(answer, "msg_1", "m", usage_object(3, 1))
    assert (whole["stop_reason"], whole["stop_sequence"]) == ("stop_sequence", "END")
