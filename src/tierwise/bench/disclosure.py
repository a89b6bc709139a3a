"""Progressive disclosure, measured: tokens sent for 30 realistic requests, abbreviated vs full records.

Three contenders run the same 30 requests (9 short dialogues, each a new chat) through the same
:class:`~tierwise.chat.engine.ChatEngine`, offline assistant (the same tool calls in the same order)
and sample workspace (scale 1, fixed date):

- **progressive** — the reference assistant as shipped (abbreviated context, list pages of previews,
  each chat offered the tools its calls need, its tool list only growing:
  :mod:`tierwise.workspace.offering`, :class:`~tierwise.tools.offering.Toolbox`);
- **full** (the headline peer) — the *same* location context; its list tools return the same rows as
  full records (:func:`full_tools`), and every tool is offered on every call, as an application
  without tierwise does: the context is held equal, only the records and the tool offer differ;
- **every_tool** and **per_call** (labelled variants of the progressive side) — every tool on every
  call (the default before the toolbox), and each call offered only the tools it picks
  (``tools_grow=False``: fewest tokens, but the tool list changes between calls, so a provider's
  prompt cache misses);
- **full_context** (the old comparison, labelled) — full records in the location context too
  (:class:`FullContext`: a project chat re-sends the whole project and all its tasks on every call).

"Tokens sent" is the exact prompt size (``o200k_base``, messages + tool definitions) of every model
call, summed; the budget (200k) cuts none. Reported against seed 000 §7.1: the reduction, the detail
rate as detail calls ÷ list calls (its §5.1's tiers: :data:`SEED_LIST`, :data:`SEED_DETAIL`), the
initial context (the first prompt's system text) with and
without the tool schemas; each target met or missed, and by how much. Tool latency: every tool through
the executor on workspaces of scale 1, 10 and 100 in a SQLite file, p50/p95.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import platform
import tempfile
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from rich.console import Console

from tierwise.bench.disclosure_latency import latency as tool_latency
from tierwise.bench.disclosure_report import PARTS, markdown, show
from tierwise.bench.disclosure_seed10 import seed10_lines, seed10_stats, seed10_summary
from tierwise.budget import Budget
from tierwise.chat.events import DoneEvent, ToolCallComplete
from tierwise.chat.housekeeping import memory_tools
from tierwise.packing.prefix import cached_tokens, shared_prefix
from tierwise.providers.base import Event, ModelRequest, Provider
from tierwise.store import Store
from tierwise.tokens import get_counter
from tierwise.tools import Tool, ToolRegistry
from tierwise.workspace.app import assistant_engine
from tierwise.workspace.assistant import OfflineAssistant
from tierwise.workspace.calendar import LocalCalendar
from tierwise.workspace.calendar_tools import abbreviated_event
from tierwise.workspace.calendar_tools import window as calendar_window
from tierwise.workspace.context import WorkspaceContext
from tierwise.workspace.repository import Profile, Workspace
from tierwise.workspace.sample import generate_workspace
from tierwise.workspace.tools import LIST_TOOLS, session, workspace_tools

__all__ = ["DIALOGUES", "NOW", "Dialogue", "run", "seed10_lines"]

ENCODING = "o200k_base"
CACHED_DISCOUNT = 0.9
"""Cached input tokens cost 10% of the price (OpenAI's newer models; others 25–50%)."""
TODAY = date(2026, 11, 23)
NOW = datetime(2026, 11, 23, 10, 30, tzinfo=UTC)  # a Monday morning in Lisbon
BUDGET = Budget(window=200_000, reserve=2_000)
TARGETS = {
    "reduction": 0.70,  # fewer tokens than full records, the context held equal
    "detail_per_list": 0.30,  # seed 000 §7.1: detail calls ÷ list calls
    "initial_context_with_tools": 2_000,  # the first prompt's system text + the tool schemas
    "initial_context": 1_500,  # the first prompt's system text alone
    "tool_p95_ms_x10": 50.0,
}
MODES = ("progressive", "every_tool", "per_call", "full", "full_context")
"""The contenders: as shipped (the chat's toolbox); the same with every tool on every call, and with
each call offered only its own; full records from the tools (same context, every tool); and full
records in the context too (the old comparison)."""
SEED_LIST = (*LIST_TOOLS, "get_calendar_events")
"""Seed 000 §5.1's "Tier 1: LIST/SEARCH Tools (use first)": the list calls of §7.1's detail rate.
Our tools' own ``tier`` (seed 001's grouping) files ``get_calendar_events`` under calendar; that
count is reported beside the headline, labelled."""
SEED_DETAIL = ("get_task_details", "get_project_details", "get_note_details")
"""Seed 000 §5.1's "Tier 2: DETAIL Tools"."""
VARIANTS = ("every_tool", "per_call")
"""The progressive side's labelled variants (how its tools are offered)."""


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
        task = result.get("task")
        if isinstance(task, dict) and task.get("subtasks"):  # its subtasks in full too
            result["task"] = {**task, "subtasks": ws.task_details(user, task["id"], now=now)["subtasks"]}
        project = result.get("project")
        if isinstance(project, dict) and "tasks" in project:  # a project's tasks: the same rows
            project["tasks"] = [ws.task_details(user, t["id"], now=now) for t in project["tasks"]]
        if "events" in result:
            result["events"] = _full_events(ctx, ws, user, now, kwargs, result["events"])
        return result

    return dataclasses.replace(tool_, function=run)


def _full_events(
    ctx: Any, ws: Workspace, user: str, now: datetime, asked: dict[str, Any], shown: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The events shown, as the calendar has them (seed 001 abbreviates them: description, attendees)."""
    zone = ws.profile(user).zone
    start, end = calendar_window(asked.get("timeMin"), asked.get("timeMax"), zone, now)
    calendar = ctx.extras.get("calendar") or LocalCalendar(ctx.store)
    whole = {(o.event_id, abbreviated_event(o, zone)["start"]): o for o in calendar.events(user, start, end)}
    full = []
    for event in shown:
        found = whole.get((event["id"], event["start"]))
        record = {k: v for k, v in event.items() if not k.startswith("has_") and k != "description_preview"}
        full.append(
            event
            if found is None
            else record
            | {"description": found.description, "attendees": list(found.attendees), "uid": found.uid}
            | {"timezone": found.timezone}
        )
    return full


def full_tools() -> list[Tool]:
    """The twelve tools as a design without progressive disclosure has them: full records.

    Lists — seed 000 §5.1's Tier 1, calendar events included — and the tasks in a task's or project's
    details return full records, and every result is re-sent whole on each later call (no recaps: the
    whole conversation, as a user without tierwise sends it).
    """
    tools = [dataclasses.replace(t, recap=None) for t in workspace_tools()]
    return [_full_records(t) if t.name in (*SEED_LIST, *SEED_DETAIL) else t for t in tools]


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
            self.workspace.task_details(user_id, t["id"], now=now) for t in self.overdue(user_id, now)[0]
        ]
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


def _parts(sent: Sequence[ModelRequest], own: set[str]) -> dict[str, int]:
    """What a request's prompts are made of (:data:`~tierwise.bench.disclosure_report.PARTS`).

    ``own``: the ids of the request's own tool calls (their results are read whole in it); the other
    tool results in its prompts are earlier requests'. The parts add up to the tokens sent.
    """
    counter = get_counter(ENCODING)
    parts = dict.fromkeys(PARTS, 0)
    for request in sent:
        total = counter.count_messages(request.messages)
        parts["tool_schemas"] += counter.count_tools(request.tools)
        for message in request.messages:
            role = message.get("role")
            if role == "system":
                key = "system"
            elif role == "tool":
                key = "results_this_request" if message.get("tool_call_id") in own else "results_earlier"
            else:
                continue
            cost = counter.count_message(message)
            parts[key] += cost
            total -= cost
        parts["messages"] += total
    return parts


def _first_prompt_parts(request: ModelRequest) -> dict[str, int]:
    counter = get_counter(ENCODING)
    systems = [m for m in request.messages if m.get("role") == "system"]  # the prompt and the head
    context = sum(counter.count(str(m["content"])) for m in systems)
    tools = counter.count_tools(request.tools)
    return {
        "context": context,
        "tools": tools,
        "context_with_tools": context + tools,
        "prompt": counter.count_messages(request.messages) + tools,
    }


async def _contender(store: Store, user: str, mode: str, *, seed10: bool = True) -> dict[str, Any]:
    counter = get_counter(ENCODING)
    provider = Recording(OfflineAssistant())
    calendar = LocalCalendar(store)
    off: dict[str, Any] = {} if seed10 else {"prefetch": None, "context_cache": None, "adaptive": None}
    if mode in ("every_tool", "full", "full_context"):  # every tool on every call
        off["tool_offering"] = None
    elif mode == "per_call":
        off["tools_grow"] = False
    engine = assistant_engine(store, provider, budget=BUDGET, calendar=calendar, clock=lambda: NOW, **off)
    if mode in ("full", "full_context"):  # every tool on every call, as without tierwise
        engine.registry = ToolRegistry([*full_tools(), *memory_tools()])
    if mode == "full_context":
        engine.context = FullContext(store, calendar=calendar, clock=lambda: NOW)
    ws = Workspace(store)
    rows = []
    for dialogue in DIALOGUES:
        entity = None
        if dialogue.project:
            entity = ws.search_projects(user, query=dialogue.project, limit=1)[0][0]["id"]
        chat = store.create_chat(user, context_type="project" if entity else "global", entity_id=entity)
        previous: tuple[list[dict[str, Any]], list[dict[str, Any]]] | None = (
            None  # the chat's last model call
        )
        for request in dialogue.requests:
            before = len(provider.requests)
            result = await engine.run(user, chat.id, request)
            sent = provider.requests[before:]
            cached = 0  # what a provider's prompt cache serves (OpenAI's rule), call after call
            for r in sent:
                shared = shared_prefix(previous, r.messages, r.tools, counter)
                cached += cached_tokens(shared, "openai")
                previous = (list(r.messages), list(r.tools))
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
                    "cached_tokens": cached,
                    "tool_result_tokens": sum(
                        counter.count(str(m.get("content") or ""))
                        for r in sent
                        for m in r.messages
                        if m.get("role") == "tool"
                    ),
                    "first": _first_prompt_parts(sent[0]),
                    "parts": _parts(sent, {c.call_id for c in calls}),
                    "tools": [c.name for c in calls],
                    "tool_ms": [c.duration_ms for c in calls],
                    "tool_errors": sum(1 for c in calls if not c.success),
                    "done": done.reason,
                    "answer": result.text,
                }
            )
    return {"mode": mode, "requests": rows, "seed10": seed10_stats(engine)}


def _shares(runs: dict[str, dict[str, Any]], sent: dict[str, int]) -> dict[str, Any]:
    """What the headline is made of: tool results vs everything both contenders send alike.

    ``reduction_ceiling`` is the headline's value if progressive tool results cost nothing at all:
    the tool schemas and system text (the same for both), and the conversation's messages, bound it.
    ``parts``: each contender's tokens by what they are (:func:`_parts`), summed over the requests.
    ``tool_result_reduction`` compares the tool results alone (seed 000 §7.2's ``tokens_saved`` is
    about them) — a second figure, not the headline.
    """
    if "full" not in runs or not sent.get("full"):
        return {}
    results = {
        m: sum(r.get("tool_result_tokens", 0) for r in runs[m]["requests"]) for m in ("progressive", "full")
    }
    parts = {m: _summed(runs[m]["requests"]) for m in ("progressive", "full")}
    alike = sum(v for k, v in parts["progressive"].items() if not k.startswith("results_"))
    return {
        "tool_result_tokens": results,
        "tool_result_reduction": round(1 - results["progressive"] / results["full"], 4)
        if results["full"]
        else 0.0,
        "reduction_ceiling": round(1 - alike / sent["full"], 4),
        "parts": parts,
    }


def _summed(rows: Sequence[dict[str, Any]]) -> dict[str, int]:
    """The requests' parts (:func:`_parts`), summed."""
    return {key: sum(r["parts"][key] for r in rows if "parts" in r) for key in PARTS}


def _tiers() -> dict[str, str]:
    return {t.name: t.tier for t in workspace_tools()}


def _starts(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each dialogue's first request (its first prompt is the chat's initial context)."""
    return [r for i, r in enumerate(rows) if i == 0 or rows[i - 1]["dialogue"] != r["dialogue"]]


def _verdict(value: float, target: float, *, at_least: bool) -> dict[str, Any]:
    met = value >= target if at_least else value < target
    return {"value": value, "target": target, "met": met, "by": round(abs(value - target), 4)}


def _summary(runs: dict[str, dict[str, Any]], latency: Sequence[dict[str, Any]]) -> dict[str, Any]:
    tiers = _tiers()
    prog = runs["progressive"]["requests"]
    sent = {mode: sum(r["tokens_sent"] for r in runs[mode]["requests"]) for mode in runs}
    calls = [name for r in prog for name in r["tools"]]
    detail = sum(1 for n in calls if n in SEED_DETAIL)
    listed = sum(1 for n in calls if n in SEED_LIST)
    list_tier = sum(1 for n in calls if tiers.get(n) == "list")  # without get_calendar_events
    starts = _starts(prog)
    firsts = [r["first"] for r in starts]
    initial = {
        "max": max(f["context"] for f in firsts),
        "mean": round(sum(f["context"] for f in firsts) / len(firsts), 1),
        "tool_definitions": firsts[0]["tools"],
        "with_tools_max": max(f["context_with_tools"] for f in firsts),
        "with_tools_mean": round(sum(f["context_with_tools"] for f in firsts) / len(firsts), 1),
        "first_prompt_max": max(f["prompt"] for f in firsts),
    }
    for mode in ("full", "full_context"):
        if mode in runs:
            full_firsts = [r["first"]["context"] for r in _starts(runs[mode]["requests"])]
            initial[f"{mode}_mean"] = round(sum(full_firsts) / len(full_firsts), 1)
    reduction = {
        mode: round(1 - sent["progressive"] / sent[mode], 4) if sent[mode] else 0.0
        for mode in runs
        if mode != "progressive" and mode not in VARIANTS
    }
    cached = {mode: sum(r.get("cached_tokens", 0) for r in runs[mode]["requests"]) for mode in runs}
    # Billed input with prompt caching: cached tokens at 10% of the price (OpenAI's rule for which).
    billed = {mode: sent[mode] - CACHED_DISCOUNT * cached[mode] for mode in runs}
    per_list = round(detail / listed, 3) if listed else 0.0
    x10 = next((row["p95"] for row in latency if row["scale"] == 10), None)
    verdicts = {
        "reduction": _verdict(reduction.get("full", 0.0), TARGETS["reduction"], at_least=True),
        "detail_per_list": _verdict(per_list, TARGETS["detail_per_list"], at_least=False),
        "initial_context_with_tools": _verdict(
            initial["with_tools_max"], TARGETS["initial_context_with_tools"], at_least=False
        ),
        "initial_context": _verdict(initial["max"], TARGETS["initial_context"], at_least=False),
    }
    if x10 is not None:
        verdicts["tool_p95_ms_x10"] = _verdict(x10, TARGETS["tool_p95_ms_x10"], at_least=False)
    return {
        "requests": len(prog),
        "tokens_sent": sent,
        "reduction": reduction.get("full", 0.0),
        "reduction_full_context": reduction.get("full_context"),
        "variants": {  # the progressive side with its tools offered otherwise: against the full peer
            mode: {
                "reduction": round(1 - sent[mode] / sent["full"], 4),
                "reduction_billed": round(1 - billed[mode] / billed["full"], 4),
            }
            for mode in VARIANTS
            if mode in runs and sent.get("full")
        },
        "cached_tokens": cached,
        "billed_tokens": {mode: round(v) for mode, v in billed.items()},
        "reduction_billed": round(1 - billed["progressive"] / billed["full"], 4)
        if billed.get("full")
        else None,
        **_shares(runs, sent),
        "initial_context": initial,
        "tool_calls": len(calls),
        "tool_calls_per_request": round(len(calls) / len(prog), 2),
        "full_tool_calls_per_request": round(
            sum(len(r["tools"]) for r in runs["full"]["requests"]) / len(prog), 2
        ),
        "detail_calls": detail,
        "list_calls": listed,
        "detail_per_list": per_list,
        "list_tier_calls": list_tier,
        "detail_per_list_tier": round(detail / list_tier, 3) if list_tier else 0.0,
        "detail_share": round(detail / len(calls), 3) if calls else 0.0,
        "tool_errors": sum(r["tool_errors"] for r in prog),
        "answered": sum(1 for r in prog if r["done"] == "answer"),
        "targets": verdicts,
    }


def _markdown(result: dict[str, Any]) -> str:
    """The report as markdown (:func:`~tierwise.bench.disclosure_report.markdown`)."""
    return markdown(result, len(DIALOGUES), ENCODING)


async def _measured(directory: Path, mode: str, *, seed10: bool = True) -> dict[str, Any]:
    store = Store.open(f"sqlite:///{directory / f'{mode}-{seed10}.db'}")
    try:
        user = store.create_user("bench").id
        generate_workspace(store, user, scale=1, seed=0, today=TODAY)
        return await _contender(store, user, mode, seed10=seed10)
    finally:
        store.close()


async def _run(scales: Sequence[int], repeat: int, progress: Callable[[str], None]) -> dict[str, Any]:
    requests = sum(len(d.requests) for d in DIALOGUES)
    with tempfile.TemporaryDirectory(prefix="tierwise-disclosure-") as tmp:
        directory = Path(tmp)
        contenders = {}
        for mode in MODES:
            progress(f"running the {requests} requests: {mode}")
            contenders[mode] = await _measured(directory, mode)
        plain = None
        if "progressive" in contenders:
            progress(f"running the {requests} requests: progressive without seed 000 §10")
            plain = await _measured(directory, "progressive", seed10=False)
        latency = []
        for scale in scales:
            progress(f"timing tools at scale ×{scale}")
            latency.append(await tool_latency(scale, repeat, directory, today=TODAY, now=NOW))
    summary = _summary(contenders, latency)
    if plain is not None:
        summary["seed10"] = seed10_summary(contenders["progressive"], plain, _tiers())
    return {
        "machine": f"{platform.machine()}, Python {platform.python_version()}",
        "summary": summary,
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
    show(result, console)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        out.with_suffix(".md").write_text(_markdown(result), encoding="utf-8")
        console.print(f"written: {out} and {out.with_suffix('.md')}")
    return result
