"""The errors a model provider raises, in tierwise's tree.

::

    TierwiseError
    ├── UserError
    │   └── ProviderNotConfigured  no base URL / model: the message says which variables to set
    ├── ProviderError              the model server failed: status, body, retryable, and what the
    │                              server said (its error object, Retry-After) for a gateway to relay
    └── ModelRequestsBlocked       a real model request while ``ALLOW_MODEL_REQUESTS`` is False

A provider never lets an SDK exception (``openai.APIStatusError``, ``httpx…``) escape: callers catch
``ProviderError`` and read ``status`` and ``body`` to say what went wrong.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from tierwise.errors import TierwiseError, UserError

__all__ = [
    "CONFIGURE_HELP",
    "RELAYED_HEADERS",
    "ModelRequestsBlocked",
    "ProviderError",
    "ProviderNotConfigured",
    "error_detail",
    "timeout_error",
]

RELAYED_HEADERS = ("retry-after", "retry-after-ms", "x-should-retry")
"""The response headers of a failed request a client acts on (when to retry, whether to), kept."""

_DETAIL_LIMIT = 65_536
"""An error body longer than this is not parsed for its error object (its text is kept, cut)."""

CONFIGURE_HELP = """\
Set TIERWISE_BASE_URL (an OpenAI-compatible endpoint), TIERWISE_MODEL (the model id) and, if the \
server needs one, TIERWISE_API_KEY. For example:
  OpenRouter: TIERWISE_BASE_URL=https://openrouter.ai/api/v1  TIERWISE_MODEL=openai/gpt-4o-mini  \
TIERWISE_API_KEY=sk-or-...
  OpenAI:     TIERWISE_BASE_URL=https://api.openai.com/v1  TIERWISE_MODEL=gpt-4o-mini  TIERWISE_API_KEY=sk-...
  Ollama:     TIERWISE_BASE_URL=http://localhost:11434/v1  TIERWISE_MODEL=llama3.1:8b  (no key)
  LM Studio:  TIERWISE_BASE_URL=http://localhost:1234/v1  TIERWISE_MODEL=<the loaded model id>  (no key)
  vLLM:       TIERWISE_BASE_URL=http://localhost:8001/v1  TIERWISE_MODEL=<the served model>  (no key; \
vllm serve --port 8001: tierwise serve takes 8000)
Optional: TIERWISE_FALLBACK_MODELS=model-a,model-b (tried in order when the model fails)."""


class ProviderError(TierwiseError):
    """A model server failed or answered with an error.

    Attributes:
        status: the HTTP status code, or ``None`` for connection errors and timeouts.
        body: the response body as text (truncated to 2,000 characters), if there was one.
        retryable: whether the same request may succeed later (429, 5xx, timeouts, connection errors).
        model: the model the request was for, if known.
        attempts: for a failed fallback chain, every ``(model, error)`` tried, in order.
        retry_after: seconds the server asked to wait (``Retry-After``), if it said.
        detail: the server's error object as it sent it (``{"message", "type", "param", "code"}``: the
            ``error`` of an OpenAI-shaped body or of an error event mid-stream), if it sent one.
        headers: the response's :data:`RELAYED_HEADERS` the server sent, lower-cased, as sent.
        timed_out: the request timed out.
        unanswered: no byte of an answer came — the connection was refused or dropped before the
            response began; the one failure a gateway retries, since its client cannot see it.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        body: str | None = None,
        retryable: bool = False,
        model: str | None = None,
        attempts: Sequence[tuple[str, ProviderError]] = (),
        retry_after: float | None = None,
        detail: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        timed_out: bool = False,
        unanswered: bool = False,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.body = body[:2000] if body is not None else None
        self.retryable = retryable
        self.model = model
        self.attempts = list(attempts)
        self.retry_after = retry_after
        self.detail = dict(detail) if detail is not None else None
        self.headers = dict(headers or {})
        self.timed_out = timed_out
        self.unanswered = unanswered

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self)!r}, status={self.status!r}, retryable={self.retryable!r})"


def error_detail(body: str | None) -> dict[str, Any] | None:
    """The error object of an OpenAI-shaped error body (``{"error": {...}}``), else ``None``.

    A string ``error`` (Ollama's native shape) becomes ``{"message": …}``.

    Example:
        >>> error_detail('{"error": {"message": "slow down", "type": "requests", "code": null}}')
        {'message': 'slow down', 'type': 'requests', 'code': None}
        >>> error_detail('{"error": "model not found"}'), error_detail("Bad Gateway")
        ({'message': 'model not found'}, None)
    """
    if not body or len(body) > _DETAIL_LIMIT:
        return None
    try:
        parsed = json.loads(body)
    except ValueError:
        return None
    error = parsed.get("error") if isinstance(parsed, dict) else None
    if isinstance(error, dict):
        return error
    if isinstance(error, str) and error:
        return {"message": error}
    return None


def timeout_error(exc: BaseException, model: str) -> ProviderError:
    """An SDK's timeout as a :class:`ProviderError`: a connection not opened in time is ``unanswered``.

    ``exc`` is the SDK's ``APITimeoutError``; the httpx exception it was raised from (``httpx`` or the
    SDKs' ``httpx2``: read by name) says which deadline passed.
    """
    if type(exc.__cause__).__name__ in ("ConnectTimeout", "PoolTimeout"):
        return ProviderError(
            f"{model}: could not connect to the model server in time (TIERWISE_CONNECT_TIMEOUT)",
            retryable=True,
            model=model,
            timed_out=True,
            unanswered=True,
        )
    return ProviderError(
        f"{model}: the request timed out (TIERWISE_TIMEOUT: the longest silence once the answer began)",
        retryable=True,
        model=model,
        timed_out=True,
    )


class ProviderNotConfigured(UserError):
    """No model provider is configured; the message lists what is missing and how to set it."""

    def __init__(self, missing: Sequence[str] = ()) -> None:
        what = ", ".join(missing) if missing else "a base URL and a model"
        super().__init__(f"no model provider is configured (missing {what}). {CONFIGURE_HELP}")
        self.missing = list(missing)


class ModelRequestsBlocked(TierwiseError):
    """A request to a real (non-loopback) model server while model requests are disallowed.

    Tests set ``tierwise.providers.base.ALLOW_MODEL_REQUESTS = False`` so that no test can reach a
    paid API by accident; loopback servers (a local fake) stay allowed.
    """
