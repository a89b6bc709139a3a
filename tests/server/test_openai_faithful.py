"""Issue 16: the OpenAI-compatible endpoint under real clients — parameters forwarded as sent, the
upstream's answer relayed whole, OpenAI's errors and statuses, and bad input refused before the
upstream is called. Driven by the official ``openai`` SDK and ``langchain-openai``."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from pydantic import BaseModel

from tierwise.budget import Budget
from tierwise.chat.engine import ChatEngine
from tierwise.providers import OpenAICompatProvider, RetryPolicy
from tierwise.providers.base import ChoiceDelta, ModelRequest, ModelResponse, Provider
from tierwise.providers.testing import FunctionModel, ScriptedModel, tool_call
from tierwise.server import create_app
from tierwise.server.auth import rate_limit_from_env
from tierwise.server.threaded import serve_in_thread
from tierwise.store import Store

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
URL = "/v1/chat/completions"
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}
TIME = {
    "type": "function",
    "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}},
}


class Weather(BaseModel):
    city: str
    temperature_c: int


@pytest.fixture
def store() -> Iterator[Store]:
    opened = Store.open("sqlite://")
    yield opened
    opened.close()


class Service:
    def __init__(self, store: Store, provider: Provider, **options: Any) -> None:
        self.store = store
        self.engine = ChatEngine(store, provider, budget=Budget(window=8_000, reserve=500))
        self.app = create_app(store, self.engine, **options)

    def http(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.ASGITransport(app=self.app), base_url="http://test")

    @asynccontextmanager
    async def client(self) -> AsyncIterator[openai.AsyncOpenAI]:
        async with self.http() as http:
            yield openai.AsyncOpenAI(
                base_url="http://test/v1", api_key="anything", http_client=http, max_retries=0
            )


def answer(request: ModelRequest) -> str | Any:
    """A fake upstream: JSON matching the schema when asked for it, a tool call when offered tools."""
    response_format = request.params.get("response_format") or {}
    if response_format.get("type") == "json_schema":
        assert response_format["json_schema"]["schema"]["properties"].keys() == {"city", "temperature_c"}
        return json.dumps({"city": "Lisbon", "temperature_c": 24})
    if request.tools and request.tool_choice != "none" and request.messages[-1]["role"] == "user":
        return tool_call("get_weather", city="Lisbon")
    return "It is sunny in Lisbon."


# -- parameters are forwarded as sent ----------------------------------------------------------


SENT: dict[str, Any] = {
    "response_format": {
        "type": "json_schema",
        "json_schema": {
            "name": "weather",
            "strict": True,
            "schema": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "temperature_c": {"type": "integer"}},
                "required": ["city", "temperature_c"],
                "additionalProperties": False,
            },
        },
    },
    "n": 1,
    "stop": ["\n\n", "END"],
    "seed": 42,
    "top_p": 0.9,
    "frequency_penalty": 0.5,
    "presence_penalty": -0.5,
    "logprobs": True,
    "top_logprobs": 3,
    "parallel_tool_calls": False,
    "user": "user-42",
    "metadata": {"team": "planning"},
    "reasoning_effort": "low",
    "max_completion_tokens": 300,
}


async def test_every_parameter_reaches_the_fake_upstream_as_sent(store: Store) -> None:
    model = FunctionModel(answer)
    svc = Service(store, model)
    named = {"type": "function", "function": {"name": "get_weather"}}
    async with svc.client() as client:
        await client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "Weather in Lisbon as JSON"}],
            tools=[WEATHER, TIME],  # type: ignore[list-item]
            tool_choice=named,  # type: ignore[arg-type]
            temperature=0.3,
            extra_body={"vendor_option": {"x": 1}},
            **SENT,
        )
        await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "Plain"}])
    first, plain = model.requests
    assert dict(first.params) == {**SENT, "vendor_option": {"x": 1}}
    assert first.tool_choice == named  # a named choice stays named (was "required")
    assert first.temperature == 0.3 and first.max_tokens is None
    assert dict(plain.params) == {} and plain.max_tokens is None  # no max_tokens invented (was 1000)


def _sse(*chunks: dict[str, Any]) -> bytes:
    return b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks) + b"data: [DONE]\n\n"


class Upstream:
    """An OpenAI-compatible upstream behind ``OpenAICompatProvider``: records bodies, answers in SSE."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    def handler(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        self.bodies.append(body)
        top = {"token": "Sun", "logprob": -0.1, "bytes": None, "top_logprobs": []}
        base = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": body["model"]}

        def choice(
            index: int, delta: dict[str, Any], finish: str | None = None, **more: Any
        ) -> dict[str, Any]:
            return {**base, "choices": [{"index": index, "delta": delta, "finish_reason": finish, **more}]}

        chunks = [
            choice(0, {"role": "assistant", "content": "Sun"}, logprobs={"content": [top], "refusal": None}),
            choice(1, {"role": "assistant", "content": "Rain"}),
            choice(0, {"content": "ny."}, logprobs={"content": [{**top, "token": "ny."}], "refusal": None}),
            choice(1, {"content": " maybe."}, "stop"),
            choice(0, {}, "stop"),
            {
                **base,
                "choices": [],
                "usage": {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13},
            },
        ]
        return httpx.Response(200, content=_sse(*chunks), headers={"content-type": "text/event-stream"})

    def provider(self) -> OpenAICompatProvider:
        http = httpx.AsyncClient(transport=httpx.MockTransport(self.handler))
        client = openai.AsyncOpenAI(base_url="http://127.0.0.1:9/v1", api_key="k", http_client=http)
        return OpenAICompatProvider(client=client, model="up-1", retry_policy=RetryPolicy(max_retries=0))


