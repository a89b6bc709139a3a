import asyncio
import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from tierwise.bench import engine as bench
from tierwise.providers.base import ModelRequest, ModelResponse, Usage
from tierwise.store import Store

PHASES = {"context", "store_writes", "store_reads", "tools", "rest"}
STATS = {"p50_ms", "p95_ms", "p99_ms", "mean_ms", "max_ms", "runs"}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path, str]:
    out = tmp_path_factory.mktemp("bench") / "results" / "engine.json"
    console = Console(file=StringIO(), width=200)
    body = bench.run(sizes=(20,), turns=3, out=out, console=console, model_delay_s=0.005)
    printed = console.file.getvalue()  # type: ignore[attr-defined]
    return body, out, printed


def test_result_structure(tiny: tuple[dict[str, Any], Path, str]) -> None:
    body, _, printed = tiny
    assert body["turns"] == 3 and body["encoding"] == "o200k_base" and body["cpu_count"]
    assert body["budget"] == {"window": 16_000, "reserve": 1_000, "available": 15_000}
    assert body["target"] == {"size": 200, "p95_ms": 15.0}
    [row] = body["results"]
    assert row["size"] == 20 and row["chats"] >= 1 and row["rounds_per_chat"] >= 1
    low, high = row["messages_range"]
    assert 20 <= low <= high
    assert set(row["first_turn"]) == STATS
    for shape in ("answer", "tool"):
        result = row[shape]
        assert set(result["overhead"]) == STATS and result["overhead"]["runs"] == 3
        assert set(result["phases_mean_ms"]) == PHASES and set(result["phases_p50_ms"]) == PHASES
        assert result["compactions"] >= 0
    assert "overhead per turn" in printed and "answer" in printed and "tool" in printed


def test_overhead_is_positive_and_excludes_the_model(tiny: tuple[dict[str, Any], Path, str]) -> None:
    [row] = tiny[0]["results"]
    for shape, calls in (("answer", 1), ("tool", 2)):
        result = row[shape]
        overhead, wall = result["overhead"], result["wall"]
        assert overhead["p50_ms"] > 0 and overhead["mean_ms"] > 0
        assert result["model_mean_ms"] >= calls * 5  # the fake model's sleep is counted as model time …
        # … and taken out: the whole turn is the engine's time to done, the model's, and what follows done
        after = result["after_done"]["mean_ms"]
        assert after >= 0
        assert wall["mean_ms"] == pytest.approx(
            overhead["mean_ms"] + result["model_mean_ms"] + after, rel=1e-6
        )
        phases = result["phases_mean_ms"]
        assert phases["context"] > 0 and phases["store_writes"] > 0
        assert sum(phases.values()) == pytest.approx(overhead["mean_ms"], rel=1e-6)
    assert row["answer"]["phases_mean_ms"]["tools"] == 0
    assert row["tool"]["phases_mean_ms"]["tools"] > 0


def test_peer_is_measured(tiny: tuple[dict[str, Any], Path, str]) -> None:
    body, _, _ = tiny
    [row] = body["results"]
    assert body["langchain_core"]  # the bench extra is installed for the tests
    for shape in ("answer", "tool"):
        result = row[shape]
        assert result["peer"]["runs"] == 3 and result["peer"]["p50_ms"] > 0
        assert result["ratio_p50"] == pytest.approx(result["overhead"]["p50_ms"] / result["peer"]["p50_ms"])


def test_files_are_written(tiny: tuple[dict[str, Any], Path, str]) -> None:
    body, out, _ = tiny
    assert json.loads(out.read_text()) == body
    md = out.with_suffix(".md").read_text()
    assert "| messages | turn |" in md and "| answer |" in md and "| tool |" in md
    assert "First turn after a chat is loaded" in md


def test_timed_model_counts_only_its_own_time() -> None:
    model = bench.TimedModel(delay_s=0.01)
    model.replies.append(ModelResponse(text="Friday at ten works.", usage=Usage(10, 5, 15)))

    async def consume() -> str:
        text = []
        async for event in model.stream(ModelRequest([{"role": "user", "content": "When?"}])):
            await asyncio.sleep(0.01)  # the consumer's time is not the model's
            text.append(getattr(event, "text", ""))
        return "".join(text)

    assert asyncio.run(consume()) == "Friday at ten works."
    assert 10e6 <= model.inside_ns < 40e6 and model.calls == 1


def test_store_clock_times_outer_calls_once() -> None:
    store = Store.open("sqlite://")
    clock = bench.StoreClock(store)
    user = store.create_user("ada")
    chat = store.create_chat(user.id)
    store.rename_chat(user.id, chat.id, "Plans")  # calls update_chat inside: one call timed
    store.get_chat(user.id, chat.id)
    calls = clock.take()
    assert [(c.name, c.write) for c in calls] == [
        ("create_user", True),
        ("create_chat", True),
        ("rename_chat", True),
        ("get_chat", False),
    ]
    assert all(c.ns > 0 for c in calls) and clock.take() == []
    store.close()


def test_bad_arguments() -> None:
    with pytest.raises(ValueError):
        bench.run(sizes=(20,), turns=0)


def test_restart_run_times_a_long_chats_first_turn_beside_another_client(tmp_path: Path) -> None:
    from tierwise.bench import restart

    out = tmp_path / "results" / "restart.json"
    console = Console(file=StringIO(), width=200)
    past = restart.QUESTIONS[1]  # the one that opens memory's gate: turns retrieved
    body = restart.run(
        messages=120,
        usage_rows=50,
        repeat=1,
        poll_ms=20,
        out=out,
        console=console,
        questions=(past,),
        before_s=0.5,
    )
    assert body["messages"] == 120 and body["usage_rows"] == 50 and body["repeat"] == 1
    assert body["target"] == {"first_token_s": 1.0, "others_p99_ms": 100.0}
    assert [(row["trios"], row["question"]) for row in body["results"]] == [(False, past), (True, past)]
    for row in body["results"]:
        turn = row["first_turn"]
        assert row["runs"] == [turn]
        assert turn["reason"] == "answer"
        assert 0 < turn["first_token_s"] <= turn["done_s"] <= turn["stream_end_s"]
        assert row["others_failed"] == 0
        assert row["others"]["before"]["requests"] > 3  # the other client ran all along
        for window in row["others"].values():
            if window is not None:
                assert 0 < window["p50_ms"] <= window["p99_ms"] <= window["max_ms"]
    assert json.loads(out.read_text()) == body
    md = out.with_suffix(".md").read_text()
    assert "| without trios (imported) |" in md and "| with trios |" in md


def test_restart_run_bad_arguments() -> None:
    from tierwise.bench import restart

    with pytest.raises(ValueError):
        restart.run(messages=1)
