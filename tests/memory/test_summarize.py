from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from tierwise import TokenCounter
from tierwise.summarize import ExtractiveSummarizer, LLMSummarizer, SummaryRejected, check_summary

COUNTER = TokenCounter()
TEXT = (
    "Maya: Can we move the launch review? I decided to push it to Friday. "
    "Assistant: Done, it is now Friday at 10. The pricing page is still blocked on legal. "
    "Maya: What about the FAQ? Priya needs it before Thursday."
)


class FakeProvider:
    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.calls: list[dict[str, Any]] = []

    def complete(self, messages: Sequence[Mapping[str, Any]], *, model: str, max_tokens: int) -> str:
        self.calls.append({"messages": list(messages), "model": model, "max_tokens": max_tokens})
        if isinstance(self.answer, Exception):
            raise self.answer
        return str(self.answer)


def test_extractive_is_deterministic_and_capped() -> None:
    s = ExtractiveSummarizer(COUNTER)
    first = s.summarize(TEXT * 10, max_tokens=40)
    assert first == s.summarize(TEXT * 10, max_tokens=40)
    assert 0 < COUNTER.count(first) <= 40 and first[-1] in ".!?…"
    assert s.summarize("", max_tokens=40) == ""


def test_check_summary_reasons() -> None:
    with pytest.raises(SummaryRejected, match="empty"):
        check_summary("   ", 10, COUNTER)
    with pytest.raises(SummaryRejected, match="over its cap"):
        check_summary("word " * 50 + ".", 10, COUNTER)
    with pytest.raises(SummaryRejected, match="mid-sentence"):
        check_summary("The launch moved to Friday and the", 50, COUNTER)


def test_llm_summary_is_used_when_valid() -> None:
    provider = FakeProvider("The review moved to Friday; pricing waits on legal.")
    s = LLMSummarizer(provider, model="small-model", max_tokens=99, counter=COUNTER)
    assert s.summarize(TEXT, max_tokens=60) == "The review moved to Friday; pricing waits on legal."
    assert provider.calls[0]["model"] == "small-model" and provider.calls[0]["max_tokens"] == 99
    assert s.fallbacks == 0


@pytest.mark.parametrize(
    "answer", ["", "   ", "cut off in the middle of", "x " * 500 + ".", RuntimeError("503")]
)
def test_llm_failures_fall_back_to_extractive(answer: Any, caplog: pytest.LogCaptureFixture) -> None:
    s = LLMSummarizer(FakeProvider(answer), model="m", counter=COUNTER)
    out = s.summarize(TEXT, max_tokens=40)
    assert out == ExtractiveSummarizer(COUNTER).summarize(TEXT, max_tokens=40)
    assert s.fallbacks == 1
    assert "using the extractive summary" in caplog.text
