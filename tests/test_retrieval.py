from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from tierwise.memory.retrieval import TurnRetriever, tokenize
from tierwise.memory.turns import Turn, render_turn
from tierwise.tokens import TokenCounter

DAY1 = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
DAY2 = DAY1 + timedelta(days=9)
DAY3 = DAY2 + timedelta(days=12)

SESSIONS: list[tuple[datetime, list[tuple[str, str, str]]]] = [
    (
        DAY1,
        [
            ("Ann", "Hi Bob! How was your week?", ""),
            ("Bob", "Busy! I started a pottery class on Tuesday.", "a photo of a clay bowl"),
            ("Ann", "Nice. I adopted a cat named Luna last weekend.", ""),
            ("Bob", "Congrats! How is she settling in?", ""),
            ("Ann", "She hides under the sofa but purrs a lot.", ""),
        ],
    ),
    (
        DAY2,
        [
            ("Bob", "Hey Ann, how did the marathon training go?", ""),
            ("Ann", "Slow. My knee hurts after long runs.", ""),
            ("Bob", "Have you tried physiotherapy for it?", ""),
            ("Ann", "Yes, twice a week now, it's helping.", ""),
        ],
    ),
    (
        DAY3,
        [
            ("Ann", "Bob, I finally finished my first painting of a sunset!", "a painting of a sunset"),
            ("Bob", "Gorgeous colours. I made a vase at pottery yesterday.", ""),
            ("Ann", "We should visit the museum together next month.", ""),
        ],
    ),
]


def make_turns() -> list[list[Turn]]:
    out: list[list[Turn]] = []
    index = 0
    for n, (at, rows) in enumerate(SESSIONS, start=1):
        session = []
        for m, (speaker, text, extra) in enumerate(rows, start=1):
            session.append(Turn(f"D{n}:{m}", index, "user", text, speaker, at, extra))
            index += 1
        out.append(session)
    return out


@pytest.fixture
def retriever() -> TurnRetriever:
    r = TurnRetriever()
    for session in make_turns():
        r.add(session)
    return r


@pytest.fixture(scope="module")
def counter() -> TokenCounter:
    return TokenCounter("o200k_base")


def ids(turns: Sequence[Turn]) -> list[str]:
    return [t.id for t in turns]


def test_tokenize_stems_and_drops_stopwords() -> None:
    assert tokenize(["The runners are running to the museums"]) == [["runner", "run", "museum"]]


def test_finds_the_turn_that_answers(retriever: TurnRetriever) -> None:
    hits = retriever.search("What is the name of Ann's cat?")
    assert hits[0][0].id == "D1:3"
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)


def test_captions_are_searchable_but_not_shown(retriever: TurnRetriever) -> None:
    hits = retriever.search("clay bowl")
    assert hits[0][0].id == "D1:2"
    assert "clay" not in render_turn(hits[0][0])


def test_answer_inherits_from_the_question_before_it(retriever: TurnRetriever) -> None:
    # "Slow. My knee hurts…" shares no word with the query; the turn before it does.
    scores = retriever.scores("How did the marathon training go?")
    order = [retriever.turns[i].id for i in np.argsort(-scores, kind="stable")]
    assert order[:2] == ["D2:1", "D2:2"]
    no_neighbours = TurnRetriever(prev_weight=0.0, next_weight=0.0, segment_weight=0.0)
    no_neighbours.add(retriever.turns)
    assert no_neighbours.scores("How did the marathon training go?")[6] == 0.0  # D2:2


def test_neighbours_stay_within_their_segment() -> None:
    # The last turn of session 1 and the first of session 2 are neighbours in order only.
    r = TurnRetriever(segment_weight=0.0, speaker_boost=0.0)
    for session in make_turns():
        r.add(session)
    scores = r.scores("sofa purrs")
    assert scores[4] > 0  # D1:5
    assert scores[5] == 0.0  # D2:1 is in another session


