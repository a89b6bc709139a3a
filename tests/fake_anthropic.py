"""A fake Anthropic Messages server on loopback, so tests run the real ``anthropic`` SDK end to end.

It serves ``POST /v1/messages`` (streamed as Anthropic's server-sent events, or whole) from a
background thread (stdlib ``http.server``), answers with scripted replies in order, and records the
request bodies and headers it received::

    def test_something(fake_anthropic):
        fake_anthropic.fail(529, times=2)                      # two overloaded errors first
        fake_anthropic.script(AnthropicReply(text="Hello.", thinking=("Hm.", "sig-1")))
        provider = AnthropicProvider(base_url=fake_anthropic.url, model="claude-test")
        ...
        assert fake_anthropic.headers[-1]["x-api-key"] == "k"

A streamed answer is sent the way Anthropic sends it: ``message_start`` (usage with the cache
fields), ``ping``, each block's ``content_block_start`` / deltas / ``content_block_stop`` (thinking
in ``thinking_delta`` pieces then one ``signature_delta``; text in word pieces; a tool's input as
``input_json_delta`` pieces), ``message_delta`` (``stop_reason``, output tokens), ``message_stop``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.fake_upstream import FakeUpstream, ScriptedReply, arguments_text, split, sse, words

__all__ = ["AnthropicReply", "FakeAnthropic", "fake_anthropic"]

DEFAULT_USAGE = {
    "input_tokens": 12,
    "output_tokens": 5,
    "cache_read_input_tokens": 0,
    "cache_creation_input_tokens": 0,
}


@dataclass(frozen=True)
class AnthropicReply(ScriptedReply):
    """One scripted answer.

    Besides ``text`` (streamed in word pieces), the fields every fake's reply has
    (:class:`~tests.fake_upstream.ScriptedReply`: ``status`` — an error in Anthropic's shape unless
    ``body`` —, ``headers`` such as ``retry-after``, ``model``, ``delay``, ``cut_after``), it has:

    Attributes:
        thinking: ``(thinking, signature)`` pairs, each a ``thinking`` block before the text.
        redacted: ``data`` of ``redacted_thinking`` blocks, after the thinking ones.
        blocks: more whole blocks after the text (``server_tool_use``…), sent at their start.
        tool_calls: ``{"id", "name", "input"}`` dicts (``input`` a dict or JSON text), after the text.
        pieces: how many ``input_json_delta`` pieces each input is split over.
        error_type: the error's ``type`` (default: Anthropic's for the status).
        usage: ``message_start``'s usage (``output_tokens`` goes in ``message_delta``).
        stop_reason: default ``tool_use`` with calls, else ``end_turn``.
        error_event: sent as an ``error`` event after the text (a mid-stream failure).
        cut: end the stream before ``message_stop``.
    """

    thinking: Sequence[tuple[str, str]] = ()
    redacted: Sequence[str] = ()
    blocks: Sequence[Mapping[str, Any]] = ()
    tool_calls: Sequence[Mapping[str, Any]] = ()
    pieces: int = 3
    error_type: str | None = None
    usage: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_USAGE))
    stop_reason: str | None = None
    error_event: Mapping[str, Any] | None = None
    cut: bool = False


_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


def _input(call: Mapping[str, Any]) -> str:
    return arguments_text(call.get("input", {}))


class FakeAnthropic(FakeUpstream[AnthropicReply]):
    """The server: ``url`` is its root; ``script`` / ``fail`` queue answers; ``requests`` records."""

    reply_type = AnthropicReply
    route = "/v1/messages"
    url_path = ""  # the SDK adds /v1/messages

    def error_body(self, reply: AnthropicReply) -> Any:
        """Anthropic's error shape, its ``type`` the reply's or the status's."""
        kind = reply.error_type or _ERROR_TYPES.get(reply.status, "api_error")
        return _error_body(reply.status, kind, f"fake error {reply.status}")

    def unscripted(self, body: Mapping[str, Any]) -> AnthropicReply:
        """A 400 saying no reply was scripted."""
        return AnthropicReply(status=400, body=_error_body(400, "invalid_request_error", "no reply"))

    def not_found(self, path: str) -> Any:
        """Anthropic's ``not_found_error``."""
        return _error_body(404, "not_found_error", f"no route {path}")

    def frames(self, body: Mapping[str, Any], reply: AnthropicReply) -> Iterator[str]:
        """The events, each named."""
        return (sse(data, kind) for kind, data in _events(body, reply))

    def whole(self, body: Mapping[str, Any], reply: AnthropicReply) -> Any:
        """The whole message."""
        return _message(body, reply)


