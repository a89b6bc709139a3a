from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tierwise.bench.layers import (
    answer_words,
    coverage,
    main,
    measure_layers,
    reference_rows,
    segment_rows,
)
from tierwise.cli import app
from tierwise.errors import InputError
from tierwise.tokens import TokenCounter

COUNTER = TokenCounter("o200k_base")
KEYS = {"sample_id", "segment", "header", "summary", "dia_ids"}


def turn(speaker: str, dia_id: str, text: str, **extra: str) -> dict[str, str]:
    return {"speaker": speaker, "dia_id": dia_id, "text": text, **extra}


def sample(sample_id: str = "conv-x") -> dict[str, Any]:
    """Three short sessions (each one tierwise segment) and hand-checkable reference summaries."""
    return {
        "sample_id": sample_id,
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bob",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                turn("Ann", "D1:1", "Hi Bob! Guess what, I adopted a cat named Luna."),
                turn("Bob", "D1:2", "Congrats! I started pottery classes.", blip_caption="a clay bowl"),
            ],
            "session_2_date_time": "10:37 am on 27 June, 2023",
            "session_2": [
                turn("Bob", "D2:1", "How did the marathon go, Ann?"),
                turn("Ann", "D2:2", "I finished in four hours and twelve minutes!"),
            ],
            "session_3_date_time": "9:00 am on 1 July, 2023",
            "session_3": [
                turn("Ann", "D3:1", "We are moving to Lisbon next spring."),
                turn("Bob", "D3:2", "Lisbon is lovely, enjoy the tiles."),
            ],
        },
        "qa": [
            # routed to S1 alone (only its summary has name / cat): 1.0; answer found: 1.0
            {
                "question": "What is the name of the cat?",
                "answer": "Luna",
                "evidence": ["D1:1"],
                "category": 4,
            },
            # no summary holds a question word: routed nowhere, 0.0; answer words absent: 0.0
            {
                "question": "How long did the marathon take?",
                "answer": "4 hours 12 minutes",
                "evidence": ["D2:2"],
                "category": 2,
            },
            # evidence in sessions 1 and 3, only session 1 matches: share 0.5, any 1.0;
            # "lisbon" found, "portugal" not: 0.5
            {
                "question": "Which city will the pottery student move to?",
                "answer": "Lisbon, Portugal",
                "evidence": ["D1:2; D3:1"],
                "category": 1,
            },
            # adversarial: routed (1.0), no gold answer so not covered
            {
                "question": "What is the name of the cat?",
                "adversarial_answer": "Luna",
                "evidence": ["D1:1"],
                "category": 5,
            },
            # no evidence: neither routed nor covered
            {"question": "Who is Ann?", "answer": "a friend", "evidence": [], "category": 4},
            # routed to S1 and S2 (both say bob): 1.0; the answer has no content words: not covered
            {"question": "Did Bob start pottery?", "answer": "Yes", "evidence": ["D1:2"], "category": 4},
        ],
        "session_summary": {
            "session_1_summary": "Ann adopted a cat named Luna. Bob took up pottery.",
            "session_2_summary": "Bob and Ann caught up about running.",
            "session_3_summary": "Ann plans a new home in Lisbon.",
        },
        "observation": {"secret": "Luna"},
        "event_summary": {"e": "marathon"},
    }


def four_sessions() -> dict[str, Any]:
    """Four one-turn sessions whose reference summaries are all three words long (equal lengths)."""
    summaries = ["cat luna garden", "cat luna garden", "cat luna garden", "cat sofa window"]
    conversation: dict[str, Any] = {}
    for n in range(1, 5):
        conversation[f"session_{n}_date_time"] = f"9:00 am on {n} July, 2023"
        conversation[f"session_{n}"] = [turn("Ann", f"D{n}:1", f"Day {n} was quiet at home.")]
    return {
        "sample_id": "conv-4",
        "conversation": conversation,
        "qa": [
            # S1–S3 match cat and luna, S4 only cat: S4 ranks fourth
            {
                "question": "Where does the cat Luna sleep?",
                "answer": "sofa",
                "evidence": ["D4:1"],
                "category": 4,
            },
            # S4 alone matches sofa: first
            {"question": "Where does the cat sleep on the sofa?", "answer": "window", "evidence": ["D4:1"]},
            # a four-way tie on cat: the earlier units win, S4 is out
            {"question": "Tell me about the cat", "answer": "garden", "evidence": ["D4:1"], "category": 4},
            # a three-way tie on garden: all three in the top 3
            {"question": "Where is the garden?", "answer": "luna", "evidence": ["D3:1"], "category": 4},
        ],
        "session_summary": {f"session_{n}_summary": s for n, s in enumerate(summaries, start=1)},
    }


