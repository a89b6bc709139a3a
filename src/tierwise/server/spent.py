"""What an answer of the OpenAI-compatible endpoint used and cost: tokens, cached tokens, dollars.

The upstream's usage when it reported one (``prompt_tokens_details.cached_tokens`` included, and its
other fields relayed to the client as sent: ``completion_tokens_details``…), else counted; priced
with the engine's prices, cached prompt tokens at the cached rate
(:func:`~tierwise.providers.pricing.cost`), with what the cache saved
(:func:`~tierwise.providers.pricing.cache_savings`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tierwise.providers.base import ModelResponse, Usage
from tierwise.providers.pricing import cache_savings, cost
from tierwise.tokens import get_counter

if TYPE_CHECKING:
    from tierwise.chat.engine import ChatEngine
    from tierwise.memory.persist import ChatMemory

__all__ = ["Spent", "record_spend", "record_upkeep", "spent_of"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Spent:
    """What an answer used: OpenAI's usage figures and the dollars (``known`` when the model is priced).

    ``cached_tokens`` of the prompt were served from the upstream's cache (as it reported them);
    ``saved_dollars`` is what that saved against the full input price; ``details`` the upstream's
    other usage fields, as it sent them (:attr:`~tierwise.providers.base.Usage.details`).
    """

    prompt_tokens: int
    completion_tokens: int
    dollars: float
    known: bool
    cached_tokens: int = 0
    saved_dollars: float = 0.0
    details: Mapping[str, Any] = field(default_factory=dict)

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion."""
        return self.prompt_tokens + self.completion_tokens

    def openai(self) -> dict[str, Any]:
        """OpenAI's ``usage`` object: the counts, then the upstream's other fields as it sent them.

        Example:
            >>> details = {"completion_tokens_details": {"reasoning_tokens": 64}}
            >>> Spent(100, 80, 0.0, False, details=details).openai()["completion_tokens_details"]
            {'reasoning_tokens': 64}
        """
        cached = {"cached_tokens": self.cached_tokens}
        prompt = self.details.get("prompt_tokens_details")
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
            **self.details,
            "prompt_tokens_details": {**prompt, **cached} if isinstance(prompt, Mapping) else cached,
        }


def spent_of(engine: ChatEngine, usage: Usage | None, prompt_tokens: int, response: ModelResponse) -> Spent:
    """An answer's usage: the upstream's figures, else counted; priced with the engine's prices."""
    if usage is None:
        counter = get_counter()
        completion = counter.count(response.text) + sum(
            counter.count(call.name) + counter.count(call.arguments) for call in response.tool_calls
        )
        usage = Usage(prompt_tokens, completion, prompt_tokens + completion)
    model = response.model or engine.model or engine.provider.model or ""
    priced = cost(usage, model, prices=engine.prices)
    saved = cache_savings(usage, model, prices=engine.prices)
    cached = min(max(usage.cached_tokens, 0), usage.prompt_tokens)
    return Spent(
        usage.prompt_tokens,
        usage.completion_tokens,
        priced.dollars,
        priced.known,
        cached,
        saved,
        usage.details,
    )


def record_spend(engine: ChatEngine, user: str, chat_id: str, spent: Spent) -> None:
    """The cost guard's record of a turn's spending (nothing without a guard)."""
    if engine.guard is not None:
        engine.guard.record(
            user, chat_id, tokens=spent.total_tokens, dollars=spent.dollars, cached_tokens=spent.cached_tokens
        )


def record_upkeep(
    engine: ChatEngine,
    chat: ChatMemory,
    used: Usage,
    write: Callable[[ChatMemory, Callable[[], None]], None],
    lock: threading.Lock,
) -> None:
    """What a chat's summary model used: the chat's spend, recorded as the chat engine's upkeep does.

    The cost guard's usage row (priced as the summary model) and the chat's tokens, written by
    ``write(chat, work)`` (which stores a new session's chat row first) under the session's ``lock``.
    A failure is logged, never raised: the request's own records come after it.
    """
    model = str(getattr(chat.memory.summarizer, "model", "") or engine.model or engine.provider.model or "")
    dollars = cost(used, model, prices=engine.prices).dollars

    def spend() -> None:
        if engine.guard is not None:
            engine.guard.record(chat.user_id, chat.chat_id, tokens=used.total_tokens, dollars=dollars)
        engine.store.add_tokens_used(chat.user_id, chat.chat_id, used.total_tokens)

    with lock:
        try:
            write(chat, spend)
        except Exception:
            log.exception("recording what the summary model used in chat %s failed", chat.chat_id)