async def test_the_real_provider_sends_them_and_relays_logprobs_and_further_choices(store: Store) -> None:
    upstream = Upstream()
    svc = Service(store, upstream.provider())
    named = {"type": "function", "function": {"name": "get_weather"}}
    async with svc.client() as client:
        whole = await client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "Weather?"}],
            tools=[WEATHER],  # type: ignore[list-item]
            tool_choice=named,  # type: ignore[arg-type]
            extra_body={"vendor_option": True},
            **{**SENT, "n": 2},
        )
        streamed = await client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "Weather again?"}],
            n=2,
            logprobs=True,
            stream=True,
        )
        chunks = [chunk async for chunk in streamed]
    sent = upstream.bodies[0]
    for name, value in {**SENT, "n": 2, "vendor_option": True}.items():
        assert sent[name] == value, name
    assert sent["tool_choice"] == named and "max_tokens" not in sent
    assert "max_tokens" not in upstream.bodies[1] and "max_completion_tokens" not in upstream.bodies[1]

    assert [c.index for c in whole.choices] == [0, 1]
    assert whole.choices[0].message.content == "Sunny." and whole.choices[1].message.content == "Rain maybe."
    assert whole.choices[0].logprobs is not None and whole.choices[0].logprobs.content is not None
    assert [t.token for t in whole.choices[0].logprobs.content] == ["Sun", "ny."]
    assert whole.choices[0].finish_reason == "stop" and whole.choices[1].finish_reason == "stop"

    texts: dict[int, str] = {}
    tokens: list[str] = []
    for chunk in chunks:
        for choice in chunk.choices:
            texts[choice.index] = texts.get(choice.index, "") + (choice.delta.content or "")
            tokens += [t.token for t in (choice.logprobs.content or ())] if choice.logprobs else []
    assert texts == {0: "Sunny.", 1: "Rain maybe."}
    assert tokens == ["Sun", "ny."]


async def test_a_refusal_is_relayed(store: Store) -> None:
    refused = ModelResponse(text="", extras=[ChoiceDelta(0, {"refusal": "I can't help with that."})])
    svc = Service(store, ScriptedModel(refused, refused))
    async with svc.client() as client:
        whole = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
        stream = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "y"}], stream=True
        )
        pieces = [c.choices[0].delta.refusal or "" async for c in stream if c.choices]
    assert whole.choices[0].message.refusal == "I can't help with that."
    assert "".join(pieces) == "I can't help with that."


