"""What every provider that talks to a model server over HTTP shares: settings, retries, fallbacks.

:class:`HTTPProvider` reads :class:`~tierwise.providers.settings.ProviderSettings` (the ``TIERWISE_*``
environment unless given), keeps one SDK client per event loop (connection pools cannot cross
loops), and streams a request from its model, retrying failures that a retry can fix while nothing
of the answer has been streamed (:class:`~tierwise.providers.retry.RetryPolicy`, honouring
``Retry-After``), then from each fallback model (:func:`~tierwise.providers.fallback.chain`). A
subclass speaks one wire format: it names its SDK's client and timeout classes
(:attr:`HTTPProvider.sdk_client`, :attr:`HTTPProvider.sdk_timeout`; options of its own in
:meth:`HTTPProvider._client_options`) and sends one attempt (:meth:`HTTPProvider._once`, awaiting the
response's start through :meth:`HTTPProvider._first_byte`), raising
:class:`~tierwise.providers.errors.ProviderError` for every failure.

Deadlines (decision 74), per attempt: ``connect_timeout`` to open the connection (a miss is
:attr:`~tierwise.providers.errors.ProviderError.unanswered`, retried like a refused connection),
``first_byte_timeout`` until the response begins (its headers; a miss is not retried, and the
fallback models — on the same server — are not tried after it), ``timeout`` for each silence once it
has begun. A dead server is thus told within the first-byte deadline (20 s by default), not after
four times a minute.

- :class:`~tierwise.providers.openai_compat.OpenAICompatProvider` (``wire = "chat"``):
  ``/chat/completions``, OpenAI and every server that copies it;
- :class:`~tierwise.providers.responses_api.ResponsesProvider` (``"responses"``): OpenAI's
  ``/responses``;
- :class:`~tierwise.providers.anthropic_api.AnthropicProvider` (``"anthropic"``): Anthropic's
  ``/v1/messages``.
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
import weakref
from abc import abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable, Container, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, Self, TypeVar

from tierwise.providers import base
from tierwise.providers.base import Event, ModelRequest, Provider, Retry, aclose
from tierwise.providers.errors import RELAYED_HEADERS, ProviderError, timeout_error
from tierwise.providers.fallback import chain
from tierwise.providers.retry import RetryPolicy, is_retryable_status, parse_retry_after
from tierwise.providers.settings import ProviderSettings

__all__ = [
    "NO_KEY",
    "HTTPProvider",
    "SDKClient",
    "SDKErrors",
    "http_error",
    "json_events",
    "sdk_error",
    "sse_events",
]

log = logging.getLogger(__name__)

NO_KEY = "not-needed"
"""The key sent when none is set: local servers (Ollama, vLLM, a loopback fake) take none; the SDKs insist."""


class SDKClient(Protocol):
    """What :class:`HTTPProvider` asks of an SDK's async client (``openai.AsyncOpenAI``…)."""

    def with_options(self, *, max_retries: int) -> Self:
        """The client with other options (here: its own retries)."""
        ...

    async def close(self) -> None:
        """Close its connections."""
        ...


ClientT = TypeVar("ClientT", bound=SDKClient)
T = TypeVar("T")


@dataclass(frozen=True)
class SDKErrors:
    """An SDK's exception classes, as :func:`sdk_error` reads them (the openai and anthropic SDKs' alike).

    Attributes:
        status: its ``APIStatusError`` (``status_code``, ``message``, ``body``, ``response``).
        timeout: its ``APITimeoutError``.
        connection: its ``APIConnectionError`` (a failed or dropped connection).
        read_status: the wire's reading of a status error: ``(exc, model, text)`` → the error, where
            ``text`` is the response's body, or ``None`` for a streamed one never read
            (:func:`http_error` builds it).
        read_other: the wire's reading of another of the SDK's exceptions, or ``None`` for one it
            does not know (then a plain :class:`ProviderError` naming it).
    """

    status: type[Exception]
    timeout: type[Exception]
    connection: type[Exception]
    read_status: Callable[[Any, str, str | None], ProviderError]
    read_other: Callable[[Exception, str], ProviderError | None] | None = None


