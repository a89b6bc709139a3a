"""A fake OpenAI-compatible server on loopback, so tests run the real ``openai`` SDK end to end.

It serves ``POST /v1/chat/completions`` (streamed as SSE, or whole) and ``GET /v1/models`` from a
background thread (stdlib ``http.server``), answers with scripted replies in order, and records the
request bodies it received::

    def test_something(fake_openai):
        fake_openai.fail(500, times=2)                        # two 500s first
        fake_openai.script("Hello there.")                    # then a streamed text answer
        provider = OpenAICompatProvider(base_url=fake_openai.url, model="m")
        ...
        assert [body["model"] for body in fake_openai.requests] == ["m", "m", "m"]

A streamed answer is sent the way OpenAI sends it: a role chunk, text in word pieces, each tool call's
``arguments`` split over several chunks with its ``id`` and ``name`` only in the first, a chunk with
``finish_reason``, a usage chunk (``choices: []``) when ``stream_options.include_usage`` is set, then
``data: [DONE]``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from tests.fake_upstream import FakeUpstream, ScriptedReply, arguments_text, send_json, split, sse, words

__all__ = ["FakeOpenAI", "FakeReply", "fake_openai"]

DEFAULT_USAGE = {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17}


@dataclass(frozen=True)
class FakeReply(ScriptedReply):
    """One scripted answer.

    Besides ``text`` (streamed in word pieces), the fields every fake's reply has
    (:class:`~tests.fake_upstream.ScriptedReply`: ``status``, ``body``, ``headers``, ``retry_after``,
    ``model``, ``delay``, ``cut_after`` counting data chunks), it has:

    Attributes:
        tool_calls: ``{"id", "name", "arguments"}`` dicts; ``arguments`` may be a dict or JSON text.
        pieces: how many chunks each call's ``arguments`` is split over.
        interleave: stream the fragments of parallel calls interleaved (call 0, call 1, call 0, …).
        usage: the usage chunk's numbers (``cached_tokens`` goes to ``prompt_tokens_details``).
        finish_reason: default ``tool_calls`` when there are calls, else ``stop``.
        error_event: sent as an SSE ``{"error": ...}`` event after the text (a mid-stream failure).
        deltas: more ``delta`` objects of choice 0, one chunk each, after the text (a
            ``reasoning_content`` piece, a ``custom`` tool call…), as given.
        fields: more top-level fields of every chunk and of a whole answer (``system_fingerprint``…).
        usage_details: more fields of the usage (``completion_tokens_details``…).
    """

    tool_calls: Sequence[Mapping[str, Any]] = ()
    pieces: int = 3
    interleave: bool = False
    usage: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_USAGE))
    finish_reason: str | None = None
    error_event: Mapping[str, Any] | None = None
    deltas: Sequence[Mapping[str, Any]] = ()
    fields: Mapping[str, Any] = field(default_factory=dict)
    usage_details: Mapping[str, Any] = field(default_factory=dict)


class FakeOpenAI(FakeUpstream[FakeReply]):
    """The server: ``url`` ends in ``/v1``; ``script`` / ``fail`` queue answers; ``requests`` records."""

    reply_type = FakeReply
    route = "/v1/chat/completions"

    def __init__(self) -> None:
        super().__init__()
        self.models = ["fake-model"]

    def get(self, handler: BaseHTTPRequestHandler, path: str) -> None:
        """``GET /v1/models``: :attr:`models`."""
        if path != "/v1/models":
            return super().get(handler, path)
        data = [{"id": m, "object": "model", "created": 0, "owned_by": "fake"} for m in self.models]
        send_json(handler, 200, {"object": "list", "data": data})

    def error_body(self, reply: FakeReply) -> Any:
        """OpenAI's error shape, the status as its ``code``."""
        return {"error": {"message": f"fake error {reply.status}", "type": "fake", "code": reply.status}}

    def frames(self, body: Mapping[str, Any], reply: FakeReply) -> Iterator[str]:
        """The chunks as ``data:`` events, then ``data: [DONE]``."""
        return (sse(chunk) for chunk in _chunks(body, reply))

    def whole(self, body: Mapping[str, Any], reply: FakeReply) -> Any:
        """A ``chat.completion``."""
        return _completion(body, reply)

    @property
    def models_requested(self) -> list[str]:
        """The ``model`` field of every chat request received, in order."""
        return [str(body.get("model")) for body in self.requests]


def _tool_call_entries(reply: FakeReply) -> list[tuple[str, str, str]]:
    entries = []
    for position, call in enumerate(reply.tool_calls):
        text = arguments_text(call.get("arguments", {}))
        entries.append((str(call.get("id", f"call_{position}")), str(call["name"]), text))
    return entries


def _chunks(body: Mapping[str, Any], reply: FakeReply) -> Iterator[dict[str, Any] | str]:
    base = {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": body.get("model"),
        **reply.fields,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    yield chunk({"role": "assistant", "content": ""})
    for word in words(reply.text):
        yield chunk({"content": word})
    if reply.error_event is not None:
        yield {"error": dict(reply.error_event)}
        return
    for delta in reply.deltas:
        yield chunk(dict(delta))
    fragments: list[list[dict[str, Any]]] = []
    for index, (call_id, name, arguments) in enumerate(_tool_call_entries(reply)):
        parts = split(arguments, reply.pieces)
        first = {
            "index": index,
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": parts[0]},
        }
        fragments.append([first] + [{"index": index, "function": {"arguments": p}} for p in parts[1:]])
    if reply.interleave:
        longest = max((len(f) for f in fragments), default=0)
        order = [f[i] for i in range(longest) for f in fragments if i < len(f)]
    else:
        order = [piece for f in fragments for piece in f]
    for piece in order:
        yield chunk({"tool_calls": [piece]})
    yield chunk({}, reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop"))
    if (body.get("stream_options") or {}).get("include_usage"):
        yield {**base, "choices": [], "usage": _usage(reply)}
    yield "[DONE]"


def _usage(reply: FakeReply) -> dict[str, Any]:
    usage: dict[str, Any] = {k: v for k, v in reply.usage.items() if k != "cached_tokens"}
    if "cached_tokens" in reply.usage:
        usage["prompt_tokens_details"] = {"cached_tokens": reply.usage["cached_tokens"]}
    return {**usage, **reply.usage_details}


def _completion(body: Mapping[str, Any], reply: FakeReply) -> dict[str, Any]:
    calls = [
        {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
        for call_id, name, arguments in _tool_call_entries(reply)
    ]
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if calls:
        message["tool_calls"] = calls
    finish = reply.finish_reason or ("tool_calls" if calls else "stop")
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": _usage(reply),
        **reply.fields,
    }


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    """A running :class:`FakeOpenAI` on 127.0.0.1, stopped after the test."""
    yield from FakeOpenAI.running()
