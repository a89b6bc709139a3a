"""The twelve workspace tools: results, limits, bad arguments and cross-user isolation."""

from __future__ import annotations

import json
from datetime import date, timedelta

import pytest

from tests.workspace.conftest import NOW, Env
from tierwise.tools import ToolRegistry
from tierwise.workspace.calendar import LocalCalendar
from tierwise.workspace.tools import WORKSPACE_TOOL_NAMES, workspace_tools
from tierwise.workspace.views import PREVIEW_LIMITS

LONG = "Build robust webhook delivery with retry logic, signature verification and event filtering. " * 8


def _project(env: Env, name: str = "Q4 Product Launch", user: str | None = None, **kw: object) -> str:
    return str(env.ws.create_project(user or env.user, name=name, **kw)["id"])  # type: ignore[arg-type]


# -- definitions -------------------------------------------------------------------------------------


def test_all_twelve_tools_with_seed_names_and_tiers() -> None:
    tools = workspace_tools()
    assert tuple(t.name for t in tools) == WORKSPACE_TOOL_NAMES
    tiers = {t.name: t.tier for t in tools}
    assert [n for n, t in tiers.items() if t == "list"] == ["list_tasks", "search_projects", "search_notes"]
    assert [n for n, t in tiers.items() if t == "detail"] == [
        "get_task_details",
        "get_project_details",
        "get_note_details",
    ]
    assert [n for n, t in tiers.items() if t == "calendar"] == [
        "get_calendar_events",
        "find_available_slots",
        "schedule_task",
    ]


def test_schemas_are_seed_shaped() -> None:
    registry = ToolRegistry(workspace_tools())
    defs = {d["function"]["name"]: d["function"]["parameters"] for d in registry.definitions()}
    lt = defs["list_tasks"]["properties"]
    assert lt["status"]["type"] == "array"
    assert lt["status"]["items"]["enum"] == ["backlog", "in_progress", "done", "blocked"]
    assert lt["limit"]["maximum"] == 50 and lt["limit"]["default"] == 20
    assert lt["sort_by"]["enum"] == ["priority", "start_date", "created_at"]
    assert defs["search_projects"]["properties"]["limit"]["maximum"] == 20
    assert defs["get_task_details"]["required"] == ["task_id"]
    assert defs["find_available_slots"]["required"] == ["timeMin", "timeMax"]
    updates = defs["update_task"]["properties"]["updates"]
    assert updates["type"] == "object" and "status" in updates["properties"]
    text = json.dumps(defs)
    assert "$ref" not in text and '"null"' not in text  # inlined, optional without null
    assert defs["update_project_context"]["properties"]["merge_strategy"]["enum"] == [
        "replace",
        "append",
        "prepend",
    ]
    assert defs["schedule_task"]["properties"]["recurrence_pattern"]["enum"] == [
        "daily",
        "weekdays",
        "weekly",
        "biweekly",
        "monthly",
    ]


# -- list tier --------------------------------------------------------------------------------------


def test_list_tasks_abbreviates_with_hints(env: Env) -> None:
    pid = _project(env)
    parent = env.ws.create_task(
        env.user,
        title="Implement webhook system",
        description=LONG,
        details=LONG,
        project_id=pid,
        priority="high",
        start_date="2026-11-20",
    )
    env.ws.create_task(env.user, title="Write retry logic", parent_task_id=parent["id"])
    env.ws.create_task(env.user, title="Update changelog", priority="low")
    data = env.data("list_tasks")
    assert data["total"] == 3 and data["has_more"] is False
    assert "get_task_details" in data["message"]
    first = data["tasks"][0]
    assert first["title"] == "Implement webhook system"  # priority order
    assert len(first["description_preview"]) <= PREVIEW_LIMITS["task_description"] + 1
    assert first["description_preview"].endswith("…")
    assert len(first["details_preview"]) <= PREVIEW_LIMITS["task_details"] + 1
    assert first["has_subtasks"] is True and first["is_overdue"] is True
    assert first["project_name"] == "Q4 Product Launch" and first["start_date"] == "2026-11-20"
    assert "details" not in first and "description" not in first
    sub = next(t for t in data["tasks"] if t["title"] == "Write retry logic")
    assert sub["project_name"] == "Q4 Product Launch"  # inherited from the parent


