"""Cache-stable packs: between compaction steps each pack starts with the previous one."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from tierwise import Budget, TokenCounter
from tierwise.cli import app
from tierwise.memory.assemble import pack_turn
from tierwise.memory.engine import Memory
from tierwise.packing.packer import TAIL_LEAD
from tierwise.packing.prefix import cached_tokens, shared_prefix

COUNTER = TokenCounter()
T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
WORDS = ["venue", "budget", "Lisbon", "offsite", "agenda", "flights", "hotel", "catering", "speakers"]


def _front(messages: list[dict[str, Any]], newest: dict[str, Any]) -> list[dict[str, Any]]:
    """The pack up to its per-turn tail: before the tail message and the newest user message."""
    end = len(messages) - 1 - messages[::-1].index(newest)
    if end > 0 and str(messages[end - 1].get("content")).startswith(TAIL_LEAD):
        end -= 1
    return messages[:end]


@st.composite
def conversations(draw: st.DrawFn) -> tuple[list[tuple[int, int]], int, int]:
    turns = draw(st.lists(st.tuples(st.integers(1, 60), st.integers(1, 120)), min_size=20, max_size=90))
    return turns, draw(st.integers(700, 3000)), draw(st.integers(0, 10))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversations())
def test_each_pack_starts_with_the_previous_one_until_a_step(
    case: tuple[list[tuple[int, int]], int, int],
) -> None:
    turns, window, gap_every = case
    memory, budget = Memory(), Budget(window=window)
    system = "You are a planner. Answer briefly."
    previous: tuple[list[dict[str, Any]], dict[str, Any]] | None = None
    at = T0
    for i, (asked, answered) in enumerate(turns):
        at += timedelta(days=1) if gap_every and i % (gap_every + 3) == 0 else timedelta(minutes=2)
        question = {"role": "user", "content": " ".join(WORDS[(i + k) % len(WORDS)] for k in range(asked))}
        events = len(memory.events)
        pack = pack_turn(memory, budget, [question], system=system)
        assert pack.report.total_tokens <= budget.available
        assert pack.messages[0] == {"role": "system", "content": system}  # never rewritten
        assert pack.messages[-1] == question
        if previous is not None and len(memory.events) == events:  # no step: the front repeats
            front = _front(*previous)
            assert pack.messages[: len(front)] == front
        for step in memory.events[events:]:  # a step moves working memory on, and says what it cost
            assert step.live_from_after > step.live_from_before and step.tokens_after < step.tokens_before
            assert step.cache_tokens > 0
        previous = (pack.messages, question)
        memory.add(question, at=at)
        memory.add({"role": "assistant", "content": " ".join(["noted"] * answered)}, at=at)


def test_shared_prefix_counts_tokens_up_to_the_first_difference() -> None:
    a = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Plan the offsite in Lisbon"},
    ]
    b = [a[0], {"role": "user", "content": "Plan the offsite in Porto"}]
    whole = COUNTER.count_messages(a, prime_reply=False)
    assert shared_prefix((a, []), a, [], COUNTER) == whole
    assert COUNTER.count_message(a[0]) < shared_prefix((a, []), b, [], COUNTER) < whole
    tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
    assert shared_prefix((a, [tool]), a, [], COUNTER) == 0  # tools come first
    assert shared_prefix(None, a, [], COUNTER) == 0
    assert cached_tokens(1023, "openai") == 0 and cached_tokens(1151, "openai") == 1024
    assert cached_tokens(1152, "openai") == 1152


def test_replay_dump_writes_each_pack_as_sent(tmp_path: Any) -> None:
    messages = []
    for i in range(40):
        messages.append({"role": "user", "content": f"Question {i} about the venue " + "and more " * 20})
        messages.append({"role": "assistant", "content": f"Answer {i}: " + "noted " * 30})
    transcript = tmp_path / "t.json"
    transcript.write_text(json.dumps({"messages": messages}))
    dump = tmp_path / "packs.jsonl"
    result = CliRunner().invoke(app, ["replay", str(transcript), "--budget", "1500", "--dump", str(dump)])
    assert result.exit_code == 0, result.output
    assert "prompt cache:" in result.output
    lines = [json.loads(line) for line in dump.read_text().splitlines()]
    assert [line["turn"] for line in lines] == list(range(1, 80, 2))  # before every answer
    for line in lines:
        assert line["tokens"] == COUNTER.count_messages(line["messages"]) <= line["budget"] == 1500
        assert line["messages"][-1] == messages[line["turn"] - 1] and line["tools"] == []
        assert line["ms"] > 0 and len(line["checksum"]) == 64
    assert lines[1]["messages"] == messages[:3]  # fits: the conversation as given
    bad = CliRunner().invoke(app, ["replay", str(transcript), "--budget", "1500", "--dump", str(tmp_path)])
    assert bad.exit_code == 2 and "is a directory" in bad.output
