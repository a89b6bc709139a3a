"""A long stored chat's first turn after a restart, and what another client sees meanwhile.

Issue 16 found the first message into a stored 10,000-message chat (web API, streamed) took 23.7 s,
and a status request for *another* chat waited 23.1 s behind it: loading the chat's memory and the
store work ran on the event loop. This run measures exactly that:

1. **Stored first.** A SQLite file gets the local user's long chat — ``messages`` synthetic,
   timestamped messages (:mod:`tierwise.bench.synthetic`, tool calls included), stored as an
   import or the OpenAI-compatible endpoint stores them (``ChatMemory.stage`` then one write per
   1,000: messages and blobs, no segment trios yet) — or, with ``trios=True``, also with its
   segments' trios and narrative as upkeep leaves them; a short chat with one pack recorded (the
   other client's); and ``usage_rows`` rows of spending for the user (``Store.record_usage``).
2. **A restart.** The store is closed and a new process opens it: a new
   :class:`~tierwise.store.Store`, :class:`~tierwise.chat.engine.ChatEngine` (a fake model that
   answers at once, and a :class:`~tierwise.chat.costguard.CostGuard` with limits set on the
   store's ledger) and :func:`~tierwise.server.create_app` in uvicorn, warmed up as ``tierwise
   serve`` is. Nothing of the chat is held in memory.
3. **The first turn.** The clients run in this process (the server has its own interpreter lock):
   one posts a message to the long chat (``POST /api/chats/{id}/messages``, server-sent events) and
   times the first ``text`` event (first token), ``done``, and the end of the stream (the engine's
   upkeep after ``done``: here, the trios the import did not have); another polls
   ``GET /api/context/status?sessionId=`` of the short chat every ``poll_ms`` from two seconds
   before until the stream ends. Its latencies are reported per window: *before*, *turn* (sent →
   ``done``) and *upkeep* (``done`` → end of stream).

Targets (issue 16): first token < 1 s, load included; other requests' p99 < 100 ms.
"""

from __future__ import annotations

import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console

from tierwise.bench.synthetic import synthetic_history, timestamped
from tierwise.budget import Budget

__all__ = ["LIMITS", "QUESTIONS", "TARGET_FIRST_S", "TARGET_OTHERS_P99_MS", "main", "run"]

TARGET_FIRST_S = 1.0
TARGET_OTHERS_P99_MS = 100.0
LIMITS: dict[str, Any] = {
    "session_tokens": 10**12,
    "session_dollars": 1e9,
    "month_tokens": 10**12,
    "month_dollars": 1e9,
}
"""The cost guard's limits: set (so every turn checks the spend and picks a band), never reached."""
QUESTIONS = (
    "What is left on the Apollo launch this week?",  # about now: working memory answers it
    "Who is the owner of that project?",  # words said only before working memory: turns retrieved
)
"""The first message after the restart: one about the present, one that reaches into the past
(memory's gate opens, and the search index over every older turn is built for it)."""
BUDGET = Budget(window=16_000, reserve=1_000)  # the engine's default


# -- stored first ------------------------------------------------------------------------------------


def fill(path: Path, *, messages: int, usage_rows: int, trios: bool = False) -> dict[str, str]:
    """Store the long chat, the short one and the user's spending in the SQLite file at ``path``."""
    from tierwise.chat.memories import default_memory
    from tierwise.chat.terminal import local_user
    from tierwise.memory.persist import ChatMemory, StoreBlobs
    from tierwise.store import Store

    store = Store.open(f"sqlite:///{path}")
    try:
        user = local_user(store)
        long_chat = store.create_chat(user, title="Long chat").id
        memory = ChatMemory(store, user, long_chat, default_memory(StoreBlobs(store, user)))
        history = timestamped(synthetic_history(messages + 2)[1:-1])  # no system prompt; ends on an answer
        for i, message in enumerate(history, 1):
            body = {k: v for k, v in message.items() if k != "timestamp"}
            memory.stage([body], at=datetime.fromisoformat(message["timestamp"]))
            if i == len(history) - 1 and body["role"] == "user":  # packed, as the endpoint packs it:
                memory.pack(BUDGET, [body], upto=i - 1)  # working memory moves on, archiving follows
            elif i % 1_000 == 0:
                memory.flush()
        memory.flush()
        if trios:  # as the engine's upkeep leaves a chat: every closed segment's trio, the narrative
            memory.memory.maintain()
            memory.flush()
        short = store.create_chat(user, title="Short chat").id
        other = ChatMemory(store, user, short, default_memory(StoreBlobs(store, user)))
        for message in synthetic_history(21)[1:]:
            other.add(message)
        other.pack(BUDGET, [{"role": "user", "content": QUESTIONS[0]}])
        with store.batch(savepoints=False):
            for i in range(usage_rows):
                chat = long_chat if i % 2 else short
                store.record_usage(user, chat, tokens=800 + i % 400, dollars=(800 + i % 400) * 2.5e-6)
        return {"user": user, "long": long_chat, "short": short}
    finally:
        store.close()


