"""Conformance across upstream kinds (issue 31): every client's tool round trip through tierwise, streamed
and not, in front of each upstream wire (``chat``, ``responses``, ``anthropic``).

One case table, three parts:

* an *upstream* adapter per kind (:class:`Upstream`): its fake server on loopback, the provider tierwise
  forwards to it with, the script — call ``get_weather(city="Oslo")``, then answer — and how its own
  wire carries the round back (Chat: a ``role: "tool"`` message after the assistant's ``tool_calls``;
  Responses: a ``function_call_output`` item after the ``function_call``; Anthropic: a ``tool_result``
  block in the user message after the ``tool_use``);
* a *driver* per client (:data:`CLIENTS`): it asks a question offering ``get_weather``, runs the call
  (its own loop for the Agents SDK and pydantic-ai) and returns the final text;
* one test: the call reached the tool as issued, the upstream got its result on its second request
  paired with the call's id, and tierwise stored the conversation as ONE chat.

One served tierwise per upstream kind for the whole module (each case a fresh session: its question,
the session key's start, names the case)::

    pytest -q tests/conformance/test_upstream_kinds.py -k "anthropic-sdk and responses"
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterable, Awaitable, Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

import anyio
import openai
import pytest

from tests.conformance.harness import ANSWER, SYSTEM, WEATHER, Tierwise, loopback, served, weather
from tests.fake_anthropic import AnthropicReply, FakeAnthropic
from tests.fake_openai import FakeOpenAI, FakeReply
from tests.fake_responses import FakeResponses, ResponsesReply
from tierwise.providers import OpenAICompatProvider, Provider, RetryPolicy
from tierwise.providers.anthropic_api import AnthropicProvider
from tierwise.providers.responses_api import ResponsesProvider

pytestmark = pytest.mark.anyio

CITY = {"city": "Oslo"}
FLAT_WEATHER = {"type": "function", **WEATHER["function"]}
"""``get_weather`` as the Responses wire spells it."""
ANTHROPIC_WEATHER = {
    "name": "get_weather",
    "description": WEATHER["function"]["description"],
    "input_schema": WEATHER["function"]["parameters"],
}
"""``get_weather`` as the Anthropic wire spells it."""
CALLED: list[str] = []
"""The cities ``get_weather`` was run for in the current case."""


def get_weather(city: str) -> str:
    """The weather in a city."""
    CALLED.append(city)
    return weather(city)


def run_call(name: str, arguments: str | Mapping[str, Any]) -> str:
    """Run a call the model made, as a client's own loop does (an unknown name or argument raises)."""
    given = json.loads(arguments) if isinstance(arguments, str) else arguments
    return {"get_weather": get_weather}[name](**given)


def text_of(content: Any) -> str:
    """A result's text, whether sent as a string or as text parts / blocks."""
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content)


# -- the upstream kinds -------------------------------------------------------------------------

Call = tuple[str, str, Any]
"""A call as the upstream got it back: id, name, arguments (parsed)."""
Result = tuple[str, str]
"""A tool result as the upstream got it: the id it answers, its text."""


class Upstream:
    """One upstream kind: ``fake`` (started by the module's fixture), ``provider``, ``script``, ``check``."""

    kind: ClassVar[str]
    ids: ClassVar[str] = "call_"
    """How the wire's call ids start."""
    fake: Any

    def provider(self) -> Provider:
        """The provider tierwise forwards to ``fake`` with."""
        raise NotImplementedError(type(self).__name__)

    def script(self, call_id: str) -> None:
        """A fresh start: the model calls ``get_weather(Oslo)`` as ``call_id``, then answers."""
        raise NotImplementedError(type(self).__name__)

    def tools(self, body: Mapping[str, Any]) -> list[str]:
        """The tools a request offered, by name."""
        return [tool["name"] for tool in body.get("tools") or ()]

    def round(self, body: Mapping[str, Any]) -> tuple[Call, Result]:
        """The call and the result that follows it in a request, each in this wire's own shape."""
        raise NotImplementedError(type(self).__name__)

    def check(self, call_id: str, question: str) -> None:
        """Two requests, both offering ``get_weather`` and asking the question once; the second carries
        the call back and its result paired with the id it was issued with, once each."""
        first, second = self.fake.requests
        for sent in (first, second):  # the question once: the resent history is not sent twice
            assert json.dumps(sent, ensure_ascii=False).count(question) == 1
        assert json.dumps(second).count(f'"{call_id}"') == 2  # the call and its result, once each
        assert "get_weather" in self.tools(first) and "get_weather" in self.tools(second)
        call, result = self.round(second)
        assert call == (call_id, "get_weather", CITY)
        assert result == (call_id, weather("Oslo"))


