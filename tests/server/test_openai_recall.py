"""Issue 29, point 2: pointers that work through ``/v1``.

Once a long conversation compacts, the pack points at what it left out (segment headers, compressed
tool results with their sha256). tierwise adds ``recall_segments`` and ``open_blob`` to the client's
tools, answers the model's calls to them itself and asks the upstream again; the client gets one
answer and never sees those calls. Driven by the official ``openai`` SDK in-process, against
scripted upstreams (``ScriptedModel``, and the loopback fake OpenAI server for real SSE pieces).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from tests.fake_openai import FakeOpenAI, FakeReply, fake_openai
from tests.server.test_openai_compat import Service, backend_store, service, store
from tierwise.chat.housekeeping import RETRIEVAL_GUIDE, memory_tools
from tierwise.providers import OpenAICompatProvider
from tierwise.providers.base import ModelRequest, ModelResponse, ToolCall, Usage
from tierwise.providers.testing import ScriptedModel, tool_call
from tierwise.server.openai_recall import MAX_ROUNDS
from tierwise.store import Store
from tierwise.tokens import get_counter

__all__ = ["backend_store", "fake_openai", "store"]

pytestmark = pytest.mark.anyio

WINDOW, RESERVE = 8_000, 500  # a 15k-token history compacts at once
READ_LOG = {
    "type": "function",
    "function": {
        "name": "read_log",
        "description": "A worker's build log.",
        "parameters": {
            "type": "object",
            "properties": {"worker": {"type": "integer"}},
            "required": ["worker"],
        },
    },
}
OURS = ["open_blob", "recall_segments"]
QUESTION = "Which worker had the slowest step?"


def log(worker: int) -> str:
    """A worker's 60-line build log (~1,200 tokens: memory keeps it as a blob)."""
    return "\n".join(
        f"{worker:02d}:{j:03d} worker-{worker} step {j} ok sum {worker * 1000 + j:07d} latency {j % 37}ms"
        for j in range(60)
    )


def sha(worker: int) -> str:
    return hashlib.sha256(log(worker).encode()).hexdigest()


