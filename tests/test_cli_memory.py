from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tierwise.bench.synthetic import synthetic_history, timestamped
from tierwise.cli import app

RUNNER = CliRunner()


def transcript(tmp_path: Path, n: int = 120) -> Path:
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"messages": timestamped(synthetic_history(n))}), encoding="utf-8")
    return path


def test_replay_reports_every_pack_within_budget(tmp_path: Path) -> None:
    result = RUNNER.invoke(app, ["replay", str(transcript(tmp_path)), "--budget", "1500", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["lost"] == 0 and report["all_within_budget"]
    assert report["max_pack_tokens"] <= 1500 and report["packs"] > 20
    assert all(r["pack_tokens"] <= r["full_tokens"] for r in report["rows"])


def test_replay_table_and_store(tmp_path: Path) -> None:
    result = RUNNER.invoke(app, ["replay", str(transcript(tmp_path, 60)), "--budget", "1500", "--store"])
    assert result.exit_code == 0, result.output
    flat = " ".join(result.output.split())
    assert "lost messages: 0" in flat and "stored: 59" in flat


@pytest.mark.parametrize(
    ("messages", "needle"),
    [
        ([{"role": "user", "content": "hi", "timestamp": "yesterday"}], "not ISO 8601"),
        ([{"role": "user", "content": "hi", "timestamp": "2026-01-05T09:00:00"}], "no time zone"),
        ([{"role": "robot", "content": "hi"}], "unknown role"),
        (["hi"], "must be an object"),
    ],
)
def test_replay_bad_transcripts(tmp_path: Path, messages: list[object], needle: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"messages": messages}), encoding="utf-8")
    result = RUNNER.invoke(app, ["replay", str(path), "--budget", "500"])
    assert result.exit_code == 2
    assert result.output.startswith("error: ") and needle in result.output


def test_bench_locomo_bad_input(tmp_path: Path) -> None:
    missing = RUNNER.invoke(app, ["bench", "locomo", "--data", str(tmp_path / "nope.json")])
    assert missing.exit_code == 2 and "pass --data" in missing.output
    bad = tmp_path / "bad.json"
    bad.write_text("{}", encoding="utf-8")
    result = RUNNER.invoke(app, ["bench", "locomo", "--data", str(bad), "--no-dense"])
    assert result.exit_code == 2 and result.output.startswith("error: ")
