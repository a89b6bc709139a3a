"""Earlier tool results re-sent as their tool's recap: whole in their own turn, the recap afterwards."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from tierwise import Budget
from tierwise.chat.engine import ChatEngine
from tierwise.chat.recap import history_recap, turn_recap
from tierwise.providers.testing import ScriptedModel, tool_call
from tierwise.store import Store
from tierwise.tools import Tool, ToolRegistry, tool

pytestmark = pytest.mark.anyio

BUDGET = Budget(window=8000, reserve=500)


@tool(tier="list")
def find_items(query: str) -> dict[str, Any]:
    """Items matching a query, with long previews."""
    preview = "a long preview " * 20
    return {"items": [{"id": f"item_{i}", "title": f"{query} {i}", "preview": preview} for i in range(3)]}


@tool(tier="detail")
def get_item(item_id: str) -> dict[str, Any]:
    """One item in full."""
    return {"item": {"id": item_id, "body": "the whole text " * 40}}


def _short(text: str) -> str:
    data = json.loads(text)
    rows = data.get("items") or [data["item"]]
    return json.dumps({"items": [{"id": r["id"]} for r in rows], "message": "recap"})


def _recapped(*tools: Tool) -> list[Tool]:
    return [dataclasses.replace(t, recap=_short) for t in tools]


def _tool_messages(messages: Any) -> list[str]:
    return [m["content"] for m in messages if m["role"] == "tool"]


async def test_a_result_is_read_whole_in_its_turn_and_recapped_in_later_ones(store: Store) -> None:
    model = ScriptedModel(tool_call("find_items", query="draft"), "Three drafts.", "Yes, three.")
    user = store.create_user("maya").id
    chat = store.create_chat(user).id
    engine = ChatEngine(store, model, tools=_recapped(find_items), budget=BUDGET)

    await engine.run(user, chat, "Find my drafts")
    await engine.run(user, chat, "Were there three?")

    in_turn = _tool_messages(model.requests[1].messages)
    assert len(in_turn) == 1 and "a long preview" in in_turn[0]  # whole, in the turn that asked
    later = _tool_messages(model.requests[2].messages)
    assert later == ['{"items": [{"id": "item_0"}, {"id": "item_1"}, {"id": "item_2"}], "message": "recap"}']
    stored = [m.message for m in store.list_messages(user, chat)]
    assert "a long preview" in stored[2]["content"]  # the store keeps the result as it came


async def test_without_a_recap_earlier_results_are_sent_as_they_came(store: Store) -> None:
    model = ScriptedModel(tool_call("find_items", query="draft"), "Three drafts.", "Yes, three.")
    user = store.create_user("maya").id
    chat = store.create_chat(user).id
    engine = ChatEngine(store, model, tools=[find_items], budget=BUDGET)

    await engine.run(user, chat, "Find my drafts")
    await engine.run(user, chat, "Were there three?")

    assert _tool_messages(model.requests[2].messages) == _tool_messages(model.requests[1].messages)


async def test_in_a_turn_a_list_is_recapped_once_a_later_call_names_one_of_its_ids(store: Store) -> None:
    model = ScriptedModel(
        tool_call("find_items", query="draft"), tool_call("get_item", item_id="item_1"), "Here is draft 1."
    )
    user = store.create_user("maya").id
    chat = store.create_chat(user).id
    engine = ChatEngine(store, model, tools=_recapped(find_items, get_item), budget=BUDGET)

    await engine.run(user, chat, "Open the second draft")

    second, third = (_tool_messages(r.messages) for r in model.requests[1:])
    assert len(second) == 1 and "a long preview" in second[0]  # the list, whole: nothing chosen yet
    assert json.loads(third[0]) == {"items": [{"id": f"item_{i}"} for i in range(3)], "message": "recap"}
    assert "the whole text" in third[1]  # the detail of this turn: whole (a detail is never recapped here)


def test_turn_recap_leaves_lists_whole_when_no_later_call_names_their_ids() -> None:
    registry = ToolRegistry(_recapped(find_items, get_item))
    listing = json.dumps(find_items(query="x"))
    turn = [
        {"role": "user", "content": "find x and y"},
        {"role": "assistant", "content": None, "tool_calls": [_call("c1", "find_items", {"query": "x"})]},
        {"role": "tool", "tool_call_id": "c1", "name": "find_items", "content": listing},
        {"role": "assistant", "content": None, "tool_calls": [_call("c2", "get_item", {"item_id": "other"})]},
    ]
    assert turn_recap(turn, registry) is turn


def test_a_recap_that_fails_or_is_longer_keeps_the_result() -> None:
    def broken(text: str) -> str:
        raise ValueError("bad shape")

    def longer(text: str) -> str:
        return text + text

    for recap in (broken, longer):
        registry = ToolRegistry([dataclasses.replace(find_items, recap=recap)])
        message = {"role": "tool", "tool_call_id": "c", "name": "find_items", "content": "x" * 50}
        made = history_recap(registry)
        assert made is not None and made(message) is None
    assert history_recap(ToolRegistry([find_items])) is None  # no tool has a recap: nothing to do


def _call(id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
