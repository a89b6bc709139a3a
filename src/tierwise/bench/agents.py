"""What tierwise sends in an agent loop: real coding-agent trajectories replayed step by step.

Each trajectory (``../shared/bench/agent-trajectories/*.json``: a system prompt, one user task, then
assistant messages with one tool call each and the tool's result) is replayed model call by model
call: before every assistant message ``i``, each contender builds the request it would send from
``messages[:i]``. Contenders, in the same run, at each budget (``Budget(window=B)``, no reserve):

* **full history**: ``messages[:i]`` as they are;
* **trim_messages**: langchain-core's ``trim_messages(strategy="last", include_system=True,
  start_on="human")`` at the budget, with exact counts (as ``tierwise bench cache``): with one task
  and many tool steps, what is left may be the system prompt alone — the peer as it behaves;
* **trim_messages (human|ai)**: the same with ``start_on=("human", "ai")``, the sliding window an
  agent would configure (the newest steps that fit, each call with its result);
* **tierwise chat**: :class:`~tierwise.memory.persist.ChatMemory` over a SQLite store, used as the
  chat engine uses it — every message stored as it happens; before each model call,
  ``chat.pack(budget, current, upto=start, record=False)`` with ``current`` the turn so far (from
  the newest user message; tool results whole up to a quarter of the budget, as the engine's
  ``t.whole`` holds them, larger ones as stored) and memory's retrieval tools once the chat has a past
  (:func:`tierwise.chat.housekeeping.offered`, the guide joining the system prompt with them);
* **tierwise endpoint**: the real ``POST /v1/chat/completions`` of :mod:`tierwise.server` in-process,
  as an agent would use it — request ``i`` sends ``messages[:i]`` (no tools of its own); a scripted
  upstream records what it receives (the request measured) and answers with ``messages[i]``.

A step whose request tierwise cannot build (a ``BudgetError``, an HTTP error) gets no request.
The measures are in :mod:`tierwise.bench.agents_metrics`; bench/README.md says what they mean.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from rich.console import Console

from tierwise.bench.agents_metrics import (
    Request,
    Score,
    blob_hashes,
    effective,
    kept_items,
    print_summary,
    score_request,
    summarize,
    tokens,
    unpaired,
    write_results,
)
from tierwise.budget import Budget
from tierwise.errors import BudgetError, InputError
from tierwise.tokens import DEFAULT_ENCODING, TokenCounter, get_counter

__all__ = ["CONTENDERS", "Trajectory", "load_trajectories", "run_agents_benchmark"]

Message = dict[str, Any]

CONTENDERS = (
    "full history",
    "trim_messages",
    "trim_messages (human|ai)",
    "tierwise chat",
    "tierwise endpoint",
)
DEFAULT_DATA = Path("../shared/bench/agent-trajectories")
DEFAULT_BUDGETS = (8_000, 16_000, 32_000)


@dataclass(frozen=True)
class Trajectory:
    """One agent run: its name and OpenAI-format messages."""

    name: str
    messages: list[Message]

    @property
    def steps(self) -> list[int]:
        """Indexes of the assistant messages: the model calls."""
        return [i for i, m in enumerate(self.messages) if m.get("role") == "assistant"]

    @property
    def system(self) -> int:
        """How many system messages lead."""
        n = 0
        while n < len(self.messages) and self.messages[n].get("role") in ("system", "developer"):
            n += 1
        return n


@dataclass
class Run:
    """One contender on one trajectory at one budget: a request (or none) per step, and what failed."""

    requests: dict[int, Request | None] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    chats: int | None = None  # the endpoint's: chats the trajectory made


def load_trajectories(data: Path, limit: int | None = None) -> list[Trajectory]:
    """The ``*.json`` trajectories in ``data``, by name.

    Raises:
        InputError: ``data`` is not a directory of trajectories, or one is not ``{"messages": [...]}``.
    """
    if not data.is_dir():
        raise InputError(
            f"no such directory: {data}; pass --data DIR holding the agent trajectories (e.g. {DEFAULT_DATA})"
        )
    paths = sorted(data.glob("*.json"))
    if not paths:
        raise InputError(f"no *.json trajectories in {data}; pass --data DIR holding them")
    out: list[Trajectory] = []
    for path in paths[: limit if limit else None]:
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InputError(f"cannot read {path}: {exc}") from None
        messages = raw.get("messages") if isinstance(raw, Mapping) else None
        if not isinstance(messages, list) or not all(isinstance(m, Mapping) for m in messages):
            raise InputError(f'{path} is not a trajectory: expected {{"messages": [...], "meta": {{...}}}}')
        out.append(Trajectory(path.stem, [dict(m) for m in messages]))
    return out


# -- contenders ---------------------------------------------------------------------------------------


def full_history(traj: Trajectory, budget: Budget, counter: TokenCounter, workdir: Path) -> Run:
    """Everything so far, as it is."""
    return Run({i: Request(i, traj.messages[:i]) for i in traj.steps})


def trim_last(
    traj: Trajectory,
    budget: Budget,
    counter: TokenCounter,
    workdir: Path,
    start_on: str | tuple[str, ...] = "human",
) -> Run:
    """langchain-core ``trim_messages(strategy="last", include_system=True, start_on=start_on)``."""
    from langchain_core.messages import trim_messages

    from tierwise.bench.pack import langchain_counter, to_langchain

    lc_messages = to_langchain(traj.messages)
    system = traj.system
    count = langchain_counter(counter)
    run = Run()
    for i in traj.steps:
        kept = trim_messages(
            lc_messages[:i],
            max_tokens=budget.available,
            strategy="last",
            token_counter=count,
            include_system=bool(system),
            start_on=start_on,
            allow_partial=False,
        )
        k = len(kept) - (1 if system and kept and kept[0].type == "system" else 0)
        run.requests[i] = Request(i, [*traj.messages[:system], *traj.messages[i - k : i]])
    return run


def trim_last_ai(traj: Trajectory, budget: Budget, counter: TokenCounter, workdir: Path) -> Run:
    """The same, starting on a user *or an assistant* message: the newest steps that fit, pairs whole."""
    return trim_last(traj, budget, counter, workdir, start_on=("human", "ai"))


def _memory_factory(counter: TokenCounter) -> Callable[[Any], Any]:
    """The chat engine's memory (:func:`tierwise.chat.memories.default_memory`), on ``counter``."""
    from tierwise.chat.memories import default_memory
    from tierwise.memory.engine import Memory
    from tierwise.memory.policy import MemoryPolicy

    if counter.encoding_name == DEFAULT_ENCODING:
        return default_memory
    return lambda blobs: Memory(blobs=blobs, policy=MemoryPolicy(defer_summaries=True), counter=counter)


