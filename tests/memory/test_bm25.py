"""FastBM25 builds the same lucene index as bm25s, from ids or from tokens."""

from __future__ import annotations

from unittest.mock import patch

import bm25s
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tierwise.memory.bm25 import FastBM25, index_ids

WORDS = [f"w{i}" for i in range(40)]
corpora = st.lists(st.lists(st.sampled_from(WORDS), min_size=0, max_size=30), min_size=1, max_size=40).filter(
    lambda docs: any(docs)
)


def _arrays(index: bm25s.BM25, vocab: dict[str, int]) -> dict[str, object]:
    """The index as term → column (by term, so two vocabularies' ids need not agree)."""
    scores = index.scores
    out: dict[str, object] = {}
    for term in vocab:
        if term == "":
            continue
        col = index.vocab_dict[term]
        lo, hi = scores["indptr"][col], scores["indptr"][col + 1]
        out[term] = (scores["indices"][lo:hi].tolist(), scores["data"][lo:hi].tolist())
    return out


@settings(max_examples=60, deadline=None)
@given(corpora, st.floats(0.5, 2.0), st.floats(0.0, 1.0))
def test_same_index_as_bm25s(docs: list[list[str]], k1: float, b: float) -> None:
    reference = bm25s.BM25(k1=k1, b=b)
    reference.index(docs, show_progress=False)
    with patch.object(bm25s.BM25, "build_index_from_ids", side_effect=AssertionError("bm25s's loop ran")):
        fast = FastBM25(k1=k1, b=b)
        fast.index(docs, show_progress=False)
        vocab: dict[str, int] = {}
        ids = [[vocab.setdefault(w, len(vocab)) for w in doc] for doc in docs]
        from_ids = index_ids(ids, vocab, k1=k1, b=b)
    assert _arrays(fast, fast.vocab_dict) == _arrays(reference, reference.vocab_dict)
    assert fast.scores["num_docs"] == reference.scores["num_docs"]
    assert _arrays(from_ids, vocab) == _arrays(reference, reference.vocab_dict)
    query = [w for w in WORDS[:5] if w in vocab]
    if query:
        assert np.array_equal(from_ids.get_scores(query), reference.get_scores(query))


def test_other_variants_fall_back_to_bm25s() -> None:
    docs = [["a1", "b2", "a1"], ["b2", "c3"], ["c3"]]
    reference = bm25s.BM25(method="bm25+")
    reference.index(docs, show_progress=False)
    fast = FastBM25(method="bm25+")
    fast.index(docs, show_progress=False)
    assert np.array_equal(fast.get_scores(["b2"]), reference.get_scores(["b2"]))


def test_vocabulary_is_copied() -> None:
    vocab = {"a1": 0, "b2": 1}
    index_ids([[0, 1], [1]], vocab)
    assert vocab == {"a1": 0, "b2": 1}  # bm25s adds its empty token to the copy, not to ours
