"""Fallback chains (seed 004's ``callWithFallback``): when a model fails before answering, try the next.

:func:`chain` runs attempts in order. An attempt that raises
:class:`~tierwise.providers.errors.ProviderError` *before it streamed any output* hands over to the
next one, and the stream says so with a :class:`~tierwise.providers.base.Fallback` event (the
attempts are also logged). Once output has been streamed, an error is raised as is: an answer is
never stitched from two models. If every attempt fails, the error raised lists them all in
``attempts``.

:class:`~tierwise.providers.openai_compat.OpenAICompatProvider` uses :func:`chain` for its fallback
models; :func:`with_fallback` does the same across any providers (e.g. scripted ones in tests).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import replace

from tierwise.providers.base import Event, Fallback, ModelRequest, Provider, aclose, is_output
from tierwise.providers.errors import ProviderError
from tierwise.providers.retry import RetryPolicy

__all__ = ["FallbackProvider", "chain", "with_fallback"]

log = logging.getLogger(__name__)

Attempt = tuple[str, Callable[[], AsyncIterator[Event]]]
"""A label (the model) and a function that starts its stream."""


async def chain(
    attempts: Sequence[Attempt], *, hand_over: Callable[[ProviderError], bool] | None = None
) -> AsyncIterator[Event]:
    """Stream the first attempt that answers, with a :class:`Fallback` event per hand-over.

    ``hand_over``: whether a failure lets the next attempt run (default: every failure before output
    does; an :class:`~tierwise.providers.http.HTTPProvider` stops after a missed deadline).

    Raises:
        ProviderError: the last attempt's error (with every ``(label, error)`` in ``attempts`` when
            more than one was tried), or any error raised after output was streamed.
        ValueError: ``attempts`` is empty.
    """
    if not attempts:
        raise ValueError("a fallback chain needs at least one attempt")
    failures: list[tuple[str, ProviderError]] = []
    for position, (label, start) in enumerate(attempts):
        stream = start()
        produced = False
        failure: ProviderError | None = None
        try:
            async for event in stream:
                produced = produced or is_output(event)
                yield event
        except ProviderError as exc:
            if produced:
                raise
            failure = exc
        finally:
            await aclose(stream)
        if failure is None:
            return
        failures.append((label, failure))
        if position + 1 == len(attempts) or (hand_over is not None and not hand_over(failure)):
            break
        following = attempts[position + 1][0]
        log.warning("model %s failed before answering (%s); falling back to %s", label, failure, following)
        yield Fallback(label, following, str(failure))
    last_label, last = failures[-1]
    if len(failures) == 1:
        raise last
    tried = "; ".join(f"{label}: {error}" for label, error in failures)
    raise ProviderError(
        f"every model failed ({tried})",
        status=last.status,
        body=last.body,
        retryable=last.retryable,
        model=last_label,
        attempts=failures,
        retry_after=last.retry_after,
        detail=last.detail,
        headers=last.headers,
        timed_out=last.timed_out,
        unanswered=last.unanswered,
    ) from last


def _label(provider: Provider, request: ModelRequest | None = None) -> str:
    if request is not None and request.model:
        return request.model
    return provider.model or provider.name


class FallbackProvider(Provider):
    """Tries each provider in turn until one answers (see :func:`chain`).

    The request goes unchanged to the first provider; the fallbacks get it with ``model=None``, so
    each answers with its own default model (a model id rarely means the same on two providers).
    """

    name = "fallback"

    def __init__(self, providers: Sequence[Provider]) -> None:
        if not providers:
            raise ValueError("FallbackProvider needs at least one provider")
        self.providers = list(providers)
        self.model = self.providers[0].model

    def stream(self, request: ModelRequest) -> AsyncIterator[Event]:
        """Stream the first provider's answer, falling back on a :class:`ProviderError` before output."""
        fallback_request = replace(request, model=None)

        def starter(provider: Provider, sent: ModelRequest) -> Callable[[], AsyncIterator[Event]]:
            return lambda: provider.stream(sent)

        attempts: list[Attempt] = [(_label(self.providers[0], request), starter(self.providers[0], request))]
        attempts += [(_label(p), starter(p, fallback_request)) for p in self.providers[1:]]
        return chain(attempts)

    def with_retry_policy(self, policy: RetryPolicy) -> FallbackProvider:
        """The same chain, each provider retrying by ``policy``."""
        return FallbackProvider([provider.with_retry_policy(policy) for provider in self.providers])

    async def aclose(self) -> None:
        """Close every provider's connections on the running loop."""
        for provider in self.providers:
            await provider.aclose()


def with_fallback(primary: Provider, *fallbacks: Provider) -> FallbackProvider:
    """A provider that answers with ``primary``, or with each of ``fallbacks`` in order if it fails first.

    Example:
        >>> import asyncio
        >>> from tierwise.providers.testing import ScriptedModel
        >>> primary = ScriptedModel(ProviderError("down", status=503), model="big")
        >>> provider = with_fallback(primary, ScriptedModel("hello", model="small"))
        >>> response = asyncio.run(provider.complete(ModelRequest([{"role": "user", "content": "hi"}])))
        >>> response.text, response.model, response.fallbacks[0].from_model
        ('hello', 'small', 'big')
    """
    return FallbackProvider([primary, *fallbacks])
