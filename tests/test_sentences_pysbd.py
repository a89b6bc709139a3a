"""Sentence splitting finds pySBD's sentences in the text without a regex each (``summarize/sentences.py``).

The segmenter's ``sentences_with_char_spans`` is ours (``str.find``); every span must equal what
pySBD's own (a ``re.finditer`` per sentence) gives, on LoCoMo's turns and on generated text.
"""

from __future__ import annotations

import json
from pathlib import Path

import pysbd  # type: ignore[import-untyped]
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tierwise.summarize.sentences import _segmenter

LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "bench" / "locomo" / "locomo-dev.json"
REFERENCE = pysbd.Segmenter(language="en", clean=False)


def _spans(segmenter: pysbd.Segmenter, text: str) -> list[tuple[str, int, int]]:
    segmenter.original_text = text
    made = segmenter.processor(text).process()
    return [(s.sent, s.start, s.end) for s in segmenter.sentences_with_char_spans(made)]


def _check(text: str) -> None:
    assert _spans(_segmenter(), text) == _spans(REFERENCE, text)
    assert _segmenter().segment(text) == REFERENCE.segment(text)


@pytest.mark.skipif(not LOCOMO.exists(), reason="needs ../shared/bench/locomo")
def test_the_spans_are_pysbds_on_locomo_turns() -> None:
    data = json.loads(LOCOMO.read_text(encoding="utf-8"))
    turns = [
        str(turn.get("text", ""))
        for sample in data[:2]
        for key, session in sample["conversation"].items()
        if key.startswith("session_") and isinstance(session, list)
        for turn in session
    ]
    assert len(turns) > 300
    for text in turns:
        _check(text)


SAMPLES = [
    "Dr. Smith met J. Doe at 3.5 p.m. today. They left.",
    "Repeat. Repeat. Repeat.  Repeat!",
    "See app/auth/jwt.py... then v0.4.0 ships. Ok?",
    "e.g. this one, i.e. that one. Mr. and Mrs. Jones arrived.\n\nNew paragraph here.",
    "A sentence.\u00a0Another after a no-break space. “Quoted.” (Parens.)",
    "",
    "   ",
]


@pytest.mark.parametrize("text", SAMPLES)
def test_the_spans_are_pysbds_on_hard_cases(text: str) -> None:
    _check(text)


WORDS = st.sampled_from(
    ["Dr.", "Mr.", "a", "b.", "e.g.", "3.5", "ok", "...", "Yes!", "no?", "J.", "x", "v0.4"]
)


@given(st.lists(st.tuples(WORDS, st.sampled_from([" ", "  ", "\n", ". ", "\t"])), max_size=40))
def test_the_spans_are_pysbds_on_generated_text(pieces: list[tuple[str, str]]) -> None:
    _check("".join(word + gap for word, gap in pieces))
