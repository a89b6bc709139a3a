"""`tierwise traces`: stored turn traces out as JSONL."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from typer.testing import CliRunner

from tierwise.chat.engine import ChatEngine
from tierwise.cli import app
from tierwise.providers.testing import ScriptedModel
from tierwise.store import Store

RUNNER = CliRunner()


def test_traces_export_a_chats_turns(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'chat.db'}"
    with Store.open(db) as store:
        store.create_user("local", user_id="local")
        chat = store.create_chat("local").id
        engine = ChatEngine(store, ScriptedModel("One.", "Two."))
        asyncio.run(engine.run("local", chat, "first"))
        asyncio.run(engine.run("local", chat, "second"))

    out = tmp_path / "traces.jsonl"
    result = RUNNER.invoke(app, ["traces", "--chat", chat, "--db", db, "--out", str(out)])
    assert result.exit_code == 0, result.output
    spans = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len({s["trace_id"] for s in spans}) == 2
    assert {s["chat_id"] for s in spans} == {chat}
    assert [s["name"] for s in spans].count("model.call") == 2

    printed = RUNNER.invoke(app, ["traces", "--db", db])
    assert printed.exit_code == 0 and printed.output.count("\n") == len(spans)

    missing = RUNNER.invoke(app, ["traces", "--chat", "nope", "--db", db])
    assert missing.exit_code == 2 and missing.output.startswith("error: no stored chat 'nope'")
    assert "Traceback" not in missing.output
