"""A model behind OpenAI's Responses API (``POST /responses``), streamed through the official SDK.

:class:`ResponsesProvider` sends a :class:`~tierwise.providers.base.ModelRequest` (chat-format
messages, as tierwise stores a conversation) encoded by :mod:`tierwise.providers.responses_request`
(instructions, input items, tools, the other fields, ``store``), and decodes the event stream into
:mod:`tierwise.providers.base` events.

The answer: text deltas, function calls by their own index (id and name first, then argument
fragments) and whole at the end, a ``custom_tool_call`` as a ``custom`` call
(:class:`~tierwise.providers.base.ChoiceDelta` ``tool_calls``, as the OpenAI-compatible provider
relays one), every other output item (``reasoning``, a hosted tool's call…) whole as
``ChoiceDelta(0, {"response_items": [item]})`` so it is stored on the answer and sent back next
turn, unchanged; the usage in Chat Completions' names (``input_tokens_details`` →
``prompt_tokens_details``, ``output_tokens_details`` → ``completion_tokens_details``: what the
gateway relays to either kind of client); ``Done`` with ``finish_reason`` ``tool_calls``,
``stop``, ``length`` (incomplete: ``max_output_tokens``) or ``content_filter``. ``response.failed``
and ``error`` events, and a stream that ends without ``response.completed``, are
each a :class:`~tierwise.providers.errors.ProviderError`; retries and fallbacks are
:class:`~tierwise.providers.http.HTTPProvider`'s.

Example:
    >>> provider = ResponsesProvider(base_url="http://127.0.0.1:9/v1", model="gpt-5-mini")
    >>> body = provider.body(ModelRequest([{"role": "system", "content": "Be brief."},
    ...     {"role": "user", "content": "Hi"}]), "gpt-5-mini")
    >>> body["instructions"], body["input"], body["store"]
    ('Be brief.', [{'type': 'message', 'role': 'user', 'content': 'Hi'}], False)
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

import openai

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
from tierwise.providers.http import HTTPProvider, json_events
from tierwise.providers.openai_compat import provider_error
from tierwise.providers.responses_request import (
    CARRIED,
    responses_body,
    responses_input,
    responses_tool,
    responses_tool_choice,
)

__all__ = ["ResponsesProvider", "responses_input", "responses_tool", "responses_tool_choice"]

# -- the answer --------------------------------------------------------------------------------

_COUNTS = frozenset({"input_tokens", "output_tokens", "total_tokens"})
_RENAMED_USAGE = {
    "input_tokens_details": "prompt_tokens_details",
    "output_tokens_details": "completion_tokens_details",
}
_INCOMPLETE = {"max_output_tokens": "length", "content_filter": "content_filter"}
_RETRYABLE_CODES = frozenset({"server_error", "rate_limit_exceeded"})


def _usage(usage: Any) -> Usage | None:
    """The response's usage in Chat Completions' names (what the gateway relays to either client)."""
    if not isinstance(usage, Mapping):
        return None
    details = {
        _RENAMED_USAGE.get(str(k), str(k)): v for k, v in usage.items() if k not in _COUNTS and v is not None
    }
    prompt = int(usage.get("input_tokens") or 0)
    completion = int(usage.get("output_tokens") or 0)
    cached = (usage.get("input_tokens_details") or {}).get("cached_tokens") or 0
    total = int(usage.get("total_tokens") or prompt + completion)
    return Usage(prompt, completion, total, int(cached), details)


def _failure(error: Any, model: str, what: str) -> ProviderError:
    """A ``response.failed`` or ``error`` event's error as a :class:`ProviderError`."""
    detail = dict(error) if isinstance(error, Mapping) else {"message": str(error)}
    code = detail.get("code")
    return ProviderError(
        f"{model}: {what}: {detail.get('message') or code or 'unknown error'}",
        body=json.dumps(detail),
        retryable=code in _RETRYABLE_CODES,
        model=model,
        detail=detail,
    )