def http_error(
    model: str,
    status: int,
    headers: Mapping[str, str],
    message: str,
    *,
    body: str | None,
    detail: Mapping[str, Any] | None,
) -> ProviderError:
    """A response with an error ``status`` as a :class:`ProviderError`, retryable by its status.

    ``Retry-After`` is read from ``headers``, and the :data:`~tierwise.providers.errors.RELAYED_HEADERS`
    the server sent are kept.
    """
    return ProviderError(
        f"{model}: HTTP {status}: {message}",
        status=status,
        body=body,
        retryable=is_retryable_status(status),
        model=model,
        retry_after=parse_retry_after(dict(headers)),
        detail=detail,
        headers={name: headers[name] for name in RELAYED_HEADERS if name in headers},
    )


def sdk_error(exc: Exception, model: str, sdk: SDKErrors, *, answering: bool = False) -> ProviderError:
    """Translate an SDK's exception into a :class:`ProviderError` (no SDK exception leaves a provider).

    ``answering``: the response had begun (the exception came while reading its stream), so a
    dropped connection is not :attr:`~tierwise.providers.errors.ProviderError.unanswered`.
    """
    if isinstance(exc, sdk.status):
        text: str | None
        try:
            text = exc.response.text  # type: ignore[attr-defined]
        except Exception:  # a streamed response whose body was never read
            text = None
        return sdk.read_status(exc, model, text)
    if isinstance(exc, sdk.timeout):
        return timeout_error(exc, model)
    if isinstance(exc, sdk.connection):
        cause = exc.__cause__ or exc
        return ProviderError(
            f"{model}: connection failed ({type(cause).__name__}: {cause})",
            retryable=True,
            model=model,
            unanswered=not answering,
        )
    if sdk.read_other is not None and (error := sdk.read_other(exc, model)) is not None:
        return error
    return ProviderError(f"{model}: {type(exc).__name__}: {exc}", model=model)


def _not_timed_out(error: ProviderError) -> bool:
    """Whether a fallback model is tried after ``error``: not after a missed deadline (same server)."""
    return not error.timed_out


