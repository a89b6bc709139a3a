"""Conformance: the official ``openai`` SDK against tierwise's ``/v1`` on loopback (issue 30, item 6)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import openai
import pytest
from pydantic import BaseModel

from tests.conformance.harness import (
    ANSWER,
    BIG_MODEL,
    QUESTION,
    RATE_LIMITED,
    RECALL_ANSWER,
    RECALL_WINDOW,
    SERVER_ERROR,
    SMALL_MODEL,
    STREAMS,
    STRUCTURED,
    SYSTEM,
    TOOLS,
    Serve,
    Tierwise,
    big_result,
    check_big_result,
    check_parallel,
    check_recall,
    check_structured,
    check_tool_round,
    history,
    read_log,
    script_big_result,
    script_parallel,
    script_recall,
    script_tool_round,
    weather,
)
from tests.fake_openai import FakeOpenAI

ASK = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "What's the weather in Paris?"}]


class Weather(BaseModel):
    city: str
    temperature_c: int
    sunny: bool


def client(server: Tierwise, max_retries: int = 0) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url, api_key="any", max_retries=max_retries)


def complete(sdk: openai.OpenAI, messages: list[dict[str, Any]], *, stream: bool, **options: Any) -> Any:
    """One call: the answer's message (text and tool calls), a stream put together as the SDK would."""
    if not stream:
        return sdk.chat.completions.create(model="m", messages=messages, **options).choices[0].message  # type: ignore[call-overload]
    with sdk.chat.completions.stream(model="m", messages=messages, **options) as events:  # type: ignore[arg-type]
        return events.get_final_completion().choices[0].message


def run_tools(
    sdk: openai.OpenAI, messages: list[dict[str, Any]], tools: dict[str, Callable[..., str]], *, stream: bool
) -> str:
    """The client's own tool loop: run every call the model makes, until it answers."""
    while True:
        message = complete(sdk, messages, stream=stream, tools=[TOOLS[name] for name in tools])
        if not message.tool_calls:
            return str(message.content)
        messages.append(message.model_dump(include={"role", "content", "tool_calls"}, exclude_none=True))
        for call in message.tool_calls:
            result = tools[call.function.name](**json.loads(call.function.arguments or "{}"))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})


def test_plain(tierwise: Serve, upstream: FakeOpenAI) -> None:
    server = tierwise()
    for stream in STREAMS:
        upstream.requests.clear()
        upstream.script(ANSWER)
        message = complete(client(server), list(ASK), stream=stream)
        assert message.content == ANSWER and message.tool_calls is None
        assert upstream.requests[0]["messages"] == ASK
    assert [s.status for s in server.seen] == [200, 200]


def test_tool_round_trip(tierwise: Serve, upstream: FakeOpenAI) -> None:
    server = tierwise()
    for stream in STREAMS:
        upstream.requests.clear()
        script_tool_round(upstream)
        assert run_tools(client(server), list(ASK), {"get_weather": weather}, stream=stream) == ANSWER
        check_tool_round(upstream)


def test_parallel_tool_calls(tierwise: Serve, upstream: FakeOpenAI) -> None:
    server = tierwise()
    for stream in STREAMS:
        upstream.requests.clear()
        script_parallel(upstream)
        answer = run_tools(client(server), list(ASK), {"get_weather": weather}, stream=stream)
        assert answer == "Paris and Tokyo are both sunny."
        check_parallel(upstream)


def test_structured_output(tierwise: Serve, upstream: FakeOpenAI) -> None:
    upstream.script(json.dumps(STRUCTURED), json.dumps(STRUCTURED))
    sdk = client(tierwise())
    parsed = sdk.chat.completions.parse(model="m", messages=ASK, response_format=Weather)  # type: ignore[arg-type]
    assert parsed.choices[0].message.parsed == Weather(**STRUCTURED)
    assert check_structured(upstream)["additionalProperties"] is False  # strict, as the SDK sent it
    with sdk.chat.completions.stream(model="m", messages=ASK, response_format=Weather) as events:  # type: ignore[arg-type]
        streamed = events.get_final_completion()
    assert streamed.choices[0].message.parsed == Weather(**STRUCTURED)
    check_structured(upstream)


