"""Issue 30: the upstream's errors reach a ``/v1`` client as the upstream gave them, and the gateway
retries only what the client cannot see. Driven by the official ``openai`` SDK against the fake
upstream on loopback (:mod:`tests.fake_openai`); the provider is given the chat path's retry policy
(3 retries), which the gateway must not use."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import openai
import pytest

from tests.fake_openai import FakeOpenAI, FakeReply, fake_openai
from tierwise.budget import Budget
from tierwise.chat.engine import ChatEngine
from tierwise.providers import OpenAICompatProvider, RetryPolicy
from tierwise.server import create_app
from tierwise.server.threaded import free_port
from tierwise.store import Store

__all__ = ["fake_openai"]

pytestmark = pytest.mark.anyio

HI = [{"role": "user", "content": "hi"}]
CHAT_PATH = RetryPolicy(max_retries=3, base_delay=0.01, max_delay=60.0)
"""What the chat engine's provider retries: 408 / 429 / 5xx / timeouts / connections, 3 times."""


@pytest.fixture
def store() -> Iterator[Store]:
    opened = Store.open("sqlite://")
    yield opened
    opened.close()


class Gateway:
    """tierwise's app over ``provider``, and the official SDK pointed at it (in-process)."""

    def __init__(self, store: Store, provider: OpenAICompatProvider) -> None:
        engine = ChatEngine(store, provider, budget=Budget(window=4_000, reserve=500))
        self.app = create_app(store, engine)
        self.calls = 0  # HTTP requests the client sent to tierwise (its retries too)

    async def _count(self, request: httpx.Request) -> None:
        self.calls += 1

    def http(self) -> httpx.AsyncClient:
        transport = httpx.ASGITransport(app=self.app)
        return httpx.AsyncClient(
            transport=transport, base_url="http://test", event_hooks={"request": [self._count]}
        )

    @asynccontextmanager
    async def client(self, max_retries: int = 0) -> AsyncIterator[openai.AsyncOpenAI]:
        async with self.http() as http:
            yield openai.AsyncOpenAI(
                base_url="http://test/v1", api_key="x", http_client=http, max_retries=max_retries
            )


def upstream(fake: FakeOpenAI, **options: Any) -> OpenAICompatProvider:
    options.setdefault("retry_policy", CHAT_PATH)
    return OpenAICompatProvider(base_url=fake.url, api_key="k", model="fake-model", **options)


async def create(client: openai.AsyncOpenAI, *, stream: bool = False, **options: Any) -> str:
    """One client call: the answer's text (a stream read to its end)."""
    if not stream:
        completion = await client.chat.completions.create(model="m", messages=HI, **options)  # type: ignore[arg-type]
        return completion.choices[0].message.content or ""
    chunks = await client.chat.completions.create(model="m", messages=HI, stream=True, **options)  # type: ignore[arg-type]
    return "".join([c.choices[0].delta.content or "" async for c in chunks if c.choices])


# -- statuses pass through -----------------------------------------------------------------------


RATE_LIMITED = {
    "error": {
        "message": "Rate limit reached for gpt-4o-mini on requests per min (RPM): Limit 3, Used 3.",
        "type": "requests",
        "param": None,
        "code": "rate_limit_exceeded",
    }
}


