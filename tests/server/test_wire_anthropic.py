"""The Anthropic Messages codec against the ``anthropic`` SDK's types.

``server/anthropic_input.py`` decodes, ``server/wire_anthropic.py`` encodes.

Requests are built with the SDK's typed params; what the encoder writes is parsed with
``anthropic.types.Message`` and fed, event by event, through the SDK's own stream accumulator.
"""

from __future__ import annotations

import json
from typing import Any

import anthropic
import pytest
from anthropic.lib.streaming._messages import accumulate_event
from anthropic.types import (
    MessageCreateParams,
    MessageParam,
    RawMessageStreamEvent,
    TextBlockParam,
    ToolParam,
)
from pydantic import TypeAdapter

from tierwise.providers.base import Done, ModelResponse, TextDelta, ToolCall, ToolCallDelta, Usage
from tierwise.server.anthropic_input import InvalidRequest, decode_request, for_chat_completions, key_message
from tierwise.server.wire_anthropic import (
    StreamEncoder,
    error_body,
    message_object,
    stop_reason,
    usage_object,
)

WEATHER: ToolParam = {
    "name": "get_weather",
    "description": "The weather in a city.",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
THINKING = {"type": "thinking", "thinking": "Paris is in France, so…", "signature": "EqQBCkYIARgCIkB…sig=="}
PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
_EVENTS: TypeAdapter[RawMessageStreamEvent] = TypeAdapter(RawMessageStreamEvent)


def test_a_typed_request_decodes_into_the_conversation() -> None:
    system: list[TextBlockParam] = [
        {"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}},
    ]
    history: list[MessageParam] = [
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": [
                THINKING,  # type: ignore[list-item]
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"city": "Paris"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01", "content": "18°C", "is_error": False},
                {"type": "text", "text": "And a picture?"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PIXEL}},
                {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}},
            ],
        },
    ]
    params: MessageCreateParams = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 512,
        "system": system,
        "messages": history,
        "tools": [WEATHER],
        "tool_choice": {"type": "auto", "disable_parallel_tool_use": True},
        "temperature": 0.2,
        "top_p": 0.9,
        "top_k": 40,
        "stop_sequences": ["END"],
        "metadata": {"user_id": "user-7"},
        "thinking": {"type": "enabled", "budget_tokens": 1024},
    }
    decoded = decode_request(json.loads(json.dumps(params)))

    assert decoded.system == [{"role": "system", "content": system}]  # the blocks as text parts, as sent
    user, assistant, result, follow = decoded.messages
    assert user == {"role": "user", "content": "Weather in Paris?"}
    assert assistant == {
        "role": "assistant",
        "content": "Checking.",
        "tool_calls": [
            {
                "id": "toolu_01",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            }
        ],
        "thinking_blocks": [THINKING],
    }
    assert result == {"role": "tool", "tool_call_id": "toolu_01", "content": "18°C", "is_error": False}
    assert follow["role"] == "user"
    assert follow["content"] == [
        {"type": "text", "text": "And a picture?"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PIXEL}"}},
        {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
    ]
    assert decoded.tools == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "The weather in a city.",
                "parameters": WEATHER["input_schema"],
            },
        }
    ]
    assert decoded.tool_choice == "auto"
    assert decoded.params == {"top_p": 0.9, "stop": ["END"], "parallel_tool_calls": False}
    assert (decoded.max_tokens, decoded.temperature, decoded.user) == (512, 0.2, "user-7")
    assert decoded.extra == {"top_k": 40, "thinking": {"type": "enabled", "budget_tokens": 1024}}
    # A Chat Completions upstream gets neither the thinking blocks nor is_error; the store keeps both.
    sent = for_chat_completions(decoded.messages)
    assert "thinking_blocks" not in sent[1] and "is_error" not in sent[2]
    assert sent[0] is decoded.messages[0] and decoded.messages[1]["thinking_blocks"] == [THINKING]


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ({"type": "auto"}, "auto"),
        ({"type": "any"}, "required"),
        ({"type": "none"}, "none"),
        ({"type": "tool", "name": "get_weather"}, {"type": "function", "function": {"name": "get_weather"}}),
    ],
)
def test_tool_choice_maps_onto_openais(choice: dict[str, Any], expected: Any) -> None:
    body = {
        "model": "m",
        "max_tokens": 5,
        "messages": [{"role": "user", "content": "x"}],
        "tools": [{"name": "get_weather", "input_schema": {"type": "object"}}],
        "tool_choice": choice,
    }
    assert decode_request(body).tool_choice == expected


