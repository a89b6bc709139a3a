"""An OpenAI-compatible endpoint: ``GET /v1/models`` and ``POST /v1/chat/completions``.

Any OpenAI client (the official SDKs, LangChain, …) can point its ``base_url`` at ``…/v1`` and get
tierwise's packed context: the client sends its whole conversation on every request, and tierwise
stores it in a chat, packs it under the engine's budget and forwards the pack to the upstream model
(``engine.provider``), streaming the answer back in OpenAI's format.

Choices, in short (sessions, storage and the current turn: :mod:`tierwise.server.openai_sessions`):

- **Session**: the header ``X-Tierwise-Session``, else the body's ``user``, else a key derived from
  the conversation's leading system message and first other message. Each session is one chat of the
  request's user (``context_type="api"``); a diverging history retires the old chat and starts anew.
- **Current turn**: the last user message and everything after it (assistant tool calls and the
  client's tool results); memory packs everything before it, in the cost guard's pruning band.
- **Model**: the upstream model is always used (``engine.model`` or the provider's default); the
  request's ``model`` is accepted and ignored. Responses name the model that answered.
- **Tools** are the client's: they are packed (and counted), and the model's tool calls are streamed
  back, never executed. ``tool_choice`` is forwarded as sent (a named one stays named). Once the
  session has a past, tierwise adds its own retrieval tools (``recall_segments``, ``open_blob``) and
  answers the model's calls to them itself, out of the client's sight
  (:mod:`tierwise.server.openai_recall`).
- **Parameters**: everything else the client sent (``response_format``, ``n``, ``stop``, ``seed``,
  ``logprobs``, ``max_tokens`` only if sent, ``user``, unknown fields…) is forwarded as sent
  (:mod:`tierwise.server.openai_params`); what the upstream answers beyond text and tool calls
  (log probabilities, a refusal, reasoning, calls of other types, further choices,
  ``system_fingerprint``, usage details) is relayed.
- **Messages** are carried as sent, in the client's order (decision 69): fields, content parts and
  tool types tierwise does not read are stored with the message and forwarded unchanged while the
  conversation fits; the leading system messages are the pack's system part, a later one stays
  where it was. Tool calls and results that do not pair up are OpenAI's 400, unless tierwise is asked
  to repair them (:mod:`tierwise.server.openai_pairs`).
- **Budget**: the upstream model's window (:mod:`tierwise.providers.windows`), capped by
  ``engine.budget`` when one was set (``engine.budget_set``); an unknown model's is ``engine.budget``.
  ``max_tokens`` takes the answer's room from the model's window, not from the budget; what must be
  sent whole and fits the model is packed, never refused (:mod:`tierwise.server.openai_budget`).
- The answer is stored only when the stream completed, and *after* the client has it (``[DONE]``
  first, the write in the background); a failed or abandoned stream stores the request's messages
  but no half answer, so a retry with the same history carries on cleanly. The cost guard refuses
  a session over its limits with 429 ``insufficient_quota``.

Errors are OpenAI-shaped (``{"error": {"message", "type", "param", "code"}}``,
:mod:`tierwise.server.openai_errors`), tierwise's own all found before the upstream is called: 400
for a body that is not JSON, lacks a required field, has an invalid value, a tool result without its
call or does not fit the budget, 413 over the body size limit, 404 for an unknown ``/v1`` path or
model, 405 (with ``Allow``) for a method a path does not take. The upstream's errors reach the client
as the upstream gave them — its status, error object and ``Retry-After`` — a timeout as 504, other
failures as 502, and an ``error`` event ending the stream if it had already started; the gateway
retries only a connection that failed before the answer began, once
(:mod:`tierwise.server.openai_upstream`). The ``X-Tierwise-Session`` response header is the session
key, or its hash when the key is not a safe header value.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any, NoReturn, TypeVar

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import ValidationError

from tierwise.budget import Budget
from tierwise.chat.costguard import BudgetExceeded
from tierwise.chat.engine import ChatEngine
from tierwise.chat.memories import HEAVY_MESSAGES, off_loop
from tierwise.collector import breathe
from tierwise.errors import BudgetError, TierwiseError, UserError
from tierwise.packing.prefix import cache_breakpoints
from tierwise.providers.base import (
    ChoiceDelta,
    Done,
    Event,
    ModelRequest,
    ModelResponse,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    aclose,
    collect,
    is_output,
)
from tierwise.providers.errors import ProviderError
from tierwise.server.errors import ApiError
from tierwise.server.openai_budget import BudgetPlan, plan_budget
from tierwise.server.openai_errors import (
    COMPLETION_RESPONSES,
    ERROR_RESPONSES,
    error_body,
    max_body_bytes_from_env,
    openai_error,
    validation_error,
)
from tierwise.server.openai_history import session_key
from tierwise.server.openai_pairs import check_pairs, check_tool_results, repair_history_from_env
from tierwise.server.openai_params import (
    BadRequest,
    ChatCompletionRequest,
    answer_message,
    as_sent,
    check_tool_choice,
    extra_choices,
    forwarded,
    parse_body,
    read_body,
)
from tierwise.server.openai_recall import Retrieval
from tierwise.server.openai_sessions import Packed, Sessions, Turn
from tierwise.server.openai_upstream import failure_event, failure_response, gateway_provider
from tierwise.server.openai_validate import SLICE, MessagesInvalid, validate_request
from tierwise.server.spent import Spent, spent_of
from tierwise.store.checks import check_json

__all__ = ["ChatCompletionRequest", "openai_error", "router", "session_header"]

log = logging.getLogger(__name__)
_T = TypeVar("_T")

router = APIRouter(prefix="/v1", tags=["openai"])

SESSION_HEADER = "X-Tierwise-Session"
PACK_TOKENS_HEADER = "X-Tierwise-Pack-Tokens"


# -- errors ------------------------------------------------------------------------------------


class _UpstreamFailed(Exception):
    """The upstream model failed with an error other than a ``ProviderError`` (blocked, misconfigured…)."""


# -- sessions --------------------------------------------------------------------------------


def _sessions(request: Request) -> Sessions:
    state = request.app.state
    sessions = getattr(state, "openai_sessions", None)
    if sessions is None:
        sessions = state.openai_sessions = Sessions(state.engine, shared=getattr(state, "shared", None))
    assert isinstance(sessions, Sessions)
    return sessions


# -- routes ------------------------------------------------------------------------------------


def model_name(engine: ChatEngine) -> str:
    """The upstream model's name."""
    return engine.model or engine.provider.model or engine.provider.name


