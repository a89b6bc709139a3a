"""tierwise bench cache: every contender builds a request before every model call, the same calls."""

from __future__ import annotations

import io
import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from tierwise.bench import cache
from tierwise.bench.cache import (
    CONTENDER_FUNCS,
    CONTENDERS,
    Chat,
    locomo_chats,
    measure,
    model_calls,
    productivity_chat,
    run_cache_benchmark,
)
from tierwise.budget import Budget
from tierwise.replay import replay
from tierwise.tokens import TokenCounter

COUNTER = TokenCounter()
CHAT = productivity_chat(120)  # tool calls, several results in a turn; ends on a user message
PEERS = [name for name in CONTENDERS if name != "tierwise"]
LINES = [
    "Work has been hectic with quarterly reports and endless meetings all week long.",
    "The weather here keeps switching between rain and sunshine every other hour.",
    "I reorganised the garage shelves and found old boxes of letters from school.",
    "We tried a new recipe for lentil soup and it turned out surprisingly tasty.",
]


def locomo_file(tmp_path: Path) -> Path:
    """Two sessions; the second begins with speaker B, so two assistant messages follow each other."""

    def session(n: int, first: str) -> list[dict[str, Any]]:
        other = "Bob" if first == "Ann" else "Ann"
        return [
            {
                "speaker": first if i % 2 == 0 else other,
                "dia_id": f"D{n}:{i + 1}",
                "text": f"{LINES[i % 4]} ({i})",
            }
            for i in range(30)
        ]

    sample = {
        "sample_id": "conv-x",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bob",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": session(1, "Ann"),
            "session_2_date_time": "10:37 am on 27 June, 2023",
            "session_2": session(2, "Bob"),
        },
        "qa": [],
    }
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([sample]), encoding="utf-8")
    return path


def test_the_calls_are_replays_every_assistant_message_and_the_unanswered_end() -> None:
    messages = CHAT.messages
    calls = model_calls(CHAT)
    assistants = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
    assert calls == [*assistants, len(messages)]  # the chat ends on a user message: one call answers it
    assert any(messages[i - 1]["role"] == "tool" for i in assistants)  # calls within a turn too
    turns: list[int] = []
    replay(
        messages,
        CHAT.times,
        Budget(window=2000),
        counter=COUNTER,
        tools=CHAT.tools,
        on_pack=lambda turn, pack: turns.append(turn),
    )
    assert turns == calls
    answered = Chat("answered", messages[:-1], CHAT.times[:-1], CHAT.tools)
    assert model_calls(answered) == assistants


@pytest.mark.parametrize("window", [1500, 4000])
def test_each_peer_sends_the_newest_messages_before_the_call_within_the_budget(window: int) -> None:
    budget = Budget(window=window)
    messages = CHAT.messages
    for name in PEERS:
        requests = list(CONTENDER_FUNCS[name](CHAT, budget, COUNTER))
        assert [call for call, _, _ in requests] == model_calls(CHAT), name
        for call, sent, tools in requests:
            assert tools == CHAT.tools
            if name == "full history":
                assert sent == messages[:call]
                continue
            assert sent[0] == messages[0]  # the system prompt, then a run of messages ending at the call
            kept = sent[1:]
            assert kept == messages[call - len(kept) : call], (name, call)
            assert COUNTER.count_messages(sent) + COUNTER.count_tools(tools) <= budget.available, (name, call)
            if kept:
                assert kept[0]["role"] != "tool"  # never a result without its call
            if name == "trim_messages" and kept:
                assert kept[0]["role"] == "user"


def test_the_stepped_window_moves_only_when_it_overflows() -> None:
    starts = []
    for call, sent, _ in CONTENDER_FUNCS["stepped window"](CHAT, Budget(window=4000), COUNTER):
        starts.append(call - (len(sent) - 1))
    moves = [b for a, b in itertools.pairwise(starts) if b != a]
    assert starts == sorted(starts) and 0 < len(moves) < len(starts) // 3
    assert all(CHAT.messages[s]["role"] == "user" for s in moves)


