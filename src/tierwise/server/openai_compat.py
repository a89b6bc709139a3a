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

import json
import logging
import time
import uuid
from collections.abc import AsyncIterator, Mapping
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import ValidationError

from tierwise.errors import TierwiseError
from tierwise.providers.base import ChoiceDelta, Done, ModelResponse, TextDelta, ToolCall, ToolCallDelta
from tierwise.server.gateway import (
    Exchange,
    chat_inputs,
    failure_response,
    internal,
    max_body_bytes,
    model_name,
    open_exchange,
    repairs,
    session_header,
    user_of,
)
from tierwise.server.openai_errors import (
    COMPLETION_RESPONSES,
    ERROR_RESPONSES,
    error_body,
    openai_error,
    validation_error,
)
from tierwise.server.openai_pairs import check_pairs, check_tool_results
from tierwise.server.openai_params import (
    BadRequest,
    ChatCompletionRequest,
    answer_message,
    check_tool_choice,
    extra_choices,
    parse_body,
    read_body,
)
from tierwise.server.openai_upstream import failure_event
from tierwise.server.openai_validate import MessagesInvalid, validate_request

__all__ = ["ChatCompletionRequest", "model_name", "openai_error", "router", "session_header"]

log = logging.getLogger(__name__)

router = APIRouter(prefix="/v1", tags=["openai"])


# -- routes ------------------------------------------------------------------------------------


def _model_object(name: str) -> dict[str, Any]:
    return {"id": name, "object": "model", "created": 0, "owned_by": "tierwise"}


@router.get("/models", responses=ERROR_RESPONSES)
async def list_models(request: Request) -> Response:
    """The upstream model, in OpenAI's list format."""
    user = user_of(request)
    if isinstance(user, JSONResponse):
        return user
    return JSONResponse({"object": "list", "data": [_model_object(model_name(request.app.state.engine))]})


@router.get("/models/{model:path}", responses=ERROR_RESPONSES)
async def get_model(model: str, request: Request) -> Response:
    """One model: the upstream's, else 404."""
    user = user_of(request)
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


@router.post("/chat/completions", responses=COMPLETION_RESPONSES)
async def chat_completions(request: Request) -> Response:
    """An OpenAI chat completion over the session's packed context (streamed or whole).

    The body is ``ChatCompletionRequest`` (read by hand: errors are OpenAI-shaped and checked before
    the upstream is called); fields tierwise does not decide are forwarded upstream as sent.
    """
    try:
        data = parse_body(await read_body(request, max_body_bytes(request)))
        body = await validate_request(data)  # a long conversation in slices: others go on meanwhile
        (check_tool_results if repairs(request) else check_pairs)(data["messages"])
        check_tool_choice(body)
    except BadRequest as exc:
        return openai_error(exc.status, str(exc), code=exc.code, param=exc.param)
    except (ValidationError, MessagesInvalid) as exc:
        return validation_error(exc)
    except RecursionError:
        return openai_error(400, "the body is nested too deep; flatten it", code="invalid_json")
    user = user_of(request)
    if isinstance(user, JSONResponse):
        return user
    try:
        exchange = await open_exchange(request, user, await chat_inputs(request, body, data))
        if not body.stream:
            return await _whole(exchange)
        await exchange.start()
    except Exception as exc:  # never a traceback
        return failure_response(exc)
    return _streamed(exchange, bool(body.stream_options and body.stream_options.include_usage))


async def _whole(exchange: Exchange) -> Response:
    """The answer as one ``chat.completion``."""
    response, spent = await exchange.collect()
    first, others = extra_choices(response.extras)  # logprobs, a refusal, choices when n > 1
    choice = {
        "index": 0,
        "message": answer_message(response),  # with what else the upstream sent for it
        "finish_reason": finish_reason(response),
        "logprobs": first["logprobs"],
    }
    completion = {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": response.model or exchange.model,
        "choices": [choice, *others],
        "usage": spent.openai(),  # the upstream's details too
        **response.fields,  # system_fingerprint, service_tier… as the upstream sent them
    }
    return JSONResponse(completion, headers=exchange.headers)


def _streamed(exchange: Exchange, include_usage: bool) -> Response:
    """The answer as ``chat.completion.chunk`` events, ``[DONE]`` once it is whole."""
    completion_id = f"chatcmpl-{uuid.uuid4().hex}"
    created = int(time.time())
    name = exchange.model

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

    async def events() -> AsyncIterator[str]:
        try:
            async for text in answer():
                yield text
        finally:
            exchange.end()  # (once answered, nothing) an upstream error mid-stream, or the client went away

    async def answer() -> AsyncIterator[str]:
        streamed_calls = False
        complete_calls: list[ToolCall] = []
        done: Done | None = None
        yield chunk({"role": "assistant", "content": ""})
        try:
            async for event in exchange.events():
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
            yield f"data: {json.dumps(error_body(internal(exc), 'server_error', 'internal_error'))}\n\n"
            return
        if not streamed_calls:  # a provider that sends only complete calls
            for index, whole in enumerate(complete_calls):
                fn = {"name": whole.name, "arguments": whole.arguments}
                call = {"index": index, "id": whole.id, "type": "function", "function": fn}
                yield chunk({"tool_calls": [call]})
        response, spent = await exchange.finish()
        model = (done.model if done else "") or name
        # (system_fingerprint… come with the stream's end: on its last chunks)
        yield chunk({}, finish_reason(response), model, fields=response.fields)
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
        yield exchange.unstored()  # (an SSE comment, when the answer could not be stored)
        yield "data: [DONE]\n\n"

    return StreamingResponse(
        events(),
        media_type="text/event-stream",
        headers={**exchange.headers, "Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


_ALLOW = {
    "chat/completions": "POST",
    "responses": "POST",
    "messages": "POST",
    "messages/count_tokens": "POST",
}


@router.api_route("/{path:path}", methods=["GET", "POST", "PUT", "PATCH", "DELETE"], include_in_schema=False)
async def unknown(path: str, request: Request) -> Response:
    """Anything else under ``/v1``: an OpenAI-shaped 404, or 405 with ``Allow`` for a known path."""
    head = path.split("/")[0]
    allow = _ALLOW.get(path) or ("GET" if head == "models" or head == "responses" else None)
    if allow is not None:
        return openai_error(
            405,
            f"/v1/{path} takes {allow}, not {request.method}",
            code="method_not_allowed",
            headers={"Allow": allow},
        )
    return openai_error(404, f"unknown endpoint /v1/{path}", code="unknown_url")


# -- helpers -----------------------------------------------------------------------------------


def finish_reason(response: ModelResponse) -> str:
    """The answer's ``finish_reason`` in Chat Completions' words."""
    reason = response.finish_reason
    if reason in ("stop", "length", "tool_calls", "content_filter", "function_call"):
        return reason
    return "tool_calls" if response.tool_calls else "stop"
