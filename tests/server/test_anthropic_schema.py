"""Issue 31: ``/v1/messages`` in the OpenAPI document, and the schema saying what the decoder admits.

Schemathesis tests the routes from the document (``tests/server/contract_hooks.py`` says how); the
tests here pin what it found, and hold the schema (:mod:`tierwise.server.anthropic_schema`) and the
decoder (:func:`tierwise.server.anthropic_input.decode_request`) together on sample bodies: a body the
schema admits is decoded, one it does not is an :class:`InvalidRequest` (Anthropic's 400).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from jsonschema import Draft202012Validator

from tests.server.contract_hooks import broken_anthropic_rule, window_of
from tierwise.budget import Budget
from tierwise.chat.engine import ChatEngine
from tierwise.providers.testing import ScriptedModel
from tierwise.server import create_app
from tierwise.server.anthropic_input import InvalidRequest, decode_request
from tierwise.store import Store

pytestmark = pytest.mark.anyio

HI = [{"role": "user", "content": "Hi"}]
TOOL = {"name": "get_weather", "input_schema": {"type": "object"}}
CALL = {"type": "tool_use", "id": "t1", "name": "get_weather", "input": {"city": "Oslo"}}
RESULT = {"type": "tool_result", "tool_use_id": "t1", "content": "Sunny"}
IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA=="}}


@pytest.fixture
def store() -> Iterator[Store]:
    opened = Store.open("sqlite://")
    yield opened
    opened.close()


@pytest.fixture
def app(store: Store) -> Any:
    model = ScriptedModel(*["Hello."] * 10)  # an answer for each request a test sends
    return create_app(store, ChatEngine(store, model, budget=Budget(window=8_000, reserve=500)))


def _http(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")


@pytest.fixture(scope="module")
def components() -> Iterator[dict[str, Any]]:
    """The document's components (built once: the schema tests need no app of their own)."""
    opened = Store.open("sqlite://")
    yield create_app(opened, ChatEngine(opened, ScriptedModel())).openapi()["components"]
    opened.close()


def _validator(components: dict[str, Any], name: str) -> Draft202012Validator:
    return Draft202012Validator({"$ref": f"#/components/schemas/{name}", "components": components})


def _body(**fields: Any) -> dict[str, Any]:
    return {"model": "m", "max_tokens": 64, "messages": HI, **fields}


# -- the document ------------------------------------------------------------------------------


def test_the_document_lists_both_routes_with_their_bodies_and_anthropic_errors(app: Any) -> None:
    document = app.openapi()
    for path, model in (
        ("/v1/messages", "MessagesRequest"),
        ("/v1/messages/count_tokens", "CountTokensRequest"),
    ):
        operation = document["paths"][path]["post"]
        assert operation["tags"] == ["anthropic"]
        schema = operation["requestBody"]["content"]["application/json"]["schema"]
        assert schema == {"$ref": f"#/components/schemas/{model}"}
        assert model in document["components"]["schemas"]
        for status in ("400", "401", "429", "500"):
            error = operation["responses"][status]["content"]["application/json"]["schema"]
            assert error == {"$ref": "#/components/schemas/AnthropicError"}
    required = document["components"]["schemas"]["MessagesRequest"]["required"]
    assert set(required) == {"model", "max_tokens", "messages"}
    assert "max_tokens" not in document["components"]["schemas"]["CountTokensRequest"]["required"]


async def test_an_answer_and_an_error_match_their_documented_schemas(app: Any) -> None:
    components = app.openapi()["components"]
    async with _http(app) as http:
        answer = await http.post("/v1/messages", json=_body())
        refused = await http.post("/v1/messages", json=_body(messages=[]))
        counted = await http.post("/v1/messages/count_tokens", json={"model": "m", "messages": HI})
    assert answer.status_code == 200 and counted.status_code == 200
    assert not list(_validator(components, "AnthropicMessage").iter_errors(answer.json()))
    assert not list(_validator(components, "InputTokens").iter_errors(counted.json()))
    assert refused.status_code == 400
    assert not list(_validator(components, "AnthropicError").iter_errors(refused.json()))


