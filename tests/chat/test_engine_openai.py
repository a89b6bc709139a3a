"""A whole turn through the real ``openai`` SDK, against the loopback fake server."""

from __future__ import annotations

import pytest

from tests.fake_openai import FakeOpenAI, FakeReply
from tierwise import Budget
from tierwise.chat.engine import ChatEngine
from tierwise.chat.events import Notice, TextEvent, ToolCallComplete
from tierwise.providers import OpenAICompatProvider, RetryPolicy
from tierwise.store import Store
from tierwise.tools import tool

pytestmark = pytest.mark.anyio


@tool(tier="list")
def list_tasks(project: str) -> list[str]:
    """List a project's open tasks.

    Args:
        project: the project's name.
    """
    return [f"{project}: book the venue", f"{project}: draft the agenda"]


async def test_a_tool_turn_over_sse_with_a_retry(store: Store, fake_openai: FakeOpenAI) -> None:
    fake_openai.fail(503)
    fake_openai.script(
        FakeReply(
            tool_calls=[{"id": "call_a", "name": "list_tasks", "arguments": {"project": "Offsite"}}], pieces=5
        ),
        FakeReply(
            text="Two tasks: book the venue and draft the agenda.",
            usage={"prompt_tokens": 300, "completion_tokens": 11, "total_tokens": 311},
        ),
    )
    provider = OpenAICompatProvider(
        base_url=fake_openai.url,
        api_key="test",
        model="gpt-4o-mini",
        retry_policy=RetryPolicy(max_retries=2, base_delay=0.01, max_delay=0.02),
    )
    user = store.create_user("maya")
    chat = store.create_chat(user.id)
    engine = ChatEngine(store, provider, tools=[list_tasks], budget=Budget(window=8000, reserve=300))

    result = await engine.run(user.id, chat.id, "What's left for the offsite?")

    assert result.text == "Two tasks: book the venue and draft the agenda."
    assert [e.kind for e in result.events if isinstance(e, Notice)] == ["retry"]
    assert "".join(e.text for e in result.events if isinstance(e, TextEvent)) == result.text
    (complete,) = [e for e in result.events if isinstance(e, ToolCallComplete)]
    assert complete.success and "book the venue" in complete.content
    bodies = fake_openai.requests
    assert len(bodies) == 3 and bodies[0] == bodies[1]  # the retry resent the same pack
    assert bodies[1]["max_tokens"] == 300 and bodies[1]["stream"] is True
    assert bodies[2]["messages"][-2]["tool_calls"][0]["function"] == {
        "name": "list_tasks",
        "arguments": '{"project": "Offsite"}',
    }
    assert bodies[2]["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "call_a",
        "name": "list_tasks",
        "content": '["Offsite: book the venue","Offsite: draft the agenda"]',
    }
    usage = result.usage
    assert usage is not None and usage.completion_tokens >= 11 and usage.price_known
