"""A chat reloaded without its trios: the first pack makes only what it shows, upkeep the rest (issue 16)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from tierwise import Budget
from tierwise.bench.synthetic import synthetic_history, timestamped
from tierwise.memory import engine as memory_engine
from tierwise.memory.engine import Memory, MemoryPolicy

BUDGET = Budget(window=4000, reserve=400)
QUERY = "What is left on the Apollo launch?"


def _reloaded(messages: int = 600) -> Memory:
    """A long conversation remembered as a reload remembers a chat stored without its trios."""
    memory = Memory(policy=MemoryPolicy(defer_summaries=True))
    for message in timestamped(synthetic_history(messages + 2)[1:-1]):
        body = {k: v for k, v in message.items() if k != "timestamp"}
        memory.add(body, at=datetime.fromisoformat(message["timestamp"]))
    memory.resume(len(memory.turns) - 20)  # working memory as it was stored
    return memory


def _pack_layers(memory: Memory) -> dict[str, str]:
    return {layer.kind: str(layer.content) for layer in memory.layers(QUERY, BUDGET) if layer.form == "text"}


def test_the_first_pack_makes_only_the_trios_it_shows(monkeypatch: pytest.MonkeyPatch) -> None:
    memory = _reloaded()
    waiting = [s for s in memory.segments if s.closed and not memory.settled(s)]
    assert len(waiting) > memory.policy.backlog_trios  # a backlog: nothing was stored
    made: list[bool] = []
    real = memory_engine.make_trio

    def counted(*args: Any, **kwargs: Any) -> None:
        made.append(kwargs.get("summarize", True))
        real(*args, **kwargs)

    monkeypatch.setattr(memory_engine, "make_trio", counted)
    layers = _pack_layers(memory)
    assert memory.backlog
    assert made.count(True) <= memory.policy.summary_segments  # the summaries layer's, no more
    assert made.count(False) <= 2  # headers of segments still growing or straddling working memory
    assert "earlier segments (recall by id)" in layers["headers"]  # the rest: one range line
    assert 1 <= len(layers["summaries"].splitlines()) <= memory.policy.summary_segments  # what fits
    assert "narrative" not in layers  # nothing narrated yet: the narrative takes segments in order


def test_upkeep_makes_the_rest_and_the_next_pack_makes_the_head_anew() -> None:
    memory, reference = _reloaded(), _reloaded()
    first = _pack_layers(memory)
    reference._settle()  # every trio and the narrative at once, in order: what upkeep must reach
    memory.maintain()
    assert not memory.backlog and memory.frame is None  # the provisional head is let go
    assert all(memory.settled(s) for s in memory.segments)
    assert memory.narrative.to_dict() == reference.narrative.to_dict()
    for ours, theirs in zip(memory.segments, reference.segments, strict=True):
        assert (ours.header, ours.summary, ours.entities) == (theirs.header, theirs.summary, theirs.entities)
    live_from = memory.live_from
    second = _pack_layers(memory)
    assert memory.live_from == live_from  # made anew as after a reload: working memory kept
    assert second["headers"] != first["headers"] and "narrative" in second
    assert len(second["headers"].splitlines()) > len(first["headers"].splitlines())


def test_a_short_wait_is_still_made_on_the_path() -> None:
    memory = _reloaded(messages=80)
    waiting = [s for s in memory.segments if s.closed and s.last < memory.live_from]
    assert 0 < len(waiting) <= memory.policy.backlog_trios
    _pack_layers(memory)
    assert not memory.backlog
    assert all(memory.settled(s) for s in waiting)  # as before: summarised and narrated in the step
