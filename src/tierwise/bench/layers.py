"""LoCoMo layer measures: how well segment headers and summaries carry a conversation.

These are the layers a model reads to orient itself. Each conversation of a LoCoMo file is
ingested as ``tierwise bench locomo`` does (:class:`~tierwise.bench.locomo.MemoryEngine`: sessions
one by one, each an explicit segment boundary), then every segment is settled (the last, still
open, one gets its trio through the public :meth:`Memory.recall
<tierwise.memory.engine.Memory.recall>`). The segments are the **units**
of the ``tierwise`` row. The yardstick row, ``reference``, has one unit per session: no header, its
summary LoCoMo's annotated ``session_summary`` text. Only the yardstick reads ``session_summary``;
the engine under test reads the turns (speaker, ``dia_id``, text, caption) and session dates.

Measures (units are ranked within their own conversation):

- **header routing@3**: for each question whose evidence names existing turns, the units are
  ranked by BM25 (bm25s, lucene defaults) of the question against the header text alone; terms on
  both sides are :func:`tierwise.memory.retrieval.tokenize`'s (the retriever's own: lower-cased,
  English stopwords out, stemmed). Only units scoring above 0 are ranked (ties: earlier unit
  first), so a question matching no header routes nowhere rather than to the first three units.
  Score = share of the question's *evidence units* (those holding its evidence turns) in the top 3;
  mean over questions. The *any* variant scores 1 if at least one evidence unit is in the top 3.
  The reference has no headers: its header routing is ``None``.
- **header + summary routing@3**: the same against ``header + " " + summary``.
- **answer-word coverage**: for questions with a gold ``answer`` (category 5 has none), evidence
  units and at least one answer word, the share of the answer's distinct words found among the words
  of the evidence units' summaries, concatenated; mean over questions. Words are
  :func:`tierwise.summarize.extractive.content_words` (lower-cased, stopwords out, numbers kept),
  each normalised: a trailing ``'s`` dropped, split at punctuation (``pottery-class`` → ``pottery``,
  ``class``). Reported beside it: the same with each unit's header before its summary.
- sizes: units per conversation, mean header and summary tokens per unit (exact counts).

Run ``python -m tierwise.bench.layers ../shared/bench/locomo/locomo-dev.json`` (a few seconds: no
packs are built), or ``tierwise bench locomo``, which prints these after its recall table.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from tierwise.bench.locomo import CATEGORIES, MemoryEngine, conversation_turns, evidence_ids, load_locomo
from tierwise.memory.retrieval import tokenize
from tierwise.summarize.extractive import content_words
from tierwise.tables import print_table
from tierwise.tokens import TokenCounter

__all__ = [
    "TOP",
    "answer_words",
    "coverage",
    "layers_table",
    "main",
    "measure_layers",
    "measure_samples",
    "reference_rows",
    "segment_rows",
]

TOP = 3
"""Units a question may be routed to."""

_SESSION = re.compile(r"session_(\d+)")
_SPLIT = re.compile(r"[^0-9a-z]+")


# -- units -----------------------------------------------------------------------------------------


def segment_rows(sample: dict[str, Any], counter: TokenCounter) -> list[dict[str, Any]]:
    """The segments tierwise makes of one LoCoMo sample, settled: header, summary and turn ids.

    Ingestion is ``tierwise bench locomo``'s (sessions one by one, each an explicit boundary); only
    ``conversation`` is read. A segment without a summary yet (the open one) gets its trio through
    :meth:`~tierwise.memory.engine.Memory.recall`, as a model asking for it would.

    Returns:
        ``[{"sample_id", "segment", "header", "summary", "dia_ids"}, ...]``, oldest first.
    """
    sample_id = str(sample.get("sample_id", "?"))
    engine = MemoryEngine(counter=counter)
    for session in conversation_turns(sample):
        engine.add(session)
    memory = engine.memory
    rows: list[dict[str, Any]] = []
    for segment in memory.segments:
        if not segment.summary:
            memory.recall([segment.id], "summary")
        rows.append(
            {
                "sample_id": sample_id,
                "segment": segment.id,
                "header": segment.header,
                "summary": segment.summary,
                "dia_ids": [t.id for t in memory.turns[segment.first : segment.last + 1]],
            }
        )
    return rows


def reference_rows(sample: dict[str, Any]) -> list[dict[str, Any]]:
    """LoCoMo's own units (the yardstick): one per session with turns, summary = ``session_summary``.

    Returns:
        Rows shaped as :func:`segment_rows`' (``segment`` = ``session_N``, ``header`` = ``""``).
    """
    sample_id = str(sample.get("sample_id", "?"))
    conversation = sample.get("conversation") or {}
    # the sessions conversation_turns keeps: numbered, in order, with turns
    numbers = sorted(
        int(m.group(1)) for k in conversation if (m := _SESSION.fullmatch(k)) and conversation[k]
    )
    sessions = conversation_turns(sample)
    summaries = sample.get("session_summary") or {}
    if not isinstance(summaries, dict):
        summaries = {}
    return [
        {
            "sample_id": sample_id,
            "segment": f"session_{n}",
            "header": "",
            "summary": str(summaries.get(f"session_{n}_summary") or ""),
            "dia_ids": [t.id for t in turns],
        }
        for n, turns in zip(numbers, sessions, strict=True)
    ]


# -- measures --------------------------------------------------------------------------------------


def answer_words(text: str) -> list[str]:
    """The normalised content words of ``text``, distinct, first-seen order.

    Example:
        >>> answer_words("Her mother's pottery-class, 7 May 2023")
        ['mother', 'pottery', 'class', '7', 'may', '2023']
    """
    out: dict[str, None] = {}
    for word in content_words(text):
        word = word.removesuffix("'s").removesuffix("\u2019s")
        for part in _SPLIT.split(word):
            if part:
                out[part] = None
    return list(out)


def coverage(answer: str, text: str) -> float | None:
    """Share of ``answer``'s words (:func:`answer_words`) found among ``text``'s; ``None`` if it has none.

    Example:
        >>> coverage("Luna, a cat", "Ann adopted a cat named Luna.")
        1.0
        >>> coverage("pottery bowls", "Bob started pottery.")
        0.5
    """
    wanted = answer_words(answer)
    if not wanted:
        return None
    found = set(answer_words(text))
    return sum(1 for w in wanted if w in found) / len(wanted)


class _Router:
    """BM25 over the units' texts of one conversation; :meth:`top` routes a question."""

    def __init__(self, texts: Sequence[str]) -> None:
        import bm25s  # type: ignore[import-untyped,unused-ignore]

        docs = tokenize(texts) if texts else []
        self._index: Any = None
        if any(docs):  # bm25s cannot index a corpus without a single term
            self._index = bm25s.BM25()
            self._index.index(docs, show_progress=False)

    def top(self, terms: Sequence[str], k: int = TOP) -> list[int]:
        """The ``k`` best units scoring above 0 for the question's ``terms`` (ties: earlier first)."""
        if self._index is None:
            return []
        known = [t for t in terms if t and t in self._index.vocab_dict]
        if not known:
            return []
        scores = self._index.get_scores(known)
        ranked = sorted(
            (i for i in range(len(scores)) if scores[i] > 0), key=lambda i: (-float(scores[i]), i)
        )
        return ranked[:k]


