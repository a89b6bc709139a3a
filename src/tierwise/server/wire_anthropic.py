"""Anthropic's Messages wire, the answer's side: tierwise's answer as Anthropic's ``message`` and events.

Pure functions and one small stream encoder, no routes (those are
:mod:`tierwise.server.anthropic_messages`; the request is decoded by
:mod:`tierwise.server.anthropic_input`). An answer (:class:`~tierwise.providers.base.ModelResponse`)
is a ``message`` object (:func:`message_object`); a stream of provider events is Anthropic's
server-sent events in its order (:class:`StreamEncoder`): ``message_start``,
``content_block_start``, ``ping``, ``content_block_delta`` (``text_delta`` / ``input_json_delta``),
``content_block_stop``, ``message_delta`` (``stop_reason``, usage), ``message_stop``. An Anthropic
upstream's thinking blocks (``ChoiceDelta(0, {"thinking_blocks": [...]})``, signatures and all) come
first in the message's content, and streamed as ``content_block_start`` (``thinking``, empty) →
``thinking_delta`` → ``signature_delta`` → ``content_block_stop`` (``redacted_thinking``: its start,
whole, and stop); the blocks of Anthropic's own tools (``server_blocks``) likewise whole. Usage counts
the cache apart (:func:`usage_object`). Errors are ``{"type": "error", "error": {"type",
"message"}}`` (:func:`error_body`) with Anthropic's type for the status; mid-stream, an ``error`` event.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from tierwise.providers.base import ChoiceDelta, Event, ModelResponse, TextDelta, ToolCall, ToolCallDelta

__all__ = [
    "CARRIED_BLOCKS",
    "StreamEncoder",
    "carried_blocks",
    "error_body",
    "error_type",
    "message_object",
    "sse",
    "stop_reason",
    "stop_sequence",
    "tool_input",
    "usage_object",
]

_STOP_REASONS = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
}
_ANTHROPIC_REASONS = frozenset(
    {"end_turn", "max_tokens", "stop_sequence", "tool_use", "pause_turn", "refusal"}
)
CARRIED_BLOCKS = ("thinking_blocks", "server_blocks")
"""The answer's fields holding an Anthropic upstream's blocks, whole, in the order they go first."""

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    503: "overloaded_error",
    529: "overloaded_error",
}


# -- the answer ----------------------------------------------------------------------------------


def tool_input(arguments: str) -> dict[str, Any]:
    """A call's JSON arguments as a ``tool_use`` block's ``input`` (an object; ``{}`` if they are not one).

    Example:
        >>> tool_input('{"city": "Paris"}'), tool_input("not json")
        ({'city': 'Paris'}, {})
    """
    try:
        parsed = json.loads(arguments or "{}")
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def stop_reason(finish_reason: str | None, has_calls: bool, sequence: str | None = None) -> str:
    """OpenAI's ``finish_reason`` as Anthropic's ``stop_reason`` (an Anthropic one passes through).

    ``sequence``: the stop sequence an Anthropic upstream stopped at (``stop`` is then ``stop_sequence``).

    Example:
        >>> stop_reason("stop", False), stop_reason("length", False), stop_reason(None, True)
        ('end_turn', 'max_tokens', 'tool_use')
    """
    if finish_reason in _ANTHROPIC_REASONS:
        return finish_reason
    if finish_reason == "stop" and sequence and not has_calls:
        return "stop_sequence"
    if finish_reason == "content_filter":
        return "refusal"
    mapped = _STOP_REASONS.get(finish_reason or "")
    if mapped is None or (mapped == "end_turn" and has_calls):
        return "tool_use" if has_calls else "end_turn"
    return mapped


def usage_object(
    prompt_tokens: int, completion_tokens: int, cached_tokens: int = 0, created: int = 0
) -> dict[str, Any]:
    """Anthropic's ``usage``: input tokens *besides* the cache's, output, cache read and cache written.

    OpenAI's ``prompt_tokens`` include the cached ones; Anthropic counts them apart.

    Example:
        >>> usage = usage_object(1000, 20, cached_tokens=800)
        >>> usage["input_tokens"], usage["cache_read_input_tokens"], usage["cache_creation_input_tokens"]
        (200, 800, 0)
    """
    return {
        "input_tokens": max(prompt_tokens - cached_tokens - created, 0),
        "output_tokens": completion_tokens,
        "cache_read_input_tokens": cached_tokens,
        "cache_creation_input_tokens": created,
    }


def carried_blocks(extras: Sequence[ChoiceDelta]) -> list[dict[str, Any]]:
    """An Anthropic upstream's blocks carried in an answer's pieces: thinking first, then server tools'.

    Example:
        >>> thinking = {"type": "thinking", "thinking": "Hm.", "signature": "s1"}
        >>> carried_blocks([ChoiceDelta(0, {"thinking_blocks": [thinking]})]) == [thinking]
        True
    """
    found: dict[str, list[dict[str, Any]]] = {name: [] for name in CARRIED_BLOCKS}
    for extra in extras:
        if extra.index != 0:
            continue
        for name in CARRIED_BLOCKS:
            found[name] += [dict(b) for b in extra.delta.get(name) or () if isinstance(b, Mapping)]
    return [block for name in CARRIED_BLOCKS for block in found[name]]


def _content(response: ModelResponse) -> list[dict[str, Any]]:
    blocks = carried_blocks(response.extras)
    if response.text:
        blocks.append({"type": "text", "text": response.text})
    for call in response.tool_calls:
        blocks.append(
            {"type": "tool_use", "id": call.id, "name": call.name, "input": tool_input(call.arguments)}
        )
    return blocks


def stop_sequence(response: ModelResponse) -> str | None:
    """The stop sequence an Anthropic upstream stopped at (its ``stop_sequence``), if it said."""
    sequence = response.fields.get("stop_sequence")
    return sequence if isinstance(sequence, str) else None


def message_object(
    response: ModelResponse, message_id: str, model: str, usage: Mapping[str, Any]
) -> dict[str, Any]:
    """A whole answer as Anthropic's ``message`` object (``usage``: :func:`usage_object`)."""
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": _content(response),
        "stop_reason": stop_reason(
            response.finish_reason, bool(response.tool_calls), stop_sequence(response)
        ),
        "stop_sequence": stop_sequence(response),
        "usage": dict(usage),
    }


