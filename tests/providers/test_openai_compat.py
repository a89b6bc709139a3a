"""OpenAICompatProvider through the real openai SDK against the fake server on loopback."""

from __future__ import annotations

import json
import socket
import time
from typing import Any

import openai
import pytest

from tests.fake_openai import FakeOpenAI, FakeReply
from tierwise.providers import (
    Done,
    Fallback,
    ModelRequest,
    ModelRequestsBlocked,
    OpenAICompatProvider,
    ProviderError,
    Retry,
    RetryPolicy,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
    collect,
)
from tierwise.providers.testing import model_requests_allowed

pytestmark = pytest.mark.anyio

FAST = RetryPolicy(max_retries=3, base_delay=0.001, max_delay=1.0)
ASK = ModelRequest([{"role": "user", "content": "What is due today?"}])
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_tasks",
            "description": "Tasks with filters",
            "parameters": {"type": "object", "properties": {"status": {"type": "string"}}},
        },
    }
]


def provider(fake: FakeOpenAI, **options: Any) -> OpenAICompatProvider:
    options.setdefault("model", "primary")
    options.setdefault("retry_policy", FAST)
    return OpenAICompatProvider(base_url=fake.url, **options)


async def events_of(p: OpenAICompatProvider, request: ModelRequest = ASK) -> list[Any]:
    return [event async for event in p.stream(request)]


async def test_streamed_text_and_the_request_sent(fake_openai: FakeOpenAI) -> None:
    fake_openai.script("Two tasks are due: the venue and the FAQ.")
    request = ModelRequest(
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Due today?"}],
        tools=TOOLS,
        max_tokens=256,
        temperature=0.2,
    )
    events = await events_of(provider(fake_openai), request)
    texts = [e.text for e in events if isinstance(e, TextDelta)]
    assert len(texts) > 3 and "".join(texts) == "Two tasks are due: the venue and the FAQ."
    assert events[-1] == Done("stop", "primary")
    [sent] = fake_openai.requests
    assert sent["messages"] == request.messages and sent["tools"] == TOOLS
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}
    assert (sent["model"], sent["max_tokens"], sent["temperature"]) == ("primary", 256, 0.2)


async def test_no_tools_no_limits_are_not_sent(fake_openai: FakeOpenAI) -> None:
    fake_openai.script("ok.")
    await events_of(provider(fake_openai))
    assert not {"tools", "max_tokens", "temperature"} & set(fake_openai.requests[0])


async def test_max_tokens_param_is_configurable(fake_openai: FakeOpenAI) -> None:
    fake_openai.script("ok.")
    p = provider(fake_openai, max_tokens_param="max_completion_tokens")
    await p.complete(ModelRequest(ASK.messages, max_tokens=50))
    assert fake_openai.requests[0]["max_completion_tokens"] == 50


@pytest.mark.parametrize("interleave", [False, True])
async def test_parallel_tool_calls_split_across_chunks(fake_openai: FakeOpenAI, interleave: bool) -> None:
    calls = [
        {"id": "call_a", "name": "get_tasks", "arguments": {"status": "due", "project": "Offsite 2025"}},
        {"id": "call_b", "name": "get_calendar_events", "arguments": {"start_date": "2025-06-02"}},
    ]
    fake_openai.script(FakeReply(tool_calls=calls, pieces=4, interleave=interleave))
    events = await events_of(provider(fake_openai), ModelRequest(ASK.messages, tools=TOOLS))
    deltas = [e for e in events if isinstance(e, ToolCallDelta)]
    assert len(deltas) == 8
    for index, call in enumerate(calls):
        mine = [d for d in deltas if d.index == index]
        assert (mine[0].id, mine[0].name) == (call["id"], call["name"])
        assert all(d.id is None and d.name is None for d in mine[1:])
        assert "".join(d.arguments_delta for d in mine) == json.dumps(call["arguments"])
    complete = [e for e in events if isinstance(e, ToolCall)]
    assert [(c.id, c.name, c.parsed_arguments()) for c in complete] == [
        (c["id"], c["name"], c["arguments"]) for c in calls
    ]
    assert events[-1] == Done("tool_calls", "primary")

    async def replay() -> Any:  # collect() builds the same calls from the deltas alone
        for event in events:
            if not isinstance(event, ToolCall):
                yield event

    assert (await collect(replay())).tool_calls == complete


async def test_usage_chunk_becomes_usage(fake_openai: FakeOpenAI) -> None:
    usage = {"prompt_tokens": 1200, "completion_tokens": 40, "total_tokens": 1240, "cached_tokens": 1024}
    fake_openai.script(FakeReply(text="Done.", usage=usage))
    response = await provider(fake_openai).complete(ASK)
    assert response.usage == Usage(1200, 40, 1240, cached_tokens=1024)
    assert (response.text, response.model, response.finish_reason) == ("Done.", "primary", "stop")


