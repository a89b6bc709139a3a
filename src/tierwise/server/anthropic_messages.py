"""Anthropic's Messages API on tierwise: ``POST /v1/messages`` and ``POST /v1/messages/count_tokens``.

An Anthropic client (the official SDKs, LangChain's ``ChatAnthropic``, Claude Code with
``ANTHROPIC_BASE_URL``) points at tierwise and gets its packed context, as an OpenAI client does on
``/v1/chat/completions``: the body is decoded into tierwise's conversation
(:mod:`tierwise.server.anthropic_input`), the session continued with the same rules (the
``X-Tierwise-Session`` header, else the conversation's opening; ``metadata.user_id`` scopes it as
OpenAI's ``user`` does), packed, sent to the upstream (Chat Completions, or Anthropic's Messages API
with ``TIERWISE_UPSTREAM_API=anthropic``: :mod:`tierwise.providers.anthropic_api`) and the
answer encoded back as Anthropic's ``message`` or its server-sent events
(:mod:`tierwise.server.wire_anthropic`). In between is the
gateway's wire-neutral core (:mod:`tierwise.server.gateway`), the Chat Completions and Responses
paths' own, so a session is one chat whichever wire continues it.

- ``max_tokens`` is required by Anthropic's API, so clients send their ceiling (Claude Code: 32,000);
  above the upstream model's output limit it is lowered to that limit, not refused.
- What only an Anthropic upstream can read (thinking blocks with their signatures, a result's
  ``is_error``) is stored with the messages and left out of what a Chat Completions upstream gets;
  an Anthropic upstream gets them, and the request's own fields (``thinking``, ``top_k``…) and
  ``anthropic-*`` headers as sent. Its answer's thinking blocks reach the client first in the
  message (:mod:`tierwise.server.wire_anthropic`) and are stored with the answer.
- ``anthropic-version`` and ``anthropic-beta`` are accepted (passed on to an Anthropic upstream);
  ``?beta=true`` too. A key is read from ``x-api-key`` or ``Authorization: Bearer`` when keys are
  required (:mod:`tierwise.server.auth`). ``HEAD /`` answers 200 (Claude Code probes it).
- ``count_tokens`` counts with tierwise's tokenizer (``cl100k_base`` unless configured), over the
  request as it would be sent whole: system, messages and tools. It is tierwise's count, not the
  upstream model's.

Errors are Anthropic's (``{"type": "error", "error": {"type", "message"}}``) with its statuses; the
upstream's pass through with their status and ``retry-after`` (decision 67), a stream that breaks
ends with an ``error`` event.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator, Mapping
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from tierwise.chat.costguard import BudgetExceeded
from tierwise.errors import BudgetError, TierwiseError, UserError
from tierwise.providers.base import Native, ToolCall
from tierwise.providers.errors import ProviderError
from tierwise.server.anthropic_input import (
    Decoded,
    InvalidRequest,
    anthropic_headers,
    decode_request,
    for_chat_completions,
    key_message,
    native_fields,
)
from tierwise.server.anthropic_schema import (
    COUNT_TOKENS_BODY,
    COUNT_TOKENS_RESPONSES,
    MESSAGES_BODY,
    MESSAGES_RESPONSES,
)
from tierwise.server.errors import ApiError
from tierwise.server.gateway import (
    SESSION_HEADER,
    Exchange,
    Inputs,
    NotStored,
    UpstreamFailed,
    internal,
    max_body_bytes,
    model_name,
    open_exchange,
    repairs,
    storable,
)
from tierwise.server.openai_budget import BudgetPlan, plan_budget
from tierwise.server.openai_history import session_key
from tierwise.server.openai_pairs import check_pairs, check_tool_results
from tierwise.server.openai_params import BadRequest, parse_body, read_body
from tierwise.server.openai_recall import Retrieval
from tierwise.server.openai_upstream import failure
from tierwise.server.spent import Spent
from tierwise.server.wire_anthropic import (
    StreamEncoder,
    error_body,
    message_object,
    stop_reason,
    stop_sequence,
    usage_object,
)
from tierwise.store.checks import check_json
from tierwise.tokens import get_counter

__all__ = ["anthropic_error", "router"]

log = logging.getLogger(__name__)

router = APIRouter(tags=["anthropic"])

_NO_RETRY = {"x-should-retry": "false"}  # a cost guard's refusal is no rate limit to wait out


def anthropic_error(status: int, message: str, headers: Mapping[str, str] | None = None) -> JSONResponse:
    """An error as Anthropic's API answers it: ``{"type": "error", "error": {"type", "message"}}``."""
    return JSONResponse(error_body(status, message), status_code=status, headers=dict(headers or {}))


