"""Memory packs are bit-for-bit the same in every process, whatever ``PYTHONHASHSEED`` is.

Seed 003 promises deterministic packs; a set's iteration order (or a tie broken by it) differs from
one process to the next, so the check has to run the same conversation in separate interpreters.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from tierwise import TokenCounter
from tierwise.memory.segments import Segmenter, make_trio
from tierwise.memory.turns import Turn

# A conversation long enough for every memory layer (narrative, headers, summaries, retrieved turns)
# with tool calls whose large results become blobs, packed every few turns at a small budget.
SCRIPT = r"""
import json
from datetime import UTC, datetime, timedelta

from tierwise import Budget
from tierwise.bench.synthetic import synthetic_history
from tierwise.memory.assemble import pack_turn
from tierwise.memory.blobs import InMemoryBlobStore
from tierwise.memory.engine import Memory

memory = Memory(blobs=InMemoryBlobStore())
budget = Budget(window=2500)
at = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
packs, kinds = [], set()
for i, message in enumerate(synthetic_history(400)[1:]):
    at += timedelta(hours=20) if i % 60 == 0 else timedelta(minutes=2)
    if message["role"] == "user" and i % 7 == 0:
        pack = pack_turn(memory, budget, [message], system="Be brief.")
        packs.append({"checksum": pack.report.checksum, "messages": pack.messages})
        kinds.update(layer.kind for layer in pack.report.layers if layer.status != "dropped")
    memory.add(message, at=at, speaker="Maya" if message["role"] == "user" else None)
headers = [segment.header for segment in memory.segments]
print(json.dumps({"kinds": sorted(kinds), "headers": headers, "packs": packs}, sort_keys=True))
"""

SEEDS = ("1", "2", "3")


def _run(seed: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    return subprocess.Popen(
        [sys.executable, "-c", SCRIPT], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def test_same_conversation_gives_the_same_packs_under_different_hash_seeds() -> None:
    runs = {seed: _run(seed) for seed in SEEDS}  # in parallel: each takes about a second
    results: dict[str, dict[str, Any]] = {}
    for seed, proc in runs.items():
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, f"PYTHONHASHSEED={seed} failed:\n{err}"
        results[seed] = json.loads(out)
    first = results[SEEDS[0]]
    # The packs carry every memory layer, so a hash-ordered header or summary would show.
    assert {"narrative", "headers", "summaries", "retrieved", "history"} <= set(first["kinds"])
    assert len(first["packs"]) >= 10 and all(first["headers"])
    for seed in SEEDS[1:]:
        other = results[seed]
        assert other["headers"] == first["headers"], f"headers differ under PYTHONHASHSEED={seed}"
        assert [p["checksum"] for p in other["packs"]] == [p["checksum"] for p in first["packs"]]
        assert other["packs"] == first["packs"]


def test_segment_words_keep_first_occurrence_order_so_topic_ties_do_not_follow_hashes() -> None:
    segmenter = Segmenter()
    turn = Turn("m0", 0, "user", "zebra quartz lantern maple orbit quartz zebra lantern maple orbit")
    segment, _ = segmenter.add(turn, 20)
    assert list(segment.words) == ["zebra", "quartz", "lantern", "maple", "orbit"]
    make_trio(segment, [turn], TokenCounter(), summarize=False)
    # "lantern maple orbit" is said twice, the other phrases once; then ties go to the first said.
    assert segment.topic == "lantern maple orbit, zebra"