class ChatUpstream(Upstream):
    """Chat Completions (``OpenAICompatProvider`` → :class:`FakeOpenAI`)."""

    kind = "chat"

    def __init__(self) -> None:
        self.fake = FakeOpenAI()

    def provider(self) -> Provider:
        return OpenAICompatProvider(
            base_url=self.fake.url, api_key="k", model="gpt-4o-mini", retry_policy=RetryPolicy(max_retries=0)
        )

    def script(self, call_id: str) -> None:
        self.fake.reset()
        self.fake.script(
            FakeReply(tool_calls=[{"id": call_id, "name": "get_weather", "arguments": CITY}]), ANSWER
        )

    def tools(self, body: Mapping[str, Any]) -> list[str]:
        return [tool["function"]["name"] for tool in body.get("tools") or ()]

    def round(self, body: Mapping[str, Any]) -> tuple[Call, Result]:
        messages = body["messages"]
        at = next(i for i, m in enumerate(messages) if m.get("tool_calls"))
        (call,) = messages[at]["tool_calls"]
        result = messages[at + 1]
        assert result["role"] == "tool"
        function = call["function"]
        return (
            (call["id"], function["name"], json.loads(function["arguments"])),
            (result["tool_call_id"], text_of(result["content"])),
        )


class ResponsesUpstream(Upstream):
    """The Responses API (``ResponsesProvider`` → :class:`FakeResponses`)."""

    kind = "responses"

    def __init__(self) -> None:
        self.fake = FakeResponses()

    def provider(self) -> Provider:
        return ResponsesProvider(
            base_url=self.fake.url, api_key="k", model="up-model", retry_policy=RetryPolicy(max_retries=0)
        )

    def script(self, call_id: str) -> None:
        self.fake.reset()
        call = {"id": call_id, "name": "get_weather", "arguments": CITY}
        self.fake.script(ResponsesReply(tool_calls=[call]), ANSWER)

    def round(self, body: Mapping[str, Any]) -> tuple[Call, Result]:
        items = body["input"]
        at = next(i for i, item in enumerate(items) if item.get("type") == "function_call")
        call, result = items[at], items[at + 1]
        assert result["type"] == "function_call_output"
        return (
            (call["call_id"], call["name"], json.loads(call["arguments"])),
            (result["call_id"], text_of(result["output"])),
        )


class AnthropicUpstream(Upstream):
    """Anthropic Messages (``AnthropicProvider`` → :class:`FakeAnthropic`)."""

    kind = "anthropic"
    ids = "toolu_"

    def __init__(self) -> None:
        self.fake = FakeAnthropic()

    def provider(self) -> Provider:
        return AnthropicProvider(
            base_url=self.fake.url, api_key="k", model="claude-test", retry_policy=RetryPolicy(max_retries=0)
        )

    def script(self, call_id: str) -> None:
        self.fake.reset()
        call = {"id": call_id, "name": "get_weather", "input": CITY}
        self.fake.script(AnthropicReply(tool_calls=[call]), ANSWER)

    def round(self, body: Mapping[str, Any]) -> tuple[Call, Result]:
        messages = body["messages"]

        def blocks(at: int, kind: str) -> list[dict[str, Any]]:
            content = messages[at]["content"]
            return [b for b in content if b["type"] == kind] if isinstance(content, list) else []

        at = next(i for i, m in enumerate(messages) if m["role"] == "assistant" and blocks(i, "tool_use"))
        (use,) = blocks(at, "tool_use")
        assert messages[at + 1]["role"] == "user"
        (result,) = blocks(at + 1, "tool_result")
        return (use["id"], use["name"], use["input"]), (result["tool_use_id"], text_of(result["content"]))


