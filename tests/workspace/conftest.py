from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

import pytest

from tierwise.store import Store
from tierwise.tools import ToolContext, ToolExecutor, ToolRegistry, ToolResult
from tierwise.workspace.repository import Workspace
from tierwise.workspace.tools import WORKSPACE_STRATEGIES, workspace_tools

NOW = datetime(2026, 11, 23, 14, 0, tzinfo=UTC)  # a Monday
TODAY = date(2026, 11, 23)


@dataclass
class Env:
    store: Store
    ws: Workspace
    user: str
    other: str
    executor: ToolExecutor
    clock_now: datetime = NOW

    def call(self, name: str, user: str | None = None, **arguments: Any) -> ToolResult:
        context = ToolContext(user_id=user or self.user, extras={"clock": lambda: self.clock_now})
        return asyncio.run(self.executor.execute("c1", name, json.dumps(arguments), context=context))

    def data(self, name: str, user: str | None = None, **arguments: Any) -> Any:
        result = self.call(name, user, **arguments)
        assert result.success, result.content
        return json.loads(result.content)


@pytest.fixture
def env(store: Store) -> Iterator[Env]:
    """Two users (maya, with a Lisbon profile; omar) and an executor with the twelve tools."""
    user = store.create_user("maya").id
    other = store.create_user("omar").id
    ws = Workspace(store)
    ws.set_profile(user, timezone="Europe/Lisbon", who_i_am="Product lead", how_i_work="Mornings, bullets")
    executor = ToolExecutor(
        ToolRegistry(workspace_tools()), store=store, strategies=WORKSPACE_STRATEGIES, timeout_s=10
    )
    yield Env(store, ws, user, other, executor)
