"""Compaction: keeping working memory (the recent turns sent in full) inside its budget.

Seed 000's triggers, applied to the history budget: at 80% **summarise** (older segments leave
working memory; their summaries and headers stand in for them), at 90% **archive** (everything before
the open segment leaves working memory and is marked archived — never deleted), at 95% **truncate**
(working memory starts later inside the open segment, at a whole tool-call group and preferably a
user turn, until it is back under 80%).

Why it cannot loop or skip: each step only moves the start of working memory forward, runs at most
once per check, and is logged with tokens before and after even when it changed nothing; the last
step is deterministic and always ends under budget, even when the conversation was already far over
the window when compaction first ran.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from tierwise.memory.segments import Segment
from tierwise.packing.groups import MessageGroups

__all__ = ["THRESHOLDS", "CompactionEvent", "plan_compaction"]

log = logging.getLogger(__name__)

Action = Literal["summarize", "archive", "truncate"]
THRESHOLDS: tuple[tuple[float, Action], ...] = ((0.80, "summarize"), (0.90, "archive"), (0.95, "truncate"))


@dataclass(frozen=True)
class CompactionEvent:
    """One compaction step: what it did and working-memory tokens before and after."""

    action: Action
    threshold: float
    tokens_before: int
    tokens_after: int
    live_from_before: int
    live_from_after: int
    budget: int

    @property
    def changed(self) -> bool:
        """Whether the step moved working memory at all."""
        return self.live_from_after != self.live_from_before


def plan_compaction(
    *,
    live_from: int,
    costs: Sequence[int],
    segments: Sequence[Segment],
    groups: MessageGroups,
    budget: int,
    recent_segments: int,
) -> tuple[int, list[CompactionEvent]]:
    """Where working memory should start so it fits ``budget``, and the steps taken to get there.

    Args:
        live_from: index of the first turn now in working memory.
        costs: tokens of every turn as a message.
        segments: all segments, oldest first.
        groups: tool-call groups of all turns (so truncation never splits a call from its result).
        budget: the history budget in tokens.
        recent_segments: segments kept whole by the summarise step.
    """
    n = len(costs)
    events: list[CompactionEvent] = []

    def tokens(start: int) -> int:
        return sum(costs[start:n])

    current = live_from
    for threshold, action in THRESHOLDS:
        before = tokens(current)
        if before < threshold * budget:
            continue
        if action == "summarize":
            keep = segments[-recent_segments:] if recent_segments > 0 else segments[-1:]
            target = max(current, keep[0].first if keep else current)
        elif action == "archive":
            target = max(current, segments[-1].first if segments else current)
        else:
            target = _truncate(current, n, groups, int(0.80 * budget), costs)
        after = tokens(target)
        event = CompactionEvent(action, threshold, before, after, current, target, budget)
        log.info(
            "compaction %s at %.0f%%: working memory %d -> %d tokens (turns from %d -> %d)",
            action,
            threshold * 100,
            before,
            after,
            current,
            target,
        )
        events.append(event)
        current = target
    return current, events


def _truncate(start: int, n: int, groups: MessageGroups, target: int, costs: Sequence[int]) -> int:
    """The latest start (≥ ``start``) whose working memory fits ``target``, at a group boundary."""
    first, _ = groups.newest(n, stop=start, budget=target)
    if first == n:  # not even the newest group fits: keep just that group
        first, _ = groups.newest(n, stop=start, max_groups=1)
    begin, _ = groups.start_on("user", first, n)
    return max(start, begin if begin < n else first)
