"""An agent loop through the chat engine: one task, many tool steps, a budget far smaller than the turn."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tierwise import Budget
from tierwise.chat.engine import ChatEngine
from tierwise.providers.testing import FunctionModel, ScriptedModel, tool_call
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
    # Memory's tools join the very call whose pack first points back (segments, blobs), mid-turn.
    offered = [{t["function"]["name"] for t in r.tools} for r in model.requests]
    points = [
        "## Conversation segments" in str(r.messages) or "sha256:" in str(r.messages) for r in model.requests
    ]
    first = points.index(True)
    assert not any({"open_blob", "recall_segments"} & names for names in offered[:first])
    assert all({"open_blob", "recall_segments"} <= names for names in offered[first:])


async def test_segments_closed_in_the_loop_are_summarised_while_the_model_answers(store: Store) -> None:
    """A compaction step mid-loop would otherwise make every trio the loop closed on the request path."""
    user = store.create_user("ada")
    chat = store.create_chat(user.id)
    waited: list[bool] = []
    calls = iter([tool_call("read_file", path=f"src/module_{k}.py") for k in range(40)])

    async def answer(request: Any) -> Any:
        held = engine.memories.held(user.id, chat.id)
        assert held is not None
        memory = held.memory
        for _ in range(500):  # the model "thinks" until upkeep is done (at most 5 s)
            if not memory.unsummarized:
                break
            await asyncio.sleep(0.01)
        waited.append(not memory.unsummarized)
        return next(calls, "Fixed.")

    engine = ChatEngine(
        store, FunctionModel(answer), tools=[read_file], budget=Budget(window=6000, reserve=500), max_steps=60
    )
    result = await engine.run(user.id, chat.id, TASK)

    assert result.done.reason == "answer"
    assert all(waited)  # every closed segment was summarised before the model's answer came in
