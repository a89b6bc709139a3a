"""``tierwise serve``: refuses what it cannot do safely; serves the API on loopback."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from tierwise.cli import app
from tierwise.server.threaded import free_port

RUNNER = CliRunner()


def test_serve_refuses_a_public_address_and_bad_ports() -> None:
    for args, needle in (
        (["--host", "0.0.0.0"], "refusing to serve on 0.0.0.0 without authentication: add --require-key"),
        (["--host", "example.org"], "is not an IP address"),
        (["--port", "70000"], "is not a port"),
    ):
        result = RUNNER.invoke(app, ["serve", *args])
        assert result.exit_code == 2 and needle in result.output, result.output
        assert "Traceback" not in result.output


def test_serve_refuses_a_model_server_at_its_own_address(monkeypatch: Any, tmp_path: Path) -> None:
    """vLLM's default port is serve's: the model would be tierwise itself, every call a loop (issue 33)."""
    monkeypatch.setenv("TIERWISE_MODEL", "served-model")
    monkeypatch.setenv("TIERWISE_DATABASE_URL", f"sqlite:///{tmp_path / 'loop.db'}")
    for base_url, args in (
        ("http://localhost:8000/v1", []),
        ("http://127.0.0.1:8080/v1", ["--port", "8080"]),
    ):
        monkeypatch.setenv("TIERWISE_BASE_URL", base_url)
        result = RUNNER.invoke(app, ["serve", *args])
        assert result.exit_code == 2, result.output
        assert "is this server's own address" in result.output and "--port 8001" in result.output
        assert "Traceback" not in result.output
    assert not (tmp_path / "loop.db").exists()  # refused before anything was set up


def test_serve_answers_on_loopback(tmp_path: Path) -> None:
    port = free_port()
    db = f"sqlite:///{tmp_path / 'serve.db'}"
    child = subprocess.Popen(
        [sys.executable, "-m", "tierwise.cli", "serve", "--port", str(port), "--db", db],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline, body = time.monotonic() + 30, None
        while time.monotonic() < deadline and body is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/chats", timeout=2) as response:
                    body = json.loads(response.read())
            except OSError:
                time.sleep(0.2)
        assert body == {"chats": []}
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/api/chats", data=b"{}", headers={"content-type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=5) as response:
            assert response.status == 201
    finally:
        child.terminate()
        out, _ = child.communicate(timeout=10)
    assert f"http://127.0.0.1:{port}" in out and "loaded the sample workspace" in out
