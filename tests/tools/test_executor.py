from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field

from tierwise.memory.blobs import InMemoryBlobStore
from tierwise.tools import (
    DEFAULT_STRATEGIES,
    FailureStrategy,
    ToolCall,
    ToolContext,
    ToolExecutor,
    ToolRegistry,
    tool,
)

pytestmark = pytest.mark.anyio


class Task(BaseModel):
    id: str
    title: str


TASKS = {"task_001": Task(id="task_001", title="Design API docs")}


@tool(tier="list")
def list_tasks(
    status: list[Literal["backlog", "in_progress", "done"]] | None = None,
    limit: Annotated[int, Field(ge=1, le=50)] = 20,
) -> dict[str, Any]:
    """List tasks, abbreviated."""
    return {"tasks": list(TASKS.values())[:limit], "total": len(TASKS)}


@tool(tier="detail")
async def get_task_details(task_id: str, include_subtasks: bool = False) -> Task:
    """One task in full.

    Args:
        task_id: the task's id, e.g. task_001.
        include_subtasks: also return subtasks.
    """
    if task_id not in TASKS:
        raise LookupError(f"task {task_id} not found")
    return TASKS[task_id]


@tool(tier="action")
def explode(reason: str = "boom") -> str:
    """Always fails."""
    raise RuntimeError(reason)


def registry(*extra: Any) -> ToolRegistry:
    return ToolRegistry([list_tasks, get_task_details, explode, *extra])


async def test_success_sync_and_async() -> None:
    executor = ToolExecutor(registry())
    listed = await executor.execute("c1", "list_tasks", '{"limit": 1}')
    assert listed.success and listed.error is None and listed.attempts == 1
    assert json.loads(listed.content) == {
        "tasks": [{"id": "task_001", "title": "Design API docs"}],
        "total": 1,
    }
    assert listed.content == '{"tasks":[{"id":"task_001","title":"Design API docs"}],"total":1}'  # compact
    assert listed.data == {"tasks": [{"id": "task_001", "title": "Design API docs"}], "total": 1}
    detail = await executor.execute("c2", "get_task_details", '{"task_id": "task_001"}')
    assert detail.success and detail.name == "get_task_details" and detail.call_id == "c2"
    assert detail.to_message() == {"role": "tool", "tool_call_id": "c2", "content": detail.content}
    assert detail.duration_ms >= 0 and detail.strategy_used is None and detail.blob_sha256 is None


async def test_empty_arguments_mean_no_arguments() -> None:
    result = await ToolExecutor(registry()).execute("c", "list_tasks", "")
    assert result.success


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ('{"limit": 2', "not valid JSON"),
        ("limit=2", "not valid JSON"),
        ('{"limit": NaN}', "not valid JSON"),
        ("[1, 2]", "must be a JSON object of named parameters"),
        ('"list"', "got a string"),
        ("null", "got null"),
    ],
)
async def test_arguments_that_are_not_a_json_object(arguments: str, expected: str) -> None:
    result = await ToolExecutor(registry()).execute("c", "list_tasks", arguments)
    assert not result.success and result.attempts == 0
    assert expected in result.content and result.content.startswith("error: ")
    assert result.error is not None and expected in result.error


async def test_invented_argument_is_named_with_a_suggestion() -> None:
    result = await ToolExecutor(registry()).execute("c", "list_tasks", '{"limit": 5, "statuses": ["done"]}')
    assert not result.success
    assert "- statuses: not a parameter of list_tasks; did you mean 'status'?" in result.content
    far = await ToolExecutor(registry()).execute("c", "list_tasks", '{"colour": "red"}')
    assert "colour: not a parameter of list_tasks; remove it (parameters: status, limit)" in far.content


