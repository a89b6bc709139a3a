"""Fake models for tests — yours and ours — that never touch the network.

- :class:`ScriptedModel` answers requests with replies queued by :meth:`~ScriptedModel.enqueue`: text,
  tool calls, an exception to raise (e.g. a 500), or a :class:`Script` of explicit events (split
  deltas, slow streams, a failure mid-stream). Every request is kept in ``.requests`` so a test can
  assert the exact context that was sent.
- :class:`FunctionModel` answers each request with a function of it (sync or async).

Each request is recorded whole, so a test can assert what the OpenAI-compatible endpoint forwarded:
``requests[i].params`` (``response_format``, ``n``, ``seed``…), ``.tool_choice``, ``.temperature``.
A :class:`~tierwise.providers.base.ModelResponse` reply's ``extras`` (log probabilities, a refusal,
further choices) are streamed after its tool calls.
- :func:`tool_call` builds a :class:`~tierwise.providers.base.ToolCall` from keyword arguments.
- :func:`model_requests_allowed` switches the real-request guard for a block of code.

Both fakes stream text in small pieces and tool calls in two fragments each, then the complete calls,
a :class:`~tierwise.providers.base.Usage` counted exactly with :class:`tierwise.TokenCounter`
(prompt: the request's messages and tools; completion: the reply), and
:class:`~tierwise.providers.base.Done`.

Given ``cache`` (a :class:`PromptCache`, or a rule: ``"openai"`` or ``"prefix"``), a fake also
reports ``cached_tokens`` the way a server with a prompt cache would: the longest prefix the request
shares with one of the recent requests it answered
(:func:`~tierwise.packing.prefix.shared_prefix`), under that rule (OpenAI's: nothing below 1,024
tokens, then steps of 128). Deterministic: the same requests in the same order report the same.

Example:
    >>> import asyncio
    >>> model = ScriptedModel()
    >>> model.enqueue("Moved to Friday.", tool_call("get_tasks", status="done"))
    >>> request = ModelRequest([{"role": "user", "content": "Move the review"}])
    >>> asyncio.run(model.complete(request)).text
    'Moved to Friday.'
    >>> asyncio.run(model.complete(request)).tool_calls[0].arguments
    '{"status": "done"}'
    >>> model.requests[0].messages[0]["content"]
    'Move the review'
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import json
import re
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from tierwise.errors import InputError, TierwiseError
from tierwise.packing.prefix import CacheRule, cached_tokens, shared_prefix
from tierwise.providers import base
from tierwise.providers.base import (
    Done,
    Event,
    ModelRequest,
    ModelResponse,
    Provider,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
)
from tierwise.tokens import TokenCounter, get_counter

__all__ = [
    "FunctionModel",
    "NoReplyQueued",
    "PromptCache",
    "Reply",
    "Script",
    "ScriptedModel",
    "model_requests_allowed",
    "reply_events",
    "tool_call",
]

_PIECE = re.compile(r"\s+|\S+\s*")
_call_ids = itertools.count(1)


class NoReplyQueued(TierwiseError):
    """A :class:`ScriptedModel` was asked for more replies than were queued."""


class Script:
    """Explicit events for one reply, streamed as given (nothing added, not even :class:`Done`).

    Args:
        events: the events, in order.
        delay: seconds to wait before each event after the first (a slow stream, to test stopping).
        error: raised after the events (a failure mid-stream; before any event if there are none).

    Example:
        >>> Script(ToolCallDelta(0, "c1", "add", '{"a"'), ToolCallDelta(0, arguments_delta=": 1}"), delay=0.1)
        Script(2 events, delay=0.1, error=None)
    """

    def __init__(self, *events: Event, delay: float = 0.0, error: BaseException | None = None) -> None:
        self.events = events
        self.delay = delay
        self.error = error

    def __repr__(self) -> str:
        return f"Script({len(self.events)} events, delay={self.delay}, error={self.error!r})"


Reply = str | ToolCall | Sequence[ToolCall] | ModelResponse | BaseException | Script
"""What a fake model can answer: text, tool call(s), a whole response, an exception, or a script."""


def tool_call(name: str, /, **arguments: object) -> ToolCall:
    """A tool call to ``name`` with ``arguments`` as its JSON (ids ``call_1``, ``call_2``, … in order made).

    Example:
        >>> tool_call("create_task", title="Book venue").arguments
        '{"title": "Book venue"}'
    """
    return ToolCall(f"call_{next(_call_ids)}", name, json.dumps(arguments, ensure_ascii=False))


@contextmanager
def model_requests_allowed(allowed: bool) -> Iterator[None]:
    """Set ``tierwise.providers.base.ALLOW_MODEL_REQUESTS`` inside a ``with`` block, then restore it."""
    previous = base.ALLOW_MODEL_REQUESTS
    base.ALLOW_MODEL_REQUESTS = allowed
    try:
        yield
    finally:
        base.ALLOW_MODEL_REQUESTS = previous


_Request = tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]]  # messages, tools


class PromptCache:
    """A server's prompt cache, emulated: what of a request the recent requests already hold.

    Args:
        rule: ``"openai"`` (prefixes of 1,024+ tokens, in steps of 128) or ``"prefix"`` (all of it).
        size: how many recent requests it keeps.

    Example:
        >>> cache = PromptCache("prefix")
        >>> first = ModelRequest([{"role": "user", "content": "Hi"}])
        >>> cache.serve(first, get_counter()), cache.serve(first, get_counter())
        (0, 5)
    """

    def __init__(self, rule: CacheRule = "openai", *, size: int = 16) -> None:
        if rule not in ("openai", "prefix"):
            raise InputError(f"a cache rule is 'openai' or 'prefix', not {rule!r}")
        self.rule: CacheRule = rule
        self._seen: deque[_Request] = deque(maxlen=max(1, size))

    def serve(self, request: ModelRequest, counter: TokenCounter) -> int:
        """The cached tokens of ``request`` (then kept, for the requests after it)."""
        messages: list[Mapping[str, Any]] = list(request.messages)
        tools: list[Mapping[str, Any]] = list(request.tools or ())
        longest = max((shared_prefix(seen, messages, tools, counter) for seen in self._seen), default=0)
        self._seen.append((messages, tools))
        return cached_tokens(longest, self.rule)


def _cache(cache: PromptCache | CacheRule | None) -> PromptCache | None:
    return PromptCache(cache) if isinstance(cache, str) else cache


def _as_response(reply: str | ToolCall | Sequence[ToolCall] | ModelResponse) -> ModelResponse:
    if isinstance(reply, ModelResponse):
        return reply
    if isinstance(reply, str):
        return ModelResponse(text=reply)
    if isinstance(reply, ToolCall):
        return ModelResponse(tool_calls=[reply])
    calls = list(reply)
    if not all(isinstance(call, ToolCall) for call in calls):
        raise TypeError(f"a reply is text, ToolCall(s), a ModelResponse, an exception or a Script: {reply!r}")
    return ModelResponse(tool_calls=calls)


async def reply_events(
    reply: Reply,
    request: ModelRequest,
    model: str,
    counter: TokenCounter,
    cache: PromptCache | None = None,
) -> AsyncIterator[Event]:
    """Stream ``reply`` to ``request`` the way a real server would (see the module docstring).

    With ``cache``, the counted usage says how many prompt tokens the cache served.
    """
    if isinstance(reply, BaseException):
        raise reply
    if isinstance(reply, Script):
        for position, event in enumerate(reply.events):
            if position and reply.delay:
                await asyncio.sleep(reply.delay)
            yield event
        if reply.error is not None:
            raise reply.error
        return
    response = _as_response(reply)
    for piece in _PIECE.findall(response.text):
        yield TextDelta(piece)
    for index, call in enumerate(response.tool_calls):
        half = len(call.arguments) // 2
        yield ToolCallDelta(index, call.id, call.name, call.arguments[:half])
        yield ToolCallDelta(index, None, None, call.arguments[half:])
    for call in response.tool_calls:
        yield call
    for extra in response.extras:  # log probabilities, a refusal, further choices (n > 1)
        yield extra
    usage = response.usage
    if usage is None:
        prompt = counter.count_messages(request.messages) + counter.count_tools(request.tools)
        completion = counter.count(response.text) + sum(
            counter.count(call.name) + counter.count(call.arguments) for call in response.tool_calls
        )
        cached = min(cache.serve(request, counter), prompt) if cache is not None else 0
        usage = Usage(prompt, completion, prompt + completion, cached)
    yield usage
    finish = response.finish_reason or ("tool_calls" if response.tool_calls else "stop")
    yield Done(finish, response.model or model)


class ScriptedModel(Provider):
    """A fake model that answers with queued replies, in order, and records every request.

    Args:
        replies: replies to queue now (more with :meth:`enqueue`).
        model: the model name it reports when a request names none.
        counter: the token counter for :class:`Usage` (default: the shared ``cl100k_base`` one).
        cache: a prompt cache to report ``cached_tokens`` from (a :class:`PromptCache` or its rule,
            ``"openai"`` or ``"prefix"``); ``None`` reports none.

    Raises (from :meth:`stream`):
        NoReplyQueued: no reply is left.
    """

    name = "scripted"

    def __init__(
        self,
        *replies: Reply,
        model: str = "scripted",
        counter: TokenCounter | None = None,
        cache: PromptCache | CacheRule | None = None,
    ) -> None:
        self.model: str = model
        self.counter = counter or get_counter()
        self.cache = _cache(cache)
        self.requests: list[ModelRequest] = []
        self._replies: deque[Reply] = deque(replies)

    def enqueue(self, *replies: Reply) -> None:
        """Queue replies for the next requests, one reply per request."""
        self._replies.extend(replies)

    @property
    def pending(self) -> int:
        """Replies still queued."""
        return len(self._replies)

    async def stream(self, request: ModelRequest) -> AsyncIterator[Event]:
        """Record ``request`` and stream the next queued reply."""
        self.requests.append(request)
        if not self._replies:
            raise NoReplyQueued(
                f"ScriptedModel has no reply queued; call enqueue(...) first (request {len(self.requests)})"
            )
        reply = self._replies.popleft()
        model = request.model or self.model
        async for event in reply_events(reply, request, model, self.counter, self.cache):
            yield event


class FunctionModel(Provider):
    """A fake model whose answer is ``fn(request)`` — any :data:`Reply`, returned or awaited.

    ``cache`` as for :class:`ScriptedModel`.

    Example:
        >>> import asyncio
        >>> echo = FunctionModel(lambda request: request.messages[-1]["content"].upper())
        >>> asyncio.run(echo.complete(ModelRequest([{"role": "user", "content": "hi"}]))).text
        'HI'
    """

    name = "function"

    def __init__(
        self,
        fn: Callable[[ModelRequest], Reply | Awaitable[Reply]],
        *,
        model: str = "function",
        counter: TokenCounter | None = None,
        cache: PromptCache | CacheRule | None = None,
    ) -> None:
        self.fn = fn
        self.model: str = model
        self.counter = counter or get_counter()
        self.cache = _cache(cache)
        self.requests: list[ModelRequest] = []

    async def stream(self, request: ModelRequest) -> AsyncIterator[Event]:
        """Record ``request``, call the function and stream its answer."""
        self.requests.append(request)
        answer = self.fn(request)
        reply: Reply = await answer if inspect.isawaitable(answer) else answer
        model = request.model or self.model
        async for event in reply_events(reply, request, model, self.counter, self.cache):
            yield event
