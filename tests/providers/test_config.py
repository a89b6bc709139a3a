"""Settings, the not-configured message, pricing, retry policy, the summarizer adapter, the public API."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

import tierwise.providers
from tests.fake_openai import FakeOpenAI
from tierwise import InputError, UserError
from tierwise.providers import (
    PRICES,
    Cost,
    ModelRequest,
    OpenAICompatProvider,
    Price,
    ProviderNotConfigured,
    ProviderSettings,
    RetryPolicy,
    SyncCompletion,
    Usage,
    cost,
    lookup_price,
)
from tierwise.providers.retry import parse_retry_after
from tierwise.providers.testing import FunctionModel, ScriptedModel
from tierwise.summarize import LLMSummarizer

SUMMARY = "Maya moved the launch review to Friday at 10; the FAQ is due Thursday."
TEXT = "Maya: Move the launch review to Friday. Assistant: Done, Friday at 10. Maya: FAQ by Thursday."


# -- settings ----------------------------------------------------------------------------------


def test_not_configured_names_the_variables_and_examples() -> None:
    with pytest.raises(ProviderNotConfigured) as caught:
        OpenAICompatProvider()
    message = str(caught.value)
    for needed in ("TIERWISE_BASE_URL", "TIERWISE_MODEL", "TIERWISE_API_KEY", "openrouter.ai/api/v1"):
        assert needed in message
    for local in ("localhost:11434/v1", "localhost:1234/v1", "localhost:8001/v1", "api.openai.com/v1"):
        assert local in message
    assert isinstance(caught.value, UserError) and caught.value.missing == [
        "TIERWISE_BASE_URL",
        "TIERWISE_MODEL",
    ]


def test_missing_model_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIERWISE_BASE_URL", "http://localhost:11434/v1")
    monkeypatch.setenv("TIERWISE_MODEL", "  ")
    with pytest.raises(ProviderNotConfigured, match=r"missing TIERWISE_MODEL\)"):
        OpenAICompatProvider()


def test_settings_are_read_when_the_provider_is_built(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIERWISE_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("TIERWISE_MODEL", "main")
    monkeypatch.setenv("TIERWISE_API_KEY", "sk-env")
    monkeypatch.setenv("TIERWISE_FALLBACK_MODELS", "cheap, main ,local")
    monkeypatch.setenv("TIERWISE_TIMEOUT", "12.5")
    monkeypatch.setenv("TIERWISE_MAX_RETRIES", "5")
    p = OpenAICompatProvider()
    assert (p.base_url, p.model, p.models, p.timeout) == (
        "http://127.0.0.1:9/v1",
        "main",
        ["main", "cheap", "local"],
        12.5,
    )
    assert p.retry_policy.max_retries == 5
    assert "sk-env" not in repr(ProviderSettings()) and "sk-env" not in repr(p)
    overridden = OpenAICompatProvider(model="other", fallback_models=[], max_retries=0)
    assert (overridden.models, overridden.retry_policy.max_retries) == (["other"], 0)


def test_fallback_models_as_json(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIERWISE_FALLBACK_MODELS", '["a/b", "c"]')
    assert ProviderSettings().fallback_models == ["a/b", "c"]


def test_bad_environment_values_name_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIERWISE_TIMEOUT", "soon")
    with pytest.raises(InputError, match="TIERWISE_TIMEOUT"):
        OpenAICompatProvider(base_url="http://127.0.0.1:9/v1", model="m")
    monkeypatch.delenv("TIERWISE_TIMEOUT")
    monkeypatch.setenv("TIERWISE_PRICES", "{not json")
    with pytest.raises(InputError, match="TIERWISE_PRICES"):
        cost(Usage(1, 1, 2), "gpt-4o")


# -- pricing -----------------------------------------------------------------------------------


def test_price_lookups() -> None:
    assert lookup_price("gpt-4o-mini") == PRICES["gpt-4o-mini"]
    assert lookup_price("openai/gpt-4o-mini") == PRICES["gpt-4o-mini"]
    assert lookup_price("anthropic/claude-3.5-sonnet") == lookup_price("claude-3.5-sonnet") is not None
    assert lookup_price("GPT-4.1") == PRICES["gpt-4.1"]
    assert lookup_price("meta-llama/llama-3.1-8b-instruct") is not None
    assert lookup_price("my-finetune") is None
    for model in ("gpt-4o", "gpt-4.1-mini", "o3-mini", "anthropic/claude-3.5-sonnet"):
        price = PRICES[model]
        assert 0 < price.input < price.output and (price.cached_input or 0) <= price.input


def test_cost_counts_cached_tokens_at_their_rate() -> None:
    usage = Usage(
        prompt_tokens=2_000_000, completion_tokens=1_000_000, total_tokens=3_000_000, cached_tokens=1_000_000
    )
    assert cost(usage, "gpt-4o", prices={}) == Cost(1.25 * 1 + 2.50 * 1 + 10.0, known=True)
    assert cost(usage, "gpt-3.5-turbo", prices={}) == Cost(0.50 * 2 + 1.50, known=True)  # no cached rate
    assert cost(usage, "who-knows", prices={}) == Cost(0.0, known=False)
    assert cost(usage, "tierwise-offline", prices={}) == Cost(0.0, known=True)  # local: free, not unknown


def test_price_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    usage = Usage(1_000_000, 1_000_000, 2_000_000)
    assert cost(usage, "llama3.1:8b", prices={"llama3.1:8b": Price(0.0, 0.0)}) == Cost(0.0, known=True)
    monkeypatch.setenv(
        "TIERWISE_PRICES",
        json.dumps({"gpt-4o": {"input": 1, "output": 2}, "mine": {"input": 3, "output": 4}}),
    )
    assert cost(usage, "openai/gpt-4o") == Cost(3.0, known=True)
    assert cost(usage, "mine") == Cost(7.0, known=True)
    assert cost(usage, "gpt-4o-mini") == Cost(0.75, known=True)


# -- retries -----------------------------------------------------------------------------------


@given(
    attempt=st.integers(1, 12), base=st.floats(0.001, 2.0), cap=st.floats(0.001, 60.0), jitter=st.floats(0, 1)
)
def test_backoff_is_jittered_within_bounds(attempt: int, base: float, cap: float, jitter: float) -> None:
    policy = RetryPolicy(max_retries=12, base_delay=base, max_delay=cap, rng=lambda: jitter)
    ceiling = min(cap, base * 2 ** (attempt - 1))
    delay = policy.delay(attempt)
    assert delay is not None and ceiling / 2 - 1e-9 <= delay <= ceiling + 1e-9


def test_retry_after_forms() -> None:
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    assert 25 <= (parse_retry_after({"Retry-After": later}) or 0) <= 30
    assert parse_retry_after({"retry-after": "soon"}) is None and parse_retry_after({}) is None
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25


# -- the summarizer adapter --------------------------------------------------------------------


def test_sync_completion_backs_the_llm_summarizer() -> None:
    model = ScriptedModel(SUMMARY)
    summarizer = LLMSummarizer(SyncCompletion(model), model="small-model", max_tokens=200)
    assert summarizer.summarize(TEXT, max_tokens=60) == SUMMARY and summarizer.fallbacks == 0
    [request] = model.requests
    assert (request.model, request.max_tokens, request.messages[-1]["content"]) == ("small-model", 200, TEXT)


def test_llm_summarizer_falls_back_when_the_provider_fails() -> None:
    failing = FunctionModel(lambda request: tierwise.providers.ProviderError("down", status=503))
    summarizer = LLMSummarizer(SyncCompletion(failing), model="m")
    assert summarizer.summarize(TEXT, max_tokens=60) and summarizer.fallbacks == 1


def test_sync_completion_over_the_real_sdk(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(SUMMARY, SUMMARY)
    completion = SyncCompletion(OpenAICompatProvider(base_url=fake_openai.url, model="default"))
    summarizer = LLMSummarizer(completion, model="summaries", max_tokens=120)
    assert summarizer.summarize(TEXT, max_tokens=60) == SUMMARY
    assert summarizer.summarize(TEXT, max_tokens=60) == SUMMARY  # a second event loop, a fresh client
    assert fake_openai.models_requested == ["summaries", "summaries"]
    assert fake_openai.requests[0]["max_tokens"] == 120


def test_sync_completion_inside_a_running_loop() -> None:
    async def main() -> str:
        return SyncCompletion(ScriptedModel("From a loop.")).complete(
            [{"role": "user", "content": "x"}], model="m", max_tokens=5
        )

    assert asyncio.run(main()) == "From a loop."


def test_a_request_is_immutable() -> None:
    request = ModelRequest([{"role": "user", "content": "x"}])
    with pytest.raises(AttributeError):
        request.model = "other"  # type: ignore[misc]


# -- public API --------------------------------------------------------------------------------


def test_public_api_is_sorted_and_complete() -> None:
    names = tierwise.providers.__all__
    rank = {True: 0, False: 1}
    assert names == sorted(names, key=lambda n: (rank[n.isupper()], n[0].islower(), n))
    assert len(set(names)) == len(names) and not [n for n in names if n.startswith("_")]
    for name in names:
        assert hasattr(tierwise.providers, name), name