async def test_wrong_type_and_out_of_range() -> None:
    result = await ToolExecutor(registry()).execute(
        "c", "list_tasks", '{"limit": "many", "status": ["open"]}'
    )
    lines = result.content.splitlines()
    assert lines[0] == "error: invalid arguments for list_tasks; fix them and call again:"
    assert any(
        line.startswith("- limit: Input should be a valid integer") and '(got "many")' in line
        for line in lines
    )
    assert any(
        line.startswith("- status[0]: Input should be 'backlog', 'in_progress' or 'done'") for line in lines
    )
    big = await ToolExecutor(registry()).execute("c", "list_tasks", '{"limit": 500}')
    assert "- limit: Input should be less than or equal to 50 (got 500)" in big.content


async def test_missing_required_names_the_field_and_its_description() -> None:
    result = await ToolExecutor(registry()).execute("c", "get_task_details", "{}")
    assert not result.success
    assert "- task_id: required but missing; add it (the task's id, e.g. task_001.)" in result.content


async def test_at_most_five_problems_are_listed() -> None:
    arguments = json.dumps({f"x{i}": i for i in range(8)})
    result = await ToolExecutor(registry()).execute("c", "list_tasks", arguments)
    problems = [line for line in result.content.splitlines() if line.startswith("- ")]
    assert len(problems) == 6 and problems[-1] == "- … and 3 more"


async def test_unknown_tool_lists_the_available_ones() -> None:
    result = await ToolExecutor(registry()).execute("c", "get_tasks", "{}")
    assert not result.success and result.attempts == 0
    assert (
        result.content == "error: unknown tool 'get_tasks'; available: explode, get_task_details, list_tasks"
    )


async def test_raising_tool_gives_type_and_message_without_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="tierwise.tools.executor"):
        result = await ToolExecutor(registry()).execute("c", "explode", '{"reason": "disk\\nfull"}')
    assert not result.success and result.attempts == 1
    assert result.error == "RuntimeError: disk full"
    assert result.content == "error: explode failed: RuntimeError: disk full"
    assert "Traceback" not in result.content
    assert any("explode" in r.getMessage() and r.exc_info for r in caplog.records)


async def test_timeout_async_and_sync() -> None:
    @tool(tier="detail")
    async def slow_async() -> str:
        """Slow."""
        await asyncio.sleep(5)
        return "late"

    release = threading.Event()

    @tool(tier="detail")
    def slow_sync() -> str:
        """Slow, in a thread."""
        release.wait(3)  # (released at the end: the loop's shutdown need not wait for the thread)
        return "late"

    executor = ToolExecutor(ToolRegistry([slow_async, slow_sync]), timeout_s=0.05)
    try:
        for name in ("slow_async", "slow_sync"):
            started = time.perf_counter()
            result = await executor.execute("c", name, "{}")
            assert time.perf_counter() - started < 2  # the timeout, not the tool's 3 s (however busy the box)
            assert not result.success and result.error == "timed out after 0.05 s"
            assert result.content == f"error: {name} failed: timed out after 0.05 s"
    finally:
        release.set()


async def test_a_tool_raising_timeout_error_itself_is_not_our_timeout() -> None:
    @tool(tier="calendar")
    async def flaky() -> str:
        """Raises its own TimeoutError."""
        raise TimeoutError("upstream took too long")

    result = await ToolExecutor(ToolRegistry([flaky])).execute("c", "flaky", "{}")
    assert result.error == "TimeoutError: upstream took too long"


async def test_independent_calls_run_concurrently_in_order() -> None:
    # Each waits until the other has started: run one after the other, the first would time out.
    a_started, b_started = threading.Event(), threading.Event()

    @tool(tier="detail")
    async def slow_a(n: int) -> int:
        """Slow A."""
        a_started.set()
        for _ in range(500):
            if b_started.is_set():
                return n
            await asyncio.sleep(0.01)
        raise AssertionError("slow_b never ran beside slow_a")

    @tool(tier="detail")
    def slow_b(n: int) -> int:
        """Slow B, sync (a worker thread)."""
        b_started.set()
        assert a_started.wait(timeout=5), "slow_a never ran beside slow_b"
        return n * 10

    executor = ToolExecutor(ToolRegistry([slow_a, slow_b]))
    results = await executor.execute_many(
        [
            ToolCall("1", "slow_b", '{"n": 1}'),
            {"id": "2", "type": "function", "function": {"name": "slow_a", "arguments": '{"n": 2}'}},
            ToolCall("3", "nope", "{}"),
        ]
    )
    assert [r.call_id for r in results] == ["1", "2", "3"]
    assert [r.content for r in results[:2]] == ["10", "2"]
    assert not results[2].success