def test_speaker_named_in_query_is_preferred() -> None:
    r = TurnRetriever(prev_weight=0.0, next_weight=0.0, segment_weight=0.0)
    r.add(
        [
            Turn("a", 0, "user", "I went to a pottery class.", "Ann", DAY1),
            Turn("b", 1, "user", "I went to a pottery class too.", "Bob", DAY1),
        ]
    )
    assert r.search("Which class did Bob take?")[0][0].id == "b"
    assert r.search("Which class did Ann take?")[0][0].id == "a"


def test_select_respects_budget_and_is_chronological(retriever: TurnRetriever, counter: TokenCounter) -> None:
    for budget in (0, 5, 20, 40, 80, 10_000):
        chosen = retriever.select("pottery class vase", budget, counter)
        cost = sum(counter.count(render_turn(t) + "\n") for t in chosen)
        assert cost <= budget
        assert [t.index for t in chosen] == sorted(t.index for t in chosen)
    small = retriever.select("pottery class vase", 40, counter)
    assert "D3:2" in ids(small) or "D1:2" in ids(small)


def test_select_skips_a_turn_that_does_not_fit_and_takes_a_smaller_one(counter: TokenCounter) -> None:
    r = TurnRetriever(prev_weight=0.0, next_weight=0.0, segment_weight=0.0)
    long = Turn("long", 0, "user", "kayak river paddle " + "and then we went on " * 30, "Ann")
    short = Turn("short", 1, "user", "kayak", "Ann")
    r.add([long, short])
    budget = counter.count(render_turn(short) + "\n") + 5
    assert r.search("kayak river paddle")[0][0].id == "long"
    assert ids(r.select("kayak river paddle", budget, counter)) == ["short"]


def test_exclude_and_now(retriever: TurnRetriever, counter: TokenCounter) -> None:
    assert "D1:2" not in ids(t for t, _ in retriever.search("pottery", exclude={"D1:2", "nope"}))
    before_day3 = retriever.search("pottery", now=DAY2 + timedelta(days=1))
    assert before_day3 and all(t.at is not None and t.at <= DAY2 for t, _ in before_day3)
    assert "D3:2" not in ids(retriever.select("pottery", 500, counter, now=DAY2))


def test_incremental_add_rebuilds_lazily(counter: TokenCounter) -> None:
    r = TurnRetriever()
    assert len(r) == 0
    assert r.search("anything") == []
    assert r.select("anything", 100, counter) == []
    sessions = make_turns()
    r.add(sessions[0])
    assert r.search("museum") == []
    r.add(sessions[1])
    r.add(sessions[2])
    assert len(r) == 12
    assert r.search("museum")[0][0].id == "D3:3"
    with pytest.raises(ValueError, match="already indexed"):
        r.add([sessions[0][0]])


def test_query_without_known_terms(retriever: TurnRetriever, counter: TokenCounter) -> None:
    assert retriever.search("the of and") == []
    assert retriever.search("zzzqqq") == []
    assert retriever.select("", 1000, counter) == []


def test_limit(retriever: TurnRetriever) -> None:
    assert len(retriever.search("pottery Ann Bob", limit=2)) == 2


def test_untimed_turns_are_cut_into_segments() -> None:
    r = TurnRetriever(max_segment_turns=3, prev_weight=0.0, next_weight=0.0, speaker_boost=0.0)
    r.add([Turn(f"m{i}", i, "user", "hello" if i != 1 else "violin lesson", None) for i in range(6)])
    scores = r.scores("violin")
    # segment relevance lifts turns 0-2 (same segment as the hit), not 3-5
    assert scores[0] > 0 and scores[2] > 0 and scores[3] == 0


SYNONYMS = {"felin": "cat", "kitten": "cat"}  # keys are stems


