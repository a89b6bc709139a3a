"""What memory reads off each message is made once, stored with it, and trusted at a load only if it holds."""

from __future__ import annotations

from typing import Any

import bm25s
import pytest
import sqlalchemy as sa
from hypothesis import given, settings
from hypothesis import strategies as st

from tierwise import Budget
from tierwise.bench.synthetic import synthetic_history
from tierwise.memory import analysis as analysis_module
from tierwise.memory import retrieval
from tierwise.memory.analysis import Analysis, analyse, of_message
from tierwise.memory.engine import Memory
from tierwise.memory.persist import ChatMemory
from tierwise.memory.retrieval import _stemmer, tokenize
from tierwise.store import Store

QUESTION = [{"role": "user", "content": "What did we decide about the venue for the offsite?"}]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=80), max_size=6))
def test_tokenize_is_exactly_bm25s(texts: list[str]) -> None:
    expected = bm25s.tokenize(
        texts, stopwords="en", stemmer=_stemmer(), show_progress=False, return_ids=False
    )
    assert tokenize(texts) == [list(t) for t in expected]


def _chat(store: Any, n: int = 120) -> tuple[str, str, list[dict[str, Any]]]:
    user = store.create_user("ada").id
    chat = store.create_chat(user).id
    history = synthetic_history(n + 2)[1:-1]
    memory = ChatMemory(store, user, chat, Memory())
    for message in history[: n // 2]:
        memory.add(message)  # one by one, as a chat writes them
    memory.stage(history[n // 2 :])  # staged, as the OpenAI-compatible endpoint does
    memory.flush()
    return user, chat, history


def test_every_stored_message_carries_what_memory_read_off_it(store: Any) -> None:
    user, chat, history = _chat(store)
    stored = store.message_analyses(user, chat)
    assert len(stored) == len(history) and None not in stored
    assert [Analysis.of_stored(*pair) for pair in stored] == [of_message(m) for m in history]


def test_a_load_reads_the_stored_analyses_instead_of_the_text(
    store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    user, chat, _ = _chat(store)
    fresh = ChatMemory.load(store, user, chat, Memory())
    made: list[int] = []
    real = analysis_module.analyse_many

    def spy(texts: Any) -> Any:
        made.append(len(texts))
        return real(texts)

    monkeypatch.setattr(analysis_module, "analyse_many", spy)
    loaded = ChatMemory.load(store, user, chat, Memory())
    assert sum(made) <= 8  # a sample checks them; the rest are taken (was: every message, twice)
    assert [t.analysis for t in loaded.memory.turns] == [t.analysis for t in fresh.memory.turns]
    budget = Budget(window=2_000, reserve=300)
    assert (
        loaded.pack(budget, QUESTION, record=False).report.checksum
        == fresh.pack(budget, QUESTION, record=False).report.checksum
    )


def test_analyses_another_version_stored_are_made_again(store: Any) -> None:
    user, chat, history = _chat(store)
    expected = ChatMemory.load(store, user, chat, Memory())
    with store.engine.begin() as connection:  # as if an older tokenizer had made them
        connection.execute(sa.text("UPDATE chat_messages SET terms = 'old', words = 'old'"))
    loaded = ChatMemory.load(store, user, chat, Memory())
    assert [t.analysis for t in loaded.memory.turns] == [
        analyse(f"{t.text} {t.extra}") for t in loaded.memory.turns
    ]
    budget = Budget(window=2_000, reserve=300)
    assert (
        loaded.pack(budget, QUESTION, record=False).report.checksum
        == expected.pack(budget, QUESTION, record=False).report.checksum
    )
    assert len(history) == len(loaded.memory.turns)


def test_messages_stored_before_the_analyses_existed_are_analysed_at_load(tmp_path: Any) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'db.sqlite'}")
    user = store.create_user("ada").id
    chat = store.create_chat(user).id
    said = synthetic_history(40)[1:]
    memory = Memory()
    store.add_messages(user, chat, said, token_counts=[memory.counter.count_message(m) for m in said])
    assert set(store.message_analyses(user, chat)) == {None}
    loaded = ChatMemory.load(store, user, chat, Memory())
    assert [t.analysis for t in loaded.memory.turns] == [of_message(m) for m in said]
    store.close()


def test_the_stem_cache_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(retrieval, "_STEMS_MAX", 10)
    monkeypatch.setattr(retrieval, "_STEMS", {})
    words = " ".join(f"word{i}x" for i in range(40))
    assert tokenize([words]) == [[f"word{i}x" for i in range(40)]]
    assert len(retrieval._STEMS) <= 50
    tokenize(["painting sunsets"])
    assert len(retrieval._STEMS) <= 10 + 2
