"""The disclosure benchmark: both contenders run the same requests; figures are computed, not assumed."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from rich.console import Console

from tierwise.bench import disclosure
from tierwise.store import Store
from tierwise.workspace.sample import generate_workspace
from tierwise.workspace.tools import WORKSPACE_TOOL_NAMES


def test_a_short_run_measures_both_contenders(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(disclosure, "DIALOGUES", disclosure.DIALOGUES[:1])
    result = disclosure.run(
        scales=[1], repeat=2, out=tmp_path / "d.json", console=Console(file=None, quiet=True)
    )
    s = result["summary"]
    assert s["requests"] == 4 and s["answered"] == 4 and s["tool_errors"] == 0
    assert 0 < s["tokens_sent"]["progressive"] < s["tokens_sent"]["full"]
    assert s["reduction"] == pytest.approx(
        1 - s["tokens_sent"]["progressive"] / s["tokens_sent"]["full"], abs=1e-4
    )
    assert s["initial_context"]["mean"] < s["initial_context"]["full_mean"]
    assert s["detail_calls"] >= 1 and s["list_calls"] >= 2
    tools = [r["tools"] for r in result["progressive"]["requests"]]
    assert (
        tools[1][-1] == "get_task_details" and "get_task_details" not in tools[0]
    )  # list first, then detail
    assert set(result["latency"][0]["tools"]) == set(WORKSPACE_TOOL_NAMES)
    assert json.loads((tmp_path / "d.json").read_text())["summary"] == s
    assert "reduction" in (tmp_path / "d.md").read_text()


def test_full_tools_return_complete_records() -> None:
    store = Store.open("sqlite://")
    user = store.create_user("b").id
    generate_workspace(store, user, today=disclosure.TODAY)
    from tierwise.tools import ToolContext, ToolExecutor, ToolRegistry

    ctx = ToolContext(user_id=user, extras={"clock": lambda: disclosure.NOW})
    full = ToolExecutor(ToolRegistry(disclosure.full_tools()), store=store)
    result = asyncio.run(full.execute("c", "list_tasks", '{"limit": 3}', context=ctx))
    tasks = json.loads(result.content)["tasks"]
    assert len(tasks) == 3 and all("details" in t and "description_preview" not in t for t in tasks)