async def test_5xx_is_retried_then_succeeds(fake_openai: FakeOpenAI) -> None:
    fake_openai.fail(500, times=2)
    fake_openai.script("Recovered.")
    response = await provider(fake_openai).complete(ASK)
    assert response.text == "Recovered."
    assert len(fake_openai.requests) == 3
    assert [(r.model, r.attempt) for r in response.retries] == [("primary", 1), ("primary", 2)]
    assert "HTTP 500" in response.retries[0].error and not response.fallbacks


async def test_retry_after_is_honoured(fake_openai: FakeOpenAI) -> None:
    fake_openai.fail(429, retry_after=0.2)
    fake_openai.script("After the wait.")
    started = time.monotonic()
    response = await provider(fake_openai).complete(ASK)
    assert time.monotonic() - started >= 0.2
    assert [r.delay for r in response.retries] == [0.2]
    assert response.text == "After the wait." and len(fake_openai.requests) == 2


async def test_retry_after_longer_than_allowed_stops_retrying(fake_openai: FakeOpenAI) -> None:
    fake_openai.fail(429, retry_after=120)
    with pytest.raises(ProviderError) as caught:
        await provider(fake_openai).complete(ASK)
    assert (caught.value.status, caught.value.retry_after) == (429, 120.0)
    assert len(fake_openai.requests) == 1


async def test_exhausted_retries_fall_back_to_the_next_model(fake_openai: FakeOpenAI) -> None:
    fake_openai.fail(503, times=3, model="big")
    fake_openai.script(FakeReply(text="From the small model.", model="small"))
    p = provider(fake_openai, model="big", fallback_models=["small"], retry_policy=RetryPolicy(2, 0.001))
    events = await events_of(p)
    assert fake_openai.models_requested == ["big", "big", "big", "small"]
    [fallback] = [e for e in events if isinstance(e, Fallback)]
    assert (fallback.from_model, fallback.to_model) == ("big", "small") and "503" in fallback.error
    assert len([e for e in events if isinstance(e, Retry)]) == 2
    assert events[-1] == Done("stop", "small")
    # the notices come before any output
    first_output = next(i for i, e in enumerate(events) if isinstance(e, TextDelta))
    assert all(isinstance(e, Retry | Fallback) for e in events[:first_output])


async def test_non_retryable_error_carries_status_and_body(fake_openai: FakeOpenAI) -> None:
    body = {"error": {"message": "Invalid 'messages[0].role': 'robot'", "type": "invalid_request_error"}}
    fake_openai.fail(400, body=body)
    with pytest.raises(ProviderError) as caught:
        await provider(fake_openai).complete(ASK)
    error = caught.value
    assert (error.status, error.retryable, error.model) == (400, False, "primary")
    assert error.body is not None and json.loads(error.body) == body
    assert not isinstance(error, openai.OpenAIError) and isinstance(error.__cause__, openai.BadRequestError)
    assert len(fake_openai.requests) == 1


async def test_non_retryable_error_falls_back_without_retrying(fake_openai: FakeOpenAI) -> None:
    fake_openai.fail(404, model="gone")
    fake_openai.script(FakeReply(text="Here.", model="backup"))
    response = await provider(fake_openai, model="gone", fallback_models=["backup"]).complete(ASK)
    assert fake_openai.models_requested == ["gone", "backup"]
    assert (response.model, [f.to_model for f in response.fallbacks]) == ("backup", ["backup"])


async def test_request_model_overrides_the_default_and_keeps_fallbacks(fake_openai: FakeOpenAI) -> None:
    fake_openai.fail(400, model="special")
    fake_openai.script("ok.")
    p = provider(fake_openai, model="default", fallback_models=["cheap"])
    response = await p.complete(ModelRequest(ASK.messages, model="special"))
    assert fake_openai.models_requested == ["special", "default"] and response.model == "default"


async def test_every_model_failing_lists_the_attempts(fake_openai: FakeOpenAI) -> None:
    fake_openai.fail(500, times=2, model="a")
    fake_openai.fail(401, model="b")
    p = provider(fake_openai, model="a", fallback_models=["b"], retry_policy=RetryPolicy(1, 0.001))
    with pytest.raises(ProviderError) as caught:
        await p.complete(ASK)
    assert [(m, e.status) for m, e in caught.value.attempts] == [("a", 500), ("b", 401)]
    assert caught.value.status == 401 and "every model failed" in str(caught.value)


