"""Conformance: litellm's ``completion`` (``openai/`` provider, ``api_base`` = tierwise) through ``/v1``.

litellm reads its model map from the package, not GitHub: the suite's conftest sets
``LITELLM_LOCAL_MODEL_COST_MAP`` and ``LITELLM_OFFLINE_MODE`` before this module imports it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel

from tests.conformance.harness import (
    ANSWER,
    BIG_MODEL,
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

litellm = pytest.importorskip("litellm")
litellm.suppress_debug_info = True  # no "Give Feedback / Get Help" banner on every error

# litellm's own TypedDicts, as pydantic sees them when litellm first builds its models
pytestmark = pytest.mark.filterwarnings("ignore:Items? '.*ReadOnly. qualifier:UserWarning")

ASK = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "What's the weather in Paris?"}]


class Weather(BaseModel):
    city: str
    temperature_c: int
    sunny: bool


def complete(server: Tierwise, messages: list[dict[str, Any]], *, stream: bool, **options: Any) -> Any:
    """One ``litellm.completion``: the answer's message (a stream rebuilt with ``stream_chunk_builder``)."""
    options.setdefault("max_retries", 0)
    response = litellm.completion(
        model="openai/m", api_base=server.url, api_key="any", messages=messages, stream=stream, **options
    )
    if stream:
        response = litellm.stream_chunk_builder(list(response), messages=messages)
    return response.choices[0].message


def run_tools(
    server: Tierwise, messages: list[dict[str, Any]], tools: dict[str, Callable[..., str]], *, stream: bool
) -> str:
    """The caller's own tool loop: run every call the model makes, until it answers."""
    while True:
        message = complete(server, messages, stream=stream, tools=[TOOLS[name] for name in tools])
        if not message.tool_calls:
            return str(message.content)
        calls = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.function.name, "arguments": c.function.arguments},
            }
            for c in message.tool_calls
        ]
        messages.append({"role": "assistant", "content": message.content, "tool_calls": calls})
        for call in message.tool_calls:
            result = tools[call.function.name](**json.loads(call.function.arguments or "{}"))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})


def test_plain(tierwise: Serve, upstream: FakeOpenAI) -> None:
    server = tierwise()
    for stream in STREAMS:
        upstream.requests.clear()
        upstream.script(ANSWER)
        assert complete(server, list(ASK), stream=stream).content == ANSWER
        assert upstream.requests[0]["messages"] == ASK


def test_tool_round_trip(tierwise: Serve, upstream: FakeOpenAI) -> None:
    server = tierwise()
    for stream in STREAMS:
        upstream.requests.clear()
        script_tool_round(upstream)
        assert run_tools(server, list(ASK), {"get_weather": weather}, stream=stream) == ANSWER
        check_tool_round(upstream)


def test_parallel_tool_calls(tierwise: Serve, upstream: FakeOpenAI) -> None:
    server = tierwise()
    for stream in STREAMS:
        upstream.requests.clear()
        script_parallel(upstream)
        answer = run_tools(server, list(ASK), {"get_weather": weather}, stream=stream)
        assert answer == "Paris and Tokyo are both sunny."
        check_parallel(upstream)


def test_structured_output(tierwise: Serve, upstream: FakeOpenAI) -> None:
    server = tierwise()
    for stream in STREAMS:
        upstream.script(json.dumps(STRUCTURED))
        message = complete(server, list(ASK), stream=stream, response_format=Weather)
        assert Weather.model_validate_json(message.content) == Weather(**STRUCTURED)
        check_structured(upstream)


def test_regenerate(tierwise: Serve, upstream: FakeOpenAI) -> None:
    upstream.script(ANSWER, "Paris: sunny, 18°C.", "Sunny in Paris.")
    server = tierwise()
    answers = [complete(server, list(ASK), stream=stream).content for stream in (False, *STREAMS)]
    assert answers == [ANSWER, "Paris: sunny, 18°C.", "Sunny in Paris."]
    assert [r["messages"] for r in upstream.requests] == [ASK] * 3
    assert [s.status for s in server.seen] == [200, 200, 200]


def test_upstream_429_is_a_rate_limit_error_with_retry_after(tierwise: Serve, upstream: FakeOpenAI) -> None:
    wait = {"retry-after": "1", "retry-after-ms": "10"}
    server = tierwise()
    for stream in STREAMS:
        upstream.fail(429, body=RATE_LIMITED, headers=wait)
        with pytest.raises(litellm.RateLimitError) as caught:
            complete(server, list(ASK), stream=stream)
        assert caught.value.status_code == 429
        assert caught.value.litellm_response_headers["retry-after"] == "1"  # surfaced
        assert RATE_LIMITED["error"]["message"] in caught.value.message
        upstream.fail(429, body=RATE_LIMITED, headers=wait)  # honoured by the client's retry
        upstream.script(ANSWER)
        assert complete(server, list(ASK), stream=stream, max_retries=1).content == ANSWER
    assert [s.status for s in server.seen] == [429, 429, 200] * 2


def test_upstream_500_is_an_internal_server_error_with_its_message(
    tierwise: Serve, upstream: FakeOpenAI
) -> None:
    server = tierwise()
    for stream in STREAMS:
        upstream.fail(500, body=SERVER_ERROR)
        with pytest.raises(litellm.InternalServerError) as caught:
            complete(server, list(ASK), stream=stream)
        assert caught.value.status_code == 500
        assert SERVER_ERROR["error"]["message"] in caught.value.message


@pytest.mark.parametrize(("model", "whole"), [(BIG_MODEL, True), (SMALL_MODEL, False)])
def test_a_30k_token_tool_result_with_a_16k_budget(
    tierwise: Serve, upstream: FakeOpenAI, model: str, whole: bool
) -> None:
    script_big_result(upstream)
    server = tierwise(model=model)
    answer = run_tools(server, list(ASK), {"read_artifacts": big_result}, stream=True)
    assert answer == "The artefacts are all there."
    assert [s.status for s in server.seen] == [200, 200]
    check_big_result(upstream, whole=whole)


@pytest.mark.parametrize("stream", [False, True])
def test_tierwise_retrieval_tool_is_never_seen(tierwise: Serve, upstream: FakeOpenAI, stream: bool) -> None:
    script_recall(upstream)
    server = tierwise(model=SMALL_MODEL, budget=RECALL_WINDOW, reserve=500)
    ran: list[int] = []

    def logged(worker: int) -> str:
        ran.append(worker)
        return read_log(worker)

    messages = history()
    assert run_tools(server, messages, {"read_log": logged}, stream=stream) == RECALL_ANSWER
    assert ran == [12]
    assert "open_blob" not in json.dumps([m.get("tool_calls") for m in messages])
    check_recall(upstream)
