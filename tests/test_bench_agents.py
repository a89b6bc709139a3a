"""``tierwise bench agents`` on a small synthetic agent trajectory (no shared data needed)."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from tierwise.bench.agents import CONTENDERS, load_trajectories, run_agents_benchmark
from tierwise.bench.agents_metrics import (
    Request,
    blob_hashes,
    effective,
    evidence_items,
    kept_items,
    score_request,
    unpaired,
)
from tierwise.cli import app
from tierwise.tokens import get_counter

COUNTER = get_counter()
RUNNER = CliRunner()
TASK = "Fix the parser: parse_header in pkg/io/headers.py drops the last field of every header line."


def call(n: int, command: str) -> dict[str, Any]:
    arguments = json.dumps({"command": command})
    name = command.split()[0]
    return {"id": f"call_{n}", "type": "function", "function": {"name": name, "arguments": arguments}}


def trajectory(steps: int = 8) -> list[dict[str, Any]]:
    """A system prompt, a task, then ``steps`` shell commands, each reading what the one before showed."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You solve programming tasks with one shell command per reply."},
        {"role": "user", "content": TASK},
    ]
    for n in range(steps):
        path = f"pkg/io/module_{n}/reader_{n}.py"
        line = f"    return fields[:-1]  # keeps all but the last field of row {n}"
        seen = f"return fields[:-1]  # keeps all but the last field of row {n - 1}"
        command = "ls pkg/io" if n == 0 else f"grep -n '{seen}' pkg/io/module_{n - 1}/reader_{n - 1}.py"
        messages.append(
            {"role": "assistant", "content": f"THOUGHT: step {n}.", "tool_calls": [call(n, command)]}
        )
        body = "\n".join(f"{k}: filler text about module {n}, line {k}, nothing else" for k in range(60))
        messages.append(
            {
                "role": "tool",
                "tool_call_id": f"call_{n}",
                "content": f"<returncode>0</returncode>\n<output>\n{path}\n{line}\n{body}\n</output>",
            }
        )
        if n == 4:  # a reply without a command, then the harness's reminder
            messages.append({"role": "assistant", "content": "I think it is done."})
            messages.append(
                {"role": "user", "content": "Please always provide EXACTLY ONE action in a bash block."}
            )
    messages.append({"role": "assistant", "content": "THOUGHT: done.", "tool_calls": [call(99, "echo done")]})
    return messages


def write_data(tmp_path: Path) -> Path:
    data = tmp_path / "trajectories"
    data.mkdir()
    body = {"messages": trajectory(), "meta": {"instance": "synthetic"}}
    (data / "mini__synthetic.json").write_text(json.dumps(body), encoding="utf-8")
    return data


def test_evidence_items_are_lines_quotes_sed_sides_and_names() -> None:
    items = evidence_items(
        "cd /testbed && sed -i 's/return fields[:-1] of the row/return fields of the row/' "
        'pkg/io/headers.py && python -c "import pkg.io.headers as h; print(h.parse_header())"'
    )
    assert "return fields[:-1] of the row" in items and "return fields of the row" in items
    assert "pkg/io/headers.py" in items and "import pkg.io.headers as h; print(h.parse_header())" in items
    assert "fields[:-1] of the row/return" not in items  # a name is not read across a sed expression
    assert not evidence_items("ls -la") and not evidence_items("cat a/b.py")  # short: not evidence


def test_kept_items_come_from_earlier_results_not_the_task() -> None:
    messages = trajectory()
    first = kept_items(messages, 2)
    assert first == {}  # nothing read yet
    kept = kept_items(messages, 4)  # greps the line the first result showed
    line = "return fields[:-1]  # keeps all but the last field of row 0"
    assert kept[line] == [3]
    assert "pkg/io/module_0/reader_0.py" in kept
    assert all("pkg/io/headers.py" not in item for item in kept)  # the task says it
    assert kept_items(messages, 13) == {}  # no tool call: no action


def test_recall_counts_a_pointer_only_through_an_offered_tool() -> None:
    messages = trajectory()
    kept = kept_items(messages, 4)
    source = str(messages[3]["content"])
    hashes = {3: blob_hashes(source)}
    reference = f"[tool result ls · 4 kB · blob sha256:{min(hashes[3])} (open with open_blob)] a listing"
    pointing = [messages[0], messages[1], {**messages[3], "content": reference}]
    blob_tool = {"type": "function", "function": {"name": "open_blob", "parameters": {}}}
    without = score_request(kept, Request(4, pointing), messages, hashes)
    offered = score_request(kept, Request(4, pointing, [blob_tool]), messages, hashes)
    whole = score_request(kept, Request(4, messages[:4]), messages, hashes)
    assert (without.verbatim, without.pointer, without.named) == (0, 0, len(kept))
    assert (offered.verbatim, offered.pointer) == (0, len(kept))
    assert whole.verbatim == whole.pointer == len(kept)
    assert score_request(kept, None, messages, hashes).items == len(kept)
    segment = Request(
        4, [*pointing[:2], {"role": "user", "content": "S1 listing of pkg/io"}], segments={3: "S1"}
    )
    assert score_request(kept, segment, messages, hashes).named == len(kept)


