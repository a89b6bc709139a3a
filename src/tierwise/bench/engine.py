"""The chat engine's own time per turn — everything but the model — against a minimal app without tierwise.

For each session size a SQLite file store is filled with a synthetic, timestamped conversation
(:mod:`tierwise.bench.synthetic`, tool calls included) through
:class:`~tierwise.memory.persist.ChatMemory`, and a :class:`~tierwise.chat.engine.ChatEngine` runs
turns on it against a zero-cost fake model that records the time spent inside its stream. The
engine's overhead per turn is the time from the call to the turn's ``done`` event (the answer is
complete and stored) minus that time. What the engine does after ``done`` — memory maintenance
such as search-index rebuilds, before it releases the chat — is reported beside it ("after done").
Two turn shapes are measured: *answer* (one model call) and *tool* (the model calls one tool, then
answers).

Phases come from the turn's trace (the audit log's ``turn`` entry, ``details["trace"]``) and from
timing every store call: context build and tools are their spans less the store calls inside them;
store writes and reads are timed wherever they happen; *rest* is what is left (streaming, events,
memory bookkeeping as messages are added, accounting, title check, trace).

The peer, interleaved in the same run, is the minimal thing an app does per turn without tierwise:
store the user's message and the answer (and, for the tool shape, the call and its result) with
:meth:`~tierwise.store.Store.add_message` in the same store, and cut its in-memory history with
langchain-core's ``trim_messages`` to the same budget before each model call (``o200k_base`` counts,
cached, equal to tierwise's). Without langchain-core the peer is skipped with a note.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import platform
import statistics
import tempfile
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Literal

from rich.console import Console
from rich.table import Table

from tierwise.bench.instruments import StoreCall, StoreClock, TimedModel
from tierwise.bench.synthetic import SEED, synthetic_history, timestamped
from tierwise.budget import Budget
from tierwise.chat.engine import ChatEngine, TurnResult
from tierwise.chat.events import DoneEvent
from tierwise.memory.engine import Memory
from tierwise.memory.persist import ChatMemory, StoreBlobs
from tierwise.providers.base import ModelResponse, ToolCall, Usage
from tierwise.store import Store
from tierwise.tables import print_table
from tierwise.tokens import TokenCounter, get_counter
from tierwise.tools import Tool

__all__ = [
    "ENCODING",
    "TARGET_P95_MS",
    "TARGET_SIZE",
    "StoreClock",
    "TimedModel",
    "main",
    "run",
]  # instruments re-exported

ENCODING = "o200k_base"
TARGET_SIZE = 200
TARGET_P95_MS = 15.0
GROWTH = 0.15
"""A chat takes turns until it has grown by about this share, then a fresh one of the same size takes over."""
BUDGET = Budget(window=16_000, reserve=1_000)  # the engine's default
Message = dict[str, Any]
Shape = Literal["answer", "tool"]
SHAPES: tuple[Shape, ...] = ("answer", "tool")
PHASES = ("context", "store_writes", "store_reads", "tools", "rest")

_PROJECTS = ("Apollo launch", "Q3 roadmap", "website redesign", "hiring plan", "budget review")


def list_tasks(
    project: str, status: Literal["open", "done"] = "open", limit: int = 5
) -> list[dict[str, str]]:
    """List a project's tasks, abbreviated.

    Args:
        project: the project's name.
        status: open or done tasks.
        limit: at most this many tasks.
    """
    return [
        {
            "id": f"T-{100 + i}",
            "title": f"{project} task {i}",
            "status": status,
            "due": f"2026-02-{10 + i:02d}",
        }
        for i in range(limit)
    ]


LIST_TASKS = Tool.from_function(list_tasks, tier="list")
"""The one quick, typed application tool the engine gets (the peer calls :func:`list_tasks` directly)."""


# -- one turn --------------------------------------------------------------------------------------


@dataclass
class Sample:
    """One measured turn, in nanoseconds (phases in milliseconds)."""

    wall_ns: int
    model_ns: int
    done_ns: int = 0
    phases: dict[str, float] = field(default_factory=dict)
    compactions: int = 0

    @property
    def overhead_ns(self) -> int:
        """The engine's own time until the answer is complete (``done``), less the time inside the model."""
        return (self.done_ns or self.wall_ns) - self.model_ns

    @property
    def after_ns(self) -> int:
        """Work after ``done`` (records, memory maintenance), before the turn releases the chat."""
        return self.wall_ns - (self.done_ns or self.wall_ns)


