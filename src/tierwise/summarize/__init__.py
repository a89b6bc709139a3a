"""Summarizers: an offline extractive default and an LLM-backed one that falls back to it."""

from tierwise.summarize.base import Summarizer, SummaryRejected, check_summary
from tierwise.summarize.extractive import ExtractiveSummarizer
from tierwise.summarize.llm import Completion, LLMSummarizer

__all__ = [
    "Completion",
    "ExtractiveSummarizer",
    "LLMSummarizer",
    "Summarizer",
    "SummaryRejected",
    "check_summary",
]
