"""Shortcuts the trio takes to cost less, each pinned to what it stands for (issue 16: first ingest).

A pattern that cannot match is not run (no "/" in a sentence: no path), words are looked up instead
of matched where that is the same, the scrubber skips rules whose every match needs something the
text lacks and remembers texts it found clean, and a segment's header is made once for the same
turns. Each must change nothing: checked against the full pattern, the full scan, a fresh make.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import tierwise.memory.segments as segments
from tierwise import Budget, TokenCounter
from tierwise.memory.engine import Memory
from tierwise.memory.keyphrases import _FILE_NAME, _TOKEN, _TOKEN_PLAIN, Vocabulary
from tierwise.memory.policy import MemoryPolicy
from tierwise.memory.scrub import _NEEDLES, _RULES, Scrubber
from tierwise.memory.segments import _ENTITY, _ENTITY_NAME, _VERSION_START, Segmenter, make_trio
from tierwise.memory.turns import Turn
from tierwise.summarize.dates import _CUE_WORDS, _RELATIVE, anchor_dates
from tierwise.summarize.extractive import (
    _CODE,
    _CODE_FILE,
    _CUES,
    _LOG_ANYWHERE,
    _LOG_START,
    _WHEN,
    _time_and_cue_words,
    is_log_line,
)

from .test_trio_reference import SENTENCES

COUNTER = TokenCounter()
SECRETISH = [
    "password",
    "PASSWORD=",
    "pwd:",
    "my pw is",
    "passphrase",
    "secret=",
    "api_key=",
    "apikey",
    "access_token",
    "Bearer ",
    "sk-",
    "sk-ant-",
    "sk-proj-AbC123dEf456GhI789jKl012",
    "AKIA",
    "AKIAABCDEFGHIJKLMNOP",
    "ASIA",
    "aws_secret_access_key=",
    "AIza",
    "sk_live_",
    "rk_test_",
    "ghp_",
    "github_pat_",
    "xoxb-",
    "hf_",
    "api_org_",
    "glpat-",
    "SG.",
    "eyJ",
    "eyJhbGciOi.eyJzdWIi.sig",
    "-----BEGIN RSA PRIVATE KEY-----",
    "-----END RSA PRIVATE KEY-----",
    "://",
    "https://u:p4ss@h.io",
    "--password",
    "--db-pass=",
    "admin / P@ss1",
    "@",
    "jane.doe@acme.io",
    "+44 20 7946 0958",
    "(555) 123-4567",
    "555-123-4567",
    "020 7946 0958",
    "01 23 45 67 89",
    "call me at 5551234567",
    "4111 1111 1111 1111",
    "GB82 WEST 1234 5698 7654 32",
    "DE89370400440532013000",
    "0",
    "7",
    "(",
    "+",
    "/",
    "-",
    "'",
    '"',
    "=",
    ":",
    " ",
    "\n",
    "\t",
    "hunter2",
    "Tr0ub4dor&3",
    "ſ",
    "K",
    "é",
    "İ",
]
TEXTS = st.one_of(
    SENTENCES,
    st.lists(st.sampled_from(SECRETISH), max_size=10).map("".join),
    st.lists(st.one_of(st.sampled_from(SECRETISH), SENTENCES), max_size=6).map(" ".join),
)


@given(SENTENCES)
def test_a_pattern_left_out_is_one_that_could_not_match(sentence: str) -> None:
    plain = not ("/" in sentence or _FILE_NAME.search(sentence))
    assert (_TOKEN_PLAIN if plain else _TOKEN).findall(sentence) == _TOKEN.findall(sentence)
    whole = "/" in sentence or _VERSION_START.search(sentence)
    spans = [m.span() for m in (_ENTITY if whole else _ENTITY_NAME).finditer(sentence)]
    assert spans == [m.span() for m in _ENTITY.finditer(sentence)]
    if not ("/" in sentence or _CODE_FILE.search(sentence)):
        assert not _CODE.findall(sentence)


@given(SENTENCES)
def test_time_and_cue_words_are_counted_as_the_patterns_count_them(sentence: str) -> None:
    assert _time_and_cue_words(sentence) == (len(_WHEN.findall(sentence)), len(_CUES.findall(sentence)))


@given(
    st.one_of(
        SENTENCES,
        st.lists(
            st.sampled_from(
                [
                    "  $ ls",
                    "3 passed",
                    "passed in 2s",
                    "x = f(1)",
                    "def f():",
                    "exit code 2",
                    "Traceback",
                    "f()",
                    "=== x",
                    "ValueError: y",
                ]
            ),
            max_size=3,
        ).map(" ".join),
    )
)
def test_a_log_line_is_told_apart_as_one_pattern_would(line: str) -> None:
    whole = re.compile(f"{_LOG_START.pattern}|{_LOG_ANYWHERE.pattern}")
    symbols = (
        len(line.strip()) >= 12 and len(re.findall(r"[^\w\s]|_", line.strip())) / len(line.strip()) > 0.3
    )
    assert is_log_line.__wrapped__(line) == bool(whole.search(line) or symbols)


@given(TEXTS)
def test_text_without_a_relative_word_has_no_relative_time(text: str) -> None:
    if text.isascii() and not any(word in text.lower() for word in _CUE_WORDS):
        assert _RELATIVE.search(text) is None


def test_relative_times_spelled_beyond_ascii_are_left_as_they_are() -> None:
    at = datetime(2023, 5, 8, 13, 56)
    # "İ" lower-cases to two characters and "ſ" stays itself: no word of ours; this used to raise
    assert anchor_dates("We meet THİS WEEK.", at) == "We meet THİS WEEK."
    assert anchor_dates("It was yeſterday, ſix days ago.", at) == "It was yeſterday, ſix days ago."
    assert anchor_dates("Seen yesterday, back next Monday.", at) == (
        "Seen yesterday (7 May 2023), back next Monday (15 May 2023)."
    )
    assert anchor_dates("0 days ago and THIS WEEK", at) == (
        "0 days ago (8 May 2023) and THIS WEEK (the week of 8 May 2023)"
    )


@given(TEXTS)
def test_a_rule_skipped_for_its_missing_needles_would_have_found_nothing(text: str) -> None:
    assert set(_NEEDLES) == {rule.name for rule in _RULES}
    if not text.isascii():
        return  # beyond ASCII every rule runs
    lowered = text.lower()
    for rule in _RULES:
        if not any(needle in lowered for needle in _NEEDLES[rule.name]):
            assert list(rule.scan(text)) == [], rule.name


@given(st.lists(TEXTS, max_size=4))
def test_the_scrubber_finds_and_counts_what_a_full_scan_finds(texts: list[str]) -> None:
    fast, full = Scrubber(), Scrubber()
    full._needles = tuple(() for _ in full._needles)  # every rule runs
    for text in texts + texts:  # the second time, a clean text is remembered
        assert fast.scrub(text) == full.scrub(text)
        assert fast.scrub_text(text) == full.scrub_text(text)
    assert fast.counts == full.counts


def test_a_clean_text_is_scanned_once_and_a_finding_every_time(monkeypatch: pytest.MonkeyPatch) -> None:
    scrubber = Scrubber()
    scans: list[str] = []
    scrub = scrubber.scrub
    monkeypatch.setattr(scrubber, "scrub", lambda text: scans.append(text) or scrub(text))
    for _ in range(3):
        assert scrubber.scrub_text("8 May · support group") == "8 May · support group"
        assert scrubber.scrub_text("mail jane.doe@acme.io") == "mail [email]"
    assert scans.count("8 May · support group") == 1 and scans.count("mail jane.doe@acme.io") == 3
    assert scrubber.take_counts() == {"email": 3}
    # beyond ASCII every rule runs: a long s is an s to a pattern that ignores case
    assert scrubber.scrub_text("DB_PAſSWORD=hunter22x") == "DB_PAſSWORD=[password]"


T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def _turns(n: int) -> list[Turn]:
    said = [
        "We decided to move the Q4 launch review with Dana to Friday.",
        "The pricing page is blocked on legal sign-off; Priya needs the FAQ first.",
        "I booked the venue in Lisbon for the offsite next month.",
        "Can you check whether the caterer confirmed 40 people?",
    ]
    return [
        Turn(
            f"m{i}",
            i,
            "user" if i % 2 == 0 else "assistant",
            said[i % len(said)] + f" Note {i}.",
            at=T0 + timedelta(minutes=i),
        )
        for i in range(n)
    ]


def test_a_header_made_before_from_the_same_turns_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[object] = []
    real = segments._make_header
    monkeypatch.setattr(segments, "_make_header", lambda seg, *a: made.append(seg) or real(seg, *a))
    segmenter = Segmenter()
    turns = _turns(12)
    for t in turns[:8]:
        segmenter.add(t, 20)
    seg, vocabulary = segmenter.segments[0], segmenter.vocabulary
    context: dict[str, Any] = {"vocabulary": vocabulary, "previous": None}
    make_trio(seg, turns[:8], COUNTER, summarize=False, **context)  # shown with its header
    header = seg.header
    make_trio(seg, turns[:8], COUNTER, **context)  # summarised later: the header is not made again
    assert made == [seg] and seg.header == header and seg.summary
    once = Segmenter()
    for t in turns[:8]:
        once.add(t, 20)
    make_trio(once.segments[0], turns[:8], COUNTER, vocabulary=once.vocabulary)  # all at once
    assert (once.segments[0].header, once.segments[0].summary) == (seg.header, seg.summary)
    make_trio(seg, turns[:8], COUNTER, vocabulary=Vocabulary({"launch": [1]}, 1))  # another vocabulary
    for t in turns[8:]:
        segmenter.add(t, 20)
    make_trio(seg, turns[: seg.last + 1], COUNTER, summarize=False, **context)  # grown: made again
    assert made == [seg, once.segments[0], seg, seg]


def test_each_header_is_made_once_on_a_first_ingest_and_its_upkeep(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[str] = []
    real = segments._make_header
    monkeypatch.setattr(segments, "_make_header", lambda seg, *a: made.append(seg.id) or real(seg, *a))
    memory = Memory(policy=MemoryPolicy(defer_summaries=True))
    for t in _turns(410):
        memory.add({"role": t.role, "content": t.text}, at=t.at)
    memory.layers("What did we decide about the launch?", Budget(window=4000), upto=410)
    straddling = next(s for s in memory.segments if s.first < memory.live_from <= s.last)
    assert straddling.closed and straddling.header and not straddling.summary  # shown as a header only
    memory.maintain()  # then summarised: its header is not made again
    closed = [s.id for s in memory.segments if s.closed]
    assert all(s.summary for s in memory.segments if s.closed)
    assert sorted(made) == sorted(set(made)) and set(closed) <= set(made)