def test_tool_results_come_first_and_keep_block_content_and_errors() -> None:
    content = [
        {
            "type": "tool_result",
            "tool_use_id": "a",
            "content": [{"type": "text", "text": "boom"}],
            "is_error": True,
        },
        {"type": "tool_result", "tool_use_id": "b", "cache_control": {"type": "ephemeral"}},
    ]
    body = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": content}]}
    assert decode_request(body).messages == [
        {
            "role": "tool",
            "tool_call_id": "a",
            "content": [{"type": "text", "text": "boom"}],
            "is_error": True,
        },
        {"role": "tool", "tool_call_id": "b", "content": "", "cache_control": {"type": "ephemeral"}},
    ]


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"max_tokens": 5, "messages": [{"role": "user", "content": "x"}]}, "model"),
        ({"model": "m", "messages": [{"role": "user", "content": "x"}]}, "max_tokens"),
        ({"model": "m", "max_tokens": "5", "messages": [{"role": "user", "content": "x"}]}, "max_tokens"),
        ({"model": "m", "max_tokens": 5, "messages": []}, "messages"),
        (
            {"model": "m", "max_tokens": 5, "messages": [{"role": "tool", "content": "x"}]},
            "messages.0.role",
        ),
        ({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": 3}]}, "messages.0.content"),
        (
            {
                "model": "m",
                "max_tokens": 5,
                "messages": [{"role": "user", "content": [{"type": "tool_result"}]}],
            },
            "messages.0.content.0.tool_use_id",
        ),
        (
            {
                "model": "m",
                "max_tokens": 5,
                "messages": [{"role": "user", "content": "x"}],
                "temperature": 1.5,
            },
            "temperature",
        ),
        (
            {
                "model": "m",
                "max_tokens": 5,
                "messages": [{"role": "user", "content": "x"}],
                "tools": [{"name": "f"}],
            },
            "tools.0.input_schema",
        ),
    ],
)
def test_a_malformed_request_names_where(body: dict[str, Any], says: str) -> None:
    with pytest.raises(InvalidRequest, match=rf"^{says.replace('.', '[.]')}\b"):
        decode_request(body)


def test_the_session_key_reads_no_cache_markers() -> None:
    marked = {
        "role": "user",
        "content": [{"type": "text", "text": "Hi", "cache_control": {"type": "ephemeral"}}],
    }
    plain = {"role": "user", "content": [{"type": "text", "text": "Hi"}]}
    assert key_message(marked) == key_message(plain)


def test_a_whole_answer_is_an_sdk_message() -> None:
    answer = ModelResponse(
        text="Let me check.",
        tool_calls=[ToolCall("toolu_9", "get_weather", '{"city": "Paris"}')],
        finish_reason="tool_calls",
    )
    usage = usage_object(1200, 30, cached_tokens=1000)
    message = anthropic.types.Message.model_validate(message_object(answer, "msg_1", "gpt-x", usage))
    assert message.stop_reason == "tool_use"
    text, call = message.content
    assert text.type == "text" and text.text == "Let me check."
    assert call.type == "tool_use" and call.id == "toolu_9" and call.input == {"city": "Paris"}
    assert (message.usage.input_tokens, message.usage.cache_read_input_tokens) == (200, 1000)
    assert message.usage.output_tokens == 30


@pytest.mark.parametrize(
    ("finish", "calls", "reason"),
    [
        ("stop", False, "end_turn"),
        ("length", False, "max_tokens"),
        ("tool_calls", True, "tool_use"),
        (None, False, "end_turn"),
        ("content_filter", False, "refusal"),
        ("stop_sequence", False, "stop_sequence"),
    ],
)
def test_stop_reasons(finish: str | None, calls: bool, reason: str) -> None:
    assert stop_reason(finish, calls) == reason


def _parse(stream: str) -> list[tuple[str, dict[str, Any]]]:
    events = []
    for chunk in stream.split("\n\n"):
        if chunk:
            kind, data = chunk.split("\n")
            events.append((kind.removeprefix("event: "), json.loads(data.removeprefix("data: "))))
    return events


