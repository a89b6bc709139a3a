"""Conformance: pydantic-ai's ``Agent`` on ``OpenAIChatModel`` (chat completions) through ``/v1``.

Streamed runs pass an ``event_stream_handler``: every model request of the run is then streamed.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterable, AsyncIterator
from typing import Any

import openai
import pytest
from pydantic import BaseModel

from tests.conformance.harness import (
    ANSWER,
    BIG_MODEL,
    LOOP_STEPS,
    LOOP_TASK,
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
    check_agent_loop,
    check_big_result,
    check_parallel,
    check_recall,
    check_structured,
    check_tool_round,
    history,
    loop_output,
    read_log,
    script_agent_loop,
    script_big_result,
    script_parallel,
    script_recall,
    script_tool_round,
    weather,
)
from tests.fake_openai import FakeOpenAI, FakeReply

pydantic_ai = pytest.importorskip("pydantic_ai")
from pydantic_ai import Agent, NativeOutput  # noqa: E402
from pydantic_ai.exceptions import ModelHTTPError  # noqa: E402
from pydantic_ai.messages import (  # noqa: E402
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.openai import OpenAIChatModel  # noqa: E402
from pydantic_ai.providers.openai import OpenAIProvider  # noqa: E402
from pydantic_ai.usage import UsageLimits  # noqa: E402

pytestmark = pytest.mark.anyio

ASK = "What's the weather in Paris?"
CLIENTS: list[openai.AsyncOpenAI] = []


@pytest.fixture(autouse=True)
async def _closed() -> AsyncIterator[None]:
    """The clients of a test closed in its event loop (not collected after the loop closed)."""
    yield
    while CLIENTS:
        await CLIENTS.pop().close()


class Weather(BaseModel):
    city: str
    temperature_c: int
    sunny: bool


def get_weather(city: str) -> str:
    """The weather in a city."""
    return weather(city)


def agent(server: Tierwise, *, max_retries: int = 0, **options: Any) -> Agent[None, Any]:
    client = openai.AsyncOpenAI(base_url=server.url, api_key="any", max_retries=max_retries)
    CLIENTS.append(client)
    model = OpenAIChatModel("m", provider=OpenAIProvider(openai_client=client))
    options.setdefault("system_prompt", SYSTEM)
    return Agent(model, **options)


async def _drain(_ctx: Any, events: AsyncIterable[Any]) -> None:
    async for _event in events:
        pass


async def run(assistant: Agent[None, Any], prompt: str | None, *, stream: bool, **options: Any) -> Any:
    """The run's result; ``stream``: every model request of it streamed."""
    return await assistant.run(prompt, event_stream_handler=_drain if stream else None, **options)


async def test_plain(tierwise: Serve, upstream: FakeOpenAI) -> None:
    server = tierwise()
    for stream in STREAMS:
        upstream.requests.clear()
        upstream.script(ANSWER)
        assert (await run(agent(server), ASK, stream=stream)).output == ANSWER
        assert upstream.requests[0]["messages"] == [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": ASK},
        ]


async def test_tool_round_trip(tierwise: Serve, upstream: FakeOpenAI) -> None:
    server = tierwise()
    for stream in STREAMS:
        upstream.requests.clear()
        script_tool_round(upstream)
        assert (await run(agent(server, tools=[get_weather]), ASK, stream=stream)).output == ANSWER
        check_tool_round(upstream)


async def test_parallel_tool_calls(tierwise: Serve, upstream: FakeOpenAI) -> None:
    server = tierwise()
    for stream in STREAMS:
        upstream.requests.clear()
        script_parallel(upstream)
        result = await run(agent(server, tools=[get_weather]), ASK, stream=stream)
        assert result.output == "Paris and Tokyo are both sunny."
        check_parallel(upstream)


async def test_structured_output_native(tierwise: Serve, upstream: FakeOpenAI) -> None:
    """``NativeOutput``: a ``json_schema`` response format."""
    server = tierwise()
    for stream in STREAMS:
        upstream.script(json.dumps(STRUCTURED))
        result = await run(agent(server, output_type=NativeOutput(Weather)), ASK, stream=stream)
        assert result.output == Weather(**STRUCTURED)
        check_structured(upstream)


async def test_structured_output_by_tool(tierwise: Serve, upstream: FakeOpenAI) -> None:
    """pydantic-ai's default: the output is the arguments of its ``final_result`` tool."""
    server = tierwise()
    for stream in STREAMS:
        call = {"id": "call_out", "name": "final_result", "arguments": STRUCTURED}
        upstream.script(FakeReply(tool_calls=[call]))
        result = await run(agent(server, output_type=Weather), ASK, stream=stream)
        assert result.output == Weather(**STRUCTURED)
        assert [t["function"]["name"] for t in upstream.requests[-1]["tools"]] == ["final_result"]


async def test_regenerate(tierwise: Serve, upstream: FakeOpenAI) -> None:
    upstream.script("Noted.", ANSWER, "Paris: sunny, 18°C.")
    server = tierwise()
    assistant = agent(server)
    first = await run(assistant, "I'm going to Paris.", stream=False)
    past = first.all_messages()
    answers = [(await run(assistant, ASK, stream=s, message_history=past)).output for s in STREAMS]
    assert answers == [ANSWER, "Paris: sunny, 18°C."]
    assert upstream.requests[1]["messages"] == upstream.requests[2]["messages"]
    assert [s.status for s in server.seen] == [200, 200, 200]


