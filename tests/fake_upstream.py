"""What the loopback fakes of a model server share: the server, the scripted answers, the records.

:class:`FakeUpstream` serves one ``POST`` route from a background thread (stdlib ``http.server``),
answers each request with the next scripted reply that fits it (:meth:`FakeUpstream.script`,
:meth:`FakeUpstream.fail`), and records the request bodies and headers it received. A subclass
speaks one wire (``tests/fake_openai.py``, ``tests/fake_responses.py``, ``tests/fake_anthropic.py``):
its route, its reply type, its error body, the server-sent events of a streamed answer and the JSON of
a whole one::

    class FakeWire(FakeUpstream[WireReply]):
        reply_type = WireReply
        route = "/v1/wire"

        def frames(self, body, reply):  # a streamed answer's SSE frames
            yield sse({"type": "done"})

        def whole(self, body, reply):
            return {"text": reply.text}
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar, Generic, Self, TypeVar

__all__ = ["FakeUpstream", "ScriptedReply", "arguments_text", "split", "sse", "words"]


@dataclass(frozen=True)
class ScriptedReply:
    """What every fake's scripted answer has.

    Attributes:
        text: the answer's text (streamed in word pieces).
        status: an HTTP status other than 200 answers with an error (``body``, ``headers``).
        body: the error body (default: the wire's error shape).
        headers: more response headers of an error.
        retry_after: sent as the ``Retry-After`` header of an error.
        model: answer only requests for this model (``None``: any).
        delay: seconds between the events of a streamed answer.
        cut_after: close the connection after this many events, without finishing.
    """

    text: str = ""
    status: int = 200
    body: str | Mapping[str, Any] | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    retry_after: float | None = None
    model: str | None = None
    delay: float = 0.0
    cut_after: int | None = None


ReplyT = TypeVar("ReplyT", bound=ScriptedReply)


def split(text: str, parts: int) -> list[str]:
    """``text`` in at most ``parts`` pieces of equal length (one empty piece for no text)."""
    size = max(1, -(-len(text) // max(1, parts)))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def words(text: str) -> list[str]:
    """``text`` in word pieces, as a model streams it (each word with the space after it)."""
    return re.findall(r"\s+|\S+\s*", text)


def arguments_text(arguments: Any) -> str:
    """A call's arguments (or input) as JSON text: text as it is, anything else dumped."""
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


def sse(data: Any, event: str | None = None) -> str:
    """One server-sent event: ``data`` (text as it is, anything else as JSON), named ``event`` if given."""
    text = data if isinstance(data, str) else json.dumps(data)
    return (f"event: {event}\n" if event else "") + f"data: {text}\n\n"


class FakeUpstream(Generic[ReplyT]):
    """The server: ``url``; ``script`` / ``fail`` queue answers; ``requests`` and ``headers`` record.

    Subclasses set :attr:`reply_type` and :attr:`route` and write :meth:`frames` and :meth:`whole`;
    :meth:`error_body`, :meth:`unscripted`, :meth:`not_found` and :meth:`get` have defaults in
    OpenAI's shapes.
    """

    reply_type: type[ReplyT]
    """The scripted answer's class; a string scripted is ``reply_type(text=...)``."""
    route: ClassVar[str]
    """The path of the ``POST`` it answers (a query string and a trailing ``/`` ignored)."""
    url_path: ClassVar[str] = "/v1"
    """What :attr:`url` ends in."""

    def __init__(self) -> None:
        self._replies: list[ReplyT] = []
        self._lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                fake.get(self, _path(self.path))

            def do_POST(self) -> None:
                path = _path(self.path)
                if path != fake.route:
                    return send_json(self, 404, fake.not_found(self.path))
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                reply = fake._take(body, {k.lower(): v for k, v in self.headers.items()})
                if reply.status != 200:
                    headers = dict(reply.headers)
                    if reply.retry_after is not None:
                        headers["retry-after"] = str(reply.retry_after)
                    return send_json(self, reply.status, reply.body or fake.error_body(reply), headers)
                if body.get("stream"):
                    return _send_stream(self, fake.frames(body, reply), reply)
                return send_json(self, 200, fake.whole(body, reply))

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        name = "fake-" + type(self).__name__.removeprefix("Fake").lower()
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, name=name, daemon=True
        )

    # -- what a wire says ------------------------------------------------------------------------

    def frames(self, body: Mapping[str, Any], reply: ReplyT) -> Iterable[str]:
        """A streamed answer's server-sent events (:func:`sse`), in order."""
        raise NotImplementedError(f"{type(self).__name__} streams no answer")

    def whole(self, body: Mapping[str, Any], reply: ReplyT) -> Any:
        """A whole (not streamed) answer's JSON."""
        raise NotImplementedError(f"{type(self).__name__} sends no whole answer")

    def error_body(self, reply: ReplyT) -> Any:
        """The body of an error answer the reply gives none for (OpenAI's shape)."""
        return {"error": {"message": f"fake error {reply.status}", "type": "fake", "code": None}}

    def unscripted(self, body: Mapping[str, Any]) -> ReplyT:
        """The answer to a request no scripted reply fits: a 418 saying so."""
        name = "fake_" + type(self).__name__.removeprefix("Fake").lower()
        message = f"{name}: no reply scripted for model {body.get('model')!r}"
        return self.reply_type(status=418, body={"error": {"message": message, "type": "fake"}})

    def not_found(self, path: str) -> Any:
        """The body of a 404 for a path the fake does not serve."""
        return {"error": {"message": f"no route {path}"}}

    def get(self, handler: BaseHTTPRequestHandler, path: str) -> None:
        """Answer a ``GET`` (none served: 404)."""
        send_json(handler, 404, self.not_found(handler.path))

    # -- running it ------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The base URL (ending in :attr:`url_path`)."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}{self.url_path}"

    def start(self) -> Self:
        """Start serving (in a daemon thread)."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    @classmethod
    def running(cls) -> Iterator[Self]:
        """A started server, stopped when the iteration ends (the body of a pytest fixture)."""
        server = cls().start()
        try:
            yield server
        finally:
            server.stop()

    # -- the script ------------------------------------------------------------------------------

    def script(self, *replies: ReplyT | str) -> None:
        """Queue answers (a string is a text answer), one per request, in order."""
        with self._lock:
            self._replies += [self.reply_type(text=r) if isinstance(r, str) else r for r in replies]

    def reset(self) -> None:
        """Forget the requests received and the answers not given yet (a server shared by many cases)."""
        with self._lock:
            self._replies.clear()
            self.requests.clear()
            self.headers.clear()

    def fail(self, status: int, *, times: int = 1, **options: Any) -> None:
        """Queue ``times`` error answers with ``status`` (options: ``retry_after``, ``body``, ``model``…)."""
        self.script(*[self.reply_type(status=status, **options)] * times)

    def _take(self, body: dict[str, Any], headers: dict[str, str]) -> ReplyT:
        """Record the request; the first scripted reply for its model, else :meth:`unscripted`'s."""
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
            for position, reply in enumerate(self._replies):
                if reply.model is None or reply.model == body.get("model"):
                    return self._replies.pop(position)
        return self.unscripted(body)