def history(turns: int = 12) -> list[dict[str, Any]]:
    """A build conversation: each turn the client's read_log call, its big result and an answer."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a build assistant."}]
    for i in range(turns):
        call = {
            "id": f"read_{i}",
            "type": "function",
            "function": {"name": "read_log", "arguments": f'{{"worker": {i}}}'},
        }
        messages += [
            {"role": "user", "content": f"Check the build log of worker {i}."},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"read_{i}", "content": log(i)},
            {"role": "assistant", "content": f"Worker {i} passed all 60 steps."},
        ]
    return [*messages, {"role": "user", "content": QUESTION}]


def names(request: ModelRequest) -> list[str]:
    return [t["function"]["name"] for t in request.tools]


def text(request: ModelRequest) -> str:
    return "\n".join(str(m.get("content") or "") for m in request.messages)


def usage(prompt: int, completion: int, cached: int = 0) -> Usage:
    return Usage(prompt, completion, prompt + completion, cached)


async def turn_details(svc: Service) -> dict[str, Any]:
    (chat,) = await svc.api_chats()
    (turn,) = svc.store.list_audit(svc.user, chat_id=chat.id, event="turn")
    return dict(turn.details)


# -- open_blob and recall_segments, answered by tierwise ----------------------------------------


async def test_open_blob_is_answered_by_tierwise_and_the_client_gets_only_the_answer(store: Store) -> None:
    opened = tool_call("open_blob", sha256=sha(11))
    model = ScriptedModel(
        ModelResponse(tool_calls=[opened], usage=usage(5_000, 20, 1_024)),
        ModelResponse(text="Worker 11's step 36 was slowest.", usage=usage(6_300, 9, 4_096)),
    )
    svc = service(store, model, WINDOW, RESERVE)
    messages = history()
    async with svc.client() as client:
        answer = await client.chat.completions.create(model="m", messages=messages, tools=[READ_LOG])  # type: ignore[arg-type, list-item]

    assert answer.choices[0].message.content == "Worker 11's step 36 was slowest."
    assert answer.choices[0].message.tool_calls is None
    assert answer.choices[0].finish_reason == "stop"
    assert answer.usage is not None  # summed over both rounds
    assert (answer.usage.prompt_tokens, answer.usage.completion_tokens) == (11_300, 29)
    assert answer.usage.prompt_tokens_details is not None
    assert answer.usage.prompt_tokens_details.cached_tokens == 5_120
    first, second = model.requests
    assert names(first) == ["read_log", *OURS]  # the client's first, ours after them
    definitions = {t.name: t.to_openai() for t in memory_tools()}
    assert first.tools[1:] == [definitions["open_blob"], definitions["recall_segments"]]  # the engine's
    assert first.messages[0] == messages[0]  # the client's system message first, as sent
    assert first.messages[1] == {"role": "system", "content": RETRIEVAL_GUIDE}
    assert f"blob sha256:{sha(11)} (open with open_blob)]" in text(first)  # the pointer it followed
    assert log(11) not in text(first)
    # the second request: the first's messages, the model's call and the blob's text
    assert second.messages[: len(first.messages)] == first.messages
    assert second.messages[len(first.messages)] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [opened.to_openai()],
    }
    assert second.messages[-1] == {"role": "tool", "tool_call_id": opened.id, "content": log(11)}
    assert names(second) == names(first) and second.tool_choice is None
    # stored: the client's messages and the answer it got, nothing of the round
    (chat,) = await svc.api_chats()
    stored = await svc.stored(chat.id)
    assert len(stored) == len(messages)  # the client's (its system message aside) and the answer
    assert stored[-2:] == [messages[-1], {"role": "assistant", "content": "Worker 11's step 36 was slowest."}]
    assert not [c for m in stored for c in m.get("tool_calls") or () if c["function"]["name"] != "read_log"]
    details = await turn_details(svc)
    assert details["steps"] == 2
    assert [(r["name"], r["ok"]) for r in details["retrieval"]] == [("open_blob", True)]
    assert details["usage"]["prompt_tokens"] == 11_300


async def test_open_blob_streamed_text_flows_and_the_call_is_withheld(store: Store) -> None:
    opened = tool_call("open_blob", sha256=sha(3))
    model = ScriptedModel(
        ModelResponse(text="Let me open worker 3's log.", tool_calls=[opened]),
        "Step 36 took 36ms.",
    )
    svc = service(store, model, WINDOW, RESERVE)
    async with svc.client() as client:
        stream = await client.chat.completions.create(
            model="m",
            messages=history(),  # type: ignore[arg-type]
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = [chunk async for chunk in stream]

    assert len({c.id for c in chunks}) == 1  # one answer
    deltas = [c.choices[0].delta for c in chunks if c.choices]
    assert all(d.tool_calls is None for d in deltas)
    assert "".join(d.content or "" for d in deltas) == "Let me open worker 3's log.\n\nStep 36 took 36ms."
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].usage is not None and not chunks[-1].choices
    first, second = model.requests
    counter = get_counter()  # ScriptedModel reports each request's prompt as counted: summed here
    prompts = [counter.count_messages(r.messages) + counter.count_tools(r.tools) for r in (first, second)]
    assert chunks[-1].usage.prompt_tokens == sum(prompts)
    assert names(first) == OURS  # the client offered no tools: ours alone
    assert log(3) in text(second)
    assert second.messages[len(first.messages)]["content"] == "Let me open worker 3's log."
    (chat,) = await svc.api_chats()
    assert (await svc.stored(chat.id))[-1]["content"] == "Let me open worker 3's log.\n\nStep 36 took 36ms."


async def test_recall_segments_brings_an_archived_segment_back_to_the_upstream(store: Store) -> None:
    recalled = tool_call("recall_segments", ids=["S1"], form="full")
    model = ScriptedModel(recalled, "Worker 0 was first.")
    svc = service(store, model, WINDOW, RESERVE)
    async with svc.client() as client:
        answer = await client.chat.completions.create(model="m", messages=history(), tools=[READ_LOG])  # type: ignore[arg-type, list-item]

    assert answer.choices[0].message.content == "Worker 0 was first."
    first, second = model.requests
    verbatim = '] assistant: → read_log({"worker": 0})'  # a line of S1's full text
    assert "S1 " in text(first) and verbatim not in text(first)  # archived: its header only
    result = second.messages[-1]
    assert result["role"] == "tool" and result["tool_call_id"] == recalled.id
    assert result["content"].startswith("S1 ") and verbatim in result["content"]


async def test_rounds_on_each_backend_then_the_next_request_continues_the_session(
    backend_store: Store,
) -> None:
    """On PostgreSQL the session's work runs in worker threads (the tools wait for its lock there)."""
    opened = tool_call("open_blob", sha256=sha(7))
    model = ScriptedModel(opened, "Worker 7 is fine.", "You're welcome.")
    svc = service(backend_store, model, WINDOW, RESERVE)
    messages = history()
    async with svc.client() as client:
        raw = await client.chat.completions.with_raw_response.create(model="m", messages=messages)  # type: ignore[arg-type]
        answer = raw.parse()
        messages += [
            {"role": "assistant", "content": answer.choices[0].message.content},
            {"role": "user", "content": "Thanks."},
        ]
        again = await client.chat.completions.with_raw_response.create(model="m", messages=messages)  # type: ignore[arg-type]

    assert answer.choices[0].message.content == "Worker 7 is fine."
    assert model.requests[1].messages[-1]["content"] == log(7)
    assert again.headers["x-tierwise-chat"] == raw.headers["x-tierwise-chat"]  # the history matched
    (chat,) = await svc.api_chats()
    stored = await svc.stored(chat.id)
    assert stored[-3:] == [*messages[-2:], {"role": "assistant", "content": "You're welcome."}]


