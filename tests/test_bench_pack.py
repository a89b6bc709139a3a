import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import tierwise.cli
from tierwise.bench.pack import langchain_counter, run_pack_benchmark, synthetic_history, to_langchain
from tierwise.tokens import TokenCounter


def test_run_pack_benchmark_writes_results(tmp_path: Path) -> None:
    out = tmp_path / "results" / "pack.json"
    rows = run_pack_benchmark([60], [2000], repeat=3, encoding="o200k_base", out=out)
    assert out.exists()
    assert out.with_suffix(".md").exists()
    body = json.loads(out.read_text())
    assert body["encoding"] == "o200k_base" and body["repeat"] == 3 and body["langchain_core"]
    assert body["results"] == rows
    assert [r["mode"] for r in rows] == ["warm", "cold"]
    for row in rows:
        assert row["size"] == 60 and row["messages"] == 60 and row["budget"] == 2000
        for name in ("tierwise", "trim_messages"):
            stats = row[name]
            assert stats["p50_ms"] > 0 and stats["p99_ms"] > 0 and stats["mean_ms"] > 0
            assert stats["p99_ms"] >= stats["p50_ms"]
            assert 0 < stats["tokens"] <= 2000
            assert stats["messages"] >= 2
        runs = 3 if row["mode"] == "warm" else 5
        assert row["tierwise"]["runs"] == runs and row["trim_messages"]["runs"] == runs
        assert row["ratio_trim_messages_p50"] > 0 and row["ratio_trim_batched_p99"] > 0
        assert row["tierwise_checksum"]["runs"] == runs and row["trim_batched"]["runs"] == runs
    md = out.with_suffix(".md").read_text()
    assert "tierwise p50" in md and "| 60 | 2,000 | warm |" in md


@pytest.mark.parametrize("size", [2, 4, 6, 7, 8, 9, 10, 11, 60, 100, 1000])
def test_synthetic_history_shape(size: int) -> None:
    messages = synthetic_history(size)
    assert len(messages) == size
    assert messages[0]["role"] == "system"
    assert messages[-1]["role"] == "user"
    for i, message in enumerate(messages):
        calls = message.get("tool_calls")
        if calls:
            assert message["role"] == "assistant"
            results = messages[i + 1 : i + 1 + len(calls)]
            assert [r["role"] for r in results] == ["tool"] * len(calls)
            assert [r["tool_call_id"] for r in results] == [c["id"] for c in calls]
            assert all(json.loads(c["function"]["arguments"]) for c in calls)
            assert messages[i + 1 + len(calls)]["role"] == "assistant"  # the answer after the results
        if message["role"] == "tool":
            assert messages[i - 1]["role"] in ("assistant", "tool")


@pytest.mark.parametrize("size", [0, 1, 3, 5])
def test_synthetic_history_unreachable_sizes_are_close(size: int) -> None:
    messages = synthetic_history(size)
    assert abs(len(messages) - size) <= 2 and messages[-1]["role"] == "user"


def test_synthetic_history_is_deterministic_and_realistic() -> None:
    messages = synthetic_history(1000)
    assert messages == synthetic_history(1000)
    turns = sum(1 for m in messages if m["role"] == "user")
    tool_turns = sum(1 for m in messages if m.get("tool_calls"))
    assert 0.15 < tool_turns / turns < 0.35
    answers = [len(m["content"].split()) for m in messages if m["role"] == "assistant" and m["content"]]
    assert min(answers) >= 10 and max(answers) <= 330


def test_langchain_counter_matches_tierwise() -> None:
    counter = TokenCounter("o200k_base")
    messages = synthetic_history(200)
    assert langchain_counter(counter)(to_langchain(messages)) == counter.count_messages(messages)


def test_cli_bench_pack() -> None:
    args = ["bench", "pack", "--sizes", "50", "--budgets", "1000", "--repeat", "2"]
    result = CliRunner().invoke(tierwise.cli.app, args)
    assert result.exit_code == 0, result.output
    assert "trim" in result.output


def test_cli_bench_pack_bad_sizes() -> None:
    result = CliRunner().invoke(tierwise.cli.app, ["bench", "pack", "--sizes", "abc"])
    assert result.exit_code == 2
    assert "error:" in result.output