class _Decoder:
    """One answer's stream events (as dicts) → :mod:`tierwise.providers.base` events."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.calls: dict[int, dict[str, Any]] = {}  # output_index → the function call, as streamed
        self.order: dict[int, int] = {}  # output_index → the call's index among the answer's calls
        self.texts: set[str] = set()  # the message items whose text was streamed
        self.customs = 0
        self.done: Done | None = None
        self.usage: Usage | None = None

    def _index(self, output_index: int) -> int:
        return self.order.setdefault(output_index, len(self.order))

    def feed(self, event: Mapping[str, Any]) -> list[Event]:
        """The events ``event`` makes."""
        kind = event.get("type")
        if kind == "response.output_text.delta":
            if event.get("item_id"):
                self.texts.add(str(event["item_id"]))
            return [TextDelta(str(event.get("delta") or ""))] if event.get("delta") else []
        if kind == "response.refusal.delta" and event.get("delta"):
            return [ChoiceDelta(0, {"refusal": str(event["delta"])})]
        if kind == "response.function_call_arguments.delta":
            call = self.calls.get(int(event.get("output_index", -1)))
            if call is None or not event.get("delta"):
                return []
            call["arguments"] += event["delta"]
            return [ToolCallDelta(call["index"], arguments_delta=str(event["delta"]))]
        if kind == "response.output_item.added":
            item = event.get("item") or {}
            if item.get("type") != "function_call":
                return []
            position = int(event.get("output_index", len(self.order)))
            call = {"index": self._index(position), "id": item.get("call_id"), "name": item.get("name")}
            call["arguments"] = str(item.get("arguments") or "")
            self.calls[position] = call
            return [ToolCallDelta(call["index"], call["id"], call["name"], call["arguments"])]
        if kind == "response.output_item.done":
            return self._item_done(int(event.get("output_index", -1)), event.get("item") or {})
        if kind in ("response.completed", "response.incomplete"):
            return self._completed(event.get("response") or {})
        if kind == "response.failed":
            failed = event.get("response") or {}
            raise _failure(
                failed.get("error") or {"message": "the response failed"}, self.model, "response failed"
            )
        if kind == "error":
            raise _failure(
                {k: v for k, v in event.items() if k not in ("type", "sequence_number")}, self.model, "error"
            )
        return []

    def _item_done(self, position: int, item: Mapping[str, Any]) -> list[Event]:
        kind = item.get("type")
        if kind == "message":
            if str(item.get("id")) in self.texts:
                return []
            parts = [p for p in item.get("content") or () if isinstance(p, Mapping)]
            text = "".join(str(p.get("text", "")) for p in parts if p.get("type") == "output_text")
            return [TextDelta(text)] if text else []  # (a server that sent the text only whole)
        if kind == "function_call":
            call = self.calls.get(position)
            if call is None:  # never announced: the whole call now
                call = {"index": self._index(position), "id": item.get("call_id"), "name": item.get("name")}
                call["arguments"] = ""
                self.calls[position] = call
                out: list[Event] = [ToolCallDelta(call["index"], call["id"], call["name"])]
            else:
                out = []
            call["id"] = call["id"] or item.get("call_id")
            call["name"] = call["name"] or item.get("name")
            whole = str(item.get("arguments") or "")
            if not call["arguments"] and whole:
                call["arguments"] = whole
                out.append(ToolCallDelta(call["index"], arguments_delta=whole))
            return out
        if kind == "custom_tool_call":
            custom = {"name": item.get("name"), "input": item.get("input", "")}
            piece = {
                "index": self._index(position),
                "id": item.get("call_id"),
                "type": "custom",
                "custom": custom,
            }
            self.customs += 1
            return [ChoiceDelta(0, {"tool_calls": [piece]})]
        return [ChoiceDelta(0, {CARRIED: [dict(item)]})]  # reasoning, a hosted tool's call…: as sent

    def _completed(self, response: Mapping[str, Any]) -> list[Event]:
        out: list[Event] = []
        for position in sorted(self.calls):
            call = self.calls[position]
            out.append(
                ToolCall(call["id"] or f"call_{call['index']}", call["name"] or "", call["arguments"] or "{}")
            )
        self.usage = _usage(response.get("usage"))
        if self.usage is not None:
            out.append(self.usage)
        reason = (response.get("incomplete_details") or {}).get("reason")
        if response.get("status") == "incomplete" and reason in _INCOMPLETE:
            finish = _INCOMPLETE[reason]
        else:
            finish = "tool_calls" if self.calls or self.customs else "stop"
        # Only what a Chat Completions answer has too: Done.fields reach its chunks as they are.
        fields = {k: response[k] for k in ("service_tier",) if response.get(k) is not None}
        self.done = Done(finish, str(response.get("model") or self.model), fields)
        out.append(self.done)
        return out


class ResponsesProvider(HTTPProvider[openai.AsyncOpenAI]):
    """A model behind OpenAI's Responses API (``POST {base_url}/responses``), streamed.

    Settings come from ``settings`` (default: the ``TIERWISE_*`` environment, read now); keyword
    arguments override them (:class:`~tierwise.providers.http.HTTPProvider`). The module docstring
    says how a request is encoded and its answer decoded.

    Args:
        settings: the provider settings; ``None`` reads the environment.
        client: an ``openai.AsyncOpenAI`` to use instead of building one (its retries are turned off).
        cache_hints: accepted for the shared constructor; the Responses API caches by prefix on its
            own and has no breakpoints to mark.
        **options: ``base_url``, ``api_key``, ``model``, ``fallback_models``, ``timeout``,
            ``max_retries``, ``retry_policy``.

    Raises:
        ProviderNotConfigured: no base URL or no model.
        InputError: a ``TIERWISE_*`` variable has a bad value.

    Example:
        >>> ResponsesProvider(base_url="https://api.openai.com/v1", model="gpt-5-mini").wire
        'responses'
    """

    name = "responses"
    wire = "responses"
    sdk_client = openai.AsyncOpenAI
    sdk_timeout = openai.Timeout

    def body(self, request: ModelRequest, model: str) -> dict[str, Any]:
        """The Responses body of ``request`` for ``model`` (``stream: true``): :func:`responses_body`."""
        return responses_body(request, model)

    async def _once(self, request: ModelRequest, model: str) -> AsyncIterator[Event]:
        """One attempt: send the request and translate its events."""
        client = self._client()
        body = self.body(request, model)
        extra = {k: v for k, v in body.items() if k not in ("model", "input", "stream")}
        try:
            opened = client.responses.with_streaming_response.create(
                model=model, input=body["input"], stream=True, extra_body=extra
            )
            response = await self._first_byte(opened.__aenter__(), model)
        except openai.OpenAIError as exc:
            raise provider_error(exc, model) from exc
        decoder = _Decoder(model)
        try:  # the events read as JSON, not through the SDK's event types (see sse_events)
            async for _, event in json_events(response.iter_lines()):
                for out in decoder.feed(event):
                    yield out
                if decoder.done is not None:
                    break
        except openai.OpenAIError as exc:
            raise provider_error(exc, model, answering=True) from exc
        except ValueError as exc:  # an event that is not JSON
            raise ProviderError(f"{model}: malformed stream: {exc}", model=model) from exc
        finally:
            await opened.__aexit__(None, None, None)
        if decoder.done is None:
            raise ProviderError(
                f"{model}: the stream ended before the response completed", retryable=True, model=model
            )
