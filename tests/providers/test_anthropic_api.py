"""AnthropicProvider: the request it encodes, and the real ``anthropic`` SDK against the fake server."""

from __future__ import annotations

import json
import logging
import socket
from typing import Any

import pytest

from tests.fake_anthropic import AnthropicReply, FakeAnthropic
from tierwise.providers import ModelRequest, ProviderError, Retry, RetryPolicy, collect
from tierwise.providers.anthropic_api import AnthropicProvider
from tierwise.providers.anthropic_request import DEFAULT_MAX_TOKENS, encode_request
from tierwise.providers.base import ChoiceDelta, Done, Native, TextDelta, ToolCall, ToolCallDelta, Usage

pytestmark = pytest.mark.anyio

FAST = RetryPolicy(max_retries=3, base_delay=0.001, max_delay=1.0)
EPHEMERAL = {"type": "ephemeral"}
THINKING = {"type": "thinking", "thinking": "The user wants Paris…", "signature": "EqQBCkYIARgCIkB+sig=="}
REDACTED = {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather in a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]
ASK = ModelRequest([{"role": "user", "content": "Weather in Paris?"}])


def call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def marks(body: dict[str, Any]) -> list[Any]:
    """Every cache_control marker of a body, in Anthropic's prefix order (tools, system, messages)."""
    blocks = [*body.get("tools", ()), *body.get("system", ())]
    blocks += [b for m in body["messages"] for b in m["content"]]
    return [b["cache_control"] for b in blocks if "cache_control" in b]


def provider(fake: FakeAnthropic, **options: Any) -> AnthropicProvider:
    options.setdefault("model", "claude-test")
    options.setdefault("retry_policy", FAST)
    return AnthropicProvider(base_url=fake.url, api_key="sk-ant-test", **options)


async def events_of(p: AnthropicProvider, request: ModelRequest = ASK) -> list[Any]:
    try:
        return [event async for event in p.stream(request)]
    finally:
        await p.aclose()


# -- encoding ----------------------------------------------------------------------------------


def test_tool_results_merge_into_one_user_turn_and_turns_alternate() -> None:
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris and Rome?"},
        {
            "role": "assistant",
            "content": "Checking.",
            "tool_calls": [call("t1", "get_weather", '{"city": "Paris"}'), call("t2", "get_weather", "{")],
        },
        {"role": "tool", "tool_call_id": "t1", "content": "Sunny"},
        {"role": "tool", "tool_call_id": "t2", "content": "no such city", "is_error": True},
        {"role": "user", "content": "And tomorrow?"},
    ]
    body = encode_request(ModelRequest(messages, tools=TOOLS), "claude-test").body
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assistant, results = body["messages"][1]["content"], body["messages"][2]["content"]
    assert [b["type"] for b in assistant] == ["text", "tool_use", "tool_use"]
    assert assistant[1]["input"] == {"city": "Paris"} and assistant[2]["input"] == {}  # bad JSON: {}
    assert [b["type"] for b in results] == ["tool_result", "tool_result", "text"]
    assert results[0]["tool_use_id"] == "t1" and results[0]["content"] == "Sunny"
    assert results[1]["is_error"] is True and "is_error" not in results[0]
    assert results[2]["text"] == "And tomorrow?"
    assert body["system"][0]["text"] == "Be brief."
    assert body["tools"][0]["name"] == "get_weather" and body["tools"][0]["input_schema"]["type"] == "object"


def test_bad_arguments_are_logged(caplog: pytest.LogCaptureFixture) -> None:
    messages = [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": None, "tool_calls": [call("t1", "f", "not json")]},
        {"role": "tool", "tool_call_id": "t1", "content": "ok"},
    ]
    with caplog.at_level(logging.WARNING):
        body = encode_request(ModelRequest(messages), "claude-test").body
    assert body["messages"][1]["content"] == [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}]
    assert "not a JSON object" in caplog.text


