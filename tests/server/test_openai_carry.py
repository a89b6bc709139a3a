"""``/v1`` carries what it does not understand (issue 30, decision 67), found with current clients.

Each test drives the app with the official ``openai`` SDK (raw httpx where the SDK's types do not
allow a field) against a fake OpenAI upstream on loopback that records the raw body it got, so what
tierwise forwards is compared field for field with what the client sent.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from tests.fake_openai import FakeOpenAI, FakeReply, fake_openai
from tests.server.test_openai_compat import Service, service
from tierwise.providers import OpenAICompatProvider, RetryPolicy
from tierwise.providers.testing import ScriptedModel
from tierwise.server.openai_pairs import UNANSWERED, UNPRECEDED
from tierwise.store import Store

__all__ = ["fake_openai"]

pytestmark = pytest.mark.anyio

URL = "/v1/chat/completions"
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}
CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
}
RESULT = {"role": "tool", "tool_call_id": "call_1", "content": "18C, light rain"}


@pytest.fixture
def store() -> Iterator[Store]:
    opened = Store.open("sqlite://")
    yield opened
    opened.close()


def upstream(store: Store, fake: FakeOpenAI, *replies: FakeReply | str) -> Service:
    """The app in front of the fake OpenAI server, with ``replies`` queued."""
    fake.script(*replies)
    provider = OpenAICompatProvider(
        base_url=fake.url, api_key="k", model="fake-model", retry_policy=RetryPolicy(max_retries=0)
    )
    return service(store, provider, window=16_000, reserve=1_000)


async def forwarded(svc: Service, fake: FakeOpenAI, body: dict[str, Any]) -> dict[str, Any]:
    """Post ``body`` (raw JSON); the body the upstream got."""
    seen = len(fake.requests)
    async with svc.http() as http:
        response = await http.post(URL, json=body)
    assert response.status_code == 200, response.text
    assert len(fake.requests) == seen + 1
    return fake.requests[-1]


# -- dropped from the history forwarded upstream -----------------------------------------------------


async def test_reasoning_content_goes_back_upstream(store: Store, fake_openai: FakeOpenAI) -> None:
    """DeepSeek's thinking mode with tools needs the assistant's reasoning_content back in the turn."""
    svc = upstream(store, fake_openai, "It is 18C and raining in Paris.")
    thought = "The user wants Paris's weather; I should call get_weather."
    messages = [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "reasoning_content": thought, "tool_calls": [CALL]},
        RESULT,
    ]
    async with svc.client() as client:
        await client.chat.completions.create(model="deepseek-reasoner", messages=messages, tools=[WEATHER])  # type: ignore[arg-type,list-item]
    sent = fake_openai.requests[-1]["messages"]
    assert sent[1]["reasoning_content"] == thought
    assert sent == messages


async def test_refusal_and_audio_of_earlier_answers_go_back_upstream(
    store: Store, fake_openai: FakeOpenAI
) -> None:
    svc = upstream(store, fake_openai, "Here is the summary.")
    messages = [
        {"role": "user", "content": "Help me pick a lock."},
        {"role": "assistant", "content": None, "refusal": "I can't help with that."},
        {"role": "user", "content": "Then say hello in a voice."},
        {"role": "assistant", "content": None, "audio": {"id": "audio_abc123"}},
        {"role": "user", "content": "Summarise our chat."},
    ]
    async with svc.client() as client:
        await client.chat.completions.create(model="m", messages=messages)  # type: ignore[arg-type]
    sent = fake_openai.requests[-1]["messages"]
    assert sent[1]["refusal"] == "I can't help with that." and sent[3]["audio"] == {"id": "audio_abc123"}


async def test_a_prefix_completion_keeps_prefix_true(store: Store, fake_openai: FakeOpenAI) -> None:
    """DeepSeek's and Mistral's prefix completion: the last assistant message is the answer's start."""
    svc = upstream(store, fake_openai, "    return a + b\n```")
    messages = [
        {"role": "user", "content": "Write add(a, b) in Python."},
        {"role": "assistant", "content": "```python\ndef add(a, b):\n", "prefix": True},
    ]
    body = await forwarded(
        svc, fake_openai, {"model": "deepseek-chat", "messages": messages, "stop": ["```"]}
    )
    assert body["messages"][-1] == messages[-1]