def _phases(
    overhead_ms: float, trace: Sequence[Mapping[str, Any]], calls: Sequence[StoreCall]
) -> dict[str, float]:
    """Split a turn's overhead: context build and tools (spans less their store calls), store, rest."""
    spans: dict[str, list[tuple[float, float]]] = {"context.build": [], "tool.call": []}
    totals = {"context.build": 0.0, "tool.call": 0.0}
    for span in trace:
        if span.get("kind") == "span" and span["name"] in spans:
            begin = datetime.fromisoformat(span["started_at"]).timestamp()
            spans[span["name"]].append((begin, begin + span["duration_ms"] / 1000))
            totals[span["name"]] += span["duration_ms"]
    writes = reads = 0.0
    for call in calls:
        ms = call.ns / 1e6
        if call.write:
            writes += ms
        else:
            reads += ms
        middle = call.started + call.ns / 2e9
        for name, intervals in spans.items():
            if any(begin <= middle <= end for begin, end in intervals):
                totals[name] -= ms
                break
    context, tools = max(0.0, totals["context.build"]), max(0.0, totals["tool.call"])
    return {
        "context": context,
        "store_writes": writes,
        "store_reads": reads,
        "tools": tools,
        "rest": overhead_ms - context - tools - writes - reads,
    }


@dataclass
class _Bench:
    """One session size: the store and its clock, the engine, the fake model, the history and what to say."""

    store: Store
    clock: StoreClock
    engine: ChatEngine
    model: TimedModel
    user_id: str
    history: list[Message]
    questions: deque[str]
    answers: deque[str]
    calls: int = 0

    def chat(self) -> str:
        """A new chat holding the session's history, loaded through ``ChatMemory.add``."""
        chat_id = self.store.create_chat(self.user_id).id
        memory = ChatMemory(
            self.store,
            self.user_id,
            chat_id,
            Memory(blobs=StoreBlobs(self.store, self.user_id), counter=get_counter(ENCODING)),
        )
        for message in self.history:
            body = {k: v for k, v in message.items() if k != "timestamp"}
            memory.add(body, at=datetime.fromisoformat(message["timestamp"]))
        return chat_id

    def script(self, shape: Shape) -> tuple[str, ToolCall | None, str]:
        """Queue the fake model's responses for one turn; returns the question, the call and the answer."""
        question, answer = self.questions[0], self.answers[0]
        self.questions.rotate(-1)
        self.answers.rotate(-1)
        usage = Usage(2_000, 60, 2_060)
        call = None
        if shape == "tool":
            self.calls += 1
            project = _PROJECTS[self.calls % len(_PROJECTS)]
            call = ToolCall(
                f"call_bench_{self.calls}", "list_tasks", json.dumps({"project": project, "limit": 5})
            )
            self.model.replies.append(ModelResponse(tool_calls=[call], usage=usage))
        self.model.replies.append(ModelResponse(text=answer, usage=usage))
        return question, call, answer

    async def turn(self, chat_id: str, shape: Shape) -> tuple[Sample, tuple[str, ToolCall | None, str]]:
        """Run and time one engine turn of ``shape``; the phases come from its stored trace."""
        said = self.script(shape)
        self.clock.take()
        self.model.inside_ns = 0
        start = time.perf_counter_ns()
        events = []
        done_ns, done_at = 0, math.inf
        async for event in self.engine.turn(self.user_id, chat_id, said[0]):
            events.append(event)
            if isinstance(event, DoneEvent):
                done_ns, done_at = time.perf_counter_ns() - start, time.time()
        wall = time.perf_counter_ns() - start
        result = TurnResult(events, events[-1])  # type: ignore[arg-type]
        sample = Sample(wall, self.model.inside_ns, done_ns)
        calls = [c for c in self.clock.take() if c.started < done_at]  # the answer's path only
        if result.done.reason != "answer" or result.error is not None or self.model.replies:
            raise RuntimeError(f"the benchmark turn did not end as planned: {result.done}, {result.error}")
        entry = self.store.list_audit(self.user_id, chat_id=chat_id, event="turn", limit=1)[0]
        if entry.details["trace_id"] != result.done.trace_id:
            raise RuntimeError("the audit log's last turn is not the turn just run")
        trace = entry.details["trace"]
        sample.phases = _phases(sample.overhead_ns / 1e6, trace, calls)
        sample.compactions = sum(1 for span in trace if span["name"] == "compaction")
        self.clock.take()
        return sample, said


