"""The provider interface: one request type, one streamed event vocabulary, one async method.

A :class:`Provider` implements a single async generator, :meth:`Provider.stream`, that turns a
:class:`ModelRequest` into events; :meth:`Provider.complete` collects them into a
:class:`ModelResponse`. The events follow seed 002's ``StreamChunk`` (``text``,
``tool_call_start``, ``tool_call_complete``, ``done``) with the payloads typed:

- :class:`TextDelta`: a piece of the answer's text.
- :class:`ToolCallDelta`: a piece of a tool call — ``index`` says which call (parallel calls stream
  interleaved); ``id`` and ``name`` usually come only in a call's first delta.
- :class:`ToolCall`: a complete tool call (``arguments`` is the JSON text), once the stream ended.
- :class:`Usage`: token counts, when the server reports them (near the end), with the server's
  other usage fields as sent (``details``: ``completion_tokens_details``…).
- :class:`Done`: the last event — why the model stopped, which model answered, and the response's
  other fields as the server sent them (``fields``: ``system_fingerprint``…).
- :class:`ChoiceDelta`: what an OpenAI-compatible upstream sent beyond text and tool calls (log
  probabilities, a refusal, the other choices when ``n`` > 1), as sent, for OpenAI clients.
- :class:`Retry` and :class:`Fallback`: notices that a request is being retried or handed to the
  next model. They are not output: a stream that has produced only notices can still be retried.

``ALLOW_MODEL_REQUESTS`` is the guard: set it to ``False`` (tests do) and every provider that talks
to a real server refuses, unless the server is on loopback.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import threading
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

from tierwise.providers.errors import ModelRequestsBlocked

if TYPE_CHECKING:
    from tierwise.providers.retry import RetryPolicy

__all__ = [
    "ALLOW_MODEL_REQUESTS",
    "ChoiceDelta",
    "Done",
    "Event",
    "Fallback",
    "ModelRequest",
    "ModelResponse",
    "Native",
    "Provider",
    "Retry",
    "SyncCompletion",
    "TextDelta",
    "ToolCall",
    "ToolCallDelta",
    "Usage",
    "aclose",
    "check_requests_allowed",
    "collect",
    "is_loopback_url",
    "is_output",
]

ALLOW_MODEL_REQUESTS = True
"""Whether providers may reach real (non-loopback) model servers. Tests set it to ``False``."""

T = TypeVar("T")


# -- events ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of the answer's text, with its tokens' log probabilities when the upstream sent them.

    ``logprobs`` is OpenAI's ``choices[0].logprobs`` of the chunk that carried the text, so a relay
    can send both in one chunk again; everything else reads only ``text``.
    """

    text: str
    logprobs: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """A piece of tool call ``index``: its id and name (first piece) and a fragment of its arguments."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments_delta: str = ""


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A complete tool call; ``arguments`` is the JSON text the model wrote.

    Example:
        >>> ToolCall("call_1", "get_tasks", '{"status": "done"}').to_openai()["function"]["name"]
        'get_tasks'
    """

    id: str
    name: str
    arguments: str = "{}"

    def parsed_arguments(self) -> Any:
        """The arguments decoded from JSON (raises ``json.JSONDecodeError`` if the model wrote bad JSON)."""
        return json.loads(self.arguments or "{}")

    def to_openai(self) -> dict[str, Any]:
        """The call as an entry of an assistant message's ``tool_calls``."""
        function = {"name": self.name, "arguments": self.arguments}
        return {"id": self.id, "type": "function", "function": function}


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens a request used, as the server reported them; ``cached_tokens`` are part of the prompt.

    ``details`` are the server's other usage fields as it sent them (``prompt_tokens_details``,
    ``completion_tokens_details``, a price…), for a relay to pass on; two usages add them up.

    Example:
        >>> a = Usage(10, 5, 15, details={"completion_tokens_details": {"reasoning_tokens": 3}})
        >>> (a + a).details
        {'completion_tokens_details': {'reasoning_tokens': 6}}
    """

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    cached_tokens: int = 0
    details: Mapping[str, Any] = field(default_factory=dict, compare=False)

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.total_tokens + other.total_tokens,
            self.cached_tokens + other.cached_tokens,
            _summed(self.details, other.details),
        )


def _summed(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    """Two usages' details added up: numbers summed, objects key by key, anything else the later one's."""
    out = dict(a)
    for key, value in b.items():
        have = out.get(key)
        if isinstance(value, Mapping) and isinstance(have, Mapping):
            out[key] = _summed(have, value)
        elif _number(value) and _number(have):
            out[key] = have + value
        else:
            out[key] = value
    return out


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


@dataclass(frozen=True, slots=True)
class Done:
    """The last event of a stream: why the model stopped and which model answered.

    ``fields`` are the response's other top-level fields as the server sent them
    (``system_fingerprint``, ``service_tier``…), for a relay to pass on.
    """

    finish_reason: str | None
    model: str
    fields: Mapping[str, Any] = field(default_factory=dict, compare=False)


@dataclass(frozen=True, slots=True)
class ChoiceDelta:
    """A piece of an OpenAI-compatible answer the other events do not carry, as the upstream sent it.

    For choice ``index`` 0 (the answer the other events carry) ``delta`` holds only the other fields
    (``refusal``…) and ``logprobs`` the piece's log probabilities; another index is a further choice
    (``n`` > 1), relayed whole: its ``delta``, ``logprobs`` and ``finish_reason`` as they came. The
    OpenAI-compatible endpoint relays these; everything else ignores them.

    An upstream of another wire sends here what its answer holds beyond text and calls, as a list
    under the field the decoded conversation keeps it in, so it is stored on the answer and sent
    back to an upstream of that wire next turn: a Responses upstream's other output items
    (``reasoning`` with its ``encrypted_content``…) as ``{"response_items": [item]}``, an Anthropic
    upstream's ``thinking`` / ``redacted_thinking`` blocks with their signatures as
    ``{"thinking_blocks": [block]}``; pieces of a list field add up.
    """

    index: int
    delta: dict[str, Any] = field(default_factory=dict)
    logprobs: dict[str, Any] | None = None
    finish_reason: str | None = None


@dataclass(frozen=True, slots=True)
class Retry:
    """Notice: attempt ``attempt`` on ``model`` failed with ``error``; retrying after ``delay`` seconds."""

    model: str
    attempt: int
    delay: float
    error: str


@dataclass(frozen=True, slots=True)
class Fallback:
    """Notice: ``from_model`` failed with ``error`` before answering; ``to_model`` is tried next."""

    from_model: str
    to_model: str
    error: str


Event = TextDelta | ToolCallDelta | ToolCall | Usage | Done | ChoiceDelta | Retry | Fallback
"""Everything a provider's stream yields."""