def test_list_tasks_filters_and_sorting(env: Env) -> None:
    pid = _project(env)
    env.ws.create_task(env.user, title="A high", priority="high", project_id=pid)
    env.ws.create_task(env.user, title="B low dated", priority="low", start_date="2026-11-25")
    done = env.ws.create_task(env.user, title="C done", priority="medium", start_date="2026-11-24")
    env.ws.update_task(env.user, done["id"], {"status": "done"})
    titles = lambda **kw: [t["title"] for t in env.data("list_tasks", **kw)["tasks"]]  # noqa: E731
    assert titles(priority=["high"]) == ["A high"]
    assert titles(status=["done"]) == ["C done"]
    assert titles(project_id=pid) == ["A high"]
    assert titles(has_date=True, sort_by="start_date") == ["B low dated"]  # done only when asked
    every = ["backlog", "in_progress", "done", "blocked"]
    assert titles(has_date=True, sort_by="start_date", status=every) == ["C done", "B low dated"]
    assert titles(query="DATED") == ["B low dated"]
    assert titles(query="D") == ["B low dated", "C done"]  # a search finds done tasks too, after open ones


def test_list_tasks_overdue_counts_only_late_open_tasks(env: Env) -> None:
    """Was: no overdue filter, so "which tasks are overdue?" could only page through every open task
    and say "(5+) … and 0+ more" (issue 17)."""
    for i in range(7):
        env.ws.create_task(env.user, title=f"Late {i}", start_date=f"2026-10-{10 + i:02d}")
    env.ws.create_task(env.user, title="Soon", start_date="2026-12-01")
    env.ws.create_task(env.user, title="Undated")
    late_done = env.ws.create_task(env.user, title="Late but done", start_date="2026-10-01")
    env.ws.update_task(env.user, late_done["id"], {"status": "done"})
    page = env.data("list_tasks", overdue=True, limit=3)
    assert page["total"] == 7 and len(page["tasks"]) == 3 and all(t["is_overdue"] for t in page["tasks"])
    assert "overdue tasks" in page["message"]
    rest = env.data("list_tasks", overdue=False)
    assert {t["title"] for t in rest["tasks"]} == {"Soon", "Undated"}


def test_list_tasks_limit_is_clamped(env: Env) -> None:
    for i in range(55):
        env.ws.create_task(env.user, title=f"Task {i}")
    data = env.data("list_tasks", limit=500)  # clamped to 50, then cut to the page's tokens
    assert 1 < len(data["tasks"]) < 50 and data["total"] == 55 and data["has_more"] is True
    assert data["next_offset"] == len(data["tasks"])
    assert len(env.data("list_tasks", limit=0)["tasks"]) == 1
    seen, offset = [], 0
    while True:  # the pages, followed by next_offset, give every task once, in order
        page = env.data("list_tasks", limit=500, offset=offset)
        seen += [t["title"] for t in page["tasks"]]
        if not page["has_more"]:
            break
        offset = page["next_offset"]
    assert len(seen) == 55 and len(set(seen)) == 55


def test_search_escapes_user_input_and_ignores_case(env: Env) -> None:
    env.ws.create_task(env.user, title="Reach 100% coverage")
    env.ws.create_task(env.user, title="Reach 1000 users")
    env.ws.create_task(env.user, title="snake_case names")
    env.ws.create_task(env.user, title="snakeXcase names")
    titles = lambda q: [t["title"] for t in env.data("list_tasks", query=q)["tasks"]]  # noqa: E731
    assert titles("100%") == ["Reach 100% coverage"]
    assert titles("SNAKE_CASE") == ["snake_case names"]
    assert titles("%") == ["Reach 100% coverage"]


def test_search_projects_stats_preview_and_hints(env: Env) -> None:
    pid = _project(env, tags=["launch", "enterprise"], context="x" * 1200, description="Big launch")
    _project(env, "Home Renovation", status="paused")
    env.ws.create_task(env.user, title="one", project_id=pid)
    t2 = env.ws.create_task(env.user, title="two", project_id=pid)
    env.ws.update_task(env.user, t2["id"], {"status": "done"})
    env.ws.create_note(env.user, content="Kickoff notes", project_id=pid)
    data = env.data("search_projects", query="launch")
    assert data["total"] == 1
    p = data["projects"][0]
    assert p["task_count"] == 2 and p["completed_task_count"] == 1 and p["completion_percentage"] == 50
    assert p["active_task_count"] == 1
    assert len(p["context_preview"]) <= PREVIEW_LIMITS["project_context"] + 1
    assert p["has_notes"] is True and "has_phases" not in p and "has_brain_dumps" not in p  # false: left out
    assert "context" not in p
    assert [x["name"] for x in env.data("search_projects", query="ENTERPRISE")["projects"]] == [
        "Q4 Product Launch"
    ]
    assert [x["name"] for x in env.data("search_projects", status="paused")["projects"]] == [
        "Home Renovation"
    ]
    assert [x["name"] for x in env.data("search_projects", has_active_tasks=True)["projects"]] == [
        "Q4 Product Launch"
    ]
    assert len(env.data("search_projects", limit=99)["projects"]) == 2