def test_where_the_chat_fits_tierwise_sends_the_full_history_on_every_call() -> None:
    window = COUNTER.count_messages(CHAT.messages) + 1000
    budget = Budget(window=window)
    results = {name: measure(CONTENDER_FUNCS[name](CHAT, budget, COUNTER), COUNTER) for name in CONTENDERS}
    full = results["full history"]
    for name, res in results.items():  # was 1.24x when tierwise packed every call and the peers every turn
        assert (res.calls, res.sent, res.shared) == (full.calls, full.sent, full.shared), name
    whole = {call: sent for call, sent, _ in cache.full_history(CHAT, budget, COUNTER)}
    for call, sent, _ in cache.tierwise_packs(CHAT, budget, COUNTER):
        assert sent == whole[call]  # the conversation as given, byte for byte


def test_the_benchmark_measures_every_contender_on_the_same_calls(tmp_path: Path) -> None:
    data = locomo_file(tmp_path)
    chat = locomo_chats(data)[0]
    calls = model_calls(chat)
    assert chat.messages[30]["role"] == chat.messages[29]["role"] == "assistant"
    assert 29 in calls and 30 in calls  # a call before each of two answers in a row
    out = tmp_path / "results" / "cache.json"
    printed, told = io.StringIO(), []
    result = run_cache_benchmark(
        data,
        budgets=(700, None),
        productivity=False,
        out=out,
        console=Console(file=printed, width=400),
        progress=told.append,
    )
    assert told == [f"{chat.name} at 700 (1 of 2)", f"{chat.name} at fits (2 of 2)"]  # a long run says where
    assert f"written: {out} and {out.with_suffix('.md')}" in printed.getvalue()
    rows = result["rows"]
    assert len(rows) == 2 * len(CONTENDERS)
    assert {row["packs"] for row in rows} == {len(calls)}
    fits = {row["contender"]: row for row in rows if row["budget"] == "fits"}
    assert fits["tierwise"]["vs_full_10"] == fits["tierwise"]["vs_full_sent"] == 1.0
    assert json.loads(out.read_text())["summary"] == result["summary"]
    assert "| **locomo (1)** | **700** | **tierwise** |" in out.with_suffix(".md").read_text()


def test_a_contender_off_the_calls_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def every_turn(chat: Chat, budget: Budget, counter: TokenCounter) -> Iterator[Any]:
        for i, message in enumerate(chat.messages):  # the old way: one request per user message
            if message["role"] == "user":
                yield i, chat.messages[: i + 1], chat.tools

    monkeypatch.setitem(CONTENDER_FUNCS, "stepped window", every_turn)
    with pytest.raises(RuntimeError, match=r"stepped window built .* not one before each"):
        run_cache_benchmark(
            locomo_file(tmp_path), budgets=(None,), productivity=False, console=Console(file=io.StringIO())
        )


@pytest.mark.parametrize("window", [1500, 4000])
def test_each_wire_reaches_the_prefix_reuse_of_chat_completions(window: int) -> None:
    from tierwise.bench.cache_wires import wire_rows

    chat = productivity_chat(60)  # tool calls and results: function_call items, tool_use blocks
    rows = {
        row["wire"]: row for row in wire_rows(chat, str(window), window, COUNTER, ("responses", "anthropic"))
    }
    assert list(rows) == ["chat", "responses", "anthropic"]
    calls = len(model_calls(chat))
    for wire, row in rows.items():
        assert row["packs"] == calls and row["endpoint_chats"] == 1, wire  # every call continued one chat
        assert 0 < row["prefix_reuse"] < 1
        assert abs(row["vs_chat_points"]) <= 2, (wire, row["prefix_reuse"], rows["chat"]["prefix_reuse"])


def test_the_wire_replay_is_a_section_of_the_results(tmp_path: Path) -> None:
    out = tmp_path / "cache.json"
    result = run_cache_benchmark(
        locomo_file(tmp_path),
        budgets=(700,),
        productivity=False,
        out=out,
        console=Console(file=io.StringIO()),
        wires=("anthropic",),
    )
    assert [row["contender"] for row in result["rows"]] == list(CONTENDERS)  # the existing rows, as before
    summary = result["wires"]["summary"]
    assert [(s["chats"], s["wire"]) for s in summary] == [("locomo", "chat"), ("locomo", "anthropic")]
    assert abs(summary[1]["vs_chat_points"]) <= 2
    assert json.loads(out.read_text())["wires"] == result["wires"]
    assert "| locomo (1) | 700 | /v1/messages |" in out.with_suffix(".md").read_text()
