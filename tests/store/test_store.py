"""The store on both backends: every test runs on SQLite and on a throwaway PostgreSQL server."""

from __future__ import annotations

import hashlib
import threading
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
import sqlalchemy as sa

from tierwise.errors import InputError
from tierwise.store import (
    NotFoundError,
    Store,
    models,
)

UNICODE = {
    "emoji": "🧠✨ café",
    "cjk": "日本語のテキスト",
    "rtl": "שלום עולם",
    "escapes": 'quote " backslash \\ tab \t line\u2028sep',
    "nested": [{"ключ": ["значение", 1, 2.5, True, None]}],
}
IST = timezone(timedelta(hours=5, minutes=30))
TABLES = {
    "users",
    "chats",
    "chat_messages",
    "chat_tool_calls",
    "segments",
    "blobs",
    "context_snapshots",
    "audit_log",
}


def _tool_turn(call_id: str = "call_1") -> list[dict[str, Any]]:
    call = {"id": call_id, "type": "function", "function": {"name": "search", "arguments": '{"q": "x"}'}}
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id, "content": "found 3 results"},
    ]


@pytest.fixture
def alice(store: Store) -> str:
    return store.create_user("Alice").id


@pytest.fixture
def bob(store: Store) -> str:
    return store.create_user("Bob").id


@pytest.fixture
def chat(store: Store, alice: str) -> str:
    return store.create_chat(alice, title="Plans").id


# --- migrations ----------------------------------------------------------------------------------


def test_users(store: Store) -> None:
    user = store.create_user("Zoë 🦊", user_id="u-1")
    assert store.get_user("u-1") == user
    assert user.created_at.tzinfo is UTC
    with pytest.raises(InputError, match="already exists"):
        store.create_user("again", user_id="u-1")
    with pytest.raises(InputError, match="1 to 36 characters"):
        store.create_user("long", user_id="u" * 37)
    with pytest.raises(NotFoundError, match="user 'nobody' not found"):
        store.get_user("nobody")
    with pytest.raises(NotFoundError):
        store.create_chat("nobody")


def test_chat_defaults_get_and_list(store: Store, alice: str) -> None:
    first = store.create_chat(alice)
    assert (first.title, first.context_type, first.entity_id, first.token_limit) == (
        "New Chat",
        "global",
        None,
        None,  # no budget of its own: the engine's (migration 0007)
    )
    assert (first.key_decisions, first.created_entities, first.narrative) == ([], [], None)
    assert (first.message_count, first.messages_archived, first.total_tokens_used) == (0, 0, 0)
    second = store.create_chat(alice, context_type="project", entity_id="p-1", title="Roadmap")
    assert store.get_chat(alice, first.id) == first
    assert [c.id for c in store.list_chats(alice)] == [second.id, first.id]  # newest first
    assert [c.id for c in store.list_chats(alice, context_type="project")] == [second.id]
    assert [c.id for c in store.list_chats(alice, entity_id="p-1")] == [second.id]
    assert len(store.list_chats(alice, limit=1)) == 1
    store.add_message(alice, first.id, {"role": "user", "content": "hi"}, token_count=1)
    assert [c.id for c in store.list_chats(alice)] == [first.id, second.id]  # activity bumps it


def test_a_chat_created_with_an_id_of_the_callers(store: Store, alice: str) -> None:
    chosen = models.new_id()
    made = store.create_chat(alice, id=chosen, title="Mine")
    assert store.get_chat(alice, chosen) == made
    with pytest.raises(InputError, match="is taken"):
        store.create_chat(alice, id=chosen)
    with pytest.raises(NotFoundError):
        store.create_chat("nobody")
    assert [c.id for c in store.list_chats(alice)] == [chosen]


