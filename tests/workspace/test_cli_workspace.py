"""``tierwise workspace …``: sample, clear, ICS import and export, with clean errors."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from tierwise.cli import app

RUNNER = CliRunner()


def _run(*args: str) -> tuple[int, str]:
    result = RUNNER.invoke(app, list(args))
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


def test_sample_export_import_clear(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'w.db'}"
    code, out = _run("workspace", "sample", "--db", db)
    assert code == 0 and "loaded:" in out and "projects" in out
    code, out = _run("workspace", "sample", "--db", db)
    assert code == 2 and out.startswith("error: ")
    # the fix is a command, not a Python function
    assert f"tierwise workspace clear --yes --db {db}" in out and "clear_workspace(" not in out
    ics = tmp_path / "cal.ics"
    code, _ = _run("workspace", "export-ics", "--db", db, "--out", str(ics))
    assert code == 0 and ics.read_bytes().startswith(b"BEGIN:VCALENDAR")
    code, out = _run("workspace", "import-ics", str(ics), "--db", db)
    assert code == 0 and "0 new" in out and "updated" in out  # same UIDs: updated, not duplicated
    code, out = _run("workspace", "clear", "--db", db)
    assert code == 2 and "--yes" in out
    code, out = _run("workspace", "clear", "--yes", "--db", db)
    assert code == 0
    code, out = _run("workspace", "import-ics", str(ics), "--db", db)
    assert code == 0 and "0 updated" in out


def test_bad_files_and_users(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'w.db'}"
    junk = tmp_path / "junk.ics"
    junk.write_text("not a calendar", encoding="utf-8")
    code, out = _run("workspace", "import-ics", str(junk), "--db", db)
    assert code == 2 and out.startswith("error: ") and "iCalendar" in out
    code, out = _run("workspace", "import-ics", str(tmp_path / "missing.ics"), "--db", db)
    assert code == 2 and out.startswith("error: cannot read")
    code, out = _run("workspace", "import-ics", str(tmp_path), "--db", db)
    assert code == 2 and "directory" in out
    code, out = _run("workspace", "sample", "--user", "nobody", "--db", db)
    assert code == 2 and "no user 'nobody'" in out
    code, out = _run("workspace", "sample", "--scale", "0", "--db", db)
    assert code == 2 and out.startswith("error: ")


def test_a_cleared_workspace_stays_cleared_when_the_assistant_starts_again(tmp_path: Path) -> None:
    """``workspace clear --yes`` sticks: the next ``serve``/``chat`` does not load the sample again."""
    from tierwise.cli_common import assistant
    from tierwise.workspace.queries import WorkspaceQueries

    db = f"sqlite:///{tmp_path / 'w.db'}"
    store, user, _, _, loaded = assistant(db, None, None)  # what `tierwise serve` does first
    store.close()
    assert loaded is not None and "sample workspace" in loaded
    assert _run("workspace", "clear", "--yes", "--db", db)[0] == 0
    store, user, _, _, loaded = assistant(db, None, None)
    try:
        assert loaded is None
        assert WorkspaceQueries(store).search_projects(user, limit=5)[1] == 0
    finally:
        store.close()
    # the sample can still be loaded on purpose, into the cleared workspace
    code, out = _run("workspace", "sample", "--db", db)
    assert code == 0 and "loaded:" in out