async def test_upstream_429_is_a_rate_limit_error_with_its_retry_after(
    store: Store, fake_openai: FakeOpenAI
) -> None:
    wait = {"retry-after": "1", "retry-after-ms": "20"}
    gateway = Gateway(store, upstream(fake_openai))
    fake_openai.fail(429, times=2, body=RATE_LIMITED, headers=wait)
    async with gateway.client() as client:
        for stream in (False, True):
            with pytest.raises(openai.RateLimitError) as caught:
                await create(client, stream=stream)
            error = caught.value
            assert error.status_code == 429  # was a 502 the client never backed off from
            assert error.response.headers["retry-after"] == "1"
            assert error.response.headers["retry-after-ms"] == "20"
            assert error.message.endswith(RATE_LIMITED["error"]["message"])
            assert (error.type, error.code) == ("requests", "rate_limit_exceeded")
    assert len(fake_openai.requests) == 2  # one upstream request per client call (was 4)

    # The SDK's default policy retries a 429 twice (after retry-after-ms): 3 calls, 3 upstream requests.
    fake_openai.requests.clear()
    fake_openai.fail(429, times=3, body=RATE_LIMITED, headers=wait)
    gateway.calls = 0
    async with gateway.client(max_retries=2) as client:
        with pytest.raises(openai.RateLimitError):
            await create(client)
    assert gateway.calls == 3
    assert len(fake_openai.requests) == gateway.calls  # was 12: the SDK's 3 × tierwise's 4


async def test_upstream_500_reaches_the_client_with_its_message(
    store: Store, fake_openai: FakeOpenAI
) -> None:
    said = "The server had an error while processing your request. Sorry about that!"
    fake_openai.fail(500, times=2, body={"error": {"message": said, "type": "server_error", "code": None}})
    fake_openai.fail(503, body="upstream connect error or disconnect/reset before headers")
    gateway = Gateway(store, upstream(fake_openai))
    async with gateway.client() as client:
        for stream in (False, True):
            with pytest.raises(openai.InternalServerError) as caught:
                await create(client, stream=stream)
            assert caught.value.status_code == 500
            assert caught.value.message == f"Error code: 500 - {said}" and caught.value.type == "server_error"
        with pytest.raises(openai.InternalServerError) as wrapped:  # not OpenAI-shaped: its text, wrapped
            await create(client)
    assert wrapped.value.status_code == 503
    assert wrapped.value.body == {
        "message": "upstream connect error or disconnect/reset before headers",
        "type": "upstream_error",
        "param": None,
        "code": None,
    }
    assert len(fake_openai.requests) == 3  # 5xx is the client's to retry, not tierwise's


async def test_upstream_400_keeps_its_message_and_param(store: Store, fake_openai: FakeOpenAI) -> None:
    said = "Invalid 'messages[0].content': string too long. Expected a string with maximum length 1048576."
    error = {"message": said, "type": "invalid_request_error", "param": "messages[0].content", "code": None}
    fake_openai.fail(400, times=2, body={"error": {**error, "code": "string_above_max_length"}})
    gateway = Gateway(store, upstream(fake_openai))
    async with gateway.client() as client:
        for stream in (False, True):
            with pytest.raises(openai.BadRequestError) as caught:
                await create(client, stream=stream)
            assert caught.value.body == {
                **error,
                "code": "string_above_max_length",
            }  # as the upstream sent it
            assert caught.value.param == "messages[0].content" and said in caught.value.message


async def test_upstream_401_is_a_502_naming_tierwises_key(store: Store, fake_openai: FakeOpenAI) -> None:
    said = "Incorrect API key provided: k. You can find your API key at https://platform.openai.com."
    fake_openai.fail(401, body={"error": {"message": said, "type": "invalid_request_error"}})
    gateway = Gateway(store, upstream(fake_openai))
    async with gateway.client() as client:
        with pytest.raises(openai.InternalServerError) as caught:  # not the client's key: not a 401
            await create(client)
    assert caught.value.status_code == 502
    assert "TIERWISE_API_KEY" in caught.value.message and said in caught.value.message


# -- retries: only what the client cannot see ----------------------------------------------------


class RefuseFirst(httpx.AsyncBaseTransport):
    """Sends the first ``refusals`` requests to a port nobody listens on (a real refused connection)."""

    def __init__(self, refusals: int) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.refusals = refusals
        self.attempts = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.attempts += 1
        if self.refusals:
            self.refusals -= 1
            request.url = request.url.copy_with(port=free_port())
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


