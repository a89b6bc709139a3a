"""A Responses API upstream (issue 31): tierwise in front of the fake Responses server, driven by the
official ``openai`` SDK — as a Responses client (``client.responses.create``) and as a Chat
Completions client (``client.chat.completions.create``)."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

from tests.fake_responses import REASONING, FakeResponses, ResponsesReply, fake_responses
from tests.server.test_openai_compat import Service, service, store
from tierwise.providers import RetryPolicy
from tierwise.providers.responses_api import ResponsesProvider
from tierwise.store import Store

__all__ = ["fake_responses", "store"]

pytestmark = pytest.mark.anyio

WEATHER: Any = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    "strict": False,
}
CHAT_WEATHER: Any = {"type": "function", "function": {k: v for k, v in WEATHER.items() if k != "type"}}
CALL = {"id": "call_w1", "name": "get_weather", "arguments": {"city": "Paris"}}
QUESTION = {"role": "user", "content": "Weather in Paris?"}


def over(fake: FakeResponses, store: Store) -> Service:
    provider = ResponsesProvider(
        base_url=fake.url, api_key="k", model="up-model", retry_policy=RetryPolicy(2, 0.001)
    )
    return service(store, provider, window=8_000)


async def create(client: openai.AsyncOpenAI, stream: bool, **body: Any) -> Any:
    """A response, streamed (the ``response.completed`` event's) or not; the stream's events too."""
    if not stream:
        return await client.responses.create(model="m", **body), []
    events = [e async for e in await client.responses.create(model="m", stream=True, **body)]
    assert events[-1].type == "response.completed"
    return events[-1].response, events


def function_call() -> dict[str, Any]:
    return {
        "type": "function_call",
        "call_id": "call_w1",
        "name": "get_weather",
        "arguments": '{"city": "Paris"}',
    }


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("chained", [True, False])
async def test_a_tool_round_trip_carries_the_reasoning_item_back_unchanged(
    store: Store, fake_responses: FakeResponses, stream: bool, chained: bool
) -> None:
    fake_responses.script(
        ResponsesReply(reasoning=REASONING, tool_calls=[CALL]),
        ResponsesReply(
            "It is 12°C and raining in Paris.",
            usage={"input_tokens": 90, "output_tokens": 9, "total_tokens": 99, "cached_tokens": 64},
        ),
    )
    svc = over(fake_responses, store)
    own = {"store": False, "include": ["reasoning.encrypted_content"], "reasoning": {"effort": "low"}}
    async with svc.client() as client:
        first, events = await create(
            client, stream, input=[QUESTION], tools=[WEATHER], instructions="Answer briefly.", **own
        )
        # The upstream's reasoning item reaches the client whole, before the call.
        reasoning, call = first.output
        assert reasoning.type == "reasoning" and reasoning.encrypted_content == REASONING["encrypted_content"]
        assert reasoning.model_dump(exclude_none=True) == REASONING
        assert call.type == "function_call" and json.loads(call.arguments) == {"city": "Paris"}
        if stream:
            added = [e.item.type for e in events if e.type == "response.output_item.added"]
            assert added == ["reasoning", "function_call"]
            done = [e for e in events if e.type == "response.output_item.done"]
            assert done[0].item.model_dump(exclude_none=True) == REASONING and done[0].output_index == 0
        result = {"type": "function_call_output", "call_id": call.call_id, "output": "12°C, rain"}
        if chained:
            second, _ = await create(
                client, stream, input=[result], previous_response_id=first.id, tools=[WEATHER], **own
            )
        else:  # the whole input resent, the earlier output (the reasoning item too) with it
            items: list[Any] = [QUESTION, *(i.model_dump(exclude_none=True) for i in first.output), result]
            second, _ = await create(
                client, stream, input=items, tools=[WEATHER], instructions="Answer briefly.", **own
            )
    assert second.output_text == "It is 12°C and raining in Paris."
    assert second.usage.input_tokens == 90 and second.usage.input_tokens_details.cached_tokens == 64
    sent_first, sent_second = fake_responses.requests
    assert sent_first["tools"] == [WEATHER] and sent_first["instructions"].startswith("Answer briefly.")
    for sent in (sent_first, sent_second):  # the client's own fields, as it sent them
        assert {k: sent[k] for k in own} == own and sent["stream"] is True and sent["model"] == "up-model"
    assert sent_second["input"][-3:] == [
        REASONING,  # unchanged: encrypted_content and all
        function_call(),
        {"type": "function_call_output", "call_id": "call_w1", "output": "12°C, rain"},
    ]
    assert {"type": "message", "role": "user", "content": "Weather in Paris?"} in sent_second["input"]
    (chat,) = await svc.api_chats()  # one chat, both ways
    stored = await svc.stored(chat.id)
    assert [m["role"] for m in stored] == ["user", "assistant", "tool", "assistant"]
    assert stored[1]["response_items"] == [REASONING]


async def test_a_text_answer_with_reasoning_has_the_reasoning_item_first(
    store: Store, fake_responses: FakeResponses
) -> None:
    fake_responses.script(ResponsesReply("Paris.", reasoning=REASONING), ResponsesReply("Lyon."))
    svc = over(fake_responses, store)
    async with svc.client() as client:
        async with client.responses.stream(model="m", input="Capital of France?") as helper:
            kinds = [(e.type, getattr(getattr(e, "item", None), "type", None)) async for e in helper]
            final = await helper.get_final_response()
        assert [o.type for o in final.output] == ["reasoning", "message"] and final.output_text == "Paris."
        assert kinds.index(("response.output_item.done", "reasoning")) < kinds.index(
            ("response.output_item.added", "message")
        )
        again = await client.responses.create(
            model="m", input="And its second city?", previous_response_id=final.id
        )
    assert again.output_text == "Lyon."
    assert fake_responses.requests[1]["input"] == [
        {"type": "message", "role": "user", "content": "Capital of France?"},
        REASONING,
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Paris.", "annotations": []}],
        },
        {"type": "message", "role": "user", "content": "And its second city?"},
    ]
    assert "store" not in fake_responses.requests[0]  # a Responses client's choice: it sent none
    assert len(await svc.api_chats()) == 1


async def test_an_upstream_error_passes_through_with_its_status(
    store: Store, fake_responses: FakeResponses
) -> None:
    body = {
        "error": {
            "message": "Invalid 'input'.",
            "type": "invalid_request_error",
            "param": "input",
            "code": "bad",
        }
    }
    fake_responses.fail(400, times=2, body=body)
    svc = over(fake_responses, store)
    async with svc.client() as client:
        for stream in (False, True):
            with pytest.raises(openai.BadRequestError) as caught:
                await client.responses.create(model="m", input="hi", stream=stream)
            assert caught.value.status_code == 400 and caught.value.code == "bad"


@pytest.mark.parametrize("stream", [False, True])
async def test_a_chat_completions_client_completes_a_tool_round_trip(
    store: Store, fake_responses: FakeResponses, stream: bool
) -> None:
    fake_responses.script(
        ResponsesReply(reasoning=REASONING, tool_calls=[CALL]),
        ResponsesReply("It is 12°C and raining in Paris."),
    )
    svc = over(fake_responses, store)
    messages: list[Any] = [{"role": "system", "content": "Answer briefly."}, QUESTION]
    async with svc.client() as client:
        if stream:
            chunks = [
                c
                async for c in await client.chat.completions.create(
                    model="m", messages=messages, tools=[CHAT_WEATHER], stream=True, max_completion_tokens=500
                )
            ]
            pieces = [t for c in chunks if c.choices for t in c.choices[0].delta.tool_calls or ()]
            call_id, name = pieces[0].id, pieces[0].function.name
            arguments = "".join(p.function.arguments or "" for p in pieces)
            carried = [
                i
                for c in chunks
                if c.choices
                for i in (c.choices[0].delta.model_extra or {}).get("response_items", ())
            ]
            assert chunks[-1].choices == [] or chunks[-1].choices[0].finish_reason == "tool_calls"
            answer: dict[str, Any] = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
                ],
                "response_items": carried,
            }
        else:
            first = await client.chat.completions.create(
                model="m", messages=messages, tools=[CHAT_WEATHER], max_completion_tokens=500
            )
            assert first.choices[0].finish_reason == "tool_calls"
            answer = first.choices[0].message.model_dump(exclude_none=True)
            (call,) = first.choices[0].message.tool_calls or ()
            call_id, name, arguments = call.id, call.function.name, call.function.arguments
        assert (name, json.loads(arguments)) == ("get_weather", {"city": "Paris"})
        assert answer["response_items"] == [REASONING]  # relayed to the chat client, as it came
        result = {"role": "tool", "tool_call_id": call_id, "content": "12°C, rain"}
        second = await client.chat.completions.create(
            model="m", messages=[*messages, answer, result], tools=[CHAT_WEATHER]
        )
    assert second.choices[0].message.content == "It is 12°C and raining in Paris."
    sent_first, sent_second = fake_responses.requests
    assert sent_first["tools"] == [{**WEATHER}] and sent_first["instructions"] == "Answer briefly."
    assert sent_first["max_output_tokens"] == 500 and sent_first["store"] is False
    assert sent_second["input"][-3:] == [
        REASONING,
        function_call(),
        {"type": "function_call_output", "call_id": "call_w1", "output": "12°C, rain"},
    ]
    assert len(await svc.api_chats()) == 1


@pytest.mark.parametrize("stream", [False, True])
async def test_a_custom_tool_call_reaches_a_responses_client(
    store: Store, fake_responses: FakeResponses, stream: bool
) -> None:
    patch = {"id": "call_p1", "name": "apply_patch", "input": "*** Begin Patch\n*** End Patch"}
    fake_responses.script(ResponsesReply(custom_calls=[patch]), "Patched.")
    svc = over(fake_responses, store)
    tool = {"type": "custom", "name": "apply_patch", "description": "Edit files."}
    async with svc.client() as client:
        first, _ = await create(client, stream, input="Fix it.", tools=[tool])
        (call,) = first.output
        assert (call.type, call.call_id, call.name, call.input) == (
            "custom_tool_call",
            "call_p1",
            "apply_patch",
            patch["input"],
        )
        result = {"type": "custom_tool_call_output", "call_id": "call_p1", "output": "Done!"}
        second, _ = await create(client, stream, input=[result], previous_response_id=first.id, tools=[tool])
    assert second.output_text == "Patched."
    assert fake_responses.requests[0]["tools"] == [tool]
    assert fake_responses.requests[1]["input"][-2:] == [
        {"type": "custom_tool_call", "call_id": "call_p1", "name": "apply_patch", "input": patch["input"]},
        result,
    ]
