"""A named ``tool_choice`` with ``tools: null`` (issue 32: schemathesis found the schema admitted it).

OpenAI refuses it with a 400 ("'tool_choice' is only allowed when 'tools' are specified"), and so
does tierwise; the published schema now says so (``if`` a named choice ``then`` a non-empty
``tools``), so a body it admits is one the server answers. ``tool_choice: "auto"`` without tools
stays valid and answered (the choice is not forwarded without tools).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from tierwise.budget import Budget
from tierwise.chat.engine import ChatEngine
from tierwise.providers.testing import ScriptedModel
from tierwise.server import create_app
from tierwise.store import Store

USER = [{"role": "user", "content": "Weather?"}]
NAMED = {"type": "function", "function": {"name": "get_weather"}}
TOOL = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}


@pytest.fixture
def app() -> Iterator[Any]:
    store = Store.open("sqlite://")
    engine = ChatEngine(store, ScriptedModel(*["Sunny."] * 4), budget=Budget(window=8_000, reserve=500))
    yield create_app(store, engine)
    store.close()


def _valid(app: Any, body: dict[str, Any], name: str = "ChatCompletionRequest") -> bool:
    document = app.openapi()
    schema = {"$ref": f"#/components/schemas/{name}", "components": document["components"]}
    return bool(Draft202012Validator(schema).is_valid(body))


def _post(app: Any, path: str, body: dict[str, Any]) -> httpx.Response:
    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
            return await c.post(path, json=body)

    return asyncio.run(go())


@pytest.mark.parametrize(
    ("body", "admitted"),
    [
        ({"messages": USER, "tool_choice": NAMED, "tools": None}, False),
        ({"messages": USER, "tool_choice": NAMED}, False),
        ({"messages": USER, "tool_choice": NAMED, "tools": []}, False),
        ({"messages": USER, "tool_choice": {"function": {"name": "get_weather"}}, "tools": None}, False),
        ({"messages": USER, "tool_choice": NAMED, "tools": [TOOL]}, True),
        ({"messages": USER, "tool_choice": "auto", "tools": None}, True),
        ({"messages": USER, "tool_choice": {"type": "allowed_tools", "mode": "auto"}}, True),
    ],
)
def test_the_schema_admits_what_the_server_answers(app: Any, body: dict[str, Any], admitted: bool) -> None:
    assert _valid(app, body) is admitted
    answer = _post(app, "/v1/chat/completions", body)
    assert (answer.status_code == 200) is admitted, answer.text
    if not admitted:
        error = answer.json()["error"]
        assert answer.status_code == 400 and error["param"] == "tool_choice"
        if not body.get("tools"):
            assert "only allowed when 'tools' are specified" in error["message"]


@pytest.mark.parametrize(
    ("body", "admitted"),
    [
        (
            {"input": "Weather?", "tool_choice": {"type": "function", "name": "get_weather"}, "tools": None},
            False,
        ),
        ({"input": "Weather?", "tool_choice": {"type": "function", "name": "get_weather"}}, False),
        ({"input": "Weather?", "tool_choice": "auto"}, True),
    ],
)
def test_the_responses_schema_says_the_same(app: Any, body: dict[str, Any], admitted: bool) -> None:
    assert _valid(app, body, "ResponsesRequest") is admitted
    answer = _post(app, "/v1/responses", body)
    assert (answer.status_code == 200) is admitted, answer.text
