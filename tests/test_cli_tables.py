"""Every table the command line prints reads whole at 80 and 120 columns (issue 33).

Before: rich cut what did not fit to "…" — headers "open-do…", "budg…", "prefix reu…" and cells
"stepped wind…", "passthrou…" at 120 columns, more at 80. The bench tables are rendered from the
results kept in ``bench/results/``; ``tierwise pack`` and ``tierwise replay`` are run.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from rich.table import Table
from typer.testing import CliRunner

from tierwise.bench import agents_metrics, cache, disclosure_report, engine, layers, locomo, pack, proxy
from tierwise.cli import app
from tierwise.tables import fitted, print_table

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
EXAMPLE = ROOT / "examples" / "conversation.json"
RUNNER = CliRunner()
WIDTHS = (80, 120)


class Recording(Console):
    """A console that remembers the headers of the tables printed on it."""

    def __init__(self, width: int) -> None:
        super().__init__(width=width, record=True, file=io.StringIO(), color_system=None)
        self.headers: list[str] = []

    def print(self, *objects: Any, **kwargs: Any) -> None:  # type: ignore[override]
        self.headers += [str(c.header) for o in objects if isinstance(o, Table) for c in o.columns]
        super().print(*objects, **kwargs)


def _result(name: str) -> Any:
    return json.loads((RESULTS / f"{name}.json").read_text(encoding="utf-8"))


PRINTERS: dict[str, Callable[[Console], None]] = {
    "agents": lambda c: agents_metrics.print_summary(_result("agents")["summary"], c),
    "cache": lambda c: cache._print(_result("cache")["summary"], c),
    "cache wires": lambda c: cache._print_wires(_result("cache")["wires"]["summary"], c),
    "disclosure": lambda c: disclosure_report.show(_result("disclosure"), c),
    "engine": lambda c: print_table(c, engine.results_table(_result("engine")["results"]), keep=2),
    "locomo": lambda c: print_table(c, locomo._table(_result("locomo"))),
    "layers": lambda c: print_table(c, layers.layers_table(_result("locomo")["layers"])),
    "pack": lambda c: print_table(c, pack.results_table(_result("pack")["results"]), keep=3),
    "proxy": lambda c: proxy._print(_result("proxy"), c),
    "proxy beside a long neighbour": lambda c: proxy._print(_result("proxy-hostile"), c),
}


def _readable(text: str, headers: list[str]) -> None:
    """Nothing cut to "…", and every word of every header whole somewhere in ``text``."""
    assert headers
    cut = [line for line in text.splitlines() if "…" in line]
    assert not cut, "\n".join(cut)
    words = {w for header in headers for w in header.split()}
    broken = sorted(w for w in words if w not in text)
    assert not broken, f"header words broken across lines: {broken}\n{text}"


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", sorted(PRINTERS))
def test_bench_tables_read_whole(name: str, width: int) -> None:
    console = Recording(width)

    PRINTERS[name](console)

    text = console.export_text()
    _readable(text, console.headers)
    assert max(len(line) for line in text.splitlines()) <= width


def test_a_table_too_wide_is_shared_out_with_its_key_column_repeated() -> None:
    table = Table(title="recall")
    for header in ("packer", "multi-hop", "temporal", "open-domain", "single-hop", "adversarial", "p95 ms"):
        table.add_column(header)
    table.add_row("retriever only", "0.614", "0.894", "0.515", "0.917", "0.911", "2.03")

    parts = fitted(table, Console(width=50))

    assert len(parts) > 1
    assert all(str(p.columns[0].header) == "packer" for p in parts)
    shown = [str(c.header) for p in parts for c in p.columns[1:]]
    assert shown == ["multi-hop", "temporal", "open-domain", "single-hop", "adversarial", "p95 ms"]
    assert parts[0].title == "recall" and all(p.title == "(continued)" for p in parts[1:])


@pytest.mark.parametrize("width", WIDTHS)
def test_pack_table_reads_whole(width: int) -> None:
    result = RUNNER.invoke(app, ["pack", str(EXAMPLE), "--budget", "3000"], env={"COLUMNS": str(width)})

    assert result.exit_code == 0, result.output
    _readable(result.output, ["layer", "kind", "prio", "status", "tokens", "of", "messages", "why"])


@pytest.mark.parametrize("width", WIDTHS)
def test_replay_says_which_packs_it_shows_and_shows_them(width: int, tmp_path: Path) -> None:
    result = RUNNER.invoke(app, ["replay", str(EXAMPLE), "--budget", "3000"], env={"COLUMNS": str(width)})
    report = RUNNER.invoke(app, ["replay", str(EXAMPLE), "--budget", "3000", "--json"])

    assert result.exit_code == 0, result.output
    rows = json.loads(report.output)["rows"]
    expected = [i + 1 for i, r in enumerate(rows) if i % 10 == 0 or i == len(rows) - 1 or r["compactions"]]
    shown = [int(m.group(1).replace(",", "")) for m in re.finditer(r"^│\s*([\d,]+) │", result.output, re.M)]
    assert shown == expected
    title = " ".join(result.output.split("┏")[0].split())
    assert f"{len(rows)} packs: every tenth from the first, the last, and each compaction step" in title
    _readable(result.output, ["pack", "before message", "pack tokens", "full history", "saved", "compaction"])


def test_pack_help_says_what_json_prints() -> None:
    result = RUNNER.invoke(app, ["pack", "--help"], env={"COLUMNS": "120"})

    text = " ".join(result.output.split())
    assert '{"messages", "tools" (when the input has any), "report"}' in text
    assert "{messages, report}" not in text