def test_search_notes(env: Env) -> None:
    pid = _project(env)
    env.ws.create_note(
        env.user,
        title="Pricing research",
        content="Competitors charge " * 40,
        category="research",
        project_id=pid,
    )
    env.ws.create_note(env.user, title="Journal", content="Slept well", category="journal")
    data = env.data("search_notes", query="competitors")
    assert data["total"] == 1
    note = data["notes"][0]
    assert len(note["content_preview"]) <= PREVIEW_LIMITS["note_content"] + 1
    assert note["project_name"] == "Q4 Product Launch"
    assert env.data("search_notes", category="JOURNAL")["notes"][0]["title"] == "Journal"
    assert env.data("search_notes", project_id=pid)["total"] == 1


# -- detail tier ------------------------------------------------------------------------------------


def test_get_task_details_is_complete(env: Env) -> None:
    pid = _project(env, context="Full project context")
    dep = env.ws.create_task(env.user, title="Design schema", project_id=pid)
    task = env.ws.create_task(env.user, title="Webhooks", description=LONG, details=LONG, project_id=pid)
    env.ws.create_task(env.user, title="Retries", parent_task_id=task["id"], description="sub")
    from tierwise.workspace.models import Task

    with env.store.session(write=True) as s:
        s.get(Task, task["id"]).dependencies = [dep["id"]]  # type: ignore[union-attr]
    data = env.data("get_task_details", task_id=task["id"], include_project_context=True)["task"]
    assert data["description"] == LONG.strip() or data["description"] == LONG
    assert data["details"] == LONG
    assert [s["title"] for s in data["subtasks"]] == ["Retries"]
    assert data["dependencies"] == [{"id": dep["id"], "title": "Design schema", "status": "backlog"}]
    assert data["project"]["context"] == "Full project context"
    brief = env.data("get_task_details", task_id=task["id"], include_subtasks=False)["task"]
    assert "subtasks" not in brief and brief["subtask_count"] == 1 and "context" not in brief["project"]


def test_get_project_details_options(env: Env) -> None:
    pid = _project(env, context="C" * 3000)
    env.ws.create_task(env.user, title="one", project_id=pid)
    env.ws.create_note(env.user, content="n", project_id=pid)
    data = env.data("get_project_details", project_id=pid, include_tasks=True, include_notes=True)
    project = data["project"]
    assert project["context"] == "C" * 3000
    assert [t["title"] for t in project["tasks"]] == ["one"] and "description_preview" not in project[
        "tasks"
    ][0]
    assert len(project["notes"]) == 1 and project["phases"] == []
    assert "brain_dumps" not in project
    assert "1 open task." in data["message"]


def test_get_note_details(env: Env) -> None:
    note = env.ws.create_note(env.user, title="Long", content="word " * 500)
    assert env.data("get_note_details", note_id=note["id"])["note"]["content"] == "word " * 500


@pytest.mark.parametrize(
    ("tool", "arg", "hint"),
    [
        ("get_project_details", "project_id", "search_projects"),
        ("get_note_details", "note_id", "search_notes"),
    ],
)
def test_unknown_ids_suggest_the_list_tool(env: Env, tool: str, arg: str, hint: str) -> None:
    result = env.call(tool, **{arg: "proj_nope"})
    assert not result.success and "not found" in result.content and hint in result.content


