"""Chats on a project or task (checked, named), the chat list's filters, rename and delete, by user."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from fastapi import FastAPI

from tierwise.providers.testing import ScriptedModel
from tierwise.server import create_app
from tierwise.server.keys import create_key
from tierwise.store import Store
from tierwise.workspace.app import assistant_engine
from tierwise.workspace.models import Task
from tierwise.workspace.repository import Workspace


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def client(app: FastAPI) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")


class Setup:
    """A store with the local user's workspace (a project with two tasks) and the assistant's engine."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.model = ScriptedModel()
        self.engine = assistant_engine(store, self.model)
        self.app = create_app(store, self.engine)
        ws = Workspace(store)
        store.create_user("omar", user_id="omar")
        self.project = ws.create_project("local", name="Offsite 2026")
        self.task = ws.create_task("local", title="Book the venue", project_id=self.project["id"])
        self.loose = ws.create_task("local", title="Renew passport")
        self.foreign = ws.create_project("omar", name="Omar's secret project")
        self.foreign_task = ws.create_task("omar", title="Omar's task", project_id=self.foreign["id"])


@pytest.fixture
def setup() -> Iterator[Setup]:
    store = Store.open("sqlite://")
    store.create_user("local", user_id="local")
    yield Setup(store)
    store.close()


def test_a_chat_on_a_project_is_named_and_reaches_the_model(setup: Setup) -> None:
    setup.model.enqueue("The venue is the open item.")
    pid = setup.project["id"]

    async def go() -> None:
        async with client(setup.app) as c:
            made = await c.post("/api/chats", json={"context_type": "project", "entity_id": pid})
            assert made.status_code == 201, made.text
            chat = made.json()
            assert chat["context_type"] == "project" and chat["entity_id"] == pid
            assert chat["context"] == {
                "type": "project",
                "id": pid,
                "name": "Offsite 2026",
                "project": None,
                "exists": True,
            }
            assert (await c.get(f"/api/chats/{chat['id']}")).json()["context"]["name"] == "Offsite 2026"
            await c.post(f"/api/chats/{chat['id']}/messages", json={"content": "What is open?"})
            sent = setup.model.requests[0].messages
            system = "\n".join(m["content"] for m in sent if m["role"] == "system")
            assert "Offsite 2026" in system and "Current context: project" in system

    run(go())


def test_a_chat_on_a_task_names_the_task_and_its_project(setup: Setup) -> None:
    tid = setup.task["id"]

    async def go() -> None:
        async with client(setup.app) as c:
            on_task = (await c.post("/api/chats", json={"context_type": "task", "entity_id": tid})).json()
            loose = await c.post(
                "/api/chats", json={"context_type": "task", "entity_id": setup.loose["id"], "title": "Travel"}
            )
            calendar = (await c.post("/api/chats", json={"context_type": "calendar"})).json()
            await c.post("/api/chats", json={})
            assert on_task["context"]["name"] == "Book the venue"
            assert on_task["context"]["project"] == {"id": setup.project["id"], "name": "Offsite 2026"}
            assert loose.json()["context"]["project"] is None and loose.json()["title"] == "Travel"
            assert calendar["context"]["type"] == "calendar" and calendar["context"]["name"] is None
            listed = {c["id"]: c["context"] for c in (await c.get("/api/chats")).json()["chats"]}
            assert listed[on_task["id"]]["name"] == "Book the venue" and len(listed) == 4
            only = await c.get("/api/chats", params={"context_type": "task", "entity_id": tid})
            assert [x["id"] for x in only.json()["chats"]] == [on_task["id"]]

    run(go())


def test_a_deleted_task_is_reported_not_hidden(setup: Setup) -> None:
    tid = setup.task["id"]

    async def go() -> None:
        async with client(setup.app) as c:
            chat = (await c.post("/api/chats", json={"context_type": "task", "entity_id": tid})).json()
            Workspace(setup.store).update_task("local", tid, {"status": "done"})
            assert (await c.get(f"/api/chats/{chat['id']}")).json()["context"]["exists"] is True
            with setup.store.session(write=True) as session:
                session.execute(sa.update(Task).where(Task.id == tid).values(deleted_at=datetime.now(UTC)))
            gone = (await c.get(f"/api/chats/{chat['id']}")).json()["context"]
            assert gone["exists"] is False and gone["name"] is None
            again = await c.post("/api/chats", json={"context_type": "task", "entity_id": tid})
            assert again.status_code == 404

    run(go())


