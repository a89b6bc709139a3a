"""Responses API ids live in the store (issue 31): continued, fetched and deleted from any process.

Two apps over one store stand for two processes (or one restarted): a response made by the first is
continued, fetched and deleted through the second. ``store: false`` keeps a response in its process
only, and a client resending its whole input stores each message once.
"""

from __future__ import annotations

from typing import Any

import openai
import pytest
import sqlalchemy as sa

from tests.server.test_openai_compat import service, store
from tierwise.providers.testing import ScriptedModel
from tierwise.store import Store
from tierwise.store.models import ApiResponse

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
    await first.app.state.responses.drain()  # (stored after the answer: one process, SQLite)
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
    await first.app.state.responses.drain()
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
    await svc.app.state.responses.drain()
    rows = _rows(store, svc.user, ids[-1])
    assert [r.id for r in rows] == ids  # each builds on the one before
    assert [len(r.added) for r in rows] == [2] * 5  # its question and its answer, nothing twice
    conversation = [m["content"] for r in rows for m in r.added]
    assert conversation == [text for n in range(5) for text in (f"Question {n}?", f"Answer {n}.")]


async def test_another_user_cannot_see_or_delete_a_response(store: Store) -> None:
    svc = service(store, ScriptedModel("Hello."))
    async with svc.client() as client:
        made = await client.responses.create(model="m", input="Hi")
    await svc.app.state.responses.drain()
    other = store.create_user("grace").id
    assert _rows(store, other, made.id) == [] and store.delete_api_response(other, made.id) is False
    assert store.api_response(svc.user, made.id) is not None


async def test_with_processes_sharing_the_store_it_is_stored_before_the_answer_ends(store: Store) -> None:
    svc = service(store, ScriptedModel("Hello."), shared=True)
    async with svc.client() as client:
        made = await client.responses.create(model="m", input="Hi")
        assert store.api_response(svc.user, made.id) is not None  # no wait: another process may be next


async def test_a_chain_missing_its_start_is_not_continued(store: Store) -> None:
    svc = service(store, ScriptedModel("One.", "Two."))
    async with svc.client() as client:
        first = await client.responses.create(model="m", input="1?")
        second = await client.responses.create(model="m", input="2?", previous_response_id=first.id)
    await svc.app.state.responses.drain()
    with store.session(write=True) as session:  # (as if its write had been lost)
        session.execute(sa.delete(ApiResponse).where(ApiResponse.id == first.id))
    async with service(store, ScriptedModel("Three.")).client() as client:
        with pytest.raises(openai.NotFoundError):  # never a conversation with its start missing
            await client.responses.create(model="m", input="3?", previous_response_id=second.id)


async def test_a_method_a_response_does_not_take_names_both_it_does(store: Store) -> None:
    # Found by schemathesis: OPTIONS answered ``Allow: GET`` once DELETE was added (the first route's).
    svc = service(store, ScriptedModel())
    async with svc.http() as http:
        response = await http.request("OPTIONS", "/v1/responses/resp_1")
    assert response.status_code == 405 and response.headers["allow"] == "GET, DELETE"
    assert response.json()["error"]["type"] == "invalid_request_error"  # OpenAI's shape, as /v1 is
