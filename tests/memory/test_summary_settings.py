"""Summary model settings and options: defaults, the environment, CLI flags, clear errors (issue 15)."""

from __future__ import annotations

from typing import Any

import pytest
from typer.testing import CliRunner

from tierwise import TokenCounter
from tierwise.chat import terminal
from tierwise.chat.summaries import model_summarizer
from tierwise.cli import app
from tierwise.errors import InputError
from tierwise.memory.blobs import InMemoryBlobStore
from tierwise.providers import ProviderSettings
from tierwise.providers.testing import ScriptedModel
from tierwise.replay import replay_summarizer
from tierwise.summarize import (
    LLMSummarizer,
)

pytestmark = pytest.mark.anyio

COUNTER = TokenCounter()
RUNNER = CliRunner()


# -- settings and options ----------------------------------------------------------------------------


def test_summary_settings_have_defaults_and_read_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = ProviderSettings.load()
    assert (settings.summary_model, settings.summary_max_tokens, settings.summary_input_tokens) == (
        None,
        400,
        6000,
    )
    monkeypatch.setenv("TIERWISE_SUMMARY_MODEL", "gpt-4o-mini")
    monkeypatch.setenv("TIERWISE_SUMMARY_MAX_TOKENS", "250")
    monkeypatch.setenv("TIERWISE_SUMMARY_INPUT_TOKENS", "3000")
    s = model_summarizer(ScriptedModel(model="chat-model"))
    assert s is not None and (s.model, s.max_tokens, s.input_tokens) == ("gpt-4o-mini", 250, 3000)
    assert model_summarizer(ScriptedModel(), model="tiny") is not None
    assert model_summarizer(ScriptedModel(), model="tiny").model == "tiny"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("TIERWISE_SUMMARY_MAX_TOKENS", "-5"),
        ("TIERWISE_SUMMARY_INPUT_TOKENS", "lots"),
        ("TIERWISE_SUMMARY_MAX_TOKENS", "2.5"),
    ],
)
def test_a_bad_summary_setting_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(InputError, match=f"{variable}: .*set it to a whole number of tokens"):
        ProviderSettings.load()


def test_summaries_stay_extractive_without_a_model() -> None:
    from tierwise.workspace.assistant import OfflineAssistant

    assert model_summarizer(OfflineAssistant(), settings=ProviderSettings()) is None
    assert model_summarizer(ScriptedModel(), model="extractive", settings=ProviderSettings()) is None
    with pytest.raises(InputError, match="--summary-model is empty"):
        model_summarizer(ScriptedModel(), model=" ", settings=ProviderSettings())


def test_chat_and_serve_take_summary_model(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    from tierwise.cli_common import assistant as _assistant

    db = f"sqlite:///{tmp_path / 'chat.db'}"
    monkeypatch.setattr(terminal, "make_provider", lambda model=None, **_: ScriptedModel(model="chat-model"))
    monkeypatch.delenv("TIERWISE_SUMMARY_MODEL", raising=False)
    store, _, _, engine, _ = _assistant(db, None, 16_000, summary_model="small")
    try:
        memory = engine.memory_factory(InMemoryBlobStore())
        assert isinstance(memory.summarizer, LLMSummarizer) and memory.summarizer.model == "small"
    finally:
        store.close()
    for option in (None, "extractive"):  # none named: no model calls of tierwise's own (issue 30)
        store, _, _, engine, _ = _assistant(db, None, 16_000, summary_model=option)
        store.close()
        assert engine.memory_factory(InMemoryBlobStore()).summarizer is None


def test_the_offline_assistant_has_extractive_summaries(tmp_path: Any) -> None:
    from tierwise.cli_common import assistant as _assistant

    store, _, provider, engine, _ = _assistant(f"sqlite:///{tmp_path / 'chat.db'}", None, 16_000)
    store.close()
    assert provider.name == "offline" and engine.memory_factory(InMemoryBlobStore()).summarizer is None


@pytest.mark.parametrize("command", [["chat"], ["serve"]])
def test_bad_summary_options_are_one_line_errors(monkeypatch: pytest.MonkeyPatch, command: list[str]) -> None:
    monkeypatch.setattr(terminal, "make_provider", lambda model=None, **_: ScriptedModel())
    result = RUNNER.invoke(app, [*command, "--summary-model", " "])
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: --summary-model is empty") and "Traceback" not in result.output
    monkeypatch.setenv("TIERWISE_SUMMARY_MAX_TOKENS", "-1")
    result = RUNNER.invoke(app, command)
    assert result.exit_code == 2, result.output
    assert (
        result.output.startswith("error: invalid provider settings")
        and "TIERWISE_SUMMARY_MAX_TOKENS" in result.output
    )
    assert "Traceback" not in result.output


def test_replay_takes_summary_model(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    transcript = tmp_path / "t.json"
    transcript.write_text('{"messages": [{"role": "user", "content": "Hi"}]}', encoding="utf-8")
    result = RUNNER.invoke(app, ["replay", str(transcript), "--budget", "2000", "--summary-model", "small"])
    assert result.exit_code == 2, result.output
    assert result.output.startswith(
        "error: summary model 'small' needs a model server: set TIERWISE_BASE_URL"
    )
    assert replay_summarizer(None, COUNTER) is None  # no summary model named: extractive, no model
    monkeypatch.setenv("TIERWISE_BASE_URL", "http://127.0.0.1:9/v1")
    made = replay_summarizer("small", COUNTER)
    assert isinstance(made, LLMSummarizer) and made.model == "small" and not made.background_only
    monkeypatch.setenv("TIERWISE_SUMMARY_MODEL", "env-small")
    assert replay_summarizer(None, COUNTER).model == "env-small"  # type: ignore[union-attr]
    plain = RUNNER.invoke(
        app, ["replay", str(transcript), "--budget", "2000", "--summary-model", "extractive"]
    )
    assert plain.exit_code == 0, plain.output