def _model_object(name: str) -> dict[str, Any]:
    return {"id": name, "object": "model", "created": 0, "owned_by": "tierwise"}


def _user(request: Request) -> str | JSONResponse:
    try:
        user = request.app.state.user_of(request)
    except ApiError as exc:
        code = "invalid_api_key" if exc.status == 401 else None
        return openai_error(exc.status, str(exc), code=code, headers=exc.headers)
    assert isinstance(user, str)
    return user


@router.get("/models", responses=ERROR_RESPONSES)
async def list_models(request: Request) -> Response:
    """The upstream model, in OpenAI's list format."""
    user = _user(request)
    if isinstance(user, JSONResponse):
        return user
    return JSONResponse({"object": "list", "data": [_model_object(model_name(request.app.state.engine))]})


@router.get("/models/{model:path}", responses=ERROR_RESPONSES)
async def get_model(model: str, request: Request) -> Response:
    """One model: the upstream's, else 404."""
    user = _user(request)
    if isinstance(user, JSONResponse):
        return user
    name = model_name(request.app.state.engine)
    if model != name:
        return openai_error(
            404,
            f"the model {model!r} does not exist; this server serves {name!r}",
            code="model_not_found",
            param="model",
        )
    return JSONResponse(_model_object(name))


def _budget(request: Request, body: ChatCompletionRequest) -> BudgetPlan:
    """The request's budget plan: the model's window (``app.state.model_limits``), the budget if set."""
    engine: ChatEngine = request.app.state.engine
    return plan_budget(
        engine.budget,
        getattr(request.app.state, "model_limits", None),
        ceiling=engine.budget_set,
        max_tokens=body.max_completion_tokens or body.max_tokens,
        param="max_completion_tokens" if body.max_completion_tokens else "max_tokens",
        model=model_name(engine),
    )


