"""The cost-guard benchmark: both contenders agree, and the results are written."""

from __future__ import annotations

import json
from pathlib import Path

from tierwise.bench.costguard import run


def test_the_costguard_bench_runs_and_writes_its_results(tmp_path: Path) -> None:
    out = tmp_path / "costguard.json"
    body = run(rows=200, repeat=4, peer_repeat=2, out=out)
    (result,) = body["results"]
    assert result["backend"] == "sqlite" and result["usage_rows"] == 200
    assert result["tierwise"]["runs"] == 4 and result["full_scan"]["runs"] == 2
    assert result["spend"] == {"session_tokens": sum(800 + i % 400 for i in range(200) if i % 2)} | {
        "month_tokens": sum(800 + i % 400 for i in range(200) if i % 4)
    }
    assert json.loads(out.read_text())["results"] == body["results"]
    assert "full scan (before)" in out.with_suffix(".md").read_text()
