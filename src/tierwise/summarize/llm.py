"""The LLM-backed summarizer: any provider, its own model and max_tokens, validated, with fallback.

The provider is anything with a ``complete(messages, *, model, max_tokens) -> str`` method
(:class:`Completion`); the chat engine's providers satisfy it. Every answer is checked
(:func:`~tierwise.summarize.base.check_summary`); an error, an empty answer, one over the cap or cut
mid-sentence is logged with the reason and replaced by the extractive summary, so a summary is never
lost to a flaky model.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from tierwise.summarize.base import SummaryRejected, check_summary
from tierwise.summarize.extractive import ExtractiveSummarizer
from tierwise.tokens import TokenCounter, get_counter

__all__ = ["Completion", "LLMSummarizer"]

log = logging.getLogger(__name__)

PROMPT = (
    "Summarise the conversation excerpt below in at most {words} words. Keep decisions, changes, "
    "open questions, dates and names{focus}. Write plain sentences, no preamble, and end with a "
    "full stop."
)


class Completion(Protocol):
    """What the LLM summarizer needs from a provider."""

    def complete(self, messages: Sequence[Mapping[str, Any]], *, model: str, max_tokens: int) -> str:
        """Return the model's text answer to ``messages``."""
        ...


class LLMSummarizer:
    """Summarises with a model; falls back to the extractive summarizer when the answer fails checks.

    Args:
        provider: anything with ``complete(messages, model=..., max_tokens=...)``.
        model: the model name to ask (may differ from the chat model: a small one is usually right).
        max_tokens: the model's response limit (separate from each summary's cap).
        fallback: used when the model fails; defaults to :class:`ExtractiveSummarizer`.
    """

    name = "llm"

    def __init__(
        self,
        provider: Completion,
        *,
        model: str,
        max_tokens: int = 400,
        counter: TokenCounter | None = None,
        fallback: ExtractiveSummarizer | None = None,
    ) -> None:
        self.provider = provider
        self.model = model
        self.max_tokens = max_tokens
        self.counter = counter or get_counter()
        self.fallback = fallback or ExtractiveSummarizer(self.counter)
        self.fallbacks = 0  # how many summaries came from the fallback (for reports and tests)

    def summarize(self, text: str, *, max_tokens: int, focus: str | None = None) -> str:
        """Summarise ``text`` within ``max_tokens`` tokens, or fall back and log why."""
        words = max(5, int(max_tokens * 0.7))
        messages = [
            {
                "role": "system",
                "content": PROMPT.format(words=words, focus=f"; focus on {focus}" if focus else ""),
            },
            {"role": "user", "content": text},
        ]
        try:
            answer = self.provider.complete(messages, model=self.model, max_tokens=self.max_tokens)
            return check_summary(answer, max_tokens, self.counter)
        except SummaryRejected as exc:
            reason = exc.reason
        except Exception as exc:  # any provider failure: the summary must not be lost
            reason = f"the provider failed: {type(exc).__name__}: {exc}"
        log.warning("LLM summary rejected (%s); using the extractive summary", reason)
        self.fallbacks += 1
        return self.fallback.summarize(text, max_tokens=max_tokens, focus=focus)