# -- what passes through, what is bounded, what goes wrong ---------------------------------------


async def test_a_client_tool_call_passes_through_untouched(store: Store) -> None:
    read = tool_call("read_log", worker=12)
    model = ScriptedModel(read)
    svc = service(store, model, WINDOW, RESERVE)
    async with svc.client() as client:
        answer = await client.chat.completions.create(model="m", messages=history(), tools=[READ_LOG])  # type: ignore[arg-type, list-item]

    (call,) = answer.choices[0].message.tool_calls or []
    assert (call.id, call.function.name, call.function.arguments) == (read.id, "read_log", read.arguments)
    assert answer.choices[0].finish_reason == "tool_calls"
    assert len(model.requests) == 1
    assert names(model.requests[0]) == ["read_log", *OURS]


async def test_mixed_calls_give_the_client_its_own_and_drop_ours_unrun(fake_openai: FakeOpenAI) -> None:
    """Real SSE pieces (names only in each call's first piece, calls interleaved): ours is index 0."""
    backing = Store.open("sqlite://")
    provider = OpenAICompatProvider(base_url=fake_openai.url, model="m")
    try:
        svc = service(backing, provider, WINDOW, RESERVE)
        fake_openai.script(
            FakeReply(
                text="Checking.",
                tool_calls=[
                    {"id": "c_blob", "name": "open_blob", "arguments": {"sha256": sha(2)}},
                    {"id": "c_log", "name": "read_log", "arguments": {"worker": 12}},
                ],
                interleave=True,
            )
        )
        async with svc.client() as client:
            stream = await client.chat.completions.create(
                model="m",
                messages=history(),  # type: ignore[arg-type]
                tools=[READ_LOG],  # type: ignore[list-item]
                stream=True,
            )
            chunks = [chunk async for chunk in stream]
        await svc.settled()
    finally:
        await provider.aclose()
        backing.close()

    pieces = [p for c in chunks if c.choices for p in c.choices[0].delta.tool_calls or ()]
    assert {p.index for p in pieces} == {0}  # re-indexed: the client's only call is its first
    assert [p.id for p in pieces if p.id] == ["c_log"]
    assert [p.function.name for p in pieces if p.function and p.function.name] == ["read_log"]
    assert "".join(p.function.arguments or "" for p in pieces if p.function) == '{"worker": 12}'
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Checking."
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "tool_calls"
    assert len(fake_openai.requests) == 1  # ours dropped, not run, not asked again


