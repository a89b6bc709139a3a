from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tierwise.bench.synthetic import synthetic_history, timestamped
from tierwise.cli import app

RUNNER = CliRunner()


def transcript(tmp_path: Path, n: int = 120) -> Path:
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"messages": timestamped(synthetic_history(n))}), encoding="utf-8")
    return path


def test_replay_reports_every_pack_within_budget(tmp_path: Path) -> None:
    result = RUNNER.invoke(app, ["replay", str(transcript(tmp_path)), "--budget", "1500", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["lost"] == 0 and report["all_within_budget"]
    assert report["max_pack_tokens"] <= 1500 and report["packs"] > 20
    assert all(r["pack_tokens"] <= r["full_tokens"] for r in report["rows"])


def test_replay_table_and_store(tmp_path: Path) -> None:
    result = RUNNER.invoke(app, ["replay", str(transcript(tmp_path, 60)), "--budget", "1500", "--store"])
    assert result.exit_code == 0, result.output
    flat = " ".join(result.output.split())
    assert "lost messages: 0" in flat and "stored: 59" in flat


@pytest.mark.parametrize(
    ("messages", "needle"),
    [
        ([{"role": "user", "content": "hi", "timestamp": "yesterday"}], "not ISO 8601"),
        ([{"role": "user", "content": "hi", "timestamp": "2026-01-05T09:00:00"}], "no time zone"),
        ([{"role": "robot", "content": "hi"}], "unknown role"),
        (["hi"], "must be an object"),
    ],
)
def test_replay_bad_transcripts(tmp_path: Path, messages: list[object], needle: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"messages": messages}), encoding="utf-8")
    result = RUNNER.invoke(app, ["replay", str(path), "--budget", "500"])
    assert result.exit_code == 2
    assert result.output.startswith("error: ") and needle in result.output


def test_bench_locomo_bad_input(tmp_path: Path) -> None:
    missing = RUNNER.invoke(app, ["bench", "locomo", "--data", str(tmp_path / "nope.json")])
    assert missing.exit_code == 2 and "pass --data" in missing.output
    bad = tmp_path / "bad.json"
    bad.write_text("{}", encoding="utf-8")
    result = RUNNER.invoke(app, ["bench", "locomo", "--data", str(bad), "--no-dense"])
    assert result.exit_code == 2 and result.output.startswith("error: ")


def agent_transcript() -> list[dict[str, object]]:
    """A task answered in tool steps, a second question, and a last user message nothing answers yet."""
    messages: list[dict[str, object]] = [
        {"role": "system", "content": "You fix code with one shell command per reply."},
        {"role": "user", "content": "The parser drops the last field; fix it."},
    ]
    for n in range(4):
        arguments = json.dumps({"command": f"grep -n fields pkg/reader_{n}.py"})
        call = {"id": f"c{n}", "type": "function", "function": {"name": "grep", "arguments": arguments}}
        messages.append({"role": "assistant", "content": f"Step {n}.", "tool_calls": [call]})
        output = "\n".join(f"{k}: return fields[:-1]  # row {k} of reader {n}" for k in range(40))
        messages.append({"role": "tool", "tool_call_id": f"c{n}", "content": output})
    messages.append({"role": "assistant", "content": "Fixed: reader_3 kept all but the last field."})
    messages.append({"role": "user", "content": "Which file was it?"})
    messages.append({"role": "assistant", "content": "pkg/reader_3.py."})
    messages.append({"role": "user", "content": "Thanks. Anything else to check?"})
    return messages


def test_replay_packs_before_every_model_call(tmp_path: Path) -> None:
    from tierwise.budget import Budget
    from tierwise.replay import replay
    from tierwise.tokens import get_counter

    counter = get_counter()
    messages = agent_transcript()
    seen: list[tuple[int, list[dict[str, object]]]] = []
    report = replay(
        messages,
        [None] * len(messages),
        Budget(window=30_000),
        counter=counter,
        on_pack=lambda turn, pack: seen.append((turn, pack.messages)),
    )
    answers = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
    assert [r.turn for r in report.rows] == [*answers, len(messages)]  # and the call the last user waits for
    assert [turn for turn, _ in seen] == [r.turn for r in report.rows]
    for row, (turn, sent) in zip(report.rows, seen, strict=True):
        assert sent == messages[:turn]  # everything fits: the conversation so far, as given
        assert row.full_tokens == counter.count_messages(messages[:turn]) and row.saved == 0
        assert row.ms > 0 and len(row.checksum) == 64 and row.within_budget
    assert report.lost == 0 and report.messages == len(messages) - 1  # the system prompt is not fed


def test_replay_packs_the_turn_in_progress_as_the_input(tmp_path: Path) -> None:
    from tierwise.budget import Budget
    from tierwise.replay import replay
    from tierwise.tokens import get_counter

    messages = agent_transcript()
    packs: dict[int, list[dict[str, object]]] = {}
    report = replay(
        messages,
        [None] * len(messages),
        Budget(window=1_500),
        counter=get_counter(),
        on_pack=lambda turn, pack: packs.__setitem__(turn, pack.messages),
    )
    assert report.all_within_budget and report.lost == 0
    assert packs[2][-1] == messages[1]  # the task, answered first
    assert packs[10][-1] == messages[9]  # after four tool steps: the step being answered, whole
    assert packs[len(messages)][-1] == messages[-1]  # the last user message, still to be answered


def test_replay_dump_has_one_line_per_model_call(tmp_path: Path) -> None:
    path = tmp_path / "agent.json"
    messages = agent_transcript()
    path.write_text(json.dumps({"messages": messages}), encoding="utf-8")
    dump = tmp_path / "calls.jsonl"
    result = RUNNER.invoke(app, ["replay", str(path), "--budget", "1500", "--dump", str(dump), "--json"])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in dump.read_text().splitlines()]
    assert [line["turn"] for line in lines] == [2, 4, 6, 8, 10, 12, 14]
    for line in lines:
        assert {"turn", "ms", "tokens", "budget", "checksum", "messages", "tools"} <= set(line)
        assert line["budget"] == 1500 and line["tokens"] <= 1500 and line["ms"] > 0
    rows = json.loads(result.stdout)["rows"]
    assert [(r["turn"], r["checksum"]) for r in rows] == [(x["turn"], x["checksum"]) for x in lines]
    assert f"written: {dump} (7 packs" in result.stderr  # where the dump went, beside the output
