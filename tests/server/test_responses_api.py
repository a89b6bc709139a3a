"""``POST /v1/responses`` (issue 31), driven by the official ``openai`` SDK and the Agents SDK in-process,
against the scripted upstream (Chat Completions inside)."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

from tests.fake_openai import FakeOpenAI, fake_openai
from tests.server.test_gateway_errors import RATE_LIMITED, Gateway, upstream
from tests.server.test_openai_compat import service, store
from tierwise.providers.base import TextDelta
from tierwise.providers.errors import ProviderError
from tierwise.providers.testing import Script, ScriptedModel, tool_call
from tierwise.store import Store

__all__ = ["fake_openai", "store"]

pytestmark = pytest.mark.anyio

WEATHER: Any = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    "strict": False,
}


async def test_a_plain_answer_is_a_response_object(store: Store) -> None:
    model = ScriptedModel("Paris is the capital of France.")
    svc = service(store, model)
    async with svc.client() as client:
        raw = await client.responses.with_raw_response.create(
            model="m", input="What is the capital of France?", instructions="Be brief.", metadata={"a": "b"}
        )
        response = raw.parse()
    assert response.id.startswith("resp_") and response.object == "response"
    assert response.status == "completed"
    assert response.output_text == "Paris is the capital of France."
    assert response.instructions == "Be brief." and response.metadata == {"a": "b"}
    assert response.usage is not None and response.usage.input_tokens > 0
    assert response.usage.input_tokens_details.cached_tokens == 0
    assert raw.headers["X-Tierwise-Chat"]
    sent = model.requests[0].messages
    assert sent[0] == {"role": "system", "content": "Be brief."}  # instructions: the system message
    assert sent[-1] == {"role": "user", "content": "What is the capital of France?"}
    assert "metadata" in model.requests[0].params and "store" not in model.requests[0].params
    (chat,) = await svc.api_chats()
    assert [m["role"] for m in await svc.stored(chat.id)] == ["user", "assistant"]


async def test_a_streamed_answer_is_the_event_sequence_the_sdk_accumulates(store: Store) -> None:
    svc = service(store, ScriptedModel("Rain is likely in Paris tomorrow."))
    async with svc.client() as client:
        stream = await client.responses.create(model="m", input="Weather in Paris?", stream=True)
        events = [event async for event in stream]
    kinds = [e.type for e in events]
    assert kinds[:5] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
    ]
    assert kinds[-4:] == [
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert [e.sequence_number for e in events] == list(range(len(events)))
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert text == "Rain is likely in Paris tomorrow."
    completed = events[-1].response
    assert completed.output_text == text and completed.usage is not None

    # The SDK's helper accumulates the same answer.
    svc2 = service(store, ScriptedModel("Sunny."))
    async with svc2.client() as client, client.responses.stream(model="m", input="And Lyon?") as helper:
        deltas = [e.delta async for e in helper if e.type == "response.output_text.delta"]
        final = await helper.get_final_response()
    assert "".join(deltas) == "Sunny." and final.output_text == "Sunny."


def _check_round_trip(model: ScriptedModel) -> None:
    first, second = model.requests
    assert first.tools[0]["function"]["name"] == "get_weather"  # the flat Responses tool, as Chat's
    assert second.messages[-2]["tool_calls"][0]["function"]["name"] == "get_weather"
    assert second.messages[-1]["role"] == "tool" and second.messages[-1]["content"] == "12°C, rain"


@pytest.mark.parametrize("chained", [True, False])
async def test_a_function_tool_round_trip_is_one_chat(store: Store, chained: bool) -> None:
    model = ScriptedModel(tool_call("get_weather", city="Paris"), "It is 12°C and raining in Paris.")
    svc = service(store, model)
    question = [{"role": "user", "content": "Weather in Paris?"}]
    async with svc.client() as client:
        first = await client.responses.create(model="m", input=question, tools=[WEATHER])
        (call,) = [item for item in first.output if item.type == "function_call"]
        assert (call.name, json.loads(call.arguments)) == ("get_weather", {"city": "Paris"})
        result = {"type": "function_call_output", "call_id": call.call_id, "output": "12°C, rain"}
        if chained:
            second = await client.responses.create(
                model="m",
                input=[result],
                previous_response_id=first.id,
                tools=[WEATHER],
            )
        else:  # the whole input resent, the earlier output with it
            items: list[Any] = [*question, *(i.model_dump(exclude_none=True) for i in first.output), result]
            second = await client.responses.create(model="m", input=items, tools=[WEATHER])
    assert second.output_text == "It is 12°C and raining in Paris."
    assert second.previous_response_id == (first.id if chained else None)
    _check_round_trip(model)
    (chat,) = await svc.api_chats()  # one chat, both ways
    roles = [m["role"] for m in await svc.stored(chat.id)]
    assert roles == ["user", "assistant", "tool", "assistant"]


async def test_a_streamed_tool_call_has_its_argument_events(store: Store) -> None:
    svc = service(store, ScriptedModel(tool_call("get_weather", city="Oslo")))
    async with (
        svc.client() as client,
        client.responses.stream(model="m", input="Oslo?", tools=[WEATHER]) as s,
    ):
        kinds = [e.type async for e in s]
        final = await s.get_final_response()
    assert "response.function_call_arguments.delta" in kinds
    assert "response.function_call_arguments.done" in kinds
    (call,) = final.output
    assert call.type == "function_call" and json.loads(call.arguments) == {"city": "Oslo"}


async def test_a_reasoning_item_is_carried_back_unchanged(store: Store) -> None:
    model = ScriptedModel("First.", "Second.")
    svc = service(store, model)
    reasoning = {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "Thinking about it."}],
        "encrypted_content": "gAAAAB-opaque-blob==",
    }
    items = [
        {"role": "user", "content": "One?"},
        reasoning,
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "First."}]},
        {"role": "user", "content": "Two?"},
    ]
    async with svc.client() as client:
        await client.responses.create(model="m", input=items)
    (chat,) = await svc.api_chats()
    stored = await svc.stored(chat.id)
    assert stored[1]["response_items"] == [reasoning]  # stored as sent, encrypted_content too
    assert stored[1]["content"] == "First."
    # Not for a Chat Completions upstream: it cannot read it, and a strict one refuses the field.
    assert model.requests[0].messages[-2] == {"role": "assistant", "content": "First."}


async def test_a_stored_response_is_returned_by_its_id(store: Store) -> None:
    svc = service(store, ScriptedModel("Hello."))
    async with svc.client() as client:
        made = await client.responses.create(model="m", input="Hi")
        again = await client.responses.retrieve(made.id)
        assert again.id == made.id and again.output_text == "Hello."
        with pytest.raises(openai.NotFoundError) as caught:
            await client.responses.retrieve("resp_unknown")
        assert caught.value.body["message"] == "Response with id 'resp_unknown' not found."
        with pytest.raises(openai.NotFoundError):  # an unknown previous response: OpenAI's 404
            await client.responses.create(model="m", input="Hi", previous_response_id="resp_unknown")


async def test_an_upstream_429_passes_through(store: Store, fake_openai: FakeOpenAI) -> None:
    gateway = Gateway(store, upstream(fake_openai))
    fake_openai.fail(429, times=2, body=RATE_LIMITED, headers={"retry-after": "1"})
    async with gateway.client() as client:
        for stream in (False, True):
            with pytest.raises(openai.RateLimitError) as caught:
                await client.responses.create(model="m", input="hi", stream=stream)
            assert caught.value.status_code == 429 and caught.value.code == "rate_limit_exceeded"
            assert caught.value.response.headers["retry-after"] == "1"


@pytest.mark.parametrize("streamed", [False, True])
async def test_the_agents_sdk_default_model_completes_a_tool_round_trip(store: Store, streamed: bool) -> None:
    agents = pytest.importorskip("agents")
    agents.set_tracing_disabled(True)  # no trace export (it would reach for the network)
    model = ScriptedModel(tool_call("get_weather", city="Paris"), "It is 12°C and raining in Paris.")
    svc = service(store, model)
    ran: list[str] = []

    @agents.function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        ran.append(city)
        return "12°C, rain"

    async with svc.http() as http:
        client = openai.AsyncOpenAI(base_url="http://test/v1", api_key="x", http_client=http, max_retries=0)
        agents.set_default_openai_client(client, use_for_tracing=False)
        agents.set_default_openai_api("responses")
        agent = agents.Agent(name="weather", instructions="Answer briefly.", tools=[get_weather])
        if streamed:
            result = agents.Runner.run_streamed(agent, "Weather in Paris?")
            assert [e async for e in result.stream_events()]
        else:
            result = await agents.Runner.run(agent, "Weather in Paris?")
    assert result.final_output == "It is 12°C and raining in Paris."
    assert ran == ["Paris"]
    _check_round_trip(model)
    assert model.requests[0].messages[0] == {"role": "system", "content": "Answer briefly."}
    assert len(await svc.api_chats()) == 1


async def test_a_stream_broken_midway_ends_failed_and_stores_no_half_answer(store: Store) -> None:
    failing = Script(TextDelta("Partial "), error=ProviderError("boom", status=500, retryable=True))
    svc = service(store, ScriptedModel(failing))
    async with svc.client() as client:
        stream = await client.responses.create(model="m", input="Hi", stream=True)
        events = [event async for event in stream]
    assert [e.type for e in events][-2:] == ["error", "response.failed"]
    assert events[-1].response.status == "failed"  # type: ignore[union-attr]
    (chat,) = await svc.api_chats()
    assert [m["role"] for m in await svc.stored(chat.id)] == ["user"]  # the request, no half answer


async def test_other_methods_on_the_responses_paths_are_405(store: Store) -> None:
    svc = service(store, ScriptedModel())
    async with svc.http() as http:
        listed = await http.get("/v1/responses")
        assert listed.status_code == 405 and listed.headers["Allow"] == "POST"
        bad = await http.post("/v1/responses", json={"model": "m"})
        assert bad.status_code == 400 and bad.json()["error"]["param"] == "input"
