"""Conformance: LangChain's ``ChatOpenAI`` and ``langchain.agents.create_agent`` through ``/v1``."""

from __future__ import annotations

import json
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
    loop_arguments,
    loop_output,
    read_log,
    script_agent_loop,
    script_big_result,
    script_parallel,
    script_recall,
    script_tool_round,
    weather,
)
from tests.fake_openai import FakeOpenAI

create_agent = pytest.importorskip("langchain.agents").create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage  # noqa: E402
from langchain_core.tools import tool  # noqa: E402
from langchain_openai import ChatOpenAI  # noqa: E402

ASK = [SystemMessage(SYSTEM), HumanMessage("What's the weather in Paris?")]


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return weather(city)


class Weather(BaseModel):
    city: str
    temperature_c: int
    sunny: bool


def chat_model(server: Tierwise, *, stream: bool = False, max_retries: int = 0) -> ChatOpenAI:
    return ChatOpenAI(
        model="m",
        base_url=server.url,
        api_key="any",
        max_retries=max_retries,
        streaming=stream,  # type: ignore[arg-type]
    )


def final(state: dict[str, Any]) -> str:
    out: list[BaseMessage] = state["messages"]
    assert not any("not a valid tool" in str(m.content) for m in out)
    return str(out[-1].content)


def test_plain(tierwise: Serve, upstream: FakeOpenAI) -> None:
    llm = chat_model(tierwise())
    for stream in STREAMS:
        upstream.requests.clear()
        upstream.script(ANSWER)
        answer = "".join(str(c.content) for c in llm.stream(ASK)) if stream else llm.invoke(ASK).content
        assert answer == ANSWER
        assert upstream.requests[0]["messages"] == [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": "What's the weather in Paris?"},
        ]


def test_tool_round_trip(tierwise: Serve, upstream: FakeOpenAI) -> None:
    server = tierwise()
    for stream in STREAMS:
        upstream.requests.clear()
        script_tool_round(upstream)
        agent = create_agent(chat_model(server, stream=stream), [get_weather])
        assert final(agent.invoke({"messages": list(ASK)})) == ANSWER
        check_tool_round(upstream)


def test_parallel_tool_calls(tierwise: Serve, upstream: FakeOpenAI) -> None:
    server = tierwise()
    for stream in STREAMS:
        upstream.requests.clear()
        script_parallel(upstream)
        agent = create_agent(chat_model(server, stream=stream), [get_weather])
        assert final(agent.invoke({"messages": list(ASK)})) == "Paris and Tokyo are both sunny."
        check_parallel(upstream)


@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings")  # langchain-openai's, streaming `parsed`
def test_structured_output(tierwise: Serve, upstream: FakeOpenAI) -> None:
    server = tierwise()
    for stream in STREAMS:
        upstream.script(json.dumps(STRUCTURED))
        structured = chat_model(server, stream=stream).with_structured_output(Weather, method="json_schema")
        assert structured.invoke(ASK) == Weather(**STRUCTURED)
        check_structured(upstream)


def test_regenerate(tierwise: Serve, upstream: FakeOpenAI) -> None:
    upstream.script(ANSWER, "Paris: sunny, 18°C.", "Sunny in Paris.")
    server = tierwise()
    answers = [chat_model(server, stream=stream).invoke(ASK).content for stream in (False, *STREAMS)]
    assert answers == [ANSWER, "Paris: sunny, 18°C.", "Sunny in Paris."]
    assert (
        upstream.requests[0]["messages"]
        == upstream.requests[1]["messages"]
        == upstream.requests[2]["messages"]
    )
    assert [s.status for s in server.seen] == [200, 200, 200]


def test_upstream_429_is_a_rate_limit_error_with_retry_after(tierwise: Serve, upstream: FakeOpenAI) -> None:
    wait = {"retry-after": "1", "retry-after-ms": "10"}
    server = tierwise()
    for stream in STREAMS:
        upstream.fail(429, body=RATE_LIMITED, headers=wait)
        with pytest.raises(openai.RateLimitError) as caught:
            create_agent(chat_model(server, stream=stream), [get_weather]).invoke({"messages": list(ASK)})
        assert caught.value.response.headers["retry-after"] == "1"  # surfaced
        assert RATE_LIMITED["error"]["message"] in caught.value.message
        upstream.fail(429, body=RATE_LIMITED, headers=wait)  # honoured by the client's retry
        upstream.script(ANSWER)
        assert chat_model(server, stream=stream, max_retries=1).invoke(ASK).content == ANSWER
    assert [s.status for s in server.seen] == [429, 429, 200] * 2


