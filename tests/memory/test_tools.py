from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tierwise.memory.blobs import InMemoryBlobStore
from tierwise.memory.engine import Memory
from tierwise.memory.tools import OPEN_BLOB, RECALL_SEGMENTS, call_open_blob, call_recall_segments
from tierwise.tokens import render_tools

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def memory() -> Memory:
    m = Memory()
    for d in range(3):
        for i in range(4):
            m.add(
                {"role": "user", "content": f"day {d} note {i} about topic{d}"},
                at=T0 + timedelta(days=d, minutes=i),
            )
    return m


def test_tool_definitions_render() -> None:
    text = render_tools([RECALL_SEGMENTS, OPEN_BLOB])
    assert "type recall_segments" in text and "type open_blob" in text


def test_recall_segments_handles_what_a_model_invents() -> None:
    m = memory()
    assert "day 0 note 0" in call_recall_segments(m, {"ids": ["S1"], "form": "full"})
    assert "day 1 note" in call_recall_segments(m, {"ids": "S2, S3", "form": "full"})
    assert call_recall_segments(m, {"ids": []}).startswith("recall_segments needs")
    assert call_recall_segments(m, {}).startswith("recall_segments needs")
    assert "unknown form" in call_recall_segments(m, {"ids": ["S1"], "form": "everything"})
    assert "no such segment" in call_recall_segments(m, {"ids": ["S42"]})
    assert "no such segment" in call_recall_segments(m, {"ids": [7]})


def test_open_blob_handles_bad_arguments() -> None:
    store = InMemoryBlobStore()
    ref = store.put(b"hello world", mime="text/plain", summary="", entities=())
    assert call_open_blob(store, {"sha256": f"sha256:{ref.sha256}", "start": 6}) == "world"
    assert call_open_blob(store, {}).startswith("open_blob needs")
    assert call_open_blob(store, {"sha256": ref.sha256, "start": "two"}).startswith('"start" must')
    assert call_open_blob(store, {"sha256": "nope"}).startswith("error:")