def write(tmp_path: Path, data: Any, name: str = "locomo.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_answer_words_and_coverage() -> None:
    assert answer_words("Her mother's pottery-class, 7 May 2023") == [
        "mother",
        "pottery",
        "class",
        "7",
        "may",
        "2023",
    ]
    assert answer_words("Yes") == [] and coverage("Yes", "yes indeed") is None
    assert coverage("Luna", "Ann adopted a cat named Luna.") == 1.0
    assert coverage("Luna", "Ann adopted a cat.") == 0.0
    assert coverage("Lisbon, Portugal", "Ann plans a new home in lisbon!") == 0.5
    assert coverage("4 hours 12 minutes", "It took 4 hours and 12 minutes.") == 1.0


def test_reference_measures_by_hand(tmp_path: Path) -> None:
    result = measure_layers(write(tmp_path, [sample()]))
    ref = result["reference"]
    # routed: q1 1.0, q2 0.0, q3 0.5 (any 1.0), q5 1.0, q6 1.0
    assert ref["questions_routed"] == 5
    assert ref["routing_at_3"] == pytest.approx(3.5 / 5)
    assert ref["routing_any_at_3"] == pytest.approx(4 / 5)
    assert ref["header_routing_at_3"] is None and ref["header_routing_any_at_3"] is None  # no headers
    # covered: q1 1.0, q2 0.0, q3 0.5
    assert ref["questions_covered"] == 3
    assert ref["answer_coverage"] == pytest.approx(0.5)
    assert ref["answer_coverage_with_header"] == pytest.approx(0.5)
    assert ref["units"] == 3 and ref["units_per_conversation"] == 3.0
    assert ref["mean_header_tokens"] == 0.0
    summaries = sample()["session_summary"].values()
    assert ref["mean_summary_tokens"] == round(sum(COUNTER.count(s) for s in summaries) / 3, 1)
    assert ref["by_category"]["multi-hop"] == {"routing_at_3": 0.5, "answer_coverage": 0.5}
    assert ref["by_category"]["adversarial"] == {"routing_at_3": 1.0, "answer_coverage": None}


def test_top_three_cut_and_ties(tmp_path: Path) -> None:
    ref = measure_layers(write(tmp_path, [four_sessions()]))["reference"]
    # q1 0 (fourth), q2 1 (first), q3 0 (tie, earlier units win), q4 1 (three-way tie, all in)
    assert ref["questions_routed"] == 4
    assert ref["routing_at_3"] == 0.5 and ref["routing_any_at_3"] == 0.5
    assert ref["units_per_conversation"] == 4.0


def test_tierwise_segments_and_measures(tmp_path: Path) -> None:
    rows = segment_rows(sample(), COUNTER)
    assert [r["segment"] for r in rows] == ["S1", "S2", "S3"]  # one segment per session
    assert [r["dia_ids"] for r in rows] == [["D1:1", "D1:2"], ["D2:1", "D2:2"], ["D3:1", "D3:2"]]
    assert all(set(r) == KEYS and r["sample_id"] == "conv-x" for r in rows)
    assert all(r["header"] and r["summary"] for r in rows)  # the open S3 settled too
    assert all(COUNTER.count(r["header"]) <= 12 and COUNTER.count(r["summary"]) <= 120 for r in rows)

    ours = measure_layers(write(tmp_path, [sample()]))["tierwise"]
    assert ours["questions_routed"] == 5 and ours["questions_covered"] == 3
    assert ours["units_per_conversation"] == 3.0
    assert 0 < ours["mean_header_tokens"] <= 12 and 0 < ours["mean_summary_tokens"] <= 120
    for key in ("header_routing_at_3", "routing_at_3", "answer_coverage", "answer_coverage_with_header"):
        assert 0.0 <= ours[key] <= 1.0
    assert ours["header_routing_at_3"] <= ours["header_routing_any_at_3"]
    assert ours["routing_at_3"] <= ours["routing_any_at_3"]


def test_engine_never_reads_annotations() -> None:
    blind = copy.deepcopy(sample())
    for key in ("session_summary", "observation", "event_summary", "qa"):
        blind.pop(key)
    assert segment_rows(blind, COUNTER) == segment_rows(sample(), COUNTER)


def test_reference_rows() -> None:
    data = sample()
    data["conversation"]["session_4"] = []  # a session without turns is no unit
    data["conversation"]["session_9_date_time"] = "9:00 am on 9 July, 2023"
    rows = reference_rows(data)
    assert [r["segment"] for r in rows] == ["session_1", "session_2", "session_3"]
    assert rows[2] == {
        "sample_id": "conv-x",
        "segment": "session_3",
        "header": "",
        "summary": "Ann plans a new home in Lisbon.",
        "dia_ids": ["D3:1", "D3:2"],
    }
    data.pop("session_summary")
    assert [r["summary"] for r in reference_rows(data)] == ["", "", ""]


def test_dump_segments(tmp_path: Path) -> None:
    dump = tmp_path / "segments.jsonl"
    measure_layers(write(tmp_path, [sample("a"), sample("b")]), dump_segments=dump)
    lines = [json.loads(line) for line in dump.read_text(encoding="utf-8").splitlines()]
    assert [(x["sample_id"], x["segment"]) for x in lines] == [
        (s, f"S{n}") for s in ("a", "b") for n in (1, 2, 3)
    ]
    assert all(set(x) == KEYS for x in lines)
    assert lines[:3] == segment_rows(sample("a"), COUNTER)


def test_main_prints_a_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    path = write(tmp_path, [sample()])
    assert main([str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["reference"]["routing_at_3"] == 0.7
    assert main([str(path)]) == 0
    assert "header + summary routing@3" in " ".join(capsys.readouterr().out.split())
    assert main([str(tmp_path / "missing.json")]) == 2
    assert "no such file" in capsys.readouterr().err
    with pytest.raises(InputError, match="no such file"):
        measure_layers(tmp_path / "missing.json")


def test_cli_dump_segments_and_layers(tmp_path: Path) -> None:
    runner = CliRunner()
    data = write(tmp_path, [sample()])
    dump, out = tmp_path / "segments.jsonl", tmp_path / "result.json"
    args = [
        "bench",
        "locomo",
        "--data",
        str(data),
        "--no-dense",
        "--dump-segments",
        str(dump),
        "--out",
        str(out),
    ]
    result = runner.invoke(app, args, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    flat = " ".join(result.output.split())
    assert flat.index("LoCoMo evidence recall") < flat.index("LoCoMo layers")  # the second table
    assert "header + summary routing@3 (share)" in flat and "answer-word coverage (summaries)" in flat
    lines = [json.loads(line) for line in dump.read_text(encoding="utf-8").splitlines()]
    assert [x["segment"] for x in lines] == ["S1", "S2", "S3"]
    saved = json.loads(out.read_text(encoding="utf-8"))
    assert saved["layers"]["reference"]["routing_at_3"] == 0.7
    assert saved["layers"]["tierwise"]["units"] == 3

    as_json = runner.invoke(app, ["bench", "locomo", "--data", str(data), "--no-dense", "--json"])
    assert as_json.exit_code == 0, as_json.output
    assert json.loads(as_json.output)["layers"]["reference"]["answer_coverage"] == 0.5
