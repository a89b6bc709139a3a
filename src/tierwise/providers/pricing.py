"""What a request cost: a price table in USD per million tokens, overridable from the environment.

A model is looked up by its exact id, then by the part after the last ``/`` (so
``openai/gpt-4o-mini`` on OpenRouter finds ``gpt-4o-mini``, and a bare ``claude-3.5-sonnet`` finds
``anthropic/claude-3.5-sonnet``). Unknown models cost 0 with ``known=False``, so a report can say
"price unknown" rather than "free". ``TIERWISE_PRICES`` (JSON, see :mod:`.settings`) adds or replaces
entries, e.g. for a self-hosted model or a negotiated rate; its key ``"*"`` (:data:`ANY_MODEL`) prices
every model found nowhere else, so a dollar limit works for models the table lacks.

Cached prompt tokens (``Usage.cached_tokens``, part of ``prompt_tokens``) are charged at the cached
rate where the vendor publishes one, else at the input rate; :func:`cache_savings` is what that
discount saved.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from tierwise.providers.base import Usage

__all__ = ["ANY_MODEL", "PRICES", "PRICES_AS_OF", "Cost", "Price", "cache_savings", "cost", "lookup_price"]

ANY_MODEL = "*"
"""The override key that prices every model without an entry of its own."""


@dataclass(frozen=True, slots=True)
class Price:
    """USD per million tokens: prompt (``input``), completion (``output``), cached prompt if known."""

    input: float
    output: float
    cached_input: float | None = None


@dataclass(frozen=True, slots=True)
class Cost:
    """The price of one request; ``known=False`` means the model was not in the table (``dollars`` is 0)."""

    dollars: float
    known: bool


PRICES_AS_OF = "2025-06"
"""When the figures below were taken from the vendors' and OpenRouter's price pages."""

# Figures as published around June 2025 (USD per 1M tokens: input, output, cached input). Prices
# change; override with TIERWISE_PRICES rather than trusting these for billing.
_TABLE: dict[str, Price] = {
    # OpenAI
    "gpt-4o": Price(2.50, 10.00, 1.25),
    "gpt-4o-mini": Price(0.15, 0.60, 0.075),
    "gpt-4.1": Price(2.00, 8.00, 0.50),
    "gpt-4.1-mini": Price(0.40, 1.60, 0.10),
    "gpt-4.1-nano": Price(0.10, 0.40, 0.025),
    "o1": Price(15.00, 60.00, 7.50),
    "o3": Price(2.00, 8.00, 0.50),
    "o3-mini": Price(1.10, 4.40, 0.55),
    "o4-mini": Price(1.10, 4.40, 0.275),
    "gpt-3.5-turbo": Price(0.50, 1.50),
    # Anthropic (OpenRouter ids; cached = cache read)
    "anthropic/claude-3.5-sonnet": Price(3.00, 15.00, 0.30),
    "anthropic/claude-3.7-sonnet": Price(3.00, 15.00, 0.30),
    "anthropic/claude-sonnet-4": Price(3.00, 15.00, 0.30),
    "anthropic/claude-opus-4": Price(15.00, 75.00, 1.50),
    "anthropic/claude-3.5-haiku": Price(0.80, 4.00, 0.08),
    # Google
    "google/gemini-2.0-flash-001": Price(0.10, 0.40, 0.025),
    "google/gemini-2.5-flash": Price(0.30, 2.50, 0.075),
    "google/gemini-2.5-pro": Price(1.25, 10.00, 0.31),
    # Open-weight models at typical OpenRouter rates
    "meta-llama/llama-3.1-8b-instruct": Price(0.02, 0.05),
    "meta-llama/llama-3.1-70b-instruct": Price(0.10, 0.28),
    "meta-llama/llama-3.3-70b-instruct": Price(0.10, 0.25),
    "deepseek/deepseek-chat": Price(0.27, 1.10, 0.07),
    "deepseek/deepseek-r1": Price(0.55, 2.19, 0.14),
    "qwen/qwen-2.5-72b-instruct": Price(0.12, 0.39),
    "mistralai/mistral-small-3.1-24b-instruct": Price(0.10, 0.30),
    # tierwise's own offline assistant runs on this machine: nothing to pay
    "tierwise-offline": Price(0.0, 0.0, 0.0),
}

PRICES: Mapping[str, Price] = MappingProxyType(_TABLE)
"""The built-in table (read-only); see :data:`PRICES_AS_OF`."""


def _tail(model_id: str) -> str:
    return model_id.rsplit("/", 1)[-1].lower()


def lookup_price(model: str, overrides: Mapping[str, Price] | None = None) -> Price | None:
    """The price of ``model``: exact id first, then the id after its last ``/``; ``None`` if unknown.

    ``overrides`` take precedence over the built-in table at each step; their ``"*"`` entry is
    the price of a model found nowhere else.

    Example:
        >>> lookup_price("openai/gpt-4o-mini")
        Price(input=0.15, output=0.6, cached_input=0.075)
        >>> lookup_price("claude-3.5-sonnet").output, lookup_price("my-local-model")
        (15.0, None)
        >>> lookup_price("my-local-model", {"*": Price(0.5, 1.5)})
        Price(input=0.5, output=1.5, cached_input=None)
    """
    table = {key.lower(): price for key, price in {**_TABLE, **(overrides or {})}.items()}
    wanted = model.strip().lower()
    if wanted in table:
        return table[wanted]
    tail = _tail(wanted)
    if tail in table:
        return table[tail]
    by_tail = {_tail(key): price for key, price in table.items()}
    found = by_tail.get(tail)
    return found if found is not None else table.get(ANY_MODEL)


def _prices(prices: Mapping[str, Price] | None) -> Mapping[str, Price]:
    if prices is None:
        from tierwise.providers.settings import ProviderSettings  # settings import this module

        return ProviderSettings.load().prices or {}
    return prices


def cost(usage: Usage, model: str, *, prices: Mapping[str, Price] | None = None) -> Cost:
    """What ``usage`` on ``model`` cost in USD.

    Args:
        usage: the tokens the request used.
        model: the model id that answered (``Done.model`` / ``ModelResponse.model``).
        prices: overrides of the built-in table; ``None`` reads ``TIERWISE_PRICES`` now.

    Example:
        >>> cost(Usage(1_000_000, 100_000, 1_100_000, cached_tokens=200_000), "gpt-4o-mini", prices={})
        Cost(dollars=0.195, known=True)
    """
    price = lookup_price(model, _prices(prices))
    if price is None:
        return Cost(0.0, known=False)
    cached = min(max(usage.cached_tokens, 0), usage.prompt_tokens)
    cached_rate = price.cached_input if price.cached_input is not None else price.input
    dollars = (
        (usage.prompt_tokens - cached) * price.input
        + cached * cached_rate
        + usage.completion_tokens * price.output
    ) / 1_000_000
    return Cost(round(dollars, 10), known=True)


def cache_savings(usage: Usage, model: str, *, prices: Mapping[str, Price] | None = None) -> float:
    """Dollars the cached prompt tokens of ``usage`` saved: their price as input less their cached price.

    0 when nothing was cached, the model has no known price, or no cached rate (cached tokens are
    then charged as input: nothing saved).

    Example:
        >>> cache_savings(Usage(1_000_000, 0, 1_000_000, cached_tokens=200_000), "gpt-4o-mini", prices={})
        0.015
    """
    cached = min(max(usage.cached_tokens, 0), max(usage.prompt_tokens, 0))
    if not cached:
        return 0.0
    price = lookup_price(model, _prices(prices))
    if price is None or price.cached_input is None:
        return 0.0
    return round(cached * max(0.0, price.input - price.cached_input) / 1_000_000, 10)