async def test_message_level_cache_control_goes_upstream(store: Store, fake_openai: FakeOpenAI) -> None:
    """Anthropic-via-OpenAI-compatible proxies read cache_control on the message itself."""
    svc = upstream(store, fake_openai, "Noted.")
    marker = {"type": "ephemeral"}
    messages = [
        {"role": "system", "content": "You are a careful planner.", "cache_control": marker},
        {"role": "user", "content": "Plan the offsite.", "cache_control": marker},
    ]
    body = await forwarded(svc, fake_openai, {"model": "claude-sonnet", "messages": messages})
    assert body["messages"] == messages


# -- dropped from the response to the client -------------------------------------------------------

DETAILS = {
    "completion_tokens_details": {"reasoning_tokens": 64, "audio_tokens": 0},
    "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
}


async def test_system_fingerprint_and_usage_details_reach_the_client(
    store: Store, fake_openai: FakeOpenAI
) -> None:
    reply = FakeReply(text="Fine.", fields={"system_fingerprint": "fp_44709d6fcb"}, usage_details=DETAILS)
    svc = upstream(store, fake_openai, reply, reply)
    messages = [{"role": "user", "content": "Hello"}]
    async with svc.client() as client:
        whole = await client.chat.completions.create(model="m", messages=messages)  # type: ignore[arg-type]
        stream = await client.chat.completions.create(
            model="m",
            messages=messages,  # type: ignore[arg-type]
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = [chunk async for chunk in stream]
    assert whole.system_fingerprint == "fp_44709d6fcb"
    assert whole.usage is not None and whole.usage.completion_tokens_details is not None
    assert whole.usage.completion_tokens_details.reasoning_tokens == 64
    assert (
        whole.usage.prompt_tokens_details is not None and whole.usage.prompt_tokens_details.audio_tokens == 0
    )
    assert [c.system_fingerprint for c in chunks if c.choices and c.choices[0].finish_reason] == [
        "fp_44709d6fcb"
    ]
    usage = chunks[-1].usage
    assert usage is not None and usage.completion_tokens_details is not None
    assert usage.completion_tokens_details.reasoning_tokens == 64


# -- refused with 400 ---------------------------------------------------------------------------------


async def test_input_audio_and_file_parts_are_forwarded_as_sent(
    store: Store, fake_openai: FakeOpenAI
) -> None:
    svc = upstream(store, fake_openai, "A cough, then 'hello'.", "It is about budgets.")
    audio = {
        "type": "input_audio",
        "input_audio": {"data": "UklGRiQAAABXQVZFZm10IBAAAAABAAEA", "format": "wav"},
    }
    said = [{"role": "user", "content": [{"type": "text", "text": "What is said here?"}, audio]}]
    pdf = {
        "type": "file",
        "file": {"filename": "q3.pdf", "file_data": "data:application/pdf;base64,JVBERi0xLjQK"},
    }
    read = [{"role": "user", "content": [pdf, {"type": "text", "text": "What is this about?"}]}]
    async with svc.client() as client:
        await client.chat.completions.create(model="gpt-4o-audio-preview", messages=said)  # type: ignore[arg-type]
        await client.chat.completions.create(model="gpt-4o", messages=read)  # type: ignore[arg-type]
    assert [body["messages"] for body in fake_openai.requests] == [said, read]


async def test_custom_tools_are_forwarded_and_their_calls_relayed(
    store: Store, fake_openai: FakeOpenAI
) -> None:
    """OpenAI's custom tools (free-form input, a grammar): offered as sent, called back as sent."""
    grammar = {"type": "grammar", "grammar": {"syntax": "lark", "definition": 'start: "SELECT " /[a-z]+/'}}
    tool = {"type": "custom", "custom": {"name": "sql", "description": "Run a query.", "format": grammar}}
    pieces = [
        {
            "tool_calls": [
                {"index": 0, "id": "call_sql", "type": "custom", "custom": {"name": "sql", "input": ""}}
            ]
        },
        {"tool_calls": [{"index": 0, "custom": {"input": "SELECT "}}]},
        {"tool_calls": [{"index": 0, "custom": {"input": "users"}}]},
    ]
    reply = FakeReply(deltas=pieces, finish_reason="tool_calls")
    svc = upstream(store, fake_openai, reply, reply)
    messages = [{"role": "user", "content": "How many users?"}]
    async with svc.client() as client:
        whole = await client.chat.completions.create(model="m", messages=messages, tools=[tool])  # type: ignore[arg-type,list-item]
        stream = await client.chat.completions.create(model="m", messages=messages, tools=[tool], stream=True)  # type: ignore[arg-type,list-item]
        chunks = [chunk async for chunk in stream]
    assert fake_openai.requests[0]["tools"] == [tool]
    (call,) = whole.choices[0].message.tool_calls or []
    assert call.model_dump(exclude_none=True) == {
        "id": "call_sql",
        "type": "custom",
        "custom": {"name": "sql", "input": "SELECT users"},
    }
    assert whole.choices[0].finish_reason == "tool_calls"
    streamed = [
        p.model_dump(exclude_none=True)
        for c in chunks
        if c.choices
        for p in c.choices[0].delta.tool_calls or ()
    ]
    assert streamed == pieces_as_sent(pieces)
    # the answer is stored as the client got it, and its result goes back paired with it
    fake_openai.script("There are 42 users.")
    history = [*messages, whole.choices[0].message.model_dump(exclude_none=True)]
    history.append({"role": "tool", "tool_call_id": "call_sql", "content": "42"})
    async with svc.client() as client:
        await client.chat.completions.create(model="m", messages=history, tools=[tool])  # type: ignore[arg-type,list-item]
    assert fake_openai.requests[-1]["messages"] == history


def pieces_as_sent(pieces: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [call for piece in pieces for call in piece["tool_calls"]]


async def test_tool_choice_allowed_tools_is_forwarded(store: Store, fake_openai: FakeOpenAI) -> None:
    svc = upstream(store, fake_openai, "Sunny.")
    choice = {
        "type": "allowed_tools",
        "allowed_tools": {
            "mode": "auto",
            "tools": [{"type": "function", "function": {"name": "get_weather"}}],
        },
    }
    messages = [{"role": "user", "content": "Weather in Oslo?"}]
    async with svc.client() as client:
        await client.chat.completions.create(
            model="m", messages=messages, tools=[WEATHER], tool_choice=choice
        )  # type: ignore[arg-type]
    body = fake_openai.requests[-1]
    assert body["tool_choice"] == choice and body["tools"] == [WEATHER]


# -- the client's order -----------------------------------------------------------------------------


async def test_a_mid_conversation_system_message_keeps_its_place(
    store: Store, fake_openai: FakeOpenAI
) -> None:
    svc = upstream(store, fake_openai, "Bonjour !", "Au revoir !")
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "Hello"},
        {"role": "assistant", "content": "Hi! How can I help?"},
        {"role": "system", "content": "From now on, answer in French."},
        {"role": "user", "content": "Hello again"},
    ]
    async with svc.client() as client:
        first = await client.chat.completions.create(model="m", messages=messages)  # type: ignore[arg-type]
        messages += [{"role": "assistant", "content": first.choices[0].message.content}]
        messages += [{"role": "user", "content": "Goodbye"}]
        await client.chat.completions.create(model="m", messages=messages)  # type: ignore[arg-type]
    assert [body["messages"] for body in fake_openai.requests] == [messages[:5], messages]