async def test_rounds_are_bounded_and_the_last_forbids_our_tools(store: Store) -> None:
    calls = [tool_call("open_blob", sha256=sha(i)) for i in range(MAX_ROUNDS)]
    model = ScriptedModel(*calls)
    svc = service(store, model, WINDOW, RESERVE)
    async with svc.client() as client:
        alone = await client.chat.completions.create(model="m", messages=history())  # type: ignore[arg-type]

    assert len(model.requests) == MAX_ROUNDS
    last = model.requests[-1]
    assert last.tool_choice == "none" and names(last) == OURS  # same tools, the cache's front kept
    assert alone.choices[0].message.tool_calls is None  # the unrun call never reaches the client
    assert alone.choices[0].finish_reason == "stop"
    assert (await turn_details(svc))["steps"] == MAX_ROUNDS

    with_tools = ScriptedModel(*[tool_call("open_blob", sha256=sha(i)) for i in range(MAX_ROUNDS)])
    other = service(Store.open("sqlite://"), with_tools, WINDOW, RESERVE)
    async with other.client() as client:
        await client.chat.completions.create(model="m", messages=history(), tools=[READ_LOG])  # type: ignore[arg-type, list-item]
    last = with_tools.requests[-1]
    assert names(last) == ["read_log"] and last.tool_choice is None  # ours left out beside the client's
    assert names(with_tools.requests[-2]) == ["read_log", *OURS]


@pytest.mark.parametrize(
    ("given", "error"),
    [
        ("abc", "is not a blob hash"),
        ("ab" * 32, f"error: no blob sha256:{'ab' * 32} is stored. Copy the hash exactly"),  # unknown
        ({"sha": "x"}, "invalid arguments for open_blob"),
    ],
)
async def test_a_bad_call_gets_the_tools_error_back_upstream_not_a_500(
    store: Store, given: Any, error: str
) -> None:
    arguments = json.dumps(given if isinstance(given, dict) else {"sha256": given})
    bad = ToolCall("call_bad", "open_blob", arguments)
    model = ScriptedModel(bad, "I could not open it.")
    svc = service(store, model, WINDOW, RESERVE)
    async with svc.client() as client:
        answer = await client.chat.completions.create(model="m", messages=history())  # type: ignore[arg-type]

    assert answer.choices[0].message.content == "I could not open it."
    result = model.requests[1].messages[-1]
    assert result["tool_call_id"] == "call_bad" and result["content"].startswith("error:")
    assert error in result["content"]
    assert (await turn_details(svc))["retrieval"][0]["ok"] is False


async def test_a_result_too_big_for_the_budget_is_cut_to_fit(store: Store) -> None:
    big = "\n".join(f"line {i}: " + "word " * 30 for i in range(400))  # ~60 kB, ~14k tokens
    messages = [{"role": "system", "content": "Be brief."}, *history()[1:-1]]
    messages += [
        {"role": "user", "content": "Dump the artefact list."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c_big", "type": "function", "function": {"name": "read_log", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c_big", "content": big},
        {"role": "assistant", "content": "Listed."},
        {"role": "user", "content": "And the worker 5 log again, in full?"},
    ]
    opened = [tool_call("open_blob", sha256=hashlib.sha256(big.encode()).hexdigest())]  # 16 kB of it
    model = ScriptedModel(opened, "Done.")
    svc = service(store, model, 3_000, 300)
    async with svc.client() as client:
        await client.chat.completions.create(model="m", messages=messages, tools=[READ_LOG])  # type: ignore[arg-type, list-item]

    second = model.requests[1]
    content = second.messages[-1]["content"]
    assert content.startswith("line 0: ") and "the middle left out to fit the context" in content
    counter = get_counter()
    assert counter.count_messages(second.messages) + counter.count_tools(second.tools) <= 3_000 - 300


