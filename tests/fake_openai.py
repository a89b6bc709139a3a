"""A fake OpenAI-compatible server on loopback, so tests run the real ``openai`` SDK end to end.

It serves ``POST /v1/chat/completions`` (streamed as SSE, or whole) and ``GET /v1/models`` from a
background thread (stdlib ``http.server``), answers with scripted replies in order, and records the
request bodies it received::

    def test_something(fake_openai):
        fake_openai.fail(500, times=2)                        # two 500s first
        fake_openai.script("Hello there.")                    # then a streamed text answer
        provider = OpenAICompatProvider(base_url=fake_openai.url, model="m")
        ...
        assert [body["model"] for body in fake_openai.requests] == ["m", "m", "m"]

A streamed answer is sent the way OpenAI sends it: a role chunk, text in word pieces, each tool call's
``arguments`` split over several chunks with its ``id`` and ``name`` only in the first, a chunk with
``finish_reason``, a usage chunk (``choices: []``) when ``stream_options.include_usage`` is set, then
``data: [DONE]``.
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

__all__ = ["FakeOpenAI", "FakeReply", "fake_openai"]

DEFAULT_USAGE = {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17}


@dataclass(frozen=True)
class FakeReply:
    """One scripted answer.

    Attributes:
        text: the answer's text (streamed in word pieces).
        tool_calls: ``{"id", "name", "arguments"}`` dicts; ``arguments`` may be a dict or JSON text.
        pieces: how many chunks each call's ``arguments`` is split over.
        interleave: stream the fragments of parallel calls interleaved (call 0, call 1, call 0, …).
        status: an HTTP status other than 200 answers with an error (``body``, ``headers``).
        body: the error body (default: an OpenAI-style ``{"error": {...}}``).
        retry_after: sent as the ``Retry-After`` header.
        usage: the usage chunk's numbers (``cached_tokens`` goes to ``prompt_tokens_details``).
        finish_reason: default ``tool_calls`` when there are calls, else ``stop``.
        model: answer only requests for this model (``None``: any).
        delay: seconds between chunks.
        error_event: sent as an SSE ``{"error": ...}`` event after the text (a mid-stream failure).
        cut_after: close the connection after this many data chunks, without finishing.
        deltas: more ``delta`` objects of choice 0, one chunk each, after the text (a
            ``reasoning_content`` piece, a ``custom`` tool call…), as given.
        fields: more top-level fields of every chunk and of a whole answer (``system_fingerprint``…).
        usage_details: more fields of the usage (``completion_tokens_details``…).
    """

    text: str = ""
    tool_calls: Sequence[Mapping[str, Any]] = ()
    pieces: int = 3
    interleave: bool = False
    status: int = 200
    body: str | Mapping[str, Any] | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    retry_after: float | None = None
    usage: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_USAGE))
    finish_reason: str | None = None
    model: str | None = None
    delay: float = 0.0
    error_event: Mapping[str, Any] | None = None
    cut_after: int | None = None
    deltas: Sequence[Mapping[str, Any]] = ()
    fields: Mapping[str, Any] = field(default_factory=dict)
    usage_details: Mapping[str, Any] = field(default_factory=dict)


def _split(text: str, parts: int) -> list[str]:
    size = max(1, -(-len(text) // max(1, parts)))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


class FakeOpenAI:
    """The server: ``url`` ends in ``/v1``; ``script`` / ``fail`` queue answers; ``requests`` records."""

    def __init__(self) -> None:
        self._replies: list[FakeReply] = []
        self._lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.models = ["fake-model"]
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                if self.path.rstrip("/") != "/v1/models":
                    return self._json(404, {"error": {"message": f"no route {self.path}"}})
                data = [{"id": m, "object": "model", "created": 0, "owned_by": "fake"} for m in fake.models]
                return self._json(200, {"object": "list", "data": data})

            def do_POST(self) -> None:
                if self.path.rstrip("/") != "/v1/chat/completions":
                    return self._json(404, {"error": {"message": f"no route {self.path}"}})
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                reply = fake._take(body, {k.lower(): v for k, v in self.headers.items()})
                if reply.status != 200:
                    return self._error(reply)
                if body.get("stream"):
                    return self._stream(body, reply)
                return self._json(200, _completion(body, reply))

            def _json(self, status: int, payload: Any, headers: Mapping[str, str] | None = None) -> None:
                data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def _error(self, reply: FakeReply) -> None:
                headers = dict(reply.headers)
                if reply.retry_after is not None:
                    headers["retry-after"] = str(reply.retry_after)
                payload = reply.body or {
                    "error": {"message": f"fake error {reply.status}", "type": "fake", "code": reply.status}
                }
                self._json(reply.status, payload, headers)

            def _stream(self, body: Mapping[str, Any], reply: FakeReply) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.end_headers()  # HTTP/1.0: the body ends when the connection closes
                for sent, chunk in enumerate(_chunks(body, reply)):
                    if reply.cut_after is not None and sent >= reply.cut_after:
                        return
                    if sent and reply.delay:
                        time.sleep(reply.delay)
                    data = chunk if isinstance(chunk, str) else json.dumps(chunk)
                    try:
                        self.wfile.write(f"data: {data}\n\n".encode())
                        self.wfile.flush()
                    except (BrokenPipeError, ConnectionResetError):  # the client stopped reading
                        return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, name="fake-openai", daemon=True
        )

    @property
    def url(self) -> str:
        """The base URL, ending in ``/v1``."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def start(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def script(self, *replies: FakeReply | str) -> None:
        """Queue answers (a string is a text answer), one per request, in order."""
        with self._lock:
            self._replies += [FakeReply(text=r) if isinstance(r, str) else r for r in replies]

    def reset(self) -> None:
        """Forget the requests received and the answers not given yet (a server shared by many cases)."""
        with self._lock:
            self._replies.clear()
            self.requests.clear()
            self.headers.clear()

    def fail(self, status: int, *, times: int = 1, **options: Any) -> None:
        """Queue ``times`` error answers with ``status`` (options: ``retry_after``, ``body``, ``model``…)."""
        self.script(*[FakeReply(status=status, **options)] * times)

    @property
    def models_requested(self) -> list[str]:
        """The ``model`` field of every chat request received, in order."""
        return [str(body.get("model")) for body in self.requests]

    def _take(self, body: dict[str, Any], headers: dict[str, str]) -> FakeReply:
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
            for position, reply in enumerate(self._replies):
                if reply.model is None or reply.model == body.get("model"):
                    return self._replies.pop(position)
        message = f"fake_openai: no reply scripted for model {body.get('model')!r}"
        return replace(FakeReply(status=418), body={"error": {"message": message, "type": "fake"}})


