"""Progressive disclosure, measured: tokens sent for 30 realistic requests, abbreviated vs full records.

Both contenders run the same 30 requests (in 9 short dialogues, each a new chat) through the same
:class:`~tierwise.chat.engine.ChatEngine`, the same offline assistant (so the same tool calls in the
same order) and the same sample workspace (scale 1, fixed date):

- **progressive** — the reference assistant as shipped: abbreviated location context, list/search
  tools return previews and hints, detail tools return full records;
- **full** — the same app without progressive disclosure (seed 002's design): the location context
  holds the full records (the whole project with its full context and all its tasks; the overview's
  projects and tasks in full), and list/search tools return complete records.

"Tokens sent" is the exact prompt size (tiktoken ``o200k_base``, messages + tool definitions) of every
model call a request makes, summed; the budget is large enough (200k) that neither contender is cut by
packing. The report gives the reduction, the initial context (system prompt + profile + location +
related, and the whole first prompt with the tool definitions), tool calls per request and the share
of detail calls. Tool latency is timed separately: every tool, called through the executor on
workspaces of scale 1, 10 and 100 in a SQLite file, p50/p95.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import platform
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from tierwise.budget import Budget
from tierwise.chat.events import DoneEvent, ToolCallComplete
from tierwise.chat.housekeeping import memory_tools
from tierwise.providers.base import Event, ModelRequest, Provider
from tierwise.store import Store
from tierwise.tokens import get_counter
from tierwise.tools import Tool, ToolContext, ToolExecutor, ToolRegistry
from tierwise.workspace.app import assistant_engine
from tierwise.workspace.assistant import OfflineAssistant
from tierwise.workspace.calendar import LocalCalendar
from tierwise.workspace.context import WorkspaceContext
from tierwise.workspace.repository import Profile, Workspace
from tierwise.workspace.sample import generate_workspace
from tierwise.workspace.tools import LIST_TOOLS, WORKSPACE_STRATEGIES, session, workspace_tools

__all__ = ["DIALOGUES", "NOW", "Dialogue", "run"]

ENCODING = "o200k_base"
TODAY = date(2026, 11, 23)
NOW = datetime(2026, 11, 23, 10, 30, tzinfo=UTC)  # a Monday morning in Lisbon
BUDGET = Budget(window=200_000, reserve=2_000)
TARGETS = {"reduction": 0.70, "initial_context": 1_500, "detail_share": 0.30, "tool_p95_ms_x10": 50.0}


@dataclass(frozen=True)
class Dialogue:
    """Requests sent one after another in one chat; ``project`` names the chat's project, if any."""

    name: str
    requests: tuple[str, ...]
    project: str | None = None


DIALOGUES: tuple[Dialogue, ...] = (
    Dialogue(
        "seed 000 §4.3: tasks → detail → projects → project",
        (
            "What are my high priority tasks for the Q4 launch?",
            "Tell me more about the API documentation task",
            "Show me my active projects",
            "I want to work on the Q4 launch project",
        ),
    ),
    Dialogue(
        "calendar and scheduling",
        (
            "What's on my calendar today?",
            "What's on my calendar tomorrow?",
            "Find me a free hour tomorrow morning",
            "Schedule the webhook system task tomorrow at 15:00",
        ),
    ),
    Dialogue(
        "in a project chat",
        (
            "What are my tasks?",
            "Show my blocked tasks",
            "Tell me more about the first one",
            "Add a task to review the homepage copy",
        ),
        project="Website Redesign",
    ),
    Dialogue(
        "notes",
        ("Find notes about pricing", "Tell me more about the first one", "Find notes about the offsite"),
    ),
    Dialogue(
        "triage",
        (
            "Which tasks are overdue?",
            "Mark the changelog task as done",
            "Set the demo videos task to high priority",
        ),
    ),
    Dialogue(
        "in progress",
        (
            "Show my in-progress tasks",
            "Tell me more about the webhook system task",
            "What's on my calendar this week?",
        ),
    ),
    Dialogue(
        "home project",
        ("List my tasks", "Find notes about the kitchen", "Find a free 30 minutes this week"),
        project="Home Renovation",
    ),
    Dialogue(
        "hiring",
        (
            "Show me the hiring project",
            "What are the high priority tasks for hiring?",
            "Create a task to prepare interview questions for the hiring project, high priority, on Friday",
        ),
    ),
    Dialogue(
        "what next",
        (
            "What should I work on next?",
            "Tell me more about the second one",
            "Find notes about marathon training",
        ),
    ),
)


