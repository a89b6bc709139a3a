"""Model providers: one async interface, one OpenAI-compatible implementation, fakes for tests.

::

    Provider (base.py)                 stream(request) -> events; complete(request) -> ModelResponse
    ├── OpenAICompatProvider           OpenAI, OpenRouter, Ollama, vLLM, LM Studio — by base URL;
    │   (openai_compat.py)             retries (retry.py) and fallback models (fallback.py)
    ├── FallbackProvider               any providers in turn: with_fallback(primary, *fallbacks)
    └── ScriptedModel, FunctionModel   fakes that record every request (testing.py)

Configure with ``TIERWISE_BASE_URL``, ``TIERWISE_API_KEY`` and ``TIERWISE_MODEL``
(:class:`ProviderSettings`); price a request with :func:`cost`; look up a model's context window
and output limit with :func:`lookup_limits` (``TIERWISE_MODELS`` overrides the table: windows.py);
give a provider to the summarizer with :class:`SyncCompletion`.

Example:
    >>> import asyncio
    >>> from tierwise.providers.testing import ScriptedModel
    >>> model = ScriptedModel("Friday at 10.")
    >>> response = asyncio.run(model.complete(ModelRequest([{"role": "user", "content": "When?"}])))
    >>> response.text, response.finish_reason, cost(response.usage, "gpt-4o-mini", prices={}).known
    ('Friday at 10.', 'stop', True)
"""

from typing import TYPE_CHECKING, Any

from tierwise.providers.base import (
    ChoiceDelta,
    Done,
    Event,
    Fallback,
    ModelRequest,
    ModelResponse,
    Provider,
    Retry,
    SyncCompletion,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
    collect,
    is_output,
)
from tierwise.providers.errors import ModelRequestsBlocked, ProviderError, ProviderNotConfigured
from tierwise.providers.fallback import FallbackProvider, with_fallback
from tierwise.providers.pricing import PRICES, PRICES_AS_OF, Cost, Price, cache_savings, cost, lookup_price
from tierwise.providers.retry import RetryPolicy
from tierwise.providers.settings import ProviderSettings
from tierwise.providers.windows import WINDOWS, ModelLimits, lookup_limits

if TYPE_CHECKING:
    from tierwise.providers.openai_compat import OpenAICompatProvider

__all__ = [
    "PRICES",
    "PRICES_AS_OF",
    "WINDOWS",
    "ChoiceDelta",
    "Cost",
    "Done",
    "Event",
    "Fallback",
    "FallbackProvider",
    "ModelLimits",
    "ModelRequest",
    "ModelRequestsBlocked",
    "ModelResponse",
    "OpenAICompatProvider",
    "Price",
    "Provider",
    "ProviderError",
    "ProviderNotConfigured",
    "ProviderSettings",
    "Retry",
    "RetryPolicy",
    "SyncCompletion",
    "TextDelta",
    "ToolCall",
    "ToolCallDelta",
    "Usage",
    "cache_savings",
    "collect",
    "cost",
    "is_output",
    "lookup_limits",
    "lookup_price",
    "with_fallback",
]


def __getattr__(name: str) -> Any:
    """``OpenAICompatProvider``, imported on first use.

    The openai SDK takes ~1 s to import; a process that never reaches a model (the offline
    assistant, a fake in tests) need not pay it.
    """
    if name == "OpenAICompatProvider":
        from tierwise.providers.openai_compat import OpenAICompatProvider

        return OpenAICompatProvider
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
