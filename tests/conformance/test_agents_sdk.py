"""Conformance: the OpenAI Agents SDK (chat-completions model, ``SQLiteSession``) through ``/v1``."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
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

agents = pytest.importorskip("agents")
agents.set_tracing_disabled(True)  # no trace export (it would reach for the network)

pytestmark = pytest.mark.anyio

ASK = "What's the weather in Paris?"


@agents.function_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return weather(city)


class Weather(BaseModel):
    city: str
    temperature_c: int
    sunny: bool


@pytest.fixture(autouse=True)
async def _closed() -> AsyncIterator[None]:
    """The clients of a test closed in its event loop (not collected after the loop closed)."""
    yield
    while CLIENTS:
        await CLIENTS.pop().close()


CLIENTS: list[openai.AsyncOpenAI] = []


def agent(server: Tierwise, *, tools: list[Any] | None = None, max_retries: int = 0, **options: Any) -> Any:
    client = openai.AsyncOpenAI(base_url=server.url, api_key="any", max_retries=max_retries)
    CLIENTS.append(client)
    model = agents.OpenAIChatCompletionsModel(model="m", openai_client=client)
    return agents.Agent(
        name="assistant",
        instructions=options.pop("instructions", SYSTEM),
        model=model,
        tools=tools or [],
        **options,
    )


async def result_of(assistant: Any, given: Any, *, stream: bool, session: Any = None) -> Any:
    """The run's result (``RunResult``, or a ``RunResultStreaming`` read to its end)."""
    if not stream:
        return await agents.Runner.run(assistant, given, session=session)
    result = agents.Runner.run_streamed(assistant, given, session=session)
    async for _event in result.stream_events():
        pass
    return result


async def run(assistant: Any, given: Any, *, stream: bool, session: Any = None) -> Any:
    """The run's final output, streamed or not."""
    return (await result_of(assistant, given, stream=stream, session=session)).final_output


async def test_plain(tierwise: Serve, upstream: FakeOpenAI) -> None:
    server = tierwise()
    for stream in STREAMS:
        upstream.requests.clear()
        upstream.script(ANSWER)
        assert await run(agent(server), ASK, stream=stream, session=agents.SQLiteSession("plain")) == ANSWER
        assert upstream.requests[0]["messages"] == [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": ASK},
        ]


async def test_tool_round_trip(tierwise: Serve, upstream: FakeOpenAI) -> None:
    server = tierwise()
    for stream in STREAMS:
        upstream.requests.clear()
        script_tool_round(upstream)
        assert await run(agent(server, tools=[get_weather]), ASK, stream=stream) == ANSWER
        check_tool_round(upstream)


async def test_parallel_tool_calls(tierwise: Serve, upstream: FakeOpenAI) -> None:
    server = tierwise()
    for stream in STREAMS:
        upstream.requests.clear()
        script_parallel(upstream)
        answer = await run(agent(server, tools=[get_weather]), ASK, stream=stream)
        assert answer == "Paris and Tokyo are both sunny."
        check_parallel(upstream)


async def test_structured_output(tierwise: Serve, upstream: FakeOpenAI) -> None:
    server = tierwise()
    for stream in STREAMS:
        upstream.script(json.dumps(STRUCTURED))
        assert await run(agent(server, output_type=Weather), ASK, stream=stream) == Weather(**STRUCTURED)
        check_structured(upstream)


async def test_regenerate_from_the_session(tierwise: Serve, upstream: FakeOpenAI) -> None:
    """The last exchange popped from the ``SQLiteSession`` and asked again: the same history, answered."""
    upstream.script("Noted.", ANSWER, "Paris: sunny, 18°C.")
    server = tierwise()
    assistant, session = agent(server), agents.SQLiteSession("regenerate")
    assert await run(assistant, "I'm going to Paris.", stream=False, session=session) == "Noted."
    assert await run(assistant, ASK, stream=False, session=session) == ANSWER
    await session.pop_item()  # the answer
    await session.pop_item()  # the question, asked again
    assert await run(assistant, ASK, stream=True, session=session) == "Paris: sunny, 18°C."
    assert upstream.requests[2]["messages"] == upstream.requests[1]["messages"]
    assert [s.status for s in server.seen] == [200, 200, 200]
    assert len(await session.get_items()) == 4


