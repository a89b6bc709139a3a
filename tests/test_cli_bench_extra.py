"""A bench command whose peer comes with the ``bench`` extra says so when the extra is missing."""

from __future__ import annotations

import sys

import pytest
from typer.testing import CliRunner

from tierwise.cli import app

RUNNER = CliRunner()


@pytest.mark.parametrize(
    "args",
    [
        ["bench", "cache", "--budgets", "4000"],
        ["bench", "pack", "--sizes", "100", "--budgets", "4000", "--repeat", "1"],
        ["bench", "agents", "--contenders", "trim_messages"],
    ],
)
def test_without_the_bench_extra_a_bench_names_the_install(
    args: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in [m for m in sys.modules if m == "langchain_core" or m.startswith("langchain_core.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.delitem(sys.modules, "tierwise.bench.pack", raising=False)
    monkeypatch.setitem(sys.modules, "langchain_core", None)  # what an install without the extra has
    result = RUNNER.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and result.output.startswith("error: ")
    assert "pip install -e '.[bench]'" in result.output
