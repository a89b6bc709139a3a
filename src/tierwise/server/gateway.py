"""The gateway's wire-neutral core: one client turn, from the decoded conversation to the answer.

A wire module at the edge (:mod:`tierwise.server.openai_compat` for Chat Completions,
:mod:`tierwise.server.wire_responses` for Responses) decodes its body into :class:`Inputs` — the
conversation as OpenAI chat-format message dicts (as the store keeps them), the leading system
messages, the tools, the session key, the budget plan and the forwarded parameters — and encodes
the :class:`Exchange`'s events back into its own format. In between, nothing here knows a wire:

- :func:`open_exchange` begins the session's turn (:meth:`Sessions.begin`, packed under the plan),
  builds the upstream :class:`ModelRequest` and opens the provider's stream (tierwise's retrieval
  rounds when they are offered, :func:`gateway_provider`'s retries).
- :meth:`Exchange.collect` (whole answers) and :meth:`Exchange.start` / :meth:`Exchange.events`
  (streams: the headers go with the first output or after :data:`FIRST_OUTPUT_WAIT`, decision 74)
  read it; :meth:`Exchange.finish` collects the answer, its spend, and has it stored
  after the client has it; :meth:`Exchange.end` stores the request's messages without an answer.
- :func:`failure_response`: what went wrong before the answer began, in OpenAI's error shape.

What could not be stored is told (decision 77): the request's messages — a 503
(:class:`NotStored`) when that is known before the answer's status goes out; the answer — an
``X-Tierwise-Stored: false`` header on a whole answer, a comment before the stream's end when
processes share the store (one process stores a stream's answer right after ``[DONE]``), and a
log line.

Errors, as the core raises them::

    BadRequest            a request tierwise refuses (400), before the upstream is called
    BudgetExceeded        the cost guard's limits (429 insufficient_quota)
    BudgetError           what must be sent whole does not fit the model (400)
    ProviderError         the upstream's own failure, passed on as it gave it
    UpstreamFailed        another upstream failure (blocked, misconfigured…: 502)
    NotStored             the request's messages could not be stored (503, not to be retried)
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn, TypeVar

from fastapi import Request
from fastapi.responses import JSONResponse, Response

from tierwise.budget import Budget
from tierwise.chat.costguard import BudgetExceeded
from tierwise.chat.engine import ChatEngine
from tierwise.chat.memories import HEAVY_MESSAGES, off_loop
from tierwise.collector import breathe
from tierwise.errors import BudgetError, TierwiseError, UserError
from tierwise.packing.prefix import cache_breakpoints
from tierwise.providers.base import Event, ModelRequest, ModelResponse, Native, aclose, collect, is_output
from tierwise.providers.errors import ProviderError
from tierwise.server.errors import ApiError
from tierwise.server.openai_budget import BudgetPlan, plan_budget
from tierwise.server.openai_errors import error_body, max_body_bytes_from_env, openai_error
from tierwise.server.openai_history import session_key
from tierwise.server.openai_pairs import repair_history_from_env
from tierwise.server.openai_params import BadRequest, ChatCompletionRequest, as_sent, forwarded
from tierwise.server.openai_recall import Retrieval
from tierwise.server.openai_sessions import Packed, Sessions, Turn
from tierwise.server.openai_upstream import failure_response as upstream_failure
from tierwise.server.openai_upstream import gateway_provider
from tierwise.server.openai_validate import SLICE
from tierwise.server.spent import Spent, spent_of
from tierwise.store.checks import check_json

__all__ = [
    "FIRST_OUTPUT_WAIT",
    "PACK_TOKENS_HEADER",
    "SESSION_HEADER",
    "STORED_HEADER",
    "Exchange",
    "Inputs",
    "NotStored",
    "UpstreamFailed",
    "budget_plan",
    "chat_inputs",
    "failure_response",
    "internal",
    "max_body_bytes",
    "model_name",
    "open_exchange",
    "repairs",
    "session_header",
    "sessions_of",
    "storable",
    "user_of",
]

log = logging.getLogger(__name__)

FIRST_OUTPUT_WAIT = 1.0
"""Seconds a stream's headers wait for the first output (``app.state.first_output_wait`` overrides).