# -- malformed history: the upstream's 400, unless asked to repair ----------------------------------

UNANSWERED_CALL = [
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": None, "tool_calls": [CALL]},
    {"role": "user", "content": "Never mind, what about Rome?"},
]
MISPLACED_RESULT = [
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": None, "tool_calls": [CALL]},
    RESULT,
    {"role": "user", "content": "And tomorrow?"},
    {"role": "tool", "tool_call_id": "call_1", "content": "20C, sunny"},
]


async def test_an_unanswered_tool_call_is_openais_400(store: Store) -> None:
    model = ScriptedModel("never")
    svc = service(store, model)
    async with svc.client() as client:
        with pytest.raises(openai.BadRequestError) as refused:
            await client.chat.completions.create(model="m", messages=UNANSWERED_CALL, tools=[WEATHER])  # type: ignore[arg-type,list-item]
    assert refused.value.body == {
        "message": UNANSWERED.format(ids="call_1"),
        "type": "invalid_request_error",
        "param": "messages",
        "code": None,
    }
    assert "did not have response messages: call_1" in refused.value.message
    assert model.requests == []  # was sent with the call silently left out: the model ran it again


async def test_a_misplaced_tool_result_is_openais_400(store: Store) -> None:
    model = ScriptedModel("never")
    svc = service(store, model)
    async with svc.client() as client:
        with pytest.raises(openai.BadRequestError) as refused:
            await client.chat.completions.create(model="m", messages=MISPLACED_RESULT, tools=[WEATHER])  # type: ignore[arg-type,list-item]
    body = refused.value.body
    assert isinstance(body, dict) and body["message"] == UNPRECEDED and body["param"] == "messages"
    assert model.requests == []