class _Tally:
    """Scores of one row (tierwise or reference), overall and by category."""

    def __init__(self) -> None:
        self.values: dict[str, list[float]] = {}
        self.by_category: dict[str, dict[str, list[float]]] = {}
        self.header_tokens: list[int] = []
        self.summary_tokens: list[int] = []
        self.units: list[int] = []

    def add(self, measure: str, category: str, value: float) -> None:
        self.values.setdefault(measure, []).append(value)
        self.by_category.setdefault(category, {}).setdefault(measure, []).append(value)

    def summary(self, has_headers: bool) -> dict[str, Any]:
        def mean(measure: str, values: dict[str, list[float]]) -> float | None:
            """The mean, or ``None``: nothing measured (no headers, no questions of the kind)."""
            if measure.startswith("header_routing") and not has_headers:
                return None
            got = values.get(measure, [])
            return round(statistics.fmean(got), 4) if got else None

        measures = [
            "header_routing_at_3",
            "header_routing_any_at_3",
            "routing_at_3",
            "routing_any_at_3",
            "answer_coverage",
            "answer_coverage_with_header",
        ]
        out: dict[str, Any] = {m: mean(m, self.values) for m in measures}
        out |= {
            "questions_routed": len(self.values.get("routing_at_3", [])),
            "questions_covered": len(self.values.get("answer_coverage", [])),
            "units": sum(self.units),
            "units_per_conversation": round(statistics.fmean(self.units), 1) if self.units else 0.0,
            "mean_header_tokens": _mean_tokens(self.header_tokens),
            "mean_summary_tokens": _mean_tokens(self.summary_tokens),
            "by_category": {
                name: {m: mean(m, self.by_category[name]) for m in ("routing_at_3", "answer_coverage")}
                for name in [*CATEGORIES.values(), "other"]
                if name in self.by_category
            },
        }
        return out