@router.post("/chat/completions", responses=COMPLETION_RESPONSES)
async def chat_completions(request: Request) -> Response:
    """An OpenAI chat completion over the session's packed context (streamed or whole).

    The body is ``ChatCompletionRequest`` (read by hand: errors are OpenAI-shaped and checked before
    the upstream is called); fields tierwise does not decide are forwarded upstream as sent.
    """
    try:
        data = parse_body(await read_body(request, _max_body_bytes(request)))
        body = await validate_request(data)  # a long conversation in slices: others go on meanwhile
        (check_tool_results if _repairs(request) else check_pairs)(data["messages"])
        check_tool_choice(body)
    except BadRequest as exc:
        return openai_error(exc.status, str(exc), code=exc.code, param=exc.param)
    except (ValidationError, MessagesInvalid) as exc:
        return validation_error(exc)
    except RecursionError:
        return openai_error(400, "the body is nested too deep; flatten it", code="invalid_json")
    user = _user(request)
    if isinstance(user, JSONResponse):
        return user
    try:
        return await _complete(request, body, data, user)
    except BadRequest as exc:
        return openai_error(exc.status, str(exc), code=exc.code, param=exc.param)
    except BudgetExceeded as exc:
        return openai_error(429, f"{exc} (the request was not sent)", code="insufficient_quota")
    except BudgetError as exc:
        return openai_error(400, str(exc), code="context_length_exceeded", param="messages")
    except _UpstreamFailed as exc:
        return JSONResponse(error_body(str(exc), "upstream_error", "upstream_error"), status_code=502)
    except ProviderError as exc:  # as the upstream gave it: status, error, Retry-After
        return failure_response(exc)
    except UserError as exc:
        return openai_error(400, str(exc), code="invalid_value")
    except Exception as exc:  # never a traceback
        log.exception("OpenAI-compatible completion failed")
        return openai_error(500, _internal(exc), code="internal_error")


def _internal(exc: Exception) -> str:
    return f"internal error ({type(exc).__name__}); nothing already stored was lost"


def _repairs(request: Request) -> bool:
    """Whether unpaired tool calls and results are repaired (``TIERWISE_REPAIR_HISTORY``), not refused."""
    state = request.app.state
    repair = getattr(state, "repair_history", None)
    if repair is None:
        repair = state.repair_history = repair_history_from_env()
    return bool(repair)


def _max_body_bytes(request: Request) -> int:
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


async def _off_loop_if_long(messages: Sequence[Any], work: Callable[[], _T]) -> _T:
    """``work()``, in a worker thread when ``messages`` is long (a Python loop over each of them)."""
    return work() if len(messages) <= HEAVY_MESSAGES else await off_loop(work)


_SYSTEM_ROLES = ("system", "developer")


