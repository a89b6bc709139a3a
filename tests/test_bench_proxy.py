"""The proxy load benchmark runs, bounded, and measures every request it made."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from tierwise.bench.proxy import Pace, run


def test_a_small_load_run(tmp_path: Path) -> None:
    result = run(
        clients=3,
        requests=2,
        seconds=30,
        paces={"tiny": Pace(first_ms=1, chunks=3, gap_ms=1)},
        out=tmp_path / "p.json",
        console=Console(quiet=True),
    )
    for server in ("tierwise", "passthrough"):
        figures = result["runs"]["tiny"][server]
        assert figures["requests"] == 6 and figures["failed"] == 0 and figures["requests_per_s"] > 0
        for kind in ("added_ms", "added_ms_new_session", "added_ms_continuing", "added_ms_server_side"):
            assert 0 <= figures[kind]["p50"] <= figures[kind]["p99"] <= figures[kind]["max"]
    assert (tmp_path / "p.json").exists()


def test_a_hostile_neighbour_run_reports_the_others_beside_it(tmp_path: Path) -> None:
    result = run(
        clients=2,
        requests=8,
        seconds=30,
        paces={"slow": Pace(first_ms=150, chunks=3, gap_ms=5)},
        console=Console(quiet=True),
        hostile=3_001,
    )
    assert result["hostile_messages"] == 3_001
    for server in ("tierwise", "passthrough"):
        figures = result["runs"]["slow"][server]
        assert figures["failed"] == 0 and figures["hostile_seconds"] > 0
        beside = figures["added_ms_beside_hostile"]
        assert beside is not None and 0 <= beside["p50"] <= beside["p99"]


def test_a_small_run_through_each_wire_beside_the_same_peer(tmp_path: Path) -> None:
    result = run(
        clients=2,
        requests=2,
        seconds=30,
        paces={"tiny": Pace(first_ms=1, chunks=3, gap_ms=1)},
        console=Console(quiet=True),
        wires=("chat", "responses", "anthropic"),
    )
    runs = result["runs"]["tiny"]
    assert set(runs) == {"pace", "passthrough", "tierwise", "tierwise responses", "tierwise anthropic"}
    for server in ("tierwise", "tierwise responses", "tierwise anthropic"):
        assert runs[server]["requests"] == 4 and runs[server]["failed"] == 0, server
    beside = result["wires"]["tiny"]
    assert [w["path"] for w in beside.values()] == ["/v1/chat/completions", "/v1/responses", "/v1/messages"]
    for w in beside.values():
        assert w["passthrough_p99_ms"] == runs["passthrough"]["added_ms"]["p99"]
        assert w["p99_over_passthrough_ms"] == round(w["added_p99_ms"] - w["passthrough_p99_ms"], 2)


def test_a_small_run_through_the_web_chat_api(tmp_path: Path) -> None:
    """``--wire api``: each client makes a chat, then streams its turns from the reference assistant."""
    result = run(
        clients=2,
        requests=3,
        seconds=30,
        paces={"slow": Pace(first_ms=400, chunks=2, gap_ms=1)},
        console=Console(quiet=True),
        wires=("chat", "api"),
    )
    runs = result["runs"]["slow"]
    assert runs["tierwise api"]["requests"] == 6 and runs["tierwise api"]["failed"] == 0
    added = runs["tierwise api"]["added_ms"]
    # The upstream's own 400 ms was found for each turn and taken off (not counted as tierwise's).
    assert 0 <= added["p50"] < 300 and added["p50"] <= added["p99"]
    assert result["wires"]["slow"]["api"]["path"] == "/api/chats/{chat}/messages"