def test_an_unknown_task_is_searched_for_by_the_words_asked(env: Env) -> None:
    """Was: the not-found fallback listed every task (list_tasks({})); now it searches the id's words."""
    env.ws.create_task(env.user, title="Implement webhook system")
    env.ws.create_task(env.user, title="Unrelated chore")
    result = env.call("get_task_details", task_id="task_webhook_system")
    assert not result.success and result.strategy_used is None
    assert "Implement webhook system" in result.content and "Unrelated chore" not in result.content
    assert "webhook system" in result.content
    by_title = env.call("get_task_details", task_id="the webhook task").content  # a title as the id
    assert "Implement webhook system" in by_title and "Unrelated chore" not in by_title
    invented = env.call("get_task_details", task_id="task_invented").content
    assert "not found" in invented and "list_tasks" in invented and "chore" not in invented
    generated = env.call("get_task_details", task_id="task_4k7d2x9q1m3a").content  # a real-looking id
    assert "call list_tasks to find the task's id" in generated and "Implement" not in generated
    note = env.ws.create_note(env.user, title="Pricing research", content="x")
    found = env.call("get_note_details", note_id="pricing").content
    assert note["id"] in found and "Pricing research" in found


# -- actions ----------------------------------------------------------------------------------------


def test_create_task_and_its_checks(env: Env) -> None:
    pid = _project(env)
    data = env.data(
        "create_task", title="Book venue", project_id=pid, priority="high", start_date="2026-11-30"
    )
    assert data["task"]["project_name"] == "Q4 Product Launch" and data["task"]["start_date"] == "2026-11-30"
    assert data["task"]["id"] in data["message"]
    recurring = env.data("create_task", title="Review", recurrence_pattern="weekly")["task"]
    assert recurring["is_recurring"] is True
    assert "recurrence_pattern" in env.call("create_task", title="x", task_type="recurring").content
    assert "not a date" in env.call("create_task", title="x", start_date="next blursday").content
    assert "not found" in env.call("create_task", title="x", project_id="proj_nope").content
    assert "title" in env.call("create_task").content  # missing required
    assert not env.call("create_task", title="x", priority="urgent").success


def test_update_task(env: Env) -> None:
    task = env.ws.create_task(env.user, title="Draft post")
    data = env.data("update_task", task_id=task["id"], updates={"status": "done", "priority": "high"})
    assert sorted(data["changed"]) == ["priority", "status"] and data["task"]["status"] == "done"
    again = env.data("update_task", task_id=task["id"], updates={"status": "done"})
    assert again["changed"] == []
    assert "updates is empty" in env.call("update_task", task_id=task["id"], updates={}).content
    assert not env.call("update_task", task_id=task["id"], updates={"colour": "red"}).success
    assert not env.call("update_task", task_id=task["id"], updates={"status": "finished"}).success


def test_update_project_context_strategies(env: Env) -> None:
    pid = _project(env, context="Middle")
    env.data("update_project_context", project_id=pid, context_update="End")
    env.data("update_project_context", project_id=pid, context_update="Start", merge_strategy="prepend")
    assert env.ws.project_details(env.user, pid)["context"] == "Start\n\nMiddle\n\nEnd"
    out = env.data("update_project_context", project_id=pid, context_update="New", merge_strategy="replace")
    assert out["context_length"] == 3 and env.ws.project_details(env.user, pid)["context"] == "New"
    assert not env.call(
        "update_project_context", project_id=pid, context_update="x", merge_strategy="merge"
    ).success


# -- calendar ---------------------------------------------------------------------------------------


def test_calendar_events_default_window_and_limit(env: Env) -> None:
    cal = LocalCalendar(env.store)
    for day in range(10):
        start = NOW + timedelta(days=day, hours=1)
        cal.add_event(
            env.user,
            summary=f"Meeting {day}",
            start=start,
            end=start + timedelta(hours=1),
            timezone="Europe/Lisbon",
        )
    data = env.data("get_calendar_events")
    assert data["total"] == 7  # days 0..6 within the default 7 days
    assert data["events"][0]["summary"] == "Meeting 0" and data["events"][0]["start"] == "2026-11-23 15:00"
    assert len(env.data("get_calendar_events", limit=2)["events"]) == 2
    assert not env.call("get_calendar_events", timeMin="2026-11-25", timeMax="2026-11-24").success
    assert not env.call("get_calendar_events", timeMin="soon").success


