"""Issue 16: the published OpenAPI contract holds under schemathesis, and a few faithful-client details.

Each test pins a finding: what the schema admits is answered (never a 5xx), what it rejects is
refused (400 or 422), booleans and numbers are not coerced, every path has a body size limit, a
streamed answer's log probabilities ride on the chunk with their text, and ``TIERWISE_REQUIRE_KEY``.
The whole contract is checked by schemathesis (``tests/server/contract_hooks.py`` says how).
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import openai
import pytest
from typer.testing import CliRunner

from tests.server.contract_hooks import broken_rule, window_of
from tierwise.budget import Budget
from tierwise.chat.engine import ChatEngine
from tierwise.cli import app as cli
from tierwise.cli_serve import require_key_from_env
from tierwise.providers import OpenAICompatProvider, RetryPolicy
from tierwise.providers.base import Provider
from tierwise.providers.testing import ScriptedModel, tool_call
from tierwise.server import create_app
from tierwise.store import Store

pytestmark = pytest.mark.anyio

URL = "/v1/chat/completions"
USER = [{"role": "user", "content": "Weather?"}]
WINDOW = 8_000
JSON = "application/json"


@pytest.fixture
def store() -> Iterator[Store]:
    opened = Store.open("sqlite://")
    yield opened
    opened.close()


def _app(store: Store, provider: Provider | None = None, **options: Any) -> Any:
    engine = ChatEngine(store, provider or ScriptedModel(), budget=Budget(window=WINDOW, reserve=500))
    return create_app(store, engine, **options)


def _http(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")


# -- /api/calendar: the dates the schema admits, and only those ---------------------------------


def _calendar_schema(app: Any) -> dict[str, Any]:
    parameters = app.openapi()["paths"]["/api/calendar"]["get"]["parameters"]
    return {p["name"]: p["schema"] for p in parameters}


async def test_calendar_dates_are_documented_as_dates_or_date_times(store: Store) -> None:
    schemas = _calendar_schema(_app(store))
    for name in ("from", "to"):
        date, moment = schemas[name]["anyOf"]
        assert date == {"type": "string", "format": "date"}
        pattern = re.compile(moment["pattern"])
        for text in ("2026-11-24T10:30", "2024-02-29T23:59:59.5Z", "2026-11-24T10:30+01:00"):
            assert pattern.search(text), text
        for text in ("2026-11-24", "2023-02-29T10:00", "2026-11-24T24:00", "2026-11-24 10:30"):
            assert not pattern.search(text), text  # (a date alone is the format's)


async def test_calendar_refuses_what_the_schema_does_not_admit(store: Store) -> None:
    async with _http(_app(store)) as http:
        # dateutil read all of these (a year, a month, a basic date, an hour, a week) and answered 200
        for text in ("0000-00-00", "2026", "2026-11", "20261124", "2026-11-24T10", "2026-W48", "someday"):
            response = await http.get("/api/calendar", params={"from": text})
            assert response.status_code == 422, (text, response.text)
            assert "YYYY-MM-DD" in response.json()["error"]


async def test_calendar_answers_every_date_the_schema_admits(store: Store) -> None:
    async with _http(_app(store)) as http:
        for params in (
            {"from": "0000-01-01"},  # JSON Schema's `date` has a year 0; Python does not
            {"from": "0001-01-01T00:00+05:00"},  # before the first moment Python holds, in UTC
            {"from": "9999-12-31"},  # the default `to` (7 days on) would be past the last
            {"from": "9999-12-31T23:59:59.999999-12:00"},
            {"from": "2026-11-24", "to": "2026-11-23"},  # an empty window, not an error
            {"from": "2026-11-24T10:30", "to": "2026-11-24T10:30"},
            {"from": "2024-02-29", "to": "2024-03-01T00:00:00Z"},
        ):
            response = await http.get("/api/calendar", params=params)
            assert response.status_code == 200, (params, response.text)
            assert response.json()["total"] == 0


# -- /v1: booleans and numbers are JSON's, not coerced ------------------------------------------


def _error(response: httpx.Response, status: int = 400) -> dict[str, Any]:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    return dict(error)


async def test_booleans_and_numbers_of_another_type_are_400_invalid_type(store: Store) -> None:
    model = ScriptedModel()
    async with _http(_app(store, model)) as http:
        for field, value, expected, got in (
            ("parallel_tool_calls", 0, "a boolean", "an integer"),  # was accepted as false
            ("stream", "true", "a boolean", "a string"),
            ("logprobs", 1, "a boolean", "an integer"),
            ("max_tokens", "5", "an integer", "a string"),
            ("n", 2.5, "an integer", "a number"),
            ("temperature", "0.5", "a number", "a string"),
            ("seed", True, "an integer", "a boolean"),
        ):
            error = _error(await http.post(URL, json={"messages": USER, field: value}))
            assert error["code"] == "invalid_type" and error["param"] == field, error
            wording = f"Invalid type for {field!r}: expected {expected}, but got {got} instead."
            assert error["message"] == wording
        nested = await http.post(URL, json={"messages": USER, "stream_options": {"include_usage": 1}})
        assert _error(nested)["param"] == "stream_options.include_usage"
        bias = await http.post(URL, json={"messages": USER, "logit_bias": {"50256": "-100"}})
        assert _error(bias)["code"] == "invalid_type"
    assert model.requests == []


async def test_a_whole_number_written_with_a_fraction_is_an_integer(store: Store) -> None:
    model = ScriptedModel("Sunny.")
    async with _http(_app(store, model)) as http:
        response = await http.post(URL, json={"messages": USER, "max_tokens": 50.0, "n": 1.0})
    assert response.status_code == 200, response.text  # JSON Schema's integer: 50.0 is one
    assert model.requests[0].params["max_tokens"] == 50.0  # forwarded as sent


# -- /v1: what the schema says of a body --------------------------------------------------------


def _body_schema(app: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    components = app.openapi()["components"]["schemas"]
    return components, components["ChatCompletionRequest"]


async def test_content_parts_are_text_image_or_carried_in_the_schema_and_the_check(store: Store) -> None:
    model = ScriptedModel("Seen.")
    app = _app(store, model)
    components, _ = _body_schema(app)
    content = components["MessageIn"]["properties"]["content"]["anyOf"][1]["items"]
    assert [b["$ref"].rsplit("/", 1)[1] for b in content["oneOf"]] == ["TextPart", "ImagePart", "OtherPart"]
    assert components["TextPart"]["required"] == ["type", "text"]
    assert components["OtherPart"]["not"] == {"properties": {"type": {"enum": ["text", "image_url"]}}}
    async with _http(app) as http:
        for parts in ([{}], [{"type": "text"}], [{"type": ""}], [1]):
            message = {"role": "user", "content": parts}
            error = _error(await http.post(URL, json={"messages": [message]}))
            assert error["param"].startswith("messages.0.content"), error  # was param null, after packing
        cached = {"type": "text", "text": "Look:", "cache_control": {"type": "ephemeral"}}
        image = {"type": "image_url", "image_url": {"url": "https://example.org/a.png", "detail": "low"}}
        sent = {"role": "user", "content": [cached, image]}
        assert (await http.post(URL, json={"messages": [sent]})).status_code == 200
    assert model.requests[0].messages[-1]["content"] == [cached, image]  # kept as sent


async def test_the_schema_states_what_a_body_needs_beyond_single_values(store: Store) -> None:
    _, body = _body_schema(_app(store))
    # at least one message that is not a system or developer message
    contains = body["properties"]["messages"]["contains"]
    assert contains["properties"]["role"]["enum"] == ["user", "assistant", "tool"]
    # max_tokens below the window, which is the budget's
    for name in ("max_tokens", "max_completion_tokens"):
        assert body["properties"][name]["anyOf"][0]["maximum"] == WINDOW - 1
    assert window_of(_app(store).openapi()) == WINDOW


async def test_streamed_answers_are_documented_as_event_streams(store: Store) -> None:
    paths = _app(store).openapi()["paths"]
    completion = paths[URL]["post"]["responses"]["200"]["content"]
    assert set(completion) == {"application/json", "text/event-stream"}
    turn = paths["/api/chats/{chat_id}/messages"]["post"]["responses"]["200"]["content"]
    assert set(turn) == {"text/event-stream"}  # was application/json
    assert turn["text/event-stream"]["schema"]["required"] == ["data"]  # each event has its data


async def test_the_hooks_rules_are_the_ones_the_server_refuses(store: Store) -> None:
    """What ``contract_hooks.broken_rule`` passes, the server accepts; what it names, the server refuses.

    (Rule 3 errs on the safe side: it may drop a body whose prompt would just have fit.)
    """
    model = ScriptedModel(*["Fine."] * 4)
    weather = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}
    call = tool_call("get_weather", city="Lisbon").to_openai()
    answered = [*USER, {"role": "assistant", "content": None, "tool_calls": [call]}]
    result = {"role": "tool", "tool_call_id": call["id"], "content": "24C"}

    def named(name: str) -> dict[str, Any]:
        return {"type": "function", "function": {"name": name}}

    cases = [
        ({"messages": USER, "tools": [weather], "tool_choice": named("x")}, "1"),
        ({"messages": [*USER, {"role": "tool", "tool_call_id": "ghost", "content": "?"}]}, "2"),
        ({"messages": [*answered, *USER], "tools": [weather]}, "2"),  # the call is never answered
        ({"messages": [*answered, result, *USER, result], "tools": [weather]}, "2"),  # a result out of place
        ({"messages": USER, "max_tokens": WINDOW - 1}, "3"),
        ({"messages": USER, "max_completion_tokens": WINDOW - 1, "max_tokens": 5}, "3"),
        ({"messages": USER, "tools": [weather], "tool_choice": named("get_weather")}, None),
        ({"messages": [*answered, result], "tools": [weather]}, None),
        ({"messages": USER, "tools": [weather], "tool_choice": {"type": "allowed_tools"}}, None),
        ({"messages": USER, "max_tokens": 4_000}, None),
    ]
    async with _http(_app(store, model)) as http:
        for body, rule in cases:
            broken = broken_rule(body, WINDOW)
            assert (broken or "")[:1] == (rule or ""), (body, broken)
            status = (await http.post(URL, json=body)).status_code
            assert status == (400 if rule else 200), (body, status)


# -- a body size limit on every path ------------------------------------------------------------


async def test_api_bodies_over_the_limit_are_413_naming_the_variable(store: Store) -> None:
    app = _app(store, max_body_bytes=300)
    big = json.dumps({"title": "x" * 400}).encode()

    async def chunked() -> AsyncIterator[bytes]:  # no Content-Length: counted as it arrives
        for start in range(0, len(big), 100):
            yield big[start : start + 100]

    async with _http(app) as http:
        for content in (big, chunked()):
            response = await http.post("/api/chats", content=content, headers={"content-type": JSON})
            assert response.status_code == 413, response.text  # was 422 (title too long) after reading it all
            message = response.json()["error"]
            assert "300 bytes" in message and "TIERWISE_MAX_BODY_BYTES" in message
        assert (await http.post("/api/chats", json={"title": "Offsite"})).status_code == 201
        v1 = await http.post(URL, json={"messages": [{"role": "user", "content": "y" * 400}]})
        assert _error(v1, 413)["code"] == "request_too_large"  # /v1 keeps its OpenAI-shaped 413


# -- logprobs ride on the chunk that carries their text -----------------------------------------


def _logprobs(*tokens: str) -> dict[str, Any]:
    content = [{"token": t, "logprob": -0.25, "bytes": list(t.encode()), "top_logprobs": []} for t in tokens]
    return {"content": content, "refusal": None}


class LogprobsUpstream:
    """An OpenAI-compatible upstream that streams each text piece with its tokens' log probabilities."""

    PIECES = (("Sun", "ny"), (" in",), (" Lis", "bon."))

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    def handler(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        self.bodies.append(body)
        base = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": body["model"]}

        def chunk(delta: dict[str, Any], logprobs: Any = None, finish: str | None = None) -> str:
            choice = {"index": 0, "delta": delta, "logprobs": logprobs, "finish_reason": finish}
            return f"data: {json.dumps({**base, 'choices': [choice]})}\n\n"

        events = [chunk({"role": "assistant", "content": ""})]
        events += [chunk({"content": "".join(p)}, _logprobs(*p)) for p in self.PIECES]
        events += [chunk({}, None, "stop"), "data: [DONE]\n\n"]
        headers = {"content-type": "text/event-stream"}
        return httpx.Response(200, content="".join(events).encode(), headers=headers)

    def provider(self) -> OpenAICompatProvider:
        http = httpx.AsyncClient(transport=httpx.MockTransport(self.handler))
        client = openai.AsyncOpenAI(base_url="http://127.0.0.1:9/v1", api_key="k", http_client=http)
        return OpenAICompatProvider(client=client, model="up-1", retry_policy=RetryPolicy(max_retries=0))


async def test_streamed_logprobs_are_on_the_chunk_with_their_text(store: Store) -> None:
    upstream = LogprobsUpstream()
    app = _app(store, upstream.provider())
    async with _http(app) as http:
        client = openai.AsyncOpenAI(base_url="http://test/v1", api_key="any", http_client=http, max_retries=0)
        stream = await client.chat.completions.create(
            model="m",
            messages=USER,
            logprobs=True,
            top_logprobs=2,
            stream=True,  # type: ignore[arg-type]
        )
        chunks = [c async for c in stream]
        whole = await client.chat.completions.create(model="m", messages=USER, logprobs=True)  # type: ignore[arg-type]
    assert upstream.bodies[0]["logprobs"] is True and upstream.bodies[0]["top_logprobs"] == 2
    texts = []
    for chunk in chunks:
        for choice in chunk.choices:
            text = choice.delta.content or ""
            tokens = [t.token for t in (choice.logprobs.content or ())] if choice.logprobs else []
            assert "".join(tokens) == text, (text, tokens)  # was: text without, then tokens without text
            texts.append(text)
    assert "".join(texts) == "Sunny in Lisbon."
    assert whole.choices[0].logprobs is not None and whole.choices[0].logprobs.content is not None
    assert [t.token for t in whole.choices[0].logprobs.content] == ["Sun", "ny", " in", " Lis", "bon."]


# -- TIERWISE_REQUIRE_KEY -----------------------------------------------------------------------


def test_require_key_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for raw, expected in (
        ("1", True),
        ("true", True),
        (" YES ", True),
        ("on", True),
        ("0", False),
        ("false", False),
        ("off", False),
        ("", False),
    ):
        monkeypatch.setenv("TIERWISE_REQUIRE_KEY", raw)
        assert require_key_from_env() is expected, raw
    monkeypatch.delenv("TIERWISE_REQUIRE_KEY")
    assert require_key_from_env() is False


def test_serve_reads_tierwise_require_key(monkeypatch: pytest.MonkeyPatch) -> None:
    runner = CliRunner()
    assert "TIERWISE_REQUIRE_KEY" in runner.invoke(cli, ["serve", "--help"]).output
    monkeypatch.setenv("TIERWISE_REQUIRE_KEY", "maybe")
    bad = runner.invoke(cli, ["serve"])
    assert bad.exit_code == 2 and "TIERWISE_REQUIRE_KEY='maybe'" in bad.output and "1 (or true)" in bad.output
    assert "Traceback" not in bad.output
    monkeypatch.setenv("TIERWISE_REQUIRE_KEY", "1")  # keys required: a public address passes that check
    public = runner.invoke(cli, ["serve", "--host", "0.0.0.0", "--port", "70000"])
    assert public.exit_code == 2 and "is not a port" in public.output, public.output
    overridden = runner.invoke(cli, ["serve", "--host", "0.0.0.0", "--no-require-key"])
    assert overridden.exit_code == 2 and "TIERWISE_REQUIRE_KEY=1" in overridden.output


# -- POST /api/chats: a blank entity_id is blank to the schema and the server alike ---------------


async def test_a_blank_entity_id_is_the_same_to_the_schema_and_the_server(store: Store) -> None:
    app = _app(store)
    rules = app.openapi()["components"]["schemas"]["NewChat"]
    named = re.compile(rules["then"]["properties"]["entity_id"]["pattern"])
    blank = re.compile(rules["else"]["properties"]["entity_id"]["anyOf"][1]["pattern"])
    async with _http(app) as http:
        for value in ("\n", " \t", "\u00a0", "\x1c", "\ufeff", "proj_nope", " proj_nope "):
            on_project = await http.post("/api/chats", json={"context_type": "project", "entity_id": value})
            valid = named.search(value) is not None  # "\n" was valid (minLength 1) and refused with 422
            assert on_project.status_code == (404 if valid else 422), (value, on_project.text)
            on_nothing = await http.post("/api/chats", json={"context_type": "global", "entity_id": value})
            valid = blank.search(value) is not None
            assert on_nothing.status_code == (201 if valid else 422), (value, on_nothing.text)


async def test_the_document_links_ids_to_the_responses_they_come_from(store: Store) -> None:
    paths = _app(store).openapi()["paths"]
    links = paths["/api/chats"]["post"]["responses"]["201"]["links"]
    targets = {
        operation["operationId"]: (path, method)
        for path, operations in paths.items()
        for method, operation in operations.items()
    }
    assert {targets[name][0] for name in links} == {
        *(p for p in paths if p.startswith("/api/chats/{chat_id}")),
        "/api/context/status",
    }
    assert links["get_chat_api_chats__chat_id__get"]["parameters"] == {"chat_id": "$response.body#/id"}
    listed = paths["/api/tasks"]["get"]["responses"]["200"]["links"]
    assert [link["parameters"] for link in listed.values()] == [{"task_id": "$response.body#/tasks/0/id"}]
