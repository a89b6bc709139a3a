"""How memory shares a budget between its layers and when it compacts (:class:`MemoryPolicy`)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from tierwise.errors import UserError
from tierwise.memory.segments import SegmentPolicy

__all__ = ["MemoryPolicy", "scrub_resent_from_env"]

_YES = frozenset({"1", "true", "yes", "on"})
_NO = frozenset({"0", "false", "no", "off"})


@dataclass(frozen=True)
class MemoryPolicy:
    """How memory shares a budget between its layers, and when it compacts.

    Shares are of the tokens left for memory (the budget minus what the caller reserves for the
    system prompt, tools and input). Working memory (the recent turns, sent whole) may grow to what
    the head (narrative, headers, summaries) and the per-turn retrieval share leave; when it would
    grow past that, a compaction step shrinks it to ``low_water`` of it at once
    (:mod:`tierwise.memory.compaction`). Retrieval keeps to ``retrieval_share`` per turn unless the
    input asks about something working memory does not show: then it may fill what is left.

    ``cached_rate``: what a provider bills a cached input token, as a share of an uncached one. In
    an agent loop, working memory grows between two compaction steps only as far as that price
    makes cheapest (:func:`tierwise.memory.compaction.step_interval`), never past its allowance;
    ``None`` lets it grow to its allowance.

    ``backlog_trios``: a step makes the trios of at most this many segments that wait for them (with
    ``defer_summaries``); a longer backlog — a chat stored without its trios, e.g. imported — leaves
    the request's path, and the head shows the newest summaries and the rest as a range line until
    :meth:`~tierwise.memory.engine.Memory.maintain` has made them.

    ``scrub_resent`` (the privacy policy, README "Privacy"): what memory sends again after its turn
    — retrieved turns, segments recalled in full, a step's note of earlier output, an agent loop's
    pinned first message, a blob opened again, a summary model's input — passes the scrubber first,
    as everything memory writes does. The recent turns sent whole are the conversation and go as
    they were sent. ``False`` re-sends what was said verbatim (``TIERWISE_SCRUB_RESENT=0``).
    """

    narrative_share: float = 0.10
    headers_share: float = 0.08
    summaries_share: float = 0.08
    retrieval_share: float = 0.0  # per turn, unless the input asks about what working memory lacks
    low_water: float = 0.15  # a compaction step shrinks working memory to this share of its allowance
    step_low_water: float = 0.2  # the same in an agent loop (bench agents: 0.1-0.7 measured at 8k)
    whole_share: float = 0.7  # of that, the newest groups sent as given (large tool results whole)
    whole_result_share: float = 0.2  # … unless one result is over this share of the room
    task_share: float = 0.15  # a turn's task (and the first user message) in an agent loop's steps
    cached_rate: float | None = 0.1  # OpenAI's and Anthropic's cached-input price (bench agents)
    step_retrieval_share: float = 0.0  # a step's note: earlier output's lines its names find (lines.py)
    past_share: float = 0.4  # a question opens retrieval: this share of its words missing (gate.py)
    statement_share: float = 0.75  # the same for an input that asks no question
    summary_segments: int = 5
    max_headers: int = 200
    fulls_per_turn: int = 3
    full_cache_size: int = 32
    blob_threshold_tokens: int = 400
    defer_summaries: bool = False  # summarise closed segments in maintain(), not as they close
    backlog_trios: int = 16  # more waiting at a step: the head is provisional (see Memory._settle)
    scrub_resent: bool = True  # what memory re-sends after its turn is scrubbed (README "Privacy")
    segments: SegmentPolicy = field(default_factory=SegmentPolicy)

    def __post_init__(self) -> None:
        if self.cached_rate is not None and not 0 < self.cached_rate < 1:
            raise ValueError(
                f"cached_rate must be between 0 and 1 (a cached token's price as a share of an "
                f"uncached one, e.g. 0.1), or None to let working memory fill its allowance; "
                f"got {self.cached_rate}"
            )


def scrub_resent_from_env() -> bool:
    """``TIERWISE_SCRUB_RESENT``: whether memory scrubs what it re-sends after its turn (default: yes).

    ``1``, ``true``, ``yes``, ``on`` or unset: scrubbed; ``0``, ``false``, ``no``, ``off``: re-sent
    as it was said (the conversation stays stored raw either way; what memory writes is always
    scrubbed).

    Raises:
        UserError: another value, naming the ones that work.
    """
    raw = os.environ.get("TIERWISE_SCRUB_RESENT", "")
    value = raw.strip().lower()
    if not value or value in _YES:
        return True
    if value in _NO:
        return False
    raise UserError(
        f"TIERWISE_SCRUB_RESENT={raw!r} is not on or off; set it to 0 (or false) to have memory re-send "
        "earlier turns as they were said, 1 (or true) or unset to scrub them (the default)"
    )