def test_find_available_slots_and_schedule(env: Env) -> None:
    cal = LocalCalendar(env.store)
    busy_start = NOW.replace(hour=9) + timedelta(days=1)  # Tue 09:00 Lisbon = UTC in winter
    cal.add_event(
        env.user,
        summary="Workshop",
        start=busy_start,
        end=busy_start + timedelta(hours=3),
        timezone="Europe/Lisbon",
    )
    slots = env.data(
        "find_available_slots", timeMin="2026-11-24T00:00", timeMax="2026-11-24T23:59", duration_minutes=60
    )["slots"]
    assert slots and all(not ("2026-11-24 09:00" <= s["start"] < "2026-11-24 12:00") for s in slots)
    assert all(s["start"][11:] >= "09:00" and s["end"][11:] <= "17:00" for s in slots)
    task = env.ws.create_task(env.user, title="Write launch post", duration_minutes=90)
    out = env.data(
        "schedule_task",
        task_id=task["id"],
        start_time=slots[0]["start"].replace(" ", "T"),
        recurrence_pattern="weekly",
    )
    assert out["event"]["linked_task_id"] == task["id"] and out["conflicts"] == []
    listed = env.data("list_tasks")["tasks"][0]
    assert listed["is_recurring"] is True and listed["start_date"] == slots[0]["start"]
    clash = env.data("schedule_task", task_id=task["id"], start_time="2026-11-24T10:00")
    assert [c["summary"] for c in clash["conflicts"]] == ["Workshop"]


def test_calendar_reconnection_is_a_user_action(env: Env) -> None:
    from tierwise.workspace.calendar import CalendarReconnectRequired

    class Disconnected(LocalCalendar):
        def events(self, *a: object, **k: object):  # type: ignore[no-untyped-def,override]
            raise CalendarReconnectRequired("google")

        def busy(self, *a: object, **k: object):  # type: ignore[no-untyped-def,override]
            raise CalendarReconnectRequired("google")

    import asyncio

    from tierwise.tools import ToolContext

    ctx = ToolContext(user_id=env.user, extras={"clock": lambda: NOW, "calendar": Disconnected(env.store)})
    for name, args in (
        ("get_calendar_events", "{}"),
        ("find_available_slots", '{"timeMin": "2026-11-24", "timeMax": "2026-11-25"}'),
    ):
        result = asyncio.run(env.executor.execute("c", name, args, context=ctx))
        assert not result.success and result.strategy_used == "explain"
        assert "reconnect your calendar" in result.content


# -- isolation --------------------------------------------------------------------------------------


def test_no_tool_reaches_another_users_rows(env: Env) -> None:
    pid = _project(env, "Secret Project")
    task = env.ws.create_task(env.user, title="Secret task", project_id=pid)
    note = env.ws.create_note(env.user, title="Secret note", content="hidden")
    start = NOW + timedelta(hours=2)
    LocalCalendar(env.store).add_event(
        env.user, summary="Secret meeting", start=start, end=start + timedelta(hours=1), timezone="UTC"
    )
    o = env.other
    assert env.data("list_tasks", o)["total"] == 0
    assert env.data("list_tasks", o, project_id=pid)["total"] == 0
    assert env.data("search_projects", o, query="Secret")["total"] == 0
    assert env.data("search_notes", o, query="Secret")["total"] == 0
    assert env.data("get_calendar_events", o)["total"] == 0
    for name, args in [
        ("get_task_details", {"task_id": task["id"]}),
        ("get_project_details", {"project_id": pid}),
        ("get_note_details", {"note_id": note["id"]}),
        ("update_task", {"task_id": task["id"], "updates": {"status": "done"}}),
        ("update_project_context", {"project_id": pid, "context_update": "pwned"}),
        ("create_task", {"title": "x", "project_id": pid}),
        ("create_task", {"title": "x", "parent_task_id": task["id"]}),
        ("schedule_task", {"task_id": task["id"], "start_time": "2026-11-24T10:00"}),
    ]:
        result = env.call(name, o, **args)
        assert "Secret" not in result.content, (name, result.content)
        assert not result.success and "not found" in result.content, name
    assert env.ws.task_details(env.user, task["id"])["status"] == "backlog"
    assert env.ws.project_details(env.user, pid)["context"] is None


def test_dates_in_the_users_zone(env: Env) -> None:
    task = env.data("create_task", title="Late call", start_date="2026-07-01T23:30")["task"]
    assert task["start_date"] == "2026-07-01 23:30"  # Lisbon summer time, stored as 22:30 UTC
    assert env.ws.list_tasks(env.user)[0][0]["start_date"] == "2026-07-01 23:30"
    assert date(2026, 7, 1)
