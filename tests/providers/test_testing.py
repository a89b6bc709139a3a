"""The shipped fakes (ScriptedModel, FunctionModel), with_fallback and collect."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tierwise import TokenCounter
from tierwise.providers import (
    Done,
    Fallback,
    ModelRequest,
    ModelResponse,
    ProviderError,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
    collect,
    with_fallback,
)
from tierwise.providers.testing import FunctionModel, NoReplyQueued, Script, ScriptedModel, tool_call

pytestmark = pytest.mark.anyio

TOOLS = [{"type": "function", "function": {"name": "get_tasks", "parameters": {"type": "object"}}}]
REQUEST = ModelRequest(
    [{"role": "system", "content": "You plan projects."}, {"role": "user", "content": "What is left?"}],
    tools=TOOLS,
)


async def test_text_streams_in_pieces_with_exact_usage() -> None:
    model = ScriptedModel("The venue is booked; the FAQ is still open.")
    events = [e async for e in model.stream(REQUEST)]
    pieces = [e.text for e in events if isinstance(e, TextDelta)]
    assert len(pieces) > 3 and "".join(pieces) == "The venue is booked; the FAQ is still open."
    counter = TokenCounter()
    prompt = counter.count_messages(REQUEST.messages) + counter.count_tools(REQUEST.tools)
    completion = counter.count("The venue is booked; the FAQ is still open.")
    assert events[-2] == Usage(prompt, completion, prompt + completion)
    assert events[-1] == Done("stop", "scripted")


async def test_requests_are_recorded_exactly() -> None:
    model = ScriptedModel()
    model.enqueue("one.", "two.")
    other = ModelRequest([{"role": "user", "content": "again"}], model="custom", max_tokens=9)
    first, second = await model.complete(REQUEST), await model.complete(other)
    assert model.requests == [REQUEST, other]
    assert (first.text, second.text, second.model, model.pending) == ("one.", "two.", "custom", 0)


async def test_tool_call_replies() -> None:
    call = tool_call("get_tasks", status="due", name="not the tool name")
    pair = [tool_call("a", x=1), tool_call("b", y=[1, 2])]
    model = ScriptedModel(call, pair, ModelResponse(text="Checking.", tool_calls=[call]))
    events = [e async for e in model.stream(REQUEST)]
    deltas = [e for e in events if isinstance(e, ToolCallDelta)]
    assert len(deltas) == 2 and deltas[1].id is None
    assert "".join(d.arguments_delta for d in deltas) == call.arguments
    assert events[-1] == Done("tool_calls", "scripted")
    assert call.parsed_arguments() == {"status": "due", "name": "not the tool name"}
    both = await model.complete(REQUEST)
    assert [c.name for c in both.tool_calls] == ["a", "b"] and both.tool_calls[0].id != both.tool_calls[1].id
    mixed = await model.complete(REQUEST)
    assert (mixed.text, mixed.tool_calls) == ("Checking.", [call])
    assert mixed.message() == {"role": "assistant", "content": "Checking.", "tool_calls": [call.to_openai()]}


async def test_exception_replies_are_raised_before_any_event() -> None:
    model = ScriptedModel(ProviderError("server error", status=500, retryable=True))
    seen: list[Any] = []
    with pytest.raises(ProviderError) as caught:
        async for event in model.stream(REQUEST):
            seen.append(event)
    assert seen == [] and caught.value.status == 500


async def test_empty_script_says_what_to_do() -> None:
    with pytest.raises(NoReplyQueued, match=r"no reply queued; call enqueue\(\.\.\.\) first"):
        await ScriptedModel().complete(REQUEST)


async def test_script_of_split_deltas_is_assembled() -> None:
    script = Script(
        TextDelta("Let me check."),
        ToolCallDelta(1, "call_b", "get_calendar_events", '{"start'),
        ToolCallDelta(0, "call_a", "get_tasks", ""),
        ToolCallDelta(1, arguments_delta='_date": "2025-06-02"}'),
        ToolCallDelta(0, arguments_delta='{"status": "due"}'),
        Usage(10, 5, 15),
        Done("tool_calls", "m"),
    )
    response = await ScriptedModel(script).complete(REQUEST)
    assert response.tool_calls == [
        ToolCall("call_a", "get_tasks", '{"status": "due"}'),
        ToolCall("call_b", "get_calendar_events", '{"start_date": "2025-06-02"}'),
    ]
    assert (response.text, response.usage, response.model) == ("Let me check.", Usage(10, 5, 15), "m")


async def test_slow_script_can_be_stopped_mid_stream() -> None:
    model = ScriptedModel(Script(*[TextDelta(f"w{i} ") for i in range(100)], delay=0.05))
    started = time.monotonic()
    stream = model.stream(REQUEST)
    received = []
    async for event in stream:
        received.append(event)
        if len(received) == 3:
            break
    await stream.aclose()  # type: ignore[attr-defined]
    assert len(received) == 3 and time.monotonic() - started < 1.0


async def test_script_error_mid_stream() -> None:
    model = ScriptedModel(Script(TextDelta("Half"), error=ProviderError("dropped", retryable=True)))
    with pytest.raises(ProviderError, match="dropped"):
        await model.complete(REQUEST)


async def test_function_model_sync_and_async() -> None:
    def answer(request: ModelRequest) -> str:
        return f"{len(request.messages)} messages."

    async def answer_later(request: ModelRequest) -> list[ToolCall]:
        return [tool_call("get_tasks", status="open")]

    assert (await FunctionModel(answer).complete(REQUEST)).text == "2 messages."
    model = FunctionModel(answer_later, model="fn")
    response = await model.complete(REQUEST)
    assert (response.tool_calls[0].name, response.model, model.requests) == ("get_tasks", "fn", [REQUEST])


async def test_with_fallback_hands_over_before_output() -> None:
    primary = ScriptedModel(ProviderError("overloaded", status=529, retryable=True), model="big")
    backup = ScriptedModel("Backup answer.", model="small")
    events = [e async for e in with_fallback(primary, backup).stream(REQUEST)]
    assert events[0] == Fallback("big", "small", "overloaded")
    assert events[-1] == Done("stop", "small")
    assert primary.requests == [REQUEST] and backup.requests[0].model is None


async def test_with_fallback_never_stitches_answers() -> None:
    primary = ScriptedModel(Script(TextDelta("Partial"), error=ProviderError("cut", retryable=True)))
    backup = ScriptedModel("unused")
    with pytest.raises(ProviderError, match="cut"):
        await with_fallback(primary, backup).complete(REQUEST)
    assert backup.requests == []


async def test_with_fallback_all_failing_and_foreign_errors() -> None:
    a = ScriptedModel(ProviderError("a down", status=500), model="a")
    b = ScriptedModel(ProviderError("b down", status=400), model="b")
    with pytest.raises(ProviderError) as caught:
        await with_fallback(a, b).complete(REQUEST)
    assert [(m, e.status) for m, e in caught.value.attempts] == [("a", 500), ("b", 400)]
    # only ProviderError falls back: a bug or an empty script surfaces at once
    backup = ScriptedModel("unused")
    with pytest.raises(NoReplyQueued):
        await with_fallback(ScriptedModel(), backup).complete(REQUEST)
    assert backup.requests == []


async def test_collect_prefers_complete_calls_and_tolerates_no_done() -> None:
    async def events() -> Any:
        yield ToolCallDelta(0, "x", "partial", "{")
        yield ToolCall("call_1", "get_tasks", "{}")

    response = await collect(events())
    assert response.tool_calls == [ToolCall("call_1", "get_tasks", "{}")]
    assert (response.model, response.finish_reason, response.usage) == ("", None, None)
    assert response.message() == {
        "role": "assistant",
        "content": None,
        "tool_calls": [response.tool_calls[0].to_openai()],
    }


def test_usage_adds_up() -> None:
    assert Usage(10, 2, 12, 4) + Usage(1, 1, 2) == Usage(11, 3, 14, 4)
