from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tierwise import Budget, TokenCounter
from tierwise.bench.synthetic import synthetic_history, timestamped
from tierwise.memory.assemble import pack_text, pack_turn
from tierwise.memory.blobs import InMemoryBlobStore
from tierwise.memory.engine import Memory, MemoryPolicy
from tierwise.memory.turns import Turn
from tierwise.packing.packer import TAIL_LEAD
from tierwise.packing.report import Pack
from tierwise.replay import replay

COUNTER = TokenCounter()
T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def chat(memory: Memory, n: int, *, topic: str = "launch", start: datetime = T0) -> None:
    for i in range(n):
        at = start + timedelta(minutes=i)
        memory.add({"role": "user", "content": f"Question {i} about the {topic} plan and its owners."}, at=at)
        memory.add({"role": "assistant", "content": f"Answer {i}: the {topic} work is on track."}, at=at)


def test_layers_fit_and_carry_narrative_headers_history() -> None:
    memory = Memory()
    chat(memory, 20, topic="launch")
    chat(memory, 20, topic="kitchen", start=T0 + timedelta(days=2))
    chat(memory, 20, topic="thesis", start=T0 + timedelta(days=4))
    budget = Budget(window=1200)
    pack = pack_turn(memory, budget, [{"role": "user", "content": "What did we say about the kitchen?"}])
    kinds = {layer.kind for layer in pack.report.layers if layer.status != "dropped"}
    assert {"narrative", "headers", "history", "input"} <= kinds
    assert pack.report.total_tokens <= 1200
    text = pack_text(pack)
    assert "kitchen" in text
    assert pack.messages[-1]["content"] == "What did we say about the kitchen?"


def test_retrieved_turns_are_verbatim_and_old() -> None:
    memory = Memory()
    memory.add(
        {"role": "user", "content": "Dana said the venue deposit for Wildflower Farm is $1,200."}, at=T0
    )
    memory.add({"role": "assistant", "content": "Noted the Wildflower Farm deposit."}, at=T0)
    chat(memory, 120, topic="unrelated", start=T0 + timedelta(days=1))
    pack = pack_turn(
        memory, Budget(window=1500), [{"role": "user", "content": "How much was the Wildflower deposit?"}]
    )
    assert "Dana said the venue deposit for Wildflower Farm is $1,200." in pack_text(pack)
    assert any(layer.kind == "retrieved" and layer.status != "dropped" for layer in pack.report.layers)


def test_nothing_is_added_while_the_whole_conversation_fits() -> None:
    memory = Memory()
    chat(memory, 10)
    question = [{"role": "user", "content": "status?"}]
    pack = pack_turn(memory, Budget(window=4000), question, system="Be brief.")
    assert pack.messages == [{"role": "system", "content": "Be brief."}, *memory.messages, *question]
    assert memory.events == []


def test_large_tool_results_are_sent_as_given_until_a_step_compresses_them() -> None:
    memory = Memory(blobs=InMemoryBlobStore())
    result = "\n".join(
        f"row {i}: invoice INV-{1000 + i} paid by Acme on 2026-01-{i % 28 + 1:02d}" for i in range(80)
    )
    call = {"id": "c1", "type": "function", "function": {"name": "invoices", "arguments": "{}"}}
    given = [
        {"role": "user", "content": "List the invoices."},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "name": "invoices", "content": result},
        {"role": "assistant", "content": "80 invoices, all paid."},
    ]
    for message in given:
        memory.add(message)
    assert memory.messages[2]["content"] != result  # remembered compressed, kept as a blob
    question = [{"role": "user", "content": "Thanks."}]
    pack = pack_turn(memory, Budget(window=8000), question)
    assert pack.messages == [*given, *question]  # it fits: the conversation as given, byte for byte
    chat(memory, 150)
    small = pack_turn(
        memory, Budget(window=2500), [{"role": "user", "content": "Which invoices did Acme pay?"}]
    )
    assert result not in pack_text(small)  # after a step, the compressed form