async def test_upstream_429_is_a_rate_limit_error_with_retry_after(
    tierwise: Serve, upstream: FakeOpenAI
) -> None:
    wait = {"retry-after": "1", "retry-after-ms": "10"}
    server = tierwise()
    for stream in STREAMS:
        upstream.fail(429, body=RATE_LIMITED, headers=wait)
        with pytest.raises(ModelHTTPError) as caught:
            await run(agent(server), ASK, stream=stream)
        assert caught.value.status_code == 429
        assert caught.value.retry_after is not None  # surfaced
        assert RATE_LIMITED["error"]["message"] in str(caught.value.body)
        upstream.fail(429, body=RATE_LIMITED, headers=wait)  # honoured by the client's retry
        upstream.script(ANSWER)
        assert (await run(agent(server, max_retries=1), ASK, stream=stream)).output == ANSWER
    assert [s.status for s in server.seen] == [429, 429, 200] * 2


async def test_upstream_500_is_a_model_http_error_with_its_message(
    tierwise: Serve, upstream: FakeOpenAI
) -> None:
    server = tierwise()
    for stream in STREAMS:
        upstream.fail(500, body=SERVER_ERROR)
        with pytest.raises(ModelHTTPError) as caught:
            await run(agent(server), ASK, stream=stream)
        assert caught.value.status_code == 500
        assert SERVER_ERROR["error"]["message"] in str(caught.value.body)


@pytest.mark.parametrize(("model", "whole"), [(BIG_MODEL, True), (SMALL_MODEL, False)])
async def test_a_30k_token_tool_result_with_a_16k_budget(
    tierwise: Serve, upstream: FakeOpenAI, model: str, whole: bool
) -> None:
    script_big_result(upstream)

    def read_artifacts() -> str:
        """The build's artefacts."""
        return big_result()

    server = tierwise(model=model)
    result = await run(agent(server, tools=[read_artifacts]), ASK, stream=True)
    assert result.output == "The artefacts are all there."
    assert [s.status for s in server.seen] == [200, 200]
    check_big_result(upstream, whole=whole)


def as_pydantic_ai(messages: list[dict[str, Any]]) -> list[ModelMessage]:
    """Chat messages as pydantic-ai's requests and responses."""
    out: list[ModelMessage] = []
    for message in messages:
        role, content = message["role"], message.get("content")
        if role == "system":
            out.append(ModelRequest(parts=[SystemPromptPart(content)]))
        elif role == "user":
            opening = out and isinstance(out[-1], ModelRequest)
            if opening and all(isinstance(p, SystemPromptPart) for p in out[-1].parts):
                out[-1] = ModelRequest(parts=[*out[-1].parts, UserPromptPart(content)])
            else:
                out.append(ModelRequest(parts=[UserPromptPart(content)]))
        elif role == "tool":
            result = ToolReturnPart("read_log", content, tool_call_id=message["tool_call_id"])
            out.append(ModelRequest(parts=[result]))
        elif message.get("tool_calls"):
            calls = [
                ToolCallPart(c["function"]["name"], c["function"]["arguments"], tool_call_id=c["id"])
                for c in message["tool_calls"]
            ]
            out.append(ModelResponse(parts=list(calls)))
        else:
            out.append(ModelResponse(parts=[TextPart(content)]))
    return out


@pytest.mark.parametrize("stream", [False, True])
async def test_tierwise_retrieval_tool_is_never_seen(
    tierwise: Serve, upstream: FakeOpenAI, stream: bool
) -> None:
    script_recall(upstream)
    server = tierwise(model=SMALL_MODEL, budget=RECALL_WINDOW, reserve=500)
    ran: list[int] = []

    def read_log_tool(worker: int) -> str:
        """A worker's build log."""
        ran.append(worker)
        return read_log(worker)

    messages = history()
    assert messages[-1]["content"] == QUESTION
    assistant = agent(server, system_prompt=(), tools=[pydantic_ai.Tool(read_log_tool, name="read_log")])
    result = await run(assistant, QUESTION, stream=stream, message_history=as_pydantic_ai(messages[:-1]))
    assert result.output == RECALL_ANSWER
    assert ran == [12]
    calls = [p.tool_name for m in result.new_messages() for p in m.parts if isinstance(p, ToolCallPart)]
    assert calls == ["read_log"]
    check_recall(upstream)


async def test_a_40_step_agent_loop_is_one_chat(tierwise: Serve, upstream: FakeOpenAI) -> None:
    """Streamed, as agents run. pydantic-ai resends a call's arguments as it got them (LangChain
    re-serialises them): one chat either way."""
    script_agent_loop(upstream)
    server = tierwise()
    steps: list[int] = []

    def run_tests(step: int, path: str, opts: dict[str, Any]) -> str:
        """Run the tests after a change to ``path``."""
        steps.append(step)
        return loop_output(step)

    assistant = agent(server, tools=[pydantic_ai.Tool(run_tests, name="run")])
    limits = UsageLimits(request_limit=LOOP_STEPS + 5)
    result = await run(assistant, LOOP_TASK, stream=True, usage_limits=limits)
    assert result.output == "All tests pass."
    assert steps == list(range(LOOP_STEPS))
    check_agent_loop(server, upstream)
