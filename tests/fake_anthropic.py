"""A fake Anthropic Messages server on loopback, so tests run the real ``anthropic`` SDK end to end.

It serves ``POST /v1/messages`` (streamed as Anthropic's server-sent events, or whole) from a
background thread (stdlib ``http.server``), answers with scripted replies in order, and records the
request bodies and headers it received::

    def test_something(fake_anthropic):
        fake_anthropic.fail(529, times=2)                      # two overloaded errors first
        fake_anthropic.script(AnthropicReply(text="Hello.", thinking=("Hm.", "sig-1")))
        provider = AnthropicProvider(base_url=fake_anthropic.url, model="claude-test")
        ...
        assert fake_anthropic.headers[-1]["x-api-key"] == "k"

A streamed answer is sent the way Anthropic sends it: ``message_start`` (usage with the cache
fields), ``ping``, each block's ``content_block_start`` / deltas / ``content_block_stop`` (thinking
in ``thinking_delta`` pieces then one ``signature_delta``; text in word pieces; a tool's input as
``input_json_delta`` pieces), ``message_delta`` (``stop_reason``, output tokens), ``message_stop``.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

__all__ = ["AnthropicReply", "FakeAnthropic", "fake_anthropic"]

DEFAULT_USAGE = {
    "input_tokens": 12,
    "output_tokens": 5,
    "cache_read_input_tokens": 0,
    "cache_creation_input_tokens": 0,
}


@dataclass(frozen=True)
class AnthropicReply:
    """One scripted answer.

    Attributes:
        text: the answer's text (streamed in word pieces).
        thinking: ``(thinking, signature)`` pairs, each a ``thinking`` block before the text.
        redacted: ``data`` of ``redacted_thinking`` blocks, after the thinking ones.
        blocks: more whole blocks after the text (``server_tool_use``…), sent at their start.
        tool_calls: ``{"id", "name", "input"}`` dicts (``input`` a dict or JSON text), after the text.
        pieces: how many ``input_json_delta`` pieces each input is split over.
        status: an HTTP status other than 200 answers with Anthropic's error shape (or ``body``).
        error_type: the error's ``type`` (default: Anthropic's for the status).
        headers: more response headers of an error (``retry-after``…).
        usage: ``message_start``'s usage (``output_tokens`` goes in ``message_delta``).
        stop_reason: default ``tool_use`` with calls, else ``end_turn``.
        error_event: sent as an ``error`` event after the text (a mid-stream failure).
        cut: end the stream before ``message_stop``.
    """

    text: str = ""
    thinking: Sequence[tuple[str, str]] = ()
    redacted: Sequence[str] = ()
    blocks: Sequence[Mapping[str, Any]] = ()
    tool_calls: Sequence[Mapping[str, Any]] = ()
    pieces: int = 3
    status: int = 200
    error_type: str | None = None
    body: Mapping[str, Any] | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    usage: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_USAGE))
    stop_reason: str | None = None
    error_event: Mapping[str, Any] | None = None
    cut: bool = False


_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


def _split(text: str, parts: int) -> list[str]:
    size = max(1, -(-len(text) // max(1, parts)))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _input(call: Mapping[str, Any]) -> str:
    given = call.get("input", {})
    return given if isinstance(given, str) else json.dumps(given)


class FakeAnthropic:
    """The server: ``url`` is its root; ``script`` / ``fail`` queue answers; ``requests`` records."""

    def __init__(self) -> None:
        self._replies: list[AnthropicReply] = []
        self._lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                if self.path.split("?")[0].rstrip("/") != "/v1/messages":
                    return self._json(404, _error_body(404, "not_found_error", f"no route {self.path}"))
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                reply = fake._take(body, {k.lower(): v for k, v in self.headers.items()})
                if reply.status != 200:
                    kind = reply.error_type or _ERROR_TYPES.get(reply.status, "api_error")
                    payload = reply.body or _error_body(reply.status, kind, f"fake error {reply.status}")
                    return self._json(reply.status, payload, reply.headers)
                if body.get("stream"):
                    return self._stream(body, reply)
                return self._json(200, _message(body, reply))

            def _json(self, status: int, payload: Any, headers: Mapping[str, str] | None = None) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, body: Mapping[str, Any], reply: AnthropicReply) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.end_headers()  # HTTP/1.0: the body ends when the connection closes
                for kind, data in _events(body, reply):
                    try:
                        self.wfile.write(f"event: {kind}\ndata: {json.dumps(data)}\n\n".encode())
                        self.wfile.flush()
                    except (BrokenPipeError, ConnectionResetError):  # the client stopped reading
                        return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.01},
            name="fake-anthropic",
            daemon=True,
        )

    @property
    def url(self) -> str:
        """The base URL (the SDK adds ``/v1/messages``)."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> FakeAnthropic:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def script(self, *replies: AnthropicReply | str) -> None:
        """Queue answers (a string is a text answer), one per request, in order."""
        with self._lock:
            self._replies += [AnthropicReply(text=r) if isinstance(r, str) else r for r in replies]

    def reset(self) -> None:
        """Forget the requests received and the answers not given yet (a server shared by many cases)."""
        with self._lock:
            self._replies.clear()
            self.requests.clear()
            self.headers.clear()

    def fail(self, status: int, *, times: int = 1, **options: Any) -> None:
        """Queue ``times`` error answers with ``status`` (options: ``headers``, ``error_type``, ``body``)."""
        self.script(*[AnthropicReply(status=status, **options)] * times)

    def _take(self, body: dict[str, Any], headers: dict[str, str]) -> AnthropicReply:
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
            if self._replies:
                return self._replies.pop(0)
        return replace(AnthropicReply(status=400), body=_error_body(400, "invalid_request_error", "no reply"))