def error_type(status: int) -> str:
    """Anthropic's error ``type`` for an HTTP status (``api_error`` for any other 5xx).

    Example:
        >>> error_type(429), error_type(502), error_type(529)
        ('rate_limit_error', 'api_error', 'overloaded_error')
    """
    found = _ERROR_TYPES.get(status)
    if found is not None:
        return found
    return "invalid_request_error" if 400 <= status < 500 else "api_error"


def error_body(status: int, message: str) -> dict[str, Any]:
    """Anthropic's error object for ``status``: ``{"type": "error", "error": {"type", "message"}}``."""
    return {"type": "error", "error": {"type": error_type(status), "message": message}}


def sse(kind: str, data: Mapping[str, Any]) -> str:
    """One server-sent event as Anthropic sends it: ``event: <kind>`` and its JSON ``data``."""
    return f"event: {kind}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


class StreamEncoder:
    """Provider events as Anthropic's server-sent events, in its order; one encoder per answer.

    :meth:`start` opens the message, :meth:`event` encodes each event (text and tool-call pieces
    become content blocks: a block stops when the next one starts), :meth:`finish` stops the last
    block and ends the message with its ``stop_reason`` and usage.

    Example:
        >>> encoder = StreamEncoder("msg_1", "m")
        >>> events = [*encoder.start(12), *encoder.event(TextDelta("Hi"))]
        >>> [e.split()[1] for e in events]
        ['message_start', 'content_block_start', 'ping', 'content_block_delta']
    """

    def __init__(self, message_id: str, model: str) -> None:
        self.message_id, self.model = message_id, model
        self._index = -1  # the open block's index (-1: none yet)
        self._open = False
        self._text = False  # the open block is text
        self._calls: dict[int, int] = {}  # the upstream's call index → its block's index
        self._pinged = False
        self.streamed_calls = False

    def start(self, input_tokens: int) -> list[str]:
        """``message_start``: the message with no content yet, its input tokens as packed."""
        message: dict[str, Any] = {
            "id": self.message_id,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": usage_object(input_tokens, 1),
        }
        return [sse("message_start", {"type": "message_start", "message": message})]

    def _begin(self, block: dict[str, Any], *, text: bool) -> list[str]:
        out = self._stop()
        self._index += 1
        self._open, self._text = True, text
        out.append(
            sse(
                "content_block_start",
                {"type": "content_block_start", "index": self._index, "content_block": block},
            )
        )
        if not self._pinged:
            self._pinged = True
            out.append(sse("ping", {"type": "ping"}))
        return out

    def _stop(self) -> list[str]:
        if not self._open:
            return []
        self._open = False
        return [sse("content_block_stop", {"type": "content_block_stop", "index": self._index})]

    def _delta(self, index: int, delta: dict[str, Any]) -> str:
        return sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})

    def _carried(self, block: Mapping[str, Any]) -> list[str]:
        """A whole carried block (thinking with its signature, a server tool's) as its events."""
        if block.get("type") != "thinking":
            return [*self._begin(dict(block), text=False), *self._stop()]
        out = self._begin({"type": "thinking", "thinking": "", "signature": ""}, text=False)
        out.append(
            self._delta(self._index, {"type": "thinking_delta", "thinking": block.get("thinking", "")})
        )
        out.append(
            self._delta(self._index, {"type": "signature_delta", "signature": block.get("signature", "")})
        )
        return out + self._stop()

    def event(self, event: Event) -> list[str]:
        """The events ``event`` makes (none for usage, notices and what Anthropic has no place for)."""
        if isinstance(event, ChoiceDelta):
            return [text for block in carried_blocks([event]) for text in self._carried(block)]
        if isinstance(event, TextDelta) and event.text:
            out = [] if self._open and self._text else self._begin({"type": "text", "text": ""}, text=True)
            out.append(self._delta(self._index, {"type": "text_delta", "text": event.text}))
            return out
        if isinstance(event, ToolCallDelta):
            self.streamed_calls = True
            out = []
            block = self._calls.get(event.index)
            if block is None:  # a new call: its block starts (the previous one stops)
                start = {
                    "type": "tool_use",
                    "id": event.id or f"toolu_{event.index}",
                    "name": event.name or "",
                    "input": {},
                }
                out += self._begin(start, text=False)
                block = self._calls[event.index] = self._index
            if event.arguments_delta:  # (a late piece of an earlier call keeps its block's index)
                out.append(
                    self._delta(block, {"type": "input_json_delta", "partial_json": event.arguments_delta})
                )
            return out
        return []

    def calls(self, calls: Sequence[ToolCall]) -> list[str]:
        """Complete calls of a provider that streamed none in pieces: a ``tool_use`` block each."""
        out: list[str] = []
        for call in calls:
            out += self._begin(
                {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}, text=False
            )
            piece = json.dumps(tool_input(call.arguments), ensure_ascii=False)
            out.append(self._delta(self._index, {"type": "input_json_delta", "partial_json": piece}))
        return out

    def finish(self, reason: str, usage: Mapping[str, Any], sequence: str | None = None) -> list[str]:
        """The last block's stop, ``message_delta`` (``stop_reason``, usage) and ``message_stop``."""
        out = self._stop()
        if self._index < 0:  # an empty answer is still one (empty) text block, as Anthropic sends it
            out += self._begin({"type": "text", "text": ""}, text=True)
            out += self._stop()
        delta = {
            "type": "message_delta",
            "delta": {"stop_reason": reason, "stop_sequence": sequence},
            "usage": dict(usage),
        }
        out.append(sse("message_delta", delta))
        out.append(sse("message_stop", {"type": "message_stop"}))
        return out

    @staticmethod
    def error(status: int, message: str) -> str:
        """A failure after the stream began: one ``error`` event (the stream ends after it)."""
        return sse("error", error_body(status, message))