def _segments(memory: Any, offset: int) -> dict[int, str]:
    """Trajectory message index → id of the memory segment holding it (memory skips the system)."""
    return {k + offset: seg.id for seg in memory.segments for k in range(seg.first, seg.last + 1)}


def _retrieval_tools() -> Any:
    """A registry of memory's two retrieval tools: what an engine without app tools can offer."""
    from tierwise.chat.housekeeping import RETRIEVAL_TOOL_NAMES, memory_tools
    from tierwise.tools import ToolRegistry

    return ToolRegistry([t for t in memory_tools() if t.name in RETRIEVAL_TOOL_NAMES])


def tierwise_chat(traj: Trajectory, budget: Budget, counter: TokenCounter, workdir: Path) -> Run:
    """Memory over a real store, packed before each model call with the chat engine's own pieces.

    The turn's state is the engine's :class:`~tierwise.chat.turn.TurnState`: its user message's
    place, and the tool results it reads whole (``store_tool_results`` stores each
    result as the engine does and decides that, with the engine's default ``max_result_tokens``);
    ``current_messages`` gives the turn so far, ``step_tools`` the tools of each call.
    """
    from types import SimpleNamespace

    from tierwise.chat import housekeeping
    from tierwise.chat.trace import Tracer
    from tierwise.chat.turn import TurnState, current_messages, step_tools, store_tool_results
    from tierwise.memory.persist import ChatMemory, StoreBlobs
    from tierwise.store import Store
    from tierwise.tools.results import ToolResult

    store = Store.open(f"sqlite:///{workdir / 'chat.db'}")
    try:
        user = store.create_user("agent")
        row = store.create_chat(user.id, title=traj.name)
        chat = ChatMemory(store, user.id, row.id, _memory_factory(counter)(StoreBlobs(store, user.id)))
        engine: Any = SimpleNamespace(budget=budget, max_result_tokens=None)  # ChatEngine's defaults
        messages, offset = traj.messages, traj.system
        system = "\n\n".join(str(m.get("content") or "") for m in messages[:offset])
        registry = _retrieval_tools()
        run = Run()
        turn = TurnState(user.id, row.id, chat, start=0, tracer=Tracer())
        for i in range(offset, len(messages)):
            message = messages[i]
            role = message.get("role")
            if role == "user":
                turn = TurnState(user.id, row.id, chat, start=len(chat.memory.messages), tracer=Tracer())
                chat.add(message)
                chat.memory.begin_turn()
            elif role == "assistant":
                turn.steps += 1
                current = current_messages(turn)
                past = housekeeping.has_past(chat.memory)
                tools = step_tools(registry, None, chat.memory, turn.steps, current, "", None)
                build = partial(_pack, chat, budget, current, system, turn.start)
                began = time.perf_counter()
                try:
                    pack = build(tools)
                    if not past and housekeeping.has_past(chat.memory):  # as the engine: tools join now
                        pack = build(step_tools(registry, None, chat.memory, turn.steps, current, "", None))
                except BudgetError as exc:
                    run.requests[i] = None
                    run.errors.append(str(exc))
                else:
                    ms = (time.perf_counter() - began) * 1000
                    run.requests[i] = Request(
                        i, pack.messages, pack.tools, _segments(chat.memory, offset), ms
                    )
                while chat.memory.summarize_step():  # the engine's upkeep while the model answers
                    pass
                chat.add(message)
                turn.pending_calls = _calls(message)
            elif role == "tool":
                call = next((c for c in turn.pending_calls if c.id == message.get("tool_call_id")), None)
                name = call.name if call is not None else "tool"
                call_id = str(message.get("tool_call_id"))
                turn.finished[call_id] = ToolResult(call_id, name, str(message.get("content") or ""), True)
                if all(c.id in turn.finished for c in turn.pending_calls):
                    store_tool_results(turn, engine.max_result_tokens)  # as the engine stores them
                    turn.finished.clear()
            else:
                chat.add(message)
        return run
    finally:
        store.close()


