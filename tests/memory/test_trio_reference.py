"""The trio's faster code says exactly what the plain code it replaced says (issue 16: first ingest).

Key phrases and the extractive summary's choice of sentences were rewritten to cost less (phrases
counted per sentence once, rounds of the choice cut short); the plain versions are kept here as the
reference, and random inputs must come out the same from both, ties included.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from tierwise import TokenCounter
from tierwise.memory.keyphrases import _DETERMINERS, _TOKEN, SAID, Vocabulary, _usable, key_phrases
from tierwise.summarize.base import SummaryRejected
from tierwise.summarize.extractive import ExtractiveSummarizer, _close, _Sentence, english_rarity

COUNTER = TokenCounter()

# Words and pieces that exercise the rules: names, determiners, contractions and possessives,
# paths, files and versions, calendar and decision words, filler, stopwords, beyond-ASCII letters.
FRAGMENTS = [
    "I",
    "we",
    "my",
    "our",
    "the",
    "a",
    "an",
    "this",
    "that",
    "their",
    "every",
    "last",
    "next",
    "ago",
    "yesterday",
    "May",
    "may",
    "June",
    "Monday",
    "week",
    "decided",
    "agreed",
    "planning",
    "plan",
    "needs",
    "will",
    "won't",
    "willing",
    "due",
    "moved",
    "fixed",
    "shipped",
    "went",
    "adopted",
    "broke",
    "support",
    "group",
    "support group",
    "LGBTQ",
    "Caroline",
    "Mel",
    "Melanie",
    "Dr.",
    "it's",
    "Anna's",
    "don't",
    "what's",
    "café",
    "naïve",
    "ſunday",
    "İ",
    "app/auth/jwt.py",
    "jwt.py",
    "README.md",
    "v0.4.0",
    "3.5",
    "15:00",
    "2024-05-01",
    "x_y",
    "API",
    "NASA",
    "12",
    "painting",
    "paintings",
    "pottery",
    "race",
    "charity race",
    "adoption",
    "counselor",
    "great",
    "thanks",
    "wow",
    "really",
    "quickly",
    "walked",
    "running",
    "hello",
    "Hey",
    "pottery class",
]
SEPARATORS = [" ", " ", " ", ", ", ". ", "! ", "? ", "-", "/", "'", ": ", "_", ""]


@st.composite
def sentence(draw: st.DrawFn) -> str:
    parts = draw(st.lists(st.tuples(st.sampled_from(FRAGMENTS), st.sampled_from(SEPARATORS)), max_size=14))
    text = "".join(a + b for a, b in parts).strip()
    style = draw(st.sampled_from(["as is", "as is", "upper", "lower", "capitalized"]))
    if style == "upper":
        return text.upper()
    if style == "lower":
        return text.lower()
    return text[:1].upper() + text[1:] if style == "capitalized" else text


SENTENCES = st.one_of(sentence(), sentence(), st.text(max_size=30))


def vocabulary_for(sentences: Sequence[str], data: st.DataObject) -> Vocabulary:
    """Segment numbers for every word of ``sentences``, as of a segment drawn at random."""
    documents = data.draw(st.integers(1, 12))
    seqs: dict[str, list[int]] = {}
    for word in sorted({w for s in sentences for w in re.findall(r"[\w'./-]+", s.lower())}):
        chosen = data.draw(st.sets(st.integers(1, documents), min_size=1, max_size=documents))
        seqs[word] = sorted(chosen)
    return Vocabulary(seqs, documents).upto(data.draw(st.integers(1, documents)))


def reference_key_phrases(
    sentences: Sequence[str],
    vocabulary: Vocabulary,
    *,
    exclude: Iterable[str] = (),
    limit: int = 3,
    counter: TokenCounter | None = None,
) -> list[str]:
    """:func:`key_phrases` as it was first written: every phrase occurrence counted one by one."""
    banned = {w.lower() for w in exclude}
    tf: Counter[str] = Counter()
    nominal: set[str] = set()
    runs: list[tuple[int, list[str]]] = []
    for number, text in enumerate(sentences):
        run: list[str] = []
        after_determiner = False
        for n, token in enumerate(_TOKEN.findall(text)):
            if "'" in token or "’" in token:
                token = re.sub(r"['’]s$", "", token)
                if "'" in token or "’" in token:
                    token = ""
            if n == 0 and token[:1].isupper() and not token.isupper():
                token = token.lower()
            key = token.lower()
            if _usable(key) and key not in banned:
                if not run and n and token[:1].isupper():
                    nominal.add(key)
                run.append(token)
                tf[key] += 1
                continue
            if run:
                if after_determiner:
                    nominal.add(run[-1].lower())
                runs.append((number, run))
                run = []
            after_determiner = key in _DETERMINERS
        if run:
            if after_determiner:
                nominal.add(run[-1].lower())
            runs.append((number, run))
    weight = {
        w: math.log1p(n) * vocabulary.idf(w) * english_rarity(w, counter) * (1.0 if w in nominal else 0.6)
        for w, n in tf.items()
    }
    candidates: dict[str, list[float]] = {}
    spelling: dict[str, str] = {}
    where: dict[str, set[int]] = {}
    position = 0
    for number, run in runs:
        for size in (1, 2, 3):
            for i in range(len(run) - size + 1):
                words = run[i : i + size]
                key = " ".join(w.lower() for w in words)
                position += 1
                where.setdefault(key, set()).add(number)
                if key in candidates:
                    candidates[key][1] += 1
                    continue
                spelling[key] = " ".join(words)
                candidates[key] = [sum(weight[w.lower()] for w in words), 1.0, float(position)]
    scored = []
    for key, (score, count, first) in candidates.items():
        size = key.count(" ") + 1
        proper = any(w[:1].isupper() for w in spelling[key].split())
        if size > 1 and count < 2 and not proper:
            continue
        if size == 1 and not proper and len(key) >= 5 and key.endswith(("ed", "ing", "ly")):
            score *= 0.4
        if size == 1 and not proper and count < 2 and key not in nominal:
            score *= 0.5
        scored.append((-(score * (1 + 0.25 * (count - 1)) / (1 + 0.35 * (size - 1))), first, key))
    scored.sort()
    chosen: list[str] = []
    used: set[str] = set()
    covered: set[int] = set()
    while len(chosen) < limit:
        best: tuple[float, float, str] | None = None
        for neg, first, key in scored:
            if best is not None and -neg <= best[0]:
                break
            if -neg <= 0 or set(key.split()) & used:
                continue
            value = -neg * (1.0 - SAID * len(where[key] & covered) / len(where[key]))
            if best is None or value > best[0]:
                best = (value, first, key)
        if best is None:
            break
        chosen.append(spelling[best[2]])
        used |= set(best[2].split())
        covered |= where[best[2]]
    return chosen


@given(st.lists(SENTENCES, max_size=12), st.data())
def test_key_phrases_are_the_reference_ones(sentences: list[str], data: st.DataObject) -> None:
    vocabulary = vocabulary_for(sentences, data)
    exclude = data.draw(st.lists(st.sampled_from(["mel", "caroline", "the", "support", "may"]), max_size=2))
    limit = data.draw(st.sampled_from([1, 2, 6]))
    counter = data.draw(st.sampled_from([None, COUNTER]))
    doubled = (
        sentences + sentences[: data.draw(st.integers(0, len(sentences)))]
    )  # a chat counts the user's twice
    got = key_phrases(doubled, vocabulary, exclude=exclude, limit=limit, counter=counter)
    fresh = Vocabulary(vocabulary.seqs, vocabulary.documents, vocabulary.upto_seq)  # no idf cached
    assert got == reference_key_phrases(doubled, fresh, exclude=exclude, limit=limit, counter=counter)


class ReferenceSummarizer(ExtractiveSummarizer):
    """The extractive summarizer with the sentence choice as it was first written."""

    def _choose(self, sentences: list[_Sentence], base: dict[int, float], max_tokens: int) -> list[_Sentence]:
        chosen: list[_Sentence] = []
        seen: set[str] = set()
        used = 0
        left = list(sentences)
        costs = {s.index: self.counter.count(_close(s.text)) + 1 for s in sentences}
        similar = self._similarities(sentences)
        closest = {s.index: 0.0 for s in sentences}
        while left:
            best: tuple[float, int] | None = None
            for s in left:
                repeated = max(len(s.words & seen) / len(s.words), closest[s.index])
                if repeated >= 0.9:
                    continue
                value = base[s.index] * (1.0 - 0.7 * repeated) / math.sqrt(costs[s.index])
                if best is None or value > best[0]:
                    best = (value, s.index)
            if best is None:
                break
            pick = next(s for s in left if s.index == best[1])
            left.remove(pick)
            if used + costs[pick.index] > max_tokens:
                continue
            chosen.append(pick)
            seen |= pick.words
            used += costs[pick.index]
            if similar is not None:
                for s in left:
                    near = max(0.0, (float(similar[s.index][pick.index]) - 0.3) / 0.7)
                    closest[s.index] = max(closest[s.index], near)
        return chosen


def embed(texts: Sequence[str]) -> Any:
    """Unit vectors from a hash: a stand-in for the dense model, the same for the same text."""
    vectors = np.array([[b - 128 for b in hashlib.sha256(t.encode()).digest()[:6]] for t in texts], float)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def rarity(word: str) -> float:
    return (len(word) % 4) * 0.8  # few distinct values: many ties


@given(
    st.lists(
        st.tuples(st.sampled_from(["Maya", "Tom", ""]), st.lists(sentence(), min_size=1, max_size=4)),
        max_size=14,
    ),
    st.sampled_from([8, 40, 120, 400]),
    st.booleans(),
    st.integers(0, 6),
)
def test_the_summary_chooses_the_reference_sentences(
    turns: list[tuple[str, list[str]]], max_tokens: int, dense: bool, repeat: int
) -> None:
    lines = [f"{who}: " + " ".join(s) if who else " ".join(s) for who, s in turns]
    text = "\n".join(lines + lines[:repeat])  # repeated lines: equal values, ties broken by order
    options: dict[str, Any] = {"rarity": rarity, "embed": embed if dense else None}

    def outcome(summarizer: ExtractiveSummarizer) -> str:
        try:
            return summarizer.summarize(text, max_tokens=max_tokens, focus="decisions")
        except SummaryRejected as exc:  # a sentence and its speaker over a tiny cap: the same refusal
            return f"rejected: {exc}"

    assert outcome(ExtractiveSummarizer(COUNTER, **options)) == outcome(
        ReferenceSummarizer(COUNTER, **options)
    )
