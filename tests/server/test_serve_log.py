"""``tierwise serve`` logs one line per request (``--quiet``: none); ``/api/info`` and the favicon."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import httpx
import pytest

from tierwise.budget import Budget
from tierwise.chat.engine import ChatEngine
from tierwise.providers.testing import ScriptedModel
from tierwise.server import create_app
from tierwise.server.threaded import free_port
from tierwise.store import Store
from tierwise.workspace.assistant import OfflineAssistant


def _serve(tmp_path: Path, *flags: str) -> str:
    """Run ``serve``, ask for ``/api/info`` and ``/api/chats``, stop it; its output."""
    port = free_port()
    db = f"sqlite:///{tmp_path / 'log.db'}"
    child = subprocess.Popen(
        [sys.executable, "-m", "tierwise.cli", "serve", "--port", str(port), "--db", db, *flags],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/info", timeout=2) as response:
                    assert response.status == 200
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/chats", timeout=5) as response:
            assert response.status == 200
    finally:
        child.terminate()
        out, _ = child.communicate(timeout=10)
    return out


def test_serve_prints_a_line_per_request(tmp_path: Path) -> None:
    out = _serve(tmp_path)
    lines = [line for line in out.splitlines() if "HTTP/1.1" in line]
    assert any('"GET /api/info HTTP/1.1" 200' in line for line in lines), out
    assert any('"GET /api/chats HTTP/1.1" 200' in line for line in lines), out
    assert all(line[:2].isdigit() and line[2] == ":" for line in lines)  # each starts with its time


@pytest.mark.parametrize("quiet", [True, False])
def test_serve_quiet_prints_no_request_lines(
    quiet: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--quiet`` reaches uvicorn as a log configuration that drops the request lines, warnings kept.

    (The request lines themselves, from a real ``serve`` process, are the test above's.)
    """
    import logging
    import logging.config

    import uvicorn
    from typer.testing import CliRunner

    from tierwise.cli import app

    given: dict[str, Any] = {}
    monkeypatch.setattr(uvicorn, "run", lambda service, **options: given.update(options))
    flags = ["--quiet"] if quiet else []
    done = CliRunner().invoke(app, ["serve", "--db", f"sqlite:///{tmp_path / 'q.db'}", *flags])
    assert done.exit_code == 0 and "tierwise is serving on" in done.output, done.output
    capsys.readouterr()
    logging.config.dictConfig(given["log_config"])
    try:
        request = ("127.0.0.1:5", "GET", "/api/chats", "1.1", 200)
        logging.getLogger("uvicorn.access").info('%s - "%s %s HTTP/%s" %d', *request)
        logging.getLogger("uvicorn.error").warning("disk nearly full")
        out, err = capsys.readouterr()
    finally:
        for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):  # as the other tests expect them
            logging.getLogger(name).handlers.clear()
    assert ('"GET /api/chats HTTP/1.1" 200' in out) is not quiet, out
    assert "disk nearly full" in err


@pytest.mark.parametrize(("offline", "require_key"), [(True, True), (False, False)])
def test_info_says_which_model_answers_and_needs_no_key(offline: bool, require_key: bool) -> None:
    store = Store.open("sqlite://")
    provider = OfflineAssistant() if offline else ScriptedModel(model="gpt-test")
    engine = ChatEngine(store, provider, budget=Budget(window=8_000, reserve=500))
    app = create_app(store, engine, require_key=require_key)

    async def ask() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            return [await client.get(path) for path in ("/api/info", "/api/chats", "/favicon.ico", "/")]

    answers, chats, icon, page = asyncio.run(ask())
    info = answers.json()
    store.close()
    if offline:
        assert info == {
            "model": "tierwise-offline",
            "offline": True,
            "label": "offline assistant (no AI model)",
            "requireKey": True,
        }
        assert chats.status_code == 401  # everything else still needs the key
    else:
        assert info == {"model": "gpt-test", "offline": False, "label": "gpt-test", "requireKey": False}
    assert icon.status_code == 200 and icon.headers["content-type"].startswith("image/svg+xml")
    assert 'type="module" src="/static/app.js"' in page.text and "/static/favicon.svg" in page.text