class _Peer:
    """A minimal app without tierwise: store each message, keep the history, ``trim_messages`` it."""

    def __init__(self, store: Store, user_id: str, history: Sequence[Message], system: str) -> None:
        from langchain_core.messages import trim_messages

        from tierwise.bench.pack import langchain_counter, to_langchain

        self.store, self.user_id = store, user_id
        self.counter = TokenCounter(ENCODING)  # its own cache: each side encodes its new texts itself
        self.lc_count = langchain_counter(self.counter)
        self.to_langchain, self.trim_messages = to_langchain, trim_messages
        self.chat_id = store.create_chat(user_id).id
        body = [{k: v for k, v in m.items() if k != "timestamp"} for m in history]
        for message in body:
            self._store(message)
        self.base = to_langchain([{"role": "system", "content": system}, *body])
        self.history: list[Any] = []
        self.reset()

    def reset(self) -> None:
        """Start again from the session's history (when tierwise moves to a fresh chat)."""
        self.history = list(self.base)

    def _store(self, message: Message) -> None:
        token_count = self.counter.count_message(message)
        self.store.add_message(self.user_id, self.chat_id, message, token_count=token_count)

    def _say(self, message: Message) -> None:
        self._store(message)
        self.history.extend(self.to_langchain([message]))

    def _trim(self) -> list[Any]:
        trimmed: list[Any] = self.trim_messages(
            self.history,
            max_tokens=BUDGET.available,
            strategy="last",
            token_counter=self.lc_count,
            include_system=True,
            start_on="human",
            allow_partial=False,
        )
        return trimmed

    def turn(self, question: str, call: ToolCall | None, answer: str) -> int:
        """One turn of the same shape, timed (no model: nothing to subtract)."""
        start = time.perf_counter_ns()
        self._say({"role": "user", "content": question})
        self._trim()  # what would be sent to the model
        if call is not None:
            self._say({"role": "assistant", "content": None, "tool_calls": [call.to_openai()]})
            result = json.dumps(list_tasks(**json.loads(call.arguments)))
            self._say({"role": "tool", "tool_call_id": call.id, "content": result})
            self._trim()
        self._say({"role": "assistant", "content": answer})
        return time.perf_counter_ns() - start


# -- statistics and output -------------------------------------------------------------------------


def _stats(samples_ns: Sequence[int]) -> dict[str, float]:
    ordered = sorted(samples_ns)

    def rank(q: float) -> float:  # nearest rank
        return ordered[max(0, math.ceil(q * len(ordered)) - 1)] / 1e6

    return {
        "p50_ms": statistics.median(ordered) / 1e6,
        "p95_ms": rank(0.95),
        "p99_ms": rank(0.99),
        "mean_ms": statistics.fmean(ordered) / 1e6,
        "max_ms": ordered[-1] / 1e6,
        "runs": len(ordered),
    }


def _shape_result(samples: list[Sample], peer: list[int]) -> dict[str, Any]:
    overhead = _stats([s.overhead_ns for s in samples])
    out: dict[str, Any] = {
        "overhead": overhead,
        "wall": _stats([s.wall_ns for s in samples]),
        "after_done": _stats([s.after_ns for s in samples]),
        "model_mean_ms": statistics.fmean(s.model_ns for s in samples) / 1e6,
        "phases_mean_ms": {p: statistics.fmean(s.phases[p] for s in samples) for p in PHASES},
        "phases_p50_ms": {p: statistics.median(s.phases[p] for s in samples) for p in PHASES},
        "compactions": sum(s.compactions for s in samples),
        "peer": _stats(peer) if peer else None,
    }
    if peer:
        for p in ("p50", "p95", "mean"):
            out[f"ratio_{p}"] = overhead[f"{p}_ms"] / out["peer"][f"{p}_ms"]
    return out


_HEADERS = [
    "messages",
    "turn",
    "turns",
    "p50",
    "p95",
    "p99",
    "mean",
    "context",
    "store writes",
    "store reads",
    "tools",
    "rest",
    "after done",
    "peer p50",
    "peer p95",
    "ratio p50 / p95",
]
_NOTE = (
    "Milliseconds of engine overhead per turn (time to the turn's `done` event less the time inside the "
    "fake model). answer = 1 model call; tool = model → 1 tool call → model. Phase columns are means and add "
    "up to the mean: context = context.build spans (memory layers + packer, audit and snapshot excluded), "
    "store writes/reads = every store call, tools = tool.call spans less their store calls, rest = "
    "everything else (streaming, events, memory bookkeeping on each stored message, accounting, trace). "
    "peer = store the messages with Store.add_message + langchain-core trim_messages to the same budget "
    "(o200k counts, cached); ratio = tierwise ÷ peer. messages = the session's size at the measured turns "
    "(a chat takes turns until it has grown by ~15%, then a fresh chat of the same size takes over). "
    "p99 is the nearest rank: with 60 turns, the slowest. after done = mean time the engine keeps "
    "working after `done`, off the answer's path (pack audits and snapshots, the turn's record and "
    "trace, summaries of segments closed in the turn, search-index rebuilds)."
)


