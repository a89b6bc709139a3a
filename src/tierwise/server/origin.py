"""Local mode answers only its own page and non-browser clients: cross-origin and rebinding requests get 403.

In local mode (no API key required), any web page the user visits could otherwise make the browser
send requests to ``http://127.0.0.1:8000`` — a form post that starts a turn, a ``text/plain`` POST to
``/v1/chat/completions`` that spends the user's model credits — or reach it through a DNS name that
rebinds to 127.0.0.1. Browsers mark such requests: an ``Origin`` that is not the server's own, or a
``Host`` that is not one of the server's names. The guard refuses both with 403 and a message naming
the fix. Programs (curl, the OpenAI SDKs) send no ``Origin`` and are unaffected; with
``--require-key`` the keys protect every request and the guard is not installed.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Collection, MutableMapping
from typing import Any
from urllib.parse import urlsplit

__all__ = ["LocalOriginGuard"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return bytes(value).decode("latin-1")
    return None


def _hostname(host: str) -> str:
    """``host[:port]`` (or ``[v6]:port``) without the port, lower-cased."""
    return (urlsplit(f"//{host}").hostname or host).lower()


class LocalOriginGuard:
    """ASGI middleware: 403 for a foreign ``Origin``, and for a ``Host`` outside ``hosts`` if given.

    Args:
        app: the application.
        hosts: the names this server answers to (e.g. ``127.0.0.1``, ``localhost``); ``None``: any
            (in-process tests, where the host is whatever the client says).
    """

    def __init__(self, app: ASGIApp, hosts: Collection[str] | None = None) -> None:
        self.app = app
        self.hosts = {_hostname(h) for h in hosts} if hosts is not None else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Refuse the request, or pass it on untouched (streams included)."""
        if scope["type"] in ("http", "websocket"):
            refusal = self._refusal(scope)
            if refusal is not None:
                await _forbid(scope, send, refusal)
                return
        await self.app(scope, receive, send)

    def _refusal(self, scope: Scope) -> str | None:
        host = _header(scope, b"host") or ""
        if self.hosts is not None and _hostname(host) not in self.hosts:
            return (
                f"the host {host!r} is not this server's name (a page reaching it through another name "
                f"is refused); use http://127.0.0.1 or http://localhost, or serve with --require-key"
            )
        origin = _header(scope, b"origin")
        if origin is None:
            return None
        scheme = "https" if scope.get("scheme") in ("https", "wss") else "http"
        if origin.lower() != f"{scheme}://{host}".lower():
            return (
                f"a request from the page {origin} is refused: in local mode tierwise answers only its "
                "own web UI and programs that send no Origin; to call it from another page, serve with "
                "--require-key and send a key"
            )
        return None


async def _forbid(scope: Scope, send: Send, message: str) -> None:
    path = str(scope.get("path", ""))
    if path.startswith("/v1/") or path == "/v1":  # OpenAI-shaped for OpenAI clients
        body: dict[str, Any] = {
            "error": {"message": message, "type": "invalid_request_error", "code": "forbidden", "param": None}
        }
    else:
        body = {"error": message}
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 1008})
        return
    payload = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    await send({"type": "http.response.start", "status": 403, "headers": headers})
    await send({"type": "http.response.body", "body": payload})
