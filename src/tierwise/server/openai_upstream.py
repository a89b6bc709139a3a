"""The upstream model's failures as a ``/v1`` client gets them, and what the gateway retries.

An OpenAI client has a retry policy of its own (the official SDKs retry 408, 409, 429 and 5xx twice,
honouring ``Retry-After``), so the gateway hands failures on as the upstream gave them and retries
only what the client cannot see (decision 67):

- **Statuses pass through.** An upstream 4xx or 5xx reaches the client with its status, its error
  object as sent (``message``, ``type``, ``param``, ``code`` and anything else in it) — a body that
  is not OpenAI-shaped is wrapped as the ``message`` of one — and its ``Retry-After``,
  ``retry-after-ms`` and ``x-should-retry`` headers. So a 429 is a ``RateLimitError`` the client
  backs off from, a 400 names the upstream's ``param``. The one exception is a 401: the upstream
  refused *tierwise's* key (``TIERWISE_API_KEY``), not the client's, so it is a 502 saying so.
- **A timeout is one timeout**: 504 (a gateway's timeout; the SDKs retry it like any 5xx), not four
  timeouts and a 502.
- **Anything else** the upstream failed with (a connection that failed, a stream that broke before
  any output) is 502: with the upstream's error object if it sent one (an error event), else
  ``upstream_error``.
- **Retries**: one, of a connection refused or dropped before the response began
  (:attr:`~tierwise.providers.errors.ProviderError.unanswered`, :data:`GATEWAY_RETRY`); none when the
  client says it is retrying itself (the SDKs' ``x-stainless-retry-count`` above 0). A 429, 5xx or
  timeout is never retried here: one client call costs the upstream at most two requests.
- **Mid-stream**, once the client has a 200, a failure is one ``data: {"error": {...}}`` event (the
  SDKs raise ``APIError`` on it) and the stream ends there: no ``[DONE]``, which says the answer
  is whole.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from fastapi.responses import JSONResponse

from tierwise.errors import TierwiseError
from tierwise.providers.base import Provider
from tierwise.providers.errors import ProviderError
from tierwise.providers.retry import RetryPolicy

__all__ = [
    "CLIENT_RETRY_HEADER",
    "GATEWAY_RETRY",
    "NO_RETRY",
    "client_retrying",
    "failure",
    "failure_event",
    "failure_response",
    "gateway_provider",
]

CLIENT_RETRY_HEADER = "x-stainless-retry-count"
"""The retry the client is on (the OpenAI SDKs send it on every request: ``0`` on the first)."""

GATEWAY_RETRY = RetryPolicy(max_retries=1, base_delay=0.2, max_delay=0.2, unanswered_only=True)
"""The gateway's retries: one, of a request that got no byte of an answer, after 0.1–0.2 s."""

NO_RETRY = RetryPolicy(max_retries=0)
"""No retries: the client is retrying itself."""

_KIND = "upstream_error"


def client_retrying(headers: Mapping[str, str]) -> bool:
    """Whether the request is a client's own retry (``x-stainless-retry-count`` above 0).

    Example:
        >>> client_retrying({"x-stainless-retry-count": "1"}), client_retrying({})
        (True, False)
    """
    value = headers.get(CLIENT_RETRY_HEADER, "").strip()
    return value.isdigit() and int(value) > 0


def gateway_provider(provider: Provider, headers: Mapping[str, str]) -> Provider:
    """``provider`` retrying as the gateway does: :data:`GATEWAY_RETRY`; :data:`NO_RETRY` on a client's retry.

    The chat engine's own calls keep the provider's policy; only the ``/v1`` answer uses this one.
    """
    return provider.with_retry_policy(NO_RETRY if client_retrying(headers) else GATEWAY_RETRY)


def _error_object(exc: ProviderError) -> dict[str, Any]:
    """The upstream's error object as sent, with OpenAI's four fields; a bare text body as its message."""
    detail = exc.detail or {}
    message = detail.get("message")
    if not isinstance(message, str) or not message:
        if message:  # a structured message (some servers nest one): kept, as JSON text
            message = json.dumps(message, ensure_ascii=False)
        elif exc.body and exc.body.strip() and not detail:
            message = exc.body.strip()
        else:
            message = f"the upstream model failed: {exc}"
    return {
        **detail,
        "message": message,
        "type": detail.get("type") or _KIND,
        "param": detail.get("param"),
        "code": detail.get("code"),
    }


def failure(exc: TierwiseError) -> tuple[int, dict[str, Any], dict[str, str]]:
    """The status, error body and headers an upstream failure reaches a ``/v1`` client with.

    Example:
        >>> said = {"message": "slow down", "type": "requests"}
        >>> error = ProviderError("m: HTTP 429", status=429, detail=said, headers={"retry-after": "7"})
        >>> status, body, headers = failure(error)
        >>> status, body["error"]["message"], body["error"]["type"], headers
        (429, 'slow down', 'requests', {'retry-after': '7'})
    """
    if not isinstance(exc, ProviderError):
        return 502, _wrapped(f"the upstream model failed: {exc}"), {}
    status = exc.status
    if status == 401:  # tierwise's key to the upstream, not the client's key to tierwise
        said = _error_object(exc)["message"]
        message = (
            f"the upstream model refused tierwise's key (HTTP 401: {said}); set TIERWISE_API_KEY to a key "
            "the upstream accepts"
        )
        return 502, _wrapped(message), {}
    if status is not None and 400 <= status <= 599:
        return status, {"error": _error_object(exc)}, dict(exc.headers)
    if exc.timed_out:
        return 504, _wrapped(f"the upstream model did not answer in time: {exc}", "upstream_timeout"), {}
    if exc.detail:  # an error event with no HTTP status in it: the upstream's words all the same
        return 502, {"error": _error_object(exc)}, {}
    said = f" (status {status})" if status is not None else ""
    return 502, _wrapped(f"the upstream model failed{said}: {exc}"), {}


def _wrapped(message: str, code: str = _KIND) -> dict[str, Any]:
    return {"error": {"message": message, "type": _KIND, "param": None, "code": code}}


def failure_response(exc: TierwiseError) -> JSONResponse:
    """An upstream failure before the answer began, as the client's HTTP response (see :func:`failure`)."""
    status, body, headers = failure(exc)
    return JSONResponse(body, status_code=status, headers=headers)


def failure_event(exc: TierwiseError) -> str:
    """A failure after the answer began, as the stream's last event: ``data: {"error": {...}}``.

    The error object is the one :func:`failure` gives (the upstream's own when it sent one); the
    stream ends after it, without ``[DONE]``.
    """
    _, body, _ = failure(exc)
    return f"data: {json.dumps(body, ensure_ascii=False)}\n\n"