def test_thinking_blocks_go_first_unchanged() -> None:
    answer = {
        "role": "assistant",
        "content": "It is sunny.",
        "thinking_blocks": [THINKING, REDACTED],
        "tool_calls": [call("t1", "get_weather", '{"city": "Paris"}')],
    }
    messages = [
        {"role": "user", "content": "Hi"},
        answer,
        {"role": "tool", "tool_call_id": "t1", "content": "x"},
    ]
    body = encode_request(ModelRequest(messages, tools=TOOLS), "claude-test").body
    blocks = body["messages"][1]["content"]
    assert blocks[:2] == [THINKING, REDACTED]  # signature and all, byte for byte
    assert [b["type"] for b in blocks[2:]] == ["text", "tool_use"]
    assert "cache_control" not in THINKING  # the caller's blocks are not changed


def test_images_become_image_blocks() -> None:
    parts = [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
        {"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg"}},
        {"type": "input_audio", "input_audio": {"data": "", "format": "wav"}},
    ]
    body = encode_request(ModelRequest([{"role": "user", "content": parts}]), "claude-test").body
    text, data, url = body["messages"][0]["content"]
    assert text["text"] == "What is this?"
    assert data["source"] == {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}
    assert url["source"] == {"type": "url", "url": "https://example.com/cat.jpg"}


def test_a_mid_conversation_system_message_is_folded_unless_the_client_sent_the_beta() -> None:
    messages = [
        {"role": "user", "content": "Hi"},
        {"role": "system", "content": "Agents: none."},
        {"role": "assistant", "content": "Hello."},
        {"role": "user", "content": "Bye"},
    ]
    folded = encode_request(ModelRequest(messages), "claude-test").body
    assert [m["role"] for m in folded["messages"]] == ["user", "assistant", "user"]
    assert [b["text"] for b in folded["messages"][0]["content"]] == ["Hi", "Agents: none."]
    beta = {"anthropic-beta": "mid-conversation-system-2026-04-07"}
    native = Native("anthropic", {}, beta)
    kept = encode_request(ModelRequest(messages, native=native), "claude-test")
    assert [m["role"] for m in kept.body["messages"]] == ["user", "system", "assistant", "user"]
    assert kept.headers == beta


def test_cache_markers_at_tools_system_breakpoints_and_the_last_message_four_at_most() -> None:
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "one"},
        {"role": "assistant", "content": "two"},
        {"role": "user", "content": [{"type": "text", "text": "three", "cache_control": EPHEMERAL}]},
        {"role": "assistant", "content": "four"},
        {"role": "user", "content": "five"},
    ]
    request = ModelRequest(messages, tools=TOOLS, cache_breakpoints=(0, 2, 4))
    body = encode_request(request, "claude-test").body
    assert len(marks(body)) == 4
    assert body["system"][0]["cache_control"] == EPHEMERAL
    assert body["messages"][-1]["content"][-1]["cache_control"] == EPHEMERAL  # the last message
    assistant_four = body["messages"][3]["content"][0]
    assert assistant_four["cache_control"] == EPHEMERAL  # the latest breakpoint
    # the client's marker inside the conversation is dropped (not a block tierwise marks)
    assert "cache_control" not in body["messages"][2]["content"][0]
    # the fourth: the next breakpoint (message 2), the tool definition had no room left
    assert body["messages"][1]["content"][0]["cache_control"] == EPHEMERAL
    assert "cache_control" not in body["tools"][0]
    # nothing but system and one message: system, last message, and the tool
    small = encode_request(ModelRequest(messages[:2], tools=TOOLS, cache_breakpoints=(0,)), "m").body
    assert len(marks(small)) == 3 and body["tools"] is not small["tools"]
    assert small["tools"][0]["cache_control"] == EPHEMERAL