async def test_dropped_connection_before_output_is_retried(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(FakeReply(text="lost", cut_after=1), "Second time lucky.")
    response = await provider(fake_openai).complete(ASK)
    assert response.text == "Second time lucky." and len(fake_openai.requests) == 2


async def test_failure_after_output_is_raised_not_retried(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(FakeReply(text="Half an answer that never", cut_after=3), "unused")
    p = provider(fake_openai, fallback_models=["other"])
    seen: list[Any] = []
    with pytest.raises(ProviderError, match="ended before the model finished"):
        async for event in p.stream(ASK):
            seen.append(event)
    assert [type(e) for e in seen] == [TextDelta, TextDelta]
    assert len(fake_openai.requests) == 1


async def test_error_event_mid_stream(fake_openai: FakeOpenAI) -> None:
    upstream = {"message": "upstream overloaded", "code": 502}
    fake_openai.script(FakeReply(error_event=upstream), "After the error event.")
    assert (await provider(fake_openai).complete(ASK)).text == "After the error event."
    fake_openai.script(FakeReply(text="Partial ", error_event={"message": "moderation", "code": 403}))
    with pytest.raises(ProviderError, match="moderation") as caught:
        await provider(fake_openai).complete(ASK)
    assert caught.value.status == 403 and "moderation" in (caught.value.body or "")


async def test_timeout_is_a_retryable_provider_error(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(FakeReply(text="too slow to matter", delay=1.0))
    p = provider(fake_openai, timeout=0.2, retry_policy=RetryPolicy(0))
    with pytest.raises(ProviderError, match="timed out") as caught:
        await p.complete(ASK)
    assert (caught.value.status, caught.value.retryable) == (None, True)


async def test_stopping_mid_stream_closes_promptly(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(FakeReply(text=" ".join(["word"] * 50), delay=0.1))
    started = time.monotonic()
    stream = provider(fake_openai).stream(ASK)
    async for event in stream:
        if isinstance(event, TextDelta):
            break
    await stream.aclose()  # type: ignore[attr-defined]
    assert time.monotonic() - started < 1.0


async def test_list_models(fake_openai: FakeOpenAI) -> None:
    fake_openai.models = ["gpt-4o-mini", "llama3.1:8b"]
    assert await provider(fake_openai).list_models() == ["gpt-4o-mini", "llama3.1:8b"]


async def test_guard_blocks_non_loopback_without_connecting(monkeypatch: pytest.MonkeyPatch) -> None:
    attempts: list[object] = []

    def record(*args: object, **kwargs: object) -> list[object]:
        attempts.append(args)
        return []

    monkeypatch.setattr(socket.socket, "connect", record)
    monkeypatch.setattr(socket, "getaddrinfo", record)
    p = OpenAICompatProvider(base_url="https://openrouter.ai/api/v1", model="openai/gpt-4o-mini", api_key="k")
    with pytest.raises(ModelRequestsBlocked, match="ALLOW_MODEL_REQUESTS"):
        await p.complete(ASK)
    with pytest.raises(ModelRequestsBlocked):
        await p.list_models()
    assert attempts == []


async def test_guard_off_lets_the_request_through(fake_openai: FakeOpenAI) -> None:
    # With the guard off the request reaches the socket layer (which the root conftest confines to
    # loopback), so the failure is a connection error, not ModelRequestsBlocked.
    p = OpenAICompatProvider(base_url="http://203.0.113.7:9/v1", model="m", retry_policy=RetryPolicy(0))
    with model_requests_allowed(True), pytest.raises(ProviderError, match="connection failed") as caught:
        await p.complete(ASK)
    assert caught.value.retryable and caught.value.status is None


async def test_loopback_is_allowed_while_blocked(fake_openai: FakeOpenAI) -> None:
    fake_openai.script("local")
    url = fake_openai.url.replace("127.0.0.1", "localhost")
    assert (await provider(fake_openai).complete(ASK)).text == "local"
    assert OpenAICompatProvider(base_url=url, model="m").base_url == url


async def test_a_given_client_is_used_without_sdk_retries(fake_openai: FakeOpenAI) -> None:
    fake_openai.fail(500)
    fake_openai.script("ok.")
    client = openai.AsyncOpenAI(base_url=fake_openai.url, api_key="sk-test", max_retries=5)
    p = OpenAICompatProvider(client=client, model="m", retry_policy=RetryPolicy(0))
    with pytest.raises(ProviderError):
        await p.complete(ASK)
    assert len(fake_openai.requests) == 1 and p.base_url == fake_openai.url + "/"
    assert fake_openai.headers[0]["authorization"] == "Bearer sk-test"
    await client.close()


async def test_api_key_is_sent(fake_openai: FakeOpenAI) -> None:
    fake_openai.script("ok.", "ok.")
    async with provider(fake_openai, api_key="sk-secret") as p:
        await p.complete(ASK)
    await provider(fake_openai).complete(ASK)
    assert [h["authorization"] for h in fake_openai.headers] == ["Bearer sk-secret", "Bearer not-needed"]


async def test_fake_server_non_streaming_path(fake_openai: FakeOpenAI) -> None:
    calls = [{"id": "c1", "name": "get_tasks", "arguments": {"status": "due"}}]
    fake_openai.script(FakeReply(tool_calls=calls))
    async with openai.AsyncOpenAI(base_url=fake_openai.url, api_key="k", max_retries=0) as client:
        completion = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x"}]
        )
    message = completion.choices[0].message
    assert message.tool_calls is not None
    assert message.tool_calls[0].model_dump()["function"]["arguments"] == '{"status": "due"}'
    assert completion.choices[0].finish_reason == "tool_calls" and completion.usage is not None