UPSTREAMS: dict[str, type[Upstream]] = {
    u.kind: u for u in (ChatUpstream, ResponsesUpstream, AnthropicUpstream)
}


# -- the clients --------------------------------------------------------------------------------

Driver = Callable[[Tierwise, str, bool], Awaitable[str]]
"""A client: ``(served tierwise, question, stream) → the final text``, ``get_weather`` run on the way."""
STEPS = 3
"""Requests a client's own loop may make before it counts as stuck (the round trip takes 2)."""


async def chat_loop(complete: Callable[[list[dict[str, Any]]], Awaitable[Any]], question: str) -> str:
    """A Chat Completions caller's own tool loop; ``complete(messages)`` → the answer's message."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": question}]
    for _ in range(STEPS):
        message = await complete(messages)
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
        messages += [
            {"role": "tool", "tool_call_id": c.id, "content": run_call(c.function.name, c.function.arguments)}
            for c in message.tool_calls
        ]
    raise AssertionError(f"no answer after {STEPS} requests")


def openai_client(server: Tierwise) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=server.url, api_key="any", max_retries=0)


async def openai_chat(server: Tierwise, question: str, stream: bool) -> str:
    """``client.chat.completions.create``, or the SDK's ``.stream`` helper."""
    async with openai_client(server) as client:

        async def complete(messages: list[dict[str, Any]]) -> Any:
            body: Any = {"model": "m", "messages": messages, "tools": [WEATHER]}
            if not stream:
                return (await client.chat.completions.create(**body)).choices[0].message
            async with client.chat.completions.stream(**body) as events:
                return (await events.get_final_completion()).choices[0].message

        return await chat_loop(complete, question)


async def litellm_chat(server: Tierwise, question: str, stream: bool) -> str:
    """``litellm.acompletion`` on its ``openai/`` provider (a stream rebuilt: ``stream_chunk_builder``)."""
    litellm = pytest.importorskip("litellm")

    async def complete(messages: list[dict[str, Any]]) -> Any:
        response = await litellm.acompletion(
            model="openai/m",
            api_base=server.url,
            api_key="any",
            messages=messages,
            tools=[WEATHER],
            stream=stream,
            max_retries=0,
        )
        if stream:
            response = litellm.stream_chunk_builder([c async for c in response], messages=messages)
        return response.choices[0].message

    return await chat_loop(complete, question)


async def openai_responses(server: Tierwise, question: str, stream: bool) -> str:
    """``client.responses.create``, or the SDK's ``.stream`` helper; the whole input resent each turn."""
    items: list[Any] = [{"role": "user", "content": question}]
    async with openai_client(server) as client:
        for _ in range(STEPS):
            body: Any = {"model": "m", "input": items, "tools": [FLAT_WEATHER]}
            if stream:
                async with client.responses.stream(**body) as events:
                    response = await events.get_final_response()
            else:
                response = await client.responses.create(**body)
            calls = [item for item in response.output if item.type == "function_call"]
            if not calls:
                return response.output_text
            items += [item.model_dump(exclude_none=True) for item in response.output]
            items += [
                {
                    "type": "function_call_output",
                    "call_id": c.call_id,
                    "output": run_call(c.name, c.arguments),
                }
                for c in calls
            ]
    raise AssertionError(f"no answer after {STEPS} requests")


async def anthropic_sdk(server: Tierwise, question: str, stream: bool) -> str:
    """``client.messages.create``, or ``client.messages.stream`` (its final message)."""
    anthropic = pytest.importorskip("anthropic")
    messages: list[Any] = [{"role": "user", "content": question}]
    async with anthropic.AsyncAnthropic(base_url=server.base, api_key="any", max_retries=0) as client:
        for _ in range(STEPS):
            body: Any = {"model": "claude-test", "max_tokens": 1024, "messages": messages}
            if stream:
                async with client.messages.stream(**body, tools=[ANTHROPIC_WEATHER]) as events:
                    message = await events.get_final_message()
            else:
                message = await client.messages.create(**body, tools=[ANTHROPIC_WEATHER])
            uses = [block for block in message.content if block.type == "tool_use"]
            if not uses:
                return "".join(block.text for block in message.content if block.type == "text")
            results = [
                {"type": "tool_result", "tool_use_id": u.id, "content": run_call(u.name, u.input)}
                for u in uses
            ]
            messages += [
                {"role": "assistant", "content": message.content},
                {"role": "user", "content": results},
            ]
    raise AssertionError(f"no answer after {STEPS} requests")