def test_client_markers_on_system_and_tools_count_and_one_hour_marks_come_first() -> None:
    hour = {"type": "ephemeral", "ttl": "1h"}
    system = {"role": "system", "content": [{"type": "text", "text": "A", "cache_control": hour}]}
    tools = [{**TOOLS[0], "cache_control": hour}]
    messages = [system, {"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}]
    messages += [{"role": "user", "content": "z"}]
    body = encode_request(ModelRequest(messages, tools=tools, cache_breakpoints=(1, 2)), "m").body
    assert marks(body)[:2] == [hour, hour]  # honoured, and counted: two left for the conversation
    assert len(marks(body)) == 4 and body["messages"][-1]["content"][-1]["cache_control"] == EPHEMERAL
    # a client's 1h marker on a block tierwise marks anyway is kept, and ours before it turn 1h
    later = [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}]
    later += [{"role": "user", "content": [{"type": "text", "text": "z", "cache_control": hour}]}]
    body = encode_request(
        ModelRequest([{"role": "system", "content": "S"}, *later], cache_breakpoints=(0, 2)), "m"
    ).body
    assert marks(body) == [hour, hour, hour]


def test_parameters_are_translated_and_native_fields_sent_only_when_native() -> None:
    params = {
        "stop": "END",
        "top_p": 0.9,
        "parallel_tool_calls": False,
        "user": "maya",
        "seed": 7,
        "max_completion_tokens": 300,
    }
    request = ModelRequest(ASK.messages, tools=TOOLS, tool_choice="required", temperature=1.5, params=params)
    body = encode_request(request, "claude-test").body
    assert body["stop_sequences"] == ["END"] and body["top_p"] == 0.9 and body["temperature"] == 1.0
    assert body["tool_choice"] == {"type": "any", "disable_parallel_tool_use": True}
    assert body["metadata"] == {"user_id": "maya"} and body["max_tokens"] == 300 and "seed" not in body
    named = {"type": "function", "function": {"name": "get_weather"}}
    for choice, expected in (
        ("auto", {"type": "auto"}),
        ("none", {"type": "none"}),
        (named, {"type": "tool", "name": "get_weather"}),
    ):
        assert (
            encode_request(ModelRequest(ASK.messages, tools=TOOLS, tool_choice=choice), "m").body[
                "tool_choice"
            ]
            == expected
        )
    assert encode_request(ASK, "my-local-model").body["max_tokens"] == DEFAULT_MAX_TOKENS
    assert encode_request(ASK, "claude-sonnet-4-5").body["max_tokens"] == 64_000  # the model's output limit
    server_tool = {"type": "web_search_20250305", "name": "web_search", "max_uses": 2}
    fields = {"thinking": {"type": "enabled", "budget_tokens": 1024}, "top_k": 5, "tools": [server_tool]}
    headers = {"anthropic-beta": "interleaved-thinking-2025-05-14"}
    native = encode_request(
        ModelRequest(ASK.messages, tools=TOOLS, native=Native("anthropic", fields, headers)), "m"
    )
    assert native.body["thinking"] == fields["thinking"] and native.body["top_k"] == 5
    assert [t["name"] for t in native.body["tools"]] == ["get_weather", "web_search"]
    assert native.headers == headers
    other = encode_request(ModelRequest(ASK.messages, native=Native("responses", {"top_k": 5}, headers)), "m")
    assert "top_k" not in other.body and other.headers == {}


# -- the wire, through the SDK -----------------------------------------------------------------


async def test_text_tool_calls_usage_and_the_request_sent(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script(
        AnthropicReply(
            text="Let me check.",
            tool_calls=[{"id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}],
            usage={
                "input_tokens": 30,
                "output_tokens": 9,
                "cache_read_input_tokens": 1000,
                "cache_creation_input_tokens": 200,
            },
        )
    )
    events = await events_of(provider(fake_anthropic), ModelRequest(ASK.messages, tools=TOOLS))
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Let me check."
    pieces = [e for e in events if isinstance(e, ToolCallDelta)]
    assert pieces[0].id == "toolu_1" and pieces[0].name == "get_weather" and len(pieces) > 2
    assert json.loads("".join(p.arguments_delta for p in pieces)) == {"city": "Paris"}
    assert [e for e in events if isinstance(e, ToolCall)] == [
        ToolCall("toolu_1", "get_weather", '{"city": "Paris"}')
    ]
    (usage,) = [e for e in events if isinstance(e, Usage)]
    assert (usage.prompt_tokens, usage.completion_tokens, usage.cached_tokens) == (1230, 9, 1000)
    assert usage.details["cache_creation_input_tokens"] == 200
    assert isinstance(events[-1], Done) and events[-1].finish_reason == "tool_calls"
    (sent,), (headers,) = fake_anthropic.requests, fake_anthropic.headers
    assert sent["model"] == "claude-test" and sent["stream"] is True and sent["max_tokens"] > 0
    assert headers["x-api-key"] == "sk-ant-test" and "authorization" not in headers


async def test_thinking_blocks_are_relayed_whole_with_their_signatures(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script(
        AnthropicReply(
            text="Paris.",
            thinking=[(THINKING["thinking"], THINKING["signature"])],
            redacted=[REDACTED["data"]],
        )
    )
    response = await collect(provider(fake_anthropic).stream(ASK))
    assert response.text == "Paris."
    assert response.extras == [
        ChoiceDelta(0, {"thinking_blocks": [THINKING]}),
        ChoiceDelta(0, {"thinking_blocks": [REDACTED]}),
    ]


@pytest.mark.parametrize(
    ("stop", "finish"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("max_tokens", "length"),
        ("refusal", "content_filter"),
        ("pause_turn", "pause_turn"),
    ],
)
async def test_stop_reasons(fake_anthropic: FakeAnthropic, stop: str, finish: str) -> None:
    fake_anthropic.script(AnthropicReply(text="Hi", stop_reason=stop))
    response = await collect(provider(fake_anthropic).stream(ASK))
    assert response.finish_reason == finish


async def test_a_429_with_retry_after_is_a_provider_error(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.fail(429, headers={"retry-after": "7", "x-should-retry": "true"})
    with pytest.raises(ProviderError) as caught:
        await events_of(provider(fake_anthropic, retry_policy=RetryPolicy(max_retries=0)))
    error = caught.value
    assert error.status == 429 and error.retryable and error.retry_after == 7.0
    assert error.detail == {"type": "rate_limit_error", "message": "fake error 429"}
    assert error.headers == {"retry-after": "7", "x-should-retry": "true"}


async def test_overloaded_and_server_errors_are_retried(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.fail(529)
    fake_anthropic.fail(500)
    fake_anthropic.script("At last.")
    events = await events_of(provider(fake_anthropic))
    assert [e.attempt for e in events if isinstance(e, Retry)] == [1, 2]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "At last."
    assert len(fake_anthropic.requests) == 3
    fake_anthropic.fail(400)
    with pytest.raises(ProviderError) as caught:  # not retried
        await events_of(provider(fake_anthropic))
    assert caught.value.status == 400 and not caught.value.retryable and len(fake_anthropic.requests) == 4


async def test_an_error_event_mid_stream_and_a_cut_stream(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script(
        AnthropicReply(text="Half", error_event={"type": "overloaded_error", "message": "Overloaded"})
    )
    with pytest.raises(ProviderError) as caught:
        await events_of(provider(fake_anthropic))
    assert caught.value.status == 529 and caught.value.detail == {
        "type": "overloaded_error",
        "message": "Overloaded",
    }
    assert len(fake_anthropic.requests) == 1  # text had been streamed: no retry
    fake_anthropic.script(AnthropicReply(text="", cut=True), "Whole.")
    events = await events_of(provider(fake_anthropic))
    assert any(isinstance(e, Retry) for e in events) and isinstance(events[-1], Done)


async def test_a_refused_connection_is_unanswered() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    p = AnthropicProvider(
        base_url=f"http://127.0.0.1:{port}/v1", model="m", retry_policy=RetryPolicy(max_retries=0)
    )
    with pytest.raises(ProviderError) as caught:
        await events_of(p)
    assert caught.value.unanswered and caught.value.status is None


async def test_server_tool_blocks_are_carried_whole_and_sent_back(fake_anthropic: FakeAnthropic) -> None:
    use = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "Paris"}}
    found = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}
    fake_anthropic.script(AnthropicReply(text="Found it.", blocks=[use, found]))
    response = await collect(provider(fake_anthropic).stream(ASK))
    assert response.extras == [
        ChoiceDelta(0, {"server_blocks": [use]}),
        ChoiceDelta(0, {"server_blocks": [found]}),
    ]
    answer = {
        "role": "assistant",
        "content": "Found it.",
        "server_blocks": [use, found],
        "thinking_blocks": [THINKING],
    }
    body = encode_request(
        ModelRequest([*ASK.messages, answer, {"role": "user", "content": "Thanks"}]), "m"
    ).body
    sent = body["messages"][1]["content"]
    assert sent[:3] == [THINKING, use, found] and sent[3]["text"] == "Found it."
