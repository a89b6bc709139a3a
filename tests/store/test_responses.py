"""Responses API responses in the store (``api_responses``), on SQLite and PostgreSQL alike."""

from __future__ import annotations

import pytest

from tierwise.errors import InputError
from tierwise.store import Store


def _put(store: Store, user: str, rid: str, base: str | None, *added: str) -> None:
    store.put_api_response(
        user,
        {"id": rid, "object": "response", "output": []},
        session_key="k",
        base_id=base,
        system=[{"role": "system", "content": "Be brief."}],
        added=[{"role": "user", "content": text} for text in added],
    )


def _texts(store: Store, user: str, rid: str) -> list[str]:
    return [m["content"] for row in store.api_response_chain(user, rid) for m in row.added]


def test_a_chain_is_read_back_oldest_first_in_one_query(store: Store) -> None:
    user = store.create_user("ada").id
    _put(store, user, "resp_1", None, "a", "b")
    _put(store, user, "resp_2", "resp_1", "c")
    _put(store, user, "resp_3", "resp_2", "d", "e")
    _put(store, user, "resp_x", "resp_1", "f")  # a branch from the first
    assert _texts(store, user, "resp_3") == ["a", "b", "c", "d", "e"]
    assert _texts(store, user, "resp_x") == ["a", "b", "f"]
    (last,) = store.api_response_chain(user, "resp_3")[-1:]
    assert last.id == "resp_3" and last.session_key == "k" and last.system[0]["content"] == "Be brief."
    assert store.api_response(user, "resp_2") == {"id": "resp_2", "object": "response", "output": []}


def test_another_user_s_response_is_one_that_does_not_exist(store: Store) -> None:
    ada, grace = store.create_user("ada").id, store.create_user("grace").id
    _put(store, ada, "resp_1", None, "a")
    assert store.api_response_chain(grace, "resp_1") == []
    assert store.api_response(grace, "resp_1") is None
    assert store.delete_api_response(grace, "resp_1") is False
    assert store.api_response(ada, "resp_1") is not None


def test_a_deleted_response_is_gone_but_what_builds_on_it_is_whole(store: Store) -> None:
    user = store.create_user("ada").id
    _put(store, user, "resp_1", None, "a")
    _put(store, user, "resp_2", "resp_1", "b")
    assert store.delete_api_response(user, "resp_1") is True
    assert store.delete_api_response(user, "resp_1") is False  # once
    assert store.api_response(user, "resp_1") is None
    assert _texts(store, user, "resp_2") == ["a", "b"]  # its messages stay for resp_2
    assert store.delete_api_response(user, "resp_2") is True
    assert store.api_response_chain(user, "resp_2") == []  # and go with the last one building on them
    assert store.api_response_chain(user, "resp_1") == []


def test_what_the_store_cannot_keep_names_the_field(store: Store) -> None:
    user = store.create_user("ada").id
    with pytest.raises(InputError, match="at most 64"):
        _put(store, user, "resp_" + "x" * 80, None, "a")
    with pytest.raises(InputError, match="added"):
        store.put_api_response(
            user, {"id": "resp_1"}, session_key="k", base_id=None, system=[], added=[float("nan")]
        )
    assert store.api_response(user, "resp_1") is None