def is_output(event: Event) -> bool:
    """Whether ``event`` is part of the answer: anything but a :class:`Retry` or :class:`Fallback` notice."""
    return not isinstance(event, Retry | Fallback)


# -- request and response ----------------------------------------------------------------------


@dataclass(frozen=True)
class Native:
    """The client's request in its own wire format, for an upstream that speaks the same one.

    The conversation, tools and the fields tierwise reads are in :class:`ModelRequest` (OpenAI's
    chat shape, as the store keeps them); ``fields`` are the rest of the client's body as sent, in
    its wire's names (Anthropic's ``thinking``, ``top_k``; the Responses API's ``reasoning``,
    ``include``…) and ``headers`` the request headers its wire defines (``anthropic-version``,
    ``anthropic-beta``). A provider whose :attr:`Provider.wire` is ``wire`` sends them as they came;
    any other leaves them out (it could not read them).
    """

    wire: str
    fields: Mapping[str, Any] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ModelRequest:
    """What is sent to a model: OpenAI-format messages and tool definitions, and sampling limits.

    ``model=None`` means the provider's default model. ``tool_choice="none"`` keeps the tools
    defined (some servers require them when the history holds tool calls) but asks for text only.
    ``cache_breakpoints`` are the indices of the messages that end the request's stable parts
    (:func:`tierwise.packing.prefix.cache_breakpoints`); a provider set to send cache hints marks
    them (:mod:`tierwise.providers.cache_hints`), the others ignore them. ``tool_choice`` is
    ``"none"``, ``"auto"``, ``"required"`` or OpenAI's named choice (``{"type": "function", …}``).
    ``params`` are further request fields in OpenAI's names (``response_format``, ``n``, ``stop``,
    ``seed``, ``max_completion_tokens``, …), sent as given by an OpenAI-compatible provider (the
    OpenAI-compatible endpoint forwards its client's this way); a provider of another wire sends
    the ones its wire has a name for. ``native`` is the client's request in its own wire format,
    when that is not Chat Completions (:class:`Native`).
    """

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] = field(default_factory=list)
    model: str | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    tool_choice: str | Mapping[str, Any] | None = None
    cache_breakpoints: tuple[int, ...] = ()
    params: Mapping[str, Any] = field(default_factory=dict)
    native: Native | None = None


