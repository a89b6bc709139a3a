"""``serve --workers N``: each worker's app is built from the settings ``serve`` left, and says so."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tierwise.errors import UserError
from tierwise.server import workers


def test_a_worker_builds_its_app_from_the_settings_and_says_when_it_is_ready(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = workers.ServeSettings(db=f"sqlite:///{tmp_path / 'w.db'}", budget=8_000)
    monkeypatch.setenv(workers.SETTINGS_VARIABLE, settings.to_env())
    app = workers.app()
    assert re.fullmatch(r"worker \d+ ready in \d+\.\d s\n", capsys.readouterr().out)
    with TestClient(app) as client:
        assert client.get("/v1/models").status_code == 200  # the worker serves


def test_a_worker_started_by_hand_names_the_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(workers.SETTINGS_VARIABLE, raising=False)
    with pytest.raises(UserError, match=r"tierwise serve --workers N"):
        workers.app()
