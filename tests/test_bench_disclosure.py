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
    sent = s["tokens_sent"]
    assert 0 < sent["progressive"] < sent["full"] < sent["full_context"]
    assert s["reduction"] == pytest.approx(1 - sent["progressive"] / sent["full"], abs=1e-4)
    assert s["reduction_full_context"] == pytest.approx(
        1 - sent["progressive"] / sent["full_context"], abs=1e-4
    )
    assert s["detail_calls"] >= 1 and s["list_calls"] >= 2
    tools = [r["tools"] for r in result["progressive"]["requests"]]
    assert (
        tools[1][-1] == "get_task_details" and "get_task_details" not in tools[0]
    )  # list first, then detail
    assert set(result["latency"][0]["tools"]) == set(WORKSPACE_TOOL_NAMES)
    assert json.loads((tmp_path / "d.json").read_text())["summary"] == s
    assert "fewer tokens than full records" in (tmp_path / "d.md").read_text()


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


def test_the_headline_holds_the_context_equal_and_reports_the_seeds_rates(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Was: the headline's full peer got a 9-17k-token location context (77% mostly from that), the
    detail rate was detail ÷ all calls, and the initial context left out the tool schemas."""
    monkeypatch.setattr(disclosure, "DIALOGUES", disclosure.DIALOGUES[2:3])  # a project chat
    result = disclosure.run(scales=[], repeat=1, console=Console(file=None, quiet=True))
    s, ic = result["summary"], result["summary"]["initial_context"]
    firsts = {m: result[m]["requests"][0]["first"]["context"] for m in disclosure.MODES}
    assert firsts["progressive"] == firsts["full"] < firsts["full_context"]  # context held equal
    assert ic["mean"] == ic["full_mean"] < ic["full_context_mean"]
    assert s["detail_per_list"] == pytest.approx(s["detail_calls"] / s["list_calls"], abs=1e-3)
    assert ic["with_tools_max"] == ic["max"] + ic["tool_definitions"] > ic["max"]
    verdicts = s["targets"]
    assert set(verdicts) == {"reduction", "detail_per_list", "initial_context_with_tools", "initial_context"}
    assert verdicts["reduction"]["value"] == s["reduction"]
    assert verdicts["initial_context_with_tools"]["target"] == 2_000
    for v in verdicts.values():
        assert v["by"] == pytest.approx(abs(v["value"] - v["target"]), abs=1e-3)
    text = disclosure._markdown(result)
    assert "context held equal" in text and "old comparison" in text and "detail ÷ list" in text


def test_initial_context_with_tool_schemas_is_under_2000_on_the_sample_workspace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Was 2,694 (issue 17): the project chats' first prompts, with 1,540 tokens of tool schemas."""
    monkeypatch.setattr(disclosure, "MODES", ("progressive",))
    monkeypatch.setattr(disclosure, "_summary", lambda runs, latency: runs)
    monkeypatch.setattr(disclosure, "DIALOGUES", tuple(d for d in disclosure.DIALOGUES if d.project))
    runs = asyncio.run(disclosure._run([], 1, lambda _: None))["summary"]
    firsts = [r["first"] for r in disclosure._starts(runs["progressive"]["requests"])]
    assert len(firsts) == 2
    assert all(f["context_with_tools"] < 2_000 and f["context"] < 1_500 for f in firsts), firsts
    assert all(f["tools"] < 1_000 for f in firsts)


def test_seed_000_section_10_is_measured_with_and_without(monkeypatch: pytest.MonkeyPatch) -> None:
    """Was: no prefetching, context cache or adaptive budgets, so nothing to measure (issue 17)."""
    monkeypatch.setattr(disclosure, "DIALOGUES", disclosure.DIALOGUES[4:5])  # triage: list, then writes
    monkeypatch.setattr(disclosure, "MODES", ("progressive", "full"))
    s = disclosure.run(scales=[], repeat=1, console=Console(file=None, quiet=True))["summary"]["seed10"]
    assert s["prefetch"]["offered"] >= 1 and s["context_cache"]["hits"] + s["context_cache"]["misses"] == 3
    assert s["context_cache"]["stale"] >= 1  # the writes of this dialogue invalidated the cached overview
    assert s["same_answers"] == s["requests"] == 3
    assert s["tokens_sent"]["without"] - s["tokens_sent"]["with"] == s["tokens_saved"]
    assert "§10.1 prefetch" in "\n".join(disclosure.seed10_lines(s))


def test_earlier_results_are_recaps_on_the_progressive_side_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Was: both sides re-sent every earlier tool result whole, so the headline was bounded by what
    the full peer's history held (issue 17: 48.9%)."""
    monkeypatch.setattr(disclosure, "DIALOGUES", disclosure.DIALOGUES[3:4])  # notes: list, detail, list
    monkeypatch.setattr(disclosure, "MODES", ("progressive", "every_tool", "per_call", "full"))
    result = disclosure.run(scales=[], repeat=1, console=Console(file=None, quiet=True))
    s = result["summary"]
    for mode in ("progressive", "full"):
        for row in result[mode]["requests"]:
            assert sum(row["parts"].values()) == row["tokens_sent"]  # the parts are the whole prompt
    parts = s["parts"]
    assert parts["progressive"]["tool_schemas"] < parts["full"]["tool_schemas"] / 2  # the chat's toolbox
    # every tool on every call: more sent; each call only its own tools: fewer sent, but the cache then
    # misses, so more billed. (Every tool on every call is billed less than the toolbox on this one
    # dialogue since memory's retrieval tools join only when a pack points back: issue 29.)
    sent, billed = s["tokens_sent"], s["billed_tokens"]
    assert sent["per_call"] < sent["progressive"] < sent["every_tool"]
    assert billed["progressive"] < billed["per_call"]
    assert s["variants"]["per_call"]["reduction"] == pytest.approx(
        1 - sent["per_call"] / sent["full"], abs=1e-4
    )
    assert s["cached_tokens"]["progressive"] > 0
    # the same context; the full peer's also says how to open the compressed results it comes to have
    assert parts["progressive"]["system"] <= parts["full"]["system"]
    assert 0 < parts["progressive"]["results_earlier"] < parts["full"]["results_earlier"] / 3
    alike = sum(v for k, v in parts["progressive"].items() if not k.startswith("results_"))
    assert s["reduction_ceiling"] == pytest.approx(1 - alike / s["tokens_sent"]["full"], abs=1e-4)
    assert all(t.recap is None for t in disclosure.full_tools())
    assert "tool results of earlier requests" in disclosure._markdown(result)
