"""A Responses body as the Chat Completions body the gateway reads (issue 31): each item and field."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from tierwise.server.openai_params import BadRequest
from tierwise.server.responses_input import ResponsesRequest, chat_body, input_messages

FLAT = {
    "type": "function",
    "name": "f",
    "description": "F.",
    "parameters": {"type": "object"},
    "strict": True,
}


def test_parts_and_calls_become_chat_messages() -> None:
    items = [
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "Be kind."}]},
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "What is this?"},
                {"type": "input_image", "image_url": "data:image/png;base64,AAAA", "detail": "low"},
                {"type": "input_file", "file_id": "file-1"},
            ],
        },
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Let me look."}],
        },
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": '{"a": 1}', "id": "fc_1"},
        {"type": "custom_tool_call", "call_id": "c2", "name": "g", "input": "raw"},
        {"type": "function_call_output", "call_id": "c1", "output": "one"},
        {
            "type": "custom_tool_call_output",
            "call_id": "c2",
            "output": [{"type": "input_text", "text": "two"}],
        },
    ]
    developer, user, assistant, first, second = input_messages(items)
    assert developer == {"role": "developer", "content": [{"type": "text", "text": "Be kind."}]}
    assert user["content"][1] == {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64,AAAA", "detail": "low"},
    }
    assert user["content"][2] == {"type": "file", "file": {"file_id": "file-1"}}
    assert assistant["content"] == "Let me look."  # the texts joined, as tierwise stores an answer
    assert assistant["tool_calls"] == [  # the calls joined to the message before them: one answer
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}},
        {"id": "c2", "type": "custom", "custom": {"name": "g", "input": "raw"}},
    ]
    assert first == {"role": "tool", "tool_call_id": "c1", "content": "one"}
    assert second["content"] == [{"type": "text", "text": "two"}]


def test_items_chat_has_no_place_for_ride_on_the_next_assistant_message() -> None:
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "opaque"}
    search = {"type": "web_search_call", "id": "ws_1", "status": "completed"}
    items = [{"role": "user", "content": "Hi"}, reasoning, search, {"type": "function_call", "call_id": "c"}]
    _, assistant = input_messages(items)
    assert assistant["response_items"] == [reasoning, search] and assistant["tool_calls"][0]["id"] == "c"
    # Nothing after them: they stay with the last assistant message (else one of their own).
    assert input_messages([{"role": "user", "content": "Hi"}, reasoning])[-1] == {
        "role": "assistant",
        "content": "",
        "response_items": [reasoning],
    }


def test_fields_are_mapped_or_left_out() -> None:
    body = chat_body(
        {
            "model": "m",
            "input": "Hi",
            "instructions": "Be brief.",
            "tools": [FLAT, {"type": "web_search"}],
            "tool_choice": {"type": "function", "name": "f"},
            "max_output_tokens": 300,
            "text": {"format": {"type": "json_schema", "name": "x", "schema": {}}, "verbosity": "low"},
            "reasoning": {"effort": "low", "summary": "auto"},
            "store": True,
            "include": ["reasoning.encrypted_content"],
            "previous_response_id": None,
            "metadata": {"k": "v"},
            "client_metadata": {"originator": "codex_exec"},  # Codex CLI's: api.openai.com refuses it
            "unknown_field": 1,
        }
    )
    assert body["messages"] == [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    function = {"name": "f", "description": "F.", "parameters": {"type": "object"}, "strict": True}
    assert body["tools"] == [{"type": "function", "function": function}]  # web_search: nobody would answer
    assert body["tool_choice"] == {"type": "function", "function": {"name": "f"}}
    assert body["max_completion_tokens"] == 300 and body["verbosity"] == "low"
    assert body["response_format"] == {"type": "json_schema", "json_schema": {"name": "x", "schema": {}}}
    assert body["reasoning_effort"] == "low"
    assert body["metadata"] == {"k": "v"} and body["unknown_field"] == 1  # forwarded as sent
    assert (
        not {"store", "include", "input", "instructions", "text", "reasoning", "client_metadata"}
        & body.keys()
    )


def test_allowed_tools_choice_and_a_missing_input() -> None:
    choice = {"type": "allowed_tools", "mode": "required", "tools": [{"type": "function", "name": "f"}]}
    body = chat_body({"input": "Hi", "tools": [FLAT], "tool_choice": choice})
    allowed = {"mode": "required", "tools": [{"type": "function", "function": {"name": "f"}}]}
    assert body["tool_choice"] == {"type": "allowed_tools", "allowed_tools": allowed}
    hosted = chat_body(
        {"input": "Hi", "tools": [{"type": "web_search"}], "tool_choice": {"type": "web_search"}}
    )
    assert "tools" not in hosted and "tool_choice" not in hosted
    with pytest.raises(BadRequest) as caught:
        chat_body({"model": "m"})
    assert caught.value.param == "input"
    with pytest.raises(BadRequest):
        chat_body({"input": 7})


@pytest.mark.anyio
async def test_the_response_log_keeps_at_hand_the_newest_within_its_limits() -> None:
    from tierwise.server.response_log import ResponseLog, Stored

    def stored(n: int, messages: int) -> Stored:
        return Stored("u", "k", [], [{"role": "user", "content": "x"}] * messages, {"id": f"resp_{n}"})

    kept = ResponseLog(size=3, messages=10)  # no store: in process only
    for n in range(4):
        await kept.put(stored(n, 2))
    assert kept.at_hand("u", "resp_0") is None and kept.at_hand("u", "resp_1") is not None  # 3 kept
    assert await kept.get("v", "resp_1") is None  # another user's: not found
    await kept.put(stored(4, 9))  # over 10 messages: all but the newest forgotten
    assert [kept.at_hand("u", f"resp_{n}") is not None for n in range(5)] == [False] * 4 + [True]
    await kept.put(stored(5, 30))  # the newest is kept, however long
    assert kept.at_hand("u", "resp_5") is not None and kept.at_hand("u", "resp_4") is None


def test_declared_fields_are_checked_as_the_document_states_them() -> None:
    # Found by schemathesis: ``store: {}`` was answered 200, ``input: []`` (the schema allowed it) 400.
    wrong = (("store", {}), ("stream", 1), ("max_output_tokens", "5"), ("temperature", "1"))
    wrong += (("tool_choice", ""), ("tool_choice", {"type": {}}))  # (the second was a 500)
    for field, value in wrong:
        with pytest.raises(ValidationError) as caught:
            chat_body({"input": "Hi", field: value})
        assert caught.value.errors()[0]["loc"][0] == field
    with pytest.raises(ValidationError):
        chat_body({"input": []})
    assert ResponsesRequest.model_json_schema()["properties"]["input"]["anyOf"][1]["minItems"] == 1
    assert chat_body({"input": "Hi", "store": False, "temperature": 1})["messages"][-1]["content"] == "Hi"
    assert chat_body({"input": "Hi", "max_output_tokens": 5.0})["max_completion_tokens"] == 5  # (was a 400)


def test_chat_completions_parameters_it_carries_are_typed_as_there() -> None:
    # Found by schemathesis: ``n: false`` was admitted by the document (any extra field) and refused.
    properties = ResponsesRequest.model_json_schema()["properties"]
    assert {"n", "seed", "stop", "logprobs"} <= set(properties)
    with pytest.raises(ValidationError) as caught:
        chat_body({"input": "Hi", "n": False})
    assert caught.value.errors()[0]["loc"][0] == "n"
    assert chat_body({"input": "Hi", "seed": 7.0, "x-custom": {"a": 1}})["seed"] == 7  # others as sent