def _pack(
    chat: Any, budget: Budget, current: Any, system: str, start: int, tools: list[dict[str, Any]]
) -> Any:
    """One model call's pack on the chat path, ``tools`` offered and their guide joined (as the engine)."""
    from tierwise.chat import housekeeping

    guided = housekeeping.guided(system, tools) or None
    return chat.pack(budget, current, system=guided, tools=tools, upto=start, record=False)


@contextmanager
def _timed_packs() -> Iterator[list[float]]:
    """Times every ``ChatMemory.pack`` while the block runs (the endpoint's, without changing it)."""
    from tierwise.memory.persist import ChatMemory

    times: list[float] = []
    original = ChatMemory.pack

    def pack(self: ChatMemory, *args: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        try:
            return original(self, *args, **kwargs)
        finally:
            times.append((time.perf_counter() - began) * 1000)

    ChatMemory.pack = pack  # type: ignore[method-assign]
    try:
        yield times
    finally:
        ChatMemory.pack = original  # type: ignore[method-assign]


def _calls(message: Mapping[str, Any]) -> list[Any]:
    """An assistant message's tool calls as the engine's ``ToolCall``s."""
    from tierwise.providers.base import ToolCall

    return [
        ToolCall(str(c["id"]), str(c["function"]["name"]), str(c["function"].get("arguments") or "{}"))
        for c in message.get("tool_calls") or ()
    ]


def _answer(message: Mapping[str, Any]) -> Any:
    """The recorded assistant message as the scripted upstream's answer."""
    from tierwise.providers.base import ModelResponse

    text = str(message.get("content") or "")
    return ModelResponse(text=text, tool_calls=_calls(message), finish_reason="stop")


def tierwise_endpoint(traj: Trajectory, budget: Budget, counter: TokenCounter, workdir: Path) -> Run:
    """The OpenAI-compatible endpoint, in-process, sent the whole conversation at every step."""
    return asyncio.run(_endpoint(traj, budget, counter, workdir))


async def _endpoint(traj: Trajectory, budget: Budget, counter: TokenCounter, workdir: Path) -> Run:
    import httpx

    from tierwise.chat.engine import ChatEngine
    from tierwise.providers.base import ModelRequest
    from tierwise.providers.testing import FunctionModel
    from tierwise.server import create_app
    from tierwise.store import Store

    messages = traj.messages
    step = [0]
    received: dict[int, ModelRequest] = {}

    def upstream(request: ModelRequest) -> Any:
        received[step[0]] = request
        return _answer(messages[step[0]])

    store = Store.open(f"sqlite:///{workdir / 'endpoint.db'}")
    run = Run()
    try:
        engine = ChatEngine(
            store,
            FunctionModel(upstream, model="agent", counter=counter),
            budget=budget,
            memory_factory=_memory_factory(counter),
        )
        app = create_app(store, engine, shared=False)
        user = app.state.user_of(None)
        transport = httpx.ASGITransport(app=app)
        with _timed_packs() as times:
            async with httpx.AsyncClient(transport=transport, base_url="http://agent", timeout=600) as http:
                for i in traj.steps:
                    step[0] = i
                    before = len(times)
                    body = {"model": "agent", "messages": messages[:i], "stream": False}
                    response = await http.post("/v1/chat/completions", json=body)
                    if response.status_code != 200 or i not in received:
                        run.requests[i] = None
                        run.errors.append(f"{response.status_code}: {_error_text(response)}")
                        continue
                    sent = received[i]
                    chat_id = response.headers.get("X-Tierwise-Chat", "")
                    held = engine.memories.held(user, chat_id)
                    run.requests[i] = Request(
                        i,
                        [dict(m) for m in sent.messages],
                        [dict(t) for t in sent.tools or ()],
                        _segments(held.memory, traj.system) if held is not None else {},
                        sum(times[before:]) if len(times) > before else None,
                    )
            sessions = getattr(app.state, "openai_sessions", None)
            if sessions is not None:
                await sessions.drain()
        run.chats = sum(len(store.list_chats(user, context_type=kind)) for kind in ("api", "api-superseded"))
        return run
    finally:
        store.close()


def _error_text(response: Any) -> str:
    try:
        return str(response.json()["error"]["message"])
    except (ValueError, KeyError, TypeError):
        return str(response.text)[:300]


CONTENDER_FUNCS: dict[str, Callable[[Trajectory, Budget, TokenCounter, Path], Run]] = {
    "full history": full_history,
    "trim_messages": trim_last,
    "trim_messages (human|ai)": trim_last_ai,
    "tierwise chat": tierwise_chat,
    "tierwise endpoint": tierwise_endpoint,
}


# -- measuring ----------------------------------------------------------------------------------------


def measure(
    traj: Trajectory, runs: Mapping[str, Run], counter: TokenCounter, window: int
) -> list[dict[str, Any]]:
    """One row per contender: steps with a request, evidence recall, effective input vs the full history."""
    messages = traj.messages
    hashes = {
        j: blob_hashes(str(m.get("content") or "")) for j, m in enumerate(messages) if m.get("role") == "tool"
    }
    kept = {i: kept_items(messages, i) for i in traj.steps}
    full_requests = [Request(i, messages[:i]) for i in traj.steps]
    _, full_billed = effective(full_requests, counter)
    rows = []
    for name, run in runs.items():
        requests = [run.requests.get(i) for i in traj.steps]
        built = [r for r in requests if r is not None]
        score = Score()
        for i in traj.steps:
            score.add(score_request(kept[i], run.requests.get(i), messages, hashes))
        sent, billed = effective(requests, counter)
        rows.append(
            {
                "trajectory": traj.name,
                "budget": window,
                "contender": name,
                "steps": len(traj.steps),
                "requests": len(built),
                "request_share": len(built) / len(traj.steps) if traj.steps else 0.0,
                "items": score.items,
                "verbatim": score.verbatim,
                "pointer": score.pointer,
                "named": score.named,
                "tokens_sent": sent,
                "effective": round(billed),
                "vs_full": billed / full_billed if full_billed else 0.0,
                "max_request": max((tokens(r, counter) for r in built), default=0),
                "unpaired_requests": sum(1 for r in built if unpaired(r.messages)),
                "pack_ms": [round(r.ms, 3) for r in built if r.ms is not None],
                "chats": run.chats,
                "errors": len(run.errors),
                "first_error": run.errors[0] if run.errors else None,
            }
        )
    return rows


def run_agents_benchmark(
    data: Path = DEFAULT_DATA,
    *,
    budgets: Sequence[int] = DEFAULT_BUDGETS,
    contenders: Sequence[str] = CONTENDERS,
    encoding: str = DEFAULT_ENCODING,
    limit: int | None = None,
    out: Path | None = None,
    console: Console | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Replay every trajectory at every budget with every contender; print and return the figures.

    With ``out`` (``….json``) the result is written there as JSON and, beside it, as markdown.

    Raises:
        InputError: no trajectories at ``data``, or an unknown contender.
    """
    console = console or Console()
    unknown = [c for c in contenders if c not in CONTENDER_FUNCS]
    if unknown:
        raise InputError(f"unknown contender {unknown[0]!r}; choose from {', '.join(CONTENDERS)}")
    counter = get_counter(encoding)
    trajectories = load_trajectories(data, limit)
    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    for traj in trajectories:
        for window in budgets:
            budget = Budget(window=window)
            runs: dict[str, Run] = {}
            for name in contenders:
                if progress is not None:
                    progress(f"{traj.name} · {window:,} · {name}")
                with tempfile.TemporaryDirectory(prefix="tierwise-agents-") as workdir:
                    runs[name] = CONTENDER_FUNCS[name](traj, budget, counter, Path(workdir))
            rows.extend(measure(traj, runs, counter, window))
    summary = summarize(rows)
    print_summary(summary, console)
    result = {
        "generated": datetime.now(UTC).isoformat(timespec="seconds"),
        "encoding": encoding,
        "seconds": round(time.perf_counter() - started, 1),
        "trajectories": [t.name for t in trajectories],
        "budgets": list(budgets),
        "summary": summary,
        "rows": rows,
    }
    if out is not None:
        write_results(result, out)
        console.print(f"written: {out} and {out.with_suffix('.md')}")
    return result