# -- the restarted server (its own process) ----------------------------------------------------------


def serve(path: str, port: int) -> None:
    """Open the store at ``path`` afresh and serve the app on 127.0.0.1:``port`` (a child process)."""
    import uvicorn

    from tierwise.bench.proxy import Pace, TimedUpstream
    from tierwise.chat.costguard import CostGuard, Limits, StoreLedger
    from tierwise.chat.engine import ChatEngine
    from tierwise.server import create_app
    from tierwise.store import Store

    store = Store.open(f"sqlite:///{path}")
    model = TimedUpstream(Pace(first_ms=0, chunks=8, gap_ms=2))  # answers at once: first token = ours
    engine = ChatEngine(store, model, guard=CostGuard(Limits(**LIMITS), StoreLedger(store)))
    app = create_app(store, engine, tune_gc=True)  # as `tierwise serve` runs it
    try:
        uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
    finally:
        store.close()


# -- the clients ---------------------------------------------------------------------------------------


class _Poller(threading.Thread):
    """Polls the short chat's status every ``poll_s``; keeps (start time, seconds) per request."""

    def __init__(self, base: str, chat_id: str, poll_s: float) -> None:
        super().__init__(name="status-poller", daemon=True)
        self.url = f"{base}/api/context/status"
        self.chat_id, self.poll_s = chat_id, poll_s
        self.samples: list[tuple[float, float]] = []
        self.failures = 0
        self.stopping = threading.Event()

    def run(self) -> None:
        import httpx

        with httpx.Client(timeout=120) as client:
            while not self.stopping.is_set():
                started = time.perf_counter()
                try:
                    response = client.get(self.url, params={"sessionId": self.chat_id})
                    response.raise_for_status()
                except httpx.HTTPError:
                    self.failures += 1
                self.samples.append((started, time.perf_counter() - started))
                self.stopping.wait(max(0.0, self.poll_s - (time.perf_counter() - started)))


def _first_turn(base: str, chat_id: str, question: str) -> dict[str, float | str]:
    """Post the message and read the stream: seconds to the first text, to ``done``, to its end."""
    import httpx

    out: dict[str, float | str] = {}
    started = time.perf_counter()
    out["sent"] = started
    with (
        httpx.Client(timeout=300) as client,
        client.stream("POST", f"{base}/api/chats/{chat_id}/messages", json={"content": question}) as response,
    ):
        response.raise_for_status()
        event = ""
        for line in response.iter_lines():
            if line.startswith("event:"):
                event = line.split(":", 1)[1].strip()
                now = time.perf_counter()
                if event == "text" and "first_token_s" not in out:
                    out["first_token_s"] = now - started
                elif event == "done":
                    out["done_s"] = now - started
            elif line.startswith("data:") and event == "done":
                out["reason"] = str(json.loads(line.split(":", 1)[1]).get("reason"))
    out["stream_end_s"] = time.perf_counter() - started
    return out


def _latency(samples: Sequence[float]) -> dict[str, float] | None:
    if not samples:
        return None
    ordered = sorted(s * 1000 for s in samples)

    def rank(q: float) -> float:  # nearest rank
        return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]

    return {
        "requests": len(ordered),
        "p50_ms": round(statistics.median(ordered), 2),
        "p99_ms": round(rank(0.99), 2),
        "max_ms": round(ordered[-1], 2),
    }


