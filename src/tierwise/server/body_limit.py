"""The request body size limit for every path but ``/v1`` (which reads its own body, see below).

:class:`BodyLimit` refuses a body over ``TIERWISE_MAX_BODY_BYTES`` (default 16 MB) with 413 and
``{"error": message}``: at once when its ``Content-Length`` says so, else as soon as the bytes read
pass the limit (a chunked body), before a route has it. ``/v1`` reads its bodies by hand under the
same limit and answers OpenAI-shaped (:func:`tierwise.server.openai_params.read_body`).
"""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["BodyLimit", "too_large_message"]


def too_large_message(limit: int) -> str:
    """What a 413 says: the limit, and how to stay under it or raise it."""
    return (
        f"the request body is over {limit:,} bytes; send a smaller one (the limit is TIERWISE_MAX_BODY_BYTES)"
    )


class BodyLimit:
    """ASGI middleware: a request body over ``limit`` bytes is a 413, outside ``skip`` paths.

    Args:
        app: the application.
        limit: the largest body accepted, in bytes.
        skip: path prefixes that check their own bodies (``/v1/``).
    """

    def __init__(self, app: ASGIApp, limit: int, skip: tuple[str, ...] = ("/v1/",)) -> None:
        self.app, self.limit, self.skip = app, limit, skip

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on, its body read under the limit (413 past it)."""
        if scope["type"] != "http" or str(scope.get("path", "")).startswith(self.skip):
            await self.app(scope, receive, send)
            return
        declared = Headers(scope=scope).get("content-length", "")
        if declared.isdigit() and int(declared) > self.limit:
            response = JSONResponse({"error": too_large_message(self.limit)}, status_code=413)
            await response(scope, receive, send)
            return
        read = 0

        async def limited() -> Message:
            """The next piece of the body; past the limit, a 413 the app's error handler answers."""
            nonlocal read
            message = await receive()
            if message["type"] == "http.request":
                read += len(message.get("body", b""))
                if read > self.limit:
                    raise HTTPException(413, too_large_message(self.limit))
            return message

        await self.app(scope, limited, send)
