from __future__ import annotations

import json
from typing import Any

import pytest

from tierwise.memory.persist import StoreBlobs
from tierwise.store import Store
from tierwise.tools import ToolExecutor, ToolRegistry, tool

pytestmark = pytest.mark.anyio


@tool(tier="list")
def list_tasks(limit: int = 2) -> list[dict[str, str]]:
    """List tasks."""
    return [{"id": f"task_{i:03}", "title": f"Task {i} of the Q4 launch plan"} for i in range(limit)]


@tool(tier="detail")
def get_task_details(task_id: str) -> dict[str, str]:
    """One task."""
    raise LookupError(f"task {task_id} not found")


@tool(tier="action")
def note(text: str) -> str:
    """Echo."""
    return text


def setup(store: Store) -> tuple[str, str, str]:
    user = store.create_user("maya")
    chat = store.create_chat(user.id)
    message = store.add_message(
        user.id,
        chat.id,
        {"role": "assistant", "content": None, "tool_calls": []},
        token_count=5,
    )
    return user.id, chat.id, message.id


async def test_executions_are_recorded(store: Any) -> None:
    s: Store = store
    user_id, chat_id, message_id = setup(s)
    executor = ToolExecutor(
        ToolRegistry([list_tasks, get_task_details, note]), store=s, user_id=user_id, chat_id=chat_id
    )
    ok = await executor.execute("c1", "list_tasks", '{"limit": 1}', message_id=message_id)
    text = await executor.execute("c2", "note", '{"text": "hi"}', message_id=message_id)
    bad = await executor.execute("c3", "list_tasks", '{"limit": "x"', message_id=message_id)
    unknown = await executor.execute("c4", "nope", "{}", message_id=message_id)
    calls = s.list_tool_calls(user_id, chat_id, message_id=message_id)
    assert [c.tool_name for c in calls] == ["list_tasks", "note", "list_tasks", "nope"]
    first, second, third, fourth = calls
    assert first.arguments == {"limit": 1} and first.success and first.error is None
    assert first.result == ok.data and first.duration_ms == ok.duration_ms
    assert second.result == {"content": "hi"} and text.success
    assert third.arguments == {"_raw": '{"limit": "x"'} and not third.success
    assert third.error == bad.error and third.result == {"content": bad.content}
    assert fourth.error == unknown.error and not fourth.success


async def test_without_a_message_id_nothing_is_recorded(store: Any) -> None:
    s: Store = store
    user_id, chat_id, _ = setup(s)
    executor = ToolExecutor(ToolRegistry([note]), store=s, user_id=user_id, chat_id=chat_id)
    result = await executor.execute("c1", "note", '{"text": "hi"}')
    assert result.success and s.list_tool_calls(user_id, chat_id) == []


async def test_alternative_records_both_executions(store: Any) -> None:
    s: Store = store
    user_id, chat_id, message_id = setup(s)
    executor = ToolExecutor(
        ToolRegistry([list_tasks, get_task_details]), store=s, user_id=user_id, chat_id=chat_id
    )
    result = await executor.execute("c1", "get_task_details", '{"task_id": "t9"}', message_id=message_id)
    assert result.success and result.strategy_used == "alternative"
    failed, alternative = s.list_tool_calls(user_id, chat_id)
    assert (failed.tool_name, failed.success, failed.error) == (
        "get_task_details",
        False,
        "LookupError: task t9 not found",
    )
    assert (alternative.tool_name, alternative.success, alternative.arguments) == ("list_tasks", True, {})


async def test_blob_in_the_store_is_linked(store: Any) -> None:
    s: Store = store
    user_id, chat_id, message_id = setup(s)
    executor = ToolExecutor(
        ToolRegistry([list_tasks]),
        store=s,
        user_id=user_id,
        chat_id=chat_id,
        blobs=StoreBlobs(s, user_id),
        blob_threshold_tokens=100,
    )
    result = await executor.execute("c1", "list_tasks", '{"limit": 40}', message_id=message_id)
    assert result.blob_sha256 is not None and "open_blob" in result.content
    (call,) = s.list_tool_calls(user_id, chat_id)
    assert call.blob_sha256 == result.blob_sha256
    assert call.result == {"content": result.content}
    assert len(json.loads(s.get_blob(user_id, result.blob_sha256))) == 40


async def test_store_problems_do_not_escape(store: Any, caplog: pytest.LogCaptureFixture) -> None:
    s: Store = store
    user_id, chat_id, _ = setup(s)
    executor = ToolExecutor(ToolRegistry([note]), store=s, user_id=user_id, chat_id=chat_id)
    result = await executor.execute(
        "c1", "note", '{"text": "nul \\u0000 char"}', message_id="no-such-message"
    )
    assert result.success
    assert any("could not record tool call" in r.getMessage() for r in caplog.records)


async def test_arguments_the_store_cannot_hold_are_cleaned(store: Any) -> None:
    s: Store = store
    user_id, chat_id, message_id = setup(s)
    executor = ToolExecutor(ToolRegistry([note]), store=s, user_id=user_id, chat_id=chat_id)
    result = await executor.execute("c1", "note", '{"text": "a\\u0000b\\ud800"}', message_id=message_id)
    assert result.success and result.content == "a\x00b\ufffd"  # the tool sees the NUL, not a lone surrogate
    (call,) = s.list_tool_calls(user_id, chat_id)
    assert call.arguments == {"text": "a\ufffdb\ufffd"} and call.result == {"content": "a\ufffdb\ufffd"}