def _error_body(status: int, kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


def _content(reply: AnthropicReply) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [
        {"type": "thinking", "thinking": thinking, "signature": signature}
        for thinking, signature in reply.thinking
    ]
    blocks += [{"type": "redacted_thinking", "data": data} for data in reply.redacted]
    if reply.text:
        blocks.append({"type": "text", "text": reply.text})
    blocks += [dict(b) for b in reply.blocks]
    for position, call in enumerate(reply.tool_calls):
        call_id = str(call.get("id", f"toolu_{position}"))
        blocks.append(
            {"type": "tool_use", "id": call_id, "name": call["name"], "input": json.loads(_input(call))}
        )
    return blocks


def _stop_reason(reply: AnthropicReply) -> str:
    return reply.stop_reason or ("tool_use" if reply.tool_calls else "end_turn")


def _message(body: Mapping[str, Any], reply: AnthropicReply) -> dict[str, Any]:
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": body.get("model"),
        "content": _content(reply),
        "stop_reason": _stop_reason(reply),
        "stop_sequence": None,
        "usage": dict(reply.usage),
    }


def _events(body: Mapping[str, Any], reply: AnthropicReply) -> Iterator[tuple[str, dict[str, Any]]]:
    start_usage = {**reply.usage, "output_tokens": 1}
    message = {**_message(body, reply), "content": [], "stop_reason": None, "usage": start_usage}
    yield "message_start", {"type": "message_start", "message": message}
    yield "ping", {"type": "ping"}
    for index, block in enumerate(_content(reply)):
        kind = block["type"]
        if kind == "thinking":
            yield "content_block_start", _start(index, {"type": "thinking", "thinking": "", "signature": ""})
            for piece in _split(block["thinking"], 2):
                yield "content_block_delta", _delta(index, {"type": "thinking_delta", "thinking": piece})
            yield (
                "content_block_delta",
                _delta(index, {"type": "signature_delta", "signature": block["signature"]}),
            )
        elif kind == "text":
            yield "content_block_start", _start(index, {"type": "text", "text": ""})
            for piece in re.findall(r"\s+|\S+\s*", block["text"]):
                yield "content_block_delta", _delta(index, {"type": "text_delta", "text": piece})
            if reply.error_event is not None:
                yield "error", {"type": "error", "error": dict(reply.error_event)}
                return
        elif kind == "tool_use":
            yield "content_block_start", _start(index, {**block, "input": {}})
            for piece in _split(json.dumps(block["input"]), reply.pieces):
                yield (
                    "content_block_delta",
                    _delta(index, {"type": "input_json_delta", "partial_json": piece}),
                )
        else:  # redacted thinking and other blocks: whole at their start
            yield "content_block_start", _start(index, block)
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    delta = {"stop_reason": _stop_reason(reply), "stop_sequence": None}
    usage = {"output_tokens": reply.usage.get("output_tokens", 0)}
    yield "message_delta", {"type": "message_delta", "delta": delta, "usage": usage}
    if not reply.cut:
        yield "message_stop", {"type": "message_stop"}


def _start(index: int, block: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": dict(block)}


def _delta(index: int, delta: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": dict(delta)}


@pytest.fixture
def fake_anthropic() -> Iterator[FakeAnthropic]:
    """A running :class:`FakeAnthropic` on 127.0.0.1, stopped after the test."""
    server = FakeAnthropic().start()
    try:
        yield server
    finally:
        server.stop()