def _wait_up(base: str, process: Any, timeout_s: float = 120) -> None:
    import httpx

    deadline = time.monotonic() + timeout_s
    with httpx.Client(timeout=2) as http:  # one client: each new one builds an SSL context (~30 ms of CPU)
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError("the benchmark's server process ended before it served")
            try:
                if http.get(f"{base}/api/health").status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
    raise RuntimeError(f"the benchmark's server did not answer within {timeout_s:g} s")


def measure(
    path: Path,
    chats: dict[str, str],
    question: str = QUESTIONS[0],
    *,
    poll_ms: float = 20,
    before_s: float = 2.0,
) -> tuple[dict[str, Any], dict[str, list[float]]]:
    """Restart on ``path`` (a new server process), run the first turn while the poller runs.

    Returns the turn's timings and the other client's request seconds per window.
    """
    from tierwise.server.threaded import free_port

    port = free_port()
    code = f"from tierwise.bench.restart import serve; serve({str(path)!r}, {port})"
    process = subprocess.Popen([sys.executable, "-c", code])  # a fresh interpreter: nothing held
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_up(base, process)
        poller = _Poller(base, chats["short"], poll_ms / 1000)
        poller.start()
        time.sleep(before_s)
        turn = _first_turn(base, chats["long"], question)
        poller.stopping.set()
        poller.join(30)
    finally:
        process.terminate()  # the child we started, by its handle
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
    sent = float(turn.pop("sent"))
    done_at = sent + float(turn.get("done_s", turn["stream_end_s"]))
    end_at = sent + float(turn["stream_end_s"])
    windows: dict[str, list[float]] = {"before": [], "turn": [], "upkeep": []}
    for started, seconds in poller.samples:  # by when the request was sent
        window = "before" if started < sent else "turn" if started < done_at else "upkeep"
        if started < end_at:
            windows[window].append(seconds)
    turn["others_failed"] = poller.failures
    return turn, windows


# -- the run -------------------------------------------------------------------------------------------


def run(
    *,
    messages: int = 10_000,
    usage_rows: int = 10_000,
    trios: Sequence[bool] = (False, True),
    questions: Sequence[str] = QUESTIONS,
    repeat: int = 3,
    poll_ms: float = 20,
    out: Path | None = None,
    console: Console | None = None,
    before_s: float = 2.0,
) -> dict[str, Any]:
    """Measure a long chat's first turn after a restart, stored without and with its trios.

    Args:
        messages: the long chat's length.
        usage_rows: the user's spending rows (the cost guard sums them each turn).
        trios: which stored states to run: ``False`` as imported (no trios), ``True`` after upkeep.
        questions: the first messages tried, each on its own copy of the stored chat.
        repeat: restarts per stored state and question (the median turn is reported, every run
            kept; the other client's requests of all runs are pooled).
        poll_ms: the other client's polling period.
        out: if given, write the results as JSON there and a markdown table beside it (``.md``).
        console: where to print (default: a new :class:`rich.console.Console`).
        before_s: how long the other client polls alone before the first turn (its baseline).

    Raises:
        ValueError: ``messages`` below 2, ``repeat`` below 1, or ``usage_rows`` or ``poll_ms`` below 0.
    """
    if messages < 2 or repeat < 1 or usage_rows < 0 or poll_ms < 0:
        raise ValueError("messages must be 2 or more, repeat 1 or more, usage_rows and poll_ms 0 or more")
    console = console or Console()
    machine = (
        f"python {platform.python_version()} · {platform.platform()} · {os.cpu_count()} CPUs · "
        f"SQLite file store · {messages:,} messages · {usage_rows:,} usage rows · cost guard on"
    )
    console.print(machine)
    rows = []
    for stored in trios:
        with tempfile.TemporaryDirectory(prefix="tierwise-bench-restart-") as tmp:
            filled = Path(tmp) / "filled.db"
            began = time.perf_counter()
            chats = fill(filled, messages=messages, usage_rows=usage_rows, trios=stored)
            took = time.perf_counter() - began
            console.print(f"  stored ({'with' if stored else 'without'} trios) in {took:.1f} s")
            for n, question in enumerate(questions):
                rows.append(_row(Path(tmp), filled, chats, stored, question, n, repeat, poll_ms, before_s))
    body: dict[str, Any] = {
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine,
        "messages": messages,
        "usage_rows": usage_rows,
        "poll_ms": poll_ms,
        "repeat": repeat,
        "target": {"first_token_s": TARGET_FIRST_S, "others_p99_ms": TARGET_OTHERS_P99_MS},
        "results": rows,
    }
    text = _markdown(body)
    console.print(text, markup=False, highlight=False, soft_wrap=True)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(body, indent=2) + "\n", encoding="utf-8")
        out.with_suffix(".md").write_text(text, encoding="utf-8")
    return body


