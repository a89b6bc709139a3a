"""Several processes on one PostgreSQL: sessions spread over them at random, and a global rate limit.

``processes`` servers are started as separate ``tierwise serve`` processes on one database (as
several hosts behind a load balancer; ``mode="workers"`` starts one ``tierwise serve --workers N``
instead, whose requests the OS spreads). The offline assistant answers (no network).

1. **Sessions**: ``sessions`` OpenAI clients at once, each ``turns`` turns long; every request goes
   to a process picked at random and carries the session's whole history. Then the database is
   read: each session must have exactly one chat holding exactly its history — a message of the
   history not stored is *lost*, one stored twice (or a message stored that the client never sent)
   is *duplicated*, a session whose chat was retired or split is *split*.
2. **Rate limit**: the servers' limit is ``rate`` requests a minute (a bucket ``rate`` deep, full at
   the start); ``rate_clients`` clients ask as fast as they can for ``seconds``, each request to a
   random process. What was accepted is compared with what the limit allows in that time,
   ``rate + rate × elapsed / 60`` (target: within ±5%).
"""

from __future__ import annotations

import asyncio
import os
import random
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx
import sqlalchemy as sa

from tierwise.errors import UserError
from tierwise.server.threaded import free_port
from tierwise.store import Store

__all__ = ["WorkersResult", "run", "servers"]

_STARTUP_S = 120.0


@dataclass
class WorkersResult:
    """What a run found (see the module)."""

    mode: str
    processes: int
    sessions: int
    turns: int
    requests: int = 0
    errors: int = 0
    lost: int = 0
    duplicated: int = 0
    split: int = 0
    p50_ms: float = 0.0
    p99_ms: float = 0.0
    per_port: dict[str, int] = field(default_factory=dict)
    rate: int = 0
    rate_seconds: float = 0.0
    accepted: int = 0
    refused: int = 0
    allowed: float = 0.0

    @property
    def rate_ratio(self) -> float:
        """Accepted over allowed (1.0: the limit held exactly)."""
        return self.accepted / self.allowed if self.allowed else 0.0


@contextmanager
def servers(
    url: str, processes: int, *, mode: str = "hosts", rate: int = 0, home: Path | None = None
) -> Iterator[list[int]]:
    """``tierwise serve`` on ``url``: ``processes`` of them (``hosts``) or one with ``--workers`` (ports)."""
    home = home or Path(tempfile.mkdtemp(prefix="tierwise-workers-"))
    env = {**os.environ, "TIERWISE_HOME": str(home), "TIERWISE_RATE_LIMIT": str(rate)}
    for name in ("TIERWISE_MODEL", "TIERWISE_BASE_URL", "TIERWISE_API_KEY", "OPENAI_API_KEY"):
        env.pop(name, None)  # the offline assistant answers
    started: list[subprocess.Popen[bytes]] = []
    ports: list[int] = []

    def start(extra: Sequence[str] = ()) -> None:
        port = free_port()
        command = [sys.executable, "-m", "tierwise.cli", "serve", "--port", str(port), "--db", url, *extra]
        log = (home / f"serve-{port}.log").open("wb")
        started.append(subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT))
        ports.append(port)

    try:
        if mode == "workers":
            start(["--workers", str(processes)])
        else:
            start()  # the first migrates the database and creates the local user
            _wait_up(ports[:1], started)
            for _ in range(processes - 1):
                start()
        _wait_up(ports, started)
        yield ports
    finally:
        for process in started:
            process.terminate()
        for process in started:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()


def _wait_up(ports: Sequence[int], started: Sequence[subprocess.Popen[bytes]]) -> None:
    deadline = time.monotonic() + _STARTUP_S
    waiting = list(ports)
    with httpx.Client(timeout=1) as http:  # one client: each new one builds an SSL context (~30 ms of CPU)
        while waiting:
            if any(p.poll() is not None for p in started):
                raise UserError(
                    "a `tierwise serve` process exited at start; its log is in the run's TIERWISE_HOME"
                )
            if time.monotonic() > deadline:
                raise UserError(f"`tierwise serve` did not answer within {_STARTUP_S:.0f} s")
            try:
                http.get(f"http://127.0.0.1:{waiting[0]}/v1/models").raise_for_status()
                waiting.pop(0)
            except httpx.HTTPError:
                time.sleep(0.2)


