from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tierwise import TokenCounter
from tierwise.memory.narrative import Narrative
from tierwise.memory.segments import HEADER_TOKENS, SUMMARY_TOKENS, Segmenter, SegmentPolicy, make_trio
from tierwise.memory.turns import Turn

COUNTER = TokenCounter()
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def turn(
    i: int, text: str, *, role: str = "user", at: datetime | None = None, speaker: str | None = None
) -> Turn:
    return Turn(f"m{i}", i, role, text, speaker=speaker, at=at)


def test_a_gap_in_time_starts_a_segment() -> None:
    seg = Segmenter(SegmentPolicy(gap=timedelta(minutes=30)))
    seg.add(turn(0, "plan the launch", at=T0), 5)
    seg.add(turn(1, "sure", role="assistant", at=T0 + timedelta(minutes=2)), 3)
    current, closed = seg.add(turn(2, "back again", at=T0 + timedelta(hours=5)), 4)
    assert closed is not None and closed.id == "S1" and closed.closed
    assert current.id == "S2" and current.boundary == "gap" and current.first == 2


def test_explicit_and_size_boundaries() -> None:
    seg = Segmenter(SegmentPolicy(max_tokens=20, topic_overlap=0))
    seg.add(turn(0, "a"), 10)
    assert seg.add(turn(1, "b"), 8)[1] is None
    assert seg.add(turn(2, "c"), 8)[0].boundary == "size"
    assert seg.add(turn(3, "d"), 1, boundary=True)[0].boundary == "explicit"
    assert [s.id for s in seg.segments] == ["S1", "S2", "S3"]


def test_a_new_topic_starts_a_segment_but_a_follow_up_does_not() -> None:
    seg = Segmenter(SegmentPolicy(min_turns=4, topic_overlap=0.2))
    words = "kitchen renovation cabinets countertop electrician quote"
    for i in range(6):
        seg.add(turn(i, f"{words} detail {i}", role="user" if i % 2 == 0 else "assistant"), 10)
    assert seg.add(turn(6, "and what about the countertop electrician schedule"), 10)[1] is None
    current, closed = seg.add(
        turn(7, "Switching gears: thesis chapter methods interview coding reliability"), 10
    )
    assert closed is not None and current.boundary == "topic"


def test_trio_respects_caps_and_ends_sentences() -> None:
    seg = Segmenter()
    turns = []
    for i in range(30):
        text = (
            f"We decided to move the Q4 launch review with Dana to Friday {i}. "
            "The pricing page is blocked on legal sign-off and Priya needs the FAQ before then? "
        ) * 3
        t = turn(
            i, text, role="user" if i % 2 == 0 else "assistant", at=T0 + timedelta(minutes=i), speaker="Maya"
        )
        turns.append(t)
        seg.add(t, COUNTER.count(text))
    segment = seg.segments[0]
    make_trio(segment, turns, COUNTER)
    assert 0 < COUNTER.count(segment.header) <= HEADER_TOKENS
    assert 0 < COUNTER.count(segment.summary) <= SUMMARY_TOKENS
    assert segment.summary[-1] in ".!?…"
    assert "Dana" in segment.entities or "Maya" in segment.entities
    assert segment.header.startswith("2 Mar 2026")


def test_narrative_merges_and_never_goes_empty() -> None:
    n = Narrative().merge(story="We planned the launch.", objective="Ship Q4.", entities=["Dana", "Priya"])
    n2 = n.merge(achievements=["Booked the venue."])
    assert n2.objective == "Ship Q4." and n2.story == ("We planned the launch.",)
    assert "Booked the venue." in n2.render()
    same = n2.update_from_segment(summary="", header="", entities=[], texts=[], counter=COUNTER)
    assert same.render() == n2.render()  # nothing new: nothing lost
    long = n2
    for i in range(80):
        long = long.merge(story=f"Then we handled item number {i} of the migration in detail.")
    fitted = long.fit(COUNTER, 300)
    assert COUNTER.count(fitted.render()) <= 300
    assert fitted.objective == "Ship Q4." and fitted.story[-1].endswith("79 of the migration in detail.")
    assert Narrative.from_dict(fitted.to_dict()) == fitted
