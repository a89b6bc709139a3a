"""The proxy load benchmark runs, bounded, and measures every request it made."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from tierwise.bench.proxy import run


def test_a_small_load_run(tmp_path: Path) -> None:
    result = run(
        clients=3,
        requests=2,
        seconds=30,
        chunks=3,
        delay_ms=1,
        out=tmp_path / "p.json",
        console=Console(quiet=True),
    )
    assert result["requests"] == 6 and result["requests_per_s"] > 0
    assert 0 <= result["added_ms"]["p50"] <= result["added_ms"]["p99"]
    assert (tmp_path / "p.json").exists()
