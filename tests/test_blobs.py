"""Tool-result compression: thresholds, dedup, summaries under their cap, entities, open_blob."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tierwise.errors import InputError
from tierwise.memory.blobs import (
    BlobRef,
    BlobStore,
    CompressedToolResult,
    InMemoryBlobStore,
    UnknownBlobError,
    compress_tool_result,
    extract_entities,
    extract_pointers,
    open_blob,
    summarize_content,
)
from tierwise.memory.scrub import Scrubber
from tierwise.tokens import TokenCounter

COUNTER = TokenCounter()


def tasks_payload(n: int = 200) -> str:
    tasks = [
        {
            "id": f"task_q4_{100 + i}",
            "title": f"Draft Q4 plan part {i}",
            "assignee": "Alice Smith",
            "status": "open",
            "url": f"https://app.example.com/tasks/{i}?token=abc",
        }
        for i in range(n)
    ]
    body = {"tasks": tasks, "total": 240, "has_more": True, "message": "Found 240 tasks for bob@corp.io"}
    return json.dumps(body)


def compressed(content: str, **kwargs: Any) -> CompressedToolResult:
    result = compress_tool_result(
        "tool", content, kwargs.pop("store", InMemoryBlobStore()), COUNTER, **kwargs
    )
    assert isinstance(result, CompressedToolResult)
    return result


# -- thresholds --------------------------------------------------------------------------------------


def test_small_results_pass_through_unchanged() -> None:
    store = InMemoryBlobStore()
    content = '{"ok": true}'
    assert compress_tool_result("t", content, store, COUNTER) is content
    assert len(store) == 0


def test_threshold_is_inclusive() -> None:
    content = "word " * 500
    tokens = COUNTER.count(content)
    store = InMemoryBlobStore()
    assert compress_tool_result("t", content, store, COUNTER, threshold_tokens=tokens) == content
    assert len(store) == 0
    result = compress_tool_result("t", content, store, COUNTER, threshold_tokens=tokens - 1)
    assert isinstance(result, CompressedToolResult)
    assert len(store) == 1


def test_negative_settings_are_rejected() -> None:
    with pytest.raises(InputError, match="0 or more"):
        compress_tool_result("t", "x", InMemoryBlobStore(), COUNTER, threshold_tokens=-1)
    with pytest.raises(InputError, match="0 or more"):
        compress_tool_result("t", "x", InMemoryBlobStore(), COUNTER, summary_tokens=-5)


# -- storage -----------------------------------------------------------------------------------------


def test_dedup_same_content_is_one_blob_with_two_hits() -> None:
    store = InMemoryBlobStore()
    content = tasks_payload()
    first = compress_tool_result("list_tasks", content, store, COUNTER)
    second = compress_tool_result("list_tasks", content, store, COUNTER)
    assert isinstance(first, CompressedToolResult) and isinstance(second, CompressedToolResult)
    assert first == second
    assert len(store) == 1
    digest = hashlib.sha256(content.encode()).hexdigest()
    assert first.blob == BlobRef(digest, len(content.encode()), "application/json")
    assert store.hits(digest) == 2
    record = store.record(digest)
    assert record is not None and record.summary == first.summary and record.entities == first.entities
    assert store.get(digest) == content.encode()
    assert digest in store and "0" * 64 not in store and store.hits("0" * 64) == 0


def test_in_memory_store_range_reads_and_errors() -> None:
    store: BlobStore = InMemoryBlobStore()
    ref = store.put(b"0123456789", mime="text/plain", summary="digits", entities=())
    assert ref.size == 10 and ref.mime == "text/plain"
    assert store.get(ref.sha256, 2, 5) == b"234"
    assert store.get(ref.sha256, None, 3) == b"012"
    assert store.get(ref.sha256, 8) == b"89"
    assert store.get(ref.sha256, 8, 100) == b"89"
    assert store.get(ref.sha256, 20) == b""
    with pytest.raises(UnknownBlobError):
        store.get("f" * 64)
    with pytest.raises(InputError, match="0 or more"):
        store.get(ref.sha256, -1)
    with pytest.raises(InputError, match="after end"):
        store.get(ref.sha256, 5, 2)


def test_text_results_are_stored_as_text_plain() -> None:
    result = compressed("Line one. " * 300, threshold_tokens=10)
    assert result.blob.mime.startswith("text/plain")


# -- summary, entities, pointers, render -----------------------------------------------------------


def test_json_summary_describes_structure() -> None:
    summary = summarize_content(tasks_payload(), COUNTER, max_tokens=200)
    assert summary.startswith("JSON object, 4 keys: tasks (200 items), total, has_more, message.")
    assert "message: Found 240 tasks for bob@corp.io; total: 240; has_more: true." in summary
    assert "First: Draft Q4 plan part 0 (task_q4_100); Draft Q4 plan part 1 (task_q4_101)" in summary
    assert "Item keys: id, title, assignee, status, url." in summary


def test_json_summary_finds_nested_lists_and_top_level_lists() -> None:
    nested = json.dumps({"data": {"items": [{"name": "alpha"}, {"name": "beta"}], "meta": {"n": 2}}})
    assert "data.items: 2 items. First: alpha; beta." in summarize_content(nested, COUNTER)
    top = json.dumps([{"id": 7, "subject": "Hello"}, {"id": 8}])
    assert summarize_content(top, COUNTER).startswith("JSON list: 2 items. First: Hello (7); 8.")


def test_text_summary_is_the_first_sentences() -> None:
    text = "Build failed. Three tests broke.\n" + "Noise line that goes on. " * 400
    summary = summarize_content(text, COUNTER, max_tokens=20)
    assert summary.startswith("2 lines. Build failed. Three tests broke.")
    assert COUNTER.count(summary) <= 20


@pytest.mark.parametrize("cap", [0, 1, 2, 5, 12, 60])
def test_summary_cap_holds_for_huge_json_and_text(cap: int) -> None:
    huge_json = tasks_payload(5000)
    huge_text = "Sentence number one is here. " * 20_000
    no_spaces = "日本語のテキスト" * 2000
    for content in (huge_json, huge_text, no_spaces, "x" * 50_000):
        result = compressed(content, summary_tokens=cap)
        assert COUNTER.count(result.summary) <= cap
        assert len(result.entities) <= 10
        if cap >= 5:
            assert result.summary


def test_scrubber_cleans_summary_and_drops_secret_entities() -> None:
    content = tasks_payload() + " " + json.dumps({"x": "https://admin:hunter2pass@db.corp.io/x"})
    plain = compressed(tasks_payload(), summary_tokens=200)
    assert "bob@corp.io" in plain.summary
    result = compressed(tasks_payload(), summary_tokens=200, scrubber=Scrubber())
    assert "bob@corp.io" not in result.summary and "[email]" in result.summary
    secret = compressed("see https://admin:hunter2pass@db.corp.io/x " * 100, scrubber=Scrubber())
    assert not any("hunter2pass" in e for e in secret.entities)
    assert "hunter2pass" not in secret.summary
    assert content  # the raw blob is stored unscrubbed: open_blob is the way to the original


def test_entities_ids_uuids_paths_urls_names() -> None:
    text = (
        "Task task_q4_101 owned by Ada Lovelace touches src/tierwise/packer.py and ./README.md; "
        "ticket PROJ-42, run 550e8400-e29b-41d4-a716-446655440000, see https://ci.example.com/runs/9?x=1. "
        "The Plan was agreed. Dates 2026-10-13 and 10/13/2026 and and/or are not entities."
    )
    assert extract_entities(text) == (
        "task_q4_101",
        "Ada Lovelace",
        "src/tierwise/packer.py",
        "./README.md",
        "PROJ-42",
        "550e8400-e29b-41d4-a716-446655440000",
        "https://ci.example.com/runs/9",
    )


def test_entities_are_capped_and_diverse() -> None:
    entities = extract_entities(tasks_payload())
    assert len(entities) == 10
    assert entities[:3] == ("task_q4_100", "Alice Smith", "https://app.example.com/tasks/0")
    assert sum(e.startswith("https://") for e in entities) <= 5
    assert extract_entities(tasks_payload(), limit=2) == ("task_q4_100", "Alice Smith")


def test_pointers_from_tracebacks_and_path_lines() -> None:
    log = (
        'Traceback (most recent call last):\n  File "src/app/main.py", line 42, in <module>\n'
        "ValueError: bad\nsee src/app/util.ts:17:3, example.com:8080 and 10:30\n"
    )
    assert extract_pointers(log) == ("src/app/main.py:42", "src/app/util.ts:17")
    result = compressed(log * 40, threshold_tokens=50)
    assert result.pointers == ("src/app/main.py:42", "src/app/util.ts:17")


def test_render_is_compact_and_names_the_full_hash() -> None:
    result = compress_tool_result("list_tasks", tasks_payload(), InMemoryBlobStore(), COUNTER)
    assert isinstance(result, CompressedToolResult)
    text = result.render()
    head = f"[tool result list_tasks · {result.blob.size / 1000:.1f} kB · blob sha256:{result.blob.sha256}"
    assert text.startswith(head + " (open with open_blob)] ")
    assert result.summary in text
    assert "Entities: task_q4_100, Alice Smith" in text
    assert COUNTER.count(text) < 200
    bare = CompressedToolResult(BlobRef("a" * 64, 999, "text/plain"), "", (), ())
    assert bare.render() == f"[tool result · 999 B · blob sha256:{'a' * 64} (open with open_blob)]"
    big = CompressedToolResult(BlobRef("a" * 64, 3_400_000, "text/plain"), "s", (), ("a.py:1",), "t")
    assert big.render().endswith(
        "3.4 MB · blob sha256:" + "a" * 64 + " (open with open_blob)] s Pointers: a.py:1."
    )


chars = st.sampled_from(list('abcxyzABC019 _-./:@?=,;\n"日本🙂é'))
json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(chars, max_size=30),
    st.sampled_from(
        ["task_q4_101", "Ada Lovelace", "src/a.py", "https://x.io/a?b=c", "a@b.io", "日本語 テキスト"]
    ),
)
json_keys = st.sampled_from(
    ["id", "title", "name", "tasks", "items", "total", "has_more", "message", "error", "data", "url", "path"]
) | st.text(chars, max_size=6)
# Tool-result shapes: scalars, lists of records, nested objects holding lists (recursive strategies are
# several times slower to draw and add nothing the summary walks into).
json_item = st.dictionaries(json_keys, json_leaf, max_size=5)
json_values = (
    json_leaf
    | st.lists(json_leaf | json_item, max_size=8)
    | st.dictionaries(json_keys, json_leaf | st.lists(json_item, max_size=5), max_size=4)
)


@given(
    body=st.dictionaries(json_keys, json_values, max_size=8),
    cap=st.integers(min_value=0, max_value=80),
    scrub=st.booleans(),
)
def test_property_summary_cap_entities_determinism(body: dict[str, Any], cap: int, scrub: bool) -> None:
    content = json.dumps(body, ensure_ascii=False)
    scrubber = Scrubber() if scrub else None
    store = InMemoryBlobStore()
    result = compress_tool_result(
        "t", content, store, COUNTER, threshold_tokens=0, summary_tokens=cap, scrubber=scrubber
    )
    assert isinstance(result, CompressedToolResult)
    assert COUNTER.count(result.summary) <= cap
    assert len(result.entities) <= 10 and len(result.pointers) <= 5
    again = compress_tool_result(
        "t", content, InMemoryBlobStore(), COUNTER, threshold_tokens=0, summary_tokens=cap, scrubber=scrubber
    )
    assert again == result
    assert open_blob(store, result.blob.sha256, max_bytes=10**7) == content


# -- open_blob ---------------------------------------------------------------------------------------


@pytest.fixture
def stored() -> tuple[InMemoryBlobStore, str, str]:
    store = InMemoryBlobStore()
    text = "".join(f"line {i}: héllo wörld ✓\n" for i in range(2000))
    ref = store.put(text.encode(), mime="text/plain", summary="", entities=())
    return store, ref.sha256, text


def test_open_blob_ranges(stored: tuple[InMemoryBlobStore, str, str]) -> None:
    store, digest, text = stored
    raw = text.encode()
    assert open_blob(store, digest, start=0, end=7) == "line 0:"
    assert open_blob(store, f"sha256:{digest}", start="5", end="7") == "0:"
    assert open_blob(store, f"  'SHA256:{digest.upper()}' ", start=0, end=4) == "line"
    assert open_blob(store, digest, start=len(raw) - 4) == "✓\n"
    assert open_blob(store, digest, start=8, end=10**9, max_bytes=10**8) == raw[8:].decode()
    assert open_blob(store, digest, start=2.0, end=4.0) == "ne"  # type: ignore[arg-type]


def test_open_blob_truncates_at_character_boundaries_and_reads_on(
    stored: tuple[InMemoryBlobStore, str, str],
) -> None:
    store, digest, text = stored
    pieces, start, calls = [], 0, 0
    while True:
        calls += 1
        out = open_blob(store, digest, start=start, max_bytes=1000)
        body, _, note = out.partition("\n[… truncated: ")
        assert "\ufffd" not in body
        pieces.append(body)
        if not note:
            break
        assert note.startswith(f"bytes {start}–")
        start = int(note.split("start=")[1].split(")")[0])
        assert f'open_blob(sha256="{digest}", start={start})' in note
    assert "".join(pieces) == text
    assert calls == len(text.encode()) // 1000 + 1 or calls == len(text.encode()) // 1000 + 2
    capped = open_blob(store, digest, start=0, end=5000, max_bytes=100)
    assert capped.endswith(", end=5000) for the rest]")


def test_open_blob_small_ranges_are_not_marked(stored: tuple[InMemoryBlobStore, str, str]) -> None:
    store, digest, _ = stored
    assert "truncated" not in open_blob(store, digest, start=0, end=1000, max_bytes=1000)


@pytest.mark.parametrize(
    ("sha256", "kwargs", "fragment"),
    [
        ("abc", {}, "is not a blob hash (64 hex digits 0-9a-f, got 3). Copy the 64 hex digits"),
        ("sha256:ab12…ef", {}, "is an abbreviated hash; pass all of it"),
        ("ab12...ef", {}, "is an abbreviated hash"),
        ("z" * 64, {}, "is not a blob hash"),
        ("", {}, "sha256 must be the blob's hash as a string"),
        (None, {}, "sha256 must be the blob's hash as a string (got None)"),
        ("0" * 64, {}, f"no blob sha256:{'0' * 64} is stored. Copy the hash exactly"),
        ("OK", {"start": -5}, "start=-5 is negative. Byte offsets count from 0; omit start to read from the"),
        ("OK", {"end": -1}, "end=-1 is negative. Byte offsets count from 0; omit end to read to the end."),
        ("OK", {"start": 50, "end": 10}, "start=50 is after end=10, so the range is empty (end is"),
        ("OK", {"start": 10, "end": 10}, "start=10 equals end=10, so the range is empty (end is exclusive)."),
        ("OK", {"start": 50, "end": 10}, "Did you mean start=10, end=50?"),
        ("OK", {"start": 10, "end": 10}, "Pass a larger end, e.g. end=1010."),
        ("OK", {"start": "ten"}, "start must be a whole number of bytes (got 'ten'); omit start to read"),
        ("OK", {"end": 1.5}, "end must be a whole number of bytes (got 1.5); omit end to read to the end."),
        ("OK", {"start": True}, "start must be a whole number of bytes (got True)"),
        ("OK", {"start": 10**9}, "start=1000000000 is at or past the end of blob sha256:"),
        ("OK", {"max_bytes": 0}, "max_bytes must be a positive whole number (got 0)"),
    ],
)  # fmt: skip
def test_open_blob_bad_arguments_give_messages(
    stored: tuple[InMemoryBlobStore, str, str], sha256: Any, kwargs: dict[str, Any], fragment: str
) -> None:
    store, digest, _ = stored
    out = open_blob(store, digest if sha256 == "OK" else sha256, **kwargs)
    assert out.startswith("error: ")
    assert fragment in out
    assert "\n" not in out


def test_open_blob_empty_blob() -> None:
    store = InMemoryBlobStore()
    ref = store.put(b"", mime="text/plain", summary="", entities=())
    assert open_blob(store, ref.sha256) == ""


def test_open_blob_reports_store_errors_as_messages() -> None:
    class Picky:
        def put(self, content: bytes, *, mime: str, summary: str, entities: Any) -> BlobRef:
            raise NotImplementedError

        def get(self, sha256: str, start: int | None = None, end: int | None = None) -> bytes:
            raise InputError("the store is read-only today")

    assert open_blob(Picky(), "a" * 64) == "error: the store is read-only today"
