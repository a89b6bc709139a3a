from __future__ import annotations

import re
from pathlib import Path

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