def _cells(row: dict[str, Any], shape: Shape) -> list[str]:
    r = row[shape]
    o, ph, peer = r["overhead"], r["phases_mean_ms"], r["peer"]
    low, high = row["messages_range"]
    return [
        f"{low:,}–{high:,}",
        shape,
        str(o["runs"]),
        f"{o['p50_ms']:.2f}",
        f"{o['p95_ms']:.2f}",
        f"{o['p99_ms']:.2f}",
        f"{o['mean_ms']:.2f}",
        *(f"{ph[p]:.2f}" for p in PHASES),
        f"{r['after_done']['mean_ms']:.2f}",
        f"{peer['p50_ms']:.2f}" if peer else "—",
        f"{peer['p95_ms']:.2f}" if peer else "—",
        f"{r['ratio_p50']:.1f}× / {r['ratio_p95']:.1f}×" if peer else "—",
    ]


def results_table(rows: Sequence[dict[str, Any]]) -> Table:
    """The results as a rich table: a row per session size and turn shape."""
    table = Table(title="tierwise chat engine: overhead per turn (milliseconds)", title_justify="left")
    for header in _HEADERS:
        table.add_column(header, justify="left" if header == "turn" else "right")
    for row in rows:
        for shape in SHAPES:
            table.add_row(*_cells(row, shape))
    return table


def _verdict(rows: Sequence[dict[str, Any]]) -> str | None:
    row = next((r for r in rows if r["size"] == TARGET_SIZE), None)
    if row is None:
        return None
    worst = max(row[s]["overhead"]["p95_ms"] for s in SHAPES)
    met = "met" if worst < TARGET_P95_MS else "missed"
    return (
        f"Target p95 < {TARGET_P95_MS:g} ms at {TARGET_SIZE} messages: {met} "
        f"(answer {row['answer']['overhead']['p95_ms']:.2f} ms, "
        f"tool round {row['tool']['overhead']['p95_ms']:.2f} ms)."
    )


def _markdown(rows: Sequence[dict[str, Any]], machine: str) -> str:
    align = [":---" if h == "turn" else "---:" for h in _HEADERS]
    lines = ["| " + " | ".join(cells) + " |" for cells in [_HEADERS, align]]
    lines += ["| " + " | ".join(_cells(r, s)) + " |" for r in rows for s in SHAPES]
    first = ", ".join(f"{r['size']:,}: {r['first_turn']['p50_ms']:.1f} ms" for r in rows)
    verdict = _verdict(rows)
    return (
        f"{machine}\n\n"
        + "\n".join(lines)
        + f"\n\n{_NOTE}\n\nFirst turn after a chat is loaded (p50, not in the table): {first}.\n"
        + (f"\n{verdict}\n" if verdict else "")
    )


# -- the run ---------------------------------------------------------------------------------------


def _texts(size: int, needed: int) -> tuple[deque[str], deque[str]]:
    """Fresh questions and answers for the measured turns (a conversation of its own, other seed)."""
    messages = synthetic_history(max(4 * needed + 10, 100), seed=SEED + 1 + size)
    questions = [m["content"] for m in messages if m["role"] == "user"]
    answers = [m["content"] for m in messages if m["role"] == "assistant" and m.get("content")]
    return deque(questions), deque(answers)