def _tool_call_entries(reply: FakeReply) -> list[tuple[str, str, str]]:
    entries = []
    for position, call in enumerate(reply.tool_calls):
        arguments = call.get("arguments", {})
        text = arguments if isinstance(arguments, str) else json.dumps(arguments)
        entries.append((str(call.get("id", f"call_{position}")), str(call["name"]), text))
    return entries


def _chunks(body: Mapping[str, Any], reply: FakeReply) -> Iterator[dict[str, Any] | str]:
    base = {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": body.get("model"),
        **reply.fields,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    yield chunk({"role": "assistant", "content": ""})
    for piece in re.findall(r"\s+|\S+\s*", reply.text):
        yield chunk({"content": piece})
    if reply.error_event is not None:
        yield {"error": dict(reply.error_event)}
        return
    for delta in reply.deltas:
        yield chunk(dict(delta))
    fragments: list[list[dict[str, Any]]] = []
    for index, (call_id, name, arguments) in enumerate(_tool_call_entries(reply)):
        parts = _split(arguments, reply.pieces)
        first = {
            "index": index,
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": parts[0]},
        }
        fragments.append([first] + [{"index": index, "function": {"arguments": p}} for p in parts[1:]])
    if reply.interleave:
        longest = max((len(f) for f in fragments), default=0)
        order = [f[i] for i in range(longest) for f in fragments if i < len(f)]
    else:
        order = [piece for f in fragments for piece in f]
    for piece in order:
        yield chunk({"tool_calls": [piece]})
    yield chunk({}, reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop"))
    if (body.get("stream_options") or {}).get("include_usage"):
        yield {**base, "choices": [], "usage": _usage(reply)}
    yield "[DONE]"


def _usage(reply: FakeReply) -> dict[str, Any]:
    usage: dict[str, Any] = {k: v for k, v in reply.usage.items() if k != "cached_tokens"}
    if "cached_tokens" in reply.usage:
        usage["prompt_tokens_details"] = {"cached_tokens": reply.usage["cached_tokens"]}
    return {**usage, **reply.usage_details}


def _completion(body: Mapping[str, Any], reply: FakeReply) -> dict[str, Any]:
    calls = [
        {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
        for call_id, name, arguments in _tool_call_entries(reply)
    ]
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if calls:
        message["tool_calls"] = calls
    finish = reply.finish_reason or ("tool_calls" if calls else "stop")
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": _usage(reply),
        **reply.fields,
    }


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    """A running :class:`FakeOpenAI` on 127.0.0.1, stopped after the test."""
    server = FakeOpenAI().start()
    try:
        yield server
    finally:
        server.stop()
