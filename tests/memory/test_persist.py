from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tierwise import Budget
from tierwise.memory.persist import ChatMemory
from tierwise.store import NotFoundError, Store

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def fill(chat: ChatMemory, days: int = 3, turns: int = 15) -> None:
    for d in range(days):
        for i in range(turns):
            at = T0 + timedelta(days=d, minutes=i)
            chat.add(
                {"role": "user", "content": f"Day {d} question {i} about topic{d} and its owners?"}, at=at
            )
            chat.add({"role": "assistant", "content": f"Day {d} answer {i}: topic{d} is on track."}, at=at)


def test_messages_segments_narrative_audit_and_snapshots_are_stored(store: Any) -> None:
    s: Store = store
    user = s.create_user("maya")
    chat = s.create_chat(user.id)
    memory = ChatMemory(s, user.id, chat.id)
    fill(memory)
    assert len(s.list_messages(user.id, chat.id)) == 90
    pack = memory.pack(Budget(window=800), [{"role": "user", "content": "what about topic0?"}])
    assert pack.report.total_tokens <= 800
    segments = s.list_segments(user.id, chat.id)
    assert [seg.id for seg in segments][:2] == ["S1", "S2"] and all(seg.header for seg in segments)
    assert s.get_chat(user.id, chat.id).narrative
    audit = s.list_audit(user.id, chat_id=chat.id)
    packs = [a for a in audit if a.event == "pack"]
    assert packs and packs[0].checksum == pack.checksum
    assert {"layers", "dropped", "truncated"} <= set(packs[0].details)
    assert any(a.event == "compaction" for a in audit)
    snapshot = s.latest_snapshot(user.id, chat.id)
    assert snapshot is not None and snapshot.total_tokens == pack.report.total_tokens
    assert snapshot.checksum == pack.checksum
    # archiving marks, never deletes
    assert s.get_chat(user.id, chat.id).messages_archived > 0
    assert len(s.list_messages(user.id, chat.id)) == 90


def test_load_rebuilds_the_same_memory(store: Any) -> None:
    s: Store = store
    user = s.create_user("maya")
    chat = s.create_chat(user.id)
    first = ChatMemory(s, user.id, chat.id)
    fill(first, days=2, turns=10)
    again = ChatMemory.load(s, user.id, chat.id)
    assert [t.text for t in again.memory.turns] == [t.text for t in first.memory.turns]
    assert [seg.id for seg in again.memory.segments] == [seg.id for seg in first.memory.segments]
    question = [{"role": "user", "content": "topic1?"}]
    a = first.pack(Budget(window=600), question)
    b = again.pack(Budget(window=600), question)
    assert a.checksum == b.checksum


def test_a_reload_keeps_working_memory_where_it_was(store: Any) -> None:
    s: Store = store
    user = s.create_user("maya")
    chat = s.create_chat(user.id)
    first = ChatMemory(s, user.id, chat.id)
    fill(first, days=3, turns=15)
    question, budget = [{"role": "user", "content": "and now?"}], Budget(window=900)
    first.pack(budget, question)
    steps = len(first.memory.events)
    for i in range(4):  # working memory grows after the step
        at = T0 + timedelta(days=3, minutes=i)
        first.add({"role": "user", "content": f"One more thing about topic2, {i}."}, at=at)
        first.add({"role": "assistant", "content": f"Noted {i}."}, at=at)
    before = first.pack(budget, question)
    assert first.memory.live_from > 0 and len(first.memory.events) == steps
    again = ChatMemory.load(s, user.id, chat.id)
    after = again.pack(budget, question)
    assert again.memory.live_from == first.memory.live_from  # a reload is not a compaction step
    history = [m for m in before.messages if m.get("role") != "system"]
    assert [m for m in after.messages if m.get("role") != "system"] == history


def test_extend_stores_and_remembers_like_adding_one_by_one(store: Any) -> None:
    s: Store = store
    user = s.create_user("maya")
    one, many = s.create_chat(user.id), s.create_chat(user.id)
    history = []
    for i in range(30):
        history += [
            {"role": "user", "content": f"Question {i} about topic{i % 3} and its owners?"},
            {"role": "assistant", "content": f"Answer {i}: topic{i % 3} is on track."},
        ]
    by_one = ChatMemory(s, user.id, one.id)
    for message in history:
        by_one.add(message)
    at_once = ChatMemory(s, user.id, many.id)
    stored = at_once.extend(history)
    assert [m.seq for m in stored] == list(range(60))
    assert [m.message for m in s.list_messages(user.id, many.id)] == [
        m.message for m in s.list_messages(user.id, one.id)
    ]
    assert [t.text for t in at_once.memory.turns] == [t.text for t in by_one.memory.turns]
    assert [(g.id, g.first_seq, g.last_seq, g.summary) for g in s.list_segments(user.id, many.id)] == [
        (g.id, g.first_seq, g.last_seq, g.summary) for g in s.list_segments(user.id, one.id)
    ]
    assert s.get_chat(user.id, many.id).messages_archived == s.get_chat(user.id, one.id).messages_archived
    question = [{"role": "user", "content": "topic1?"}]
    assert (
        at_once.pack(Budget(window=600), question).checksum
        == by_one.pack(Budget(window=600), question).checksum
    )


def test_another_users_chat_cannot_be_loaded(store: Any) -> None:
    s: Store = store
    owner, other = s.create_user("a"), s.create_user("b")
    chat = s.create_chat(owner.id)
    with pytest.raises(NotFoundError):
        ChatMemory.load(s, other.id, chat.id)


