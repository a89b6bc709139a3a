"""Workspace read routes: abbreviated lists, full records, 404 for another user's ids."""

from __future__ import annotations

import asyncio
from datetime import date

import httpx

from tierwise.providers.testing import ScriptedModel
from tierwise.server import create_app
from tierwise.store import Store
from tierwise.workspace.app import assistant_engine
from tierwise.workspace.sample import generate_workspace


def test_workspace_routes() -> None:
    store = Store.open("sqlite://")
    other = store.create_user("omar").id
    engine = assistant_engine(store, ScriptedModel())
    app = create_app(store, engine)
    generate_workspace(store, "local", today=date(2026, 11, 23))
    generate_workspace(store, other, today=date(2026, 11, 23), seed=1)
    from tierwise.workspace.repository import Workspace

    foreign = Workspace(store).list_tasks(other, limit=1)[0][0]["id"]

    async def go() -> None:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
            projects = (await c.get("/api/projects", params={"query": "launch"})).json()
            assert projects["projects"][0]["name"] == "Q4 Product Launch"
            pid = projects["projects"][0]["id"]
            full = (await c.get(f"/api/projects/{pid}")).json()
            assert full["context"] and full["tasks"]
            tasks = (await c.get("/api/tasks", params={"project_id": pid, "priority": ["high"]})).json()
            assert tasks["total"] > 0 and all(t["priority"] == "high" for t in tasks["tasks"])
            one = (await c.get(f"/api/tasks/{tasks['tasks'][0]['id']}")).json()
            assert "description" in one and "subtasks" in one
            assert (await c.get("/api/notes", params={"query": "pricing"})).json()["total"] > 0
            events = (await c.get("/api/calendar", params={"from": "2026-11-23", "to": "2026-11-24"})).json()
            assert events["total"] > 0
            stolen = await c.get(f"/api/tasks/{foreign}")
            assert stolen.status_code == 404 and "error" in stolen.json()
            bad = await c.get("/api/calendar", params={"from": "someday"})
            assert bad.status_code == 422 and "not a date" in bad.json()["error"]

    asyncio.run(go())
    store.close()