# -- the full-records contender ---------------------------------------------------------------------


def _full_records(tool_: Tool) -> Tool:
    """``tool_`` with every abbreviated task, project or note in its result replaced by the full record."""
    original = tool_.function

    def run(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        ctx = kwargs[tool_.context_parameter or "ctx"]
        ws, user, now = session(ctx)
        if "tasks" in result:
            result["tasks"] = [ws.task_details(user, t["id"], now=now) for t in result["tasks"]]
        if "projects" in result:
            result["projects"] = [
                ws.project_details(user, p["id"], include_notes=True, include_brain_dumps=True, now=now)
                for p in result["projects"]
            ]
        if "notes" in result:
            result["notes"] = [ws.note_details(user, n["id"]) for n in result["notes"]]
        return result

    return dataclasses.replace(tool_, function=run)


def full_tools() -> list[Tool]:
    """The twelve tools as a design without progressive disclosure has them: lists return full records."""
    return [_full_records(t) if t.name in LIST_TOOLS else t for t in workspace_tools()]


class FullContext(WorkspaceContext):
    """The location context with full records instead of abbreviated ones."""

    def project(self, user_id: str, project_id: str, now: datetime) -> str:
        details = self.workspace.project_details(user_id, project_id, include_notes=True, now=now)
        tasks, _ = self.workspace.list_tasks(user_id, project_id=project_id, limit=1_000, now=now)
        details["tasks"] = [self.workspace.task_details(user_id, t["id"], now=now) for t in tasks]
        return "## Current project (full record)\n" + json.dumps(details, ensure_ascii=False)

    def overview(self, user_id: str, profile: Profile, now: datetime) -> str:
        projects, _ = self.workspace.search_projects(user_id, status="active", limit=8)
        full = [self.workspace.project_details(user_id, p["id"], now=now) for p in projects]
        overdue = [
            self.workspace.task_details(user_id, t["id"], now=now) for t in self.overdue(user_id, now)
        ][:5]
        return "## Overview (full records)\n" + json.dumps(
            {"projects": full, "overdue": overdue}, ensure_ascii=False
        )


# -- measuring a contender --------------------------------------------------------------------------


class Recording(Provider):
    """Wraps a provider and keeps every request it is sent."""

    name = "offline"

    def __init__(self, inner: Provider) -> None:
        self.inner, self.model, self.requests = inner, inner.model, list[ModelRequest]()

    async def stream(self, request: ModelRequest) -> AsyncIterator[Event]:
        """Record, then delegate."""
        self.requests.append(request)
        async for event in self.inner.stream(request):
            yield event


def _first_prompt_parts(request: ModelRequest) -> dict[str, int]:
    counter = get_counter(ENCODING)
    systems = [m for m in request.messages if m.get("role") == "system"]  # the prompt and the head
    return {
        "context": sum(counter.count(str(m["content"])) for m in systems),
        "tools": counter.count_tools(request.tools),
        "prompt": counter.count_messages(request.messages) + counter.count_tools(request.tools),
    }


async def _contender(store: Store, user: str, mode: str) -> dict[str, Any]:
    counter = get_counter(ENCODING)
    provider = Recording(OfflineAssistant())
    calendar = LocalCalendar(store)
    engine = assistant_engine(store, provider, budget=BUDGET, calendar=calendar, clock=lambda: NOW)
    if mode == "full":
        engine.registry = ToolRegistry([*full_tools(), *memory_tools()])
        engine.context = FullContext(store, calendar=calendar, clock=lambda: NOW)
    ws = Workspace(store)
    rows = []
    for dialogue in DIALOGUES:
        entity = None
        if dialogue.project:
            entity = ws.search_projects(user, query=dialogue.project, limit=1)[0][0]["id"]
        chat = store.create_chat(user, context_type="project" if entity else "global", entity_id=entity)
        for request in dialogue.requests:
            before = len(provider.requests)
            result = await engine.run(user, chat.id, request)
            sent = provider.requests[before:]
            calls = [e for e in result.events if isinstance(e, ToolCallComplete)]
            done = result.events[-1]
            assert isinstance(done, DoneEvent)
            rows.append(
                {
                    "dialogue": dialogue.name,
                    "request": request,
                    "model_calls": len(sent),
                    "tokens_sent": sum(
                        counter.count_messages(r.messages) + counter.count_tools(r.tools) for r in sent
                    ),
                    "first": _first_prompt_parts(sent[0]),
                    "tools": [c.name for c in calls],
                    "tool_errors": sum(1 for c in calls if not c.success),
                    "done": done.reason,
                    "answer": result.text,
                }
            )
    return {"mode": mode, "requests": rows}


def _tiers() -> dict[str, str]:
    return {t.name: t.tier for t in workspace_tools()}


def _summary(progressive: dict[str, Any], full: dict[str, Any]) -> dict[str, Any]:
    tiers = _tiers()
    prog, fullrows = progressive["requests"], full["requests"]
    sent_p = sum(r["tokens_sent"] for r in prog)
    sent_f = sum(r["tokens_sent"] for r in fullrows)
    calls = [name for r in prog for name in r["tools"]]
    detail = sum(1 for n in calls if tiers.get(n) == "detail")
    listed = sum(1 for n in calls if tiers.get(n) == "list")
    starts = [r for i, r in enumerate(prog) if i == 0 or prog[i - 1]["dialogue"] != r["dialogue"]]
    full_starts = [
        r for i, r in enumerate(fullrows) if i == 0 or fullrows[i - 1]["dialogue"] != r["dialogue"]
    ]
    return {
        "requests": len(prog),
        "tokens_sent": {"progressive": sent_p, "full": sent_f},
        "reduction": round(1 - sent_p / sent_f, 4) if sent_f else 0.0,
        "initial_context": {
            "max": max(r["first"]["context"] for r in starts),
            "mean": round(sum(r["first"]["context"] for r in starts) / len(starts), 1),
            "full_mean": round(sum(r["first"]["context"] for r in full_starts) / len(full_starts), 1),
            "tool_definitions": starts[0]["first"]["tools"],
            "first_prompt_max": max(r["first"]["prompt"] for r in starts),
        },
        "tool_calls": len(calls),
        "tool_calls_per_request": round(len(calls) / len(prog), 2),
        "full_tool_calls_per_request": round(sum(len(r["tools"]) for r in fullrows) / len(fullrows), 2),
        "detail_calls": detail,
        "list_calls": listed,
        "detail_share": round(detail / len(calls), 3) if calls else 0.0,
        "detail_per_list": round(detail / listed, 3) if listed else 0.0,
        "tool_errors": sum(r["tool_errors"] for r in prog),
        "answered": sum(1 for r in prog if r["done"] == "answer"),
    }


# -- tool latency -----------------------------------------------------------------------------------


def _percentile(samples: Sequence[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def _latency_cases(ws: Workspace, user: str) -> dict[str, list[dict[str, Any]]]:
    tasks, _ = ws.list_tasks(user, limit=20)
    projects, _ = ws.search_projects(user, limit=10)
    notes, _ = ws.search_notes(user, limit=10)
    words = ["launch", "review", "plan", "kitchen", "budget", "design", "api", "training", "call", "notes"]
    return {
        "list_tasks": [
            {},
            {"priority": ["high"]},
            {"status": ["in_progress", "blocked"]},
            {"project_id": projects[0]["id"]},
            {"query": "review"},
            {"has_date": True, "sort_by": "start_date"},
        ],
        "search_projects": [{}, {"status": "active"}, {"query": "launch"}, {"has_active_tasks": True}],
        "search_notes": [{"query": w} for w in words[:5]] + [{"project_id": projects[1]["id"]}],
        "get_task_details": [{"task_id": t["id"], "include_project_context": True} for t in tasks[:10]],
        "get_project_details": [{"project_id": p["id"], "include_tasks": True} for p in projects[:5]],
        "get_note_details": [{"note_id": n["id"]} for n in notes[:5]],
        "create_task": [{"title": f"Benchmark task {w}", "project_id": projects[2]["id"]} for w in words[:5]],
        "update_task": [{"task_id": t["id"], "updates": {"priority": "medium"}} for t in tasks[10:15]],
        "update_project_context": [{"project_id": projects[3]["id"], "context_update": "Benchmark line."}],
        "get_calendar_events": [{}, {"timeMin": "2026-11-16T00:00", "timeMax": "2026-11-30T00:00"}],
        "find_available_slots": [
            {"timeMin": "2026-11-24T00:00", "timeMax": "2026-11-28T00:00", "duration_minutes": 60},
            {"timeMin": "2026-11-24T00:00", "timeMax": "2026-11-25T00:00", "preferred_hours": [9, 10, 11]},
        ],
        "schedule_task": [{"task_id": t["id"], "start_time": "2026-11-26T15:00"} for t in tasks[15:18]],
    }


async def _latency(scale: int, repeat: int, directory: Path) -> dict[str, Any]:
    store = Store.open(f"sqlite:///{directory / f'workspace-x{scale}.db'}")
    try:
        user = store.create_user("bench").id
        started = time.perf_counter()
        generate_workspace(store, user, scale=scale, seed=0, today=TODAY)
        generated_s = time.perf_counter() - started
        executor = ToolExecutor(ToolRegistry(workspace_tools()), store=store, strategies=WORKSPACE_STRATEGIES)
        context = ToolContext(user_id=user, extras={"clock": lambda: NOW})
        cases = _latency_cases(Workspace(store), user)
        tools: dict[str, dict[str, float]] = {}
        every: list[float] = []
        for name, argument_sets in cases.items():
            samples: list[float] = []
            for i in range(repeat):
                arguments = json.dumps(argument_sets[i % len(argument_sets)])
                t0 = time.perf_counter()
                result = await executor.execute(f"c{i}", name, arguments, context=context)
                samples.append((time.perf_counter() - t0) * 1000)
                if not result.success:
                    raise RuntimeError(f"{name} failed in the benchmark: {result.content}")
            every += samples
            tools[name] = {
                "p50": round(_percentile(samples, 0.5), 2),
                "p95": round(_percentile(samples, 0.95), 2),
            }
        return {
            "scale": scale,
            "generate_s": round(generated_s, 1),
            "tools": tools,
            "p50": round(_percentile(every, 0.5), 2),
            "p95": round(_percentile(every, 0.95), 2),
            "worst_tool_p95": max(tools.values(), key=lambda s: s["p95"])["p95"],
        }
    finally:
        store.close()


# -- the report -------------------------------------------------------------------------------------


def _markdown(result: dict[str, Any]) -> str:
    s = result["summary"]
    ic = s["initial_context"]
    lines = [
        "# Progressive disclosure (`tierwise bench disclosure`)",
        "",
        f"Machine: {result['machine']}. {s['requests']} requests in {len(DIALOGUES)} dialogues, "
        f"sample workspace ×1, offline assistant, exact `{ENCODING}` counts, both in the same run.",
        "",
        "| figure | progressive | full records | target |",
        "|---|---|---|---|",
        f"| tokens sent (all model calls) | {s['tokens_sent']['progressive']:,} | "
        f"{s['tokens_sent']['full']:,} | |",
        f"| reduction | **{s['reduction']:.1%}** | | ≥ 70% |",
        f"| initial context (system + profile + location + related), mean / max | {ic['mean']:,.0f} / "
        f"{ic['max']:,} | {ic['full_mean']:,.0f} | < 1,500 |",
        f"| tool definitions (12 workspace + 4 memory tools) | {ic['tool_definitions']:,} | same | |",
        f"| first prompt, max | {ic['first_prompt_max']:,} | | |",
        f"| tool calls per request | {s['tool_calls_per_request']} | {s['full_tool_calls_per_request']} | |",
        f"| detail calls / all calls | **{s['detail_share']:.1%}** "
        f"({s['detail_calls']} of {s['tool_calls']}) | | < 30% |",
        f"| detail / list calls | {s['detail_per_list']} | | |",
        f"| requests answered / tool errors | {s['answered']} / {s['tool_errors']} | | |",
        "",
        "Tool latency through the executor (SQLite file, ms):",
        "",
        "| scale | workspace generated in | p50 | p95 | worst tool p95 | target |",
        "|---|---|---|---|---|---|",
    ]
    for row in result["latency"]:
        target = "p95 < 50 ms" if row["scale"] == 10 else ""
        lines.append(
            f"| ×{row['scale']} | {row['generate_s']} s | {row['p50']} | {row['p95']} | "
            f"{row['worst_tool_p95']} | {target} |"
        )
    lines += ["", "Per request (progressive → full tokens sent, tools called):", ""]
    for p, f in zip(result["progressive"]["requests"], result["full"]["requests"], strict=True):
        lines.append(
            f"- {p['request']} — {p['tokens_sent']:,} → {f['tokens_sent']:,} · {', '.join(p['tools']) or '–'}"
        )
    return "\n".join(lines) + "\n"


def _print(result: dict[str, Any], console: Console) -> None:
    s = result["summary"]
    table = Table(title="progressive disclosure vs full records (same requests, same run)")
    for header in ("figure", "value", "target"):
        table.add_column(header)
    ic = s["initial_context"]
    table.add_row("tokens sent", f"{s['tokens_sent']['progressive']:,} vs {s['tokens_sent']['full']:,}", "")
    table.add_row("reduction", f"{s['reduction']:.1%}", "≥ 70%")
    table.add_row("initial context mean / max", f"{ic['mean']:,.0f} / {ic['max']:,}", "< 1,500")
    table.add_row("tool definitions", f"{ic['tool_definitions']:,}", "")
    table.add_row("tool calls per request", str(s["tool_calls_per_request"]), "")
    table.add_row("detail share", f"{s['detail_share']:.1%}", "< 30%")
    table.add_row("answered / tool errors", f"{s['answered']} / {s['tool_errors']}", "")
    for row in result["latency"]:
        table.add_row(
            f"tool latency ×{row['scale']} p50 / p95", f"{row['p50']} / {row['p95']} ms", "p95 < 50 ms"
        )
    console.print(table)


async def _run(scales: Sequence[int], repeat: int, progress: Callable[[str], None]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="tierwise-disclosure-") as tmp:
        directory = Path(tmp)
        contenders = {}
        for mode in ("progressive", "full"):
            progress(f"running the 30 requests: {mode}")
            store = Store.open(f"sqlite:///{directory / f'{mode}.db'}")
            try:
                user = store.create_user("bench").id
                generate_workspace(store, user, scale=1, seed=0, today=TODAY)
                contenders[mode] = await _contender(store, user, mode)
            finally:
                store.close()
        latency = []
        for scale in scales:
            progress(f"timing tools at scale ×{scale}")
            latency.append(await _latency(scale, repeat, directory))
    return {
        "machine": f"{platform.machine()}, Python {platform.python_version()}",
        "summary": _summary(contenders["progressive"], contenders["full"]),
        "latency": latency,
        "targets": TARGETS,
        **contenders,
    }


def run(
    *,
    scales: Sequence[int] = (1, 10, 100),
    repeat: int = 40,
    out: Path | None = None,
    console: Console | None = None,
) -> dict[str, Any]:
    """Run the benchmark, print the table, and write JSON (``out``) and markdown (``out`` with ``.md``)."""
    console = console or Console()
    result = asyncio.run(_run(scales, repeat, lambda text: console.print(f"[dim]{text}…[/]")))
    _print(result, console)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        out.with_suffix(".md").write_text(_markdown(result), encoding="utf-8")
        console.print(f"written: {out} and {out.with_suffix('.md')}")
    return result
