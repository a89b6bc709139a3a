"""Issue 29, point 2, under agent frameworks: the OpenAI Agents SDK and LangGraph through ``/v1``.

Before, a compacted conversation's pointers made the model call ``open_blob``, a tool the framework
never offered: the Agents SDK raised ``ModelBehaviorError: Tool open_blob not found`` and LangGraph
answered "open_blob is not a valid tool". Now tierwise answers that call itself. The scripted upstream
first calls ``open_blob`` (tierwise's round), then the framework's own tool, then answers; the
framework must run its tool, never see ``open_blob``, and get the answer.
"""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

from tests.server.test_openai_compat import service, store
from tests.server.test_openai_recall import OURS, QUESTION, RESERVE, WINDOW, history, log, names, sha
from tierwise.providers.base import ToolCall
from tierwise.providers.testing import ScriptedModel
from tierwise.store import Store

__all__ = ["store"]

pytestmark = pytest.mark.anyio

ANSWER = "Worker 12 is slowest: its step 36 took 36ms, like worker 11's."


def upstream() -> ScriptedModel:
    """open_blob (answered by tierwise), then the framework's read_log, then the answer."""
    return ScriptedModel(  # (ids of their own, never one of the history's)
        ToolCall("call_blob", "open_blob", json.dumps({"sha256": sha(11)})),
        ToolCall("call_read", "read_log", '{"worker": 12}'),
        ANSWER,
    )


def check_upstream(model: ScriptedModel) -> None:
    blob, client_tool, final = model.requests
    assert names(blob)[-2:] == OURS  # tierwise's tools after the framework's
    assert client_tool.messages[-1]["content"] == log(11)  # tierwise's round: the blob's text
    assert final.messages[-2]["tool_calls"][0]["id"] == "call_read"  # the framework's call, and its result
    assert final.messages[-1]["role"] == "tool" and "worker 12" in final.messages[-1]["content"]
    assert "open_blob" not in json.dumps(final.messages[len(blob.messages) - 1 :])  # not resent


async def test_an_agents_sdk_agent_never_sees_open_blob_and_gets_its_answer(store: Store) -> None:
    agents = pytest.importorskip("agents")
    agents.set_tracing_disabled(True)  # no trace export (it would reach for the network)
    model = upstream()
    svc = service(store, model, WINDOW, RESERVE)
    ran: list[int] = []

    @agents.function_tool
    def read_log(worker: int) -> str:
        """A worker's build log."""
        ran.append(worker)
        return f"the build log of worker {worker}: step 36 took 36ms"

    items: list[Any] = []  # the long history as Responses input items
    for message in history()[1:]:
        if message["role"] == "tool":
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": message["tool_call_id"],
                    "output": message["content"],
                }
            )
        elif message.get("tool_calls"):
            (call,) = message["tool_calls"]
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
    async with svc.http() as http:
        client = openai.AsyncOpenAI(base_url="http://test/v1", api_key="x", http_client=http, max_retries=0)
        agent = agents.Agent(
            name="builder",
            instructions="You are a build assistant.",
            model=agents.OpenAIChatCompletionsModel(model="m", openai_client=client),
            tools=[read_log],
        )
        result = await agents.Runner.run(agent, items)

    assert result.final_output == ANSWER
    assert ran == [12]
    seen = [json.dumps(r.output, default=str) for r in result.raw_responses]
    assert not any("open_blob" in s for s in seen)
    check_upstream(model)


async def test_a_langgraph_agent_never_sees_open_blob_and_gets_its_answer(store: Store) -> None:
    """LangChain's ``create_agent``: LangGraph's ReAct agent (``create_react_agent``), moved in 1.0."""
    create_agent = pytest.importorskip("langchain.agents").create_agent
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI

    model = upstream()
    svc = service(store, model, WINDOW, RESERVE)
    ran: list[int] = []

    @tool
    def read_log(worker: int) -> str:
        """A worker's build log."""
        ran.append(worker)
        return f"the build log of worker {worker}: step 36 took 36ms"

    messages: list[Any] = []
    for message in history():
        role, content = message["role"], message.get("content")
        if role == "system":
            messages.append(SystemMessage(content))
        elif role == "user":
            messages.append(HumanMessage(content))
        elif role == "tool":
            messages.append(ToolMessage(content, tool_call_id=message["tool_call_id"]))
        elif message.get("tool_calls"):
            (call,) = message["tool_calls"]
            args = json.loads(call["function"]["arguments"])
            messages.append(AIMessage("", tool_calls=[{"id": call["id"], "name": "read_log", "args": args}]))
        else:
            messages.append(AIMessage(content))
    async with svc.http() as http:
        llm = ChatOpenAI(
            model="m", base_url="http://test/v1", api_key="x", http_async_client=http, max_retries=0
        )
        agent = create_agent(llm, [read_log])
        state = await agent.ainvoke({"messages": messages})

    out = state["messages"]
    assert out[-1].content == ANSWER
    assert ran == [12]
    calls = [c["name"] for m in out if isinstance(m, AIMessage) for c in m.tool_calls]
    assert "open_blob" not in calls and calls[-1] == "read_log"
    assert not any("not a valid tool" in str(m.content) for m in out)
    assert QUESTION in [m.content for m in out if isinstance(m, HumanMessage)]
    check_upstream(model)
