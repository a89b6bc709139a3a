"""The chat API in-process (httpx ASGITransport): CRUD, SSE turns, stop, context status, errors."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tierwise.budget import Budget
from tierwise.chat.engine import ChatEngine
from tierwise.providers import TextDelta
from tierwise.providers.testing import Script, ScriptedModel, tool_call
from tierwise.server import create_app
from tierwise.store import Store
from tierwise.tools import tool


@tool(tier="list")
def list_tasks(limit: int = 20) -> list[str]:
    """List tasks."""
    return ["Book venue", "Send invites"][:limit]


class Api:
    def __init__(self, store: Store, model: ScriptedModel) -> None:
        self.model = model
        self.engine = ChatEngine(store, model, tools=[list_tasks], budget=Budget(window=8_000, reserve=500))
        self.app = create_app(store, self.engine)

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.ASGITransport(app=self.app), base_url="http://test")


@pytest.fixture
def api() -> Iterator[Api]:
    store = Store.open("sqlite://")
    yield Api(store, ScriptedModel())
    store.close()


def _events(body: str) -> list[tuple[str, dict[str, Any]]]:
    out, kind = [], "message"
    for line in body.splitlines():
        if line.startswith("event:"):
            kind = line.split(":", 1)[1].strip()
        elif line.startswith("data:"):
            out.append((kind, json.loads(line.split(":", 1)[1].strip())))
    return out


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_chat_crud(api: Api) -> None:
    async def go() -> None:
        async with api.client() as c:
            made = (await c.post("/api/chats", json={"title": "Offsite"})).json()
            assert made["title"] == "Offsite" and made["context_type"] == "global"
            assert [x["id"] for x in (await c.get("/api/chats")).json()["chats"]] == [made["id"]]
            renamed = await c.patch(f"/api/chats/{made['id']}", json={"title": "Team offsite"})
            assert renamed.json()["title"] == "Team offsite"
            assert (await c.get(f"/api/chats/{made['id']}")).json()["running"] is False
            assert (await c.delete(f"/api/chats/{made['id']}")).status_code == 204
            gone = await c.get(f"/api/chats/{made['id']}")
            assert gone.status_code == 404 and "error" in gone.json()

    run(go())


def test_a_turn_streams_as_sse_and_is_stored(api: Api) -> None:
    api.model.enqueue(tool_call("list_tasks", limit=2), "Two tasks: book the venue, send invites.")

    async def go() -> None:
        async with api.client() as c:
            chat = (await c.post("/api/chats", json={})).json()["id"]
            response = await c.post(f"/api/chats/{chat}/messages", json={"content": "What is left?"})
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            events = _events(response.text)
            kinds = [k for k, _ in events]
            assert kinds[0] == "tool_call_start" and "tool_call_complete" in kinds and "text" in kinds
            assert kinds[-1] == "done" and "usage" in kinds
            assert events[-1][1]["reason"] == "answer"
            text = "".join(d["text"] for k, d in events if k == "text")
            assert text == "Two tasks: book the venue, send invites."
            messages = (await c.get(f"/api/chats/{chat}/messages")).json()["messages"]
            assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant"]
            assert messages[1]["tool_executions"][0]["tool_name"] == "list_tasks"
            status = (await c.get("/api/context/status", params={"sessionId": chat})).json()
            assert status["snapshot"]["total_tokens"] > 0 and status["budget"]["available"] == 7_500
            assert status["totals"]["messages"] == 4
            snaps = (await c.get(f"/api/chats/{chat}/snapshots")).json()["snapshots"]
            assert len(snaps) == 2  # one pack per model call
            detail = (await c.get(f"/api/chats/{chat}/context")).json()
            assert {layer["kind"] for layer in detail["pack"]["layers"]} >= {"system", "tools", "input"}
            assert all("status" in layer and "reason" in layer for layer in detail["pack"]["layers"])
            assert [t["reason"] for t in detail["turns"]] == ["answer"] and detail["turns"][0][
                "prompt_tokens"
            ] > 0
            assert detail["compactions"] == []

    run(go())


def test_stop_keeps_what_was_said(api: Api) -> None:
    api.model.enqueue(Script(TextDelta("The venue "), TextDelta("is booked."), delay=5))

    async def go() -> None:
        async with api.client() as c:
            chat = (await c.post("/api/chats", json={})).json()["id"]
            turn = asyncio.create_task(c.post(f"/api/chats/{chat}/messages", json={"content": "Venue?"}))
            for _ in range(200):
                await asyncio.sleep(0.01)
                if api.engine.is_running(api.engine.store.list_chats("local")[0].user_id, chat):
                    break
            busy = await c.post(f"/api/chats/{chat}/messages", json={"content": "again"})
            assert busy.status_code == 409
            await asyncio.sleep(0.1)
            stopped = await c.post(f"/api/chats/{chat}/stop")
            assert stopped.json() == {"stopping": True}
            events = _events((await asyncio.wait_for(turn, 10)).text)
            assert events[-1][1]["reason"] == "stopped"
            messages = (await c.get(f"/api/chats/{chat}/messages")).json()["messages"]
            assert messages[-1]["role"] == "assistant" and messages[-1]["content"] == "The venue "
            assert (await c.post(f"/api/chats/{chat}/stop")).json() == {"stopping": False}

    run(go())


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "needle"),
    [
        ("post", "/api/chats", {"context_type": "planet"}, 422, "context_type"),
        ("post", "/api/chats", {"context_type": "project"}, 422, "entity_id"),
        ("post", "/api/chats", {"colour": "red"}, 422, "colour"),
        ("patch", "/api/chats/nope", {"title": "x"}, 404, "no chat"),
        ("post", "/api/chats/nope/messages", {"content": "hi"}, 404, "no chat"),
        ("post", "/api/chats/nope/stop", None, 404, "no chat"),
        ("get", "/api/context/status", None, 422, "sessionId"),
        ("get", "/api/context/status?sessionId=nope", None, 404, "no chat"),
        ("get", "/api/chats?limit=0", None, 422, "limit"),
    ],
)
def test_bad_requests_get_clear_json_errors(
    api: Api, method: str, path: str, body: Any, status: int, needle: str
) -> None:
    async def go() -> None:
        async with api.client() as c:
            response = await c.request(method, path, json=body)
            assert response.status_code == status, response.text
            assert needle in response.json()["error"]
            assert "Traceback" not in response.text

    run(go())


def test_malformed_bodies(api: Api) -> None:
    async def go() -> None:
        async with api.client() as c:
            chat = (await c.post("/api/chats", json={})).json()["id"]
            broken = await c.post(
                f"/api/chats/{chat}/messages",
                content=b"{not json",
                headers={"content-type": "application/json"},
            )
            assert broken.status_code == 400 and "JSON" in broken.json()["error"]
            empty = await c.post(f"/api/chats/{chat}/messages", json={"content": "   "})
            assert empty.status_code == 422 and "empty" in empty.json()["error"]
            missing = await c.post(f"/api/chats/{chat}/messages", json={})
            assert missing.status_code == 422 and "content" in missing.json()["error"]
            assert (await c.get(f"/api/chats/{chat}/messages")).json()["messages"] == []  # nothing stored

    run(go())


def test_openapi_document(api: Api) -> None:
    async def go() -> None:
        async with api.client() as c:
            doc = (await c.get("/openapi.json")).json()
            assert "/api/chats/{chat_id}/messages" in doc["paths"] and "/api/context/status" in doc["paths"]

    run(go())


def test_the_web_ui_is_served(api: Api) -> None:
    async def go() -> None:
        async with api.client() as c:
            page = await c.get("/")
            assert page.status_code == 200 and "/static/app.js" in page.text
            assert (await c.get("/static/app.js")).status_code == 200
            script = await c.get("/static/dashboard.js")  # app.js imports it (ES modules)
            assert script.status_code == 200 and "/api/context/status" in script.text
            assert (await c.get("/static/missing.js")).status_code == 404

    run(go())


@pytest.mark.parametrize("tune", [False, True])
def test_startup_warms_the_tokenizer_and_tunes_the_collector_only_when_asked(tune: bool) -> None:
    import gc
    import sys

    from starlette.testclient import TestClient

    from tierwise.server.app import SERVING_GC_THRESHOLDS, SERVING_SWITCH_INTERVAL_S

    store = Store.open("sqlite://")
    engine = ChatEngine(store, ScriptedModel(), budget=Budget(window=4_000, reserve=500))
    before, thresholds, switch = gc.get_freeze_count(), gc.get_threshold(), sys.getswitchinterval()
    try:
        with TestClient(create_app(store, engine, tune_gc=tune)) as client:  # runs the lifespan
            assert client.get("/api/health").status_code == 200
            assert (gc.get_freeze_count() > before) is tune
            assert (gc.get_threshold() == SERVING_GC_THRESHOLDS) is tune
            assert (sys.getswitchinterval() == SERVING_SWITCH_INTERVAL_S) is tune
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)
        sys.setswitchinterval(switch)
        store.close()


def test_a_405_allows_every_method_of_the_path_and_errors_are_documented(api: Api) -> None:
    async def go() -> tuple[httpx.Response, httpx.Response, dict[str, Any]]:
        async with api.client() as client:
            options = await client.request("OPTIONS", "/api/chats")
            put = await client.request("PUT", "/api/chats/x")
            return options, put, (await client.get("/openapi.json")).json()

    options, put, schema = run(go())
    assert options.status_code == 405 and options.headers["allow"] == "GET, POST"
    assert set(put.headers["allow"].split(", ")) == {"GET", "PATCH", "DELETE"}
    responses = schema["paths"]["/api/chats/{chat_id}"]["get"]["responses"]
    assert {"404", "405", "429", "500"} <= set(responses)
    new_chat = schema["components"]["schemas"]["NewChat"]
    assert new_chat["then"]["required"] == ["entity_id"]  # a project or task chat names its entity
