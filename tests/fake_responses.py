"""A fake OpenAI Responses API server on loopback, so tests run the real ``openai`` SDK end to end.

It serves ``POST /v1/responses`` (streamed as SSE, or whole) from a background thread (stdlib
``http.server``), answers with scripted replies in order, and records the request bodies::

    def test_something(fake_responses):
        fake_responses.fail(500)                                   # one 500 first
        fake_responses.script(ResponsesReply("Hi.", reasoning=REASONING))
        provider = ResponsesProvider(base_url=fake_responses.url, model="m")
        ...
        assert fake_responses.requests[1]["input"] == [...]

A streamed answer is sent the way OpenAI sends it: ``response.created``, ``response.in_progress``,
then each output item — a ``reasoning`` item (``output_item.added`` without its content, ``.done``
with its ``encrypted_content``), the message (``output_item.added``, ``content_part.added``, text in
word pieces as ``output_text.delta``, ``output_text.done``, ``content_part.done``,
``output_item.done``), each function call (``output_item.added`` with empty arguments, the
arguments in ``function_call_arguments.delta`` pieces, ``.done``, ``output_item.done``), custom
calls — then ``response.completed`` (or ``response.incomplete``) with the whole response and its
usage. Every event has its ``sequence_number``.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

__all__ = ["REASONING", "FakeResponses", "ResponsesReply", "fake_responses"]

REASONING: dict[str, Any] = {
    "id": "rs_fake1",
    "type": "reasoning",
    "summary": [{"type": "summary_text", "text": "The user wants the weather."}],
    "encrypted_content": "gAAAAB-fake-opaque-reasoning==",
}
"""A reasoning item as OpenAI returns it with ``include: ["reasoning.encrypted_content"]``."""

DEFAULT_USAGE = {"input_tokens": 12, "output_tokens": 5, "total_tokens": 17}


@dataclass(frozen=True)
class ResponsesReply:
    """One scripted answer.

    Attributes:
        text: the message's text (streamed in word pieces; none: no message item).
        tool_calls: ``{"id", "name", "arguments"}`` dicts (``arguments`` a dict or JSON text).
        custom_calls: ``{"id", "name", "input"}`` dicts: ``custom_tool_call`` items.
        reasoning: a reasoning item sent before everything else (e.g. :data:`REASONING`).
        items: more output items sent whole after the reasoning (a hosted tool's call…).
        pieces: how many deltas each call's arguments are split over.
        status: an HTTP status other than 200 answers with an error (``body``, ``headers``).
        body: the error body (default: an OpenAI-style ``{"error": {...}}``).
        retry_after: sent as the ``Retry-After`` header.
        usage: ``input_tokens``, ``output_tokens``, ``total_tokens``; ``cached_tokens`` and
            ``reasoning_tokens`` go to the details.
        incomplete: ``response.incomplete`` with this reason (``max_output_tokens``…).
        failed: ``response.failed`` with this error object, after the text.
        error_event: an ``error`` event with these fields, after the text.
        cut_after: close the connection after this many events, without finishing.
        model: answer only requests for this model (``None``: any).
        delay: seconds between events.
        fields: more fields of the response object (``service_tier``…).
    """

    text: str = ""
    tool_calls: Sequence[Mapping[str, Any]] = ()
    custom_calls: Sequence[Mapping[str, Any]] = ()
    reasoning: Mapping[str, Any] | None = None
    items: Sequence[Mapping[str, Any]] = ()
    pieces: int = 3
    status: int = 200
    body: str | Mapping[str, Any] | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    retry_after: float | None = None
    usage: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_USAGE))
    incomplete: str | None = None
    failed: Mapping[str, Any] | None = None
    error_event: Mapping[str, Any] | None = None
    cut_after: int | None = None
    model: str | None = None
    delay: float = 0.0
    fields: Mapping[str, Any] = field(default_factory=dict)


def _split(text: str, parts: int) -> list[str]:
    size = max(1, -(-len(text) // max(1, parts)))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


class FakeResponses:
    """The server: ``url`` ends in ``/v1``; ``script`` / ``fail`` queue answers; ``requests`` records."""

    def __init__(self) -> None:
        self._replies: list[ResponsesReply] = []
        self._lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                if self.path.rstrip("/") != "/v1/responses":
                    return self._json(404, {"error": {"message": f"no route {self.path}"}})
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                reply = fake._take(body, {k.lower(): v for k, v in self.headers.items()})
                if reply.status != 200:
                    return self._error(reply)
                if body.get("stream"):
                    return self._stream(body, reply)
                events = list(_events(body, reply))
                return self._json(200, events[-1]["response"])

            def _json(self, status: int, payload: Any, headers: Mapping[str, str] | None = None) -> None:
                data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def _error(self, reply: ResponsesReply) -> None:
                headers = dict(reply.headers)
                if reply.retry_after is not None:
                    headers["retry-after"] = str(reply.retry_after)
                payload = reply.body or {
                    "error": {"message": f"fake error {reply.status}", "type": "fake", "code": None}
                }
                self._json(reply.status, payload, headers)

            def _stream(self, body: Mapping[str, Any], reply: ResponsesReply) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.end_headers()  # HTTP/1.0: the body ends when the connection closes
                for sent, event in enumerate(_events(body, reply)):
                    if reply.cut_after is not None and sent >= reply.cut_after:
                        return
                    if sent and reply.delay:
                        time.sleep(reply.delay)
                    try:
                        self.wfile.write(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
                        self.wfile.flush()
                    except (BrokenPipeError, ConnectionResetError):  # the client stopped reading
                        return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.01},
            name="fake-responses",
            daemon=True,
        )

    @property
    def url(self) -> str:
        """The base URL, ending in ``/v1``."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def start(self) -> FakeResponses:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def script(self, *replies: ResponsesReply | str) -> None:
        """Queue answers (a string is a text answer), one per request, in order."""
        with self._lock:
            self._replies += [ResponsesReply(text=r) if isinstance(r, str) else r for r in replies]

    def reset(self) -> None:
        """Forget the requests received and the answers not given yet (a server shared by many cases)."""
        with self._lock:
            self._replies.clear()
            self.requests.clear()
            self.headers.clear()

    def fail(self, status: int, *, times: int = 1, **options: Any) -> None:
        """Queue ``times`` error answers with ``status`` (options: ``retry_after``, ``body``, ``model``…)."""
        self.script(*[ResponsesReply(status=status, **options)] * times)

    def _take(self, body: dict[str, Any], headers: dict[str, str]) -> ResponsesReply:
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
            for position, reply in enumerate(self._replies):
                if reply.model is None or reply.model == body.get("model"):
                    return self._replies.pop(position)
        message = f"fake_responses: no reply scripted for model {body.get('model')!r}"
        return replace(ResponsesReply(status=418), body={"error": {"message": message, "type": "fake"}})


def _usage(reply: ResponsesReply) -> dict[str, Any]:
    numbers = reply.usage
    return {
        "input_tokens": numbers.get("input_tokens", 0),
        "input_tokens_details": {"cached_tokens": numbers.get("cached_tokens", 0)},
        "output_tokens": numbers.get("output_tokens", 0),
        "output_tokens_details": {"reasoning_tokens": numbers.get("reasoning_tokens", 0)},
        "total_tokens": numbers.get("total_tokens", 0),
    }


def _response(
    body: Mapping[str, Any], reply: ResponsesReply, status: str, output: list[Any]
) -> dict[str, Any]:
    return {
        "id": "resp_fake",
        "object": "response",
        "created_at": 0,
        "status": status,
        "error": None,
        "incomplete_details": None,
        "instructions": body.get("instructions"),
        "model": body.get("model"),
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools", []),
        "usage": None,
        **reply.fields,
    }


def _events(body: Mapping[str, Any], reply: ResponsesReply) -> Iterator[dict[str, Any]]:
    sequence = iter(range(1_000_000))
    output: list[dict[str, Any]] = []

    def event(kind: str, **fields: Any) -> dict[str, Any]:
        return {"type": kind, "sequence_number": next(sequence), **fields}

    def added(item: dict[str, Any]) -> dict[str, Any]:
        output.append(item)
        return event("response.output_item.added", output_index=len(output) - 1, item=item)

    def done(item: dict[str, Any]) -> dict[str, Any]:
        output[-1] = item
        return event("response.output_item.done", output_index=len(output) - 1, item=item)

    yield event("response.created", response=_response(body, reply, "in_progress", []))
    yield event("response.in_progress", response=_response(body, reply, "in_progress", []))
    if reply.reasoning is not None:
        whole = dict(reply.reasoning)
        yield added({"id": whole.get("id"), "type": "reasoning", "summary": []})
        yield done(whole)
    for item in reply.items:
        yield added(dict(item))
        yield done(dict(item))
    if reply.text or not (reply.tool_calls or reply.custom_calls or reply.items):
        message: dict[str, Any] = {"id": "msg_fake", "type": "message", "status": "in_progress"}
        message |= {"role": "assistant", "content": []}
        yield added(dict(message))
        where = {"item_id": "msg_fake", "output_index": len(output) - 1, "content_index": 0}
        part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
        yield event("response.content_part.added", **where, part=part)
        for piece in re.findall(r"\s+|\S+\s*", reply.text):
            yield event("response.output_text.delta", **where, delta=piece, logprobs=[])
        if reply.error_event is not None:
            yield event("error", **reply.error_event)
            return
        if reply.failed is not None:
            failed = _response(body, reply, "failed", output) | {"error": dict(reply.failed)}
            yield event("response.failed", response=failed)
            return
        part = {**part, "text": reply.text}
        yield event("response.output_text.done", **where, text=reply.text, logprobs=[])
        yield event("response.content_part.done", **where, part=part)
        yield done({**message, "status": "completed", "content": [part]})
    for position, call in enumerate(reply.tool_calls):
        arguments = call.get("arguments", {})
        text = arguments if isinstance(arguments, str) else json.dumps(arguments)
        item = {"id": f"fc_fake{position}", "type": "function_call", "status": "in_progress"}
        item |= {"call_id": call.get("id", f"call_{position}"), "name": call["name"], "arguments": ""}
        yield added(dict(item))
        where = {"item_id": item["id"], "output_index": len(output) - 1}
        for piece in _split(text, reply.pieces):
            yield event("response.function_call_arguments.delta", **where, delta=piece)
        yield event("response.function_call_arguments.done", **where, arguments=text)
        yield done({**item, "status": "completed", "arguments": text})
    for position, call in enumerate(reply.custom_calls):
        item = {"id": f"ctc_fake{position}", "type": "custom_tool_call", "status": "completed"}
        item |= {"call_id": call.get("id", f"call_c{position}"), "name": call["name"], "input": call["input"]}
        yield added({**item, "input": ""})
        yield done(item)
    status = "incomplete" if reply.incomplete else "completed"
    final = _response(body, reply, status, output) | {"usage": _usage(reply)}
    if reply.incomplete:
        final["incomplete_details"] = {"reason": reply.incomplete}
    yield event(f"response.{status}", response=final)


@pytest.fixture
def fake_responses() -> Iterator[FakeResponses]:
    """A running :class:`FakeResponses` on 127.0.0.1, stopped after the test."""
    server = FakeResponses().start()
    try:
        yield server
    finally:
        server.stop()