def test_big_tool_results_go_to_the_users_blobs(store: Any) -> None:
    s: Store = store
    user = s.create_user("maya")
    chat = s.create_chat(user.id)
    memory = ChatMemory(s, user.id, chat.id)
    memory.add({"role": "user", "content": "list my tasks"})
    call = {"id": "c1", "type": "function", "function": {"name": "list_tasks", "arguments": "{}"}}
    memory.add({"role": "assistant", "content": None, "tool_calls": [call]})
    big = "\n".join(f"task_{i}: write section {i} of the report for Dana" for i in range(300))
    memory.add({"role": "tool", "tool_call_id": "c1", "content": big})
    stored = s.list_messages(user.id, chat.id)[-1]
    shown = memory.memory.messages[-1]["content"]
    assert stored.content == shown and "sha256:" in shown  # stored once: compressed message + blob
    digest = shown.split("sha256:")[1][:64]
    assert s.get_blob(user.id, digest).decode() == big
    assert ChatMemory.load(s, user.id, chat.id).memory.messages[-1]["content"] == shown


def test_load_takes_stored_summaries_instead_of_making_them_again(store: Any, monkeypatch: Any) -> None:
    from tierwise.memory import engine as memory_engine
    from tierwise.memory.engine import Memory, MemoryPolicy

    s: Store = store
    user = s.create_user("maya")
    chat = s.create_chat(user.id)
    first = ChatMemory(s, user.id, chat.id, Memory(policy=MemoryPolicy(defer_summaries=True)))
    fill(first)
    first.memory.maintain()
    first.pack(Budget(window=3000), [{"role": "user", "content": "topic1?"}])  # writes the summaries
    saved = {seg.id: seg.summary for seg in s.list_segments(user.id, chat.id)}
    assert saved and all(saved.values())

    def no_summaries(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a stored segment was summarised again")

    monkeypatch.setattr(memory_engine, "make_trio", no_summaries)
    again = ChatMemory.load(s, user.id, chat.id, Memory(policy=MemoryPolicy(defer_summaries=True)))
    assert {seg.id: seg.summary for seg in again.memory.segments if seg.id in saved} == saved
    assert again.memory.narrative == first.memory.narrative


def test_staged_messages_are_packed_at_once_and_stored_with_the_next_write(store: Any) -> None:
    s: Store = store
    user = s.create_user("maya")
    chat = s.create_chat(user.id)
    memory = ChatMemory(s, user.id, chat.id)
    memory.add({"role": "user", "content": "First question about the venue?"})
    memory.add({"role": "assistant", "content": "The venue holds forty people."})
    memory.stage([{"role": "user", "content": "And the catering budget?"}], at=T0)
    assert memory.staged == 1 and len(s.list_messages(user.id, chat.id)) == 2  # not stored yet
    question = memory.memory.messages[-1:]
    pack = memory.pack(Budget(window=800), question, upto=2)
    assert "catering" in json_of(pack.messages)
    memory.add({"role": "assistant", "content": "Catering is 900 euros."})  # one commit for both
    stored = s.list_messages(user.id, chat.id)
    assert [m.seq for m in stored] == [0, 1, 2, 3] and memory.staged == 0
    contents = [m.message["content"] for m in stored]
    assert contents[2:] == ["And the catering budget?", "Catering is 900 euros."]
    assert stored[2].created_at == T0
    assert [t.id for t in memory.memory.turns] == ["m0", "m1", "m2", "m3"]
    again = ChatMemory.load(s, user.id, chat.id)
    assert [t.text for t in again.memory.turns] == [t.text for t in memory.memory.turns]


def test_flush_stores_staged_messages_without_an_answer(store: Any) -> None:
    s: Store = store
    user = s.create_user("maya")
    chat = s.create_chat(user.id)
    memory = ChatMemory(s, user.id, chat.id)
    memory.stage([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}])
    assert memory.unsynced == 1  # one message more than a turn's own
    memory.flush()
    assert memory.unsynced == 0
    memory.flush()  # nothing left: nothing stored twice
    assert [m.message["content"] for m in s.list_messages(user.id, chat.id)] == ["a", "b"]


def test_unsynced_counts_what_a_closed_segment_adds_to_the_next_write(store: Any) -> None:
    s: Store = store
    user = s.create_user("maya")
    chat = s.create_chat(user.id)
    memory = ChatMemory(s, user.id, chat.id)
    for day, topic in enumerate(("venue", "catering")):  # a day apart: the first segment closes
        at = T0 + timedelta(days=day)
        memory.stage([{"role": "user", "content": f"What about the {topic}?"}], at=at)
        memory.stage([{"role": "assistant", "content": f"The {topic} is booked."}], at=at)
    assert [seg.closed for seg in memory.memory.segments] == [True, False]
    assert memory.unsynced >= 3 + 1  # three more messages, the closed segment (and its narrative)
    memory.flush()
    assert memory.unsynced == 0
    assert [seg.id for seg in s.list_segments(user.id, chat.id)] == [memory.memory.segments[0].id]


def test_staged_messages_on_a_chat_another_writer_moved_on_are_refused(store: Any) -> None:
    from tierwise.memory.persist import StaleMemory

    s: Store = store
    user = s.create_user("maya")
    chat = s.create_chat(user.id)
    memory = ChatMemory(s, user.id, chat.id)
    memory.stage([{"role": "user", "content": "mine"}])
    s.add_message(user.id, chat.id, {"role": "user", "content": "theirs"}, token_count=2)
    with pytest.raises(StaleMemory):
        memory.add({"role": "assistant", "content": "answer"})
    # nothing of the batch was kept: the store holds only the other writer's message
    assert [m.message["content"] for m in s.list_messages(user.id, chat.id)] == ["theirs"]


def json_of(messages: Any) -> str:
    import json

    return json.dumps(messages)