async def test_tool_receives_context() -> None:
    @tool(tier="detail")
    def whoami(ctx: ToolContext) -> dict[str, Any]:
        """Who is asking."""
        return {"user": ctx.user_id, "chat": ctx.chat_id, "call": ctx.call_id, "x": ctx.extras.get("x")}

    executor = ToolExecutor(ToolRegistry([whoami]), user_id="u1", chat_id="c9")
    result = await executor.execute("call_7", "whoami", "{}", context=ToolContext(extras={"x": 1}))
    assert result.data == {"user": "u1", "chat": "c9", "call": "call_7", "x": 1}


async def test_results_are_serialised() -> None:
    @tool(tier="detail")
    def shapes(kind: Literal["none", "text", "model", "set", "circular"]) -> Any:
        """Shapes."""
        if kind == "circular":
            loop: list[Any] = []
            loop.append(loop)
            return loop
        return {"none": None, "text": "plain text", "model": Task(id="t", title="é"), "set": {1}}[kind]

    executor = ToolExecutor(ToolRegistry([shapes]))
    contents = [
        (await executor.execute("c", "shapes", json.dumps({"kind": k}))).content
        for k in ("none", "text", "model", "set")
    ]
    assert contents == ["null", "plain text", '{"id":"t","title":"é"}', "[1]"]
    circular = await executor.execute("c", "shapes", '{"kind": "circular"}')
    assert not circular.success and "cannot be serialised" in circular.content


async def test_retry_strategy_recovers_on_second_attempt() -> None:
    calls: list[int] = []

    @tool(tier="calendar")
    def schedule_task(task_id: str) -> str:
        """Schedule a task."""
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("rate_limit exceeded, try later")
        return f"scheduled {task_id}"

    executor = ToolExecutor(
        ToolRegistry([schedule_task]),
        strategies=[FailureStrategy("schedule_task", "rate_limit", "retry", retries=2, backoff_s=0.01)],
    )
    result = await executor.execute("c", "schedule_task", '{"task_id": "t1"}')
    assert result.success and result.content == "scheduled t1"
    assert result.attempts == 2 and result.strategy_used == "retry"


async def test_retry_gives_up_after_its_retries() -> None:
    @tool(tier="calendar")
    async def schedule_task(task_id: str) -> str:
        """Always rate limited."""
        raise RuntimeError("RateLimitError 429")

    strategy = FailureStrategy(None, r"rate[ _]?limit", "retry", retries=2, backoff_s=0.001)
    result = await ToolExecutor(ToolRegistry([schedule_task]), strategies=[strategy]).execute(
        "c", "schedule_task", '{"task_id": "t1"}'
    )
    assert not result.success and result.attempts == 3 and result.strategy_used == "retry"
    assert result.content == "error: schedule_task failed after 3 attempts: RuntimeError: RateLimitError 429"


async def test_alternative_strategy_for_not_found() -> None:
    executor = ToolExecutor(registry())  # the default strategies
    result = await executor.execute(
        "c", "get_task_details", '{"task_id": "task_404", "include_subtasks": true}'
    )
    assert result.success and result.strategy_used == "alternative"
    assert result.error == "LookupError: task task_404 not found"
    first, note, payload = result.content.split("\n", 2)
    assert first == "Task not found. Let me search for similar tasks."
    assert note == "(get_task_details failed: LookupError: task task_404 not found. Result of list_tasks:)"
    assert json.loads(payload)["total"] == 1
    assert result.name == "get_task_details" and result.attempts == 2