def _mean_tokens(values: list[int]) -> float:
    return round(statistics.fmean(values), 1) if values else 0.0


def _score(
    tally: _Tally,
    rows: list[dict[str, Any]],
    qa: Sequence[dict[str, Any]],
    terms: list[list[str]],
    counter: TokenCounter,
) -> None:
    """Add one conversation's units (``rows``) and questions to ``tally``."""
    unit_of = {d: i for i, row in enumerate(rows) for d in row["dia_ids"]}
    headers = _Router([row["header"] for row in rows])
    both = _Router([f"{row['header']} {row['summary']}" for row in rows])
    tally.units.append(len(rows))
    tally.header_tokens += [counter.count(row["header"]) for row in rows]
    tally.summary_tokens += [counter.count(row["summary"]) for row in rows]
    for item, question_terms in zip(qa, terms, strict=True):
        evidence = evidence_ids(item.get("evidence"), set(unit_of))
        if not evidence:
            continue
        category = CATEGORIES.get(int(item.get("category", 0) or 0), "other")
        units = list(dict.fromkeys(unit_of[e] for e in evidence))
        for prefix, router in (("header_routing", headers), ("routing", both)):
            top = set(router.top(question_terms))
            hits = sum(1 for u in units if u in top)
            tally.add(f"{prefix}_at_3", category, hits / len(units))
            tally.add(f"{prefix}_any_at_3", category, 1.0 if hits else 0.0)
        answer = item.get("answer")
        if answer is None or category == CATEGORIES[5]:
            continue
        summaries = " ".join(rows[u]["summary"] for u in units)
        share = coverage(str(answer), summaries)
        if share is None:
            continue
        tally.add("answer_coverage", category, share)
        with_header = " ".join(f"{rows[u]['header']} {rows[u]['summary']}" for u in units)
        tally.add("answer_coverage_with_header", category, coverage(str(answer), with_header) or 0.0)


