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

An agent loop's working memory need not fill its allowance before a step: each model call re-sends
the pack at the cached price, so it grows only as far as :func:`step_interval` finds cheapest
(``MemoryPolicy.cached_rate``; the allowance stays the ceiling).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from tierwise.memory import steps
from tierwise.memory.frame import Frame, summaries_text
from tierwise.memory.frame import layers_cost as _cost
from tierwise.memory.narrative import NARRATIVE_TOKENS
from tierwise.memory.steps import NEVER_WHOLE
from tierwise.packing.groups import MessageGroups
from tierwise.packing.layers import ContextLayer

if TYPE_CHECKING:
    from tierwise.memory.engine import Memory

__all__ = ["CompactionEvent", "compaction_step", "first_interval", "plan_step", "step_interval"]

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


def step_interval(rebill: int, growth: float, rate: float) -> int:
    """Tokens working memory should grow by between two compaction steps of an agent loop.

    Between steps every model call re-sends the pack, billed at ``rate`` (cached) but for what the
    step added; a step re-bills ``rebill`` tokens uncached once (the head it made anew and the
    working memory it kept). Growing by ``g`` tokens at ``growth`` tokens a step costs, per step,
    ``rate * g / 2`` on average for the growth and ``(1 - rate) * rebill * growth / g`` for the
    steps: least at ``g = sqrt(2 (1 - rate) rebill growth / rate)`` (the economic order quantity).

    Example:
        >>> step_interval(rebill=2_500, growth=600, rate=0.1)
        5196
    """
    if growth <= 0 or rebill <= 0:
        return 0
    return int(math.sqrt(2 * (1 - rate) * rebill * growth / rate))


def _allowance(memory: Memory, room: int, caller_cost: int, pinning: bool) -> int:
    """What working memory may grow to: the room minus the caller's head, memory's head, the task."""
    policy = memory.policy
    head_share = policy.narrative_share + policy.headers_share + policy.summaries_share
    pin_share = policy.task_share * 1.2 if pinning else 0.0  # the first + a fifth: steps.task_layer
    return max(0, room - caller_cost - int(room * (head_share + policy.retrieval_share + pin_share)))


def _growth(memory: Memory, start: int, end: int, tokens: int) -> float:
    """Tokens a step added to working memory on average: ``tokens`` over the steps in ``[start, end)``."""
    steps = sum(1 for m in memory.messages[start:end] if m.get("role") == "assistant")
    return tokens / steps if steps else 0.0


def first_interval(memory: Memory, room: int, caller_cost: int, n: int, window: int) -> int | None:
    """How far an agent loop's working memory grows before its first step (``None``: to its room).

    :func:`step_interval` with the rebill estimated (the low-water mark of the allowance and a
    narrative) and the growth measured so far (``window`` tokens over the steps before turn ``n``).
    """
    rate = memory.policy.cached_rate
    if rate is None or not memory.agent_loop:
        return None
    allowance = _allowance(memory, room, caller_cost, pinning=True)
    rebill = int(allowance * memory.policy.step_low_water) + min(
        NARRATIVE_TOKENS, int(room * memory.policy.narrative_share)
    )
    interval = step_interval(rebill, _growth(memory, 0, n, window), rate)
    return interval or None


def compaction_step(
    memory: Memory,
    room: int,
    heads: Sequence[ContextLayer],
    n: int,
    window: int,
    available: int,
    max_messages: int | None,
    task: int | None = None,
) -> Frame:
    """A compaction step: working memory to its low-water mark, the head made anew (see :class:`Frame`).

    In an agent loop (``task``: the turn's user message in a step) the low-water mark is
    ``step_low_water``, the newest steps stay whole (``whole_from``), the narrative is its work and
    working memory may grow by :func:`step_interval` until the next step.
    """
    counter, policy = memory.counter, memory.policy
    old, resuming, memory._resuming = memory.frame, memory._resuming, False
    caller = {layer.id: layer for layer in heads}
    caller_cost = _cost(heads, counter)
    everything = None
    if memory.live_from == 0:  # the whole conversation, large tool results whole
        everything = memory.groups(as_given=True).cost_between(0, n) if n else 0
    if (
        everything is not None
        and caller_cost + everything <= room
        and (task is None or everything <= (first_interval(memory, room, caller_cost, n, everything) or room))
        and (max_messages is None or n <= max_messages)
    ):  # the whole conversation fits: sent as given, nothing added
        memory.whole_from, memory.whole_cap = 0, None
        memory.frame = Frame(available, False, (), caller, room - caller_cost)
        return memory.frame
    allowance = _allowance(memory, room, caller_cost, pinning=memory.agent_loop or task is not None)
    before = memory.live_from
    low_water = policy.step_low_water if task is not None else policy.low_water
    target = allowance if resuming else int(allowance * low_water)
    # In an agent loop the newest steps stay whole; a chat's large results go compressed (its
    # tools' recaps say what they held), as do those it adds until the next step.
    agent = memory.agent_loop
    memory.whole_from, memory.whole_cap = 0, int(room * policy.whole_result_share)
    steps.supersede(memory, before, n)  # re-read views and re-run commands: the older as a stub
    memory.live_from, whole_from = plan_step(
        live_from=before,
        end=n,
        groups=memory.groups(),
        target=target,
        max_messages=None if max_messages is None else max(1, max_messages // 2),
        whole=memory.window_groups() if agent else None,
        whole_target=int(target * policy.whole_share),
        start_on_user=task is None,
    )
    memory.whole_from = whole_from if agent else NEVER_WHOLE
    memory.archived_upto = max(memory.archived_upto, memory.live_from)
    memory._settle(older_than=memory.live_from)  # summaries are shown once out of working memory
    layers: list[ContextLayer] = []
    cap = min(NARRATIVE_TOKENS, int(room * policy.narrative_share))
    narrative = steps.work_narrative(memory, n, cap) if memory.agent_loop else ""
    narrative = narrative or memory.narrative.fit(counter, cap).render()
    if narrative:
        layers.append(ContextLayer("narrative", "narrative", narrative))
    headers = memory._headers(int(room * policy.headers_share), memory.live_from)
    if headers:
        layers.append(ContextLayer("headers", "headers", headers, truncatable=True))
    older = [seg for seg in memory.segments if seg.last < memory.live_from and seg.closed and seg.summary]
    summaries = summaries_text(older[-policy.summary_segments :], int(room * policy.summaries_share), counter)
    if summaries:
        layers.append(ContextLayer("summaries", "summaries", summaries))
    head = _cost(layers, counter)
    after = memory.window_groups().cost_between(memory.live_from, n) if n else 0
    rebill = head + after  # what the next pack no longer repeats of this one
    pin = steps.task_layer(memory, task, available)
    head += pin.tokens(counter) if pin is not None else 0
    grows = max(after, room - caller_cost - head - int(room * policy.retrieval_share))
    if agent and task is not None and policy.cached_rate is not None:
        since, kept = memory.last_step  # the growth since the last step, per step
        interval = step_interval(rebill, _growth(memory, since, n, max(0, window - kept)), policy.cached_rate)
        grows = max(after, min(grows, after + interval)) if interval else grows
    memory.last_step = (n, after)
    cache = 0
    if old is not None:
        cache = _cost(old.layers, counter) + _cost(old.caller.values(), counter) + window
    event = CompactionEvent("step", low_water, window, after, before, memory.live_from, allowance, cache)
    memory.events.append(event)
    memory.frame = Frame(
        available,
        True,
        tuple(layers),
        caller,
        grows,
    )
    return memory.frame