async def test_a_first_request_whose_step_is_cut_gets_the_pointer_and_the_tool(store: Store) -> None:
    """A fresh session's step too big for the budget: cut with ``open_blob(sha256=…)``, and offered it.

    The cut is the session's first pointer. It named no hash when the pack was built without the tool
    (a pointer nobody could follow), and so the pack was never built again with it.
    """
    big = "\n".join(f"row {i:05d}: artefact {i * 7919 % 100_003:06d} ok" for i in range(1_500))
    call = {"id": "c_big", "type": "function", "function": {"name": "read_log", "arguments": "{}"}}
    messages = [
        {"role": "user", "content": "List the artefacts."},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c_big", "content": big},
    ]
    model = ScriptedModel("Listed.")
    svc = service(store, model, WINDOW, RESERVE)
    async with svc.client() as client:
        await client.chat.completions.create(model="m", messages=messages, tools=[READ_LOG])  # type: ignore[arg-type, list-item]

    (request,) = model.requests
    sent = request.messages[-1]["content"]
    digest = hashlib.sha256(big.encode()).hexdigest()
    assert sent.startswith(big[:200]) and sent.endswith(big[-200:]) and len(sent) < len(big) // 2
    assert f'open_blob(sha256="{digest}") reads all of it' in sent
    assert names(request) == ["read_log", *OURS]


# -- when tierwise's tools are not added -----------------------------------------------------------


@pytest.mark.parametrize(
    "extra",
    [
        {"tool_choice": "required"},
        {"tool_choice": {"type": "function", "function": {"name": "read_log"}}},
        {"tool_choice": "none"},
        {"n": 2},
    ],
)
async def test_ours_are_never_offered_where_nobody_would_answer_them(
    store: Store, extra: dict[str, Any]
) -> None:
    model = ScriptedModel("Fine.")
    svc = service(store, model, WINDOW, RESERVE)
    async with svc.http() as http:
        body = {"model": "m", "messages": history(), "tools": [READ_LOG], **extra}
        response = await http.post("/v1/chat/completions", json=body)
    assert response.status_code == 200, response.text
    (request,) = model.requests
    assert names(request) == ["read_log"]
    assert RETRIEVAL_GUIDE not in text(request)


async def test_a_short_conversation_gets_no_retrieval_tools_a_compacted_one_keeps_them(store: Store) -> None:
    model = ScriptedModel("Hello.", "Noted.", "Still noted.")
    svc = service(store, model, WINDOW, RESERVE)
    short = [{"role": "user", "content": "Hi"}]
    headers = {"X-Tierwise-Session": "grows"}
    async with svc.client() as client:
        await client.chat.completions.create(model="m", messages=short, tools=[READ_LOG])  # type: ignore[arg-type, list-item]
        grown = history()
        answer = await client.chat.completions.create(
            model="m",
            messages=grown,  # type: ignore[arg-type]
            tools=[READ_LOG],  # type: ignore[list-item]
            extra_headers=headers,
        )
        grown += [
            {"role": "assistant", "content": answer.choices[0].message.content},
            {"role": "user", "content": "Thanks."},
        ]
        raw = await client.chat.completions.with_raw_response.create(
            model="m",
            messages=grown,  # type: ignore[arg-type]
            tools=[READ_LOG],  # type: ignore[list-item]
            extra_headers=headers,
        )
    assert names(model.requests[0]) == ["read_log"]
    assert names(model.requests[1]) == names(model.requests[2]) == ["read_log", *OURS]
    chats = await svc.api_chats()
    assert raw.headers["x-tierwise-chat"] in {c.id for c in chats}
    assert len(chats) == 2  # the short session's and the grown one, which its next request continued


async def test_a_client_tool_named_open_blob_is_the_clients(store: Store) -> None:
    own = {
        "type": "function",
        "function": {"name": "open_blob", "parameters": {"type": "object", "properties": {}}},
    }
    call = tool_call("open_blob", sha256=sha(4))
    model = ScriptedModel(call)
    svc = service(store, model, WINDOW, RESERVE)
    async with svc.client() as client:
        answer = await client.chat.completions.create(model="m", messages=history(), tools=[READ_LOG, own])  # type: ignore[arg-type, list-item]

    (request,) = model.requests
    assert names(request) == ["read_log", "open_blob", "recall_segments"]
    assert request.tools[1] == own  # the client's, not ours
    assert RETRIEVAL_GUIDE not in text(request)  # it would point at the client's open_blob
    (passed,) = answer.choices[0].message.tool_calls or []
    assert passed.id == call.id and passed.function.name == "open_blob"
