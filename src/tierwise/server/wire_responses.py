"""OpenAI's Responses API on the gateway: ``POST /v1/responses`` and ``GET /v1/responses/{id}``.

The body is decoded into the Chat Completions body the gateway reads
(:mod:`tierwise.server.responses_input`), checked as ``/v1/chat/completions`` checks it, and run
through the wire-neutral core (:mod:`tierwise.server.gateway`); the answer is encoded as a
``response`` object, or, with ``stream: true``, as the event sequence the official SDK accumulates
(``response.created`` … ``response.completed``, each with its ``sequence_number``). The upstream
may speak Chat Completions (the conversation translated: :func:`for_chat_completions`) or the
Responses API (sent as it came, with the client's own fields); a Responses upstream's output items
beyond text and calls (``reasoning`` with its ``encrypted_content``, a hosted tool's call…) reach
the client as output items where they came, whole, and are stored with the answer for the next turn.
``custom`` calls become ``custom_tool_call`` items.

A response id (``resp_…``) is a point in a session's conversation (:mod:`tierwise.server.response_log`:
kept in the store unless the client sent ``store: false``, so every process serving it knows it).
``previous_response_id`` continues that conversation in that session (its ``input`` appended; the
earlier ``instructions`` are not carried, as OpenAI does); a client that resends its whole input
instead reaches the same session by its opening. ``GET /v1/responses/{id}`` returns the response,
``DELETE`` forgets it; an unknown id is OpenAI's 404.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import AsyncIterator, Mapping
from dataclasses import replace
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import ValidationError

from tierwise.errors import TierwiseError
from tierwise.providers.base import (
    ChoiceDelta,
    Done,
    Event,
    ModelResponse,
    Native,
    TextDelta,
    ToolCall,
    ToolCallDelta,
)
from tierwise.server.gateway import (
    SESSION_HEADER,
    Exchange,
    Inputs,
    chat_inputs,
    failure_response,
    internal,
    max_body_bytes,
    open_exchange,
    repairs,
    user_of,
)
from tierwise.server.openai_errors import (
    COMPLETION_RESPONSES,
    ERROR_RESPONSES,
    openai_error,
    validation_error,
)
from tierwise.server.openai_pairs import check_pairs, check_tool_results
from tierwise.server.openai_params import BadRequest, answer_message, check_tool_choice, parse_body, read_body
from tierwise.server.openai_upstream import failure
from tierwise.server.openai_validate import MessagesInvalid, validate_request
from tierwise.server.response_log import ResponseLog, Stored
from tierwise.server.responses_input import (
    CARRIED,
    ResponsesRequest,
    chat_body,
    for_chat_completions,
    native_fields,
)
from tierwise.server.spent import Spent

__all__ = ["ResponsesRequest", "router"]

log = logging.getLogger(__name__)

router = APIRouter(prefix="/v1", tags=["openai"])


def _not_found(response_id: str, param: str | None = None) -> JSONResponse:
    return openai_error(404, f"Response with id '{response_id}' not found.", code=None, param=param)


@router.get("/responses/{response_id}", responses=ERROR_RESPONSES)
async def get_response(response_id: str, request: Request) -> Response:
    """A response made for this user (stored, or at hand in this process), else OpenAI's 404."""
    user = user_of(request)
    if isinstance(user, JSONResponse):
        return user
    found = await ResponseLog.of(request).response(user, response_id)
    return _not_found(response_id) if found is None else JSONResponse(found)


@router.delete("/responses/{response_id}", responses=ERROR_RESPONSES)
async def delete_response(response_id: str, request: Request) -> Response:
    """Delete a response: it can no longer be fetched or continued (the chat keeps its messages)."""
    user = user_of(request)
    if isinstance(user, JSONResponse):
        return user
    if not await ResponseLog.of(request).delete(user, response_id):
        return _not_found(response_id)
    return JSONResponse({"id": response_id, "object": "response.deleted", "deleted": True})


