"""The OpenAI-compatible proxy under load: 50 concurrent streaming clients on loopback.

Two servers run in turn in uvicorn on 127.0.0.1, in this process, each with the same fake upstream
model inside it (it streams a fixed answer and records how long its own stream took per request):

- **tierwise** — ``/v1/chat/completions`` of :func:`tierwise.server.create_app`: parse, find the
  session's chat, store the new messages, pack with memory under a 4k budget, forward, re-stream,
  store the answer with its audit and snapshot;
- **passthrough** (the peer) — the least an OpenAI-compatible proxy does: parse the body, forward it,
  re-stream the chunks. No store, no packing.

The clients run in a separate process (so their work does not compete with the server's for this
one's interpreter lock): ``clients`` streaming clients on keep-alive HTTP/1.1 connections, each with
its own session, sending a 20-message conversation that grows by one exchange per request,
``stream: true``, reading to ``[DONE]``. *Added latency* is the client's time from sending to
``[DONE]`` minus the upstream's own stream time for that request: what the proxy adds, plus loopback
HTTP and the client process's own work. *In handler* is the same difference measured inside the
server (:class:`ServerClock`: from the ASGI call to the last body byte), which leaves out the
client's work but also the time a request waits before the server reads it. Runs are bounded in
requests and seconds.

With ``wires`` (``chat``, ``responses``, ``anthropic``), tierwise is measured once per wire in the
same run: the clients send the same conversations in that wire's shape
(:func:`tierwise.bench.wires.encode`) to ``/v1/chat/completions``, ``/v1/responses`` or
``/v1/messages``, streamed, and read that wire's events to its last one; each is set beside the same
passthrough peer (Chat Completions, measured once per pace). Anthropic's requests carry
``max_tokens`` 500, the engine's reserve, so every wire packs under the same budget.

Two upstream paces:

- ``model`` — like a fast hosted model: first token after 250 ms, then 40 chunks 15 ms apart
  (~0.8 s a request, so 50 clients ask ~60 requests/s). The added-latency target applies here.
- ``stress`` — 20 chunks 2 ms apart (38 ms a request): the clients ask faster than one Python
  process can serve, which measures throughput (requests/s) and shows latency under saturation.
"""

from __future__ import annotations

import asyncio
import json
import math
import tempfile
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import StreamingResponse
from rich.console import Console
from rich.table import Table

from tierwise.bench.proxy_load import RESERVE, load
from tierwise.bench.wires import API, PATHS
from tierwise.budget import Budget
from tierwise.chat.engine import ChatEngine
from tierwise.providers.base import Done, Event, ModelRequest, Provider, TextDelta, Usage
from tierwise.server import create_app
from tierwise.server.app import tune_for_serving
from tierwise.server.threaded import serve_in_thread
from tierwise.store import Store
from tierwise.tables import print_table

__all__ = ["PACES", "Pace", "TimedUpstream", "passthrough_app", "run"]

TARGET_P99_MS = 10.0
WIRE_TARGET_P99_MS = 5.0
"""Issue 31's target for each wire: added p99 at most this at 50 streams, the model pace."""


@dataclass(frozen=True)
class Pace:
    """How the fake upstream streams: the first chunk after ``first_ms``, then ``chunks`` ``gap_ms`` apart."""

    first_ms: float
    chunks: int
    gap_ms: float

    @property
    def stream_ms(self) -> float:
        """The upstream's own time for one answer."""
        return self.first_ms + self.gap_ms * (self.chunks - 1)


PACES = {"model": Pace(250, 40, 15), "stress": Pace(0, 20, 2)}


