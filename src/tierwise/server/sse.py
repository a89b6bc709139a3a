r"""Server-sent events for the web chat's turns: one send per event, a keep-alive comment while quiet.

:class:`EventStream` is Starlette's :class:`~starlette.responses.StreamingResponse` with what an SSE
stream of a turn needs besides: the SSE headers, a ``: ping`` comment after :attr:`EventStream.ping_s`
seconds without an event (proxies and browsers drop an idle connection), and the events' generator
closed at once when the client goes away (which stops the turn; Starlette's response cancels the
stream when the client disconnects). Events are framed by :func:`frame` as
``sse-starlette`` frames them (``event: …`` and ``data: …`` lines, CRLF).

Why not ``sse-starlette``'s ``EventSourceResponse``, which the web chat used: it runs four tasks a
response and opens a cancel scope around every send. With 50 web chat streams at model pace a turn
sends ~15 events, and that cost ~0.9 ms of CPU a turn over a plain streaming response (decision 79).

Example:
    >>> frame("text", '{"text": "Hi"}')
    b'event: text\r\ndata: {"text": "Hi"}\r\n\r\n'
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import anyio
from starlette.responses import StreamingResponse
from starlette.types import Send

__all__ = ["PING", "EventStream", "frame"]

PING = b": ping\r\n\r\n"
_HEADERS = {"Cache-Control": "no-store", "Connection": "keep-alive", "X-Accel-Buffering": "no"}


def frame(event: str, data: str) -> bytes:
    """One server-sent event: its name and its data (each line of it a ``data:`` line)."""
    if "\n" in data or "\r" in data:
        lines = "".join(f"data: {line}\r\n" for line in data.splitlines())
        return f"event: {event}\r\n{lines}\r\n".encode()
    return f"event: {event}\r\ndata: {data}\r\n\r\n".encode()


class EventStream(StreamingResponse):
    """A stream of framed events (:func:`frame`), pinged after ``ping_s`` quiet seconds (0: never).

    Args:
        events: the framed events, in order; the stream ends when they do.
        ping_s: the longest silence before a ``: ping`` comment.
        status_code: the response's status (FastAPI reads its default for the OpenAPI document).
    """

    media_type = "text/event-stream"

    def __init__(self, events: AsyncIterator[bytes], *, ping_s: float = 15.0, status_code: int = 200) -> None:
        super().__init__(events, status_code, _HEADERS, self.media_type)
        self.ping_s = ping_s
        self._events = events
        self._open = False
        self._sent_at = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._pinging: asyncio.Task[None] | None = None  # (held: a task nothing holds may be collected)

    async def stream_response(self, send: Send) -> None:
        """Send the headers, each event as it comes, and the end (pings in between when quiet)."""
        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
        loop = asyncio.get_running_loop()
        self._open, self._sent_at = True, loop.time()
        if self.ping_s > 0:
            self._timer = loop.call_later(self.ping_s, self._quiet, send)
        try:
            async for chunk in self._events:
                self._sent_at = loop.time()
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
        except BaseException:  # cancelled (the client went away) or a failed send: close the events now
            self._close()
            with anyio.CancelScope(shield=True):
                await self._events.aclose()  # type: ignore[attr-defined]
            raise
        self._close()
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    def _close(self) -> None:
        self._open = False
        if self._timer is not None:
            self._timer.cancel()

    def _quiet(self, send: Send) -> None:
        """The ping timer: ping if nothing was sent for ``ping_s``, else wait out the rest."""
        if not self._open:
            return
        loop = asyncio.get_running_loop()
        left = self._sent_at + self.ping_s - loop.time()
        if left <= 0:
            self._pinging = loop.create_task(self._ping(send))
            left = self.ping_s
        self._timer = loop.call_later(left, self._quiet, send)

    async def _ping(self, send: Send) -> None:
        if not self._open:
            return
        self._sent_at = asyncio.get_running_loop().time()
        try:
            await send({"type": "http.response.body", "body": PING, "more_body": True})
        except Exception:  # the stream ended meanwhile; its own send says why
            return