def langchain_loop(model: Any, question: str) -> str:
    """A LangChain chat model's tool loop by hand: ``bind_tools``, ``invoke``, ``ToolMessage``s.

    Synchronous (run in a worker thread): LangChain caches its async HTTP clients by base URL across
    event loops, and each case has a loop of its own."""
    from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage

    bound = model.bind_tools([get_weather])
    messages: list[BaseMessage] = [HumanMessage(question)]
    for _ in range(STEPS):
        reply = bound.invoke(messages)
        if not reply.tool_calls:
            return str(reply.text)
        messages.append(reply)
        messages += [
            ToolMessage(run_call(c["name"], c["args"]), tool_call_id=c["id"]) for c in reply.tool_calls
        ]
    raise AssertionError(f"no answer after {STEPS} requests")


async def langchain_openai(server: Tierwise, question: str, stream: bool) -> str:
    """LangChain's ``ChatOpenAI`` (Chat Completions), ``streaming`` or not."""
    chat_openai = pytest.importorskip("langchain_openai").ChatOpenAI
    model = chat_openai(model="m", base_url=server.url, api_key="any", max_retries=0, streaming=stream)
    return await anyio.to_thread.run_sync(langchain_loop, model, question)


async def langchain_anthropic(server: Tierwise, question: str, stream: bool) -> str:
    """LangChain's ``ChatAnthropic`` (``/v1/messages``), ``streaming`` or not."""
    chat_anthropic = pytest.importorskip("langchain_anthropic").ChatAnthropic
    model = chat_anthropic(
        model_name="claude-test", base_url=server.base, api_key="any", max_retries=0, streaming=stream
    )
    return await anyio.to_thread.run_sync(langchain_loop, model, question)


async def agents_sdk(server: Tierwise, question: str, stream: bool) -> str:
    """The Agents SDK's default model (Responses) on a default client pointing at tierwise; its own loop."""
    agents = pytest.importorskip("agents")
    from agents.models import _openai_shared

    agents.set_tracing_disabled(True)
    # the SDK's defaults are process-wide: restored after the case (only its private module reads them)
    previous = (_openai_shared.get_default_openai_client(), _openai_shared.get_use_responses_by_default())
    client = openai_client(server)
    agents.set_default_openai_client(client, use_for_tracing=False)
    agents.set_default_openai_api("responses")
    try:
        assistant = agents.Agent(
            name="assistant", instructions=SYSTEM, model="m", tools=[agents.function_tool(get_weather)]
        )
        if not stream:
            return str((await agents.Runner.run(assistant, question)).final_output)
        result = agents.Runner.run_streamed(assistant, question)
        async for _event in result.stream_events():
            pass
        return str(result.final_output)
    finally:
        _openai_shared.set_default_openai_client(previous[0])
        _openai_shared.set_use_responses_by_default(previous[1])
        await client.close()


async def _drain(_ctx: Any, events: AsyncIterable[Any]) -> None:
    async for _event in events:
        pass


async def pydantic_ai_with(model_class: str, server: Tierwise, question: str, stream: bool) -> str:
    """pydantic-ai's ``Agent`` on ``model_class`` (its own loop; an ``event_stream_handler`` streams)."""
    pydantic_ai = pytest.importorskip("pydantic_ai")
    from pydantic_ai.models import openai as models
    from pydantic_ai.providers.openai import OpenAIProvider

    async with openai_client(server) as client:
        model = getattr(models, model_class)("m", provider=OpenAIProvider(openai_client=client))
        assistant = pydantic_ai.Agent(model, system_prompt=SYSTEM, tools=[get_weather])
        result = await assistant.run(question, event_stream_handler=_drain if stream else None)
        return str(result.output)


async def pydantic_ai_chat(server: Tierwise, question: str, stream: bool) -> str:
    """pydantic-ai on ``OpenAIChatModel`` (Chat Completions)."""
    return await pydantic_ai_with("OpenAIChatModel", server, question, stream)


