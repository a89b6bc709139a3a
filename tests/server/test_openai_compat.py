"""The OpenAI-compatible endpoint, driven by the official ``openai`` SDK in-process."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import openai
import pytest

from tests.fake_openai import FakeOpenAI, fake_openai
from tierwise.budget import Budget
from tierwise.chat.engine import ChatEngine
from tierwise.providers import OpenAICompatProvider, RetryPolicy
from tierwise.providers.base import ModelRequest, Provider
from tierwise.providers.errors import ProviderError
from tierwise.providers.testing import ScriptedModel, tool_call
from tierwise.server import create_app
from tierwise.store import Store
from tierwise.tokens import get_counter

__all__ = ["fake_openai"]

pytestmark = pytest.mark.anyio

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


@pytest.fixture
def store() -> Iterator[Store]:
    opened = Store.open("sqlite://")
    yield opened
    opened.close()


@pytest.fixture
def backend_store(store_url: str) -> Iterator[Store]:
    """A store on each backend (SQLite file: sessions work inline; PostgreSQL: in worker threads)."""
    opened = Store.open(store_url)
    yield opened
    opened.close()


class Service:
    def __init__(self, store: Store, provider: Provider, budget: Budget, shared: bool | None = None) -> None:
        self.store = store
        self.engine = ChatEngine(store, provider, budget=budget)
        self.app = create_app(store, self.engine, shared=shared)
        self.user = self.app.state.user_of(None)

    def http(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.ASGITransport(app=self.app), base_url="http://test")

    @asynccontextmanager
    async def client(self) -> AsyncIterator[openai.AsyncOpenAI]:
        async with self.http() as http:
            yield openai.AsyncOpenAI(base_url="http://test/v1", api_key="x", http_client=http, max_retries=0)

    async def settled(self) -> None:
        """Wait for the answers still being stored (the endpoint stores them after answering)."""
        sessions = getattr(self.app.state, "openai_sessions", None)
        if sessions is not None:
            await sessions.drain()

    async def api_chats(self, context_type: str = "api") -> list[Any]:
        await self.settled()
        return self.store.list_chats(self.user, context_type=context_type)

    async def stored(self, chat_id: str) -> list[dict[str, Any]]:
        await self.settled()
        return [dict(m.message) for m in self.store.list_messages(self.user, chat_id)]


def service(
    store: Store, provider: Provider, window: int = 4_000, reserve: int = 500, *, shared: bool | None = None
) -> Service:
    """The app around ``store``; ``shared``: as if other processes served it (default: on PostgreSQL)."""
    return Service(store, provider, Budget(window=window, reserve=reserve), shared)


def pack_tokens(request: ModelRequest) -> int:
    counter = get_counter()
    return counter.count_messages(request.messages) + counter.count_tools(request.tools)


def conversation(turns: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a concise planning assistant."}]
    for i in range(turns):
        if i % 2 == 0:
            note = (
                f"Note {i}: the offsite venue option {i} in district {i % 17} costs {i * 7} euros, "
                f"seats {20 + i} people and has parking and a terrace."
            )
            messages.append({"role": "user", "content": note})
        else:
            messages.append({"role": "assistant", "content": f"Noted venue option {i - 1}; anything else?"})
    return messages


async def test_streamed_completion_of_a_300_message_conversation_fits_the_budget(store: Store) -> None:
    model = ScriptedModel("The cheapest venue is option 0, at 0 euros.")
    svc = service(store, model)
    messages = [*conversation(299), {"role": "user", "content": "Which venue was cheapest?"}]
    assert len(messages) == 301  # 300 without the system prompt
    assert get_counter().count_messages(messages) > 7_000  # twice the budget
    async with svc.client() as client:
        raw = await client.chat.completions.with_raw_response.create(
            model="anything",
            messages=messages,  # type: ignore[arg-type]
            stream=True,
            stream_options={"include_usage": True},
        )
        stream = raw.parse()
        chunks = [chunk async for chunk in stream]

    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "The cheapest venue is option 0, at 0 euros."
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens > 0
    (request,) = model.requests
    tokens = pack_tokens(request)
    assert tokens <= 3_500
    assert raw.headers["x-tierwise-pack-tokens"] == str(tokens)
    assert raw.headers["x-tierwise-session"].startswith("auto-")
    assert request.messages[0]["role"] == "system" and "planning assistant" in request.messages[0]["content"]
    assert request.messages[-1] == {"role": "user", "content": "Which venue was cheapest?"}
    assert len(request.messages) > 3  # memory's context came along, not just the question
    (chat,) = await svc.api_chats()
    stored = await svc.stored(chat.id)
    assert len(stored) == 301  # 300 client messages (no system) + the answer
    assert all(m["role"] != "system" for m in stored)
    assert stored[-1]["content"] == text


async def test_non_stream_completion_and_second_request_stores_only_new_messages(store: Store) -> None:
    model = ScriptedModel("Hello Maya.", "You asked about Lisbon.")
    svc = service(store, model)
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi, I'm Maya."},
    ]
    async with svc.client() as client:
        first = await client.chat.completions.create(
            model="m",
            messages=history,  # type: ignore[arg-type]
            extra_headers={"X-Tierwise-Session": "maya-1"},
        )
        assert first.object == "chat.completion"
        assert first.choices[0].message.content == "Hello Maya."
        assert first.choices[0].finish_reason == "stop"
        assert first.usage is not None and first.usage.prompt_tokens > 0
        (chat,) = await svc.api_chats()
        assert chat.entity_id == "maya-1"
        assert [m["content"] for m in await svc.stored(chat.id)] == ["Hi, I'm Maya.", "Hello Maya."]

        history += [
            {"role": "assistant", "content": "Hello Maya."},
            {"role": "user", "content": "Which city did I ask about?"},
        ]
        second = await client.chat.completions.create(
            model="m",
            messages=history,  # type: ignore[arg-type]
            extra_headers={"X-Tierwise-Session": "maya-1"},
        )
    assert second.choices[0].message.content == "You asked about Lisbon."
    (same,) = await svc.api_chats()
    assert same.id == chat.id
    stored = await svc.stored(chat.id)
    assert [m["content"] for m in stored] == [
        "Hi, I'm Maya.",
        "Hello Maya.",
        "Which city did I ask about?",
        "You asked about Lisbon.",
    ]
    assert [m["role"] for m in model.requests[1].messages] == ["system", "user", "assistant", "user"]


async def test_a_diverging_history_starts_a_fresh_chat(store: Store) -> None:
    model = ScriptedModel("One.", "Two.")
    svc = service(store, model)
    async with svc.client() as client:
        for content in ("First question", "Edited first question"):
            await client.chat.completions.create(
                model="m",
                messages=[{"role": "user", "content": content}],
                extra_headers={"X-Tierwise-Session": "session-x"},
            )
    (current,) = await svc.api_chats()
    (retired,) = await svc.api_chats("api-superseded")
    assert [m["content"] for m in await svc.stored(current.id)] == ["Edited first question", "Two."]
    assert [m["content"] for m in await svc.stored(retired.id)] == ["First question", "One."]


async def test_tool_calls_are_streamed_back_not_executed(store: Store) -> None:
    model = ScriptedModel(tool_call("get_weather", city="Lisbon"), "It is sunny in Lisbon.")
    svc = service(store, model)
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Weather in Lisbon?"}]
    async with svc.client() as client:
        stream = await client.chat.completions.create(
            model="m",
            messages=messages,  # type: ignore[arg-type]
            tools=[WEATHER],  # type: ignore[list-item]
            stream=True,
        )
        calls: dict[int, dict[str, str]] = {}
        finish = None
        async for chunk in stream:
            choice = chunk.choices[0]
            finish = choice.finish_reason or finish
            for delta in choice.delta.tool_calls or ():
                entry = calls.setdefault(delta.index, {"id": "", "name": "", "arguments": ""})
                entry["id"] += delta.id or ""
                if delta.function is not None:
                    entry["name"] += delta.function.name or ""
                    entry["arguments"] += delta.function.arguments or ""
        assert finish == "tool_calls"
        (call,) = calls.values()
        assert call["name"] == "get_weather" and json.loads(call["arguments"]) == {"city": "Lisbon"}
        (request,) = model.requests
        assert request.tools == [WEATHER]
        assert pack_tokens(request) <= 3_500

        # The client runs the tool and sends the result back: the model answers.
        messages += [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call["id"],
                        "type": "function",
                        "function": {"name": call["name"], "arguments": call["arguments"]},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": call["id"], "content": "sunny, 24°C"},
        ]
        answer = await client.chat.completions.create(
            model="m",
            messages=messages,  # type: ignore[arg-type]
            tools=[WEATHER],  # type: ignore[list-item]
        )
    assert answer.choices[0].message.content == "It is sunny in Lisbon."
    sent = model.requests[1].messages
    assert [m["role"] for m in sent] == ["user", "assistant", "tool"]
    (chat,) = await svc.api_chats()
    assert [m["role"] for m in await svc.stored(chat.id)] == ["user", "assistant", "tool", "assistant"]


async def test_non_stream_tool_call(store: Store) -> None:
    svc = service(store, ScriptedModel(tool_call("get_weather", city="Porto")))
    async with svc.client() as client:
        done = await client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "Porto?"}],
            tools=[WEATHER],  # type: ignore[list-item]
        )
    choice = done.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.tool_calls
    function = choice.message.tool_calls[0].function  # type: ignore[union-attr]
    assert function.name == "get_weather" and json.loads(function.arguments) == {"city": "Porto"}


async def test_models(store: Store) -> None:
    svc = service(store, ScriptedModel(model="upstream-7b"))
    async with svc.client() as client:
        models = await client.models.list()
        assert [m.id for m in models.data] == ["upstream-7b"]
        assert (await client.models.retrieve("upstream-7b")).id == "upstream-7b"
        with pytest.raises(openai.NotFoundError) as missing:
            await client.models.retrieve("gpt-9")
    assert missing.value.code == "model_not_found"


def _is_openai_error(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert isinstance(error["message"], str) and error["message"]
    assert error["type"] == "invalid_request_error" and "code" in error
    return dict(error)


async def test_malformed_bodies_get_openai_errors(store: Store) -> None:
    model = ScriptedModel()
    svc = service(store, model)
    url = "/v1/chat/completions"
    async with svc.http() as http:
        not_json = await http.post(url, content=b"{nope", headers={"content-type": "application/json"})
        assert _is_openai_error(not_json, 400)["code"] == "invalid_json"
        not_object = await http.post(url, json=[1, 2])
        _is_openai_error(not_object, 400)
        no_messages = await http.post(url, json={"model": "m"})
        assert _is_openai_error(no_messages, 400)["param"] == "messages"
        empty = await http.post(url, json={"model": "m", "messages": []})
        _is_openai_error(empty, 400)  # OpenAI's status for invalid values (issue 16: was 422)
        bad_role = await http.post(url, json={"messages": [{"role": "wizard", "content": "hi"}]})
        assert "role" in _is_openai_error(bad_role, 400)["param"]
        bad_temperature = await http.post(
            url, json={"messages": [{"role": "user", "content": "x"}], "temperature": 9}
        )
        _is_openai_error(bad_temperature, 400)
        only_system = await http.post(url, json={"messages": [{"role": "system", "content": "x"}]})
        _is_openai_error(only_system, 400)
        too_long = await http.post(
            url, json={"messages": [{"role": "user", "content": "x"}], "max_tokens": 10_000}
        )
        assert _is_openai_error(too_long, 400)["code"] == "context_length_exceeded"
        unknown = await http.get("/v1/embeddings")
        _is_openai_error(unknown, 404)
        forwarded = await http.post(
            url, json={"messages": [{"role": "user", "content": "x"}], "n": 1, "seed": 3}
        )
        assert forwarded.status_code == 502  # the empty script fails upstream
    assert len(model.requests) == 1
    assert model.requests[0].params == {"n": 1, "seed": 3}  # issue 16: forwarded, not ignored
    async with svc.client() as client:
        with pytest.raises(openai.BadRequestError):
            await client.chat.completions.create(
                model="m",
                messages=[{"role": "wizard", "content": "hi"}],  # type: ignore[list-item,misc]
            )


async def test_upstream_500_reaches_the_client_as_it_was(store: Store, fake_openai: FakeOpenAI) -> None:
    fake_openai.fail(500, times=2)
    provider = OpenAICompatProvider(
        base_url=fake_openai.url, api_key="k", model="fake-model", retry_policy=RetryPolicy(max_retries=0)
    )
    svc = service(store, provider)
    async with svc.client() as client:
        with pytest.raises(openai.APIStatusError) as failed:
            await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        assert failed.value.status_code == 500  # issue 30: the upstream's status (was a 502)
        with pytest.raises(openai.APIStatusError) as streamed:
            stream = await client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hi"}], stream=True
            )
            async for _ in stream:
                pass
        assert streamed.value.status_code == 500
    body = failed.value.body
    assert isinstance(body, dict) and body.get("message") == "fake error 500"  # the upstream's words


async def test_real_upstream_over_the_fake_server(store: Store, fake_openai: FakeOpenAI) -> None:
    fake_openai.script("Hello from upstream.")
    provider = OpenAICompatProvider(base_url=fake_openai.url, api_key="k", model="fake-model")
    svc = service(store, provider)
    async with svc.client() as client:
        stream = await client.chat.completions.create(
            model="whatever", messages=[{"role": "user", "content": "hi"}], stream=True
        )
        text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
    assert text == "Hello from upstream."
    (body,) = fake_openai.requests
    assert body["model"] == "fake-model" and body["messages"][-1] == {"role": "user", "content": "hi"}


async def test_a_failure_mid_stream_is_an_error_chunk(store: Store) -> None:
    from tierwise.providers.base import TextDelta
    from tierwise.providers.testing import Script

    failing = Script(TextDelta("Partial "), error=ProviderError("boom", status=500, retryable=True))
    svc = service(store, ScriptedModel(failing))
    async with svc.client() as client:
        stream = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}], stream=True
        )
        seen = []
        with pytest.raises(openai.APIError):
            async for chunk in stream:
                seen.append(chunk.choices[0].delta.content or "")
    assert "".join(seen) == "Partial "
    (chat,) = await svc.api_chats()
    assert [m["role"] for m in await svc.stored(chat.id)] == ["user"]  # no half answer stored


# -- the answer is stored after it is delivered --------------------------------------------------


async def test_the_answer_is_stored_after_delivery_and_the_next_request_waits_for_it(
    backend_store: Store,
) -> None:
    store = backend_store
    model = ScriptedModel("One.", "Two.")
    svc = service(store, model)
    history: list[dict[str, Any]] = [{"role": "user", "content": "First?"}]
    async with svc.http() as http:
        first = await http.post(
            "/v1/chat/completions",
            json={"messages": history, "stream": True},
            headers={"X-Tierwise-Session": "s"},
        )
        assert first.status_code == 200 and "data: [DONE]" in first.text
        # The client sends the next request at once: it must not store the answer a second time.
        history += [{"role": "assistant", "content": "One."}, {"role": "user", "content": "Second?"}]
        second = await http.post(
            "/v1/chat/completions", json={"messages": history}, headers={"X-Tierwise-Session": "s"}
        )
    assert second.json()["choices"][0]["message"]["content"] == "Two."
    assert svc.app.state.openai_sessions.inline == (store.engine.dialect.name == "sqlite")
    (chat,) = await svc.api_chats()
    assert [m["content"] for m in await svc.stored(chat.id)] == ["First?", "One.", "Second?", "Two."]
    turns = store.list_audit(svc.user, chat_id=chat.id, event="turn")
    assert len(turns) == 2
    usage = turns[0].details["usage"]
    assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0
    assert turns[0].details["source"] == "openai-compat"
    assert len(store.list_snapshots(svc.user, chat.id)) == 2
    assert store.get_chat(svc.user, chat.id).total_tokens_used == sum(
        t.details["usage"]["prompt_tokens"] + t.details["usage"]["completion_tokens"] for t in turns
    )


async def test_a_session_whose_chat_was_deleted_starts_a_new_chat(backend_store: Store) -> None:
    svc = service(backend_store, ScriptedModel("One.", "Again."))
    history: list[dict[str, Any]] = [{"role": "user", "content": "First?"}]
    async with svc.http() as http:
        await http.post(
            "/v1/chat/completions", json={"messages": history}, headers={"X-Tierwise-Session": "d"}
        )
        (chat,) = await svc.api_chats()
        gone = await http.delete(f"/api/chats/{chat.id}")
        assert gone.status_code == 204
        history += [{"role": "assistant", "content": "One."}, {"role": "user", "content": "Still there?"}]
        again = await http.post(
            "/v1/chat/completions", json={"messages": history}, headers={"X-Tierwise-Session": "d"}
        )
    assert again.status_code == 200, again.text
    (fresh,) = await svc.api_chats()
    assert fresh.id != chat.id
    assert [m["content"] for m in await svc.stored(fresh.id)] == ["First?", "One.", "Still there?", "Again."]


async def test_the_cost_guard_refuses_a_session_over_its_limit_with_429(store: Store) -> None:
    from tierwise.chat.costguard import CostGuard, Limits, MemoryLedger

    model = ScriptedModel("One.", "Never sent.")
    engine = ChatEngine(
        store,
        model,
        budget=Budget(window=4_000, reserve=500),
        guard=CostGuard(Limits(session_tokens=10), MemoryLedger()),
    )
    app = create_app(store, engine)
    history: list[dict[str, Any]] = [{"role": "user", "content": "First?"}]
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as http:
        first = await http.post("/v1/chat/completions", json={"messages": history})
        assert first.status_code == 200
        await app.state.openai_sessions.drain()
        history += [{"role": "assistant", "content": "One."}, {"role": "user", "content": "More?"}]
        refused = await http.post("/v1/chat/completions", json={"messages": history})
    assert refused.status_code == 429
    error = refused.json()["error"]
    assert error["code"] == "insufficient_quota" and "not sent" in error["message"]
    assert len(model.requests) == 1  # the refused request never reached the upstream


async def test_forgotten_sessions_are_found_again_in_the_store(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tierwise.server.openai_sessions as sessions_module

    monkeypatch.setattr(sessions_module, "_MAX_REMEMBERED", 2)
    svc = service(store, ScriptedModel("A1.", "B1.", "C1.", "A2."))
    async with svc.http() as http:
        for key in ("a", "b", "c"):  # "a" is forgotten when "c" arrives
            history = [{"role": "user", "content": f"Hello from {key}"}]
            sent = await http.post(
                "/v1/chat/completions", json={"messages": history}, headers={"X-Tierwise-Session": key}
            )
            assert sent.status_code == 200
        sessions = svc.app.state.openai_sessions
        await sessions.drain()
        assert sessions._remembered(svc.user, "a") is None
        assert (svc.user, "a") not in sessions._locks  # its lock went with it
        again = await http.post(
            "/v1/chat/completions",
            json={
                "messages": [
                    {"role": "user", "content": "Hello from a"},
                    {"role": "assistant", "content": "A1."},
                    {"role": "user", "content": "Me again"},
                ]
            },
            headers={"X-Tierwise-Session": "a"},
        )
    assert again.json()["choices"][0]["message"]["content"] == "A2."
    chats = await svc.api_chats()
    assert len(chats) == 3  # "a" continued its own chat, found by its session key
    (a,) = [c for c in chats if c.entity_id == "a"]
    assert [m["content"] for m in await svc.stored(a.id)] == ["Hello from a", "A1.", "Me again", "A2."]
