"""A model behind Anthropic's Messages API (``POST /v1/messages``), through the official ``anthropic`` SDK.

The request is encoded by :mod:`tierwise.providers.anthropic_request` (chat-format messages →
Anthropic's blocks, ``cache_control`` markers, parameters) and always streamed. The stream's
server-sent events are read as sent (JSON, not the SDK's models, so block types newer than the
SDK pass through) and become :mod:`tierwise.providers.base` events:

- ``text_delta`` → :class:`~tierwise.providers.base.TextDelta`;
- a ``tool_use`` block → :class:`~tierwise.providers.base.ToolCallDelta` (its id and name at its
  start, its ``input_json_delta`` pieces as ``arguments_delta``), the complete
  :class:`~tierwise.providers.base.ToolCall` at the end;
- a ``thinking`` block (its ``thinking_delta`` and ``signature_delta`` assembled) or a
  ``redacted_thinking`` one → ``ChoiceDelta(0, {"thinking_blocks": [block]})`` at its
  ``content_block_stop``, whole: the gateway stores it on the answer and sends it back, unchanged,
  first in that assistant message's content next turn (Anthropic checks the signature);
- a block of another type (``server_tool_use``, ``web_search_tool_result``… of Anthropic's own
  tools, which its servers ran) → ``ChoiceDelta(0, {"server_blocks": [block]})`` at its stop, whole:
  stored on the answer, relayed to an Anthropic client, and sent back after the thinking blocks;
  a Chat Completions client sees the field as sent;
- ``message_delta``'s ``stop_reason`` → ``finish_reason`` (``end_turn`` / ``stop_sequence`` →
  ``stop``, ``tool_use`` → ``tool_calls``, ``max_tokens`` → ``length``, ``refusal`` →
  ``content_filter``, any other as it is);
- the usage (``message_start``'s, updated by ``message_delta``'s) → :class:`~tierwise.providers.base.Usage`:
  ``prompt_tokens`` = input + cache read + cache written, ``cached_tokens`` = cache read; the rest
  in ``details`` as sent (``cache_creation_input_tokens``, ``cache_creation``, ``server_tool_use``…)
  with OpenAI's ``prompt_tokens_details`` (``cached_tokens``, ``cache_write_tokens``) beside them;
- :class:`~tierwise.providers.base.Done` with the message's other fields (``stop_sequence``,
  ``container``…) in ``fields``.

Failures are :class:`~tierwise.providers.errors.ProviderError` (retried by
:class:`~tierwise.providers.http.HTTPProvider` while nothing was streamed): an HTTP error with its
status, body, Anthropic's error object (``{"type", "message"}``) as ``detail`` and its
``retry-after`` headers; an ``error`` event mid-stream with the status its ``type`` stands for
(``overloaded_error`` → 529…); timeouts (``timed_out``); connection errors (``unanswered`` before
the response began); a stream that ends without ``message_stop`` (retryable).
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Mapping
from typing import Any, cast

import anthropic

from tierwise.providers.anthropic_request import encode_request
from tierwise.providers.base import (
    ChoiceDelta,
    Done,
    Event,
    ModelRequest,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
)
from tierwise.providers.errors import ProviderError
from tierwise.providers.http import HTTPProvider, SDKErrors, http_error, json_events, sdk_error
from tierwise.providers.retry import is_retryable_status

__all__ = ["ERROR_STATUS", "AnthropicProvider", "anthropic_error", "finish_reason", "usage_of"]

log = logging.getLogger(__name__)

ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}
"""The HTTP status an Anthropic error ``type`` stands for (an ``error`` event mid-stream has none)."""

_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "refusal": "content_filter",
}
_MESSAGE_OWN = frozenset({"id", "type", "role", "model", "content", "stop_reason", "usage"})
_COUNTS = ("input_tokens", "output_tokens")


def finish_reason(stop_reason: str | None) -> str | None:
    """Anthropic's ``stop_reason`` as OpenAI's ``finish_reason`` (one without a match as it is).

    Example:
        >>> finish_reason("end_turn"), finish_reason("tool_use"), finish_reason("pause_turn")
        ('stop', 'tool_calls', 'pause_turn')
    """
    return _FINISH.get(stop_reason or "", stop_reason)


def _count(usage: Mapping[str, Any], key: str) -> int:
    value = usage.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def usage_of(usage: Mapping[str, Any]) -> Usage:
    """Anthropic's ``usage`` as tierwise's: the prompt counts the cache's tokens (read and written).

    Example:
        >>> usage = usage_of({"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 80,
        ...                   "cache_creation_input_tokens": 20})
        >>> usage.prompt_tokens, usage.cached_tokens, usage.total_tokens
        (110, 80, 115)
        >>> usage.details["prompt_tokens_details"]
        {'cached_tokens': 80, 'cache_write_tokens': 20}
    """
    read = _count(usage, "cache_read_input_tokens")
    written = _count(usage, "cache_creation_input_tokens")
    prompt = _count(usage, "input_tokens") + read + written
    completion = _count(usage, "output_tokens")
    details = {k: v for k, v in usage.items() if k not in _COUNTS and v is not None}
    details["prompt_tokens_details"] = {"cached_tokens": read, "cache_write_tokens": written}
    return Usage(prompt, completion, prompt + completion, read, details)


def _status_error(exc: anthropic.APIStatusError, model: str, text: str | None) -> ProviderError:
    """An HTTP error with Anthropic's error object (``{"type", "message"}``) as its ``detail``."""
    body = exc.body
    error = body.get("error") if isinstance(body, Mapping) else None
    detail = dict(error) if isinstance(error, Mapping) else None
    if exc.status_code < 400:  # an ``error`` event in a stream that began with 200 (the SDK's own reading)
        return _stream_error(detail or {}, body, model)
    if text is None:  # a streamed response whose body was never read
        text = json.dumps(body) if body is not None else None
    message = (detail or {}).get("message") or exc.message
    return http_error(model, exc.status_code, exc.response.headers, message, body=text, detail=detail)


