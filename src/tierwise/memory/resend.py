"""What memory sends again after its turn, as the privacy policy says (README "Privacy", issue 32).

The conversation is stored as the user sent it, and the recent turns a pack keeps whole go as they
were sent. Whatever memory brings back after that — a retrieved turn, a segment recalled in full, a
step's note of earlier output, an agent loop's pinned first message, a blob opened again, a summary
model's input — passes the memory's scrubber first while ``MemoryPolicy.scrub_resent`` is on (the
default). The scrubber is deterministic, so a turn re-sent twice reads the same both times and the
provider's prompt cache keeps its prefix; a turn is scrubbed once and remembered.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from tierwise.memory.turns import Turn

if TYPE_CHECKING:
    from tierwise.memory.engine import Memory

__all__ = ["resent_hook", "resent_text", "resent_turn"]


def resent_turn(memory: Memory, turn: Turn) -> Turn:
    """``turn`` as memory re-sends it: its text scrubbed (remembered per turn), or as is if the policy is off.

    Example:
        >>> from tierwise.memory.engine import Memory
        >>> memory = Memory()
        >>> resent_turn(memory, Turn("m3", 3, "user", "my password: Tr0ub4dor&3xQ")).text
        'my password: [password]'
    """
    if not memory.policy.scrub_resent:
        return turn
    held = memory._resent.get(turn.index)
    if held is not None and held[0] is turn:
        return held[1]
    text = memory.scrubber.scrub_text(turn.text)
    shown = turn if text == turn.text else replace(turn, text=text)
    memory._resent[turn.index] = (turn, shown)
    return shown


def resent_hook(memory: Memory) -> Callable[[Turn], Turn]:
    """:func:`resent_turn` for ``memory``'s retriever, holding the memory weakly.

    The retriever belongs to the memory: a strong reference back would be a cycle, and a memory
    dropped would wait for the cyclic collector instead of being freed at once (decision 57).
    """
    ref = weakref.ref(memory)

    def shown(turn: Turn) -> Turn:
        held = ref()
        return turn if held is None else resent_turn(held, turn)

    return shown


def resent_text(memory: Memory, text: str) -> str:
    """``text`` (earlier output, a pinned message, a summary model's input) as memory re-sends it."""
    return memory.scrubber.scrub_text(text) if memory.policy.scrub_resent else text
