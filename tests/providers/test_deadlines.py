"""Issue 32, part 5: a dead upstream is told within the deadline, not after 4 × 60 s.

The upstream accepts and never answers (or refuses); the provider is given a 0.5 s first-byte
deadline and the chat path's 3 retries with a 60 s ``timeout``: the error that comes is the
deadline's, after one attempt, and not the 60 s timeout's."""

from __future__ import annotations

from typing import Any

import anthropic
import httpx2
import openai
import pytest

from tests.silent_upstream import refusing_url, silent_upstream
from tierwise.providers import OpenAICompatProvider, ProviderError, RetryPolicy
from tierwise.providers.anthropic_api import AnthropicProvider, anthropic_error
from tierwise.providers.base import ModelRequest, Retry
from tierwise.providers.http import HTTPProvider
from tierwise.providers.openai_compat import provider_error
from tierwise.providers.responses_api import ResponsesProvider
from tierwise.providers.settings import ProviderSettings

pytestmark = pytest.mark.anyio

ASK = ModelRequest(messages=[{"role": "user", "content": "hi"}])
CHAT_PATH = RetryPolicy(max_retries=3, base_delay=0.01, max_delay=60.0)
KINDS = {"chat": OpenAICompatProvider, "responses": ResponsesProvider, "anthropic": AnthropicProvider}


def provider(kind: str, url: str, **options: Any) -> HTTPProvider[Any]:
    options.setdefault("retry_policy", CHAT_PATH)
    options.setdefault("first_byte_timeout", 0.5)
    return KINDS[kind](base_url=url, api_key="k", model="m", timeout=60.0, **options)  # type: ignore[no-any-return]


@pytest.mark.parametrize("kind", sorted(KINDS))
async def test_a_silent_upstream_is_told_at_the_first_byte_deadline(kind: str) -> None:
    with silent_upstream() as silent:
        p = provider(kind, silent.url, fallback_models=["m2", "m3"])
        with pytest.raises(ProviderError, match="TIERWISE_FIRST_BYTE_TIMEOUT") as caught:
            await p.complete(ASK)
        await p.aclose()
        accepted = silent.accepted
    error = caught.value
    assert error.timed_out and not error.unanswered and error.status is None
    assert "no answer began within 0.5s" in str(error)
    assert accepted == 1  # not retried, no fallback model tried on the same dead server


@pytest.mark.parametrize("kind", sorted(KINDS))
async def test_a_refused_connection_is_retried_and_told_at_once(kind: str) -> None:
    p = provider(kind, refusing_url())
    events: list[Any] = []
    with pytest.raises(ProviderError, match="connection failed") as caught:
        async for event in p.stream(ASK):
            events.append(event)
    await p.aclose()
    assert caught.value.unanswered and not caught.value.timed_out
    assert sum(isinstance(e, Retry) for e in events) == 3  # what the client cannot see: retried


def test_the_deadlines_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIERWISE_CONNECT_TIMEOUT", "2.5")
    monkeypatch.setenv("TIERWISE_FIRST_BYTE_TIMEOUT", "7")
    p = OpenAICompatProvider(ProviderSettings(), base_url="http://127.0.0.1:9/v1", model="m")
    assert (p.connect_timeout, p.first_byte_timeout, p.timeout) == (2.5, 7.0, 60.0)
    assert p._http_timeouts() == {"timeout": 60.0, "connect": 2.5}
    monkeypatch.delenv("TIERWISE_CONNECT_TIMEOUT")
    monkeypatch.delenv("TIERWISE_FIRST_BYTE_TIMEOUT")
    defaults = ProviderSettings()
    # a dead server is told within 30 s: a connect miss retried 3 times (4 × 5 s + backoff), a
    # first-byte miss not retried (20 s)
    assert (defaults.connect_timeout, defaults.first_byte_timeout) == (5.0, 20.0)
    monkeypatch.setenv("TIERWISE_FIRST_BYTE_TIMEOUT", "0")
    with pytest.raises(Exception, match="TIERWISE_FIRST_BYTE_TIMEOUT"):
        ProviderSettings.load()


def test_a_connect_timeout_is_unanswered_a_read_timeout_is_not() -> None:
    request = httpx2.Request("POST", "http://127.0.0.1/v1/chat/completions")
    for sdk, translate in ((openai, provider_error), (anthropic, anthropic_error)):
        for cause, unanswered in ((httpx2.ConnectTimeout("c"), True), (httpx2.ReadTimeout("r"), False)):
            exc = sdk.APITimeoutError(request=request)
            exc.__cause__ = cause
            error = translate(exc, "m")
            assert (error.timed_out, error.unanswered, error.retryable) == (True, unanswered, True)
            assert ("TIERWISE_CONNECT_TIMEOUT" in str(error)) is unanswered
            assert CHAT_PATH.retries(error) is unanswered  # a sent request that timed out is not retried