# -- schemathesis' findings --------------------------------------------------------------------


async def test_a_whole_number_written_with_a_fraction_is_an_integer(app: Any) -> None:
    # JSON Schema's integer admits 5.0; the decoder refused it ("max_tokens: Input should be a valid
    # integer"), as a Chat Completions body's is taken.
    async with _http(app) as http:
        response = await http.post("/v1/messages", json=_body(max_tokens=5.0))
    assert response.status_code == 200
    assert decode_request(_body(max_tokens=5.0)).max_tokens == 5


async def test_a_block_with_an_empty_type_is_refused_in_anthropics_shape(app: Any) -> None:
    # count_tokens answered tierwise's 422 ("cannot count a content part of type ''"), not a 400.
    body = {"model": "m", "messages": [{"role": "system", "content": [{"type": ""}]}]}
    async with _http(app) as http:
        response = await http.post("/v1/messages/count_tokens", json=body)
    assert response.status_code == 400
    assert response.json()["error"]["type"] == "invalid_request_error"


async def test_another_method_is_405_with_allow(app: Any) -> None:
    async with _http(app) as http:  # was a 404, "unknown endpoint"
        for path in ("/v1/messages", "/v1/messages/count_tokens"):
            response = await http.put(path, json=_body())
            assert (response.status_code, response.headers["allow"]) == (405, "POST")


async def test_a_named_tool_choice_must_name_an_offered_tool(app: Any) -> None:
    # It was answered 200 (the upstream would have been asked for a tool it was never given).
    choice = {"type": "tool", "name": "get_weather"}
    async with _http(app) as http:
        refused = await http.post("/v1/messages", json=_body(tool_choice=choice))
        taken = await http.post("/v1/messages", json=_body(tool_choice=choice, tools=[TOOL]))
    assert refused.status_code == 400 and "tool_choice.name" in refused.json()["error"]["message"]
    assert taken.status_code == 200
    assert broken_anthropic_rule(_body(tool_choice=choice), 8_000) is not None


@pytest.mark.parametrize(
    "fields",
    [
        {"tool_choice": {"type": "auto", "disable_parallel_tool_use": "yes"}},  # was ignored
        {"tools": [{**TOOL, "type": 5}]},  # was taken as one of Anthropic's own tools
        {"tools": [{**TOOL, "type": ""}]},
        {"tools": [{**TOOL, "description": 5}]},  # was dropped
    ],
)
def test_values_of_the_wrong_type_are_refused(fields: dict[str, Any]) -> None:
    with pytest.raises(InvalidRequest):
        decode_request(_body(**fields))


# -- the schema and the decoder agree ----------------------------------------------------------

ADMITTED = [
    _body(),
    _body(max_tokens=1, system="Be brief.", temperature=0, top_p=1, stream=False, stop_sequences=["END"]),
    _body(system=[{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}]),
    _body(metadata={"user_id": "u1", "other": 1}, top_k=40, thinking={"type": "enabled"}),
    _body(
        tools=[TOOL, {"type": "web_search_20250305", "name": "web_search"}],
        tool_choice={"type": "tool", "name": "web_search", "disable_parallel_tool_use": True},
    ),
    _body(
        messages=[
            {"role": "user", "content": [{"type": "text", "text": "Weather?"}, IMAGE]},
            {
                "role": "assistant",
                "content": [{"type": "thinking", "thinking": "Hm", "signature": "s"}, CALL],
            },
            {"role": "user", "content": [{**RESULT, "content": [{"type": "text", "text": "Sunny"}, IMAGE]}]},
            {"role": "system", "content": [{"type": "text", "text": "Agents: none"}]},
            {"role": "assistant", "content": [{"type": "server_tool_use", "id": "s1"}]},
            {"role": "user", "content": [{"type": "document", "source": {"type": "file", "file_id": "f"}}]},
        ]
    ),
    _body(
        messages=[
            {
                "role": "user",
                "content": [{"type": "image", "source": {"type": "url", "url": "http://x/a.png"}}],
            }
        ]
    ),
    _body(
        messages=[
            {"role": "user", "content": [{"type": "image", "source": {"type": "file", "file_id": "f"}}]}
        ]
    ),
]