def _path(path: str) -> str:
    return path.split("?")[0].rstrip("/")


def send_json(
    handler: BaseHTTPRequestHandler, status: int, payload: Any, headers: Mapping[str, str] | None = None
) -> None:
    """Answer with ``payload`` as JSON (text as it is) and ``headers``."""
    data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
    handler.send_response(status)
    handler.send_header("content-type", "application/json")
    handler.send_header("content-length", str(len(data)))
    for key, value in (headers or {}).items():
        handler.send_header(key, value)
    handler.end_headers()
    handler.wfile.write(data)


def _send_stream(handler: BaseHTTPRequestHandler, frames: Iterable[str], reply: ScriptedReply) -> None:
    """Stream ``frames``, ``reply.delay`` apart, cut after ``reply.cut_after`` of them."""
    handler.send_response(200)
    handler.send_header("content-type", "text/event-stream")
    handler.send_header("cache-control", "no-cache")
    handler.end_headers()  # HTTP/1.0: the body ends when the connection closes
    for sent, frame in enumerate(frames):
        if reply.cut_after is not None and sent >= reply.cut_after:
            return
        if sent and reply.delay:
            time.sleep(reply.delay)
        try:
            handler.wfile.write(frame.encode())
            handler.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):  # the client stopped reading
            return
