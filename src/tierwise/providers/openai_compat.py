"""One provider for every OpenAI-compatible server: OpenAI, OpenRouter, Ollama, vLLM, LM Studio.

The server is chosen by base URL alone; nothing here looks at model names. Requests stream
(``stream=True`` with ``stream_options={"include_usage": True}``) and the chunks become
:mod:`tierwise.providers.base` events: text deltas, tool-call deltas (by ``index``, arguments in
fragments), the complete tool calls, the usage of the final chunk, and :class:`Done`. What else the
server sends is carried as sent: a choice's other fields and calls of other types (``custom``) as
:class:`~tierwise.providers.base.ChoiceDelta`, the usage's other fields (``completion_tokens_details``…)
in ``Usage.details``, the response's (``system_fingerprint``…) in ``Done.fields``.

Failures are handled here, not in the SDK (its ``max_retries`` is 0), so they are logged and
testable: 408 / 429 / 5xx, timeouts and dropped connections are retried with exponential backoff and
jitter (:class:`~tierwise.providers.retry.RetryPolicy`, honouring ``Retry-After``), but only while
nothing of the answer has been streamed. A model that still fails — or fails in a way a retry cannot
fix — hands over to the next fallback model (:func:`~tierwise.providers.fallback.chain`). Every
error that leaves the provider is a :class:`~tierwise.providers.errors.ProviderError` carrying the
status code and body, the server's error object and its ``Retry-After`` headers as sent (for a
gateway to relay), and whether it timed out or got no byte of an answer; SDK exceptions never
escape. :meth:`OpenAICompatProvider.with_retry_policy` is the same provider (and connections)
retrying otherwise: the ``/v1`` gateway retries only what its client cannot see.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import openai
from openai.types.chat import ChatCompletionChunk

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
from tierwise.providers.cache_hints import with_cache_hints
from tierwise.providers.errors import ProviderError, error_detail
from tierwise.providers.http import HTTPProvider, SDKErrors, http_error, sdk_error
from tierwise.providers.retry import is_retryable_status
from tierwise.providers.settings import ProviderSettings

__all__ = ["OpenAICompatProvider", "provider_error"]

log = logging.getLogger(__name__)

_OWN_FIELDS = frozenset({"model", "messages", "stream", "stream_options", "extra_body"})


def _status_error(exc: openai.APIStatusError, model: str, text: str | None) -> ProviderError:
    """An HTTP error: its error object read from the body, or (a stream's, never read) the SDK's."""
    body: str | None = text
    if text is not None:
        detail = error_detail(text)
    else:
        body = json.dumps(exc.body) if exc.body is not None else None
        # (the SDK keeps an OpenAI-shaped body's ``error`` as ``body``)
        detail = exc.body if isinstance(exc.body, dict) and "message" in exc.body else None
    return http_error(model, exc.status_code, exc.response.headers, exc.message, body=body, detail=detail)


def _stream_error(exc: Exception, model: str) -> ProviderError | None:
    """An error event inside the stream (OpenRouter sends these), read by the SDK as an ``APIError``."""
    if not isinstance(exc, openai.APIError):
        return None
    code = exc.body.get("code") if isinstance(exc.body, dict) else None
    code_status = code if isinstance(code, int) else None
    return ProviderError(
        f"{model}: the server reported an error mid-stream: {exc.message}",
        status=code_status,
        body=json.dumps(exc.body) if exc.body is not None else None,
        retryable=code_status is not None and is_retryable_status(code_status),
        model=model,
        detail=exc.body if isinstance(exc.body, dict) else {"message": exc.message},
    )


OPENAI_ERRORS = SDKErrors(
    openai.APIStatusError, openai.APITimeoutError, openai.APIConnectionError, _status_error, _stream_error
)
"""How the ``openai`` SDK's exceptions are read (:func:`~tierwise.providers.http.sdk_error`)."""


def provider_error(exc: Exception, model: str, *, answering: bool = False) -> ProviderError:
    """Translate an ``openai`` SDK (or stream-decoding) exception into a :class:`ProviderError`.

    ``answering``: the response had begun (the exception came while reading its stream), so a
    dropped connection is not :attr:`~ProviderError.unanswered`.
    """
    return sdk_error(exc, model, OPENAI_ERRORS, answering=answering)


_COUNTS = frozenset({"prompt_tokens", "completion_tokens", "total_tokens"})
_PER_CHUNK = frozenset({"obfuscation"})  # padding that belongs to one chunk: not the response's


def _fields(chunk: ChatCompletionChunk, fields: dict[str, Any]) -> None:
    """The chunk's fields beyond id, model, choices and usage (``system_fingerprint``…) into ``fields``."""
    for key in ("system_fingerprint", "service_tier"):
        value = getattr(chunk, key, None)
        if value is not None:
            fields[key] = value
    for key, value in (chunk.model_extra or {}).items():
        if value is not None and key not in _PER_CHUNK:
            fields[key] = value


def _usage(chunk: ChatCompletionChunk) -> Usage | None:
    reported = chunk.usage
    if reported is None:
        return None
    more = {k: v for k, v in reported.model_dump(exclude_none=True).items() if k not in _COUNTS}
    # prompt_tokens_details (cached tokens) is newer than some SDKs and servers: read it defensively.
    details: Any = getattr(reported, "prompt_tokens_details", None)
    if isinstance(details, dict):
        cached = details.get("cached_tokens")
    else:
        cached = getattr(details, "cached_tokens", 0)
    return Usage(
        reported.prompt_tokens, reported.completion_tokens, reported.total_tokens, int(cached or 0), more
    )


def _choice_delta(choice: Any, *, whole: bool) -> ChoiceDelta:
    """A streamed choice as a :class:`ChoiceDelta`: whole, or only what the other events do not carry."""
    delta = choice.delta.model_dump(exclude_none=True) if choice.delta is not None else {}
    if not whole:
        delta = {k: v for k, v in delta.items() if k not in ("role", "content", "tool_calls") and v != ""}
    logprobs = choice.logprobs.model_dump() if choice.logprobs is not None else None
    return ChoiceDelta(choice.index, delta, logprobs, choice.finish_reason if whole else None)


class OpenAICompatProvider(HTTPProvider[openai.AsyncOpenAI]):
    """A model behind an OpenAI-compatible ``/chat/completions`` endpoint.

    Settings come from ``settings`` (default: ``ProviderSettings.load()``, i.e. the ``TIERWISE_*``
    environment, read now); keyword arguments override them (:class:`~tierwise.providers.http.HTTPProvider`).

    Args:
        settings: the provider settings; ``None`` reads the environment.
        max_tokens_param: the request field for ``max_tokens`` (``"max_completion_tokens"`` for
            OpenAI's reasoning models).
        cache_hints: mark each request's ``cache_breakpoints`` with Anthropic-style ``cache_control``
            parts (:mod:`~tierwise.providers.cache_hints`), for upstreams that cache only at explicit
            breakpoints; default ``TIERWISE_CACHE_HINTS`` (off).
        client: an ``openai.AsyncOpenAI`` to use instead of building one (its retries are turned off).
        **options: ``base_url``, ``api_key``, ``model``, ``fallback_models``, ``timeout``,
            ``max_retries``, ``retry_policy`` (:class:`~tierwise.providers.http.HTTPProvider`).

    Raises:
        ProviderNotConfigured: no base URL or no model.
        InputError: a ``TIERWISE_*`` variable has a bad value.

    Example:
        >>> provider = OpenAICompatProvider(base_url="http://localhost:11434/v1", model="llama3.1:8b")
        >>> provider.models
        ['llama3.1:8b']
    """

    name = "openai-compat"
    wire = "chat"
    sdk_client = openai.AsyncOpenAI
    sdk_timeout = openai.Timeout

    def __init__(
        self,
        settings: ProviderSettings | None = None,
        *,
        max_tokens_param: str = "max_tokens",
        client: openai.AsyncOpenAI | None = None,
        cache_hints: bool | None = None,
        **options: Any,
    ) -> None:
        super().__init__(settings, client=client, cache_hints=cache_hints, **options)
        self.max_tokens_param = max_tokens_param

    async def list_models(self) -> list[str]:
        """The model ids the server offers (``GET /models``)."""
        client = self._client()
        try:
            page = await client.models.list()
            return [model.id async for model in page]
        except openai.OpenAIError as exc:
            raise provider_error(exc, "models") from exc

    # -- one attempt ---------------------------------------------------------------------------

    def _body(self, request: ModelRequest, model: str) -> dict[str, Any]:
        messages = request.messages
        if self.cache_hints and request.cache_breakpoints:  # the wire only: the pack stays as counted
            messages = with_cache_hints(messages, request.cache_breakpoints, tools=request.tools)
        body: dict[str, Any] = {
            "model": model,
            "messages": messages,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if request.tools:
            body["tools"] = request.tools
            if request.tool_choice is not None:
                body["tool_choice"] = request.tool_choice
        if request.max_tokens is not None:
            body[self.max_tokens_param] = request.max_tokens
        if request.temperature is not None:
            body["temperature"] = request.temperature
        extra = {k: v for k, v in request.params.items() if k not in _OWN_FIELDS}
        if extra:  # the client's fields, sent as given (the SDK merges them into the JSON body)
            body["extra_body"] = extra
        return body

    async def _once(self, request: ModelRequest, model: str) -> AsyncIterator[Event]:
        """One attempt: send the request and translate its chunks."""
        client = self._client()
        body = self._body(request, model)
        try:
            response = await self._first_byte(client.chat.completions.create(**body), model)
        except openai.OpenAIError as exc:
            raise provider_error(exc, model) from exc
        calls: dict[int, list[str]] = {}  # index -> [id, name, arguments…]
        others: set[int] = set()  # the indexes of calls of another type (custom): relayed as sent
        fields: dict[str, Any] = {}
        usage: Usage | None = None
        finish_reason: str | None = None
        try:
            async for chunk in response:
                usage = _usage(chunk) or usage
                _fields(chunk, fields)
                for choice in chunk.choices:
                    if choice.index:  # a further choice (n > 1): relayed as sent
                        yield _choice_delta(choice, whole=True)
                        continue
                    delta = choice.delta
                    extra = _choice_delta(choice, whole=False)
                    if delta.content:  # its log probabilities travel with it
                        yield TextDelta(delta.content, extra.logprobs)
                        extra = replace(extra, logprobs=None)
                    if extra.delta or extra.logprobs:
                        yield extra
                    for position, piece in enumerate(delta.tool_calls or ()):
                        index = piece.index if piece.index is not None else position
                        if index in others or piece.type not in (None, "function"):
                            others.add(index)
                            yield ChoiceDelta(0, {"tool_calls": [piece.model_dump(exclude_none=True)]})
                            continue
                        name = piece.function.name if piece.function else None
                        fragment = (piece.function.arguments or "") if piece.function else ""
                        state = calls.setdefault(index, ["", ""])
                        state[0] = state[0] or (piece.id or "")
                        state[1] = state[1] or (name or "")
                        state.append(fragment)
                        yield ToolCallDelta(index, piece.id, name, fragment)
                    finish_reason = choice.finish_reason or finish_reason
        except openai.OpenAIError as exc:
            raise provider_error(exc, model, answering=True) from exc
        except ValueError as exc:  # a chunk that is not JSON
            raise ProviderError(f"{model}: malformed stream: {exc}", model=model) from exc
        finally:
            await response.close()
        if finish_reason is None:
            raise ProviderError(
                f"{model}: the stream ended before the model finished", retryable=True, model=model
            )
        for index in sorted(calls):
            call_id, name, *arguments = calls[index]
            yield ToolCall(call_id or f"call_{index}", name, "".join(arguments) or "{}")
        if usage is not None:
            yield usage
        yield Done(finish_reason, model, fields)
