from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tierwise.cli import app

RUNNER = CliRunner()
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "conversation.json"


def write(tmp_path: Path, body: object) -> Path:
    path = tmp_path / "in.json"
    path.write_text(json.dumps(body), encoding="utf-8")
    return path


def test_pack_example_prints_a_report() -> None:
    result = RUNNER.invoke(app, ["pack", str(EXAMPLE), "--budget", "4000"])
    assert result.exit_code == 0, result.output
    assert "history" in result.output and "sha256" in result.output


def test_pack_json_has_messages_and_report() -> None:
    result = RUNNER.invoke(app, ["pack", str(EXAMPLE), "--budget", "4000", "--reserve", "500", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    report = data["report"]
    for key in ("total_tokens", "budget", "checksum", "layers", "dropped", "truncated"):
        assert key in report
    assert report["budget"] == 3500 and report["total_tokens"] <= 3500
    assert data["messages"][-1]["role"] == "user"
    again = json.loads(
        RUNNER.invoke(app, ["pack", str(EXAMPLE), "--budget", "4000", "--reserve", "500", "--json"]).output
    )
    assert again == data


def test_pack_with_health_applies_a_band() -> None:
    result = RUNNER.invoke(app, ["pack", str(EXAMPLE), "--budget", "100000", "--health", "0.5", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)["report"]
    assert report["band"] == "warning"
    history = next(r for r in report["layers"] if r["id"] == "history")
    assert history["messages"] <= 2


@pytest.mark.parametrize(
    ("args", "body", "needle"),
    [
        (["--budget", "100"], None, "no such file"),
        (["--budget", "0"], {"messages": [{"role": "user", "content": "hi"}]}, "positive number of tokens"),
        (["--budget", "-5"], {"messages": [{"role": "user", "content": "hi"}]}, "positive number of tokens"),
        (
            ["--budget", "100", "--reserve", "100"],
            {"messages": [{"role": "user", "content": "hi"}]},
            "reserve",
        ),
        (
            ["--budget", "100"],
            {"messages": [{"role": "bot", "content": "hi"}]},
            "messages[0].role: unknown role 'bot'",
        ),
        (["--budget", "100"], {"messages": []}, "give at least one message"),
        (["--budget", "100"], {"msgs": []}, 'missing "messages"'),
        (["--budget", "100"], [1, 2], "must be a JSON object"),
        (["--budget", "100"], {"messages": [{"role": "tool", "content": "x"}]}, "tool_call_id"),
        (
            ["--budget", "100", "--encoding", "gpt2"],
            {"messages": [{"role": "user", "content": "hi"}]},
            "unknown encoding",
        ),
        (
            ["--budget", "100", "--health", "3"],
            {"messages": [{"role": "user", "content": "hi"}]},
            "between 0 and 1",
        ),
        (["--budget", "5"], {"messages": [{"role": "user", "content": "hello there " * 20}]}, "over by"),
        (
            ["--budget", "100"],
            {"messages": [{"role": "user", "content": "hi"}], "tools": [{"name": "x"}]},
            "tools[0].function",
        ),
    ],
)
def test_bad_input_is_one_line_naming_the_fix(
    tmp_path: Path, args: list[str], body: object, needle: str
) -> None:
    path = tmp_path / "missing.json" if body is None else write(tmp_path, body)
    result = RUNNER.invoke(app, ["pack", str(path), *args])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert needle in lines[0]
    assert "Traceback" not in result.output


def test_invalid_json_names_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{"messages": [', encoding="utf-8")
    result = RUNNER.invoke(app, ["pack", str(path), "--budget", "100"])
    assert result.exit_code == 2
    assert "not valid JSON (line 1" in result.output


def test_directory_and_non_utf8_inputs(tmp_path: Path) -> None:
    assert "is a directory" in RUNNER.invoke(app, ["pack", str(tmp_path), "--budget", "100"]).output
    path = tmp_path / "latin1.json"
    path.write_bytes('{"messages": [{"role": "user", "content": "caf\xe9"}]}'.encode("latin-1"))
    result = RUNNER.invoke(app, ["pack", str(path), "--budget", "100"])
    assert result.exit_code == 2 and "not UTF-8" in result.output


def test_non_integer_budget_is_a_usage_error(tmp_path: Path) -> None:
    path = write(tmp_path, {"messages": [{"role": "user", "content": "hi"}]})
    result = RUNNER.invoke(app, ["pack", str(path), "--budget", "lots"])
    assert result.exit_code == 2
    assert "Traceback" not in result.output


def _said(output: str) -> str:
    """``output`` on one line: rich's error box and wrapping taken out."""
    return " ".join(output.replace("│", " ").replace("╭", " ").replace("╰", " ").split())


@pytest.fixture
def not_serving(monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    """``serve`` builds its app and stops there: what it would have served is kept."""
    import uvicorn

    served: dict[str, object] = {}
    monkeypatch.setattr(uvicorn, "run", lambda service, **_: served.setdefault("app", service))
    return served


def test_serve_reserve_is_validated(tmp_path: Path, not_serving: dict[str, object]) -> None:
    db = f"sqlite:///{tmp_path / 'serve.db'}"
    for args, needle in (
        (["--reserve", "0"], "Invalid value for '--reserve'"),
        (["--reserve", "-3"], "Invalid value for '--reserve'"),
        (["--reserve", "lots"], "Invalid value for '--reserve'"),
        (
            ["--reserve", "16000"],
            "16,000 leaves nothing of the web chat's 16,000-token budget for the prompt",
        ),
        (["--budget", "8000", "--reserve", "9000"], "9,000 leaves nothing of --budget 8,000 for the prompt"),
    ):
        result = RUNNER.invoke(app, ["serve", "--db", db, *args])
        assert result.exit_code == 2 and needle in _said(result.output), (args, result.output)
        assert "Traceback" not in result.output
    assert not not_serving


def test_serve_reserve_and_budget_reach_the_engine(tmp_path: Path, not_serving: dict[str, object]) -> None:
    from tierwise.budget import Budget

    db = f"sqlite:///{tmp_path / 'serve.db'}"
    for args, budget, chosen in (
        ([], Budget(16_000, 1_000), False),  # none set: /v1 uses the model's window
        (["--reserve", "4000"], Budget(16_000, 4_000), False),
        (["--budget", "32000", "--reserve", "2000"], Budget(32_000, 2_000), True),
    ):
        not_serving.clear()
        result = RUNNER.invoke(app, ["serve", "--db", db, *args])
        assert result.exit_code == 0, result.output
        engine = not_serving["app"].state.engine  # type: ignore[attr-defined]
        assert (engine.budget, engine.budget_set) == (budget, chosen), args
    help_text = _said(RUNNER.invoke(app, ["serve", "--help"]).output)
    assert "--reserve" in help_text and "max_tokens" in help_text and "model's window" in help_text


def test_serve_names_a_bad_tierwise_models(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, not_serving: dict[str, object]
) -> None:
    (tmp_path / "models.toml").write_text("[my-model\nwindow = 1", encoding="utf-8")
    monkeypatch.setenv("TIERWISE_MODELS", str(tmp_path / "models.toml"))
    result = RUNNER.invoke(app, ["serve", "--db", f"sqlite:///{tmp_path / 'serve.db'}"])
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: TIERWISE_MODELS file") and "is not valid TOML" in result.output
    assert not not_serving
