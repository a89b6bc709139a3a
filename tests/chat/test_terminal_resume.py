"""What the terminal shows a person (issue 33): a resumed chat as a conversation, and the usage line's cost.

Before: resuming printed the stored tool calls and results raw (``more_tools ← …``, ``blob
sha256:…``), and the offline assistant's turns cost ``$0.000000``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import pytest
from rich.console import Console

from tierwise.chat.engine import ChatEngine
from tierwise.chat.events import UsageEvent
from tierwise.chat.terminal import chat_loop, local_user, usage_line
from tierwise.providers.testing import ScriptedModel
from tierwise.store import Store

pytestmark = pytest.mark.anyio

SHA = "e9e7dc4c2479f509766a7a47980bb8509c96ce7a260713f973a0bcda4f2a1b2c"
REPORT = {"summary": {"utilizationPercent": 11.1, "limit": 15000}}


def lines(*given: str) -> Callable[[], str | None]:
    queue = list(given)

    def read() -> str | None:
        if not queue:
            raise EOFError
        return queue.pop(0)

    return read


def _call(call_id: str, name: str, **arguments: object) -> dict[str, object]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def _chat_with_tools(store: Store, user: str) -> str:
    """A chat as the offline assistant stores one: escapes, calls, a result kept in a blob."""
    chat = store.create_chat(user, title="What tasks do I have").id
    tasks = {"tasks": [{"id": f"task_{i}", "title": f"Task {i}"} for i in range(3)], "total": 172}
    compressed = (
        f"[tool result list_tasks · 2.3 kB · blob sha256:{SHA} (open with open_blob)] "
        "JSON object, 5 keys: tasks (3 items), total, has_more"
    )

    def add(message: dict[str, object], **metadata: object) -> str:
        return store.add_message(user, chat, message, token_count=5, metadata=metadata).id

    add({"role": "user", "content": "what tasks do I have?"})
    asked = add(
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [_call("c0", "more_tools", names=["list_tasks"])],
        }
    )
    store.add_tool_call(user, chat, asked, "more_tools", {"names": ["list_tasks"]}, result="Offered…")
    add({"role": "tool", "tool_call_id": "c0", "name": "more_tools", "content": "Offered next step"})
    listed = add({"role": "assistant", "content": "", "tool_calls": [_call("c1", "list_tasks", limit=3)]})
    store.add_tool_call(user, chat, listed, "list_tasks", {"limit": 3}, result=tasks)
    add({"role": "tool", "tool_call_id": "c1", "name": "list_tasks", "content": compressed})
    opened = add(
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                _call("c2", "get_task_details", task_id="task_1"),
                _call("c3", "open_blob", sha256=SHA),
            ],
        }
    )
    store.add_tool_call(user, chat, opened, "get_task_details", {"task_id": "task_1"}, result={"task": {}})
    add({"role": "tool", "tool_call_id": "c2", "name": "get_task_details", "content": '{"task": {}}'})
    add({"role": "tool", "tool_call_id": "c3", "name": "open_blob", "content": json.dumps(tasks)})
    add({"role": "assistant", "content": "**Open tasks** (172):\n- Task 0\n- Task 1\n- Task 2"})
    add({"role": "user", "content": "what is on my calendar tomorrow?"})
    add({"role": "assistant", "content": "**Calendar, tomorrow** (1 event):\n- Sat 07:30 Long run"})
    return chat


async def test_a_resumed_chat_reads_as_a_conversation(store: Store) -> None:
    user = local_user(store)
    chat = _chat_with_tools(store, user)
    engine = ChatEngine(store, ScriptedModel())
    screen = Console(record=True, width=120)

    await chat_loop(engine, user, chat, screen, lines("/exit"), resumed=True)

    out = screen.export_text()
    assert "resuming “What tasks do I have”" in out
    assert "sha256" not in out and "blob" not in out
    assert "more_tools" not in out and "open_blob" not in out and "list_tasks" not in out
    assert "←" not in out and "→" not in out  # no raw calls or results
    assert "you › what tasks do I have?" in out
    assert "looked up 3 tasks" in out and "opened a task" in out
    assert "assistant › Open tasks (172): Task 0 · Task 1 · Task 2" in out  # markdown read, not shown raw
    assert "**" not in out
    assert "you › what is on my calendar tomorrow?" in out
    assert out.index("what tasks do I have?") < out.index("looked up 3 tasks") < out.index("Open tasks")


async def test_a_long_chat_shows_its_last_exchanges_and_says_how_many_are_not_shown(store: Store) -> None:
    user = local_user(store)
    chat = store.create_chat(user, title="Many").id
    for i in range(8):
        store.add_message(user, chat, {"role": "user", "content": f"question {i}"}, token_count=2)
        store.add_message(user, chat, {"role": "assistant", "content": f"answer {i}"}, token_count=2)
    screen = Console(record=True, width=100)

    await chat_loop(ChatEngine(store, ScriptedModel()), user, chat, screen, lines("/exit"), resumed=True)

    out = screen.export_text()
    assert "5 earlier exchanges not shown" in out
    assert "question 4" not in out and "you › question 5" in out and "assistant › answer 7" in out


def test_a_free_model_costs_nothing_on_the_usage_line() -> None:
    free = usage_line(UsageEvent(REPORT, 2693, 215, 0.0, True))

    assert "$" not in free and "0.000000" not in free
    assert free == "2,693 prompt + 215 completion tokens · context 11.1% of 15,000"


@pytest.mark.parametrize(
    ("dollars", "shown"),
    [
        (0.0123, "$0.012"),
        (0.00031, "$0.00031"),
        (0.4567, "$0.46"),
        (12.3456, "$12.35"),
        (0.00000412, "<$0.0001"),
    ],
)
def test_dollars_have_sensible_precision(dollars: float, shown: str) -> None:
    line = usage_line(UsageEvent(REPORT, 10, 2, dollars, True))

    assert f" · {shown} · " in line
    assert not re.search(r"\$\d+\.\d{6}", line)


def test_an_unknown_price_is_still_said() -> None:
    assert "price unknown" in usage_line(UsageEvent(REPORT, 10, 2, 0.0, False))
