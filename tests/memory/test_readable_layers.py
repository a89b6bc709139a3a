"""Issue 15: sentences kept whole, summaries of facts, distinctive headers, a narrative of the whole."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from tierwise import TokenCounter
from tierwise.budget import Budget
from tierwise.errors import BudgetError
from tierwise.memory.assemble import pack_text, pack_turn
from tierwise.memory.engine import Memory, MemoryPolicy
from tierwise.memory.narrative import Narrative
from tierwise.memory.segments import HEADER_TOKENS, SUMMARY_TOKENS
from tierwise.summarize import ExtractiveSummarizer
from tierwise.summarize.dates import anchor_dates
from tierwise.summarize.extractive import is_filler, is_log_line
from tierwise.summarize.sentences import split_sentences

COUNTER = TokenCounter()
T0 = datetime(2026, 3, 13, 9, 0)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Let's cut release 0.4.0 today. Then v0.4.1.", ["Let's cut release 0.4.0 today.", "Then v0.4.1."]),
        ("The image is 3.5 GB. It was 1.2 GB.", ["The image is 3.5 GB.", "It was 1.2 GB."]),
        ("Use python:3.12-slim now. Done.", ["Use python:3.12-slim now.", "Done."]),
        ("The bug is in app/auth/jwt.py. Fixed.", ["The bug is in app/auth/jwt.py.", "Fixed."]),
        (
            "See https://docs.example.com/a.b/c?x=1&y=2. Then go.",
            ["See https://docs.example.com/a.b/c?x=1&y=2.", "Then go."],
        ),
        ("Dr. Smith agreed, e.g. on Friday. Good.", ["Dr. Smith agreed, e.g. on Friday.", "Good."]),
        ("first line\n- a bullet\n\nlast", ["first line", "- a bullet", "last"]),
        ("Run it:\n```\nx = 1. y = 2.\n```\nOK then.", ["Run it:", "OK then."]),
    ],
)
def test_sentences_keep_versions_decimals_paths_urls_and_abbreviations_whole(
    text: str, expected: list[str]
) -> None:
    assert split_sentences(text) == expected


def test_small_talk_and_tool_logs_are_never_summary_material() -> None:
    for filler in ("Hey Mel!", "Thanks, Caroline!", "Wow, that's so great to hear!", "Ok, sounds good."):
        assert is_filler(filler), filler
    assert not is_filler("Thanks, the fix is in v0.4.1.")
    for log_line in (
        "FAILED tests/test_auth.py::test_refresh - AssertionError",
        "1 failed, 41 passed in 3.21s",
        'File "app/auth/jwt.py", line 12, in decode',
        "$ git tag v0.4.0",
    ):
        assert is_log_line(log_line), log_line
    text = (
        "Maya: Hi there!\nAssistant: Hello! Thanks for waiting.\n"
        "Maya: We decided to cut release 0.4.0 on Friday 14 March.\n"
        "Assistant: 1 failed, 41 passed in 3.21s\n"
        "Assistant: The JWT expiry bug in app/auth/jwt.py is fixed with datetime.now(UTC).\n"
        "Maya: Great, thanks!"
    )
    summary = ExtractiveSummarizer(COUNTER).summarize(text, max_tokens=SUMMARY_TOKENS)
    assert "release 0.4.0 on Friday 14 March" in summary and "app/auth/jwt.py" in summary
    assert "Maya: We decided" in summary and "Assistant: The JWT" in summary  # who said it
    for noise in ("Hi there", "Thanks for waiting", "passed in", "Great, thanks"):
        assert noise not in summary


def test_summaries_are_diverse_not_repetitive() -> None:
    same = "Assistant: The launch review is on Friday at the main office with the whole team."
    text = "\n".join([same] * 6 + ["Maya: Priya owns the pricing page and needs legal sign-off by 3 April."])
    summary = ExtractiveSummarizer(COUNTER).summarize(text, max_tokens=40)
    assert summary.count("launch review") == 1 and "Priya" in summary


def test_relative_dates_are_anchored_to_the_day_they_were_said() -> None:
    at = datetime(2023, 5, 8, 13, 56)  # a Monday
    assert anchor_dates("I went yesterday.", at) == "I went yesterday (7 May 2023)."
    assert anchor_dates("We ran it last Saturday.", at) == "We ran it last Saturday (6 May 2023)."
    assert anchor_dates("Camping next month!", at) == "Camping next month (June 2023)!"
    assert anchor_dates("Painted it last year.", at) == "Painted it last year (2022)."
    assert anchor_dates("Moved here 4 years ago.", at) == "Moved here 4 years ago (2019)."
    assert anchor_dates("That was last week.", at) == "That was last week (the week before 8 May 2023)."
    assert anchor_dates("yesterday", None) == "yesterday"
    assert anchor_dates(anchor_dates("yesterday", at), at) == "yesterday (7 May 2023)"  # once only


def _conversation(memory: Memory, topics: list[tuple[str, list[str]]], *, days: bool = False) -> None:
    at = T0
    for n, (_, lines) in enumerate(topics):
        at = T0 + (timedelta(days=n) if days else timedelta(hours=n))
        for k, line in enumerate(lines):
            role = "user" if k % 2 == 0 else "assistant"
            memory.add({"role": role, "content": line}, at=at + timedelta(minutes=k))


TOPICS = [
    (
        "jwt",
        [
            "Tokens expire right after login, can you look at the JWT code?",
            "The JWT expiry in app/auth/jwt.py compares a naive datetime with an aware one.",
            "So the JWT expiry check is wrong for every token?",
            "Yes: the JWT expiry uses local time. I switched it to datetime.now(UTC).",
            "Great. How long should refresh tokens live?",
            "Refresh tokens now live 14 days; the JWT expiry bug is fixed.",
        ],
    ),
    (
        "pagination",
        [
            "Next: cursor pagination for GET /api/projects.",
            "Cursor pagination needs a stable sort; I used created_at and id for the cursor.",
            "What page size for the cursor pagination?",
            "Page size 50, and next_cursor in the response; offset pagination is dropped.",
            "Ok, and the cursor pagination docs?",
            "The cursor pagination docs are in docs/api.md; we decided to drop offsets.",
        ],
    ),
    (
        "docker",
        [
            "The Docker image is huge, can we slim it?",
            "The Docker image moves to python:3.12-slim with a multi-stage build.",
            "How big is the Docker image now?",
            "The Docker image went from 1.2 GB to 380 MB.",
            "Nice. Does the Docker image still run the migrations?",
            "Yes, the Docker image runs alembic upgrade head before uvicorn starts.",
        ],
    ),
]


def test_headers_say_what_is_distinctive_and_fit_their_cap() -> None:
    memory = Memory()  # an hour between topics: a gap, so three segments
    _conversation(memory, TOPICS)
    memory.maintain()
    assert len(memory.segments) == 3
    memory.recall(["S3"], "header")  # the open segment's trio is made when it is asked for
    headers = [s.header for s in memory.segments]
    assert all(0 < COUNTER.count(h) <= HEADER_TOKENS for h in headers)
    assert headers[0].startswith("13 Mar 2026 · ")  # the day, said once
    assert not headers[1][0].isdigit() and not headers[2][0].isdigit()  # same day: not repeated
    assert "JWT" in headers[0] or "expiry" in headers[0]
    assert "pagination" in headers[1].lower() or "cursor" in headers[1].lower()
    assert "docker" in headers[2].lower()
    for h in headers:  # never filler words
        assert not {"great", "ok", "nice", "yes", "thanks"} & set(h.lower().replace(",", " ").split())


def test_the_narrative_covers_the_whole_conversation_and_what_was_decided() -> None:
    memory = Memory()
    _conversation(memory, TOPICS * 8, days=True)  # 24 days, one segment a day
    memory.maintain()
    text = memory.narrative.render()
    assert COUNTER.count(text) <= 300
    assert "13 Mar 2026" in text  # the start is still in view, compressed, not dropped
    assert "Timeline:" in text and "Decided or done:" in text
    assert "decided to drop offsets" in text or "JWT expiry bug is fixed" in text
    assert "Tokens expire right after login" not in text  # not a transcript
    restored = Narrative.from_dict(memory.narrative.to_dict())
    assert restored == memory.narrative


def test_headers_collapse_to_a_range_and_never_vanish_silently() -> None:
    memory = Memory()
    _conversation(memory, TOPICS * 10, days=True)
    seen = set()
    with pytest.raises(BudgetError, match="raise the budget"):  # too small for what must be sent
        pack_turn(memory, Budget(window=40), [{"role": "user", "content": "What about Docker?"}])
    for budget in range(80, 1_400, 40):
        pack = pack_turn(memory, Budget(window=budget), [{"role": "user", "content": "What about Docker?"}])
        headers = next((layer for layer in pack.report.layers if layer.kind == "headers"), None)
        assert headers is not None, f"the headers layer vanished from the report at {budget}"
        if headers.status == "dropped":
            assert headers.reason, "a dropped layer says why"
            seen.add("dropped")
        elif "earlier segments (recall by id)" in pack_text(pack):
            seen.add("range")
    assert "range" in seen  # short of room: the oldest headers collapsed into a range line


def test_the_same_trio_whenever_it_is_made() -> None:
    eager, deferred = Memory(), Memory(policy=MemoryPolicy(defer_summaries=True))
    for memory in (eager, deferred):
        _conversation(memory, TOPICS * 2, days=True)
    deferred.maintain()
    assert [(s.header, s.summary) for s in eager.segments if s.closed] == [
        (s.header, s.summary) for s in deferred.segments if s.closed
    ]


def test_the_dense_model_keeps_a_summary_from_saying_one_thing_twice() -> None:
    import numpy as np

    same = (
        "Assistant: The review moved to Friday.",
        "Assistant: We shifted the meeting to the end of the week.",
    )
    other = "Maya: Priya owns pricing and needs legal sign-off by 3 April."
    text = "\n".join([*same, other])

    def embed(texts: list[str]) -> np.ndarray:  # a stand-in model: the first two mean the same
        rows = [[1.0, 0.0] if ("Friday" in t or "week" in t) else [0.0, 1.0] for t in texts]
        return np.array(rows)

    words_only = ExtractiveSummarizer(COUNTER).summarize(text, max_tokens=60)
    dense = ExtractiveSummarizer(COUNTER, embed=embed).summarize(text, max_tokens=60)
    assert "Friday" in words_only and "end of the week" in words_only  # no shared words: both kept
    assert ("Friday" in dense) != ("end of the week" in dense) and "Priya" in dense

    def broken(texts: list[str]) -> np.ndarray:
        raise RuntimeError("no model")

    assert ExtractiveSummarizer(COUNTER, embed=broken).summarize(text, max_tokens=60) == words_only