async def _measure_size(
    bench: _Bench, peer: _Peer | None, size: int, turns: int, console: Console
) -> dict[str, Any]:
    per_chat = max(1, int(size * GROWTH) // 6)  # a round (answer + tool turn) adds 6 messages
    samples: dict[Shape, list[Sample]] = {s: [] for s in SHAPES}
    peers: dict[Shape, list[int]] = {s: [] for s in SHAPES}
    first: list[int] = []
    sizes: list[int] = []
    chats = 0
    done = 0
    while done < turns:
        chat_id = bench.chat()
        chats += 1
        warm, said = await bench.turn(chat_id, "answer")  # loads the chat into the engine: not steady state
        first.append(warm.overhead_ns)
        if peer is not None:
            peer.reset()
            peer.turn(*said)
        for _ in range(min(per_chat, turns - done)):
            for shape in SHAPES:  # interleaved: tierwise answer, peer answer, tierwise tool, peer tool
                sizes.append(bench.store.get_chat(bench.user_id, chat_id).message_count)
                sample, said = await bench.turn(chat_id, shape)
                samples[shape].append(sample)
                if peer is not None:
                    peers[shape].append(peer.turn(*said))
            done += 1
        console.print(f"  {size:,} messages: {done}/{turns} rounds", end="\r")
    console.print(" " * 60, end="\r")
    return {
        "size": size,
        "messages_range": [min(sizes), max(sizes)],
        "chats": chats,
        "rounds_per_chat": per_chat,
        "first_turn": _stats(first),
        **{shape: _shape_result(samples[shape], peers[shape]) for shape in SHAPES},
    }


async def _run(
    sizes: Sequence[int], turns: int, model_delay_s: float, peer_enabled: bool, console: Console
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="tierwise-bench-engine-") as tmp:
        store = Store.open(f"sqlite:///{Path(tmp) / 'bench.db'}")
        try:
            clock = StoreClock(store)
            user_id = store.create_user("bench").id
            model = TimedModel(delay_s=model_delay_s, encoding=ENCODING)
            engine = ChatEngine(store, model, tools=[LIST_TASKS], budget=BUDGET)
            for size in sizes:
                # no system prompt (the engine has its own); ends on an answer
                history = timestamped(synthetic_history(size + 2)[1:-1])
                questions, answers = _texts(size, 4 * turns)
                bench = _Bench(store, clock, engine, model, user_id, history, questions, answers)
                peer = _Peer(store, user_id, history, engine.system) if peer_enabled else None
                rows.append(await _measure_size(bench, peer, size, turns, console))
        finally:
            store.close()
    return rows


def run(
    *,
    sizes: Sequence[int] = (200, 1000, 2000),
    turns: int = 60,
    out: Path | None = None,
    console: Console | None = None,
    model_delay_s: float = 0.0,
) -> dict[str, Any]:
    """Measure the chat engine's per-turn overhead at each session size; print a table, optionally write it.

    Args:
        sizes: session sizes in messages (the history each measured chat starts from).
        turns: measured turns of each shape (answer, tool round) per size, after one warm-up turn per chat.
        out: if given, write the results as JSON there and a markdown table beside it (``.md``).
        console: where to print (default: a new :class:`rich.console.Console`).
        model_delay_s: seconds the fake model waits inside each call (subtracted like any model time).

    Returns:
        The run's description (machine, budget, target) and one result per size under ``"results"``.

    Raises:
        ValueError: ``turns`` is below 1 or a size below 2.
    """
    if turns < 1 or any(size < 2 for size in sizes):
        raise ValueError("turns must be 1 or more and every size 2 messages or more")
    console = console or Console()
    try:
        lc_version: str | None = version("langchain-core")
        import langchain_core.messages  # noqa: F401
    except (ImportError, PackageNotFoundError):
        lc_version = None
        console.print("langchain-core is not installed: the peer is skipped (pip install -e '.[bench]')")
    machine = (
        f"python {platform.python_version()} · {platform.platform()} · {os.cpu_count()} CPUs · "
        f"SQLite file store · encoding {ENCODING} · budget {BUDGET.window:,} − {BUDGET.reserve:,} reserve"
        + (f" · langchain-core {lc_version}" if lc_version else " · no peer")
    )
    console.print(machine)
    rows = asyncio.run(_run(sizes, turns, model_delay_s, lc_version is not None, console))
    print_table(console, results_table(rows), keep=2)
    console.print(_NOTE)
    verdict = _verdict(rows)
    if verdict:
        console.print(verdict)
    body: dict[str, Any] = {
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "langchain_core": lc_version,
        "encoding": ENCODING,
        "budget": {"window": BUDGET.window, "reserve": BUDGET.reserve, "available": BUDGET.available},
        "turns": turns,
        "model_delay_s": model_delay_s,
        "target": {"size": TARGET_SIZE, "p95_ms": TARGET_P95_MS},
        "results": rows,
    }
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(body, indent=2) + "\n", encoding="utf-8")
        out.with_suffix(".md").write_text(_markdown(rows, machine), encoding="utf-8")
    return body


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m tierwise.bench.engine [--sizes 200,1000,2000] [--turns 60] [--out FILE]``."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m tierwise.bench.engine", description="The chat engine's overhead per turn."
    )
    parser.add_argument("--sizes", default="200,1000,2000", help="session sizes in messages, comma-separated")
    parser.add_argument("--turns", type=int, default=60, help="measured turns of each shape per size")
    parser.add_argument("--out", type=Path, default=None, help="write JSON here and markdown beside it")
    args = parser.parse_args(argv)
    run(sizes=tuple(int(size) for size in args.sizes.split(",")), turns=args.turns, out=args.out)


if __name__ == "__main__":  # pragma: no cover
    main()
