"""The client side of ``tierwise bench proxy``: the load, run in a process of its own.

:func:`load` is what the benchmark's client process runs: ``clients`` conversations streaming
through one server, each request timed as its client saw it, and a hostile neighbour if asked.
It imports only the loopback client and the wires' encodings, so the process starts in a fraction
of a second (it imported the whole server with :mod:`tierwise.bench.proxy`, ~3 s of CPU a run,
while the server under test was being measured).
"""

from __future__ import annotations

import asyncio
import gc
import json
import time
from typing import Any

from tierwise.bench.loopback_client import Connection
from tierwise.bench.wires import API, PATHS, encode, stream_text

__all__ = ["RESERVE", "load"]

RESERVE = 500
"""The engine's reserve, and the ``max_tokens`` an Anthropic client sends (the same budget on each wire)."""
_REQUEST_HEADER = "X-Bench-Request"


async def _client(
    connection: Connection,
    index: int,
    start_s: float,
    requests: int,
    deadline: float,
    out: list[tuple[str, int, float, float]],
    wire: str = "chat",
) -> None:
    history: list[dict[str, str]] = [{"role": "system", "content": "You are a concise assistant."}]
    for turn in range(10):
        history += [
            {"role": "user", "content": f"Earlier question {turn} about the offsite budget and venue."},
            {"role": "assistant", "content": f"Earlier answer {turn}: the venue holds forty people."},
        ]
    await asyncio.sleep(start_s)
    path = PATHS[wire]
    try:
        if wire == API:  # the web chat keeps the history: a chat, then one message a request
            chat = await connection.post_json("/api/chats", b'{"title": "load"}', {})
            path = path.format(chat=chat["id"])
        for n in range(requests):
            if time.monotonic() > deadline:
                return
            question = f"client {index} request {n}: what is left?"
            messages = [*history, {"role": "user", "content": question}]
            if wire == API:
                body: dict[str, Any] = {"content": question}
            else:
                reserve = RESERVE if wire == "anthropic" else None
                body = encode(wire, messages, model="any", stream=True, max_tokens=reserve)
            headers = {"X-Tierwise-Session": f"load-{index}", _REQUEST_HEADER: question}
            started = time.perf_counter()
            answer = []
            try:
                for payload in await connection.post_stream(path, json.dumps(body).encode(), headers, wire):
                    answer.append(stream_text(wire, payload))
            except (OSError, ValueError, asyncio.IncompleteReadError):  # a failure ends this conversation
                out.append((question, n, -1.0, started))
                return
            out.append((question, n, time.perf_counter() - started, started))
            history += [
                {"role": "user", "content": question},
                {"role": "assistant", "content": "".join(answer)},
            ]
    except (OSError, ValueError, asyncio.IncompleteReadError):  # the chat could not be made
        out.append((f"client {index}: no chat", 0, -1.0, time.perf_counter()))
    finally:
        connection.close()


def _hostile(messages: int) -> bytes:
    """A conversation of ``messages`` messages and a question: the neighbour's one request."""
    history = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"Imported note {i}: the offsite venue."}
        for i in range(messages - 1)
    ]
    if history and history[-1]["role"] == "user":
        history.append({"role": "assistant", "content": "Noted."})
    history.append({"role": "user", "content": "What did we decide about the venue?"})
    return json.dumps({"model": "any", "stream": True, "messages": history}).encode()


def load(
    base: str,
    clients: int,
    requests: int,
    seconds: float,
    spread_s: float,
    hostile: int = 0,
    wire: str = "chat",
) -> tuple[list[tuple[str, int, float, float]], float, tuple[float, float] | None]:
    """In the client process: run the clients; their results, the run's wall time, the hostile window.

    Client ``i`` starts ``i * spread_s / clients`` seconds in, so the clients' requests are spread
    over one upstream answer instead of arriving in lockstep (50 at once, every round). With
    ``hostile`` > 0 a neighbour posts one conversation of that many messages a second in, and the
    (start, end) of its request is returned, to tell the others' requests that overlapped it (on
    Chat Completions, whatever the clients' ``wire``).
    """
    done: list[tuple[str, int, float, float]] = []
    window: list[float] = []
    body = _hostile(hostile) if hostile else b""
    # The clients are the instrument: their garbage collections (100+ ms pauses with 50 growing
    # histories) would be timed as the server's latency. The process ends with the run.
    gc.collect()
    gc.disable()

    async def neighbour(connection: Connection) -> None:
        await asyncio.sleep(1.0)
        window.append(time.perf_counter())
        try:
            await connection.post_stream("/v1/chat/completions", body, {"X-Tierwise-Session": "neighbour"})
        except (OSError, ValueError, asyncio.IncompleteReadError) as exc:  # reported, not hidden
            done.append((f"neighbour failed: {exc}", 0, -1.0, window[0]))
        window.append(time.perf_counter())
        connection.close()

    async def load() -> float:
        host, port = base.removeprefix("http://").rsplit(":", 1)
        made = [Connection(host, int(port)) for _ in range(clients)]
        deadline = time.monotonic() + seconds
        started = time.perf_counter()
        jobs = [
            _client(c, i, i * spread_s / clients, requests, deadline, done, wire) for i, c in enumerate(made)
        ]
        if hostile:
            jobs.append(neighbour(Connection(host, int(port))))
        await asyncio.gather(*jobs)
        return time.perf_counter() - started

    elapsed = asyncio.run(load())
    return done, elapsed, (window[0], window[1]) if len(window) == 2 else None