REFUSED = [
    {"max_tokens": 64, "messages": HI},
    _body(model=""),
    _body(max_tokens=0),
    _body(max_tokens="64"),
    _body(max_tokens=True),
    _body(messages=[]),
    _body(messages=[{"role": "tool", "content": "x"}]),
    _body(messages=[{"role": "user"}]),
    _body(messages=[{"role": "user", "content": [{"text": "no type"}]}]),
    _body(messages=[{"role": "user", "content": [{"type": "text"}]}]),
    _body(messages=[{"role": "user", "content": [CALL]}]),
    _body(messages=[{"role": "assistant", "content": [RESULT]}]),
    _body(messages=[{"role": "assistant", "content": [{**CALL, "input": None}]}]),
    _body(messages=[{"role": "assistant", "content": [{**CALL, "id": ""}]}]),
    _body(messages=[{"role": "user", "content": [{**RESULT, "content": 5}]}]),
    _body(
        messages=[{"role": "user", "content": [{"type": "image", "source": {"type": "base64", "data": "A"}}]}]
    ),
    _body(messages=[{"role": "user", "content": [{"type": "image", "source": {"type": "url"}}]}]),
    _body(messages=[{"role": "user", "content": [{"type": "image"}]}]),
    _body(system=[{"type": "image", "source": IMAGE["source"]}]),
    _body(system=5),
    _body(tools=[{"name": "f"}]),
    _body(tools=[{"type": "custom", "name": "", "input_schema": {}}]),
    _body(tool_choice={"type": "tool"}),
    _body(tool_choice={"type": "sometimes"}),
    _body(tool_choice="auto"),
    _body(temperature=1.5),
    _body(top_p=-0.1),
    _body(temperature=True),
    _body(stream="yes"),
    _body(stop_sequences=[1]),
    _body(metadata={"user_id": 7}),
    _body(metadata="u1"),
]


@pytest.mark.parametrize("body", ADMITTED)
def test_what_the_schema_admits_is_decoded(components: dict[str, Any], body: dict[str, Any]) -> None:
    assert not list(_validator(components, "MessagesRequest").iter_errors(body))
    decode_request(body)


@pytest.mark.parametrize("body", REFUSED)
def test_what_the_schema_refuses_the_decoder_refuses(
    components: dict[str, Any], body: dict[str, Any]
) -> None:
    assert list(_validator(components, "MessagesRequest").iter_errors(body))
    with pytest.raises(InvalidRequest):
        decode_request(body)


def test_count_tokens_needs_no_max_tokens_in_either(components: dict[str, Any]) -> None:
    body = {"model": "m", "messages": HI}
    assert not list(_validator(components, "CountTokensRequest").iter_errors(body))
    assert list(_validator(components, "MessagesRequest").iter_errors(body))
    decode_request(body, needs_max_tokens=False)
    with pytest.raises(InvalidRequest):
        decode_request(body)


# -- the hooks' rules, as the server applies them ----------------------------------------------


@pytest.mark.parametrize(
    ("messages", "rule"),
    [
        ([*HI, {"role": "assistant", "content": [CALL]}, {"role": "user", "content": [RESULT]}], None),
        ([*HI, {"role": "assistant", "content": [CALL]}, {"role": "user", "content": "Well?"}], "2"),
        ([*HI, {"role": "assistant", "content": [CALL]}], "2"),
        ([{"role": "user", "content": [RESULT]}], "2"),
        ([*HI, {"role": "assistant", "content": [CALL, CALL]}, {"role": "user", "content": [RESULT]}], "2"),
    ],
)
async def test_the_pairing_rule_is_the_servers(app: Any, messages: list[Any], rule: str | None) -> None:
    body = _body(messages=messages, tools=[TOOL])
    window = window_of(app.openapi())
    assert window is not None
    broken = broken_anthropic_rule(body, window)
    assert (broken or "")[:1] == (rule or "")
    async with _http(app) as http:
        response = await http.post("/v1/messages", json=body)
    assert response.status_code == (400 if rule else 200), response.text