class TimedUpstream(Provider):
    """A fake upstream at a :class:`Pace`; records its own stream time per request (by last message)."""

    name, model = "fake-upstream", "fake-upstream"

    def __init__(self, pace: Pace) -> None:
        self.pace = pace
        self.spent: dict[str, float] = {}

    async def stream(self, request: ModelRequest) -> AsyncIterator[Event]:
        """Stream the answer and record the time spent inside this stream.

        Chunk ``i`` is due ``first_ms + i * gap_ms`` after the start, by the upstream's own clock, as
        a remote model's is: a chunk the server's event loop takes late is followed at once by the
        ones already due (a remote model's wait in the socket). Paced by sleeps between chunks
        instead, every stall of the server's loop would push all later chunks back and be counted
        as the upstream's own time, hidden from the server's added latency.
        """
        started = time.perf_counter()
        last = str(request.messages[-1].get("content", ""))
        for i in range(self.pace.chunks):
            wait = started + (self.pace.first_ms + i * self.pace.gap_ms) / 1000 - time.perf_counter()
            if wait > 0:
                await asyncio.sleep(wait)
            yield TextDelta(f"word{i} ")
        yield Usage(100, self.pace.chunks, 100 + self.pace.chunks)
        yield Done("stop", self.model)
        self.spent[last] = time.perf_counter() - started


def passthrough_app(upstream: Provider) -> FastAPI:
    """The peer: parse the body, forward the messages, re-stream OpenAI chunks. Nothing else."""
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def complete(request: Request) -> StreamingResponse:
        body = json.loads(await request.body())
        stream = upstream.stream(ModelRequest(messages=body["messages"]))

        async def events() -> AsyncIterator[str]:
            async for event in stream:
                if isinstance(event, TextDelta):
                    delta = {"index": 0, "delta": {"content": event.text}, "finish_reason": None}
                    yield f"data: {json.dumps({'object': 'chat.completion.chunk', 'choices': [delta]})}\n\n"
            yield "data: [DONE]\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")

    return app


class ServerClock:
    """ASGI middleware: when each request arrived and when its last body byte was handed to the server.

    Keyed by the ``X-Bench-Request`` header (the request's question). Server-side time leaves out
    the client's own work (reading 50 streams in one process), which the client-side figure includes.
    """

    def __init__(self, app: Any) -> None:
        self.app = app
        self.spans: dict[str, float] = {}

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """Time the request if it is a benchmark request."""
        key = next((v.decode() for k, v in scope.get("headers", ()) if k == b"x-bench-request"), None)
        if key is None:
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()

        async def timed_send(message: Any) -> None:
            await send(message)
            if message.get("type") == "http.response.body" and not message.get("more_body", False):
                self.spans[key] = time.perf_counter() - started

        await self.app(scope, receive, timed_send)


def _latency(values: list[float]) -> dict[str, float]:
    return {
        "p50": round(_percentile(values, 0.5), 2),
        "p95": round(_percentile(values, 0.95), 2),
        "p99": round(_percentile(values, 0.99), 2),
        "max": round(max(values, default=0.0), 2),
    }


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)] if ordered else 0.0


def _measure(
    app: Any,
    upstream: TimedUpstream,
    clients: int,
    requests: int,
    seconds: float,
    pool: ProcessPoolExecutor,
    hostile: int = 0,
    wire: str = "chat",
) -> dict[str, Any]:
    clock = ServerClock(app)
    with serve_in_thread(clock) as base:
        tune_for_serving()  # as `tierwise serve` does once started (for both servers alike)
        cpu = time.process_time()
        spread = upstream.pace.stream_ms / 1000
        job = pool.submit(load, base, clients, requests, seconds, spread, hostile, wire)
        done, elapsed, window = job.result()
        cpu = time.process_time() - cpu
    added = [
        (n, (total - upstream.spent.get(question, 0.0)) * 1000)
        for question, n, total, _ in done
        if total >= 0
    ]
    overlapping = [
        (total - upstream.spent.get(question, 0.0)) * 1000
        for question, _, total, begun in done
        if total >= 0 and window is not None and begun < window[1] and begun + total > window[0]
    ]
    every = [ms for _, ms in added]
    # Against the upstream's nominal time instead of its measured one: an in-process upstream that
    # the server's CPU slows down (a neighbour's ingest) counts against the server here.
    nominal = upstream.pace.stream_ms
    overlapping_nominal = [
        total * 1000 - nominal
        for _, _, total, begun in done
        if total >= 0 and window is not None and begun < window[1] and begun + total > window[0]
    ]
    server = [
        (clock.spans[question] - upstream.spent.get(question, 0.0)) * 1000
        for question, _, total, _ in done
        if total >= 0 and question in clock.spans
    ]
    return {
        "requests": len(added),
        "failed": len(done) - len(added),
        "seconds": round(elapsed, 2),
        "requests_per_s": round(len(added) / elapsed, 1) if elapsed else 0.0,
        "added_ms": _latency(every),
        # A session's first request stores its whole history (21 messages); later ones add one.
        "added_ms_new_session": _latency([ms for n, ms in added if n == 0]),
        "added_ms_continuing": _latency([ms for n, ms in added if n > 0]),
        "added_ms_server_side": _latency(server),
        "server_cpu_ms_per_request": round(cpu * 1000 / max(len(added), 1), 2),
        # With a hostile neighbour: its request's seconds, and the others' requests that overlapped it.
        "hostile_seconds": round(window[1] - window[0], 2) if window else None,
        "added_ms_beside_hostile": _latency(overlapping) if window else None,
        "added_ms_nominal": _latency([total * 1000 - nominal for _, _, total, _ in done if total >= 0]),
        "added_ms_beside_hostile_nominal": _latency(overlapping_nominal) if window else None,
    }