async def test_alternative_that_cannot_take_the_arguments() -> None:
    @tool(tier="list")
    def search(query: str) -> str:
        """Needs a query."""
        return query

    strategy = FailureStrategy("explode", "boom", "alternative", alternative_tool="search")
    result = await ToolExecutor(registry(search), strategies=[strategy]).execute("c", "explode", "{}")
    assert not result.success and result.strategy_used == "alternative"
    assert "the alternative search could not run either: query: required but missing" in result.content


async def test_explain_strategy_tells_the_model_what_to_say() -> None:
    @tool(tier="calendar")
    def get_calendar_events(days: int = 7) -> list[str]:
        """Upcoming events."""
        raise PermissionError("Google Calendar requires reconnection")

    result = await ToolExecutor(ToolRegistry([get_calendar_events])).execute("c", "get_calendar_events", "{}")
    assert not result.success and result.strategy_used == "explain" and result.attempts == 1
    assert result.content.startswith("error: get_calendar_events failed: PermissionError:")
    tell = "Calendar disconnected. Please reconnect your calendar in settings."
    assert result.content.endswith(f"Do not call it again now; tell the user: {tell}")


async def test_skip_strategy() -> None:
    strategy = FailureStrategy(None, "^RuntimeError", "skip")
    result = await ToolExecutor(registry(), strategies=[strategy]).execute("c", "explode", "{}")
    assert not result.success and result.strategy_used == "skip"
    assert result.content == "explode was skipped (RuntimeError: boom); continue without it."


def test_default_strategies_are_the_seeds_three() -> None:
    assert [(s.tool, s.fallback) for s in DEFAULT_STRATEGIES] == [
        ("get_calendar_events", "explain"),
        ("get_task_details", "alternative"),
        ("schedule_task", "retry"),
    ]
    assert DEFAULT_STRATEGIES[1].alternative_tool == "list_tasks"
    assert DEFAULT_STRATEGIES[2].matches("schedule_task", "rate_limit")
    assert DEFAULT_STRATEGIES[0].matches("get_calendar_events", "Error: calendar requires reconnection")


def test_strategy_validation() -> None:
    from tierwise.errors import InputError

    with pytest.raises(InputError, match="alternative_tool"):
        FailureStrategy("x", "y", "alternative")
    with pytest.raises(InputError, match="unknown fallback"):
        FailureStrategy("x", "y", "panic")  # type: ignore[arg-type]
    assert FailureStrategy(None, "a+b(", "skip").matches("t", "A+B( happened")  # invalid regex: substring


async def test_large_result_becomes_a_blob() -> None:
    @tool(tier="list")
    def dump(n: int = 300) -> list[dict[str, Any]]:
        """A big list."""
        return [{"id": f"task_{i:03}", "title": f"Task number {i} about the launch"} for i in range(n)]

    blobs = InMemoryBlobStore()
    executor = ToolExecutor(ToolRegistry([dump]), blobs=blobs, blob_threshold_tokens=400)
    result = await executor.execute("c", "dump", "{}")
    assert result.success and result.blob_sha256 is not None and result.blob_sha256 in blobs
    assert result.content.startswith("[tool result dump · ")
    assert f"blob sha256:{result.blob_sha256}" in result.content
    assert len(result.content) < 1000
    stored = json.loads(blobs.get(result.blob_sha256))
    assert len(stored) == 300 and result.data == stored
    small = await executor.execute("c", "dump", '{"n": 2}')
    assert small.blob_sha256 is None and json.loads(small.content)[1]["id"] == "task_001"


async def test_without_blobs_nothing_is_compressed() -> None:
    @tool(tier="list")
    def dump() -> str:
        """Big text."""
        return "word " * 2000

    result = await ToolExecutor(ToolRegistry([dump])).execute("c", "dump", "{}")
    assert result.blob_sha256 is None and result.content == "word " * 2000


def test_executor_argument_checks() -> None:
    from tierwise.errors import InputError

    with pytest.raises(InputError, match="timeout_s"):
        ToolExecutor(registry(), timeout_s=0)
    with pytest.raises(InputError, match="blob_threshold_tokens"):
        ToolExecutor(registry(), blob_threshold_tokens=-1)
