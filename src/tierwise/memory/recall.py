"""The archive by id (seed 003): segments recalled as header, summary or full text, and their headers.

:class:`~tierwise.memory.engine.Memory` delegates here: :func:`recall_segments` is what the
``recall_segments`` tool returns (a per-turn quota of full texts, an LRU of rendered ones), and
:func:`segment_headers` the head's one line per segment (the oldest collapsed into a range).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from tierwise.memory.frame import headers_text
from tierwise.memory.resend import resent_turn
from tierwise.memory.segments import Segment, full_text, make_trio

if TYPE_CHECKING:
    from tierwise.memory.engine import Memory

__all__ = ["Form", "recall_segments", "segment_headers"]

Form = Literal["header", "summary", "full"]


def recall_segments(memory: Memory, ids: Sequence[str], form: Form = "summary") -> str:
    """Segments by id as header, summary or full text (what the ``recall_segments`` tool returns).

    At most ``fulls_per_turn`` full segments per turn; beyond that, summaries are returned with a
    note. Unknown ids get a message that lists the known range. A full text is its turns as memory
    re-sends them (scrubbed while ``MemoryPolicy.scrub_resent`` is on: :mod:`tierwise.memory.resend`).
    """
    by_id = {s.id: s for s in memory.segments}
    out = []
    for raw in ids:
        seg = by_id.get(str(raw).strip().upper())
        if seg is None:
            known = f"{memory.segments[0].id}–{memory.segments[-1].id}" if memory.segments else "none yet"
            out.append(f"{raw}: no such segment (known: {known}); ids look like S3.")
            continue
        _trio(memory, seg)
        chosen: Form = form
        if form == "full":
            if memory._fulls_this_turn >= memory.policy.fulls_per_turn:
                quota = memory.policy.fulls_per_turn
                out.append(f"{seg.id} (full-text quota of {quota} used; summary): {seg.summary}")
                continue
            memory._fulls_this_turn += 1
        out.append(_render_segment(memory, seg, chosen))
    return "\n\n".join(out)


def _render_segment(memory: Memory, seg: Segment, form: Form) -> str:
    if form == "header":
        return f"{seg.id} {seg.header}"
    if form == "summary":
        return f"{seg.id} {seg.header}: {seg.summary}"
    cached = memory._fulls.get(seg.id)
    if cached is None or not seg.closed:
        turns = [resent_turn(memory, t) for t in memory.turns[seg.first : seg.last + 1]]  # scrubbed
        cached = f"{seg.id} {seg.header}\n" + full_text(turns)
        if seg.closed:
            memory._fulls[seg.id] = cached
            while len(memory._fulls) > memory.policy.full_cache_size:
                memory._fulls.popitem(last=False)
    else:
        memory._fulls.move_to_end(seg.id)
    return cached


def _trio(memory: Memory, seg: Segment) -> None:
    if not seg.summary:
        # On the request path (a tool call mid-turn): the extractive summary, never a model call.
        turns = memory.turns[seg.first : seg.last + 1]
        make_trio(seg, turns, memory.counter, scrubber=memory.scrubber, **memory._context(seg))


def segment_headers(memory: Memory, budget: int, before: int | None = None) -> str:
    """One line per segment (those begun before turn ``before``, if given), oldest collapsed."""
    known = [s for s in memory.segments if before is None or s.first < before]
    late = {id(s) for s in memory._unsettled if before is None or s.last < before} if memory.backlog else ()
    waiting = [i + 1 for i, s in enumerate(known) if id(s) in late and not s.header]  # a range line
    segments = known[max(waiting[-1] if waiting else 0, len(known) - memory.policy.max_headers) :]
    hidden = len(known) - len(segments)
    lines = []
    for seg in segments:
        stale = not seg.closed or not seg.header  # growing, or summary deferred: header only
        if stale and memory._headed.get(seg.id) != seg.last:  # unchanged since last made: reuse
            turns = memory.turns[seg.first : seg.last + 1]
            make_trio(
                seg, turns, memory.counter, None, memory.scrubber, summarize=False, **memory._context(seg)
            )
            memory._headed[seg.id] = seg.last
        lines.append(f"{seg.id} {seg.header}")
    return headers_text(memory.segments, hidden, lines, budget, memory.counter)