def _storable(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The client's messages, each as sent, as the store keeps them, checked a slice at a time.

    One ``json.dumps`` of a 100,000-message conversation holds the interpreter lock for ~50 ms, and
    every other request waits for it; a slice of :data:`SLICE` messages, well under 1 ms.
    """
    out: list[dict[str, Any]] = []
    for start in range(0, len(messages), SLICE):
        breathe()
        out += check_json("messages", [as_sent(m) for m in messages[start : start + SLICE]])
    return out


async def _complete(
    request: Request, body: ChatCompletionRequest, data: dict[str, Any], user: str
) -> Response:
    engine: ChatEngine = request.app.state.engine
    sessions = _sessions(request)
    # The leading system messages are the pack's system part, sent first as given; a later one
    # stays where the client put it, in the conversation.
    lead = next((i for i, m in enumerate(body.messages) if m.role not in _SYSTEM_ROLES), len(body.messages))
    systems, sent = body.messages[:lead], data["messages"][lead:]
    # As the store keeps it (NUL and lone surrogates → U+FFFD): the pack sent upstream, the held
    # memory and a resent history after a restart all agree with what is stored.
    conversation = await _off_loop_if_long(sent, lambda: _storable(sent))
    if not conversation:
        raise BadRequest(
            400, "messages holds only system messages; send a user message", "invalid_value", "messages"
        )
    system = check_json("messages", [as_sent(m) for m in data["messages"][:lead]]) or None
    tools = check_json("tools", list(data.get("tools") or ()))  # as sent
    plan = _budget(request, body)
    opening = body.messages[lead]
    key = session_key(  # (it reads the first system message and the first other one)
        request.headers.get(SESSION_HEADER),
        body.user,
        [{"role": m.role, "content": m.content} for m in (*systems[:1], opening)],
        cache_key=data.get("prompt_cache_key"),
        metadata=body.metadata,
    )

    async def begin(budget: Budget) -> tuple[Packed, Retrieval | None]:
        retrieval = Retrieval.of(body, data, tools)  # None: this request must not get tierwise's tools
        turn = Turn(conversation, system, tools, budget, retrieval)
        return await sessions.begin(user, key, turn), retrieval

    (pack, retrieval), budget = await plan.pack(begin, system, tools)  # grown if what it must send needs
    recalling = retrieval if retrieval is not None and retrieval.offered else None
    upstream = ModelRequest(
        messages=pack.messages,
        tools=pack.tools,
        model=engine.model,
        temperature=body.temperature,
        tool_choice=data.get("tool_choice") if pack.tools else None,  # as sent, a named one too
        # (the guide's system message, when there is one, is in the stable part after the client's)
        cache_breakpoints=cache_breakpoints(pack.messages, system=len(systems)),
        params=forwarded(data),  # as sent: max_tokens only if the client set it
    )
    headers = {
        SESSION_HEADER: session_header(key),
        PACK_TOKENS_HEADER: str(pack.tokens),
        "X-Tierwise-Chat": pack.chat_id,
    }
    completion_id = f"chatcmpl-{uuid.uuid4().hex}"
    created = int(time.time())
    name = model_name(engine)
    provider = gateway_provider(engine.provider, request.headers)  # retries only what the client cannot see
    if recalling is not None:  # tierwise answers its own tools' calls, in rounds, out of the client's sight
        stream = recalling.answer(provider, upstream, pack, budget)
    else:
        stream = provider.stream(upstream)
    seen: list[Event] = []
    ended = False

    async def finish(events: Sequence[Event]) -> tuple[ModelResponse, Spent]:
        """The answer and its usage; storing them is left to run after the client has them."""
        nonlocal ended
        response = await collect(_replay(events))
        spent = spent_of(engine, response.usage, pack.tokens, response)
        ended = True
        await sessions.answered(pack, response, spent)
        return response, spent

    if not body.stream:
        try:
            async for event in stream:
                seen.append(event)
        except BaseException as exc:
            sessions.end(pack)  # no answer: the request's messages are stored all the same
            _reraise(exc)
        finally:
            await aclose(stream)
        response, spent = await finish(seen)
        first, others = extra_choices(response.extras)  # logprobs, a refusal, choices when n > 1
        choice = {
            "index": 0,
            "message": answer_message(response),  # with what else the upstream sent for it
            "finish_reason": _finish_reason(response),
            "logprobs": first["logprobs"],
        }
        completion = {
            "id": completion_id,
            "object": "chat.completion",
            "created": created,
            "model": response.model or name,
            "choices": [choice, *others],
            "usage": spent.openai(),  # the upstream's details too
            **response.fields,  # system_fingerprint, service_tier… as the upstream sent them
        }
        return JSONResponse(completion, headers=headers)

    # Wait for the first output before answering, so an upstream failure still has its HTTP status.
    try:
        async for event in stream:
            seen.append(event)
            if is_output(event):
                break
    except BaseException as exc:
        await aclose(stream)
        sessions.end(pack)
        _reraise(exc)
    include_usage = bool(body.stream_options and body.stream_options.include_usage)

    def chunk(
        delta: dict[str, Any],
        finish_reason: str | None = None,
        model: str = name,
        index: int = 0,
        logprobs: dict[str, Any] | None = None,
        fields: Mapping[str, Any] | None = None,
    ) -> str:
        choice = {"index": index, "delta": delta, "finish_reason": finish_reason, "logprobs": logprobs}
        payload = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [choice],
            **(fields or {}),
        }
        return f"data: {json.dumps(payload, ensure_ascii=False)}\n\n"

    # A text delta is most of a stream: its chunk is the same JSON around the text, rendered once.
    parts = chunk({"content": "\x00"}).split(json.dumps("\x00"))

    def text_chunk(text: str) -> str:
        if len(parts) != 2:  # a model name with a NUL in it: render the whole chunk
            return chunk({"content": text})
        return f"{parts[0]}{json.dumps(text, ensure_ascii=False)}{parts[1]}"

    async def all_events(first: list[Event]) -> AsyncIterator[Event]:
        for event in first:
            yield event
        async for event in stream:
            seen.append(event)
            yield event

    async def events() -> AsyncIterator[str]:
        try:
            async for text in answer():
                yield text
        finally:
            if not ended:  # an upstream error mid-stream, or the client went away
                sessions.end(pack)

    async def answer() -> AsyncIterator[str]:
        streamed_calls = False
        complete_calls: list[ToolCall] = []
        done: Done | None = None
        yield chunk({"role": "assistant", "content": ""})
        try:
            async for event in all_events(list(seen)):
                if isinstance(event, TextDelta) and event.text:
                    if event.logprobs is None:
                        yield text_chunk(event.text)
                    else:  # the text's log probabilities on its chunk, as the upstream sent them
                        yield chunk({"content": event.text}, logprobs=event.logprobs)
                elif isinstance(event, ToolCallDelta):
                    streamed_calls = True
                    piece: dict[str, Any] = {"index": event.index}
                    function: dict[str, Any] = {"arguments": event.arguments_delta}
                    if event.id:
                        piece["id"], piece["type"] = event.id, "function"
                    if event.name:
                        function["name"] = event.name
                    piece["function"] = function
                    yield chunk({"tool_calls": [piece]})
                elif isinstance(event, ChoiceDelta):  # as the upstream sent it (logprobs, n > 1…)
                    delta, reason = dict(event.delta), event.finish_reason
                    yield chunk(delta, reason, index=event.index, logprobs=event.logprobs)
                elif isinstance(event, ToolCall):
                    complete_calls.append(event)
                elif isinstance(event, Done):
                    done = event
        except TierwiseError as exc:  # the stream had started: an error event ends it, no answer stored
            yield failure_event(exc)  # (no [DONE]: that says the answer is whole)
            return
        except Exception as exc:  # an error event all the same: never a silently truncated answer
            log.exception("OpenAI-compatible stream failed")
            yield f"data: {json.dumps(error_body(_internal(exc), 'server_error', 'internal_error'))}\n\n"
            return
        finally:
            await aclose(stream)
        if not streamed_calls:  # a provider that sends only complete calls
            for index, whole in enumerate(complete_calls):
                fn = {"name": whole.name, "arguments": whole.arguments}
                call = {"index": index, "id": whole.id, "type": "function", "function": fn}
                yield chunk({"tool_calls": [call]})
        response, spent = await finish(seen)
        model = (done.model if done else "") or name
        # (system_fingerprint… come with the stream's end: on its last chunks)
        yield chunk({}, _finish_reason(response), model, fields=response.fields)
        if include_usage:
            payload = {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [],
                "usage": spent.openai(),
                **response.fields,
            }
            yield f"data: {json.dumps(payload)}\n\n"
        yield "data: [DONE]\n\n"

    return StreamingResponse(
        events(),
        media_type="text/event-stream",
        headers={**headers, "Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


@router.api_route("/{path:path}", methods=["GET", "POST", "PUT", "PATCH", "DELETE"], include_in_schema=False)
async def unknown(path: str, request: Request) -> Response:
    """Anything else under ``/v1``: an OpenAI-shaped 404, or 405 with ``Allow`` for a known path."""
    allow = "POST" if path == "chat/completions" else "GET" if path.split("/")[0] == "models" else None
    if allow is not None:
        return openai_error(
            405,
            f"/v1/{path} takes {allow}, not {request.method}",
            code="method_not_allowed",
            headers={"Allow": allow},
        )
    return openai_error(404, f"unknown endpoint /v1/{path}", code="unknown_url")


# -- helpers -----------------------------------------------------------------------------------


def _reraise(exc: BaseException) -> NoReturn:
    """Raise an upstream failure again, anything else (cancellation…) unchanged.

    A ``ProviderError`` is raised as it is, another tierwise error as :class:`_UpstreamFailed`.
    """
    if isinstance(exc, TierwiseError) and not isinstance(exc, ProviderError):
        raise _UpstreamFailed(f"the upstream model failed: {exc}") from exc
    raise exc


async def _replay(events: Sequence[Event]) -> AsyncIterator[Event]:
    for event in events:
        yield event


def _finish_reason(response: ModelResponse) -> str:
    reason = response.finish_reason
    if reason in ("stop", "length", "tool_calls", "content_filter", "function_call"):
        return reason
    return "tool_calls" if response.tool_calls else "stop"
