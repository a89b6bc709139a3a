"""Location context sources: seed 001's abbreviated markdown, per context type, within budget."""

from __future__ import annotations

from datetime import timedelta

from tests.workspace.conftest import NOW, Env
from tierwise.tokens import get_counter
from tierwise.workspace.calendar import LocalCalendar
from tierwise.workspace.context import SYSTEM_PROMPT, WorkspaceContext, context_instructions

CONTEXT = "The Q4 launch is our biggest release. " * 40  # ~1,500 characters


def _source(env: Env) -> WorkspaceContext:
    return WorkspaceContext(env.store, clock=lambda: NOW)


def _project_with_tasks(env: Env) -> str:
    pid = str(
        env.ws.create_project(
            env.user,
            name="Q4 Product Launch",
            description="Launch AI features",
            executive_summary="Launching AI-powered workflow automation for enterprise customers.",
            context=CONTEXT,
        )["id"]
    )
    for i, priority in enumerate(["high", "high", "medium", "low", "medium", "low", "low"]):
        env.ws.create_task(
            env.user, title=f"Task {i}", project_id=pid, priority=priority, description="d" * 300
        )
    done = env.ws.create_task(env.user, title="Shipped", project_id=pid)
    env.ws.update_task(env.user, done["id"], {"status": "done"})
    env.ws.create_note(env.user, title="Kickoff", content="notes", project_id=pid)
    return pid


def test_project_context_is_abbreviated(env: Env) -> None:
    pid = _project_with_tasks(env)
    layers = {layer.kind: layer for layer in _source(env).layers(env.user, "project", pid)}
    text = str(layers["location"].content)
    assert "## Current Project: Q4 Product Launch" in text
    assert "13% complete" in text  # 1 of 8 done
    assert "7 open, 1 done, 8 total" in text
    assert "Launching AI-powered workflow automation" in text
    assert CONTEXT not in text and "[use get_project_details for full context]" in text
    assert text.count("\n- [") == 5 and "- [high] Task 0" in text  # top 5 active tasks, by priority
    assert "Shipped" not in text and "d" * 150 not in text
    assert "Now: Monday 2026-11-23 14:00 (Europe/Lisbon)" in text
    assert context_instructions("project") in text
    assert "Kickoff" in str(layers["related"].content)
    assert "Who I am: Product lead" in str(layers["profile"].content)


def test_task_context(env: Env) -> None:
    pid = _project_with_tasks(env)
    task = env.ws.create_task(
        env.user,
        title="Implement webhooks",
        description="x" * 400,
        details="y" * 400,
        project_id=pid,
        recurrence_pattern="weekly",
        start_date="2026-11-30",
    )
    env.ws.create_task(env.user, title="Retry logic", parent_task_id=task["id"])
    layers = {layer.kind: layer for layer in _source(env).layers(env.user, "task", task["id"])}
    text = str(layers["location"].content)
    assert "## Current Task: Implement webhooks" in text and "Project: Q4 Product Launch" in text
    assert "Recurring: weekly" in text and "Has 1 subtasks" in text
    assert "x" * 101 not in text and "y" * 101 not in text
    assert f"get_task_details('{task['id']}')" in text
    assert "Retry logic" in str(layers["related"].content)


def test_calendar_and_global_context(env: Env) -> None:
    _project_with_tasks(env)
    overdue = env.ws.create_task(env.user, title="Send invoice", start_date="2026-11-01", priority="high")
    cal = LocalCalendar(env.store)
    start = NOW + timedelta(hours=2)
    cal.add_event(
        env.user,
        summary="Design review",
        start=start,
        end=start + timedelta(hours=1),
        timezone="Europe/Lisbon",
    )
    cal.add_event(
        env.user,
        summary="Offsite",
        start=start + timedelta(days=2),
        end=start + timedelta(days=2, hours=3),
        timezone="Europe/Lisbon",
    )
    glob = str(_source(env).layers(env.user)[1].content)
    assert "1 active projects" in glob and "Q4 Product Launch" in glob
    assert "Send invoice" in glob and overdue["id"] in glob
    assert "16:00 Design review" in glob and "Offsite" not in glob  # today only
    cal_text = str(_source(env).layers(env.user, "calendar")[1].content)
    assert "Design review" in cal_text and "Offsite" in cal_text


def test_the_overview_leads_with_the_most_important_overdue_tasks(env: Env) -> None:
    """All overdue tasks are counted; the five shown are the highest priority, then the oldest (they
    were the five oldest of the 50 earliest dated: old chores before this week's deadlines)."""
    for i in range(55):  # old, low-priority chores
        env.ws.create_task(
            env.user, title=f"Chore {i}", start_date=f"2026-09-{1 + i % 28:02d}", priority="low"
        )
    urgent = [
        env.ws.create_task(env.user, title=f"Launch blocker {i}", start_date="2026-11-20", priority="high")[
            "id"
        ]
        for i in range(2)
    ]
    glob = str(_source(env).layers(env.user)[1].content)
    assert "### Overdue: 57 task(s) (first 5, by priority)" in glob
    lines = [line for line in glob.splitlines() if line.startswith("- [")]
    assert all(u in "\n".join(lines[:2]) for u in urgent) and lines[0].startswith("- [high] Launch blocker")
    assert len(lines) == 5 and all(line.startswith("- [low] Chore") for line in lines[2:])


def test_missing_entity_falls_back_to_the_overview(env: Env) -> None:
    layers = _source(env).layers(env.user, "project", "proj_gone")
    text = str(layers[-1].content)
    assert "no longer exists" in text and "## Overview" in text


def test_context_of_another_users_project_is_not_shown(env: Env) -> None:
    pid = _project_with_tasks(env)
    text = " ".join(str(layer.content) for layer in _source(env).layers(env.other, "project", pid))
    assert "Q4 Product Launch" not in text and "no longer exists" in text


def test_initial_context_is_small(env: Env) -> None:
    pid = _project_with_tasks(env)
    counter = get_counter()
    for context_type, entity in (("project", pid), ("global", None), ("calendar", None)):
        layers = _source(env).layers(env.user, context_type, entity)
        tokens = counter.count(SYSTEM_PROMPT) + sum(counter.count(str(layer.content)) for layer in layers)
        assert tokens < 1_500, (context_type, tokens)