def test_upstream_500_is_an_internal_server_error_with_its_message(
    tierwise: Serve, upstream: FakeOpenAI
) -> None:
    server = tierwise()
    for stream in STREAMS:
        upstream.fail(500, body=SERVER_ERROR)
        with pytest.raises(openai.InternalServerError) as caught:
            chat_model(server, stream=stream).invoke(ASK)
        assert caught.value.status_code == 500
        assert SERVER_ERROR["error"]["message"] in caught.value.message


@pytest.mark.parametrize(("model", "whole"), [(BIG_MODEL, True), (SMALL_MODEL, False)])
def test_a_30k_token_tool_result_with_a_16k_budget(
    tierwise: Serve, upstream: FakeOpenAI, model: str, whole: bool
) -> None:
    script_big_result(upstream)

    @tool
    def read_artifacts() -> str:
        """The build's artefacts."""
        return big_result()

    server = tierwise(model=model)
    agent = create_agent(chat_model(server, stream=True), [read_artifacts])
    assert final(agent.invoke({"messages": list(ASK)})) == "The artefacts are all there."
    assert [s.status for s in server.seen] == [200, 200]
    check_big_result(upstream, whole=whole)


def as_langchain(messages: list[dict[str, Any]]) -> list[BaseMessage]:
    """Chat messages as LangChain's (tool-call arguments parsed, as LangChain keeps them)."""
    out: list[BaseMessage] = []
    for message in messages:
        role, content = message["role"], message.get("content")
        if role == "system":
            out.append(SystemMessage(content))
        elif role == "user":
            out.append(HumanMessage(content))
        elif role == "tool":
            out.append(ToolMessage(content, tool_call_id=message["tool_call_id"]))
        elif message.get("tool_calls"):
            calls = [
                {"id": c["id"], "name": c["function"]["name"], "args": json.loads(c["function"]["arguments"])}
                for c in message["tool_calls"]
            ]
            out.append(AIMessage("", tool_calls=calls))
        else:
            out.append(AIMessage(content))
    return out


@pytest.mark.parametrize("stream", [False, True])
def test_tierwise_retrieval_tool_is_never_seen(tierwise: Serve, upstream: FakeOpenAI, stream: bool) -> None:
    script_recall(upstream)
    server = tierwise(model=SMALL_MODEL, budget=RECALL_WINDOW, reserve=500)
    ran: list[int] = []

    @tool("read_log")
    def read_log_tool(worker: int) -> str:
        """A worker's build log."""
        ran.append(worker)
        return read_log(worker)

    agent = create_agent(chat_model(server, stream=stream), [read_log_tool])
    state = agent.invoke({"messages": as_langchain(history())})
    assert final(state) == RECALL_ANSWER
    assert ran == [12]
    calls = [c["name"] for m in state["messages"] if isinstance(m, AIMessage) for c in m.tool_calls]
    assert "open_blob" not in calls and calls[-1] == "read_log"
    assert QUESTION in [m.content for m in state["messages"] if isinstance(m, HumanMessage)]
    check_recall(upstream)


def test_a_40_step_agent_loop_is_one_chat(tierwise: Serve, upstream: FakeOpenAI) -> None:
    """LangChain re-serialises each call's arguments (spacing, key order): still one chat."""
    script_agent_loop(upstream)
    server = tierwise()
    steps: list[int] = []

    @tool
    def run(step: int, path: str, opts: dict[str, Any]) -> str:
        """Run the tests after a change to ``path``."""
        steps.append(step)
        return loop_output(step)

    agent = create_agent(chat_model(server, stream=True), [run], system_prompt=SYSTEM)
    state = agent.invoke({"messages": [HumanMessage(LOOP_TASK)]}, {"recursion_limit": 4 * LOOP_STEPS})
    assert final(state) == "All tests pass."
    assert steps == list(range(LOOP_STEPS))
    resent = upstream.requests[-1]["messages"]
    sent_back = [c["function"]["arguments"] for m in resent for c in m.get("tool_calls") or ()]
    assert sent_back and sent_back[-1] != loop_arguments(LOOP_STEPS - 1)  # re-serialised by LangChain
    check_agent_loop(server, upstream)