async def test_upstream_429_is_a_rate_limit_error_with_retry_after(
    tierwise: Serve, upstream: FakeOpenAI
) -> None:
    wait = {"retry-after": "1", "retry-after-ms": "10"}
    server = tierwise()
    for stream in STREAMS:
        upstream.fail(429, body=RATE_LIMITED, headers=wait)
        with pytest.raises(openai.RateLimitError) as caught:
            await run(agent(server), ASK, stream=stream)
        assert caught.value.response.headers["retry-after"] == "1"  # surfaced
        assert RATE_LIMITED["error"]["message"] in caught.value.message
        upstream.fail(429, body=RATE_LIMITED, headers=wait)  # honoured by the client's retry
        upstream.script(ANSWER)
        assert await run(agent(server, max_retries=1), ASK, stream=stream) == ANSWER
    assert [s.status for s in server.seen] == [429, 429, 200] * 2


async def test_upstream_500_is_an_internal_server_error_with_its_message(
    tierwise: Serve, upstream: FakeOpenAI
) -> None:
    server = tierwise()
    for stream in STREAMS:
        upstream.fail(500, body=SERVER_ERROR)
        with pytest.raises(openai.InternalServerError) as caught:
            await run(agent(server), ASK, stream=stream)
        assert caught.value.status_code == 500
        assert SERVER_ERROR["error"]["message"] in caught.value.message


@pytest.mark.parametrize(("model", "whole"), [(BIG_MODEL, True), (SMALL_MODEL, False)])
async def test_a_30k_token_tool_result_with_a_16k_budget(
    tierwise: Serve, upstream: FakeOpenAI, model: str, whole: bool
) -> None:
    script_big_result(upstream)

    @agents.function_tool
    def read_artifacts() -> str:
        """The build's artefacts."""
        return big_result()

    server = tierwise(model=model)
    assert (
        await run(agent(server, tools=[read_artifacts]), ASK, stream=True) == "The artefacts are all there."
    )
    assert [s.status for s in server.seen] == [200, 200]
    check_big_result(upstream, whole=whole)


def as_items(messages: list[dict[str, Any]]) -> list[Any]:
    """Chat messages as the Agents SDK's input items (Responses API shapes)."""
    items: list[Any] = []
    for message in messages:
        if message["role"] == "tool":
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": message["tool_call_id"],
                    "output": message["content"],
                }
            )
        elif message.get("tool_calls"):
            for call in message["tool_calls"]:
                function = call["function"]
                items.append(
                    {
                        "type": "function_call",
                        "call_id": call["id"],
                        "name": function["name"],
                        "arguments": function["arguments"],
                    }
                )
        else:
            items.append({"role": message["role"], "content": message["content"]})
    return items


@pytest.mark.parametrize("stream", [False, True])
async def test_tierwise_retrieval_tool_is_never_seen(
    tierwise: Serve, upstream: FakeOpenAI, stream: bool
) -> None:
    """A session with a past (a 12-turn build history in the ``SQLiteSession``): the model's
    ``open_blob`` is answered by tierwise; the agent runs its ``read_log`` and gets the answer."""
    script_recall(upstream)
    server = tierwise(model=SMALL_MODEL, budget=RECALL_WINDOW, reserve=500)
    ran: list[int] = []

    @agents.function_tool(name_override="read_log")
    def read_log_tool(worker: int) -> str:
        """A worker's build log."""
        ran.append(worker)
        return read_log(worker)

    messages = history()
    session = agents.SQLiteSession("build")
    await session.add_items(as_items(messages[1:-1]))
    assistant = agent(server, tools=[read_log_tool], instructions=messages[0]["content"])
    result = await result_of(assistant, QUESTION, stream=stream, session=session)
    assert result.final_output == RECALL_ANSWER
    assert ran == [12]
    assert "open_blob" not in json.dumps([r.output for r in result.raw_responses], default=str)
    assert "open_blob" not in json.dumps(await session.get_items(), default=str)
    check_recall(upstream)