@dataclass(frozen=True)
class ModelResponse:
    """A whole answer: text, complete tool calls, usage, and the model that gave it.

    ``retries`` and ``fallbacks`` are the notices seen on the way (empty when the first try worked);
    ``extras`` the :class:`ChoiceDelta` pieces (log probabilities, refusal, further choices);
    ``fields`` the response's other fields as the server sent them (:attr:`Done.fields`).
    """

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage | None = None
    model: str = ""
    finish_reason: str | None = None
    retries: list[Retry] = field(default_factory=list)
    fallbacks: list[Fallback] = field(default_factory=list)
    extras: list[ChoiceDelta] = field(default_factory=list)
    fields: Mapping[str, Any] = field(default_factory=dict)

    def message(self) -> dict[str, Any]:
        """The answer as an OpenAI assistant message (``content`` is ``None`` for a pure tool call)."""
        message: dict[str, Any] = {"role": "assistant", "content": self.text or None}
        if self.tool_calls:
            message["tool_calls"] = [call.to_openai() for call in self.tool_calls]
        return message


# -- the interface -----------------------------------------------------------------------------


class Provider(ABC):
    """A model provider: implement :meth:`stream` as an async generator of :data:`Event`.

    Attributes:
        name: a short label for logs and reports ("openai-compat", "scripted", …).
        model: the default model, used when a request names none (``None`` if the provider has none).
        wire: the wire format it speaks upstream: ``"chat"`` (Chat Completions, and every provider
            that is not a server: they read the request as it is), ``"responses"`` or
            ``"anthropic"``. A request's :attr:`ModelRequest.native` of the same wire is sent as it came.
    """

    name: str = "provider"
    model: str | None = None
    wire: str = "chat"

    @abstractmethod
    def stream(self, request: ModelRequest) -> AsyncIterator[Event]:
        """Answer ``request`` as a stream of events ending with :class:`Done`.

        Raises:
            ProviderError: the server failed (``status`` and ``body`` say how).
        """

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Answer ``request`` in one piece (collects :meth:`stream`)."""
        return await collect(self.stream(request))

    def with_retry_policy(self, policy: RetryPolicy) -> Provider:
        """This provider retrying failed requests by ``policy``; one that does not retry returns itself."""
        return self

    async def aclose(self) -> None:  # noqa: B027 - optional hook, deliberately empty
        """Release connections opened on the running event loop (nothing to release by default)."""


async def aclose(iterator: AsyncIterator[Any]) -> None:
    """Close ``iterator`` now if it has ``aclose`` (async generators do), so its cleanup runs at once."""
    close = getattr(iterator, "aclose", None)
    if close is not None:
        await close()


async def collect(stream: AsyncIterator[Event]) -> ModelResponse:
    """Assemble a stream into a :class:`ModelResponse`.

    Tool calls are built from :class:`ToolCallDelta` pieces grouped by ``index`` (the id and name
    may come in any piece, the arguments in many); complete :class:`ToolCall` events, when a
    provider sends them, take precedence over the assembled ones.

    Example:
        >>> async def events():
        ...     yield ToolCallDelta(0, "call_1", "add", '{"a": ')
        ...     yield ToolCallDelta(0, arguments_delta="1}")
        ...     yield Done("tool_calls", "m")
        >>> asyncio.run(collect(events())).tool_calls
        [ToolCall(id='call_1', name='add', arguments='{"a": 1}')]
    """
    text: list[str] = []
    pieces: dict[int, list[str]] = {}
    ids: dict[int, str] = {}
    names: dict[int, str] = {}
    complete: list[ToolCall] = []
    usage: Usage | None = None
    done: Done | None = None
    retries: list[Retry] = []
    fallbacks: list[Fallback] = []
    extras: list[ChoiceDelta] = []
    try:
        async for event in stream:
            if isinstance(event, TextDelta):
                text.append(event.text)
                if event.logprobs is not None:  # kept with the other pieces OpenAI clients get back
                    extras.append(ChoiceDelta(0, logprobs=event.logprobs))
            elif isinstance(event, ToolCallDelta):
                pieces.setdefault(event.index, []).append(event.arguments_delta)
                # Some servers repeat the id and name in every piece: the first one counts.
                if event.id:
                    ids.setdefault(event.index, event.id)
                if event.name:
                    names.setdefault(event.index, event.name)
            elif isinstance(event, ToolCall):
                complete.append(event)
            elif isinstance(event, Usage):
                usage = event
            elif isinstance(event, Done):
                done = event
            elif isinstance(event, Retry):
                retries.append(event)
            elif isinstance(event, ChoiceDelta):
                extras.append(event)
            else:
                fallbacks.append(event)
    finally:
        await aclose(stream)
    calls = complete or [
        ToolCall(ids.get(i, f"call_{i}"), names.get(i, ""), "".join(pieces[i]) or "{}")
        for i in sorted(pieces)
    ]
    return ModelResponse(
        text="".join(text),
        tool_calls=calls,
        usage=usage,
        model=done.model if done else "",
        finish_reason=done.finish_reason if done else None,
        retries=retries,
        fallbacks=fallbacks,
        extras=extras,
        fields=done.fields if done else {},
    )


# -- the guard ---------------------------------------------------------------------------------


def is_loopback_url(url: str) -> bool:
    """Whether ``url``'s host is loopback (``localhost``, ``127.0.0.0/8``, ``::1``).

    Example:
        >>> is_loopback_url("http://127.0.0.1:8000/v1"), is_loopback_url("https://api.openai.com/v1")
        (True, False)
    """
    host = (urlsplit(url).hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_requests_allowed(base_url: str) -> None:
    """Raise :class:`ModelRequestsBlocked` if requests are disallowed and ``base_url`` is not loopback."""
    if not ALLOW_MODEL_REQUESTS and not is_loopback_url(base_url):
        raise ModelRequestsBlocked(
            f"model requests are disabled (tierwise.providers.base.ALLOW_MODEL_REQUESTS is False) and "
            f"{base_url} is not a loopback address; use ScriptedModel / FunctionModel "
            "(tierwise.providers.testing) or a fake server on 127.0.0.1"
        )


# -- synchronous callers -----------------------------------------------------------------------


def _run(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` to completion from synchronous code, even if this thread runs an event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    # Called from inside a running loop (sync code within async code): run on a thread of its own.
    result: list[T] = []
    error: list[BaseException] = []

    def target() -> None:
        try:
            result.append(asyncio.run(coroutine))
        except BaseException as exc:  # re-raised in the caller's thread
            error.append(exc)

    worker = threading.Thread(target=target, name="tierwise-sync-completion")
    worker.start()
    worker.join()
    if error:
        raise error[0]
    return result[0]


class SyncCompletion:
    """A blocking ``complete(messages, *, model, max_tokens) -> str`` over an async provider.

    This is the :class:`tierwise.summarize.Completion` protocol, so a provider can back the
    :class:`~tierwise.summarize.LLMSummarizer`::

        summarizer = LLMSummarizer(SyncCompletion(provider), model="gpt-4o-mini")
    """

    def __init__(self, provider: Provider) -> None:
        self.provider = provider

    def complete(self, messages: Sequence[Mapping[str, Any]], *, model: str, max_tokens: int) -> str:
        """The model's text answer to ``messages`` (raises ``ProviderError`` if the model fails)."""
        return self.respond(messages, model=model, max_tokens=max_tokens).text

    def respond(self, messages: Sequence[Mapping[str, Any]], *, model: str, max_tokens: int) -> ModelResponse:
        """The model's whole answer: text, ``finish_reason`` (``"length"``: cut at ``max_tokens``), usage."""
        request = ModelRequest([dict(m) for m in messages], model=model, max_tokens=max_tokens)
        return _run(self._complete(request))

    async def _complete(self, request: ModelRequest) -> ModelResponse:
        # Each call runs on an event loop of its own: close what the provider opened on it.
        try:
            return await self.provider.complete(request)
        finally:
            await self.provider.aclose()