# -- structured outputs and tools through the real clients --------------------------------------


async def test_openai_parse_with_a_pydantic_model(store: Store) -> None:
    model = FunctionModel(answer)
    svc = Service(store, model)
    async with svc.client() as client:
        parsed = await client.chat.completions.parse(
            model="m", messages=[{"role": "user", "content": "Weather in Lisbon?"}], response_format=Weather
        )
    assert parsed.choices[0].message.parsed == Weather(city="Lisbon", temperature_c=24)
    assert model.requests[0].params["response_format"]["json_schema"]["name"] == "Weather"


def _chat_openai(svc: Service) -> Any:
    from langchain_openai import ChatOpenAI

    http = httpx.AsyncClient(transport=httpx.ASGITransport(app=svc.app), base_url="http://test")
    return ChatOpenAI(
        model="m",
        base_url="http://test/v1",
        api_key="x",
        http_async_client=http,
        max_retries=0,  # type: ignore[arg-type]
    )


async def test_langchain_structured_output_tools_and_streaming(store: Store) -> None:
    pytest.importorskip("langchain_openai")
    model = FunctionModel(answer)
    svc = Service(store, model)
    llm = _chat_openai(svc)

    weather = await llm.with_structured_output(Weather).ainvoke("Weather in Lisbon, as data?")
    assert weather == Weather(city="Lisbon", temperature_c=24)

    called = await llm.bind_tools([WEATHER], tool_choice="get_weather").ainvoke("Weather in Lisbon?")
    assert [(c["name"], c["args"]) for c in called.tool_calls] == [("get_weather", {"city": "Lisbon"})]
    tool_choice = model.requests[-1].tool_choice
    assert tool_choice == {"type": "function", "function": {"name": "get_weather"}}  # stays named

    pieces = [chunk.content async for chunk in llm.astream("Is it sunny there?")]
    assert "".join(str(p) for p in pieces) == "It is sunny in Lisbon." and len(pieces) > 2


# -- errors as OpenAI's -------------------------------------------------------------------------


