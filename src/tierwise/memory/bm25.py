"""bm25s's lucene BM25, its index built in a few numpy passes instead of a Python loop per document.

bm25s builds an index by walking the corpus three times in Python: a vocabulary set, a ``Counter``
per document, then a score array per document (``BM25.build_index_from_ids``, which its docs invite
overriding). For the 10,000 turns of a long chat that was 0.28 s of the first turn after a restart,
twice over (the turn index and the segment index). :class:`FastBM25` overrides that one method for
the lucene variant (the one memory uses): the same document frequencies, the same idf array (bm25s's
own function), the same term-frequency formula evaluated in the same float64 order and stored as
float32, the same CSC arrays (bm25s's default numpy layout); a test holds the arrays equal to
bm25s's on random corpora. Other variants and backends fall back to bm25s.

:func:`index_ids` takes documents as term ids with their vocabulary, so a caller that keeps ids
(the turn retriever keeps one vocabulary across rebuilds) skips bm25s's string-to-id pass too.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from typing import Any

import bm25s  # type: ignore[import-untyped,unused-ignore]
import numpy as np
from bm25s.scoring import (  # type: ignore[import-untyped,unused-ignore]
    _build_idf_array,
    _score_idf_lucene,
    _score_tfc_lucene,
)

__all__ = ["FastBM25", "index_ids"]


class FastBM25(bm25s.BM25):  # type: ignore[misc]
    """:class:`bm25s.BM25` whose lucene index is built vectorised (same arrays, a fraction of the time)."""

    def build_index_from_ids(
        self,
        unique_token_ids: list[int],
        corpus_token_ids: list[list[int]],
        show_progress: bool = True,
        leave_progress: bool = False,
    ) -> dict[str, Any]:
        """bm25s's score arrays (``data``, ``indices``, ``indptr``, ``num_docs``) for the documents."""
        n_docs, n_vocab = len(corpus_token_ids), len(unique_token_ids)
        if self.method != "lucene" or self.idf_method not in (None, "lucene") or self.csc_backend != "numpy":
            return super().build_index_from_ids(  # type: ignore[no-any-return]
                unique_token_ids, corpus_token_ids, show_progress=show_progress, leave_progress=leave_progress
            )
        lengths = np.fromiter(map(len, corpus_token_ids), dtype=np.int64, count=n_docs)
        avg_doc_len = lengths.mean()  # bm25s: np.array([len(doc) …]).mean(), a float64
        flat = np.fromiter(chain.from_iterable(corpus_token_ids), dtype=np.int64, count=int(lengths.sum()))
        docs = np.repeat(np.arange(n_docs, dtype=np.int64), lengths)
        # one entry per (term, document), in the CSC matrix's order: by term, then by document
        pairs, tf = np.unique(flat * n_docs + docs, return_counts=True)
        term, doc = np.divmod(pairs, n_docs)
        df = np.bincount(term, minlength=n_vocab)
        self.nonoccurrence_array = None
        idf = _build_idf_array(
            doc_frequencies=dict(zip(unique_token_ids, df[unique_token_ids].tolist(), strict=True)),
            n_docs=n_docs,
            compute_idf_fn=_score_idf_lucene,
            dtype=self.dtype,
        )
        # bm25s: the document's length is a Python int, the average a float64: float64 throughout
        l_d = lengths[doc].astype(np.float64)
        tfc = _score_tfc_lucene(
            tf_array=tf.astype(self.dtype), l_d=l_d, l_avg=avg_doc_len, k1=self.k1, b=self.b
        )
        indptr = np.zeros(n_vocab + 1, dtype=np.int64)
        np.cumsum(df, out=indptr[1:])
        return {
            "data": (idf[term] * tfc).astype(self.dtype),
            "indices": doc.astype(self.int_dtype),
            "indptr": indptr,
            "num_docs": n_docs,
        }


def index_ids(
    docs: Sequence[list[int]], vocab: dict[str, int], *, k1: float = 1.5, b: float = 0.75
) -> FastBM25:
    """A lucene BM25 index of ``docs`` (term ids, each id < ``len(vocab)``); ``vocab`` is copied."""
    index = FastBM25(k1=k1, b=b)
    index.index((list(docs), dict(vocab)), show_progress=False)
    return index
