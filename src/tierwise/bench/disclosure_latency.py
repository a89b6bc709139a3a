"""Tool latency for ``tierwise bench disclosure``: every workspace tool through the executor, by scale.

Each tool runs ``repeat`` times (cycling through realistic argument sets) on a sample workspace of the
given scale in a SQLite file; p50 and p95 per tool and overall. Split from
:mod:`tierwise.bench.disclosure` (which reports it against seed 000's tool-time target).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from datetime import date, datetime
from pathlib import Path
from typing import Any

from tierwise.store import Store
from tierwise.tools import ToolContext, ToolExecutor, ToolRegistry
from tierwise.workspace.repository import Workspace
from tierwise.workspace.sample import generate_workspace
from tierwise.workspace.tools import WORKSPACE_STRATEGIES, workspace_tools

__all__ = ["latency"]


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


async def latency(scale: int, repeat: int, directory: Path, *, today: date, now: datetime) -> dict[str, Any]:
    """p50/p95 of every tool at ``scale`` (``repeat`` calls each), the workspace made for ``today``."""
    store = Store.open(f"sqlite:///{directory / f'workspace-x{scale}.db'}")
    try:
        user = store.create_user("bench").id
        started = time.perf_counter()
        generate_workspace(store, user, scale=scale, seed=0, today=today)
        generated_s = time.perf_counter() - started
        executor = ToolExecutor(ToolRegistry(workspace_tools()), store=store, strategies=WORKSPACE_STRATEGIES)
        context = ToolContext(user_id=user, extras={"clock": lambda: now})
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
