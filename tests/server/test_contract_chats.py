"""Issue 16, rerun after the chats gained fields: what schemathesis found in the chat routes' contract.

Each test pins a finding: a chat's ``token_limit`` documented up to the server's budget (a valid
value was refused), titles and messages documented as more than white space (the same), the chat
and status answers documented (they were ``{}``, so nothing was checked and schemathesis's stateful
phase never started from ``POST /api/chats``), 422s documented as they are sent, and ``/api/info``
documented as needing no key.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tierwise.budget import Budget
from tierwise.chat.engine import ChatEngine
from tierwise.chat.floor import budget_floor
from tierwise.providers.testing import ScriptedModel
from tierwise.server import create_app
from tierwise.server.api_models import ChatList, ChatOut, ContextStatus, RunningChat, ServiceInfo
from tierwise.store import Store

pytestmark = pytest.mark.anyio

BUDGET = Budget(window=8_000, reserve=500)  # prompts may use 7,500


@pytest.fixture
def store() -> Iterator[Store]:
    opened = Store.open("sqlite://")
    yield opened
    opened.close()


def _app(store: Store, model: ScriptedModel | None = None, **options: Any) -> Any:
    return create_app(store, ChatEngine(store, model or ScriptedModel(), budget=BUDGET), **options)


def _http(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")


def _integer_branch(field: dict[str, Any]) -> dict[str, Any]:
    return next(b for b in field.get("anyOf", [field]) if b.get("type") == "integer")


async def test_token_limit_is_documented_up_to_the_servers_budget(store: Store) -> None:
    """Before: no maximum, so a schema-valid 41,159,041,781 was refused with a 422."""
    app = _app(store)
    schemas = app.openapi()["components"]["schemas"]
    for name in ("NewChat", "Rename"):
        branch = _integer_branch(schemas[name]["properties"]["token_limit"])
        least = budget_floor(app.state.engine)  # what the guaranteed layers need (issue 32)
        assert (branch["minimum"], branch["maximum"]) == (least, BUDGET.available), name
    async with _http(app) as http:
        most = await http.post("/api/chats", json={"token_limit": BUDGET.available})
        assert most.status_code == 201 and most.json()["token_limit"] == BUDGET.available
        over = await http.post("/api/chats", json={"token_limit": BUDGET.available + 1})
        assert over.status_code == 422 and "7,500" in over.json()["error"]
        chat = most.json()["id"]
        assert (await http.patch(f"/api/chats/{chat}", json={"token_limit": least})).status_code == 200
        assert (await http.patch(f"/api/chats/{chat}", json={"token_limit": least - 1})).status_code == 422
        assert (await http.patch(f"/api/chats/{chat}", json={"token_limit": 7_501})).status_code == 422


async def test_titles_and_messages_of_white_space_alone_are_invalid_to_the_schema_too(store: Store) -> None:
    """Before: the schema said ``minLength: 1``, so ``" "`` was valid, and the server refused it (422)."""
    model = ScriptedModel(*["Noted."] * 8)
    app = _app(store, model)
    schemas = app.openapi()["components"]["schemas"]
    title = re.compile(schemas["Rename"]["properties"]["title"]["pattern"])
    content = re.compile(schemas["NewMessage"]["properties"]["content"]["pattern"])
    assert title.pattern == content.pattern
    blank = [chr(c) for c in range(0x3001) if title.search(chr(c)) is None]
    assert blank == [chr(c) for c in range(0x110000) if chr(c).isspace()]  # what strip() removes
    async with _http(app) as http:
        chat = (await http.post("/api/chats", json={})).json()["id"]
        for value in (" ", "\n\t", "\u00a0", "\u3000 ", "\x1c", "a", " b ", "\x00", "\ufeff"):
            valid = title.search(value) is not None
            renamed = await http.patch(f"/api/chats/{chat}", json={"title": value})
            assert renamed.status_code == (200 if valid else 422), (value, renamed.text)
            sent = await http.post(f"/api/chats/{chat}/messages", json={"content": value})
            assert sent.status_code == (200 if valid else 422), (value, sent.text)
            if valid:
                assert "event: done" in sent.text


async def test_the_chat_and_status_answers_are_documented_and_kept(store: Store) -> None:
    """Before: every one was documented as ``{}`` (nothing to conform to)."""
    model = ScriptedModel("Noted.")
    app = _app(store, model)
    paths = app.openapi()["paths"]

    def documented(path: str, method: str, status: str) -> str:
        schema = paths[path][method]["responses"][status]["content"]["application/json"]["schema"]
        return str(schema["$ref"]).rsplit("/", 1)[1]

    assert documented("/api/chats", "post", "201") == "ChatOut"
    assert documented("/api/chats", "get", "200") == "ChatList"
    assert documented("/api/chats/{chat_id}", "get", "200") == "RunningChat"
    assert documented("/api/chats/{chat_id}", "patch", "200") == "ChatOut"
    assert documented("/api/context/status", "get", "200") == "ContextStatus"
    assert documented("/api/info", "get", "200") == "ServiceInfo"
    async with _http(app) as http:
        created = await http.post(
            "/api/chats", json={"context_type": "calendar_date", "entity_id": "2026-01-13"}
        )
        chat = ChatOut.model_validate(created.json()).id
        ContextStatus.model_validate(
            (await http.get("/api/context/status", params={"sessionId": chat})).json()
        )
        await http.post(f"/api/chats/{chat}/messages", json={"content": "Plan the day"})
        status = ContextStatus.model_validate(
            (await http.get("/api/context/status", params={"sessionId": chat})).json()
        )
        assert status.budgetPercent is not None and len(status.tierBreakdown) == 4
        assert status.currentContext.type == "calendar_date" and status.tokenLimit == BUDGET.available
        ChatList.model_validate((await http.get("/api/chats")).json())
        RunningChat.model_validate((await http.get(f"/api/chats/{chat}")).json())
        ChatOut.model_validate((await http.patch(f"/api/chats/{chat}", json={"title": "Day"})).json())
        ServiceInfo.model_validate((await http.get("/api/info")).json())


async def test_errors_are_documented_as_sent_and_info_needs_no_key(store: Store) -> None:
    """Before: 422 was documented as FastAPI's ``{"detail": […]}`` (sent: ``{"error": …}``), and
    ``/api/info`` as needing a key with ``--require-key`` (it is read before the page has one)."""
    app = _app(store, require_key=True)
    document = app.openapi()
    assert "HTTPValidationError" not in str(document)
    problem = {"$ref": "#/components/schemas/Problem"}
    for path, operations in document["paths"].items():
        for operation in operations.values():
            invalid = operation["responses"].get("422")
            if path.startswith("/api/"):
                assert invalid["content"]["application/json"]["schema"] == problem, path
            else:
                assert invalid is None, path  # /v1 answers 400, never 422
    assert "security" not in document["paths"]["/api/info"]["get"]
    assert document["paths"]["/api/usage"]["get"]["security"] == [{"bearer": []}]
    async with _http(app) as http:
        assert (await http.get("/api/info")).status_code == 200
        assert (await http.get("/api/usage")).status_code == 401