def _error_body(status: int, kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


def _content(reply: AnthropicReply) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [
        {"type": "thinking", "thinking": thinking, "signature": signature}
        for thinking, signature in reply.thinking
    ]
    blocks += [{"type": "redacted_thinking", "data": data} for data in reply.redacted]
    if reply.text:
        blocks.append({"type": "text", "text": reply.text})
    blocks += [dict(b) for b in reply.blocks]
    for position, call in enumerate(reply.tool_calls):
        call_id = str(call.get("id", f"toolu_{position}"))
        blocks.append(
            {"type": "tool_use", "id": call_id, "name": call["name"], "input": json.loads(_input(call))}
        )
    return blocks


def _stop_reason(reply: AnthropicReply) -> str:
    return reply.stop_reason or ("tool_use" if reply.tool_calls else "end_turn")


def _message(body: Mapping[str, Any], reply: AnthropicReply) -> dict[str, Any]:
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": body.get("model"),
        "content": _content(reply),
        "stop_reason": _stop_reason(reply),
        "stop_sequence": None,
        "usage": dict(reply.usage),
    }


def _events(body: Mapping[str, Any], reply: AnthropicReply) -> Iterator[tuple[str, dict[str, Any]]]:
    start_usage = {**reply.usage, "output_tokens": 1}
    message = {**_message(body, reply), "content": [], "stop_reason": None, "usage": start_usage}
    yield "message_start", {"type": "message_start", "message": message}
    yield "ping", {"type": "ping"}
    for index, block in enumerate(_content(reply)):
        kind = block["type"]
        if kind == "thinking":
            yield "content_block_start", _start(index, {"type": "thinking", "thinking": "", "signature": ""})
            for piece in split(block["thinking"], 2):
                yield "content_block_delta", _delta(index, {"type": "thinking_delta", "thinking": piece})
            yield (
                "content_block_delta",
                _delta(index, {"type": "signature_delta", "signature": block["signature"]}),
            )
        elif kind == "text":
            yield "content_block_start", _start(index, {"type": "text", "text": ""})
            for piece in words(block["text"]):
                yield "content_block_delta", _delta(index, {"type": "text_delta", "text": piece})
            if reply.error_event is not None:
                yield "error", {"type": "error", "error": dict(reply.error_event)}
                return
        elif kind == "tool_use":
            yield "content_block_start", _start(index, {**block, "input": {}})
            for piece in split(json.dumps(block["input"]), reply.pieces):
                yield (
                    "content_block_delta",
                    _delta(index, {"type": "input_json_delta", "partial_json": piece}),
                )
        else:  # redacted thinking and other blocks: whole at their start
            yield "content_block_start", _start(index, block)
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    delta = {"stop_reason": _stop_reason(reply), "stop_sequence": None}
    usage = {"output_tokens": reply.usage.get("output_tokens", 0)}
    yield "message_delta", {"type": "message_delta", "delta": delta, "usage": usage}
    if not reply.cut:
        yield "message_stop", {"type": "message_stop"}


def _start(index: int, block: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": dict(block)}


def _delta(index: int, delta: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": dict(delta)}


@pytest.fixture
def fake_anthropic() -> Iterator[FakeAnthropic]:
    """A running :class:`FakeAnthropic` on 127.0.0.1, stopped after the test."""
    yield from FakeAnthropic.running()
