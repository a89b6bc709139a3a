"""recall_segments and open_blob are offered once a chat has a past, and then for good (issue 17);
the system prompt tells how to use them only while they are offered."""

from __future__ import annotations

from pathlib import Path

import pytest

from tierwise.chat.housekeeping import (
    RETRIEVAL_GUIDE,
    RETRIEVAL_TOOL_NAMES,
    guided,
    has_past,
    memory_tools,
    offered,
)
from tierwise.memory.engine import Memory
from tierwise.tools import ToolRegistry
from tierwise.workspace.tools import workspace_tools


def _names(definitions: list[dict[str, object]]) -> set[str]:
    return {d["function"]["name"] for d in definitions}  # type: ignore[index]


def _definitions() -> list[dict[str, object]]:
    return ToolRegistry([*workspace_tools(), *memory_tools()]).definitions()


def test_a_chat_without_a_past_is_not_offered_retrieval_tools() -> None:
    memory = Memory()
    memory.add({"role": "user", "content": "What are my tasks?"})
    names = _names(offered(_definitions(), memory))
    assert not names & set(RETRIEVAL_TOOL_NAMES)
    assert {"update_narrative", "record_decision", "list_tasks"} <= names
    assert _names(offered(_definitions(), None)) == names


def test_an_archived_turn_offers_them_and_they_stay() -> None:
    memory = Memory()
    memory.add({"role": "user", "content": "hello"})
    memory.live_from = 1  # the first turn left working memory
    assert set(RETRIEVAL_TOOL_NAMES) <= _names(offered(_definitions(), memory))
    memory.live_from = 0  # e.g. a reset view: once offered, the tool list does not change back
    assert has_past(memory) and set(RETRIEVAL_TOOL_NAMES) <= _names(offered(_definitions(), memory))


def test_a_compressed_tool_result_offers_them() -> None:
    memory = Memory()
    memory.add({"role": "user", "content": "list"})
    memory.add(
        {
            "role": "tool",
            "tool_call_id": "c1",
            "name": "list_tasks",
            "content": "[tool result list_tasks · 14.2 kB · blob sha256:"
            + "ab" * 32
            + " (open with open_blob)] 12 tasks.",
        }
    )
    assert set(RETRIEVAL_TOOL_NAMES) <= _names(offered(_definitions(), memory))


def test_the_sixteen_tools_cost_under_a_thousand_tokens_before_there_is_a_past() -> None:
    """Was 1,540 tokens (issue 17): long descriptions, null unions, silent defaults, retrieval tools."""
    from tierwise.tokens import get_counter

    sent = offered(_definitions(), Memory())
    assert get_counter("o200k_base").count_tools(sent) < 1_000


def test_the_system_prompt_tells_how_to_recall_only_while_the_tools_are_offered() -> None:
    """The guide travels with its tools: no "recall_segments" in a prompt that cannot call it."""
    from tierwise.workspace.context import SYSTEM_PROMPT

    memory = Memory()
    memory.add({"role": "user", "content": "What are my tasks?"})
    before = guided(SYSTEM_PROMPT, offered(_definitions(), memory))
    assert before == SYSTEM_PROMPT and "recall_segments" not in before and "open_blob" not in before
    memory.live_from = 1
    after = guided(SYSTEM_PROMPT, offered(_definitions(), memory))
    assert after == f"{SYSTEM_PROMPT}\n\n{RETRIEVAL_GUIDE}"  # appended: the front stays the same
    assert "recall_segments" in after and "open_blob" in after


@pytest.mark.anyio
async def test_a_workspace_chat_is_told_about_recall_once_it_has_a_past(tmp_path: Path) -> None:
    """Through the engine: the first prompts have neither the tools nor the guide; after the chat's
    first turns leave working memory, both are there (and stay)."""
    from tierwise import Budget
    from tierwise.providers.testing import ScriptedModel
    from tierwise.store import Store
    from tierwise.workspace.app import assistant_engine

    store = Store.open(f"sqlite:///{tmp_path / 'tw.db'}")
    try:
        user = store.create_user("maya").id
        chat = store.create_chat(user).id
        model = ScriptedModel(*(["Noted. " * 40] * 12))
        engine = assistant_engine(store, model, budget=Budget(window=2_500, reserve=200))
        for i in range(12):
            await engine.run(user, chat, f"Thought {i}: " + "an idea about the launch " * 12)
        systems = [str(r.messages[0]["content"]) for r in model.requests]
        tools = [_names(list(r.tools)) for r in model.requests]
        assert "recall_segments" not in systems[0] and "recall_segments" not in tools[0]
        assert systems[-1].endswith(RETRIEVAL_GUIDE) and "recall_segments" in tools[-1]
        joined = next(i for i, s in enumerate(systems) if RETRIEVAL_GUIDE in s)
        assert all(RETRIEVAL_GUIDE in s for s in systems[joined:])
        assert all("recall_segments" in t for t in tools[joined:])
    finally:
        store.close()