class _Refused(Exception):
    """A request refused before anything was packed, with its Anthropic-shaped response."""

    def __init__(self, response: Response) -> None:
        super().__init__("refused")
        self.response = response


# -- the request -------------------------------------------------------------------------------


def _user(request: Request) -> str:
    try:
        user = request.app.state.user_of(request)
    except ApiError as exc:  # 401 authentication_error, 429 with Retry-After
        raise _Refused(anthropic_error(exc.status, str(exc), exc.headers)) from None
    assert isinstance(user, str)
    return user


async def _decoded(request: Request, *, answer: bool = True) -> Decoded:
    """The body decoded (``answer``: for ``/v1/messages``, with ``max_tokens`` and paired tool calls)."""
    try:
        data = parse_body(await read_body(request, max_body_bytes(request)))
        decoded = decode_request(data, needs_max_tokens=answer)
        if answer:  # unpaired tool calls and results: the 400 OpenAI's wire gives, in Anthropic's shape
            (check_tool_results if repairs(request) else check_pairs)(decoded.messages)
    except BadRequest as exc:
        raise _Refused(anthropic_error(exc.status, str(exc))) from None
    except InvalidRequest as exc:
        raise _Refused(anthropic_error(400, str(exc))) from None
    except RecursionError:
        raise _Refused(anthropic_error(400, "the body is nested too deep; flatten it")) from None
    return decoded


def _plan(request: Request, decoded: Decoded) -> tuple[BudgetPlan, int | None]:
    """The budget plan, and the ``max_tokens`` the upstream gets (lowered to the model's output limit).

    Anthropic's API requires ``max_tokens``, so clients send their ceiling (Claude Code: 32,000),
    not a limit they chose for this answer: above what the upstream model writes, it is lowered to
    that, not refused. An unknown model plans with the reserve and gets ``max_tokens`` as sent.
    """
    engine = request.app.state.engine
    limits = getattr(request.app.state, "model_limits", None)
    max_tokens = decoded.max_tokens
    if max_tokens is not None and limits is not None:
        max_tokens = min(max_tokens, limits.output_limit)
    plan = plan_budget(
        engine.budget,
        limits,
        ceiling=engine.budget_set,
        max_tokens=max_tokens if limits is not None else None,
        model=model_name(engine),
    )
    return plan, max_tokens


async def _inputs(request: Request, decoded: Decoded) -> Inputs:
    """The decoded request as the gateway's :class:`~tierwise.server.gateway.Inputs`."""
    system = check_json("messages", decoded.system) or None
    tools = check_json("tools", decoded.tools)
    plan, max_tokens = _plan(request, decoded)
    key = session_key(  # as on Chat Completions; cache markers, which clients move, left out
        request.headers.get(SESSION_HEADER),
        decoded.user,  # metadata.user_id: the end user scopes the session
        [key_message(m) for m in (*decoded.system[:1], decoded.messages[0])],
    )

    def retrieval() -> Retrieval | None:  # not with "any", a named tool or "none": nobody would answer
        if decoded.tool_choice not in (None, "auto"):
            return None
        offered = Retrieval(tools)
        return offered if offered.names else None

    return Inputs(
        conversation=await storable(decoded.messages),
        system=system,
        tools=tools,
        key=key,
        plan=plan,
        params={**decoded.params, **({"max_tokens": max_tokens} if max_tokens is not None else {})},
        temperature=decoded.temperature,
        tool_choice=decoded.tool_choice,
        retrieval=retrieval,
        outgoing=for_chat_completions,  # another wire's upstream: thinking blocks, is_error stay stored
        native=Native("anthropic", native_fields(decoded), anthropic_headers(request.headers)),
    )


# -- routes ------------------------------------------------------------------------------------


@router.head("/", include_in_schema=False)
async def probe() -> Response:
    """``HEAD /``: 200, for clients that probe the base URL before their first request (Claude Code)."""
    return Response(status_code=200)


