"""The sample workspace: realistic counts, the seed's project, determinism, sane references, clearing."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
import sqlalchemy as sa

from tierwise.errors import InputError
from tierwise.store import NotFoundError, Store
from tierwise.workspace.calendar.recurrence import check_rrule
from tierwise.workspace.models import (
    BRAIN_DUMP_STATUSES,
    PRIORITIES,
    PROJECT_STATUSES,
    RECURRENCES,
    TASK_STATUSES,
    BrainDump,
    CalendarEvent,
    Note,
    Phase,
    Project,
    Task,
    UserProfile,
)
from tierwise.workspace.queries import Profile, WorkspaceQueries
from tierwise.workspace.sample import SampleSummary, clear_workspace, generate_workspace

TODAY = date(2025, 3, 12)  # a Wednesday
LISBON = ZoneInfo("Europe/Lisbon")
MODELS: tuple[type[Any], ...] = (UserProfile, Project, Phase, Task, Note, BrainDump, CalendarEvent)


def _store(*users: str) -> Store:
    store = Store.open("sqlite://")
    for user in users:
        store.create_user(user, user_id=user)
    return store


def _dump(store: Store, user: str = "maya") -> dict[str, list[tuple[Any, ...]]]:
    """Every workspace row of ``user``, table by table, sorted: what determinism compares."""
    out: dict[str, list[tuple[Any, ...]]] = {}
    with store.session() as session:
        for model in MODELS:
            columns = [c.name for c in model.__table__.columns]
            rows = session.execute(sa.select(model.__table__).where(model.user_id == user)).all()
            # JSON with sorted keys: PostgreSQL's JSONB reorders them
            values = (
                tuple(json.dumps(getattr(r, c), sort_keys=True, default=repr) for c in columns) for r in rows
            )
            out[model.__tablename__] = sorted(values)
    return out


def _rows(store: Store, model: type[Any], user: str = "maya") -> list[Any]:
    with store.session() as session:
        return list(session.scalars(sa.select(model).where(model.user_id == user)))


@pytest.fixture(scope="module")
def sample() -> Iterator[tuple[Store, SampleSummary]]:
    store = _store("maya", "omar")
    summary = generate_workspace(store, "maya", today=TODAY)
    yield store, summary
    store.close()


def test_counts_at_scale_one(sample: tuple[Store, SampleSummary]) -> None:
    store, summary = sample
    assert summary.today == TODAY and summary.timezone == "Europe/Lisbon" and summary.scale == 1
    assert summary.profiles == 1 and summary.projects == 10
    assert 25 <= summary.phases <= 50
    assert 270 <= summary.tasks <= 330
    assert 50 <= summary.notes <= 70
    assert 15 <= summary.brain_dumps <= 25
    assert 25 <= summary.calendar_events <= 60
    actual = {m.__tablename__: len(_rows(store, m)) for m in MODELS}
    assert actual == {
        "user_profiles": 1,
        "projects": summary.projects,
        "project_phases": summary.phases,
        "tasks": summary.tasks,
        "notes": summary.notes,
        "brain_dumps": summary.brain_dumps,
        "calendar_events": summary.calendar_events,
    }


def test_profile_and_projects_look_real(sample: tuple[Store, SampleSummary]) -> None:
    store, _ = sample
    (profile,) = _rows(store, UserProfile)
    assert "ADHD" in profile.who_i_am and "bullets" in profile.how_i_work
    assert (profile.timezone, profile.work_start_hour, profile.work_end_hour) == ("Europe/Lisbon", 9, 18)
    assert profile.work_days == [1, 2, 3, 4, 5]
    projects = _rows(store, Project)
    statuses = Counter(p.status for p in projects)
    assert set(statuses) <= set(PROJECT_STATUSES) and statuses["archived"] == 1
    assert statuses["active"] >= 5 and statuses["paused"] >= 1 and statuses["completed"] >= 1
    assert len({p.slug for p in projects}) == len(projects)
    phases = Counter(p.project_id for p in _rows(store, Phase))
    for project in projects:
        assert len(project.description) < 200 and len(project.executive_summary) < 500
        assert 2 <= len(project.tags) <= 5 and 2 <= phases[project.id] <= 5
        assert 1500 <= len(project.context) <= 4000, project.name
        for heading in ("## Goals", "## Stakeholders", "## Decisions", "## Open questions", "## Risks"):
            assert heading in project.context
        assert project.start_date <= project.end_date


def test_tasks_look_real(sample: tuple[Store, SampleSummary]) -> None:
    store, _ = sample
    tasks = _rows(store, Task)
    start_of_today = datetime.combine(TODAY, time(), LISBON)
    assert {t.status for t in tasks} == set(TASK_STATUSES) and {t.priority for t in tasks} == set(PRIORITIES)
    for task in tasks:
        assert 80 <= len(task.description) <= 700, task.title
        assert task.details is None or len(task.details) <= 1500
        assert (task.completed_at is not None) == (task.status == "done")
        assert (task.task_type == "recurring") == (task.recurrence_pattern is not None)
        assert task.recurrence_pattern in (None, *RECURRENCES)
        assert task.created_at <= task.updated_at
    live = [t for t in tasks if t.deleted_at is None]
    overdue = [t for t in live if t.status != "done" and t.start_at and t.start_at < start_of_today]
    future = [t for t in live if t.start_at and t.start_at > start_of_today + timedelta(days=1)]
    assert len(overdue) >= 10 and len(future) >= 30 and sum(t.start_at is None for t in tasks) >= 20
    assert 1 <= len(tasks) - len(live) <= 15
    assert sum(t.task_type == "recurring" for t in tasks) >= 8
    assert sum(t.details is not None for t in tasks) >= len(tasks) // 3
    assert 0.15 <= sum(t.parent_task_id is not None for t in tasks) / len(tasks) <= 0.3
    assert 0.1 <= sum(bool(t.dependencies) for t in tasks) / len(tasks) <= 0.25
    assert 10 <= sum(t.project_id is None for t in tasks) <= 30


def test_notes_dumps_and_events_look_real(sample: tuple[Store, SampleSummary]) -> None:
    store, _ = sample
    notes = _rows(store, Note)
    assert {n.category for n in notes} == {"meeting", "idea", "research", "reference", "journal"}
    assert all(150 <= len(n.content) <= 2500 and n.title and n.tags for n in notes)
    assert sum(n.project_id is not None for n in notes) >= 0.8 * len(notes)
    dumps = _rows(store, BrainDump)
    assert {d.status for d in dumps} == set(BRAIN_DUMP_STATUSES)
    for dump in dumps:
        assert 300 <= len(dump.content) <= 2000
        assert (dump.ai_summary is None) == (dump.status == "pending") == (dump.operations == [])
    events = _rows(store, CalendarEvent)
    first, after = (datetime.combine(TODAY + timedelta(days=d), time(), LISBON) for d in (-7, 8))
    assert all(first <= e.start_at < e.end_at <= after and e.timezone == "Europe/Lisbon" for e in events)
    assert len({e.uid for e in events}) == len(events)
    assert sum(e.all_day for e in events) >= 2 and sum(bool(e.attendees) for e in events) >= 10
    rules = {e.summary: e.rrule for e in events if e.rrule}
    assert rules["Daily standup"] == "FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR"
    assert rules["1:1 with Priya"] == "FREQ=WEEKLY;BYDAY=MO"
    assert all(check_rrule(rule) == rule for rule in rules.values())
    standup = next(e for e in events if e.summary == "Daily standup").start_at.astimezone(LISBON)
    assert (standup.hour, standup.minute, standup.isoweekday() <= 5) == (9, 30, True)
    one_on_one = next(e for e in events if e.summary == "1:1 with Priya").start_at.astimezone(LISBON)
    assert (one_on_one.hour, one_on_one.isoweekday()) == (10, 1)
    for event in events:
        local = event.start_at.astimezone(LISBON)
        if not event.all_day and local.isoweekday() <= 5:
            assert local.hour >= 9 and event.end_at.astimezone(LISBON).hour <= 18, event.summary
        assert all("@" in a["email"] and a["email"].isascii() for a in event.attendees)
    assert sum(e.linked_task_id is not None for e in events) >= 5


def test_references_are_sane(sample: tuple[Store, SampleSummary]) -> None:
    store, _ = sample
    tasks = {t.id: t for t in _rows(store, Task)}
    projects = {p.id for p in _rows(store, Project)}
    for task in tasks.values():
        assert task.project_id is None or task.project_id in projects
        if task.parent_task_id is not None:
            parent = tasks[task.parent_task_id]
            assert parent.project_id == task.project_id and parent.parent_task_id is None
        for dependency in task.dependencies:
            assert dependency != task.id and tasks[dependency].project_id == task.project_id
            if task.status == "done":
                assert tasks[dependency].status == "done"
    # acyclic: a depth-first walk never meets a task on its own path
    state: dict[str, int] = {}

    def visit(task_id: str) -> None:
        assert state.get(task_id) != 1, f"dependency cycle through {task_id}"
        if state.get(task_id) == 2:
            return
        state[task_id] = 1
        for dependency in tasks[task_id].dependencies:
            visit(dependency)
        state[task_id] = 2

    for task_id in tasks:
        visit(task_id)
    for event in _rows(store, CalendarEvent):
        assert event.linked_task_id is None or event.linked_task_id in tasks
    for dump in _rows(store, BrainDump):
        assert dump.project_id in projects
        for operation in dump.operations:
            if operation["table"] == "tasks" and "id" in operation:
                assert tasks[operation["id"]].project_id == dump.project_id
    assert all(p.project_id in projects for p in _rows(store, Phase))
    assert all(not _rows(store, model, "omar") for model in MODELS)
    now = datetime.combine(TODAY, time(8), LISBON)
    for model in (Project, Task, Note, BrainDump, CalendarEvent):
        assert all(r.created_at.tzinfo is UTC and r.created_at <= now for r in _rows(store, model))


def test_the_seed_project_comes_first(sample: tuple[Store, SampleSummary]) -> None:
    store, _ = sample
    q4 = next(p for p in _rows(store, Project) if p.slug == "q4-product-launch")
    assert (q4.name, q4.status) == ("Q4 Product Launch", "active")
    assert q4.start_date < TODAY < q4.end_date
    assert q4.executive_summary.startswith("Launching new AI-powered features for enterprise customers")
    assert q4.context.startswith("# Q4 Product Launch\n\n## Overview\n\nThe Q4 launch represents")
    tasks = [t for t in _rows(store, Task) if t.project_id == q4.id]
    by_title = {t.title: t for t in tasks}
    for title in ("Create demo videos", "Write blog posts", "Update changelog"):
        assert title in by_title
    docs = by_title["Design API documentation portal"]
    assert (docs.status, docs.priority) == ("in_progress", "high")
    assert docs.description.startswith("Create comprehensive API documentation with interactive examples")
    assert docs.details.startswith("Technical requirements:\n- Next.js 14 with App Router")
    assert docs.details.endswith("- Status page integration")
    hooks = by_title["Implement webhook system"]
    assert (hooks.status, hooks.priority, hooks.duration_minutes) == ("in_progress", "high", 480)
    assert hooks.description.startswith("Build robust webhook delivery system with retry logic")
    assert "HMAC-SHA256 signatures" in hooks.details
    for parent in (docs, hooks):
        subtasks = [t for t in tasks if t.parent_task_id == parent.id]
        assert len(subtasks) == 4
    assert by_title["Set up Next.js documentation site"].status == "done"
    assert (by_title["Write blog posts"].priority, by_title["Update changelog"].priority) == ("medium", "low")
    assert 30 <= len(tasks) <= 45


def test_same_arguments_give_the_same_rows() -> None:
    dumps = []
    for _ in range(2):
        store = _store("maya")
        generate_workspace(store, "maya", today=TODAY, seed=3)
        dumps.append(_dump(store))
        store.close()
    assert dumps[0] == dumps[1]
    other = _store("maya")
    generate_workspace(other, "maya", today=TODAY, seed=4)
    changed = _dump(other)
    for table in ("projects", "tasks", "notes", "calendar_events"):
        assert changed[table] != dumps[0][table]
    moved = _store("maya")
    generate_workspace(moved, "maya", today=TODAY + timedelta(days=1), seed=3)
    with moved.session() as session:
        q4 = session.scalars(sa.select(Project).where(Project.slug == "q4-product-launch")).one()
    assert q4.start_date == TODAY + timedelta(days=1 - 27)


def test_same_rows_on_every_backend(store: Store) -> None:
    store.create_user("maya", user_id="maya")
    generate_workspace(store, "maya", today=TODAY)
    reference = _store("maya")
    generate_workspace(reference, "maya", today=TODAY)
    assert _dump(store) == _dump(reference)


def test_scale_two_doubles_with_distinct_copies() -> None:
    store = _store("maya")
    one = generate_workspace(_store("maya"), "maya", today=TODAY)
    two = generate_workspace(store, "maya", scale=2, today=TODAY)
    assert two.projects == 2 * one.projects and two.phases == 2 * one.phases
    assert 1.8 * one.tasks <= two.tasks <= 2.2 * one.tasks
    assert (two.notes, two.brain_dumps) == (2 * one.notes, 2 * one.brain_dumps)
    assert 1.6 * one.calendar_events <= two.calendar_events <= 2.4 * one.calendar_events
    projects = _rows(store, Project)
    names = {p.name for p in projects}
    assert {"Q4 Product Launch", "Q4 Product Launch (2)"} <= names and len(names) == len(projects)
    contexts = {p.name: p.context for p in projects}
    assert contexts["Website Redesign"] != contexts["Website Redesign (2)"]
    descriptions = [t.description for t in _rows(store, Task) if t.parent_task_id is None]
    assert len(set(descriptions)) > 0.9 * len(descriptions)


def test_refuses_what_cannot_work(sample: tuple[Store, SampleSummary]) -> None:
    store, _ = sample
    with pytest.raises(InputError, match=r"already has workspace rows.*clear_workspace"):
        generate_workspace(store, "maya", today=TODAY)
    for scale in (0, -1, True, 1.5):
        with pytest.raises(InputError, match="scale"):
            generate_workspace(store, "omar", scale=scale, today=TODAY)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="IANA"):
        generate_workspace(store, "omar", timezone="Mars/Olympus")
    with pytest.raises(NotFoundError):
        generate_workspace(store, "nobody", today=TODAY)
    assert not _rows(store, Project, "omar")


def test_clear_workspace_leaves_other_users_alone() -> None:
    store = _store("maya", "omar")
    generate_workspace(store, "maya", today=TODAY)
    generate_workspace(store, "omar", today=TODAY, seed=1)
    omar = _dump(store, "omar")
    clear_workspace(store, "maya")
    left = {table: rows for table, rows in _dump(store, "maya").items() if rows}
    assert list(left) == ["user_profiles"]  # an empty workspace: the profile at its defaults
    assert WorkspaceQueries(store).profile("maya") == Profile()
    assert _dump(store, "omar") == omar
    generate_workspace(store, "maya", today=TODAY)  # a cleared user can be filled again
    fresh = _store("maya")
    generate_workspace(fresh, "maya", today=TODAY)
    assert _dump(store) == _dump(fresh)


def test_today_defaults_to_the_date_in_the_time_zone() -> None:
    zone = ZoneInfo("Pacific/Auckland")
    before = datetime.now(zone).date()
    summary = generate_workspace(_store("maya"), "maya", timezone="Pacific/Auckland")
    assert summary.today in (before, datetime.now(zone).date())
    assert summary.timezone == "Pacific/Auckland"