def test_effective_input_and_pairing() -> None:
    messages = trajectory()
    steps = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
    full = [Request(i, messages[:i]) for i in steps]
    sent, billed = effective(full, COUNTER)
    assert sent == sum(COUNTER.count_messages(messages[:i]) for i in steps)
    assert billed < sent / 2  # each request repeats the one before it
    assert effective([None, *full], COUNTER) == (sent, billed)  # a step without a request adds nothing
    assert not unpaired(messages[:4])
    assert unpaired(messages[:3])  # a call without its result
    assert unpaired([messages[0], messages[3]])  # a result without its call


def test_run_agents_benchmark_all_contenders(tmp_path: Path) -> None:
    data = write_data(tmp_path)
    out = tmp_path / "results" / "agents.json"
    printed = io.StringIO()
    result = run_agents_benchmark(
        data, budgets=(700, 20_000), out=out, console=Console(file=printed, width=400)
    )
    assert f"written: {out} and {out.with_suffix('.md')}" in printed.getvalue()
    summary = {(s["budget"], s["contender"]): s for s in result["summary"]}
    assert set(summary) == {(b, c) for b in (700, 20_000) for c in CONTENDERS}
    steps = len([m for m in trajectory() if m["role"] == "assistant"])
    for (budget, contender), s in summary.items():
        assert s["steps"] == steps and s["unpaired_requests"] == 0
        if contender == "full history":
            assert s["request_share_mean"] == 1.0 and s["vs_full"] == 1.0 and s["recall_verbatim"] == 1.0
        if budget == 20_000:  # everything fits: every step gets a request
            assert s["request_share_mean"] == 1.0
        if budget == 20_000 and contender != "tierwise endpoint":  # … and the peers send it all
            assert s["recall_verbatim"] == 1.0 and s["vs_full"] == pytest.approx(1.0, abs=0.1)
        if contender.startswith("tierwise"):
            assert s["pack_ms_p50"] is not None and s["pack_ms_p95"] >= s["pack_ms_p50"]
    assert summary[(20_000, "tierwise endpoint")]["chats_mean"] == 1
    for contender in ("tierwise chat", "tierwise endpoint"):
        tight = summary[(700, contender)]
        assert tight["failed_steps"] == steps - tight["requests"]
        assert tight["an_error"] is None or "700" in tight["an_error"]
    assert summary[(700, "trim_messages")]["max_request"] <= 700
    body = json.loads(out.read_text())
    assert body["trajectories"] == ["mini__synthetic"] and len(body["rows"]) == 2 * len(CONTENDERS)
    timed = [r for r in body["rows"] if r["contender"].startswith("tierwise")]
    assert all(r["packs_timed"] == r["requests"] and "pack_ms" not in r for r in timed)
    md = out.with_suffix(".md").read_text()
    assert "| **700** | **tierwise chat** |" in md and "steps that get a request" in md


def test_cli_errors_are_one_line(tmp_path: Path) -> None:
    missing = RUNNER.invoke(app, ["bench", "agents", "--data", str(tmp_path / "nope")])
    assert missing.exit_code == 2 and missing.output.startswith("error: ") and "pass --data" in missing.output
    data = write_data(tmp_path)
    unknown = RUNNER.invoke(app, ["bench", "agents", "--data", str(data), "--contenders", "everything"])
    assert unknown.exit_code == 2 and "--contenders takes" in unknown.output
    bad = RUNNER.invoke(app, ["bench", "agents", "--data", str(data), "--budgets", "8k"])
    assert bad.exit_code == 2 and "--budgets" in bad.output
    (data / "broken.json").write_text('{"turns": []}', encoding="utf-8")
    with pytest.raises(Exception, match="is not a trajectory"):
        load_trajectories(data)


def test_cli_names_the_extra_when_langchain_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "langchain_core", None)  # import fails as if not installed
    result = RUNNER.invoke(app, ["bench", "agents", "--data", str(write_data(tmp_path))])
    assert result.exit_code == 2 and "pip install -e '.[bench]'" in result.output


def test_cli_runs_a_subset(tmp_path: Path) -> None:
    out = tmp_path / "agents.json"
    result = RUNNER.invoke(
        app,
        [
            "bench",
            "agents",
            "--data",
            str(write_data(tmp_path)),
            "--budgets",
            "3000",
            "--contenders",
            "full history,tierwise chat",
            "--limit",
            "1",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert [s["contender"] for s in json.loads(out.read_text())["summary"]] == [
        "full history",
        "tierwise chat",
    ]


def test_a_step_tierwise_cannot_pack_gets_no_request(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tierwise.bench.agents import Trajectory, tierwise_chat
    from tierwise.budget import Budget
    from tierwise.errors import BudgetError
    from tierwise.memory.persist import ChatMemory

    original, calls = ChatMemory.pack, [0]

    def pack(self: ChatMemory, *args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        if calls[0] == 3:
            raise BudgetError("the budget is 8000", over_by=1000, largest_layer="input")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(ChatMemory, "pack", pack)
    messages = trajectory(4)
    run = tierwise_chat(Trajectory("t", messages), Budget(window=8_000), COUNTER, tmp_path)
    steps = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
    assert [i for i in steps if run.requests[i] is None] == [steps[2]]
    assert run.errors == ["the budget is 8000"]
    assert run.requests[steps[3]] is not None and run.requests[steps[3]].ms is not None