@router.post("/v1/messages", responses=MESSAGES_RESPONSES, openapi_extra=MESSAGES_BODY)
async def messages(request: Request) -> Response:
    """An Anthropic Messages answer over the session's packed context (a ``message``, or its events).

    ``?beta=true``, ``anthropic-version`` and ``anthropic-beta`` are accepted.
    """
    try:
        decoded = await _decoded(request)
        user = _user(request)
        exchange = await open_exchange(request, user, await _inputs(request, decoded))
        message_id = f"msg_{uuid.uuid4().hex[:24]}"
        if not decoded.stream:
            response, spent = await exchange.collect()
            body = message_object(response, message_id, response.model or exchange.model, _usage(spent))
            return JSONResponse(body, headers=exchange.headers)
        await exchange.start()  # the first output first: a failure before it still has its status
    except _Refused as exc:
        return exc.response
    except Exception as exc:
        return _failed(exc)
    return StreamingResponse(
        _events(exchange, StreamEncoder(message_id, exchange.model)),
        media_type="text/event-stream",
        headers={**exchange.headers, "Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


@router.post("/v1/messages/count_tokens", responses=COUNT_TOKENS_RESPONSES, openapi_extra=COUNT_TOKENS_BODY)
async def count_tokens(request: Request) -> Response:
    """``{"input_tokens": N}``: tierwise's tokenizer's count of system, messages and tools, sent whole."""
    try:
        decoded = await _decoded(request, answer=False)
        _user(request)
    except _Refused as exc:
        return exc.response
    counter = get_counter()
    messages = for_chat_completions([*decoded.system, *decoded.messages])
    return JSONResponse(
        {"input_tokens": counter.count_messages(messages) + counter.count_tools(decoded.tools)}
    )


def _failed(exc: Exception) -> JSONResponse:
    """What went wrong before the answer began, as an Anthropic client gets it."""
    if isinstance(exc, BadRequest):  # refused as the model would refuse it (plan_budget)
        too_long = exc.code == "context_length_exceeded"  # (Claude Code compacts on these words)
        return anthropic_error(exc.status, f"prompt is too long: {exc}" if too_long else str(exc))
    if isinstance(exc, BudgetExceeded):
        return anthropic_error(429, f"{exc} (the request was not sent)", _NO_RETRY)
    if isinstance(exc, BudgetError):
        return anthropic_error(400, f"prompt is too long: {exc}")
    if isinstance(exc, UpstreamFailed):
        return anthropic_error(502, str(exc))
    if isinstance(exc, NotStored):
        return anthropic_error(503, str(exc), _NO_RETRY)
    if isinstance(exc, ProviderError):  # as the upstream gave it: its status, message, retry headers
        status, body, headers = failure(exc)
        return anthropic_error(status, str(body["error"]["message"]), headers)
    if isinstance(exc, UserError):
        return anthropic_error(400, str(exc))
    log.exception("Anthropic Messages request failed", exc_info=exc)
    return anthropic_error(500, internal(exc))


def _usage(spent: Spent) -> dict[str, Any]:
    """Anthropic's usage of an answer (a cache write when the upstream reported one)."""
    details = spent.details.get("prompt_tokens_details")
    written = details.get("cache_write_tokens") if isinstance(details, Mapping) else None
    created = written if isinstance(written, int) and not isinstance(written, bool) else 0
    return usage_object(spent.prompt_tokens, spent.completion_tokens, spent.cached_tokens, created)


def _stream_error(exc: Exception) -> str:
    """A failure after the stream began, as its last event (the upstream's status and words)."""
    if isinstance(exc, TierwiseError):
        status, body, _ = failure(exc)
        return StreamEncoder.error(status, str(body["error"]["message"]))
    log.exception("Anthropic Messages stream failed", exc_info=exc)
    return StreamEncoder.error(500, internal(exc))


async def _events(exchange: Exchange, encoder: StreamEncoder) -> AsyncIterator[str]:
    """The answer as Anthropic's events; stored once whole, the request alone if it breaks."""
    try:
        for text in encoder.start(exchange.pack.tokens):
            yield text
        calls: list[ToolCall] = []
        try:
            async for event in exchange.events():
                if isinstance(event, ToolCall):
                    calls.append(event)
                for text in encoder.event(event):
                    yield text
        except Exception as exc:  # the stream had started: an error event ends it, no answer stored
            yield _stream_error(exc)
            return
        if not encoder.streamed_calls:  # a provider that sends only complete calls
            for text in encoder.calls(calls):
                yield text
        response, spent = await exchange.finish()
        yield exchange.unstored()  # (an SSE comment, when the answer could not be stored)
        sequence = stop_sequence(response)
        reason = stop_reason(response.finish_reason, bool(response.tool_calls), sequence)
        for text in encoder.finish(reason, _usage(spent), sequence):
            yield text
    finally:
        exchange.end()  # (nothing once the answer is remembered)
