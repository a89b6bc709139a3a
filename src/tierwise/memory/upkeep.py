"""A summary model's part of memory upkeep: what waits for it, and when it may be asked.

A summary model (:class:`~tierwise.summarize.LLMSummarizer`) set to ``background_only`` is asked only
off a request's path (:func:`~tierwise.summarize.off_request_path`: the chat engine's upkeep after
``done``, the OpenAI-compatible endpoint's worker while the upstream answers). Memory cannot
always wait for it: a compaction step may need a segment's summary inside a pack. Then:

* the segment gets the extractive summary at once and is **provisional**: the next upkeep off the
  request path makes the model's summary and replaces it (the head already sent keeps the text it
  had, so the provider's cached prefix is not disturbed; the next step shows the model's);
* the narrative's structured part is updated at once; the model's **merge** of the segment into its
  prose waits (it is never dropped for that, and never asked on the path): the next upkeep merges
  every segment waiting, in order, in one request.

Merges run under the caller's lock or, for the endpoint, in two halves around the model's answer
(:meth:`ModelUpkeep.pending_merge`, then :meth:`ModelUpkeep.apply_merge` under the lock).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from tierwise.memory.narrative import NARRATIVE_TOKENS
from tierwise.summarize.base import SummaryRejected
from tierwise.summarize.llm import is_off_request_path

if TYPE_CHECKING:
    from tierwise.memory.engine import Memory
    from tierwise.memory.segments import Segment

__all__ = ["ModelUpkeep", "addition"]

log = logging.getLogger(__name__)


def addition(segments: list[Segment]) -> str:
    """What a narrative merge adds: each segment's id, header and summary, one per line."""
    return "\n".join(f"{s.id} {s.header}: {s.summary}".strip() for s in segments)


class ModelUpkeep:
    """Segments waiting for the summary model: provisional summaries and narrative merges."""

    def __init__(self) -> None:
        self.provisional: list[Segment] = []  # summarised extractively on a request's path
        self.unmerged: list[Segment] = []  # narrated, waiting for the model's merge into the prose

    @staticmethod
    def may_ask(summarizer: Any) -> bool:
        """Whether ``summarizer`` may ask its model here (it has one, and this is not a request's path)."""
        if summarizer is None or not hasattr(summarizer, "merge_narrative"):
            return False
        return not getattr(summarizer, "background_only", False) or is_off_request_path()

    def summarized(self, segment: Segment, summarizer: Any, deferred_before: int) -> None:
        """Note a segment whose model summary was wanted on a request's path (it is provisional)."""
        if getattr(summarizer, "deferred", 0) > deferred_before and segment not in self.provisional:
            self.provisional.append(segment)

    def narrated(self, segment: Segment, summarizer: Any) -> bool:
        """Queue a narrated segment for the model's merge; whether it may be merged now."""
        if summarizer is None or not hasattr(summarizer, "merge_narrative"):
            return False
        self.unmerged.append(segment)
        return self.may_ask(summarizer)

    def redo(self, memory: Memory, remake: Callable[[Segment], None]) -> bool:
        """Remake one provisional summary with the model, if it may be asked; whether one was redone.

        On a request's path a summarizer that made the summary ahead (the endpoint's worker) still
        answers from what it made; otherwise the segment stays provisional.
        """
        if not self.provisional:
            return False
        segment = self.provisional.pop(0)
        before = getattr(memory.summarizer, "deferred", 0)
        old = segment.summary
        segment.summary = ""
        remake(segment)
        if getattr(memory.summarizer, "deferred", 0) > before:  # not ready yet: keep what it had
            segment.summary = old
            if segment not in self.provisional:
                self.provisional.append(segment)
            return False
        return True

    def pending_merge(self, memory: Memory) -> tuple[str, str, int] | None:
        """``(previous, addition, count)`` for the model's merge of the segments waiting, if any."""
        if not self.unmerged:
            return None
        previous = memory.narrative.prose or memory.narrative.render_fields()
        return previous, addition(self.unmerged), len(self.unmerged)

    def apply_merge(self, memory: Memory, count: int, prose: str) -> None:
        """Take the model's merge of the first ``count`` segments waiting (``""``: it was rejected)."""
        clean = memory.scrubber.scrub_text(prose.strip()) if prose else ""
        if clean and memory.counter.count(clean) > NARRATIVE_TOKENS:
            clean = ""
        memory.narrative = replace(memory.narrative, prose=clean)
        del self.unmerged[:count]

    def merge(self, memory: Memory) -> None:
        """Merge every segment waiting into the model's narrative now (the model may be asked here)."""
        pending = self.pending_merge(memory)
        if pending is None or not self.may_ask(memory.summarizer):
            return
        previous, added, count = pending
        self.apply_merge(memory, count, merge_text(memory.summarizer, previous, added))


def merge_text(summarizer: Any, previous: str, added: str) -> str:
    """The model's merge of ``added`` into ``previous``, or ``""`` when it is rejected (logged)."""
    try:
        return str(summarizer.merge_narrative(previous, added, max_tokens=NARRATIVE_TOKENS))
    except SummaryRejected as exc:  # logged by the summarizer; the structured narrative is shown
        log.info("narrative merge not used (%s); the extractive narrative stays", exc)
        return ""