class HTTPProvider(Provider, Generic[ClientT]):
    """A model behind an HTTP API, with retries and fallbacks; subclasses speak one wire format.

    Settings come from ``settings`` (default: ``ProviderSettings.load()``, i.e. the ``TIERWISE_*``
    environment, read now); keyword arguments override them.

    Args:
        settings: the provider settings; ``None`` reads the environment.
        base_url: the server's base URL.
        api_key: the key, if the server needs one.
        model: the default model (a request's ``model`` overrides it).
        fallback_models: tried in order when the model fails before answering.
        timeout: seconds of silence allowed once the answer has begun.
        connect_timeout: seconds to open a connection.
        first_byte_timeout: seconds per attempt until the response begins (connecting included).
        max_retries: retries per model of 408 / 429 / 5xx / timeouts / connection errors.
        retry_policy: overrides ``max_retries`` and the settings' delays (tests use tiny delays).
        cache_hints: mark each request's ``cache_breakpoints`` on the wire (what that means is the
            subclass's); default ``TIERWISE_CACHE_HINTS`` (off).
        client: an SDK client to use instead of building one (its retries are turned off).

    Raises:
        ProviderNotConfigured: no base URL or no model.
        InputError: a ``TIERWISE_*`` variable has a bad value.
    """

    default_base_url: str | None = None
    """The base URL when neither the settings nor the arguments give one (``None``: it is required)."""

    def __init__(
        self,
        settings: ProviderSettings | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        model: str | None = None,
        fallback_models: Sequence[str] | None = None,
        timeout: float | None = None,
        connect_timeout: float | None = None,
        first_byte_timeout: float | None = None,
        max_retries: int | None = None,
        retry_policy: RetryPolicy | None = None,
        client: ClientT | None = None,
        cache_hints: bool | None = None,
    ) -> None:
        settings = settings if settings is not None else ProviderSettings.load()
        given_url = (
            base_url if base_url is not None or client is None else str(getattr(client, "base_url", ""))
        )
        overrides: dict[str, Any] = {
            "base_url": given_url or (None if settings.base_url else self.default_base_url),
            "model": model,
            "fallback_models": list(fallback_models) if fallback_models is not None else None,
            "timeout": timeout,
            "connect_timeout": connect_timeout,
            "first_byte_timeout": first_byte_timeout,
            "max_retries": max_retries,
            "cache_hints": cache_hints,
        }
        settings = settings.model_copy(update={k: v for k, v in overrides.items() if v is not None})
        self.base_url, default_model = settings.require()
        self.model: str = default_model
        key = settings.api_key.get_secret_value() if settings.api_key is not None else None
        self._api_key = api_key if api_key is not None else key
        self.fallback_models = [m for m in settings.fallback_models if m != self.model]
        self.timeout = settings.timeout
        self.connect_timeout = settings.connect_timeout
        self.first_byte_timeout = settings.first_byte_timeout
        self.retry_policy = retry_policy or RetryPolicy(
            max_retries=settings.max_retries,
            base_delay=settings.retry_base_delay,
            max_delay=settings.retry_max_delay,
        )
        self.cache_hints = settings.cache_hints
        self._given_client = self._without_retries(client) if client is not None else None
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, ClientT] = (
            weakref.WeakKeyDictionary()
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={self.base_url!r}, model={self.model!r})"

    @property
    def models(self) -> list[str]:
        """The model and its fallbacks, in the order they are tried."""
        return [self.model, *self.fallback_models]

    # -- the client ----------------------------------------------------------------------------

    sdk_client: Callable[..., ClientT]
    """The SDK's async client class, which :meth:`_new_client` builds with :meth:`_client_options`."""

    sdk_timeout: Callable[..., Any]
    """The SDK's ``Timeout`` class, built from :meth:`_http_timeouts`."""

    def _client_options(self) -> dict[str, Any]:
        """The SDK client's options: base URL, key (:data:`NO_KEY` if none), timeouts, no own retries."""
        return {
            "base_url": self.base_url,
            "api_key": self._api_key or NO_KEY,
            "timeout": self.sdk_timeout(**self._http_timeouts()),
            "max_retries": 0,
        }

    def _new_client(self) -> ClientT:
        """A new SDK client for the running event loop, its own retries off."""
        return self.sdk_client(**self._client_options())

    def _without_retries(self, client: ClientT) -> ClientT:
        """``client`` with its own retries turned off (they are this provider's)."""
        return client.with_options(max_retries=0)

    async def _close_client(self, client: ClientT) -> None:
        """Close ``client``'s connections."""
        await client.close()

    def _http_timeouts(self) -> dict[str, float]:
        """The SDK client's timeouts (``Timeout(**…)``): connecting, then every other wait."""
        return {"timeout": self.timeout, "connect": min(self.connect_timeout, self.first_byte_timeout)}

    async def _first_byte(self, opening: Awaitable[T], model: str) -> T:
        """Await ``opening`` (the SDK call that returns once the response began) within the deadline.

        Raises:
            ProviderError: ``first_byte_timeout`` passed first (``timed_out``, not ``retryable``).
        """
        try:
            async with asyncio.timeout(self.first_byte_timeout) as deadline:
                return await opening
        except TimeoutError as exc:
            if not deadline.expired():
                raise
            raise ProviderError(
                f"{model}: no answer began within {self.first_byte_timeout:g}s "
                "(TIERWISE_FIRST_BYTE_TIMEOUT); the model server accepted the request but sent nothing",
                model=model,
                timed_out=True,
            ) from exc

    def _client(self) -> ClientT:
        """The SDK client for the running event loop (connection pools cannot cross loops)."""
        base.check_requests_allowed(self.base_url)
        if self._given_client is not None:
            return self._given_client
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            client = self._clients[loop] = self._new_client()
        return client

    def with_retry_policy(self, policy: RetryPolicy) -> Self:
        """This provider retrying by ``policy``, on the same connections (the ``/v1`` gateway's way)."""
        twin = copy.copy(self)  # the client cache too: one connection pool per loop for both
        twin.retry_policy = policy
        return twin

    async def aclose(self) -> None:
        """Close the HTTP connections this provider opened on the running loop."""
        client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await self._close_client(client)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # -- streaming -----------------------------------------------------------------------------

    def stream(self, request: ModelRequest) -> AsyncIterator[Event]:
        """Stream the answer from the request's model (or the default), then from each fallback.

        Raises:
            ProviderError: every model failed (``attempts`` lists them), or one failed mid-answer.
            ModelRequestsBlocked: model requests are disabled and the server is not on loopback.
        """
        primary = request.model or self.model
        models = [primary, *(m for m in self.models if m != primary)]
        return chain([(m, self._starter(request, m)) for m in models], hand_over=_not_timed_out)

    def _starter(self, request: ModelRequest, model: str) -> Callable[[], AsyncIterator[Event]]:
        return lambda: self._with_retries(request, model)

    async def _with_retries(self, request: ModelRequest, model: str) -> AsyncIterator[Event]:
        policy = self.retry_policy
        attempt = 0
        while True:
            attempt += 1
            stream = self._once(request, model)
            produced = False
            failure: ProviderError | None = None
            try:
                async for event in stream:
                    produced = True
                    yield event
            except ProviderError as exc:
                if produced or not policy.retries(exc) or attempt > policy.max_retries:
                    raise
                failure = exc
            finally:
                await aclose(stream)
            if failure is None:
                return
            delay = policy.delay(attempt, failure.retry_after)
            if delay is None:
                log.warning("%s asked to wait %.1fs, too long; not retrying", model, failure.retry_after)
                raise failure
            log.warning(
                "model %s failed (attempt %d of %d): %s; retrying in %.2fs",
                model,
                attempt,
                policy.max_retries + 1,
                failure,
                delay,
            )
            yield Retry(model, attempt, delay, str(failure))
            await asyncio.sleep(delay)

    @abstractmethod
    def _once(self, request: ModelRequest, model: str) -> AsyncIterator[Event]:
        """One attempt on ``model``: send the request, translate its answer into events.

        Raises:
            ProviderError: every failure, with ``unanswered`` set when no byte of the answer came.
        """