def measure_samples(
    samples: Sequence[dict[str, Any]],
    counter: TokenCounter,
    *,
    dump_segments: Path | None = None,
    limit_questions: int | None = None,
) -> dict[str, Any]:
    """The layer measures of loaded LoCoMo samples (see the module's docstring).

    Args:
        samples: LoCoMo samples (as :func:`~tierwise.bench.locomo.load_locomo` returns them).
        counter: the token counter of the encoding measured.
        dump_segments: write one JSON line per tierwise segment here (:func:`segment_rows`' rows).
        limit_questions: score at most this many questions per conversation.

    Returns:
        ``{"tierwise": {...}, "reference": {...}}``, each with the routing, coverage and size measures.
    """
    tallies = {"tierwise": _Tally(), "reference": _Tally()}
    has_headers = {"tierwise": False, "reference": False}
    out = dump_segments.open("w", encoding="utf-8") if dump_segments is not None else None
    try:
        for sample in samples:
            qa = sample.get("qa") or []
            qa = qa[:limit_questions] if limit_questions is not None else qa
            terms = tokenize([str(item.get("question", "")) for item in qa]) if qa else []
            ours = segment_rows(sample, counter)
            if out is not None:
                out.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in ours)
            for name, rows in (("tierwise", ours), ("reference", reference_rows(sample))):
                has_headers[name] |= any(row["header"] for row in rows)
                _score(tallies[name], rows, qa, terms, counter)
    finally:
        if out is not None:
            out.close()
    return {name: tally.summary(has_headers[name]) for name, tally in tallies.items()}


def measure_layers(
    data: Path, *, encoding: str = "o200k_base", dump_segments: Path | None = None
) -> dict[str, Any]:
    """The layer measures of a LoCoMo file: ``{"tierwise": {...}, "reference": {...}}``.

    Args:
        data: a LoCoMo JSON file (e.g. ``../shared/bench/locomo/locomo-dev.json``).
        encoding: tokenizer encoding for the token counts.
        dump_segments: write one JSON line per tierwise segment here
            (``{"sample_id", "segment", "header", "summary", "dia_ids"}``).

    Raises:
        InputError: the file is missing or not a LoCoMo file.
    """
    return measure_samples(load_locomo(data), TokenCounter(encoding), dump_segments=dump_segments)


# -- output ----------------------------------------------------------------------------------------


def layers_table(result: dict[str, Any]) -> Table:
    """The measures as a table: one row per measure, one column per contender."""
    ours, ref = result["tierwise"], result["reference"]
    table = Table(
        title=(
            f"LoCoMo layers · {ours['questions_routed']} questions routed, "
            f"{ours['questions_covered']} with answer words · top {TOP} units per question"
        )
    )
    table.caption = "tierwise: its segments · reference: LoCoMo's session_summary, one unit per session"
    table.add_column("measure")
    table.add_column("tierwise", justify="right")
    table.add_column("reference", justify="right")

    def cell(value: float | None, digits: str = ".3f") -> str:
        return "—" if value is None else format(value, digits)

    lines = [
        ("header routing@3 (share of evidence units)", "header_routing_at_3", ".3f"),
        ("header routing@3 (any evidence unit)", "header_routing_any_at_3", ".3f"),
        ("header + summary routing@3 (share)", "routing_at_3", ".3f"),
        ("header + summary routing@3 (any)", "routing_any_at_3", ".3f"),
        ("answer-word coverage (summaries)", "answer_coverage", ".3f"),
        ("answer-word coverage (header + summary)", "answer_coverage_with_header", ".3f"),
        ("units per conversation", "units_per_conversation", ",.1f"),
        ("mean header tokens", "mean_header_tokens", ".1f"),
        ("mean summary tokens", "mean_summary_tokens", ".1f"),
    ]
    for label, key, digits in lines:
        table.add_row(label, cell(ours[key], digits), cell(ref[key], digits))
    return table


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m tierwise.bench.layers [DATA] [--encoding E] [--dump-segments FILE] [--json]``."""
    from tierwise.errors import UserError

    parser = argparse.ArgumentParser(
        prog="python -m tierwise.bench.layers",
        description="How well segment headers and summaries carry a LoCoMo conversation (no packs built).",
    )
    parser.add_argument("data", nargs="?", type=Path, default=Path("../shared/bench/locomo/locomo-dev.json"))
    parser.add_argument("--encoding", default="o200k_base")
    parser.add_argument("--dump-segments", type=Path, default=None, help="one JSON line per segment")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args(argv)
    try:
        result = measure_layers(args.data, encoding=args.encoding, dump_segments=args.dump_segments)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    console = Console()
    if args.json:
        console.print_json(json.dumps(result))
    else:
        print_table(console, layers_table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