def test_retrieved_turns_are_shown_under_their_segment_and_day() -> None:
    memory = Memory()
    memory.add({"role": "user", "content": "The Wildflower Farm deposit is $1,200."}, at=T0)
    memory.add({"role": "assistant", "content": "Noted the Wildflower Farm deposit."}, at=T0)
    chat(memory, 120, topic="unrelated", start=T0 + timedelta(days=1))
    pack = pack_turn(
        memory, Budget(window=1500), [{"role": "user", "content": "What was the Wildflower deposit?"}]
    )
    segment = memory.segments[0].id
    assert f"[{segment} · 2026-01-05]\nuser: The Wildflower Farm deposit is $1,200." in pack_text(pack)


def test_a_remark_needs_more_of_the_past_than_a_question_to_retrieve() -> None:
    memory = Memory()
    memory.add({"role": "user", "content": "Dana booked the Wildflower Farm venue."}, at=T0)
    chat(memory, 120, topic="unrelated", start=T0 + timedelta(days=1))
    memory.add({"role": "user", "content": "I shared the spreadsheet."}, at=T0 + timedelta(days=2))
    budget = Budget(window=1500)
    # "dana" was said only before working memory, "spreadsheet" in it: half the clue either way
    asked = pack_turn(memory, budget, [{"role": "user", "content": "Did Dana open the spreadsheet?"}])
    remark = pack_turn(memory, budget, [{"role": "user", "content": "Dana will love the spreadsheet."}])

    def retrieved(pack: Pack) -> str:
        return "".join(str(m["content"]) for m in pack.messages if str(m["content"]).startswith(TAIL_LEAD))

    assert "Dana booked" in retrieved(asked)
    assert retrieved(remark) == ""


def test_compaction_steps_to_the_low_water_mark_and_holds_the_front_between_steps() -> None:
    memory = Memory(policy=MemoryPolicy(low_water=0.5))
    budget, question = Budget(window=1500), [{"role": "user", "content": "status?"}]
    chat(memory, 200)
    first = pack_turn(memory, budget, question, system="Be brief.")
    (step,) = memory.events
    assert step.action == "step" and step.changed and step.live_from_after > 0
    assert step.tokens_after <= 0.5 * step.budget < step.tokens_before
    assert memory.archived_upto == memory.live_from and len(memory.turns) == 400  # archived, not deleted
    front = first.messages[: first.messages.index(question[0])]
    for i in range(200, 260):  # turn by turn: each pack starts with the previous one, until a step
        memory.add({"role": "user", "content": question[0]["content"]})
        memory.add({"role": "assistant", "content": f"Answer {i}: on track."})
        events = len(memory.events)
        pack = pack_turn(memory, budget, question, system="Be brief.")
        assert pack.report.total_tokens <= 1500
        if len(memory.events) > events:
            (step,) = memory.events[events:]
            assert step.live_from_after > step.live_from_before and step.cache_tokens > 0
            break
        assert pack.messages[: len(front)] == front
        front = pack.messages[: pack.messages.index(question[0], len(front))]
    else:
        raise AssertionError("working memory never stepped")


def test_recall_by_id_with_quota_and_unknown_ids() -> None:
    memory = Memory(policy=MemoryPolicy(fulls_per_turn=1))
    chat(memory, 5, topic="launch")
    chat(memory, 5, topic="kitchen", start=T0 + timedelta(days=1))
    chat(memory, 5, topic="thesis", start=T0 + timedelta(days=2))
    memory.begin_turn()
    full = memory.recall(["S1"], "full")
    assert "Question 0 about the launch plan" in full
    limited = memory.recall(["s2"], "full")
    assert "quota" in limited and "S2" in limited
    assert "no such segment" in memory.recall(["S99"], "summary")
    memory.begin_turn()
    assert "Question 0 about the kitchen plan" in memory.recall(["S2"], "full")
    assert memory.recall(["S1"], "header").startswith("S1 ")


