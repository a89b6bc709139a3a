"""Summarizers: an offline extractive default and an LLM-backed one that falls back to it."""

from tierwise.summarize.base import Summarizer, SummaryRejected, check_faithful, check_summary
from tierwise.summarize.extractive import ExtractiveSummarizer
from tierwise.summarize.llm import Completion, LLMSummarizer, OnRequestPath, fit_input, off_request_path

__all__ = [
    "Completion",
    "ExtractiveSummarizer",
    "LLMSummarizer",
    "OnRequestPath",
    "Summarizer",
    "SummaryRejected",
    "check_faithful",
    "check_summary",
    "fit_input",
    "off_request_path",
]
