"""An agent loop through the chat engine: one task, many tool steps, a budget far smaller than the turn."""

from __future__ import annotations

import pytest

from tierwise import Budget
from tierwise.chat.engine import ChatEngine
from tierwise.providers.testing import ScriptedModel, tool_call
from tierwise.store import Store
from tierwise.tools import tool

pytestmark = pytest.mark.anyio

TASK = "Find why the proxy gets a 407 and fix requests/adapters.py. " + " ".join(
    f"Note {i}: the header Proxy-Authorization is built from the URL's user and password." for i in range(60)
)


@tool(tier="detail")
def read_file(path: str) -> str:
    """A file's lines, numbered."""
    return "\n".join(f"{n:>5}  line {n} of {path}: value = compute({n})" for n in range(1, 121))


async def test_a_long_loop_in_a_small_budget_runs_to_its_answer(store: Store) -> None:
    steps = [tool_call("read_file", path=f"src/module_{k}.py") for k in range(40)]
    model = ScriptedModel(*steps, "The header is built in adapters.py; fixed.")
    user = store.create_user("ada")
    chat = store.create_chat(user.id)
    engine = ChatEngine(
        store, model, tools=[read_file], budget=Budget(window=6000, reserve=500), max_steps=60
    )

    result = await engine.run(user.id, chat.id, TASK)

    assert result.done.reason == "answer", [e for e in result.events if e.type == "error"]
    assert len(model.requests) == 41
    for k, request in enumerate(model.requests[1:]):
        users = [m for m in request.messages if m["role"] == "user"]
        assert users[0]["content"].startswith("Find why the proxy gets a 407")  # the task, every step
        last = request.messages[-1]  # the step being answered: its result whole
        assert last["role"] == "tool" and last["content"] == read_file.function(path=f"src/module_{k}.py")