def run(
    *,
    clients: int = 50,
    requests: int = 20,
    seconds: float = 60,
    paces: Mapping[str, Pace] | None = None,
    out: Path | None = None,
    console: Console | None = None,
    hostile: int = 0,
    wires: Sequence[str] = ("chat",),
) -> dict[str, Any]:
    """Run the load at each pace (default :data:`PACES`) against tierwise and against the peer.

    ``hostile`` > 0: a neighbour posts one conversation of that many messages a second into each
    run; the others' added latency while it was in flight is reported beside the rest.
    ``wires``: tierwise is measured through each (its figures under ``tierwise`` for ``chat``, as
    before, and ``tierwise <wire>`` for the others); ``result["wires"]`` sets each wire's added
    p50/p99 beside the passthrough's of the same pace.

    Prints the figures and returns them (and writes them as JSON to ``out``, if given).
    """
    console = console or Console()
    result: dict[str, Any] = {
        "clients": clients,
        "target_p99_ms": TARGET_P99_MS,
        "hostile_messages": hostile,
        "runs": {},
    }
    if tuple(wires) != ("chat",):
        result["wire_target_p99_ms"] = WIRE_TARGET_P99_MS
        result["wires"] = {}
    with ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn")) as pool:
        pool.submit(time.sleep, 0).result()  # start the client process before timing anything
        for name, pace in (PACES if paces is None else paces).items():
            runs: dict[str, Any] = {"pace": {**asdict(pace), "stream_ms": pace.stream_ms}}
            upstream = TimedUpstream(pace)
            runs["passthrough"] = _measure(
                passthrough_app(upstream), upstream, clients, requests, seconds, pool, hostile
            )
            for wire in wires:
                with tempfile.TemporaryDirectory(prefix="tierwise-proxy-") as tmp:
                    store = Store.open(f"sqlite:///{Path(tmp) / 'proxy.db'}")
                    upstream = TimedUpstream(pace)
                    app = create_app(store, _engine(store, upstream, wire))
                    runs[_server(wire)] = _measure(
                        app, upstream, clients, requests, seconds, pool, hostile, wire
                    )
                    store.close()
            result["runs"][name] = runs
            if "wires" in result:
                result["wires"][name] = _beside(runs, wires)
    _print(result, console)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return result


def _engine(store: Store, upstream: TimedUpstream, wire: str) -> ChatEngine:
    """``/v1``'s engine under a 4k budget; for the web chat, the reference assistant's, as ``serve`` runs it.

    The web chat's is :func:`~tierwise.workspace.app.assistant_engine` over the sample workspace
    (its tools, context layers and offering) under the same budget, without titles: a first turn's
    title is a second upstream call the client waits for, which would be counted as tierwise's.
    """
    budget = Budget(window=4_000, reserve=RESERVE)
    if wire != API:
        return ChatEngine(store, upstream, budget=budget)
    from tierwise.chat.terminal import local_user
    from tierwise.workspace.app import assistant_engine, ensure_sample

    ensure_sample(store, local_user(store))
    return assistant_engine(store, upstream, budget=budget, title_provider=None)