ANTHROPIC_ERRORS = SDKErrors(
    anthropic.APIStatusError, anthropic.APITimeoutError, anthropic.APIConnectionError, _status_error
)
"""How the ``anthropic`` SDK's exceptions are read (:func:`~tierwise.providers.http.sdk_error`)."""


def anthropic_error(exc: Exception, model: str, *, answering: bool = False) -> ProviderError:
    """Translate an ``anthropic`` SDK exception into a :class:`ProviderError`.

    ``answering``: the response had begun, so a dropped connection is not ``unanswered``.
    """
    return sdk_error(exc, model, ANTHROPIC_ERRORS, answering=answering)


class _Decoder:
    """One answer's events, read as Anthropic streams them."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.blocks: dict[int, dict[str, Any]] = {}  # open thinking and other blocks, by index
        self.calls: dict[int, list[str]] = {}  # block index -> [id, name, arguments…]
        self.usage: dict[str, Any] = {}
        self.fields: dict[str, Any] = {}
        self.stop_reason: str | None = None
        self.stopped = False

    def read(self, kind: str, event: Mapping[str, Any]) -> list[Event]:
        kind = str(event.get("type") or kind)
        if kind == "message_start":
            message = event.get("message") or {}
            self.usage.update(message.get("usage") or {})
            self.fields.update({k: v for k, v in message.items() if k not in _MESSAGE_OWN and v is not None})
        elif kind == "content_block_start":
            return self._start(int(event.get("index", 0)), dict(event.get("content_block") or {}))
        elif kind == "content_block_delta":
            return self._delta(int(event.get("index", 0)), event.get("delta") or {})
        elif kind == "content_block_stop":
            block = self.blocks.pop(int(event.get("index", 0)), None)
            if block is not None:
                field = (
                    "thinking_blocks"
                    if block.get("type") in ("thinking", "redacted_thinking")
                    else "server_blocks"
                )
                return [ChoiceDelta(0, {field: [block]})]
        elif kind == "message_delta":
            delta = event.get("delta") or {}
            self.stop_reason = delta.get("stop_reason") or self.stop_reason
            self.fields.update({k: v for k, v in delta.items() if k != "stop_reason" and v is not None})
            self.usage.update({k: v for k, v in (event.get("usage") or {}).items() if v is not None})
        elif kind == "message_stop":
            self.stopped = True
        return []

    def _start(self, index: int, block: dict[str, Any]) -> list[Event]:
        kind = block.get("type")
        if kind == "text":
            text = block.get("text") or ""
            return [TextDelta(text)] if text else []
        if kind == "tool_use":
            call_id, name = str(block.get("id") or ""), str(block.get("name") or "")
            self.calls[index] = [call_id, name]
            return [ToolCallDelta(index, call_id or None, name or None)]
        self.blocks[index] = block  # thinking, redacted_thinking, server tools' blocks: whole at stop
        return []

    def _delta(self, index: int, delta: Mapping[str, Any]) -> list[Event]:
        kind = delta.get("type")
        if kind == "text_delta":
            text = str(delta.get("text") or "")
            return [TextDelta(text)] if text else []
        if kind == "input_json_delta" and index in self.calls:
            piece = str(delta.get("partial_json") or "")
            self.calls[index].append(piece)
            return [ToolCallDelta(index, arguments_delta=piece)] if piece else []
        block = self.blocks.get(index)
        if block is None:  # citations_delta and what else has no place in tierwise's events
            return []
        if kind == "thinking_delta":
            block["thinking"] = str(block.get("thinking") or "") + str(delta.get("thinking") or "")
        elif kind == "signature_delta":
            block["signature"] = str(block.get("signature") or "") + str(delta.get("signature") or "")
        elif kind == "input_json_delta":  # a server tool's input, streamed as a client tool's is
            block["_json"] = str(block.get("_json") or "") + str(delta.get("partial_json") or "")
        return []

    def end(self) -> list[Event]:
        events: list[Event] = []
        for index in sorted(self.calls):
            call_id, name, *arguments = self.calls[index]
            events.append(ToolCall(call_id or f"toolu_{index}", name, "".join(arguments) or "{}"))
        if self.usage:
            events.append(usage_of(self.usage))
        events.append(Done(finish_reason(self.stop_reason), self.model, self.fields))
        return events


def _finished(block: dict[str, Any]) -> dict[str, Any]:
    raw = block.pop("_json", None)
    if raw:
        try:
            block["input"] = json.loads(raw)
        except ValueError:
            log.warning("a %s block's input is not JSON; kept as it started", block.get("type"))
    return block


class AnthropicProvider(HTTPProvider[anthropic.AsyncAnthropic]):
    """A model behind Anthropic's Messages API (``TIERWISE_UPSTREAM_API=anthropic``).

    The base URL defaults to ``https://api.anthropic.com`` (a trailing ``/v1`` is dropped: the SDK
    adds it); the key (``TIERWISE_API_KEY``) is sent as ``x-api-key``. Prompt-cache markers are
    always placed (:func:`~tierwise.providers.anthropic_request.place_cache_marks`).

    Args:
        settings: the provider settings; ``None`` reads the environment.
        client: an ``anthropic.AsyncAnthropic`` to use instead of building one (its retries off).
        **options: ``base_url``, ``api_key``, ``model``, ``fallback_models``, ``timeout``,
            ``max_retries``, ``retry_policy`` (:class:`~tierwise.providers.http.HTTPProvider`).

    Example:
        >>> provider = AnthropicProvider(model="claude-sonnet-4-5", api_key="sk-ant-...")
        >>> provider.base_url, provider.wire
        ('https://api.anthropic.com', 'anthropic')
    """

    name = "anthropic"
    wire = "anthropic"
    sdk_client = anthropic.AsyncAnthropic
    sdk_timeout = anthropic.Timeout
    default_base_url = "https://api.anthropic.com"

    def _client_options(self) -> dict[str, Any]:
        """The shared options, the base URL without ``/v1`` (the SDK adds it), the key as ``x-api-key``."""
        options = super()._client_options()  # the key given, so the SDK looks for no credentials of its own
        options["base_url"] = self.base_url.rstrip("/").removesuffix("/v1")  # the SDK adds /v1
        options["default_headers"] = {  # the key as Anthropic's
            "x-api-key": options["api_key"],
            "Authorization": cast(str, anthropic.Omit()),
        }
        return options

    async def _once(self, request: ModelRequest, model: str) -> AsyncIterator[Event]:
        """One attempt: send the request (streamed) and translate its events."""
        client = self._client()
        encoded = encode_request(request, model)
        body = {k: v for k, v in encoded.body.items() if k not in ("model", "max_tokens", "messages")}
        try:
            opened = client.messages.with_streaming_response.create(
                model=model,
                max_tokens=encoded.body["max_tokens"],
                messages=encoded.body["messages"],
                stream=True,
                extra_headers=encoded.headers or None,
                extra_body=body or None,
            )
            response = await self._first_byte(opened.__aenter__(), model)
        except anthropic.AnthropicError as exc:
            raise anthropic_error(exc, model) from exc
        decoder = _Decoder(model)
        try:
            async for kind, event in json_events(response.iter_lines(), ignore={"ping"}):
                if kind == "error" or event.get("type") == "error":
                    error = event.get("error")
                    raise _stream_error(error if isinstance(error, Mapping) else {}, event, model)
                for out in decoder.read(kind, event):
                    if isinstance(out, ChoiceDelta):
                        out = ChoiceDelta(0, {k: [_finished(b) for b in v] for k, v in out.delta.items()})
                    yield out
        except anthropic.AnthropicError as exc:
            raise anthropic_error(exc, model, answering=True) from exc
        except ValueError as exc:  # an event that is not JSON
            raise ProviderError(f"{model}: malformed stream: {exc}", model=model) from exc
        finally:
            await opened.__aexit__(None, None, None)
        if not decoder.stopped:
            raise ProviderError(
                f"{model}: the stream ended before the model finished", retryable=True, model=model
            )
        for out in decoder.end():
            yield out


def _stream_error(error: Mapping[str, Any], event: Any, model: str) -> ProviderError:
    kind = str(error.get("type") or "api_error")
    status = ERROR_STATUS.get(kind, 500)
    message = str(error.get("message") or kind)
    return ProviderError(
        f"{model}: the server reported an error mid-stream: {kind}: {message}",
        status=status,
        body=json.dumps(event),
        retryable=is_retryable_status(status),
        model=model,
        detail=dict(error) or {"type": kind, "message": message},
    )