async def sse_events(lines: AsyncIterator[str]) -> AsyncIterator[tuple[str, str]]:
    """Server-sent events as ``(event, data)``, from the response's lines, as the format is.

    The providers read their streams this way rather than through their SDK's typed events: a new
    event or block type passes through as it came, and no event model is built (the openai SDK's
    Responses stream types cost ~4.7 s to build on a process's first request).
    """
    kind, data = "", list[str]()
    async for line in lines:
        if not line:
            if data or kind:
                yield kind, "\n".join(data)
            kind, data = "", list[str]()
        elif line.startswith("event:"):
            kind = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
    if data or kind:
        yield kind, "\n".join(data)


async def json_events(
    lines: AsyncIterator[str], *, ignore: Container[str] = ()
) -> AsyncIterator[tuple[str, dict[str, Any]]]:
    """The server-sent events (:func:`sse_events`) as ``(event, data read as a JSON object)``.

    Passed over: the events named in ``ignore`` (Anthropic's ``ping``), those without data, and a
    closing ``[DONE]``.

    Raises:
        ValueError: an event's data is not JSON, or not a JSON object.
    """
    async for kind, data in sse_events(lines):
        if kind in ignore or not data or data == "[DONE]":
            continue
        event = json.loads(data)
        if not isinstance(event, dict):
            raise ValueError(f"an event that is not a JSON object: {data[:200]}")
        yield kind, event