A failure within it — a refused connection, the upstream's 4xx, 429 or 5xx, which come in
milliseconds — still reaches the client as its HTTP status (decision 67); after it the client has
its headers, and a later failure (the upstream's deadlines, decision 74) comes as an error event.
"""

STORED_HEADER = "X-Tierwise-Stored"
"""On a whole ``/v1`` answer: ``true`` once it is stored, ``false`` when it could not be (decision 77)."""


class NotStored(TierwiseError):
    """The request's messages could not be stored (the disk full, a read-only database): a 503."""


_END = object()
"""What :func:`_next` returns at the end of a stream (a task cannot raise ``StopAsyncIteration``)."""


async def _next(stream: AsyncIterator[Event]) -> Any:
    try:
        return await anext(stream)
    except StopAsyncIteration:
        return _END


_T = TypeVar("_T")

SESSION_HEADER = "X-Tierwise-Session"
PACK_TOKENS_HEADER = "X-Tierwise-Pack-Tokens"
SYSTEM_ROLES = ("system", "developer")


class UpstreamFailed(Exception):
    """The upstream model failed with an error other than a ``ProviderError`` (blocked, misconfigured…)."""


# -- the app's parts ---------------------------------------------------------------------------


def sessions_of(request: Request) -> Sessions:
    """The app's :class:`Sessions` (made on first use)."""
    state = request.app.state
    sessions = getattr(state, "openai_sessions", None)
    if sessions is None:
        sessions = state.openai_sessions = Sessions(state.engine, shared=getattr(state, "shared", None))
    assert isinstance(sessions, Sessions)
    return sessions


def model_name(engine: ChatEngine) -> str:
    """The upstream model's name."""
    return engine.model or engine.provider.model or engine.provider.name


def user_of(request: Request) -> str | JSONResponse:
    """The request's user, or the OpenAI-shaped refusal (401 ``invalid_api_key``…)."""
    try:
        user = request.app.state.user_of(request)
    except ApiError as exc:
        code = "invalid_api_key" if exc.status == 401 else None
        return openai_error(exc.status, str(exc), code=code, headers=exc.headers)
    assert isinstance(user, str)
    return user


def budget_plan(request: Request, max_tokens: int | None, param: str) -> BudgetPlan:
    """The request's budget plan: the model's window (``app.state.model_limits``), the budget if set."""
    engine: ChatEngine = request.app.state.engine
    return plan_budget(
        engine.budget,
        getattr(request.app.state, "model_limits", None),
        ceiling=engine.budget_set,
        max_tokens=max_tokens,
        param=param,
        model=model_name(engine),
    )


def repairs(request: Request) -> bool:
    """Whether unpaired tool calls and results are repaired (``TIERWISE_REPAIR_HISTORY``), not refused."""
    state = request.app.state
    repair = getattr(state, "repair_history", None)
    if repair is None:
        repair = state.repair_history = repair_history_from_env()
    return bool(repair)


def max_body_bytes(request: Request) -> int:
    """The body size limit (``TIERWISE_MAX_BODY_BYTES``, read once)."""
    state = request.app.state
    limit = getattr(state, "max_body_bytes", None)
    if limit is None:
        limit = state.max_body_bytes = max_body_bytes_from_env()
    assert isinstance(limit, int)
    return limit


def session_header(key: str) -> str:
    """The session key as the ``X-Tierwise-Session`` response header, never a raw unsafe value.

    As sent if it is a safe header value (printable ASCII, at most 128 characters), else
    ``sha256-`` and its hash.
    """
    if len(key) <= 128 and key.isascii() and key.isprintable():
        return key
    return "sha256-" + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def internal(exc: Exception) -> str:
    """An internal error's message: its type, never a traceback."""
    return f"internal error ({type(exc).__name__}); nothing already stored was lost"


# -- decoding helpers --------------------------------------------------------------------------


def _storable(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for start in range(0, len(messages), SLICE):
        breathe()
        out += check_json("messages", [as_sent(m) for m in messages[start : start + SLICE]])
    return out


async def storable(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The client's messages, each as sent, as the store keeps them, checked a slice at a time.

    One ``json.dumps`` of a 100,000-message conversation holds the interpreter lock for ~50 ms, and
    every other request waits for it; a slice of :data:`SLICE` messages, well under 1 ms. A long
    conversation is checked in a worker thread.
    """
    work: Callable[[], list[dict[str, Any]]] = lambda: _storable(messages)  # noqa: E731
    return work() if len(messages) <= HEAVY_MESSAGES else await off_loop(work)


def lead(messages: Sequence[Mapping[str, Any]]) -> int:
    """How many leading system (or developer) messages ``messages`` has: the pack's system part."""
    return next((i for i, m in enumerate(messages) if m.get("role") not in SYSTEM_ROLES), len(messages))


# -- the exchange ------------------------------------------------------------------------------


@dataclass
class Inputs:
    """A decoded request, in the engine's terms.

    Attributes:
        conversation: the messages after the leading system ones, as the store keeps them.
        system: the leading system messages as sent, or ``None``.
        tools: the client's tools, in Chat Completions' shape, as sent.
        key: the session key (:func:`tierwise.server.openai_history.session_key`).
        plan: the budget plan (:func:`budget_plan`).
        params: the fields forwarded upstream as sent (``ModelRequest.params``).
        temperature: the sampling temperature, if sent.
        tool_choice: the tool choice, as sent (Chat Completions' shape).
        retrieval: tierwise's retrieval tools for this request (called per packing attempt), or
            ``None`` for none.
        outgoing: the pack's messages as an upstream of another wire takes them (the client wire's
            fields it cannot read left out), or ``None``: as packed.
        native: the client's request in its own wire, for an upstream of the same kind
            (:class:`~tierwise.providers.base.Native`; ``None`` for Chat Completions, whose fields
            are ``params``). Its ``wire`` is the client's wire (``"chat"`` without it).
    """

    conversation: list[dict[str, Any]]
    system: list[dict[str, Any]] | None
    tools: list[dict[str, Any]]
    key: str
    plan: BudgetPlan
    params: dict[str, Any] = field(default_factory=dict)
    temperature: float | None = None
    tool_choice: Any = None
    retrieval: Callable[[], Retrieval | None] | None = None
    outgoing: Callable[[list[dict[str, Any]]], list[dict[str, Any]]] | None = None
    native: Native | None = None

    @property
    def wire(self) -> str:
        """The client's wire format: ``"chat"``, ``"responses"`` or ``"anthropic"``."""
        return self.native.wire if self.native is not None else "chat"


class Exchange:
    """One turn in flight: the upstream's stream of events, and the session's turn to close.

    Read it either whole (:meth:`collect`) or as a stream (:meth:`start`, then :meth:`events`, then
    :meth:`finish` once the stream is whole, or :meth:`end` when it is not).
    """

    def __init__(
        self,
        sessions: Sessions,
        engine: ChatEngine,
        pack: Packed,
        stream: AsyncIterator[Event],
        headers: dict[str, str],
        wait: float = FIRST_OUTPUT_WAIT,
    ) -> None:
        self.sessions = sessions
        self.engine = engine
        self.pack = pack
        self.stream = stream
        self.headers = headers
        self.model = model_name(engine)
        self.seen: list[Event] = []
        self.ended = False
        self.fault: str | None = None  # why the answer could not be stored
        self.wait = wait
        self._pending: asyncio.Future[Any] | None = None  # the next event, still coming after start()
        self._over = False  # the stream ended while start() read it

    async def collect(self) -> tuple[ModelResponse, Spent]:
        """The whole answer and its spend, stored after; an upstream failure raised (:func:`reraise`)."""
        try:
            async for event in self.stream:
                self.seen.append(event)
        except BaseException as exc:
            self.end()  # no answer: the request's messages are stored all the same
            reraise(exc)
        finally:
            await aclose(self.stream)
        fault = await self.sessions.settled(self.pack)
        answer = await self.finish(whole=True)  # (the upstream was paid: its spend is recorded even so)
        self._stored(fault)
        return answer

    def _stored(self, fault: str | None) -> None:
        """Raise :class:`NotStored` when the request's messages could not be stored (``fault``: why)."""
        if fault is not None:
            raise NotStored(f"tierwise could not store this conversation, so it is not answered: {fault}")

    async def start(self) -> None:
        """Wait for the first output — at most ``wait`` seconds — so an early failure keeps its status.

        After ``wait`` the headers may go: the event being awaited is picked up by :meth:`events`,
        and a failure then is the stream's error event. With the first output, the request's
        messages are stored (they were while the upstream answered): :class:`NotStored` if not.
        """
        loop = asyncio.get_running_loop()
        until = loop.time() + self.wait
        pending: asyncio.Future[Any] | None = None
        try:
            while True:
                pending = asyncio.ensure_future(_next(self.stream))
                await asyncio.wait((pending,), timeout=max(0.0, until - loop.time()))
                if not pending.done():
                    self._pending = pending
                    self._stored(self.pack.handle.fault)
                    return
                event = pending.result()
                if event is _END:
                    self._over = True
                    return
                self.seen.append(event)
                if is_output(event):  # the request's messages stored first (a long history: if known)
                    handle = self.pack.handle
                    self._stored(handle.fault if handle.heavy else await self.sessions.settled(self.pack))
                    return
        except BaseException as exc:
            await self._drop_pending(pending)
            await aclose(self.stream)
            self.end()
            reraise(exc)

    @staticmethod
    async def _drop_pending(pending: asyncio.Future[Any] | None) -> None:
        """Cancel the event still being awaited (the stream cannot be closed while it runs)."""
        if pending is not None and not pending.done():
            pending.cancel()
            await asyncio.gather(pending, return_exceptions=True)

    async def events(self) -> AsyncIterator[Event]:
        """Every event of the answer, the ones :meth:`start` read first (the stream closed after)."""
        pending, self._pending = self._pending, None
        try:
            for event in list(self.seen):
                yield event
            if pending is not None:
                event = await pending
                if event is _END:
                    return
                self.seen.append(event)
                yield event
            if self._over:
                return
            async for event in self.stream:
                self.seen.append(event)
                yield event
        finally:
            await self._drop_pending(pending)
            await aclose(self.stream)

    async def finish(self, *, whole: bool = False) -> tuple[ModelResponse, Spent]:
        """The answer and its usage, stored first for a ``whole`` answer (:meth:`Sessions.answered`)."""
        response = await collect(_replay(self.seen))
        spent = spent_of(self.engine, response.usage, self.pack.tokens, response)
        self.ended = True
        self.fault = await self.sessions.answered(self.pack, response, spent, wait=whole)
        if whole or self.sessions.shared:  # known only once stored
            self.headers[STORED_HEADER] = "false" if self.fault else "true"
        return response, spent

    def unstored(self) -> str:
        """After :meth:`finish`: an SSE comment saying the answer could not be stored, else nothing."""
        return f": tierwise could not store this answer: {self.fault}\n\n" if self.fault else ""

    def end(self) -> None:
        """No answer (an upstream error, a client gone): the request's messages are stored alone."""
        if not self.ended:
            self.ended = True
            self.sessions.end(self.pack)


async def open_exchange(request: Request, user: str, inputs: Inputs) -> Exchange:
    """Begin the session's turn for ``inputs`` and open the upstream's answer.

    Raises:
        BadRequest: an empty conversation.
        BudgetExceeded, BudgetError: the cost guard's limits; what must be sent does not fit.
    """
    engine: ChatEngine = request.app.state.engine
    sessions = sessions_of(request)
    if not inputs.conversation:
        raise BadRequest(
            400, "messages holds only system messages; send a user message", "invalid_value", "messages"
        )
    system, tools = inputs.system, inputs.tools

    async def begin(budget: Budget) -> tuple[Packed, Retrieval | None]:
        retrieval = inputs.retrieval() if inputs.retrieval is not None else None
        turn = Turn(inputs.conversation, system, tools, budget, retrieval)
        return await sessions.begin(user, inputs.key, turn), retrieval

    # A step being answered (the model's last call and its results) goes whole if the model takes it:
    # memory cuts a result over half of what the budget leaves, so the budget grows for it first.
    last = max((i for i, m in enumerate(inputs.conversation) if m.get("role") == "assistant"), default=None)
    step = (
        inputs.conversation[last:]
        if last is not None and inputs.conversation[-1].get("role") == "tool"
        else ()
    )
    (pack, retrieval), budget = await inputs.plan.pack(begin, system, tools, step)  # grown if it must be
    recalling = retrieval if retrieval is not None and retrieval.offered else None
    provider = gateway_provider(engine.provider, request.headers)  # retries only what the client cannot see
    # Translated only when client and upstream speak different wires: the same one gets it as it came.
    translate = inputs.outgoing is not None and provider.wire != inputs.wire
    upstream = ModelRequest(
        messages=inputs.outgoing(pack.messages) if translate and inputs.outgoing else pack.messages,
        tools=pack.tools,
        model=engine.model,
        temperature=inputs.temperature,
        tool_choice=inputs.tool_choice if pack.tools else None,  # as sent, a named one too
        # (the guide's system message, when there is one, is in the stable part after the client's)
        cache_breakpoints=cache_breakpoints(pack.messages, system=len(system or ())),
        params=inputs.params,  # as sent: max_tokens only if the client set it
        native=inputs.native,
    )
    headers = {
        SESSION_HEADER: session_header(inputs.key),
        PACK_TOKENS_HEADER: str(pack.tokens),
        "X-Tierwise-Chat": pack.chat_id,
    }
    if recalling is not None:  # tierwise answers its own tools' calls, in rounds, out of the client's sight
        stream = recalling.answer(provider, upstream, pack, budget)
    else:
        stream = provider.stream(upstream)
    wait = getattr(request.app.state, "first_output_wait", FIRST_OUTPUT_WAIT)
    return Exchange(sessions, engine, pack, stream, headers, wait)


async def chat_inputs(request: Request, body: ChatCompletionRequest, data: dict[str, Any]) -> Inputs:
    """A validated Chat Completions body (``data`` as sent) as the gateway's :class:`Inputs`.

    The leading system messages are the pack's system part, sent first as given; a later one stays
    where the client put it, in the conversation. The rest as the store keeps it (NUL and lone
    surrogates → U+FFFD): the pack sent upstream, the held memory and a resent history after a
    restart all agree with what is stored.
    """
    messages = data["messages"]
    first = lead(messages)
    conversation = await storable(messages[first:])
    system = check_json("messages", [as_sent(m) for m in messages[:first]]) or None
    tools = check_json("tools", list(data.get("tools") or ()))  # as sent
    opening = body.messages[min(first, len(body.messages) - 1)]
    key = session_key(  # (it reads the first system message and the first other one)
        request.headers.get(SESSION_HEADER),
        body.user,
        [{"role": m.role, "content": m.content} for m in (*body.messages[:first][:1], opening)],
        cache_key=data.get("prompt_cache_key"),
        metadata=body.metadata,
    )
    param = "max_completion_tokens" if body.max_completion_tokens else "max_tokens"
    return Inputs(
        conversation=conversation,
        system=system,
        tools=tools,
        key=key,
        plan=budget_plan(request, body.max_completion_tokens or body.max_tokens, param),
        params=forwarded(data),  # as sent: max_tokens only if the client set it
        temperature=body.temperature,
        tool_choice=data.get("tool_choice"),
        retrieval=lambda: Retrieval.of(body, data, tools),  # None: not for this request
    )


def failure_response(exc: Exception, *, param: str = "messages", what: str = "completion") -> Response:
    """What went wrong before the answer began, as an OpenAI client gets it.

    ``param`` names the request's conversation field (``messages``, ``input``).
    """
    if isinstance(exc, BadRequest):
        return openai_error(exc.status, str(exc), code=exc.code, param=exc.param)
    if isinstance(exc, BudgetExceeded):
        return openai_error(429, f"{exc} (the request was not sent)", code="insufficient_quota")
    if isinstance(exc, BudgetError):
        return openai_error(400, str(exc), code="context_length_exceeded", param=param)
    if isinstance(exc, UpstreamFailed):
        return JSONResponse(error_body(str(exc), "upstream_error", "upstream_error"), status_code=502)
    if isinstance(exc, NotStored):  # a retry would meet the same disk (and pay the upstream again)
        return openai_error(503, str(exc), code="storage_unavailable", headers={"x-should-retry": "false"})
    if isinstance(exc, ProviderError):  # as the upstream gave it: status, error, Retry-After
        return upstream_failure(exc)
    if isinstance(exc, UserError):
        return openai_error(400, str(exc), code="invalid_value")
    log.exception("OpenAI-compatible %s failed", what, exc_info=exc)
    return openai_error(500, internal(exc), code="internal_error")


def reraise(exc: BaseException) -> NoReturn:
    """Raise an upstream failure again, anything else (cancellation…) unchanged.

    A ``ProviderError`` is raised as it is, another tierwise error as :class:`UpstreamFailed`.
    """
    if isinstance(exc, TierwiseError) and not isinstance(exc, ProviderError | NotStored):
        raise UpstreamFailed(f"the upstream model failed: {exc}") from exc
    raise exc


async def _replay(events: Sequence[Event]) -> AsyncIterator[Event]:
    for event in events:
        yield event