def refusing(fake: FakeOpenAI, refusals: int) -> tuple[OpenAICompatProvider, RefuseFirst]:
    transport = RefuseFirst(refusals)
    sdk = openai.AsyncOpenAI(
        base_url=fake.url, api_key="k", http_client=httpx.AsyncClient(transport=transport)
    )
    return upstream(fake, client=sdk), transport


async def test_a_refused_connection_is_retried_once(store: Store, fake_openai: FakeOpenAI) -> None:
    fake_openai.script("Second time lucky.", "Lucky again.")
    provider, transport = refusing(fake_openai, refusals=1)
    async with Gateway(store, provider).client() as client:
        assert await create(client) == "Second time lucky."
    assert transport.attempts == 2 and len(fake_openai.requests) == 1

    provider, transport = refusing(fake_openai, refusals=2)
    async with Gateway(store, provider).client() as client:
        with pytest.raises(openai.InternalServerError) as caught:
            await create(client, stream=True)
    assert caught.value.status_code == 502 and caught.value.code == "upstream_error"
    assert transport.attempts == 2  # one retry, not three

    # The client says it is retrying itself: tierwise does not.
    provider, transport = refusing(fake_openai, refusals=1)
    async with Gateway(store, provider).client() as client:
        with pytest.raises(openai.InternalServerError):
            await create(client, extra_headers={"x-stainless-retry-count": "1"})
    assert transport.attempts == 1
    provider, transport = refusing(fake_openai, refusals=1)
    async with Gateway(store, provider).client(max_retries=1) as client:  # the SDK's retry: one each
        assert await create(client) == "Lucky again."
    assert transport.attempts == 2


async def test_a_timeout_is_one_timeout_and_a_504(store: Store, fake_openai: FakeOpenAI) -> None:
    fake_openai.script(FakeReply(text="far too slow", delay=2.0))  # a role chunk, then silence
    gateway = Gateway(store, upstream(fake_openai, timeout=0.3))
    started = time.monotonic()
    async with gateway.client() as client:
        with pytest.raises(openai.InternalServerError) as caught:
            await create(client, stream=True)
    elapsed = time.monotonic() - started
    assert caught.value.status_code == 504 and caught.value.code == "upstream_timeout"
    assert len(fake_openai.requests) == 1  # was 4 timeouts, then a 502
    assert elapsed < 1.5  # one timeout of 0.3 s (four were 1.2 s and more)


# -- streams ------------------------------------------------------------------------------------


async def test_a_stream_that_breaks_midway_raises_in_the_client(
    store: Store, fake_openai: FakeOpenAI
) -> None:
    said = {
        "message": "The model is overloaded. Please try again later.",
        "type": "server_error",
        "code": "overloaded",
    }
    fake_openai.script(
        FakeReply(text="Half an answer that", error_event=said),
        FakeReply(text="Half an answer that never", cut_after=3),
    )
    gateway = Gateway(store, upstream(fake_openai))
    seen: list[str] = []
    async with gateway.client() as client:
        stream = await client.chat.completions.create(model="m", messages=HI, stream=True)  # type: ignore[arg-type]
        with pytest.raises(openai.APIError) as caught:
            async for chunk in stream:
                seen.append(chunk.choices[0].delta.content or "" if chunk.choices else "")
    assert "".join(seen) == "Half an answer that"
    assert caught.value.message == said["message"]  # the upstream's error event, as it sent it
    assert (caught.value.type, caught.value.code) == ("server_error", "overloaded")

    body = {"messages": HI, "stream": True}
    async with gateway.http() as http, http.stream("POST", "/v1/chat/completions", json=body) as raw:
        assert raw.status_code == 200  # a stream cut off upstream: an error event, and no [DONE]
        text = "".join([piece async for piece in raw.aiter_text()])
    events = [line for line in text.splitlines() if line.startswith("data: ")]
    assert '"error"' in events[-1] and "ended before the model finished" in events[-1]
    assert "[DONE]" not in text  # [DONE] says the answer is whole
    assert len(fake_openai.requests) == 2  # neither retried
