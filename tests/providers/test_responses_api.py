"""ResponsesProvider through the real openai SDK against the fake Responses server on loopback."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.fake_responses import REASONING, FakeResponses, ResponsesReply, fake_responses
from tierwise.providers import (
    ChoiceDelta,
    Done,
    ModelRequest,
    ProviderError,
    Retry,
    RetryPolicy,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
    collect,
)
from tierwise.providers.base import Native
from tierwise.providers.responses_api import ResponsesProvider

__all__ = ["fake_responses"]

pytestmark = pytest.mark.anyio

FAST = RetryPolicy(max_retries=3, base_delay=0.001, max_delay=1.0)
ASK = ModelRequest([{"role": "user", "content": "What is due today?"}])
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_tasks",
            "description": "Tasks with filters",
            "parameters": {"type": "object", "properties": {"status": {"type": "string"}}},
        },
    }
]
FLAT_TOOL = {"type": "function", **TOOLS[0]["function"]}


def provider(fake: FakeResponses, **options: Any) -> ResponsesProvider:
    options.setdefault("model", "primary")
    options.setdefault("retry_policy", FAST)
    return ResponsesProvider(base_url=fake.url, api_key="k", **options)


async def events_of(p: ResponsesProvider, request: ModelRequest = ASK) -> list[Any]:
    return [event async for event in p.stream(request)]


async def test_streamed_text_and_the_request_sent(fake_responses: FakeResponses) -> None:
    fake_responses.script("Two tasks are due: the venue and the FAQ.")
    request = ModelRequest(
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Due today?"}],
        tools=TOOLS,
        max_tokens=256,
        temperature=0.2,
        tool_choice="auto",
    )
    events = await events_of(provider(fake_responses), request)
    texts = [e.text for e in events if isinstance(e, TextDelta)]
    assert len(texts) > 3 and "".join(texts) == "Two tasks are due: the venue and the FAQ."
    assert events[-1] == Done("stop", "primary")
    [sent] = fake_responses.requests
    assert sent["instructions"] == "Be brief."
    assert sent["input"] == [{"type": "message", "role": "user", "content": "Due today?"}]
    assert sent["tools"] == [FLAT_TOOL] and sent["tool_choice"] == "auto"
    assert (sent["model"], sent["max_output_tokens"], sent["temperature"]) == ("primary", 256, 0.2)
    assert sent["stream"] is True and sent["store"] is False  # tierwise keeps the conversation
    assert fake_responses.headers[0]["authorization"] == "Bearer k"


async def test_tool_calls_with_split_arguments(fake_responses: FakeResponses) -> None:
    calls = [
        {"id": "call_a", "name": "get_tasks", "arguments": {"status": "due"}},
        {"id": "call_b", "name": "get_tasks", "arguments": {"status": "overdue"}},
    ]
    fake_responses.script(ResponsesReply(tool_calls=calls, pieces=4))
    events = await events_of(provider(fake_responses), ModelRequest(ASK.messages, tools=TOOLS))
    deltas = [e for e in events if isinstance(e, ToolCallDelta)]
    assert (deltas[0].index, deltas[0].id, deltas[0].name) == (0, "call_a", "get_tasks")
    assert len([d for d in deltas if d.index == 0 and d.arguments_delta]) > 2  # in pieces
    assert "".join(d.arguments_delta for d in deltas if d.index == 1) == '{"status": "overdue"}'
    whole = [e for e in events if isinstance(e, ToolCall)]
    assert whole == [
        ToolCall("call_a", "get_tasks", '{"status": "due"}'),
        ToolCall("call_b", "get_tasks", '{"status": "overdue"}'),
    ]
    assert events[-1].finish_reason == "tool_calls"


async def test_a_reasoning_item_is_relayed_whole_and_usage_has_cached_tokens(
    fake_responses: FakeResponses,
) -> None:
    usage = {"input_tokens": 2_000, "output_tokens": 40, "total_tokens": 2_040, "cached_tokens": 1_536}
    fake_responses.script(
        ResponsesReply(
            "Rain.",
            reasoning=REASONING,
            usage=usage | {"reasoning_tokens": 30},
            fields={"service_tier": "default"},
        )
    )
    response = await collect(provider(fake_responses).stream(ASK))
    assert response.text == "Rain." and response.finish_reason == "stop"
    assert response.extras == [ChoiceDelta(0, {"response_items": [REASONING]})]  # as sent, encrypted too
    assert response.usage == Usage(2_000, 40, 2_040, 1_536)
    assert response.usage.details == {
        "prompt_tokens_details": {"cached_tokens": 1_536},
        "completion_tokens_details": {"reasoning_tokens": 30},
    }
    assert response.fields == {"service_tier": "default"}


async def test_a_custom_tool_call_is_relayed_as_a_custom_call(fake_responses: FakeResponses) -> None:
    custom = {"id": "call_p", "name": "apply_patch", "input": "*** Begin Patch"}
    fake_responses.script(ResponsesReply(custom_calls=[custom]))
    response = await collect(provider(fake_responses).stream(ASK))
    piece = {
        "index": 0,
        "id": "call_p",
        "type": "custom",
        "custom": {"name": "apply_patch", "input": "*** Begin Patch"},
    }
    assert response.extras == [ChoiceDelta(0, {"tool_calls": [piece]})]
    assert response.tool_calls == [] and response.finish_reason == "tool_calls"


async def test_incomplete_at_max_output_tokens_is_length(fake_responses: FakeResponses) -> None:
    fake_responses.script(ResponsesReply("Partial", incomplete="max_output_tokens"))
    response = await collect(provider(fake_responses).stream(ASK))
    assert (response.text, response.finish_reason) == ("Partial", "length")


async def test_retries_a_500_then_answers(fake_responses: FakeResponses) -> None:
    fake_responses.fail(500, times=2)
    fake_responses.script("ok.")
    events = await events_of(provider(fake_responses))
    assert [type(e) for e in events if isinstance(e, Retry)] == [Retry, Retry]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "ok."
    assert len(fake_responses.requests) == 3


async def test_an_error_status_passes_through(fake_responses: FakeResponses) -> None:
    body = {
        "error": {
            "message": "Invalid 'input[0]'.",
            "type": "invalid_request_error",
            "param": "input",
            "code": None,
        }
    }
    fake_responses.fail(400, body=body)
    with pytest.raises(ProviderError) as caught:
        await events_of(provider(fake_responses))
    error = caught.value
    assert error.status == 400 and not error.retryable
    assert error.detail is not None and error.detail["param"] == "input"
    assert len(fake_responses.requests) == 1


@pytest.mark.parametrize("kind", ["failed", "error_event"])
async def test_a_failed_response_is_a_provider_error(fake_responses: FakeResponses, kind: str) -> None:
    error = {"code": "server_error", "message": "The model crashed."}
    fake_responses.script(ResponsesReply("Partial", **{kind: error}))  # type: ignore[arg-type]
    with pytest.raises(ProviderError) as caught:
        await events_of(provider(fake_responses))
    assert "The model crashed." in str(caught.value) and caught.value.detail is not None
    assert caught.value.detail["code"] == "server_error"
    assert len(fake_responses.requests) == 1  # text had been streamed: not retried


async def test_a_stream_cut_before_completed_is_retryable(fake_responses: FakeResponses) -> None:
    fake_responses.script(ResponsesReply("Never finished.", cut_after=2), "Finished.")
    response = await collect(provider(fake_responses).stream(ASK))  # nothing output yet: retried
    assert response.text == "Finished." and len(response.retries) == 1


CARRIED_CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "get_tasks", "arguments": '{"status": "due"}'},
}
PATCH_CALL = {"id": "call_2", "type": "custom", "custom": {"name": "apply_patch", "input": "*** Begin"}}


async def test_a_conversation_with_tool_results_and_carried_items_is_encoded(
    fake_responses: FakeResponses,
) -> None:
    fake_responses.script("Done.")
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "Be brief."},
        {"role": "system", "content": [{"type": "text", "text": "Use tools."}]},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Look:"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}},
            ],
        },
        {
            "role": "assistant",
            "content": "Checking.",
            "response_items": [REASONING],
            "tool_calls": [CARRIED_CALL, PATCH_CALL],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "2 tasks"},
        {"role": "tool", "tool_call_id": "call_2", "content": "patched"},
        {"role": "system", "content": "Mid-conversation note."},
        {"role": "user", "content": "Thanks"},
    ]
    await events_of(provider(fake_responses), ModelRequest(messages, tools=TOOLS))
    [sent] = fake_responses.requests
    assert sent["instructions"] == "Be brief.\n\nUse tools."
    assert sent["input"] == [
        {
            "type": "message",
            "role": "user",
            "content": [
                {"type": "input_text", "text": "Look:"},
                {"type": "input_image", "image_url": "data:image/png;base64,AA", "detail": "auto"},
            ],
        },
        REASONING,  # carried items first, as they came
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Checking.", "annotations": []}],
        },
        {"type": "function_call", "call_id": "call_1", "name": "get_tasks", "arguments": '{"status": "due"}'},
        {"type": "custom_tool_call", "call_id": "call_2", "name": "apply_patch", "input": "*** Begin"},
        {"type": "function_call_output", "call_id": "call_1", "output": "2 tasks"},
        {"type": "custom_tool_call_output", "call_id": "call_2", "output": "patched"},
        {"type": "message", "role": "system", "content": "Mid-conversation note."},
        {"type": "message", "role": "user", "content": "Thanks"},
    ]


def test_params_are_renamed_and_the_ones_without_an_equivalent_left_out() -> None:
    p = ResponsesProvider(base_url="http://127.0.0.1:9/v1", model="m")
    schema = {"name": "answer", "schema": {"type": "object"}, "strict": True}
    params = {
        "max_completion_tokens": 300,
        "response_format": {"type": "json_schema", "json_schema": schema},
        "reasoning_effort": "low",
        "verbosity": "low",
        "top_p": 0.5,
        "metadata": {"a": "b"},
        "prompt_cache_key": "k",
        "n": 2,
        "stop": ["\n"],
        "seed": 1,
        "logprobs": True,
        "frequency_penalty": 0.1,
    }
    body = p.body(ModelRequest(ASK.messages, params=params), "m")
    assert body["max_output_tokens"] == 300
    assert body["text"] == {"format": {"type": "json_schema", **schema}, "verbosity": "low"}
    assert body["reasoning"] == {"effort": "low"}
    assert body["include"] == ["reasoning.encrypted_content"]  # read back without storage
    assert (body["top_p"], body["metadata"], body["prompt_cache_key"]) == (0.5, {"a": "b"}, "k")
    assert not {"n", "stop", "seed", "logprobs", "frequency_penalty", "messages"} & set(body)
    assert body["store"] is False
    # A chat client's own store is forwarded.
    assert p.body(ModelRequest(ASK.messages, params={"store": True}), "m")["store"] is True


def test_without_storage_a_reasoning_item_without_encrypted_content_is_left_out() -> None:
    p = ResponsesProvider(base_url="http://127.0.0.1:9/v1", model="m")
    plain = {"id": "rs_2", "type": "reasoning", "summary": []}
    messages = [*ASK.messages, {"role": "assistant", "content": "Hi", "response_items": [plain, REASONING]}]
    assert p.body(ModelRequest(messages), "m")["input"][1] == REASONING
    native = Native("responses", {"store": True})
    assert p.body(ModelRequest(messages, native=native), "m")["input"][1] == plain


def test_hosted_tools_are_sent_only_for_a_responses_client() -> None:
    p = ResponsesProvider(base_url="http://127.0.0.1:9/v1", model="m")
    search = {"type": "web_search"}
    fields = {
        "tools": [FLAT_TOOL, search],
        "tool_choice": "required",
        "reasoning": {"effort": "high", "summary": "auto"},
        "include": ["reasoning.encrypted_content"],
        "store": False,
        "max_output_tokens": 900,
        "client_metadata": {"x": "y"},
    }
    request = ModelRequest(
        ASK.messages, tools=TOOLS, tool_choice="required", native=Native("responses", fields)
    )
    body = p.body(request, "m")
    assert body["tools"] == [FLAT_TOOL, search] and body["tool_choice"] == "required"
    # A choice naming a hosted tool has no chat shape: the client's own, as it sent it.
    hosted = Native("responses", {**fields, "tool_choice": {"type": "web_search"}})
    assert p.body(ModelRequest(ASK.messages, tools=TOOLS, native=hosted), "m")["tool_choice"] == {
        "type": "web_search"
    }
    # What the gateway decided wins over the client's: tierwise's last retrieval round says "none".
    assert (
        p.body(ModelRequest(ASK.messages, tools=TOOLS, tool_choice="none", native=hosted), "m")["tool_choice"]
        == "none"
    )
    assert body["reasoning"] == {"effort": "high", "summary": "auto"} and body["store"] is False
    assert body["max_output_tokens"] == 900 and body["client_metadata"] == {"x": "y"}
    # The same request from a client of another wire: its native fields are not this wire's.
    other = ModelRequest(ASK.messages, tools=TOOLS, tool_choice="auto", native=Native("anthropic", fields))
    body = p.body(other, "m")
    assert body["tools"] == [FLAT_TOOL] and body["tool_choice"] == "auto"
    assert "reasoning" not in body and "client_metadata" not in body
    named = {"type": "function", "function": {"name": "get_tasks"}}
    assert p.body(ModelRequest(ASK.messages, tools=TOOLS, tool_choice=named), "m")["tool_choice"] == {
        "type": "function",
        "name": "get_tasks",
    }


async def test_the_sdk_request_carries_native_fields_as_sent(fake_responses: FakeResponses) -> None:
    fake_responses.script("ok.")
    fields = {
        "reasoning": {"effort": "low"},
        "include": ["reasoning.encrypted_content"],
        "store": False,
        "truncation": "auto",
    }
    await events_of(provider(fake_responses), ModelRequest(ASK.messages, native=Native("responses", fields)))
    [sent] = fake_responses.requests
    assert {k: sent[k] for k in fields} == fields
    assert json.dumps(sent["input"]) == json.dumps(
        [{"type": "message", "role": "user", "content": "What is due today?"}]
    )


def test_a_codex_request_keeps_its_developer_items_and_its_tool_order() -> None:
    """Codex CLI sends no ``instructions``: its prompt is developer items (one of two parts), and its
    tools mix functions with a ``namespace`` and a hosted one. They go upstream as they came."""
    p = ResponsesProvider(base_url="http://127.0.0.1:9/v1", api_key="k", model="m")
    namespace = {"type": "namespace", "name": "agents", "tools": [FLAT_TOOL]}
    shell = {"type": "function", "name": "exec_command", "parameters": {"type": "object"}}
    packed_shell = {"type": "function", "function": {k: v for k, v in shell.items() if k != "type"}}
    fields = {"tools": [FLAT_TOOL, namespace, shell, {"type": "web_search"}], "store": False}
    developer = [{"type": "text", "text": "<skills>"}, {"type": "text", "text": "<permissions>"}]
    messages: list[dict[str, Any]] = [
        {"role": "developer", "content": [{"type": "text", "text": "You are Codex."}]},
        {"role": "developer", "content": developer},
        {"role": "user", "content": "Hi"},
    ]
    recall = {"type": "function", "function": {"name": "recall_segments", "parameters": {}}}
    request = ModelRequest(messages, tools=[*TOOLS, packed_shell, recall], native=Native("responses", fields))
    body = p.body(request, "m")
    assert "instructions" not in body
    texts = [(i["role"], [c["text"] for c in i["content"]]) for i in body["input"][:2]]
    assert texts == [("developer", ["You are Codex."]), ("developer", ["<skills>", "<permissions>"])]
    assert body["input"][2] == {"type": "message", "role": "user", "content": "Hi"}
    # The client's order, its own tools as it sent them; tierwise's (recall_segments) after.
    assert [t.get("name", t["type"]) for t in body["tools"]] == [
        "get_tasks", "agents", "exec_command", "web_search", "recall_segments"
    ]  # fmt: skip
    assert body["tools"][:4] == fields["tools"]
