"""recall_segments and open_blob are offered once a chat has a past, and then for good (issue 17)."""

from __future__ import annotations

from tierwise.chat.housekeeping import RETRIEVAL_TOOL_NAMES, has_past, memory_tools, offered
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