def test_a_stream_is_anthropics_events_in_order_and_the_sdk_accumulates_it() -> None:
    encoder = StreamEncoder("msg_2", "gpt-x")
    provider_events = [
        TextDelta("Let me "),
        TextDelta("check."),
        ToolCallDelta(0, "toolu_a", "get_weather", '{"city"'),
        ToolCallDelta(0, None, None, ': "Paris"}'),
        ToolCallDelta(1, "toolu_b", "get_weather", '{"city": "Rome"}'),
        ToolCall("toolu_a", "get_weather", '{"city": "Paris"}'),
        Usage(50, 12, 62),
        Done("tool_calls", "gpt-x"),
    ]
    text = "".join(encoder.start(40))
    for event in provider_events:
        text += "".join(encoder.event(event))
    text += "".join(encoder.finish("tool_use", usage_object(50, 12)))
    events = _parse(text)
    assert [kind for kind, _ in events] == [
        "message_start",
        "content_block_start",
        "ping",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert all(data["type"] == kind for kind, data in events)
    snapshot = None
    buffers: dict[int, bytes] = {}
    for _, data in events:
        if data["type"] != "ping":
            event = _EVENTS.validate_python(data)
            snapshot = accumulate_event(event=event, current_snapshot=snapshot, json_bufs=buffers)
    assert snapshot is not None
    assert [b.type for b in snapshot.content] == ["text", "tool_use", "tool_use"]
    assert snapshot.content[0].text == "Let me check."  # type: ignore[union-attr]
    assert snapshot.content[1].input == {"city": "Paris"}  # type: ignore[union-attr]
    assert snapshot.content[2].input == {"city": "Rome"}  # type: ignore[union-attr]
    assert snapshot.stop_reason == "tool_use" and snapshot.usage.output_tokens == 12


def test_complete_calls_and_an_empty_answer_are_blocks_too() -> None:
    encoder = StreamEncoder("msg_3", "m")
    text = "".join(encoder.start(5)) + "".join(encoder.calls([ToolCall("c1", "f", '{"a": 1}')]))
    text += "".join(encoder.finish("tool_use", usage_object(5, 2)))
    starts = [data for kind, data in _parse(text) if kind == "content_block_start"]
    assert starts == [
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "c1", "name": "f", "input": {}},
        }
    ]
    empty = StreamEncoder("msg_4", "m")
    kinds = [
        kind
        for kind, _ in _parse("".join(empty.start(5)) + "".join(empty.finish("end_turn", usage_object(5, 0))))
    ]
    assert kinds == [
        "message_start",
        "content_block_start",
        "ping",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]


def test_errors_are_anthropics() -> None:
    assert error_body(429, "slow down") == {
        "type": "error",
        "error": {"type": "rate_limit_error", "message": "slow down"},
    }
    assert error_body(404, "x")["error"]["type"] == "not_found_error"
    assert error_body(401, "x")["error"]["type"] == "authentication_error"
    assert error_body(529, "x")["error"]["type"] == "overloaded_error"
    assert error_body(500, "x")["error"]["type"] == "api_error"
    kind, data = _parse(StreamEncoder.error(502, "broke"))[0]
    assert kind == "error" and data["error"] == {"type": "api_error", "message": "broke"}


def test_anthropics_own_tools_are_kept_aside_not_offered_to_chat_completions() -> None:
    search = {"type": "web_search_20250305", "name": "web_search", "max_uses": 3}
    body = {
        "model": "m",
        "max_tokens": 5,
        "messages": [{"role": "user", "content": "x"}],
        "tools": [WEATHER, search],
    }
    decoded = decode_request(body)
    assert [t["function"]["name"] for t in decoded.tools] == ["get_weather"]
    assert decoded.server_tools == [search]


def test_a_tool_results_images_follow_its_step_in_a_user_message_for_chat_completions() -> None:
    shot = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PIXEL}}
    uses = [
        {"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "a.png"}},
        {"type": "tool_use", "id": "t2", "name": "read", "input": {"path": "b.txt"}},
    ]
    results = [
        {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "a.png:"}, shot]},
        {"type": "tool_result", "tool_use_id": "t2", "content": "hello"},
    ]
    messages = [
        {"role": "user", "content": "Read both."},
        {"role": "assistant", "content": uses},
        {"role": "user", "content": results},
        {"role": "assistant", "content": "Done."},
    ]
    decoded = decode_request({"model": "m", "max_tokens": 5, "messages": messages})
    image = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PIXEL}"}}
    assert decoded.messages[2]["content"] == [{"type": "text", "text": "a.png:"}, image]  # stored whole
    sent = for_chat_completions(decoded.messages)
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "tool", "user", "assistant"]
    assert sent[2]["content"] == [{"type": "text", "text": "a.png:"}] and sent[3]["content"] == "hello"
    assert sent[4] == {"role": "user", "content": [image]}  # after the step's results, which stay paired
    assert decoded.messages[2]["content"][1] == image  # the stored message is not changed