async def _sessions(
    ports: Sequence[int], sessions: int, turns: int, pick: random.Random, result: WorkersResult
) -> dict[str, list[dict[str, Any]]]:
    prefix = uuid.uuid4().hex[:8]
    histories: dict[str, list[dict[str, Any]]] = {f"bench-{prefix}-{i}": [] for i in range(sessions)}
    latencies: list[float] = []
    served: Counter[str] = Counter()
    limits = httpx.Limits(max_connections=sessions * 2, max_keepalive_connections=0)  # a connection each
    async with httpx.AsyncClient(timeout=120, limits=limits) as http:

        async def session(key: str, history: list[dict[str, Any]]) -> None:
            for turn in range(turns):
                history.append({"role": "user", "content": f"{key}: what is due after step {turn}?"})
                port = pick.choice(ports)
                began = time.perf_counter()
                try:
                    reply = await http.post(
                        f"http://127.0.0.1:{port}/v1/chat/completions",
                        json={"model": "tierwise", "messages": history},
                        headers={"X-Tierwise-Session": key},
                    )
                except httpx.HTTPError:  # a connection the server dropped: an error, counted, not a crash
                    reply = None
                latencies.append(time.perf_counter() - began)
                served[str(port)] += 1
                if reply is None or reply.status_code != 200:
                    result.errors += 1
                    history.pop()  # not answered: the client would send it again
                    continue
                history.append(
                    {"role": "assistant", "content": reply.json()["choices"][0]["message"]["content"]}
                )

        await asyncio.gather(*(session(key, history) for key, history in histories.items()))
    result.requests = len(latencies)
    ordered = sorted(latencies)
    if ordered:
        result.p50_ms = ordered[len(ordered) // 2] * 1000
        result.p99_ms = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000
    result.per_port = dict(served)
    return histories


def _verify(url: str, histories: dict[str, list[dict[str, Any]]], result: WorkersResult) -> None:
    store = Store.open(url)
    try:
        user = "local"
        for key, history in histories.items():
            chats = store.list_chats(user, entity_id=key)
            live = [chat for chat in chats if chat.context_type == "api"]
            if len(chats) != 1 or len(live) != 1:
                result.split += 1
            stored = Counter(
                str(m.message.get("content")) for chat in live for m in store.list_messages(user, chat.id)
            )
            sent = Counter(str(m["content"]) for m in history)
            result.lost += sum((sent - stored).values())
            result.duplicated += sum((stored - sent).values())
    finally:
        store.close()


async def _hammer(
    ports: Sequence[int], clients: int, seconds: float, pick: random.Random
) -> tuple[int, int, float]:
    accepted = refused = 0
    first = last = 0.0
    limits = httpx.Limits(max_connections=clients * 2)
    async with httpx.AsyncClient(timeout=30, limits=limits) as http:
        stop_at = time.perf_counter() + seconds

        async def client() -> None:
            nonlocal accepted, refused, first, last
            while time.perf_counter() < stop_at:
                sent = time.perf_counter()
                try:
                    reply = await http.get(f"http://127.0.0.1:{pick.choice(ports)}/v1/models")
                except httpx.HTTPError:  # a dropped connection: neither accepted nor refused
                    await asyncio.sleep(0.01)
                    continue
                first = first or sent
                if reply.status_code == 200:
                    accepted += 1
                    last = max(last, sent)
                elif reply.status_code == 429:
                    refused += 1

        await asyncio.gather(*(client() for _ in range(clients)))
    return accepted, refused, last - first


def _reset_buckets(url: str) -> None:
    store = Store.open(url)
    try:
        with store.engine.begin() as connection:
            connection.execute(sa.text("DELETE FROM rate_buckets"))
    finally:
        store.close()


def run(
    url: str,
    *,
    processes: int = 4,
    sessions: int = 100,
    turns: int = 5,
    rate: int = 1_200,
    rate_clients: int = 40,
    seconds: float = 30.0,
    mode: str = "hosts",
    seed: int = 0,
) -> WorkersResult:
    """Both phases against ``processes`` servers on ``url`` (see the module).

    The servers run with the rate limit on throughout, deep enough for the sessions phase (which
    sends ``sessions × turns`` requests) when ``rate`` is at least that; the buckets are emptied
    before the rate phase, so it starts from a full bucket.
    """
    if not url.startswith("postgresql"):
        raise UserError(
            "the workers benchmark needs PostgreSQL: --database-url postgresql+psycopg://USER@HOST/DB"
        )
    pick = random.Random(seed)
    result = WorkersResult(mode, processes, sessions, turns, rate=rate)
    with servers(url, processes, mode=mode, rate=rate) as ports:
        _reset_buckets(url)
        histories = asyncio.run(_sessions(ports, sessions, turns, pick, result))
        _verify(url, histories, result)
        if seconds > 0:
            _reset_buckets(url)
            accepted, refused, elapsed = asyncio.run(_hammer(ports, rate_clients, seconds, pick))
            result.accepted, result.refused, result.rate_seconds = accepted, refused, elapsed
            result.allowed = rate + rate * elapsed / 60.0
    return result


def report(result: WorkersResult) -> str:
    """The run as Markdown (what ``bench/results/workers.md`` holds)."""
    lines = [
        "| mode | processes | sessions × turns | requests | errors | lost | duplicated | split | p50 ms "
        "| p99 ms |",
        "|---|---|---|---|---|---|---|---|---|---|",
        f"| {result.mode} | {result.processes} | {result.sessions} × {result.turns} | {result.requests} | "
        f"{result.errors} | {result.lost} | {result.duplicated} | {result.split} | {result.p50_ms:.1f} | "
        f"{result.p99_ms:.1f} |",
        "",
        f"Requests per server: {', '.join(f'{n}' for n in sorted(result.per_port.values(), reverse=True))}.",
    ]
    if result.rate_seconds:
        lines += [
            "",
            "| rate limit | seconds | accepted | refused (429) | allowed by the limit | accepted / allowed |",
            "|---|---|---|---|---|---|",
            f"| {result.rate}/min | {result.rate_seconds:.1f} | {result.accepted} | {result.refused} | "
            f"{result.allowed:.0f} | {result.rate_ratio:.3f} |",
        ]
    return "\n".join(lines) + "\n"


def as_dict(result: WorkersResult) -> dict[str, Any]:
    """The run's figures, for JSON."""
    return {**asdict(result), "rate_ratio": result.rate_ratio}
