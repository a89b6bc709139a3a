from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def quickstart_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    return [block.strip() for block in re.findall(r"```bash\n(.*?)```", section, re.S)]


def readme_text() -> str:
    return (ROOT / "README.md").read_text(encoding="utf-8")


def test_quickstart_has_exactly_two_commands() -> None:
    commands = quickstart_commands()
    assert len(commands) == 2
    assert all("\n" not in c for c in commands)
    assert commands[0] == "pip install -e . && tierwise serve"
    assert "tierwise pack examples/conversation.json" in readme_text()
    assert (ROOT / "examples" / "conversation.json").exists()


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    test_command = quickstart_commands()[1]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert test_command in ci.splitlines()


def readme_commands() -> list[list[str]]:
    """Every ``tierwise …`` line of the README's bash blocks, split into words (comments cut)."""
    import shlex

    commands = []
    for block in re.findall(r"```bash\n(.*?)```", readme_text(), re.S):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            if words[:1] == ["tierwise"]:
                commands.append(words)
    return commands


# The words naming a file a command reads: a positional argument of these commands, or --data.
_READS = {("pack",), ("replay",), ("workspace", "import-ics")}


def _inputs(words: list[str]) -> list[str]:
    found = [after for before, after in itertools.pairwise(words) if before == "--data"]
    for head in _READS:
        if tuple(words[1 : 1 + len(head)]) == head:
            rest = words[1 + len(head) :]
            if rest and not rest[0].startswith("-"):
                found.append(rest[0])
    return found


def test_every_readme_command_reads_an_input_that_exists() -> None:
    commands = readme_commands()
    inputs = [path for words in commands for path in _inputs(words)]
    assert len(inputs) >= 10, inputs  # pack ×5, replay ×3, bench locomo, import-ics
    missing = sorted({p for p in inputs if not (ROOT / p).exists()})
    assert missing == [], f"README commands read files that do not exist: {missing}"
    assert not any(p in ("conversation.json", "transcript.json", "calendar.ics") for p in inputs)


def test_the_readme_pack_and_import_commands_run(tmp_path: Path, monkeypatch: Any) -> None:
    from typer.testing import CliRunner

    from tierwise.cli import app

    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("TIERWISE_DATABASE_URL", f"sqlite:///{tmp_path / 'readme.db'}")
    ran = 0
    for words in readme_commands():
        if words[1] == "pack" or words[1:3] == ["workspace", "import-ics"]:
            result = CliRunner().invoke(app, words[1:])
            assert result.exit_code == 0, (words, result.output)
            ran += 1
    assert ran == 6


_WRITES = ("--out", "--dump")


def test_the_readme_commands_write_only_into_the_ignored_out_directory() -> None:
    """A newcomer running the README verbatim leaves the clone as it was (issue 33)."""
    outputs = [
        after
        for words in readme_commands()
        for before, after in itertools.pairwise(words)
        if before in _WRITES
    ]
    assert len(outputs) >= 8, outputs
    assert [p for p in outputs if not p.startswith("out/")] == []
    ignored = (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert "/out/" in ignored


def test_the_readme_commands_that_write_make_their_directory(tmp_path: Path, monkeypatch: Any) -> None:
    from typer.testing import CliRunner

    from tierwise.cli import app

    monkeypatch.chdir(tmp_path)  # a clone without out/ yet
    monkeypatch.setenv("TIERWISE_DATABASE_URL", f"sqlite:///{tmp_path / 'readme.db'}")
    ran = 0
    for words in readme_commands():
        if (words[1] == "replay" and "--dump" in words) or words[1:3] == ["workspace", "export-ics"]:
            args = [str(ROOT / w) if w.startswith("examples/") else w for w in words[1:]]
            result = CliRunner().invoke(app, args)
            assert result.exit_code == 0, (words, result.output)
            ran += 1
    assert ran == 3
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "calendar.ics",
        "packs.jsonl",
        "steps.jsonl",
    ]