def test_rename_and_update_chat(store: Store, alice: str, chat: str) -> None:
    generated = store.update_chat(alice, chat, title="Auto title", title_generated=True)
    assert (generated.title, generated.title_generated) == ("Auto title", True)
    renamed = store.rename_chat(alice, chat, "Mes projets ✈️")
    assert (renamed.title, renamed.title_generated) == ("Mes projets ✈️", False)
    compressed = datetime(2025, 3, 1, 9, 30, tzinfo=IST)
    updated = store.update_chat(
        alice,
        chat,
        conversation_summary="Résumé — 要約",
        key_decisions=["use PostgreSQL", "ship 🚢"],
        created_entities=[{"type": "task", "id": "t-1"}],
        total_tokens_used=1234,
        token_limit=8000,
        last_compression_at=compressed,
        narrative=UNICODE,
        context_type="task",
        entity_id="t-1",
    )
    again = store.get_chat(alice, chat)
    assert again == updated
    assert again.narrative == UNICODE
    assert again.key_decisions == ["use PostgreSQL", "ship 🚢"]
    assert again.last_compression_at == compressed and again.last_compression_at.tzinfo is UTC
    assert again.updated_at >= again.created_at
    assert store.update_chat(alice, chat, narrative=None).narrative is None
    with pytest.raises(InputError, match="messages_archived"):
        store.update_chat(alice, chat, messages_archived=3)
    with pytest.raises(InputError, match="timezone-aware"):
        store.update_chat(alice, chat, last_compression_at=datetime(2025, 1, 1))
    with pytest.raises(InputError, match="key_decisions must be a list"):
        store.update_chat(alice, chat, key_decisions="one")
    with pytest.raises(InputError, match="JSON"):
        store.update_chat(alice, chat, narrative={"x": float("nan")})
    with pytest.raises(InputError, match="title must be a string"):
        store.rename_chat(alice, chat, None)  # type: ignore[arg-type]


def test_delete_chat_removes_its_rows_and_blobs_but_keeps_audit(store: Store, alice: str, chat: str) -> None:
    other = store.create_chat(alice)
    assistant, _ = (store.add_message(alice, chat, m, token_count=5) for m in _tool_turn())
    ref = store.put_blob(alice, b"long tool output", "text/plain")
    store.add_tool_call(alice, chat, assistant.id, "search", {"q": "x"}, blob_sha256=ref.sha256)
    store.save_segment(alice, chat, "s1", seq=0, first_seq=0, last_seq=1)
    store.save_snapshot(
        alice, chat, tier_breakdown={}, total_tokens=1, budget_percent=1.0, pruning_strategy={}
    )
    store.add_message(alice, other.id, {"role": "user", "content": "keep me"}, token_count=2)
    store.audit(alice, "chat.deleted", chat_id=chat)

    store.delete_chat(alice, chat)

    with pytest.raises(NotFoundError):
        store.get_chat(alice, chat)
    with pytest.raises(NotFoundError):
        store.delete_chat(alice, chat)
    with store.engine.connect() as connection:
        for table, column in [
            ("chat_messages", "chat_id"),
            ("chat_tool_calls", "chat_id"),
            ("segments", "chat_id"),
            ("context_snapshots", "session_id"),
        ]:
            count = connection.execute(
                sa.text(f"SELECT count(*) FROM {table} WHERE {column} = :c"), {"c": chat}
            )
            assert count.scalar() == 0, table
    with pytest.raises(NotFoundError):  # only the deleted chat used it (issue 32: delete means gone)
        store.get_blob(alice, ref.sha256)
    assert [e.chat_id for e in store.list_audit(alice)] == [chat]
    assert [m.content for m in store.list_messages(alice, other.id)] == ["keep me"]


# --- messages --------------------------------------------------------------------------------------


def test_messages_round_trip_in_openai_format(store: Store, alice: str, chat: str) -> None:
    parts = [{"type": "text", "text": "Look at this"}, {"type": "image_url", "image_url": {"url": "blob:ab"}}]
    sent = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": parts, "name": "alice"},
        *_tool_turn(),
        {
            "role": "assistant",
            "content": UNICODE["cjk"] + UNICODE["emoji"],
            "refusal": None,
            "x_extra": {"a": 1},
        },
    ]
    at = datetime(2024, 5, 7, 13, 56, 30, 123456, tzinfo=IST)
    stored = [
        store.add_message(alice, chat, m, token_count=i + 1, at=at if i == 1 else None, metadata={"i": i})
        for i, m in enumerate(sent)
    ]
    assert [m.seq for m in stored] == [0, 1, 2, 3, 4]
    listed = store.list_messages(alice, chat)
    assert listed == stored
    for original, message in zip(sent, listed, strict=True):
        assert message.message == {"content": None, **original}
    user = listed[1]
    assert (user.content, user.content_parts, user.name) == ("Look at this", parts, "alice")
    assert user.created_at == at and user.created_at.tzinfo is UTC
    assert user.metadata == {"i": 1} and user.token_count == 2
    assert listed[2].tool_calls is not None and listed[3].tool_call_id == "call_1"
    assert not any(m.is_archived or m.is_in_summary or m.segment_id for m in listed)
    assert store.get_message(alice, chat, 3) == listed[3]
    assert store.get_chat(alice, chat).message_count == 5
    assert [m.seq for m in store.list_messages(alice, chat, after_seq=2)] == [3, 4]
    assert [m.seq for m in store.list_messages(alice, chat, after_seq=1, limit=2)] == [2, 3]
    with pytest.raises(NotFoundError):
        store.get_message(alice, chat, 99)