async def test_repair_history_leaves_the_strays_out(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIERWISE_REPAIR_HISTORY", "1")
    model = ScriptedModel("Rome: 25C.", "Tomorrow: sunny.")
    svc = service(store, model)
    async with svc.client() as client:
        await client.chat.completions.create(model="m", messages=UNANSWERED_CALL, tools=[WEATHER])  # type: ignore[arg-type,list-item]
    async with svc.client() as client:
        await client.chat.completions.create(
            model="m",
            messages=MISPLACED_RESULT,  # type: ignore[arg-type]
            tools=[WEATHER],  # type: ignore[list-item]
            extra_headers={"X-Tierwise-Session": "repaired"},
        )
    unanswered, misplaced = (request.messages for request in model.requests)
    assert unanswered == [UNANSWERED_CALL[0], UNANSWERED_CALL[2]]  # the call without its result left out
    assert misplaced == MISPLACED_RESULT[:4]  # the stray result left out


# -- field for field ---------------------------------------------------------------------------------


async def test_a_conversation_that_fits_is_forwarded_field_for_field(
    store: Store, fake_openai: FakeOpenAI
) -> None:
    """The forwarded messages equal the client's, on a new session and on one that continues.

    The second request resends the first answer as clients do (with ``refusal: null`` and
    ``annotations: []`` from the SDK's message, its ``reasoning_content`` dropped) and moves the
    ``cache_control`` marker to the newest message: the upstream gets that copy, not memory's.
    """
    thinking = FakeReply(text="Lisbon, probably.", deltas=[{"reasoning_content": "Warm, coastal, cheap."}])
    svc = upstream(store, fake_openai, thinking, "Book it for May.")
    marker = {"type": "ephemeral"}
    messages: list[dict[str, Any]] = [
        {"role": "developer", "content": "Be concise.", "name": "ops"},
        {
            "role": "user",
            "content": [{"type": "text", "text": "Where should the offsite be?", "cache_control": marker}],
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [CALL],
            "reasoning_content": "Check the weather.",
        },
        {**RESULT, "name": "get_weather"},
        {"role": "system", "content": "Prices are in euros."},
        {"role": "user", "content": "Pick one.", "cache_control": marker},
    ]
    sent = copy.deepcopy(messages)
    async with svc.client() as client:
        first = await client.chat.completions.create(model="m", messages=messages, tools=[WEATHER])  # type: ignore[arg-type,list-item]
    assert fake_openai.requests[0]["messages"] == sent
    assert first.choices[0].message.model_extra == {"reasoning_content": "Warm, coastal, cheap."}
    answer = first.choices[0].message.model_dump()  # as a client appends it: every field, nulls too
    del answer["reasoning_content"]  # (DeepSeek: not sent back outside a tool-calling turn)
    del messages[-1]["cache_control"]
    messages += [answer, {"role": "user", "content": "Go with it.", "cache_control": marker}]
    async with svc.client() as client:
        await client.chat.completions.create(model="m", messages=messages, tools=[WEATHER])  # type: ignore[arg-type,list-item]
    assert fake_openai.requests[1]["messages"] == messages
    assert fake_openai.requests[1]["tools"] == [WEATHER]