def test_regenerate(tierwise: Serve, upstream: FakeOpenAI) -> None:
    """The same history sent again (a regenerate) is answered again, streamed or not."""
    upstream.script(ANSWER, "Paris: sunny, 18°C.", "Sunny in Paris.")
    server = tierwise()
    answers = [complete(client(server), list(ASK), stream=stream).content for stream in (False, *STREAMS)]
    assert answers == [ANSWER, "Paris: sunny, 18°C.", "Sunny in Paris."]
    assert [r["messages"] for r in upstream.requests] == [ASK] * 3
    assert [s.status for s in server.seen] == [200, 200, 200]


def test_upstream_429_is_a_rate_limit_error_with_retry_after(tierwise: Serve, upstream: FakeOpenAI) -> None:
    wait = {"retry-after": "1", "retry-after-ms": "10"}
    server = tierwise()
    for stream in STREAMS:
        upstream.fail(429, body=RATE_LIMITED, headers=wait)
        with pytest.raises(openai.RateLimitError) as caught:
            complete(client(server), list(ASK), stream=stream)
        assert caught.value.response.headers["retry-after"] == "1"  # surfaced
        assert caught.value.code == "rate_limit_exceeded"
        assert RATE_LIMITED["error"]["message"] in caught.value.message
        # honoured: the SDK's own retry waits retry-after-ms, then gets the answer
        upstream.fail(429, body=RATE_LIMITED, headers=wait)
        upstream.script(ANSWER)
        assert complete(client(server, max_retries=1), list(ASK), stream=stream).content == ANSWER
    assert [s.status for s in server.seen] == [429, 429, 200] * 2


def test_upstream_500_is_an_internal_server_error_with_its_message(
    tierwise: Serve, upstream: FakeOpenAI
) -> None:
    server = tierwise()
    for stream in STREAMS:
        upstream.fail(500, body=SERVER_ERROR)
        with pytest.raises(openai.InternalServerError) as caught:
            complete(client(server), list(ASK), stream=stream)
        assert caught.value.status_code == 500
        assert caught.value.message == f"Error code: 500 - {SERVER_ERROR['error']['message']}"
        assert caught.value.type == "server_error"


@pytest.mark.parametrize(("model", "whole"), [(BIG_MODEL, True), (SMALL_MODEL, False)])
def test_a_30k_token_tool_result_with_a_16k_budget(
    tierwise: Serve, upstream: FakeOpenAI, model: str, whole: bool
) -> None:
    """The step being answered goes whole when the model's window takes it, else head and tail with a
    pointer; never a 400."""
    script_big_result(upstream)
    server = tierwise(model=model)
    answer = run_tools(client(server), list(ASK), {"read_artifacts": big_result}, stream=True)
    assert answer == "The artefacts are all there."
    assert [s.status for s in server.seen] == [200, 200]
    check_big_result(upstream, whole=whole)


@pytest.mark.parametrize("stream", [False, True])
def test_tierwise_retrieval_tool_is_never_seen(tierwise: Serve, upstream: FakeOpenAI, stream: bool) -> None:
    script_recall(upstream)
    server = tierwise(model=SMALL_MODEL, budget=RECALL_WINDOW, reserve=500)
    seen: list[str] = []

    def logged(worker: int) -> str:
        seen.append(f"read_log({worker})")
        return read_log(worker)

    messages = history()
    assert messages[-1]["content"] == QUESTION
    answer = run_tools(client(server), messages, {"read_log": logged}, stream=stream)
    assert answer == RECALL_ANSWER
    assert seen == ["read_log(12)"]  # the client ran its own tool, and nothing else was asked of it
    assert not [m for m in messages if "open_blob" in json.dumps(m.get("tool_calls") or [])]
    check_recall(upstream)