def _row(
    tmp: Path,
    filled: Path,
    chats: dict[str, str],
    stored: bool,
    question: str,
    n: int,
    repeat: int,
    poll_ms: float,
    before_s: float = 2.0,
) -> dict[str, Any]:
    """``repeat`` restarts on copies of the stored chat: the median turn, every run, others pooled."""
    runs: list[dict[str, Any]] = []
    pooled: dict[str, list[float]] = {"before": [], "turn": [], "upkeep": []}
    for r in range(repeat):  # each on a copy: the same stored state
        path = tmp / f"restart-{n}-{r}.db"
        shutil.copyfile(filled, path)  # closed: its write-ahead log was checkpointed away
        turn, windows = measure(path, chats, question, poll_ms=poll_ms, before_s=before_s)
        runs.append(turn)
        for name, values in windows.items():
            pooled[name].extend(values)
        path.unlink()
    median = sorted(runs, key=lambda run: float(run.get("first_token_s", math.inf)))[len(runs) // 2]
    return {
        "trios": stored,
        "question": question,
        "first_turn": median,
        "runs": runs,
        "others": {name: _latency(values) for name, values in pooled.items()},
        "others_failed": sum(int(run["others_failed"]) for run in runs),
    }


def _cell(stats: dict[str, float] | None) -> str:
    if stats is None:
        return "—"
    return f"{stats['p50_ms']:.1f} / {stats['p99_ms']:.1f} / {stats['max_ms']:.1f} ({int(stats['requests'])})"


def _markdown(body: dict[str, Any]) -> str:
    lines = [
        body["machine"],
        "",
        "| stored | first message | first token | done | stream end (upkeep) | others before:"
        " p50 / p99 / max ms (n) | others during the turn | others during upkeep |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for row in body["results"]:
        turn, others = row["first_turn"], row["others"]
        lines.append(
            f"| {'with trios' if row['trios'] else 'without trios (imported)'} | {row['question']} "
            f"| {turn.get('first_token_s', float('nan')):.3f} s | {turn.get('done_s', float('nan')):.3f} s "
            f"| {turn['stream_end_s']:.1f} s | {_cell(others['before'])} | {_cell(others['turn'])} "
            f"| {_cell(others['upkeep'])} |"
        )
    target = body["target"]
    lines += [
        "",
        f"Targets: first token < {target['first_token_s']:g} s (load included); others' p99 < "
        f"{target['others_p99_ms']:g} ms. Each row: the median of {body['repeat']} restarts (first token); "
        f"the other client polls `GET /api/context/status` of another chat every {body['poll_ms']:g} ms, "
        "its requests of all restarts pooled, by window (when the request was sent).",
    ]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m tierwise.bench.restart [--messages 10000] [--usage-rows 10000] [--out FILE]``."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m tierwise.bench.restart", description="A long chat's first turn after a restart."
    )
    parser.add_argument("--messages", type=int, default=10_000, help="the long chat's length")
    parser.add_argument("--usage-rows", type=int, default=10_000, help="the user's spending rows")
    parser.add_argument("--out", type=Path, default=None, help="write JSON here and markdown beside it")
    args = parser.parse_args(argv)
    run(messages=args.messages, usage_rows=args.usage_rows, out=args.out)


if __name__ == "__main__":  # pragma: no cover
    main()