@pytest.mark.parametrize(
    ("body", "status", "needles"),
    [
        ({"context_type": "planet"}, 422, ["context_type", "'project'"]),
        ({"context_type": "api"}, 422, ["context_type"]),
        ({"context_type": "project"}, 422, ["entity_id", "GET /api/projects"]),
        ({"context_type": "task", "entity_id": "  "}, 422, ["entity_id", "GET /api/tasks"]),
        (
            {"context_type": "project", "entity_id": "proj_nope"},
            404,
            ["no project 'proj_nope'", "/api/projects"],
        ),
        ({"context_type": "task", "entity_id": "task_nope"}, 404, ["no task 'task_nope'", "/api/tasks"]),
        ({"context_type": "global", "entity_id": "proj_x"}, 422, ["takes no entity_id", "leave it out"]),
        ({"context_type": "calendar", "entity_id": "2026-11-23"}, 422, ["takes no entity_id"]),
        ({"context_type": "project", "entity_id": "x" * 65}, 422, ["entity_id"]),
    ],
)
def test_a_location_that_cannot_be_opened_is_a_clear_json_error(
    setup: Setup, body: dict[str, Any], status: int, needles: list[str]
) -> None:
    async def go() -> None:
        async with client(setup.app) as c:
            response = await c.post("/api/chats", json=body)
            assert response.status_code == status, response.text
            message = response.json()["error"]
            assert all(n in message for n in needles), message
            assert (await c.get("/api/chats")).json()["chats"] == []  # nothing was created

    run(go())


def test_another_users_project_or_task_is_404_like_an_unknown_one(setup: Setup) -> None:
    async def go() -> None:
        async with client(setup.app) as c:
            for kind, entity in (("project", setup.foreign), ("task", setup.foreign_task)):
                response = await c.post("/api/chats", json={"context_type": kind, "entity_id": entity["id"]})
                assert response.status_code == 404
                assert f"no {kind} {entity['id']!r}" in response.json()["error"]
                assert "Omar" not in response.text
            assert setup.store.list_chats("local") == []

    run(go())


def test_replaced_api_sessions_are_left_out_of_the_default_list(setup: Setup) -> None:
    store = setup.store
    live = store.create_chat("local", title="API live", context_type="api", entity_id="k1")
    old = store.create_chat("local", title="API old", context_type="api", entity_id="k0")
    store.update_chat("local", old.id, context_type="api-superseded")

    async def go() -> None:
        async with client(setup.app) as c:
            chats = (await c.get("/api/chats")).json()["chats"]
            assert [x["id"] for x in chats] == [live.id]
            assert chats[0]["context"]["type"] == "api"
            every = (await c.get("/api/chats", params={"include_superseded": "true"})).json()["chats"]
            assert {x["id"] for x in every} == {live.id, old.id}
            retired = await c.get("/api/chats", params={"context_type": "api-superseded"})
            assert [x["id"] for x in retired.json()["chats"]] == [old.id]
            assert (await c.get(f"/api/chats/{old.id}")).status_code == 200  # still readable by id

    run(go())


def test_rename_and_delete(setup: Setup) -> None:
    async def go() -> None:
        async with client(setup.app) as c:
            chat = (
                await c.post("/api/chats", json={"context_type": "project", "entity_id": setup.project["id"]})
            ).json()
            renamed = await c.patch(f"/api/chats/{chat['id']}", json={"title": "  Venue shortlist "})
            assert renamed.json()["title"] == "Venue shortlist" and renamed.json()["title_generated"] is False
            assert renamed.json()["context"]["name"] == "Offsite 2026"
            blank = await c.patch(f"/api/chats/{chat['id']}", json={"title": "   "})
            assert blank.status_code == 422 and "empty" in blank.json()["error"]
            missing = await c.patch(f"/api/chats/{chat['id']}", json={})
            assert missing.status_code == 422 and "title" in missing.json()["error"]
            long = await c.patch(f"/api/chats/{chat['id']}", json={"title": "x" * 201})
            assert long.status_code == 422
            assert (await c.delete(f"/api/chats/{chat['id']}")).status_code == 204
            again = await c.delete(f"/api/chats/{chat['id']}")
            assert again.status_code == 404 and "no chat" in again.json()["error"]

    run(go())


def test_a_key_cannot_list_rename_or_delete_another_users_chats() -> None:
    store = Store.open("sqlite://")
    store.create_user("ada", user_id="ada")
    store.create_user("bob", user_id="bob")
    bobs_project = Workspace(store).create_project("bob", name="Bob's plan")
    app = create_app(store, assistant_engine(store, ScriptedModel()), require_key=True)
    ada, _ = create_key(store, "ada", "a")
    bob, _ = create_key(store, "bob", "b")

    async def go() -> None:
        async with client(app) as c:
            as_ada, as_bob = {"Authorization": f"Bearer {ada}"}, {"Authorization": f"Bearer {bob}"}
            made = await c.post(
                "/api/chats",
                json={"context_type": "project", "entity_id": bobs_project["id"]},
                headers=as_bob,
            )
            chat = made.json()["id"]
            stolen = await c.post(
                "/api/chats",
                json={"context_type": "project", "entity_id": bobs_project["id"]},
                headers=as_ada,
            )
            assert stolen.status_code == 404 and "Bob" not in stolen.text
            assert (
                await c.patch(f"/api/chats/{chat}", json={"title": "x"}, headers=as_ada)
            ).status_code == 404
            assert (await c.delete(f"/api/chats/{chat}", headers=as_ada)).status_code == 404
            listed = await c.get("/api/chats", params={"include_superseded": "true"}, headers=as_ada)
            assert listed.json()["chats"] == []
            mine = (await c.get(f"/api/chats/{chat}", headers=as_bob)).json()
            assert mine["context"]["name"] == "Bob's plan"

    run(go())
    store.close()
