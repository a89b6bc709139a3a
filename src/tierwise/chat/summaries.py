"""Segment summaries by a model, for chats: which summarizer a chat's memory gets, and when it asks.

Whenever the chat's model is a real one (not the offline assistant), a chat's segments are
summarised by a model: ``TIERWISE_SUMMARY_MODEL`` (``--summary-model``; default: the chat model,
though a small, cheap one is usually right), through the same provider, with its own response
limit (``TIERWISE_SUMMARY_MAX_TOKENS``) and input budget (``TIERWISE_SUMMARY_INPUT_TOKENS``). Its
answers are guarded (:class:`~tierwise.summarize.LLMSummarizer`: empty, truncated, over the cap or
unfaithful → the extractive summary, the reason logged).

The model is never asked on a request's path (``background_only``): only inside
:func:`~tierwise.summarize.off_request_path`, which

* the chat engine's upkeep after ``done`` runs in (:func:`tierwise.chat.upkeep.store_records`, a
  worker thread), and
* :func:`make_summaries` runs in: the OpenAI-compatible endpoint's summaries, made in a worker
  thread while the upstream answers, outside the session's lock, remembered by the summarizer for
  the upkeep that follows (:meth:`tierwise.server.openai_sessions.Sessions.begin`).

A summary wanted anywhere else — a pack that compacts before upkeep ran, a ``recall_segments`` of a
segment not summarised yet — is the extractive one, made at once.

The summarizer counts what its calls used (``calls``, ``prompt_tokens``, ``completion_tokens``); what
the calls of a chat engine's upkeep used is that chat's spend (the cost guard's ledger and its token
total: :func:`tierwise.chat.upkeep.store_records`), as its title is; so is what the OpenAI-compatible
endpoint's summaries and narrative merges used (:func:`model_upkeep` counts them,
:func:`tierwise.server.spent.record_upkeep` records them).
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Sequence

from tierwise.errors import InputError
from tierwise.memory.engine import Memory
from tierwise.memory.segments import Segment, make_trio
from tierwise.memory.turns import Turn
from tierwise.memory.upkeep import merge_text
from tierwise.providers.base import Provider, SyncCompletion, Usage
from tierwise.providers.settings import ProviderSettings
from tierwise.summarize.llm import LLMSummarizer, counting_usage, off_request_path
from tierwise.tokens import TokenCounter

__all__ = [
    "OFF",
    "check_summary_model",
    "make_summaries",
    "merge_narrative",
    "model_summarizer",
    "model_upkeep",
    "pending_summaries",
]

OFF = frozenset({"extractive", "off", "none"})
"""Summary model names that mean "no model summaries"."""

Job = tuple[Segment, Sequence[Turn]]


def check_summary_model(name: str | None) -> str | None:
    """``--summary-model``'s value, stripped; ``None`` if not given.

    Raises:
        InputError: it is blank.
    """
    if name is None:
        return None
    if not name.strip():
        raise InputError(
            "--summary-model is empty; give a model name (e.g. gpt-4o-mini), or 'extractive' for "
            "summaries without a model"
        )
    return name.strip()


def model_summarizer(
    provider: Provider,
    *,
    model: str | None = None,
    settings: ProviderSettings | None = None,
    background_only: bool = True,
    counter: TokenCounter | None = None,
) -> LLMSummarizer | None:
    """The summarizer of a chat with ``provider``, or ``None`` when summaries stay extractive.

    They stay extractive — no model call of tierwise's own — unless a summary model is named
    (``--summary-model`` or ``TIERWISE_SUMMARY_MODEL``), when the provider is the offline assistant,
    and when the summary model is ``extractive`` (or ``off``). Not the chat model by default: behind
    ``/v1`` a 12-turn conversation made 23 upstream calls, 11 of them summaries nobody asked for.

    Args:
        provider: the chat's model provider (the summary model is asked through it).
        model: ``--summary-model``; default ``TIERWISE_SUMMARY_MODEL``, else none (extractive).
        settings: the settings (default: read from the environment now).
        background_only: ask the model only off the request path (see the module docstring).
        counter: the tokenizer for the summaries' caps (default: the shared one).

    Raises:
        InputError: a ``TIERWISE_SUMMARY_*`` variable has a bad value, or ``model`` is blank.
    """
    settings = settings or ProviderSettings.load()
    name = check_summary_model(model) or settings.summary_model
    if provider.name == "offline" or not name or name.lower() in OFF:
        return None
    return LLMSummarizer(
        SyncCompletion(provider),
        model=name,
        max_tokens=settings.summary_max_tokens,
        input_tokens=settings.summary_input_tokens,
        background_only=background_only,
        counter=counter,
    )


def pending_summaries(memory: Memory, lock: threading.Lock | None = None) -> list[Job]:
    """The closed segments whose summary a model is to make: copies, with their turns.

    Empty unless ``memory`` summarises with a model. ``lock`` guards ``memory`` while it is read.
    """
    if not isinstance(memory.summarizer, LLMSummarizer):
        return []
    with lock or threading.Lock():
        waiting = [s for s in memory.segments if s.closed and not s.summary and not memory.settled(s)]
        chosen = memory.upkeep.provisional + waiting
        jobs: list[Job] = [(copy.copy(s), memory.turns[s.first : s.last + 1]) for s in chosen]
    for segment, _ in jobs:
        segment.summary = ""  # a provisional one is made again, by the model
    return jobs


def make_summaries(memory: Memory, jobs: Sequence[Job]) -> None:
    """Have the model summarise ``jobs`` now (a worker thread); memory's upkeep then finds them made.

    Works on the copies :func:`pending_summaries` made, so ``memory`` is not touched: the
    summarizer remembers each summary by its text, and the upkeep's own request for it is answered
    from there.
    """
    summarizer = memory.summarizer
    if not isinstance(summarizer, LLMSummarizer):
        return
    with off_request_path():
        for segment, turns in jobs:
            make_trio(
                segment,
                turns,
                memory.counter,
                summarizer,
                memory.scrubber,
                scrub_input=memory.policy.scrub_resent,
            )


def merge_narrative(memory: Memory, lock: threading.Lock) -> None:
    """The model's merge of the segments waiting into the narrative: asked outside ``lock``.

    What to merge is read under the lock, the model is asked off the request path without it, and
    the merge is taken under the lock again if nothing merged meanwhile (else it is dropped: the
    segments are still waiting, and the next upkeep merges them).
    """
    if not isinstance(memory.summarizer, LLMSummarizer):
        return
    with lock:
        pending = memory.upkeep.pending_merge(memory)
        segments = list(memory.upkeep.unmerged)
        prose = memory.narrative.prose
    if pending is None:
        return
    previous, added, count = pending
    with off_request_path():
        merged = merge_text(memory.summarizer, previous, added)
    with lock:
        current = memory.upkeep.unmerged[:count]
        same = len(current) == count and all(a is b for a, b in zip(current, segments, strict=False))
        if same and memory.narrative.prose == prose:
            memory.upkeep.apply_merge(memory, count, merged)


def model_upkeep(memory: Memory, jobs: Sequence[Job], lock: threading.Lock) -> Usage:
    """:func:`make_summaries` of ``jobs``, then :func:`merge_narrative` if segments wait; what the calls used.

    For a worker thread (the OpenAI-compatible endpoint's, while the upstream answers): the usage is
    this thread's calls of the summary model, the chat's spend as the chat engine's upkeep is.
    """
    with counting_usage() as spent:
        if jobs:
            make_summaries(memory, jobs)
        if memory.upkeep.unmerged:  # narrated by an earlier request's upkeep: merged now
            merge_narrative(memory, lock)
    prompt, completion = spent
    return Usage(prompt, completion, prompt + completion)