def _error(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"} and error["message"]
    return dict(error)


async def test_invalid_values_are_400_and_the_sdk_raises_bad_request(store: Store) -> None:
    model = ScriptedModel()
    svc = Service(store, model)
    user = [{"role": "user", "content": "x"}]
    async with svc.http() as http:
        for field, value in (
            ("temperature", 9),
            ("n", 0),
            ("top_p", 2),
            ("stop", ["a", "b", "c", "d", "e"]),
            ("tool_choice", "sometimes"),
            ("max_tokens", 0),
            ("metadata", {"a": 1}),
        ):
            error = _error(await http.post(URL, json={"messages": user, field: value}), 400)
            assert error["type"] == "invalid_request_error" and error["param"].startswith(field), error
        named = {"type": "function", "function": {"name": "nope"}}
        error = _error(
            await http.post(URL, json={"messages": user, "tools": [WEATHER], "tool_choice": named}), 400
        )
        assert "nope" in error["message"] and error["param"] == "tool_choice"
    async with svc.client() as client:
        with pytest.raises(openai.BadRequestError):
            await client.chat.completions.create(model="m", messages=user, temperature=9)  # type: ignore[arg-type]
    assert model.requests == []


async def test_a_tool_result_without_its_call_is_400(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """OpenAI's 400 (its message: clients recognise it); when repairing, tierwise's, naming the id."""
    model = ScriptedModel("never")
    messages = [
        {"role": "user", "content": "Balance?"},
        {"role": "tool", "tool_call_id": "call_ghost", "content": "BALANCE=100"},
    ]
    no_id = [messages[0], {"role": "tool", "content": "x"}]
    async with Service(store, model).http() as http:
        error = _error(await http.post(URL, json={"messages": messages}), 400)
        assert "must be a response to a preceeding message with 'tool_calls'" in error["message"]
        assert error["param"] == "messages"
        assert "tool_call_id" in _error(await http.post(URL, json={"messages": no_id}), 400)["message"]
    monkeypatch.setenv("TIERWISE_REPAIR_HISTORY", "1")
    async with Service(store, model).http() as http:
        error = _error(await http.post(URL, json={"messages": messages}), 400)
        assert "call_ghost" in error["message"] and error["param"] == "messages.1.tool_call_id"
        assert "tool_call_id" in _error(await http.post(URL, json={"messages": no_id}), 400)["message"]
    assert model.requests == []  # was silently dropped and sent


async def test_405_carries_allow(store: Store) -> None:
    svc = Service(store, ScriptedModel())
    async with svc.http() as http:
        get = await http.get(URL)
        assert _error(get, 405)["code"] == "method_not_allowed" and get.headers["allow"] == "POST"
        post_models = await http.post("/v1/models")
        assert post_models.status_code == 405 and post_models.headers["allow"] == "GET"
        api = await http.delete("/api/health")
        assert api.status_code == 405 and "GET" in api.headers["allow"]
        options = await http.options(URL)
        assert options.status_code == 405 and "POST" in options.headers["allow"]
        _error(options, 405)


async def test_a_changed_tool_result_diverges_and_the_upstream_gets_the_new_one(store: Store) -> None:
    model = ScriptedModel("Your balance is 100.", "Your balance is 999.")
    svc = Service(store, model)
    call = {"id": "call_b", "type": "function", "function": {"name": "balance", "arguments": "{}"}}
    asked = [
        {"role": "user", "content": "What is my balance?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
    ]
    async with svc.http() as http:
        for balance in ("100", "999"):
            history = [*asked, {"role": "tool", "tool_call_id": "call_b", "content": f"BALANCE={balance}"}]
            sent = await http.post(URL, json={"messages": history}, headers={"X-Tierwise-Session": "bank"})
            assert sent.status_code == 200, sent.text
    last = model.requests[1].messages
    tool_results = [m["content"] for m in last if m["role"] == "tool"]
    assert tool_results == ["BALANCE=999"]  # was the stored "BALANCE=100"


# -- local mode: any key; the README's snippet verbatim ------------------------------------------


def readme_openai_snippet() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    (snippet,) = [
        block
        for block in re.findall(r"```python\n(.*?)```", readme, re.S)
        if "from openai" in block and "chat.completions.create" in block
    ]
    return str(snippet)


def test_the_readmes_openai_snippet_works_against_plain_serve(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    snippet = readme_openai_snippet()
    assert "any key in local mode" in snippet
    monkeypatch.delenv("TIERWISE_RATE_LIMIT", raising=False)
    engine = ChatEngine(store, ScriptedModel("Hello there."), budget=Budget(window=8_000, reserve=500))
    # As `tierwise serve` makes it: no --require-key, the default rate limit, loopback names.
    app = create_app(store, engine, rate_limit=rate_limit_from_env(), hosts=["127.0.0.1", "localhost"])
    with serve_in_thread(app) as base:
        port = base.rsplit(":", 1)[1]
        code = snippet.replace("127.0.0.1:8000", f"127.0.0.1:{port}")
        namespace: dict[str, Any] = {"history": [{"role": "user", "content": "Hi"}]}
        lines = code.strip().splitlines()
        exec("\n".join([*lines[:-1], f"result = {lines[-1]}"]), namespace)  # was 401 invalid_api_key
        text = "".join(chunk.choices[0].delta.content or "" for chunk in namespace["result"] if chunk.choices)
    assert text == "Hello there."


# -- validated before the upstream is called -----------------------------------------------------


async def test_unsafe_user_and_session_values_never_fail_after_the_answer(store: Store) -> None:
    model = FunctionModel(lambda request: "ok")
    svc = Service(store, model)
    user = [{"role": "user", "content": "x"}]
    async with svc.http() as http:
        for value in ("用户-42", "a\r\nX-Injected: 1", "tab\there"):
            sent = await http.post(URL, json={"messages": user, "user": value})
            assert sent.status_code == 200, (value, sent.text)  # was a 500 after the upstream answered
            header = sent.headers["x-tierwise-session"]
            assert header.startswith("sha256-") and value not in header and "x-injected" not in sent.headers
        assert model.requests[0].params["user"] == "用户-42"  # forwarded as sent, in the body
        long = await http.post(URL, json={"messages": user, "user": "u" * 100_000})
        assert _error(long, 400)["param"] == "user"
        raw = await http.post(URL, json={"messages": user}, headers={"X-Tierwise-Session": "café".encode()})
        assert raw.status_code == 200 and raw.headers["x-tierwise-session"].startswith("sha256-")
        safe = await http.post(URL, json={"messages": user}, headers={"X-Tierwise-Session": "s-1"})
        assert safe.headers["x-tierwise-session"] == "s-1"
    assert len(model.requests) == 5


async def test_deep_json_is_400_and_a_large_body_413(store: Store) -> None:
    model = ScriptedModel()
    svc = Service(store, model, max_body_bytes=100_000)
    async with svc.http() as http:
        deep = (
            b'{"messages": [{"role": "user", "content": "x"}], "metadata": '
            + b"[" * 5_000
            + b"]" * 5_000
            + b"}"
        )
        assert _error(await http.post(URL, content=deep), 400)["code"] == "invalid_json"  # was a 500
        nested: Any = "x"
        for _ in range(200):
            nested = {"a": nested}
        medium = {"messages": [{"role": "user", "content": "x"}], "vendor": nested}
        assert "nested" in _error(await http.post(URL, json=medium), 400)["message"]
        big = {"messages": [{"role": "user", "content": "x" * 200_000}]}
        error = _error(await http.post(URL, json=big), 413)
        assert "TIERWISE_MAX_BODY_BYTES" in error["message"]

        async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: counted as it comes
            yield b'{"messages": [{"role": "user", "content": "'
            for _ in range(30):
                yield b"y" * 10_000
            yield b'"}]}'

        assert (await http.post(URL, content=chunks())).status_code == 413
    assert model.requests == []


def test_the_body_limit_setting(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    from tierwise.errors import UserError

    engine = ChatEngine(store, ScriptedModel(), budget=Budget(window=8_000, reserve=500))
    monkeypatch.setenv("TIERWISE_MAX_BODY_BYTES", "1234")
    assert create_app(store, engine).state.max_body_bytes == 1234
    monkeypatch.setenv("TIERWISE_MAX_BODY_BYTES", "lots")
    with pytest.raises(UserError, match="TIERWISE_MAX_BODY_BYTES"):
        create_app(store, engine)


# -- the contract published ----------------------------------------------------------------------


async def test_openapi_has_the_request_schema_errors_and_security(store: Store) -> None:
    svc = Service(store, ScriptedModel())
    async with svc.http() as http:
        document = (await http.get("/openapi.json")).json()
    operation = document["paths"]["/v1/chat/completions"]["post"]
    schema = operation["requestBody"]["content"]["application/json"]["schema"]
    assert schema == {"$ref": "#/components/schemas/ChatCompletionRequest"}
    schemas = document["components"]["schemas"]
    properties = schemas["ChatCompletionRequest"]["properties"]
    assert {"messages", "response_format", "n", "tool_choice", "user"} <= properties.keys()
    assert "MessageIn" in schemas and "ErrorResponse" in schemas
    assert "#/$defs/" not in json.dumps(document)  # every reference resolves in the document
    for status in ("400", "401", "404", "405", "413", "429", "500"):
        content = operation["responses"][status]["content"]["application/json"]["schema"]
        assert content == {"$ref": "#/components/schemas/ErrorResponse"}, status
    assert document["components"]["securitySchemes"]["bearer"] == {
        "type": "http",
        "scheme": "bearer",
        "description": document["components"]["securitySchemes"]["bearer"]["description"],
    }
    assert {"bearer": []} in operation["security"]
