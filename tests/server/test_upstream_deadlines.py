"""Issue 32, part 5: a ``/v1`` client of a dead upstream has its headers at once and its error within
the upstream's first-byte deadline (decision 74); a failure within the first-output wait keeps its
HTTP status (decision 67). A real server on loopback (uvicorn in a thread): the ASGI transport would
hold the headers back until the body is whole."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.silent_upstream import Silent, silent_upstream
from tierwise.budget import Budget
from tierwise.chat.engine import ChatEngine
from tierwise.providers import OpenAICompatProvider, RetryPolicy
from tierwise.server import create_app
from tierwise.server.threaded import serve_in_thread
from tierwise.store import Store

HI = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
DEADLINE = 1.0


@pytest.fixture
def silent() -> Iterator[Silent]:
    with silent_upstream() as server:
        yield server


def served(tmp_path: Path, silent: Silent, wait: float) -> Iterator[str]:
    store = Store.open(f"sqlite:///{tmp_path / 'tierwise.db'}")
    provider = OpenAICompatProvider(
        base_url=silent.url,
        model="m",
        timeout=60.0,
        first_byte_timeout=DEADLINE,
        retry_policy=RetryPolicy(max_retries=3, base_delay=0.01),
    )
    app = create_app(store, ChatEngine(store, provider, budget=Budget(window=4_000, reserve=500)))
    app.state.first_output_wait = wait
    try:
        with serve_in_thread(app) as base:
            yield base
    finally:
        store.close()


def test_a_stream_has_its_headers_at_once_and_the_deadline_error_after(
    tmp_path: Path, silent: Silent
) -> None:
    for base in served(tmp_path, silent, wait=0.05):
        with (
            httpx.Client(base_url=base, timeout=30) as client,
            client.stream("POST", "/v1/chat/completions", json={**HI, "stream": True}) as response,
        ):
            headed = time.monotonic()
            assert response.status_code == 200
            assert response.headers["X-Tierwise-Chat"]
            body = response.read().decode()
            ended = time.monotonic()
    events = [line.removeprefix("data: ") for line in body.splitlines() if line.startswith("data: ")]
    assert "[DONE]" not in events
    error = json.loads(events[-1])["error"]
    assert "TIERWISE_FIRST_BYTE_TIMEOUT" in error["message"], error
    assert ended - headed > DEADLINE / 3  # the headers came well before the error, not with it
    assert silent.accepted == 1


@pytest.mark.parametrize("stream", [False, True])
def test_within_the_wait_the_deadline_is_a_504(tmp_path: Path, silent: Silent, stream: bool) -> None:
    for base in served(tmp_path, silent, wait=30.0):
        with httpx.Client(base_url=base, timeout=30) as client:
            response = client.post("/v1/chat/completions", json={**HI, "stream": stream})
    assert response.status_code == 504
    assert "TIERWISE_FIRST_BYTE_TIMEOUT" in response.json()["error"]["message"]
    assert silent.accepted == 1
