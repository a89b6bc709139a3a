"""Responses API ids live in the store (issue 31): continued, fetched and deleted from any process.

Two apps over one store stand for two processes (or one restarted): a response made by the first is
continued, fetched and deleted through the second. ``store: false`` keeps a response in its process
only, and a client resending its whole input stores each message once.
"""

from __future__ import annotations

from typing import Any

import openai
import pytest

from tests.server.test_openai_compat import service, store
from tierwise.providers.testing import ScriptedModel
from tierwise.store import Store

__all__ = ["store"]

pytestmark = pytest.mark.anyio


def _rows(store: Store, user: str, rid: str) -> list[Any]:
    return store.api_response_chain(user, rid)


async def test_another_process_continues_fetches_and_deletes_a_response(store: Store) -> None:
    first = service(store, ScriptedModel("Hello Maya."))
    model = ScriptedModel("Your name is Maya.")
    second = service(store, model)  # another process (or this one restarted): nothing in memory
    async with first.client() as client:
        made = await client.responses.create(model="m", input="Hi, I'm Maya.", instructions="Be brief.")
    async with second.client() as client:
        fetched = await client.responses.retrieve(made.id)
        assert fetched.output_text == "Hello Maya."
        later = await client.responses.create(model="m", input="My name?", previous_response_id=made.id)
        assert later.previous_response_id == made.id
        await client.responses.delete(made.id)
        with pytest.raises(openai.NotFoundError):
            await client.responses.retrieve(made.id)
        with pytest.raises(openai.NotFoundError):
            await client.responses.create(model="m", input="Again?", previous_response_id=made.id)
        with pytest.raises(openai.NotFoundError):
            await client.responses.delete(made.id)  # once
        again = await client.responses.retrieve(later.id)  # what built on it is whole
        assert again.output_text == "Your name is Maya."
    sent = [(m["role"], m["content"]) for m in model.requests[0].messages]
    assert ("user", "Hi, I'm Maya.") in sent and ("assistant", "Hello Maya.") in sent
    assert sent[-1] == ("user", "My name?")
    (chat,) = await second.api_chats()  # one session, whichever process continued it
    assert [m["content"] for m in await second.stored(chat.id)][-2:] == ["My name?", "Your name is Maya."]


async def test_store_false_keeps_a_response_in_its_process_only(store: Store) -> None:
    first = service(store, ScriptedModel("Hello.", "Still here."))
    async with first.client() as client:
        made = await client.responses.create(model="m", input="Hi", store=False)
        continued = await client.responses.create(model="m", input="And?", previous_response_id=made.id)
        assert continued.output_text == "Still here."
    assert _rows(store, first.user, made.id) == []
    async with service(store, ScriptedModel()).client() as client:
        with pytest.raises(openai.NotFoundError):
            await client.responses.retrieve(made.id)


async def test_a_client_resending_its_whole_input_stores_each_message_once(store: Store) -> None:
    svc = service(store, ScriptedModel(*(f"Answer {n}." for n in range(5))))
    items: list[Any] = []
    ids = []
    async with svc.client() as client:
        for n in range(5):
            items.append({"role": "user", "content": f"Question {n}?"})
            made = await client.responses.create(model="m", input=items)
            items.append({"role": "assistant", "content": made.output_text})
            ids.append(made.id)
    rows = _rows(store, svc.user, ids[-1])
    assert [r.id for r in rows] == ids  # each builds on the one before
    assert [len(r.added) for r in rows] == [2] * 5  # its question and its answer, nothing twice
    conversation = [m["content"] for r in rows for m in r.added]
    assert conversation == [text for n in range(5) for text in (f"Question {n}?", f"Answer {n}.")]


async def test_another_user_cannot_see_or_delete_a_response(store: Store) -> None:
    svc = service(store, ScriptedModel("Hello."))
    async with svc.client() as client:
        made = await client.responses.create(model="m", input="Hi")
    other = store.create_user("grace").id
    assert _rows(store, other, made.id) == [] and store.delete_api_response(other, made.id) is False
    assert store.api_response(svc.user, made.id) is not None