@pytest.mark.parametrize(
    ("message", "kwargs", "error"),
    [
        ({"role": "robot", "content": "x"}, {}, "unknown message role"),
        ({"content": "x"}, {}, "unknown message role"),
        ({"role": "user", "content": 5}, {}, "content must be"),
        ({"role": "user", "content": "x"}, {"at": datetime(2024, 1, 1)}, "timezone-aware"),
        ({"role": "user", "content": "x"}, {"metadata": {"bad": object()}}, "metadata must be JSON"),
        ({"role": "user", "content": "x", "extra": {1, 2}}, {}, "message fields must be JSON"),
        ({"role": "tool", "content": "x", "tool_call_id": 7}, {}, "tool_call_id must be a string"),
    ],
)
def test_bad_messages_are_refused(
    store: Store, alice: str, chat: str, message: dict[str, Any], kwargs: dict[str, Any], error: str
) -> None:
    with pytest.raises(InputError, match=error):
        store.add_message(alice, chat, message, token_count=1, **kwargs)
    with pytest.raises(InputError, match="token_count"):
        store.add_message(alice, chat, {"role": "user", "content": "x"}, token_count=-1)
    assert store.list_messages(alice, chat) == []


def test_seq_is_assigned_atomically_under_concurrent_appends(store: Store, alice: str, chat: str) -> None:
    threads, per_thread = 6, 25
    errors: list[BaseException] = []

    def append(worker: int) -> None:
        try:
            for i in range(per_thread):
                store.add_message(alice, chat, {"role": "user", "content": f"{worker}:{i}"}, token_count=1)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    workers = [threading.Thread(target=append, args=(w,)) for w in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert errors == []
    messages = store.list_messages(alice, chat)
    assert [m.seq for m in messages] == list(range(threads * per_thread))
    for worker in range(threads):  # each thread's messages kept their order
        mine = [m.content for m in messages if m.content and m.content.startswith(f"{worker}:")]
        assert mine == [f"{worker}:{i}" for i in range(per_thread)]
    assert store.get_chat(alice, chat).message_count == threads * per_thread


def test_add_messages_appends_a_history_in_order_all_or_nothing(
    store: Store, alice: str, bob: str, chat: str
) -> None:
    store.add_message(alice, chat, {"role": "user", "content": "before"}, token_count=1)
    history = [*_tool_turn(), {"role": "user", "content": "after the tool"}]
    stored = store.add_messages(alice, chat, history, token_counts=[3] * len(history))
    n = len(history)
    assert [m.seq for m in stored] == list(range(1, n + 1))
    listed = store.list_messages(alice, chat)
    assert [m.message for m in listed] == [{"role": "user", "content": "before"}, *history]
    assert [m.message for m in listed[1:]] == [m.message for m in stored]
    assert store.get_chat(alice, chat).message_count == n + 1
    assert store.add_messages(alice, chat, [], token_counts=[]) == []
    with pytest.raises(NotFoundError):  # another user's chat: nothing stored
        store.add_messages(bob, chat, history, token_counts=[1] * len(history))
    with pytest.raises(InputError, match="token counts"):
        store.add_messages(alice, chat, history, token_counts=[1])
    with pytest.raises(InputError):  # one bad message refuses them all
        store.add_messages(
            alice, chat, [{"role": "user", "content": "ok"}, {"role": "x"}], token_counts=[1, 1]
        )
    assert store.get_chat(alice, chat).message_count == n + 1


def test_archive_never_deletes(store: Store, alice: str, chat: str) -> None:
    for i in range(6):
        store.add_message(alice, chat, {"role": "user", "content": f"m{i}"}, token_count=1)
    assert store.archive_messages(alice, chat, 2) == 3
    assert store.archive_messages(alice, chat, 2) == 0
    assert store.get_chat(alice, chat).messages_archived == 3
    everything = store.list_messages(alice, chat)
    assert [m.is_archived for m in everything] == [True] * 3 + [False] * 3
    assert [m.content for m in store.list_messages(alice, chat, include_archived=False)] == ["m3", "m4", "m5"]
    assert store.archive_messages(alice, chat, 4) == 2
    assert store.get_chat(alice, chat).messages_archived == 5
    assert len(store.list_messages(alice, chat)) == 6
    assert store.add_message(alice, chat, {"role": "user", "content": "m6"}, token_count=1).seq == 6


def test_mark_in_summary(store: Store, alice: str, chat: str) -> None:
    for i in range(5):
        store.add_message(alice, chat, {"role": "user", "content": f"m{i}"}, token_count=1)
    assert store.mark_in_summary(alice, chat, 1, 3) == 3
    assert [m.is_in_summary for m in store.list_messages(alice, chat)] == [False, True, True, True, False]
    assert store.mark_in_summary(alice, chat, 3, 3, in_summary=False) == 1
    assert [m.seq for m in store.list_messages(alice, chat) if m.is_in_summary] == [1, 2]


# --- tool calls ------------------------------------------------------------------------------------


def test_tool_calls(store: Store, alice: str, chat: str) -> None:
    assistant, _ = (store.add_message(alice, chat, m, token_count=5) for m in _tool_turn())
    ref = store.put_blob(alice, b"x" * 10_000, "application/json", summary="10k of x")
    first = store.add_tool_call(
        alice, chat, assistant.id, "search", {"q": "café ☕"}, result={"hits": ["日本"]}, duration_ms=12
    )
    second = store.add_tool_call(
        alice,
        chat,
        assistant.id,
        "fetch",
        {"url": "u"},
        blob_sha256=ref.sha256,
        success=False,
        error="timeout",
        at=datetime(2025, 1, 1, tzinfo=IST),
    )
    assert store.list_tool_calls(alice, chat) == [second, first]  # in time order
    assert store.list_tool_calls(alice, chat, message_id=assistant.id)[1].result == {"hits": ["日本"]}
    assert (second.success, second.error, second.blob_sha256, second.result) == (
        False,
        "timeout",
        ref.sha256,
        None,
    )
    other = store.create_chat(alice)
    with pytest.raises(NotFoundError, match="message"):
        store.add_tool_call(alice, other.id, assistant.id, "search", {})
    with pytest.raises(NotFoundError, match="blob"):
        store.add_tool_call(alice, chat, assistant.id, "search", {}, blob_sha256="0" * 64)


# --- segments --------------------------------------------------------------------------------------


def test_segments_upsert_and_tag_their_messages(store: Store, alice: str, chat: str) -> None:
    for i in range(6):
        store.add_message(alice, chat, {"role": "user", "content": f"m{i}"}, token_count=1)
    start = datetime(2025, 2, 1, 8, tzinfo=IST)
    first = store.save_segment(
        alice,
        chat,
        "seg-a",
        seq=0,
        first_seq=0,
        last_seq=3,
        header="Trip planning ✈️",
        summary="Picked Lisbon; 予算 2k.",
        entities=[{"name": "Lisbon", "type": "place"}],
        topic="travel",
        outcome="decided",
        token_count=42,
        boundary_reason="topic shift",
        started_at=start,
        ended_at=start + timedelta(hours=1),
    )
    store.save_segment(alice, chat, "seg-b", seq=1, first_seq=4, last_seq=5, header="Budget")
    assert [m.segment_id for m in store.list_messages(alice, chat)] == ["seg-a"] * 4 + ["seg-b"] * 2
    assert store.get_segment(alice, chat, "seg-a") == first
    assert first.started_at == start and first.ended_at is not None and first.ended_at.tzinfo is UTC
    assert first.entities == [{"name": "Lisbon", "type": "place"}]

    revised = store.save_segment(alice, chat, "seg-a", seq=0, first_seq=0, last_seq=1, summary="shorter")
    assert revised.created_at == first.created_at and revised.updated_at >= first.updated_at
    assert (revised.summary, revised.header, revised.topic, revised.entities) == ("shorter", "", None, [])
    assert [m.segment_id for m in store.list_messages(alice, chat)] == ["seg-a"] * 2 + [None] * 2 + [
        "seg-b"
    ] * 2
    assert [s.id for s in store.list_segments(alice, chat)] == ["seg-a", "seg-b"]
    # Segment ids are per chat: another chat may reuse one.
    other = store.create_chat(alice)
    store.save_segment(alice, other.id, "seg-a", seq=0, first_seq=0, last_seq=0)
    assert store.get_segment(alice, chat, "seg-a").summary == "shorter"
    with pytest.raises(InputError, match="before first_seq"):
        store.save_segment(alice, chat, "bad", seq=2, first_seq=5, last_seq=4)
    with pytest.raises(NotFoundError, match="segment"):
        store.get_segment(alice, chat, "missing")


# --- blobs -----------------------------------------------------------------------------------------


def test_blobs_are_stored_once_per_user_and_content(store: Store, alice: str, bob: str) -> None:
    content = "résumé 📄 ".encode() * 1000
    ref = store.put_blob(alice, content, "text/plain", entities=["CV"])
    assert ref.sha256 == hashlib.sha256(content).hexdigest() and ref.size == len(content)
    assert store.blob_info(alice, ref.sha256).summary is None
    again = store.put_blob(alice, bytearray(content), "application/octet-stream", summary="a CV")
    assert again == ref  # the first MIME type stays
    info = store.blob_info(alice, ref.sha256)
    assert (info.hits, info.summary, info.entities, info.ref) == (2, "a CV", ["CV"], ref)
    store.put_blob(alice, content, "text/plain", summary="ignored: it has one")
    assert store.blob_info(alice, ref.sha256).summary == "a CV"
    assert store.get_blob(alice, ref.sha256) == content
    with store.engine.connect() as connection:
        assert connection.execute(sa.text("SELECT count(*) FROM blobs")).scalar() == 1
    # Bob storing the same bytes gets his own row; Alice's hits are untouched.
    store.put_blob(bob, content, "text/plain")
    assert store.blob_info(bob, ref.sha256).hits == 1 and store.blob_info(alice, ref.sha256).hits == 3
    assert (
        store.put_blob(alice, b"").size == 0 and store.get_blob(alice, hashlib.sha256(b"").hexdigest()) == b""
    )
    with pytest.raises(InputError, match="bytes"):
        store.put_blob(alice, "text")  # type: ignore[arg-type]
    with pytest.raises(NotFoundError, match="blob"):
        store.get_blob(alice, "f" * 64)


@pytest.mark.parametrize(
    ("start", "end"),
    [
        (None, None),
        (0, 10),
        (10, 20),
        (250, None),
        (None, 5),
        (-10, None),
        (5, -5),
        (20, 10),
        (0, 10_000),
        (999, 999),
    ],
)
def test_blob_byte_ranges_follow_slice_rules(
    store: Store, alice: str, start: int | None, end: int | None
) -> None:
    content = bytes(range(256))
    ref = store.put_blob(alice, content)
    assert store.get_blob(alice, ref.sha256, start, end) == content[start:end]


# --- snapshots and audit ---------------------------------------------------------------------------


def test_snapshots(store: Store, alice: str, chat: str) -> None:
    assert store.latest_snapshot(alice, chat) is None
    breakdown = {"tier1": {"tokens": 120, "items": 3}, "tier2": {"tokens": 0, "items": 0}, "total": 120}
    strategy = {"budgetRange": "80-100%", "tier2Items": "all", "tier3Mode": "full", "note": UNICODE["rtl"]}
    older = store.save_snapshot(
        alice,
        chat,
        tier_breakdown=breakdown,
        total_tokens=120,
        budget_percent=0.8125,
        pruning_strategy=strategy,
        checksum="abc",
        at=datetime(2025, 1, 1, tzinfo=IST),
    )
    newer = store.save_snapshot(
        alice, chat, tier_breakdown={}, total_tokens=7, budget_percent=1, pruning_strategy={}
    )
    assert store.latest_snapshot(alice, chat) == newer
    assert store.list_snapshots(alice, chat) == [newer, older]
    assert store.list_snapshots(alice, chat, limit=1) == [newer]
    assert (older.tier_breakdown, older.pruning_strategy, older.budget_percent) == (
        breakdown,
        strategy,
        0.8125,
    )
    assert older.created_at == datetime(2024, 12, 31, 18, 30, tzinfo=UTC) and older.chat_id == chat
    # Snapshots sharing a timestamp still come back newest first.
    same = datetime.now(UTC) + timedelta(days=1)
    taken = [
        store.save_snapshot(
            alice, chat, tier_breakdown={}, total_tokens=i, budget_percent=0.5, pruning_strategy={}, at=same
        )
        for i in range(3)
    ]
    assert store.list_snapshots(alice, chat, limit=3) == taken[::-1]
    with pytest.raises(InputError, match="budget_percent"):
        store.save_snapshot(
            alice, chat, tier_breakdown={}, total_tokens=1, budget_percent="x", pruning_strategy={}
        )  # type: ignore[arg-type]


def test_audit_log(store: Store, alice: str, chat: str) -> None:
    first = store.audit(
        alice, "pack", chat_id=chat, checksum="sha-1", details={"kept": 3, "why": UNICODE["escapes"]}
    )
    second = store.audit(alice, "login")
    third = store.audit(alice, "pack", chat_id=chat, checksum="sha-2")
    assert store.list_audit(alice) == [third, second, first]
    assert store.list_audit(alice, chat_id=chat) == [third, first]
    assert store.list_audit(alice, event="login") == [second]
    assert store.list_audit(alice, limit=1) == [third]
    assert first.details == {"kept": 3, "why": UNICODE["escapes"]} and third.details == {}
    assert first.created_at.tzinfo is UTC
    with pytest.raises(NotFoundError):
        store.audit("nobody", "pack")


# --- scoping: another user's rows do not exist for you ---------------------------------------------


def test_another_user_can_neither_read_nor_change_anything(store: Store, alice: str, bob: str) -> None:
    chat = store.create_chat(alice, title="Alice's").id
    assistant, _ = (store.add_message(alice, chat, m, token_count=5) for m in _tool_turn())
    store.add_tool_call(alice, chat, assistant.id, "search", {"q": "x"})
    store.save_segment(alice, chat, "s1", seq=0, first_seq=0, last_seq=1, summary="secret")
    ref = store.put_blob(alice, b"alice's secret")
    store.save_snapshot(
        alice, chat, tier_breakdown={}, total_tokens=1, budget_percent=1.0, pruning_strategy={}
    )
    store.audit(alice, "pack", chat_id=chat)
    before = (
        store.get_chat(alice, chat),
        store.list_messages(alice, chat),
        store.list_tool_calls(alice, chat),
        store.list_segments(alice, chat),
        store.blob_info(alice, ref.sha256),
        store.list_snapshots(alice, chat),
        store.list_audit(alice),
    )
    message = {"role": "user", "content": "bob was here"}
    refused = [
        lambda: store.get_chat(bob, chat),
        lambda: store.rename_chat(bob, chat, "mine now"),
        lambda: store.update_chat(bob, chat, narrative={"x": 1}),
        lambda: store.delete_chat(bob, chat),
        lambda: store.add_message(bob, chat, message, token_count=1),
        lambda: store.list_messages(bob, chat),
        lambda: store.get_message(bob, chat, 0),
        lambda: store.archive_messages(bob, chat, 10),
        lambda: store.mark_in_summary(bob, chat, 0, 10),
        lambda: store.add_tool_call(bob, chat, assistant.id, "search", {}),
        lambda: store.list_tool_calls(bob, chat),
        lambda: store.save_segment(bob, chat, "s1", seq=0, first_seq=0, last_seq=1, summary="overwritten"),
        lambda: store.get_segment(bob, chat, "s1"),
        lambda: store.list_segments(bob, chat),
        lambda: store.get_blob(bob, ref.sha256),
        lambda: store.get_blob(bob, ref.sha256, 0, 3),
        lambda: store.blob_info(bob, ref.sha256),
        lambda: store.save_snapshot(
            bob, chat, tier_breakdown={}, total_tokens=1, budget_percent=1, pruning_strategy={}
        ),
        lambda: store.list_snapshots(bob, chat),
        lambda: store.latest_snapshot(bob, chat),
    ]
    for attempt in refused:
        with pytest.raises(NotFoundError, match=f"for user '{bob}'"):
            attempt()
    # Bob's own tool call may not point at Alice's message or blob either.
    bobs_chat = store.create_chat(bob).id
    with pytest.raises(NotFoundError):
        store.add_tool_call(bob, bobs_chat, assistant.id, "search", {})
    bobs_message = store.add_message(bob, bobs_chat, message, token_count=1)
    with pytest.raises(NotFoundError, match="blob"):
        store.add_tool_call(bob, bobs_chat, bobs_message.id, "search", {}, blob_sha256=ref.sha256)
    assert [c.id for c in store.list_chats(bob)] == [bobs_chat]
    assert store.list_audit(bob) == [] and store.list_audit(bob, chat_id=chat) == []
    after = (
        store.get_chat(alice, chat),
        store.list_messages(alice, chat),
        store.list_tool_calls(alice, chat),
        store.list_segments(alice, chat),
        store.blob_info(alice, ref.sha256),
        store.list_snapshots(alice, chat),
        store.list_audit(alice),
    )
    assert after == before