def test_large_tool_results_become_blobs() -> None:
    blobs = InMemoryBlobStore()
    memory = Memory(blobs=blobs)
    memory.add({"role": "user", "content": "list my tasks"})
    call = {"id": "c1", "type": "function", "function": {"name": "list_tasks", "arguments": "{}"}}
    memory.add({"role": "assistant", "content": None, "tool_calls": [call]})
    big = (
        '{"tasks": ['
        + ",".join(f'{{"id": "task_{i}", "title": "Task number {i}"}}' for i in range(400))
        + "]}"
    )
    memory.add({"role": "tool", "tool_call_id": "c1", "name": "list_tasks", "content": big})
    stored = memory.messages[-1]["content"]
    assert "sha256" in stored and COUNTER.count(stored) < 200
    assert memory.messages[-1]["tool_call_id"] == "c1"


@pytest.mark.parametrize("budget", [1200, 4000])
def test_replay_two_thousand_turns_within_budget_and_nothing_lost(budget: int) -> None:
    transcript = timestamped(synthetic_history(2000))
    times = [datetime.fromisoformat(m.pop("timestamp")) for m in transcript]
    report = replay(transcript, times, Budget(window=budget), counter=COUNTER)
    assert report.messages == 1999 and report.lost == 0
    assert report.all_within_budget and len(report.rows) > 500
    steps = [e for e in report.compactions if e["action"] == "step" and e["live_from_after"] > 0]
    assert len(steps) > 1
    assert max(r.pack_tokens for r in report.rows) <= budget


def test_add_turn_checks_position() -> None:
    memory = Memory()
    with pytest.raises(ValueError, match="expected 0"):
        memory.add_turn(Turn("x", 3, "user", "hi"))


def test_deferred_summaries_wait_for_maintain_and_match_eager_ones() -> None:
    eager, deferred = Memory(), Memory(policy=MemoryPolicy(defer_summaries=True))
    for memory in (eager, deferred):
        chat(memory, 12, topic="launch")
        chat(memory, 12, topic="kitchen", start=T0 + timedelta(days=2))
    closed = [s for s in deferred.segments if s.closed]
    assert closed and all(not deferred.settled(s) and not s.summary for s in closed)
    # A pack still names every segment (headers are made on the spot) and fits.
    pack = pack_turn(deferred, Budget(window=500), [{"role": "user", "content": "kitchen?"}])
    headers = next(layer for layer in pack.report.layers if layer.kind == "headers")
    assert headers.status != "dropped" and pack.report.total_tokens <= 500
    deferred.maintain()
    assert all(deferred.settled(s) for s in deferred.segments)
    assert [(s.header, s.summary) for s in deferred.segments if s.closed] == [
        (s.header, s.summary) for s in eager.segments if s.closed
    ]
    assert deferred.narrative == eager.narrative


def test_maintenance_in_pieces_ends_where_maintain_does_whatever_packs_between() -> None:
    whole, pieces = (Memory(policy=MemoryPolicy(defer_summaries=True)) for _ in range(2))
    budget, question = Budget(window=3000), [{"role": "user", "content": "kitchen?"}]
    steps = 0
    for topic, days in (("launch", 0), ("kitchen", 2), ("garden", 4)):
        for memory in (whole, pieces):
            chat(memory, 12, topic=topic, start=T0 + timedelta(days=days))
        whole.maintain()
        while pieces.maintain_step():  # a segment's trio, its narrative, the index: one per step
            steps += 1
            if steps % 2:  # a pack between a trio and its narrative finishes the segment first
                pack_turn(pieces, budget, question)
    assert steps >= 2
    assert all(pieces.settled(s) for s in pieces.segments)
    closed = [(s.header, s.summary) for s in whole.segments if s.closed]
    assert [(s.header, s.summary) for s in pieces.segments if s.closed] == closed
    assert pieces.narrative == whole.narrative
    assert (
        pack_turn(pieces, budget, question).report.checksum
        == pack_turn(whole, budget, question).report.checksum
    )
