"""A fake OpenAI Responses API server on loopback, so tests run the real ``openai`` SDK end to end.

It serves ``POST /v1/responses`` (streamed as SSE, or whole) from a background thread (stdlib
``http.server``), answers with scripted replies in order, and records the request bodies::

    def test_something(fake_responses):
        fake_responses.fail(500)                                   # one 500 first
        fake_responses.script(ResponsesReply("Hi.", reasoning=REASONING))
        provider = ResponsesProvider(base_url=fake_responses.url, model="m")
        ...
        assert fake_responses.requests[1]["input"] == [...]

A streamed answer is sent the way OpenAI sends it: ``response.created``, ``response.in_progress``,
then each output item — a ``reasoning`` item (``output_item.added`` without its content, ``.done``
with its ``encrypted_content``), the message (``output_item.added``, ``content_part.added``, text in
word pieces as ``output_text.delta``, ``output_text.done``, ``content_part.done``,
``output_item.done``), each function call (``output_item.added`` with empty arguments, the
arguments in ``function_call_arguments.delta`` pieces, ``.done``, ``output_item.done``), custom
calls — then ``response.completed`` (or ``response.incomplete``) with the whole response and its
usage. Every event has its ``sequence_number``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.fake_upstream import FakeUpstream, ScriptedReply, arguments_text, split, sse, words

__all__ = ["REASONING", "FakeResponses", "ResponsesReply", "fake_responses"]

REASONING: dict[str, Any] = {
    "id": "rs_fake1",
    "type": "reasoning",
    "summary": [{"type": "summary_text", "text": "The user wants the weather."}],
    "encrypted_content": "gAAAAB-fake-opaque-reasoning==",
}
"""A reasoning item as OpenAI returns it with ``include: ["reasoning.encrypted_content"]``."""

DEFAULT_USAGE = {"input_tokens": 12, "output_tokens": 5, "total_tokens": 17}


@dataclass(frozen=True)
class ResponsesReply(ScriptedReply):
    """One scripted answer.

    Besides ``text`` (the message's, streamed in word pieces; none: no message item),
    the fields every fake's reply has (:class:`~tests.fake_upstream.ScriptedReply`: ``status``,
    ``body``, ``headers``, ``retry_after``, ``model``, ``delay``, ``cut_after`` counting events), it has:

    Attributes:
        tool_calls: ``{"id", "name", "arguments"}`` dicts (``arguments`` a dict or JSON text).
        custom_calls: ``{"id", "name", "input"}`` dicts: ``custom_tool_call`` items.
        reasoning: a reasoning item sent before everything else (e.g. :data:`REASONING`).
        items: more output items sent whole after the reasoning (a hosted tool's call…).
        pieces: how many deltas each call's arguments are split over.
        usage: ``input_tokens``, ``output_tokens``, ``total_tokens``; ``cached_tokens`` and
            ``reasoning_tokens`` go to the details.
        incomplete: ``response.incomplete`` with this reason (``max_output_tokens``…).
        failed: ``response.failed`` with this error object, after the text.
        error_event: an ``error`` event with these fields, after the text.
        fields: more fields of the response object (``service_tier``…).
    """

    tool_calls: Sequence[Mapping[str, Any]] = ()
    custom_calls: Sequence[Mapping[str, Any]] = ()
    reasoning: Mapping[str, Any] | None = None
    items: Sequence[Mapping[str, Any]] = ()
    pieces: int = 3
    usage: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_USAGE))
    incomplete: str | None = None
    failed: Mapping[str, Any] | None = None
    error_event: Mapping[str, Any] | None = None
    fields: Mapping[str, Any] = field(default_factory=dict)


class FakeResponses(FakeUpstream[ResponsesReply]):
    """The server: ``url`` ends in ``/v1``; ``script`` / ``fail`` queue answers; ``requests`` records."""

    reply_type = ResponsesReply
    route = "/v1/responses"

    def frames(self, body: Mapping[str, Any], reply: ResponsesReply) -> Iterator[str]:
        """The events, each named by its ``type``."""
        return (sse(event, event["type"]) for event in _events(body, reply))

    def whole(self, body: Mapping[str, Any], reply: ResponsesReply) -> Any:
        """The response as ``response.completed`` (or ``.incomplete``) carries it."""
        return list(_events(body, reply))[-1]["response"]


def _usage(reply: ResponsesReply) -> dict[str, Any]:
    numbers = reply.usage
    return {
        "input_tokens": numbers.get("input_tokens", 0),
        "input_tokens_details": {"cached_tokens": numbers.get("cached_tokens", 0)},
        "output_tokens": numbers.get("output_tokens", 0),
        "output_tokens_details": {"reasoning_tokens": numbers.get("reasoning_tokens", 0)},
        "total_tokens": numbers.get("total_tokens", 0),
    }


def _response(
    body: Mapping[str, Any], reply: ResponsesReply, status: str, output: list[Any]
) -> dict[str, Any]:
    return {
        "id": "resp_fake",
        "object": "response",
        "created_at": 0,
        "status": status,
        "error": None,
        "incomplete_details": None,
        "instructions": body.get("instructions"),
        "model": body.get("model"),
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools", []),
        "usage": None,
        **reply.fields,
    }


def _events(body: Mapping[str, Any], reply: ResponsesReply) -> Iterator[dict[str, Any]]:
    sequence = iter(range(1_000_000))
    output: list[dict[str, Any]] = []

    def event(kind: str, **fields: Any) -> dict[str, Any]:
        return {"type": kind, "sequence_number": next(sequence), **fields}

    def added(item: dict[str, Any]) -> dict[str, Any]:
        output.append(item)
        return event("response.output_item.added", output_index=len(output) - 1, item=item)

    def done(item: dict[str, Any]) -> dict[str, Any]:
        output[-1] = item
        return event("response.output_item.done", output_index=len(output) - 1, item=item)

    yield event("response.created", response=_response(body, reply, "in_progress", []))
    yield event("response.in_progress", response=_response(body, reply, "in_progress", []))
    if reply.reasoning is not None:
        whole = dict(reply.reasoning)
        yield added({"id": whole.get("id"), "type": "reasoning", "summary": []})
        yield done(whole)
    for item in reply.items:
        yield added(dict(item))
        yield done(dict(item))
    if reply.text or not (reply.tool_calls or reply.custom_calls or reply.items):
        message: dict[str, Any] = {"id": "msg_fake", "type": "message", "status": "in_progress"}
        message |= {"role": "assistant", "content": []}
        yield added(dict(message))
        where = {"item_id": "msg_fake", "output_index": len(output) - 1, "content_index": 0}
        part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
        yield event("response.content_part.added", **where, part=part)
        for piece in words(reply.text):
            yield event("response.output_text.delta", **where, delta=piece, logprobs=[])
        if reply.error_event is not None:
            yield event("error", **reply.error_event)
            return
        if reply.failed is not None:
            failed = _response(body, reply, "failed", output) | {"error": dict(reply.failed)}
            yield event("response.failed", response=failed)
            return
        part = {**part, "text": reply.text}
        yield event("response.output_text.done", **where, text=reply.text, logprobs=[])
        yield event("response.content_part.done", **where, part=part)
        yield done({**message, "status": "completed", "content": [part]})
    for position, call in enumerate(reply.tool_calls):
        text = arguments_text(call.get("arguments", {}))
        item = {"id": f"fc_fake{position}", "type": "function_call", "status": "in_progress"}
        item |= {"call_id": call.get("id", f"call_{position}"), "name": call["name"], "arguments": ""}
        yield added(dict(item))
        where = {"item_id": item["id"], "output_index": len(output) - 1}
        for piece in split(text, reply.pieces):
            yield event("response.function_call_arguments.delta", **where, delta=piece)
        yield event("response.function_call_arguments.done", **where, arguments=text)
        yield done({**item, "status": "completed", "arguments": text})
    for position, call in enumerate(reply.custom_calls):
        item = {"id": f"ctc_fake{position}", "type": "custom_tool_call", "status": "completed"}
        item |= {"call_id": call.get("id", f"call_c{position}"), "name": call["name"], "input": call["input"]}
        yield added({**item, "input": ""})
        yield done(item)
    status = "incomplete" if reply.incomplete else "completed"
    final = _response(body, reply, status, output) | {"usage": _usage(reply)}
    if reply.incomplete:
        final["incomplete_details"] = {"reason": reply.incomplete}
    yield event(f"response.{status}", response=final)


@pytest.fixture
def fake_responses() -> Iterator[FakeResponses]:
    """A running :class:`FakeResponses` on 127.0.0.1, stopped after the test."""
    yield from FakeResponses.running()
