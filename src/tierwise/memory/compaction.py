"""Compaction in steps: working memory grows turn by turn, then shrinks once, to a low-water mark.

Providers cache prompt prefixes, so a pack that repeats the previous one from the start costs a
fraction of one that does not. Working memory (the recent turns sent whole) therefore never slides
by a turn or two per pack, as seed 000's 80/90/95% triggers would make it: it is only appended to
until it would overflow its allowance (its *high-water mark*), and then, in one **step**, it starts
later, at the latest whole tool-call group beginning with a user message that leaves it at or under
the *low-water mark* (by default half the allowance). The turns before the new start leave working
memory and are archived — never deleted, still retrievable and recallable by segment id — and the
memory layers are refreshed in the same step, so the front of the pack changes once per step.

Why it cannot loop or skip: a step only moves the start forward, runs at most once per pack, is
logged with tokens before and after (and the cache it cost), and always ends at or under the
low-water mark or, when not even that fits, with the newest group alone.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Literal

from tierwise.packing.groups import MessageGroups

__all__ = ["CompactionEvent", "plan_step"]

log = logging.getLogger(__name__)

Action = Literal["step"]


@dataclass(frozen=True)
class CompactionEvent:
    """One compaction step: working-memory tokens before and after, and the cache it cost.

    ``threshold`` is the low-water mark as a share of the allowance (``budget``);
    ``cache_tokens`` are the tokens of the previous pack, after the caller's system prompt and tools,
    that the next pack no longer repeats (a provider bills them uncached once more).
    """

    action: Action
    threshold: float
    tokens_before: int
    tokens_after: int
    live_from_before: int
    live_from_after: int
    budget: int
    cache_tokens: int = 0

    @property
    def changed(self) -> bool:
        """Whether the step moved working memory at all."""
        return self.live_from_after != self.live_from_before


def plan_step(
    *,
    live_from: int,
    end: int,
    groups: MessageGroups,
    target: int,
    max_messages: int | None = None,
    whole: MessageGroups | None = None,
    whole_target: int = 0,
    start_on_user: bool = True,
) -> tuple[int, int]:
    """Where working memory ``[start, end)`` starts after a step, and from where it is sent whole.

    Returns ``(start, whole_from)``: the latest start ≥ ``live_from`` whose working memory fits
    ``target`` tokens, the newest groups costed as ``whole`` sends them (large tool results as given)
    while they fit ``whole_target``, the older ones as ``groups`` does (compressed). The start falls
    on a whole tool-call group and, with ``start_on_user`` and where one exists, on a user message (in
    a step of an agent loop the turn's task is sent apart, so it need not); with ``max_messages``,
    working memory also holds at most that many messages. If not even the newest group fits, working
    memory is that group alone, compressed.
    """
    whole_from, spent = end, 0
    if whole is not None and whole_target > 0:
        whole_from, spent = whole.newest(
            end, stop=live_from, budget=min(whole_target, max(0, target)), max_messages=max_messages
        )
    rest = None if max_messages is None else max(0, max_messages - (end - whole_from))
    first, _ = groups.newest(whole_from, stop=live_from, budget=max(0, target - spent), max_messages=rest)
    if first == end:  # not even the newest group fits: keep just that group
        first, _ = groups.newest(end, stop=live_from, max_groups=1)
    start = first
    if start_on_user:
        begin, _ = groups.start_on("user", first, end)
        start = begin if begin < end else first
    start = max(live_from, start)
    log.info(
        "compaction step: working memory from turn %d -> %d (target %d tokens)", live_from, start, target
    )
    return start, max(whole_from, start)