class HashEmbedder:
    """A deterministic toy embedder: hashed bag of stems, plus a synonym table."""

    def __init__(self) -> None:
        self.calls: list[int] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(len(texts))
        out = np.zeros((len(texts), 4096), dtype=np.float32)
        for row, terms in enumerate(tokenize(texts)):
            for term in terms:
                term = SYNONYMS.get(term, term)
                out[row, int(hashlib.sha256(term.encode()).hexdigest(), 16) % 4096] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms > 0, norms, 1.0)


def test_dense_signal_finds_paraphrases_and_embeds_incrementally() -> None:
    embedder = HashEmbedder()
    r = TurnRetriever(embedder=embedder)
    sessions = make_turns()
    r.add(sessions[0])
    assert r.search("feline")[0][0].id == "D1:3"  # no lexical overlap: found by the dense signal
    r.add(sessions[1] + sessions[2])
    r.search("kitten")
    # 5 turns, 1 query, 7 new turns only, 1 query
    assert embedder.calls == [5, 1, 7, 1]
    lexical = TurnRetriever()
    lexical.add(sessions[0])
    assert lexical.search("feline") == []


from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_ADVERSARIAL = st.lists(  # pieces where tokenizers split oddly: spaces, newlines, marks, digits
    st.sampled_from(
        [
            *"ab Z9_.,:;!?'-/\\",
            *("\n", "\r", "\t", "\u00a0", "\u2019s", "\u00e9", "\u00df", "\u65e5\u672c"),
            *("\U0001f642", "\u0301", "\u01c5", "\uff11", "  ", "\n\n", "\x1c", "\x85", "\u2028"),
        ]
    ),
    max_size=60,
).map("".join)


@given(text=_ADVERSARIAL, encoding=st.sampled_from(["o200k_base", "cl100k_base"]))
def test_a_line_has_at_least_as_many_tokens_as_words(text: str, encoding: str) -> None:
    counter = TokenCounter(encoding)  # what lets a search skip counting lines that cannot fit
    line = f"user: {text}\n"
    assert len(re.findall(r"[^ \t\n\r\x0b\x0c]+", line)) <= counter.count(line)


def test_select_counts_only_the_lines_that_might_fit(retriever: TurnRetriever, counter: TokenCounter) -> None:
    counted: list[str] = []
    real = TokenCounter.count

    class Spy(TokenCounter):
        def count(self, text: str) -> int:
            counted.append(text)
            return real(self, text)

    spy = Spy(counter.encoding_name)
    everything = sum(spy.count(render_turn(t) + "\n") for t in retriever.turns)
    counted.clear()
    picked = retriever.select("Ann cat", 12, spy)  # room for a line or so: most are too long to try
    assert sum(spy.count(render_turn(t) + "\n") for t in picked) <= 12 < everything
    assert len(counted) - len(picked) < len(retriever.turns)


def test_turns_without_a_searchable_word_are_searched_without_error() -> None:
    """Only emoji and one-letter words: no BM25 term at all (bm25s cannot index that), nothing matches."""
    retriever = TurnRetriever()
    retriever.add([Turn("t1", 0, "user", "👍 I a", "Sam", None)])
    assert retriever.scores("what did I say").tolist() == [0.0]
    retriever.add([Turn("t2", 1, "assistant", "The launch moved to Friday.", "bot", None)])
    assert retriever.select("launch", 100, TokenCounter())[-1].id == "t2"


@pytest.mark.parametrize(
    "line",
    [
        "a  b\tc\nd",
        " lead and trail ",
        "non\u00a0breaking\u2003em space",
        "lone \ud800 surrogate",
        "",
        "日本 語",
    ],
)
def test_a_lines_word_floor_counts_runs_between_ascii_whitespace(line: str) -> None:
    """The floor a search skips lines by: never above what the tokenizer can make of the line."""
    from tierwise.memory.retrieval import _words

    assert _words(line) == len(re.findall(r"[^ \t\n\r\x0b\x0c]+", line))