@router.post("/responses", responses=COMPLETION_RESPONSES)
async def create_response(request: Request) -> Response:
    """A model response over the session's packed context, in the Responses API's format."""
    user = user_of(request)
    if isinstance(user, JSONResponse):
        return user
    previous: Stored | None = None
    previous_id: Any = None
    try:
        data = parse_body(await read_body(request, max_body_bytes(request)))
        previous_id = data.get("previous_response_id")
        if previous_id is not None:
            previous = await ResponseLog.of(request).get(user, str(previous_id))
            if previous is None:
                return _not_found(str(previous_id), "previous_response_id")
        chat = chat_body(data, [*previous.system, *previous.conversation] if previous else ())
        body = await validate_request(chat)
        (check_tool_results if repairs(request) else check_pairs)(chat["messages"])
        check_tool_choice(body)
    except BadRequest as exc:
        return openai_error(exc.status, str(exc), code=exc.code, param=exc.param)
    except (ValidationError, MessagesInvalid) as exc:
        return validation_error(exc)
    except RecursionError:
        return openai_error(400, "the body is nested too deep; flatten it", code="invalid_json")
    try:
        inputs = replace(
            await chat_inputs(request, body, chat),
            outgoing=for_chat_completions,  # for an upstream of another wire: reasoning items stay stored
            native=Native("responses", native_fields(data)),
        )
        if previous is not None and not request.headers.get(SESSION_HEADER):
            inputs = replace(inputs, key=previous.key)  # the session the response belongs to
        exchange = await open_exchange(request, user, inputs)
        answer = _Answer(data, user, inputs, exchange, previous_id, previous)
        if not data.get("stream"):
            response, spent = await exchange.collect()
            return JSONResponse(await answer.whole(request, response, spent), headers=exchange.headers)
        await exchange.start()
    except Exception as exc:  # never a traceback
        return failure_response(exc, param="input", what="response")
    return StreamingResponse(
        answer.stream(request),
        media_type="text/event-stream",
        headers={**exchange.headers, "Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


# -- the answer --------------------------------------------------------------------------------


_INCOMPLETE = {"length": "max_output_tokens", "content_filter": "content_filter"}


def _id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


def _usage(spent: Spent) -> dict[str, Any]:
    """OpenAI's Chat Completions usage in the Responses API's words."""
    usage = spent.openai()
    prompt = usage.get("prompt_tokens_details") or {}
    completion = usage.get("completion_tokens_details") or {}
    return {
        "input_tokens": usage["prompt_tokens"],
        "input_tokens_details": {
            "cached_tokens": prompt.get("cached_tokens", 0),
            "cache_write_tokens": prompt.get("cache_write_tokens", 0),
        },
        "output_tokens": usage["completion_tokens"],
        "output_tokens_details": {"reasoning_tokens": completion.get("reasoning_tokens", 0)},
        "total_tokens": usage["total_tokens"],
    }


class _Answer:
    """The answer's output items, built from the gateway's events, and its encodings."""

    def __init__(
        self,
        data: Mapping[str, Any],
        user: str,
        inputs: Inputs,
        exchange: Exchange,
        previous_id: Any,
        previous: Stored | None = None,
    ) -> None:
        self.data = data
        self.user = user
        self.inputs = inputs
        self.exchange = exchange
        self.previous_id = previous_id
        self.previous = previous
        self.id = _id("resp")
        self.created = int(time.time())
        self.items: list[dict[str, Any]] = []
        self.message: dict[str, Any] | None = None  # the message item being written
        self.calls: dict[int, dict[str, Any]] = {}  # by the upstream's index, while written
        self.complete: list[ToolCall] = []  # a provider that sends only complete calls
        self.customs: dict[Any, dict[str, Any]] = {}  # custom calls by the upstream's index, while written
        self.model = exchange.model
        self.sequence = 0

    # -- events → items ------------------------------------------------------------------------

    def _event(self, kind: str, **fields: Any) -> str:
        payload = {"type": kind, "sequence_number": self.sequence, **fields}
        self.sequence += 1
        return f"event: {kind}\ndata: {json.dumps(payload, ensure_ascii=False)}\n\n"

    def _added(self, item: dict[str, Any]) -> list[str]:
        self.items.append(item)
        return [self._event("response.output_item.added", output_index=len(self.items) - 1, item=item)]

    def _text(self, text: str) -> list[str]:
        out: list[str] = []
        if self.message is None:
            self.message = {"id": _id("msg"), "type": "message", "status": "in_progress", "role": "assistant"}
            self.message["content"] = []
            out += self._added(dict(self.message))
            part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
            out.append(self._event("response.content_part.added", **self._where(self.message), part=part))
            self.message["content"] = [part]
        part = self.message["content"][0]
        part["text"] += text
        out.append(
            self._event("response.output_text.delta", **self._where(self.message), delta=text, logprobs=[])
        )
        return out

    def _where(self, item: Mapping[str, Any], part: bool = True) -> dict[str, Any]:
        index = next(i for i, it in enumerate(self.items) if it["id"] == item["id"])
        return {"item_id": item["id"], "output_index": index, **({"content_index": 0} if part else {})}

    def _close_message(self) -> list[str]:
        if self.message is None:
            return []
        message, self.message = self.message, None
        part = message["content"][0]
        where = self._where(message)
        out = [
            self._event("response.output_text.done", **where, text=part["text"], logprobs=[]),
            self._event("response.content_part.done", **where, part=part),
        ]
        message["status"] = "completed"
        self.items[where["output_index"]] = message
        out.append(self._event("response.output_item.done", output_index=where["output_index"], item=message))
        return out

    def _call(self, piece: ToolCallDelta) -> list[str]:
        out = self._close_message()
        item = self.calls.get(piece.index)
        if item is None:
            item = {"id": _id("fc"), "type": "function_call", "status": "in_progress", "arguments": ""}
            item |= {"call_id": piece.id or "", "name": piece.name or ""}
            self.calls[piece.index] = item
            out += self._added(dict(item))
        item["call_id"] = piece.id or item["call_id"]
        item["name"] = piece.name or item["name"]
        if piece.arguments_delta:
            item["arguments"] += piece.arguments_delta
            where = self._where(item, part=False)
            out.append(
                self._event("response.function_call_arguments.delta", **where, delta=piece.arguments_delta)
            )
        return out

    def _close_calls(self) -> list[str]:
        out: list[str] = []
        for item in self.calls.values():
            where = self._where(item, part=False)
            args = item["arguments"]
            out.append(self._event("response.function_call_arguments.done", **where, arguments=args))
            item["status"] = "completed"
            self.items[where["output_index"]] = item
            out.append(
                self._event("response.output_item.done", output_index=where["output_index"], item=item)
            )
        self.calls = {}
        return out

    def _carried(self, items: list[Any]) -> list[str]:
        """Items the upstream answered beyond text and calls (``reasoning``…), whole and as sent.

        A Responses upstream's own output items: the client gets them where they came, before
        the message they precede, and sends them back next turn.
        """
        out = self._close_message() + self._close_calls()
        for item in items:
            if not isinstance(item, Mapping):
                continue
            out += self._added(dict(item))
            index = len(self.items) - 1
            out.append(self._event("response.output_item.done", output_index=index, item=dict(item)))
        return out

    def _custom(self, pieces: list[Any]) -> None:
        """Pieces of ``custom`` calls (a Chat Completions upstream streams their input in fragments)."""
        for position, piece in enumerate(pieces):
            if not isinstance(piece, Mapping):
                continue
            index = piece.get("index", position)
            if piece.get("type") != "custom" and index not in self.customs:  # (a later piece has no type)
                continue
            call = self.customs.setdefault(index, {"name": "", "input": ""})
            call["id"] = call.get("id") or piece.get("id") or ""
            inner = piece.get("custom") or {}
            call["name"] = call["name"] or inner.get("name") or ""
            call["input"] += inner.get("input") or ""

    def _close_customs(self) -> list[str]:
        out: list[str] = []
        for call in self.customs.values():
            item = {
                "id": _id("ctc"),
                "type": "custom_tool_call",
                "status": "completed",
                "call_id": call["id"],
            }
            item |= {"name": call["name"], "input": call["input"]}
            out += self._added(item)
            out.append(self._event("response.output_item.done", output_index=len(self.items) - 1, item=item))
        self.customs = {}
        return out

    def feed(self, event: Event) -> list[str]:
        """The stream events ``event`` makes (the output items updated)."""
        if isinstance(event, TextDelta) and event.text:
            return self._close_calls() + self._text(event.text)
        if isinstance(event, ToolCallDelta):
            return self._call(event)
        if isinstance(event, ChoiceDelta) and event.index == 0:
            carried = event.delta.get(CARRIED)
            if isinstance(event.delta.get("tool_calls"), list):
                self._custom(event.delta["tool_calls"])
            if isinstance(carried, list):
                return self._carried(carried)
        if isinstance(event, ToolCall):
            self.complete.append(event)
        elif isinstance(event, Done) and event.model:
            self.model = event.model
        return []

    def close(self) -> list[str]:
        """The last items' ``…done`` events (calls sent only whole written out first)."""
        out = self._close_message() + self._close_calls() + self._close_customs()
        if not any(item["type"] == "function_call" for item in self.items):
            for index, whole in enumerate(self.complete):
                out += self._call(ToolCallDelta(index, whole.id, whole.name, whole.arguments))
            out += self._close_calls()
        if not self.items:  # nothing said: one empty message, as OpenAI answers
            out += self._text("") + self._close_message()
        return out

    def read(self, events: list[Event]) -> None:
        """The output items of a whole answer."""
        for event in events:
            self.feed(event)
        self.close()

    # -- the response object -------------------------------------------------------------------

    def _object(self, status: str, **more: Any) -> dict[str, Any]:
        data = self.data
        text = data.get("text") or {"format": {"type": "text"}}
        return {
            "id": self.id,
            "object": "response",
            "created_at": self.created,
            "status": status,
            "background": False,
            "error": None,
            "incomplete_details": None,
            "instructions": data.get("instructions"),
            "max_output_tokens": data.get("max_output_tokens"),
            "metadata": data.get("metadata") or {},
            "model": self.model,
            "output": [],
            "parallel_tool_calls": data.get("parallel_tool_calls", True),
            "previous_response_id": self.previous_id,
            "prompt_cache_key": data.get("prompt_cache_key"),
            "reasoning": data.get("reasoning") or {"effort": None, "summary": None},
            "safety_identifier": data.get("safety_identifier"),
            "store": data.get("store", True),
            "temperature": data.get("temperature"),
            "text": text,
            "tool_choice": data.get("tool_choice") or "auto",
            "tools": data.get("tools") or [],
            "top_p": data.get("top_p"),
            "truncation": data.get("truncation") or "disabled",
            "usage": None,
            "user": data.get("user"),
            **more,
        }

    def final(self, response: ModelResponse, spent: Spent) -> dict[str, Any]:
        """The finished ``response`` object (a refusal added to the message)."""
        refusal = answer_message(response).get("refusal")
        if refusal:
            message = next((i for i in self.items if i["type"] == "message"), None)
            if message is None:
                message = {"id": _id("msg"), "type": "message", "status": "completed", "role": "assistant"}
                self.items.insert(0, message | {"content": []})
                message = self.items[0]
            message["content"].append({"type": "refusal", "refusal": refusal})
        reason = _INCOMPLETE.get(response.finish_reason or "")
        return self._object(
            "incomplete" if reason else "completed",
            model=response.model or self.model,
            output=self.items,
            usage=_usage(spent),
            incomplete_details={"reason": reason} if reason else None,
            completed_at=None if reason else int(time.time()),
        )

    async def _store(self, request: Request, obj: dict[str, Any], response: ModelResponse) -> None:
        """Keep the response: the conversation it ends, for ``previous_response_id``, ``GET`` and ``DELETE``.

        In the store too unless the client sent ``store: false`` (then this process has it at hand).
        """
        inputs = self.inputs
        sent = self.data.get("instructions")
        system = list(inputs.system or ())[1 if isinstance(sent, str) and sent else 0 :]  # not carried on
        answer = answer_message(response)
        conversation = [*inputs.conversation, answer]
        stored = Stored(self.user, inputs.key, system, conversation, obj)
        persist = self.data.get("store") is not False
        await ResponseLog.of(request).put(stored, previous=self.previous, persist=persist)

    async def whole(self, request: Request, response: ModelResponse, spent: Spent) -> dict[str, Any]:
        """The ``response`` object of a whole answer (kept)."""
        self.read(self.exchange.seen)
        obj = self.final(response, spent)
        await self._store(request, obj, response)
        return obj

    async def stream(self, request: Request) -> AsyncIterator[str]:
        """The answer as the Responses API's events; an upstream failure as ``error``, ``response.failed``."""
        try:
            async for text in self._events(request):
                yield text
        finally:
            self.exchange.end()  # (once answered, nothing) an error mid-stream, or the client went away

    async def _events(self, request: Request) -> AsyncIterator[str]:
        start = self._object("in_progress")
        yield self._event("response.created", response=start)
        yield self._event("response.in_progress", response=start)
        try:
            async for event in self.exchange.events():
                for text in self.feed(event):
                    yield text
        except Exception as exc:  # the stream had started: it ends failed, no answer stored
            if isinstance(exc, TierwiseError):
                _, body, _ = failure(exc)
                found = body.get("error")
                error = dict(found) if isinstance(found, Mapping) else {}
            else:
                log.exception("Responses stream failed")
                error = {"message": internal(exc), "code": "server_error"}
            code, message = error.get("code") or "server_error", str(error.get("message") or "upstream error")
            yield self._event("error", code=code, message=message, param=error.get("param"))
            failed = self._object("failed", output=self.items, error={"code": code, "message": message})
            yield self._event("response.failed", response=failed)
            return
        for text in self.close():
            yield text
        response, spent = await self.exchange.finish()
        obj = self.final(response, spent)
        await self._store(request, obj, response)  # before the client may continue from it
        kind = "response.completed" if obj["status"] == "completed" else "response.incomplete"
        yield self.exchange.unstored()  # (an SSE comment, when the answer could not be stored)
        yield self._event(kind, response=obj)