def _server(wire: str) -> str:
    """A wire's run in ``result["runs"][pace]``: ``tierwise`` for Chat Completions (as before)."""
    return "tierwise" if wire == "chat" else f"tierwise {wire}"


def _beside(runs: Mapping[str, Any], wires: Sequence[str]) -> dict[str, Any]:
    """Each wire's added p50/p99 beside the passthrough's, and the difference."""
    peer = runs["passthrough"]["added_ms"]
    out: dict[str, Any] = {}
    for wire in wires:
        added = runs[_server(wire)]["added_ms"]
        out[wire] = {
            "path": PATHS[wire],
            "added_p50_ms": added["p50"],
            "added_p99_ms": added["p99"],
            "passthrough_p50_ms": peer["p50"],
            "passthrough_p99_ms": peer["p99"],
            "p99_over_passthrough_ms": round(added["p99"] - peer["p99"], 2),
            "failed": runs[_server(wire)]["failed"],
        }
    return out


def _print(result: dict[str, Any], console: Console) -> None:
    table = Table(title=f"OpenAI-compatible proxy, {result['clients']} streaming clients on loopback")
    columns = ("pace", "server", "requests", "failed", "req/s", "added p50/p99 ms", "continuing p50/p99")
    for column in (*columns, "new session p50/p99", "in handler p50/p99", "CPU ms/req"):
        table.add_column(column, justify="left" if column in ("pace", "server") else "right")

    def pair(figures: dict[str, float]) -> str:
        return f"{figures['p50']:g} / {figures['p99']:g}"

    def triple(figures: dict[str, float]) -> str:
        return f"{figures['p50']:g} / {figures.get('p95', 0):g} / {figures['p99']:g}"

    for name, runs in result["runs"].items():
        label = f"{name} ({runs['pace']['stream_ms']:g} ms)"
        for server in (*(k for k in runs if k.startswith("tierwise")), "passthrough"):
            r = runs[server]
            table.add_row(
                label,
                server,
                str(r["requests"]),
                str(r["failed"]),
                f"{r['requests_per_s']:g}",
                pair(r["added_ms"]),
                pair(r["added_ms_continuing"]),
                pair(r["added_ms_new_session"]),
                pair(r["added_ms_server_side"]),
                f"{r['server_cpu_ms_per_request']:g}",
            )
    print_table(console, table, keep=2)
    console.print(f"target: added p99 < {result['target_p99_ms']:g} ms at the model pace")
    for name, by_wire in result.get("wires", {}).items():
        for w in by_wire.values():
            console.print(
                f"{name} · {w['path']}: added p50/p99 {w['added_p50_ms']:g} / {w['added_p99_ms']:g} ms "
                f"(passthrough {w['passthrough_p50_ms']:g} / {w['passthrough_p99_ms']:g} ms; p99 "
                f"{w['p99_over_passthrough_ms']:+g} ms over it; issue 31's target ≤ "
                f"{result['wire_target_p99_ms']:g} ms)"
            )
    if result.get("hostile_messages"):
        for name, runs in result["runs"].items():
            for server in (*(k for k in runs if k.startswith("tierwise")), "passthrough"):
                r = runs[server]
                beside = r.get("added_ms_beside_hostile")
                figures = triple(beside) if beside else "none overlapped"
                strict = r.get("added_ms_beside_hostile_nominal")
                against = triple(strict) if strict else "none overlapped"
                console.print(
                    f"{name} · {server}: a neighbour's {result['hostile_messages']:,}-message request took "
                    f"{r['hostile_seconds']} s; the others' added p50/p95/p99 beside it: {against} ms "
                    f"against the upstream's nominal time ({figures} ms against its measured time)"
                )