async def pydantic_ai_responses(server: Tierwise, question: str, stream: bool) -> str:
    """pydantic-ai on ``OpenAIResponsesModel`` (the Responses API)."""
    return await pydantic_ai_with("OpenAIResponsesModel", server, question, stream)


CHAT, RESPONSES, MESSAGES = "/v1/chat/completions", "/v1/responses", "/v1/messages"
CLIENTS: dict[str, tuple[Driver, str]] = {
    "openai-chat": (openai_chat, CHAT),
    "openai-responses": (openai_responses, RESPONSES),
    "agents-sdk": (agents_sdk, RESPONSES),
    "langchain-openai": (langchain_openai, CHAT),
    "langchain-anthropic": (langchain_anthropic, MESSAGES),
    "anthropic-sdk": (anthropic_sdk, MESSAGES),
    "litellm": (litellm_chat, CHAT),
    "pydantic-ai-chat": (pydantic_ai_chat, CHAT),
    "pydantic-ai-responses": (pydantic_ai_responses, RESPONSES),
}
"""Each client and the tierwise endpoint it speaks to. Every one offers both ways (streamed, whole) and
every upstream kind serves every endpoint: no combination is skipped."""


# -- tierwise per upstream kind, and the test ---------------------------------------------------


@pytest.fixture(scope="module", params=list(UPSTREAMS))
def upstream_kind(
    request: pytest.FixtureRequest, _template: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Upstream, Tierwise]]:
    """One fake upstream of the kind and one tierwise served over it, for all the module's cases."""
    upstream = UPSTREAMS[request.param]()
    upstream.fake.start()
    store_path = tmp_path_factory.mktemp(f"upstream-{upstream.kind}") / "tierwise.db"
    store_path.write_bytes(_template.read_bytes())
    try:
        with served(upstream.provider(), store_path) as server:
            yield upstream, server
    finally:
        upstream.fake.stop()


def chat_ids(server: Tierwise) -> dict[str, int]:
    """Every chat stored (earlier branches too) → its message count."""
    listed = loopback().get(f"{server.base}/api/chats", params={"include_superseded": "true"})
    listed.raise_for_status()
    return {c["id"]: c["message_count"] for c in listed.json()["chats"]}


def one_chat(server: Tierwise, before: dict[str, int], answered: list[str | None]) -> str:
    """The case stored one new chat, the one every answer named; waits for its 4 messages (the question,
    the call, the result, the answer; the last is stored in the background)."""
    assert len(answered) == 2 and len(set(answered)) == 1 and answered[0]
    deadline = time.monotonic() + 10
    while True:
        new = {chat: count for chat, count in chat_ids(server).items() if chat not in before}
        if min(new.values(), default=0) >= 4 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert list(new) == [answered[0]], new
    assert new[answered[0]] == 4, new
    return answered[0]


STREAMS = {"whole": False, "streamed": True}


@pytest.mark.parametrize("way", list(STREAMS))
@pytest.mark.parametrize("client", list(CLIENTS))
async def test_tool_round_trip(upstream_kind: tuple[Upstream, Tierwise], client: str, way: str) -> None:
    """The client gets ``get_weather(Oslo)``, runs it and gets the answer; the upstream got the result
    in its wire's shape, paired with the call's id; tierwise kept the conversation as one chat."""
    upstream, server = upstream_kind
    case = f"{client}/{upstream.kind}/{way}"
    question = f"What's the weather in Oslo? (case {case})"  # a session of its own
    call_id = f"{upstream.ids}{client}_{way}"  # as this wire spells a call's id
    upstream.script(call_id)
    CALLED.clear()
    before, seen = chat_ids(server), len(server.seen)
    drive, endpoint = CLIENTS[client]
    answer = await drive(server, question, STREAMS[way])
    assert answer == ANSWER
    assert CALLED == ["Oslo"]  # the call reached the client as issued: its name, {"city": "Oslo"}
    upstream.check(call_id, question)
    answers = server.seen[seen:]
    assert [(s.path, s.status, s.streamed) for s in answers] == [(endpoint, 200, STREAMS[way])] * 2
    one_chat(server, before, [s.chat for s in answers])
