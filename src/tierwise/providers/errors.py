"""The errors a model provider raises, in tierwise's tree.

::

    TierwiseError
    ├── UserError
    │   └── ProviderNotConfigured  no base URL / model: the message says which variables to set
    ├── ProviderError              the model server failed: status, body, retryable
    └── ModelRequestsBlocked       a real model request while ``ALLOW_MODEL_REQUESTS`` is False

A provider never lets an SDK exception (``openai.APIStatusError``, ``httpx…``) escape: callers catch
``ProviderError`` and read ``status`` and ``body`` to say what went wrong.
"""

from __future__ import annotations

from collections.abc import Sequence

from tierwise.errors import TierwiseError, UserError

__all__ = ["CONFIGURE_HELP", "ModelRequestsBlocked", "ProviderError", "ProviderNotConfigured"]

CONFIGURE_HELP = """\
Set TIERWISE_BASE_URL (an OpenAI-compatible endpoint), TIERWISE_MODEL (the model id) and, if the \
server needs one, TIERWISE_API_KEY. For example:
  OpenRouter: TIERWISE_BASE_URL=https://openrouter.ai/api/v1  TIERWISE_MODEL=openai/gpt-4o-mini  \
TIERWISE_API_KEY=sk-or-...
  OpenAI:     TIERWISE_BASE_URL=https://api.openai.com/v1  TIERWISE_MODEL=gpt-4o-mini  TIERWISE_API_KEY=sk-...
  Ollama:     TIERWISE_BASE_URL=http://localhost:11434/v1  TIERWISE_MODEL=llama3.1:8b  (no key)
  LM Studio:  TIERWISE_BASE_URL=http://localhost:1234/v1  TIERWISE_MODEL=<the loaded model id>  (no key)
  vLLM:       TIERWISE_BASE_URL=http://localhost:8000/v1  TIERWISE_MODEL=<the served model>  (no key)
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
    ) -> None:
        super().__init__(message)
        self.status = status
        self.body = body[:2000] if body is not None else None
        self.retryable = retryable
        self.model = model
        self.attempts = list(attempts)
        self.retry_after = retry_after

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self)!r}, status={self.status!r}, retryable={self.retryable!r})"


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
