"""The OpenAI-compatible proxy under load: 50 concurrent streaming clients on loopback.

The service (``tierwise.server``) runs in uvicorn on 127.0.0.1 with a fake upstream model inside
it that streams a fixed answer (``chunks`` pieces, ``delay_ms`` apart) and records how long its own
stream took for each request. Each client is an ``httpx`` streaming client with its own session,
sending a 20-message conversation that grows by one exchange per request, ``stream: true``, and
reading to ``[DONE]``. *Added latency* is the client's time from sending to ``[DONE]`` minus the
upstream's own stream time for that request: what tierwise adds (parse, store, pack with memory,
re-stream, store the answer) plus loopback HTTP. The run is bounded in requests and seconds.
"""

from __future__ import annotations

import asyncio
import json
import math
import socket
import tempfile
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console

from tierwise.budget import Budget
from tierwise.chat.engine import ChatEngine
from tierwise.providers.base import Done, Event, ModelRequest, Provider, TextDelta, Usage
from tierwise.server import create_app
from tierwise.store import Store

__all__ = ["run"]

TARGET_P99_MS = 10.0


class TimedUpstream(Provider):
    """A fake upstream: streams ``chunks`` pieces ``delay_ms`` apart; records its time per request id."""

    name, model = "fake-upstream", "fake-upstream"

    def __init__(self, chunks: int, delay_ms: float) -> None:
        self.chunks, self.delay = chunks, delay_ms / 1000
        self.spent: dict[str, float] = {}

    async def stream(self, request: ModelRequest) -> AsyncIterator[Event]:
        """Stream the answer and record the time spent inside this stream."""
        started = time.perf_counter()
        last = str(request.messages[-1].get("content", ""))
        for i in range(self.chunks):
            if i:
                await asyncio.sleep(self.delay)
            yield TextDelta(f"word{i} ")
        yield Usage(100, self.chunks, 100 + self.chunks)
        yield Done("stop", self.model)
        self.spent[last] = time.perf_counter() - started


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


async def _client(
    base: str, index: int, requests: int, deadline: float, upstream: TimedUpstream, out: list[float]
) -> None:
    history: list[dict[str, str]] = [{"role": "system", "content": "You are a concise assistant."}]
    for turn in range(10):
        history += [
            {"role": "user", "content": f"Earlier question {turn} about the offsite budget and venue."},
            {"role": "assistant", "content": f"Earlier answer {turn}: the venue holds forty people."},
        ]
    async with httpx.AsyncClient(base_url=base, timeout=30) as client:
        for n in range(requests):
            if time.monotonic() > deadline:
                return
            question = f"client {index} request {n}: what is left?"
            body = {
                "model": "any",
                "stream": True,
                "messages": [*history, {"role": "user", "content": question}],
            }
            started = time.perf_counter()
            answer = []
            async with client.stream(
                "POST", "/v1/chat/completions", json=body, headers={"X-Tierwise-Session": f"load-{index}"}
            ) as response:
                response.raise_for_status()
                async for line in response.aiter_lines():
                    if line == "data: [DONE]":
                        break
                    if line.startswith("data: "):
                        chunk = json.loads(line[6:])
                        for choice in chunk.get("choices", []):
                            answer.append(choice.get("delta", {}).get("content") or "")
            total = time.perf_counter() - started
            out.append((total - upstream.spent.get(question, 0.0)) * 1000)
            history += [
                {"role": "user", "content": question},
                {"role": "assistant", "content": "".join(answer)},
            ]


def run(
    *,
    clients: int = 50,
    requests: int = 20,
    seconds: float = 120,
    chunks: int = 20,
    delay_ms: float = 2.0,
    out: Path | None = None,
    console: Console | None = None,
) -> dict[str, Any]:
    """Run the load, print and return the figures (JSON to ``out`` if given)."""
    import uvicorn

    console = console or Console()
    with tempfile.TemporaryDirectory(prefix="tierwise-proxy-") as tmp:
        store = Store.open(f"sqlite:///{Path(tmp) / 'proxy.db'}")
        upstream = TimedUpstream(chunks, delay_ms)
        engine = ChatEngine(store, upstream, budget=Budget(window=4_000, reserve=500))
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        server = uvicorn.Server(
            uvicorn.Config(create_app(store, engine), host="127.0.0.1", port=port, log_level="warning")
        )
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        while not server.started:
            time.sleep(0.05)
        added: list[float] = []

        async def load() -> float:
            deadline = time.monotonic() + seconds
            started = time.perf_counter()
            await asyncio.gather(
                *(
                    _client(f"http://127.0.0.1:{port}", i, requests, deadline, upstream, added)
                    for i in range(clients)
                )
            )
            return time.perf_counter() - started

        elapsed = asyncio.run(load())
        server.should_exit = True
        thread.join(10)
        store.close()
    result = {
        "clients": clients,
        "requests": len(added),
        "seconds": round(elapsed, 2),
        "requests_per_s": round(len(added) / elapsed, 1),
        "upstream_ms_per_request": round(delay_ms * (chunks - 1), 1),
        "added_ms": {"p50": round(_percentile(added, 0.5), 2), "p99": round(_percentile(added, 0.99), 2)},
        "target_p99_ms": TARGET_P99_MS,
    }
    console.print(result)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return result
