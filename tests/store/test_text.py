"""Text neither backend can keep (NUL, lone surrogates) is stored as U+FFFD, alike on both backends."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tierwise.store import Store, clean_text
from tierwise.store.checks import check_json

R = "\ufffd"


@pytest.fixture
def alice(store: Store) -> str:
    return store.create_user("Alice").id


@pytest.fixture
def chat(store: Store, alice: str) -> str:
    return store.create_chat(alice, title="Plans").id


def test_clean_text_replaces_only_what_cannot_be_stored() -> None:
    assert clean_text("a\x00b") == f"a{R}b"
    assert clean_text("x\ud800y\udfffz") == f"x{R}y{R}z"
    assert clean_text("\ud83d\ude00") == "😀"  # a pair split in halves is its character
    assert clean_text("\ud800\ud800\udc00") == f"{R}\U00010000"
    plain = "café 日本 😀 \\u0000 text"
    assert clean_text(plain) is plain
    value = {"k": ["x", 1, None, {"n": 2.5}]}
    assert check_json("v", value) is value  # nothing to clean: the value itself
    assert check_json("v", {"a\x00": ["\ud800", ("t\x00",)]}) == {f"a{R}": [R, [f"t{R}"]]}


@given(st.text())
def test_cleaned_text_is_always_utf8_without_nul(text: str) -> None:
    cleaned = clean_text(text)
    assert "\x00" not in cleaned
    cleaned.encode("utf-8")  # never raises
    if "\x00" not in text:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return
        assert cleaned == text


def test_nul_and_lone_surrogates_in_messages_are_stored_as_replacement(
    store: Store, alice: str, chat: str
) -> None:
    call = {"id": "call\x001", "type": "function", "function": {"name": "f", "arguments": '{"q": "a\x00"}'}}
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "hello\x00world"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call\x001", "content": "BALANCE=\x00100"},
        {"role": "user", "content": "lone \ud800 surrogate", "name": "n\udc00"},
        {"role": "user", "content": [{"type": "text", "text": "part\x00 \ud83d\ude00"}], "x\x00": "\ud800"},
    ]
    stored = [store.add_message(alice, chat, messages[0], token_count=3)]
    stored += store.add_messages(alice, chat, messages[1:3], token_counts=[5, 4])
    stored.append(store.add_message(alice, chat, messages[3], token_count=4, metadata={"m": "\x00"}))
    stored.append(store.add_message(alice, chat, messages[4], token_count=4, tool_results=["r\x00"]))
    listed = store.list_messages(alice, chat)
    assert listed == stored  # what the writes returned is what was stored
    assert [m.content for m in listed] == [
        f"hello{R}world",
        None,
        f"BALANCE={R}100",
        f"lone {R} surrogate",
        f"part{R} 😀",
    ]
    assert listed[1].tool_calls == [
        {"id": f"call{R}1", "type": "function", "function": {"name": "f", "arguments": f'{{"q": "a{R}"}}'}}
    ]
    assert listed[2].tool_call_id == f"call{R}1"  # cleaned alike: still the call's result
    assert listed[3].name == f"n{R}" and listed[3].metadata == {"m": R}
    assert listed[4].message == {
        "role": "user",
        "content": [{"type": "text", "text": f"part{R} 😀"}],
        f"x{R}": R,
    }
    assert listed[4].tool_results == [f"r{R}"]
    # a later write, and a read, still work
    assert store.add_message(alice, chat, {"role": "user", "content": "next"}, token_count=1).seq == 5
    assert store.get_message(alice, chat, 3).content == f"lone {R} surrogate"
    assert store.get_chat(alice, chat).message_count == 6


def test_tool_calls_segments_blobs_audit_and_chats_are_cleaned_alike(
    store: Store, alice: str, chat: str
) -> None:
    message = store.add_message(alice, chat, {"role": "assistant", "content": "ok"}, token_count=1)
    call = store.add_tool_call(
        alice, chat, message.id, "look\x00up", {"q": "\ud800"}, result={"content": "x\x00y"}, error="e\x00"
    )
    (listed,) = store.list_tool_calls(alice, chat)
    assert listed == call
    assert (listed.tool_name, listed.arguments, listed.result, listed.error) == (
        f"look{R}up",
        {"q": R},
        {"content": f"x{R}y"},
        f"e{R}",
    )
    segment = store.save_segment(
        alice,
        chat,
        "S1",
        seq=0,
        first_seq=0,
        last_seq=0,
        header="h\x00",
        summary="s\ud800",
        entities=["e\x00"],
    )
    assert store.list_segments(alice, chat) == [segment]
    assert (segment.header, segment.summary, segment.entities) == (f"h{R}", f"s{R}", [f"e{R}"])
    ref = store.put_blob(alice, b"raw \x00 bytes stay", summary="sum\x00")
    assert store.get_blob(alice, ref.sha256) == b"raw \x00 bytes stay"  # bytes are not text
    assert store.blob_info(alice, ref.sha256).summary == f"sum{R}"
    entry = store.audit(alice, "note", chat_id=chat, details={"said": "\x00\ud800"})
    assert store.list_audit(alice, event="note") == [entry]
    assert entry.details == {"said": R + R}
    renamed = store.update_chat(
        alice, chat, title="t\x00", conversation_summary="c\ud800", key_decisions=["\x00"]
    )
    assert (renamed.title, renamed.conversation_summary, renamed.key_decisions) == (f"t{R}", f"c{R}", [R])
    assert store.get_chat(alice, chat) == renamed
    other = store.create_chat(alice, title="\x00", entity_id="key\x00")
    assert store.list_chats(alice, entity_id=f"key{R}") == [store.get_chat(alice, other.id)]
