"""The smallest budget a chat may be given: what its packs' guaranteed layers need (issue 32).

A pack always holds the system prompt (with the retrieval guide while those tools are offered),
every tool definition offered, the newest user message and, on a turn's last model call, the
last-step note; memory adds its narrative and segment headers at their smallest. Below that sum
every turn fails with "the guaranteed layers need … tokens but the budget is …". :func:`smallest_budget`
packs an empty chat's worst case — every tool the engine has, a short question — under a budget it
cannot fit, reads how far over it is, and adds :data:`HEADROOM` for a longer message and memory's
guaranteed layers. The server checks a chat's ``token_limit`` against it when it is set and documents
it as the minimum.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tierwise.budget import Budget
from tierwise.chat import housekeeping
from tierwise.chat.turn import last_step_note
from tierwise.errors import BudgetError
from tierwise.memory.assemble import pack_turn
from tierwise.memory.blobs import InMemoryBlobStore

if TYPE_CHECKING:
    from tierwise.chat.engine import ChatEngine

__all__ = ["HEADROOM", "budget_floor", "smallest_budget"]

HEADROOM = 300
"""Tokens over the fixed layers for the user's message and memory's narrative and headers at their
smallest (two fragments of ``Budget.min_fragment_tokens`` and their headings)."""

_QUESTION = {"role": "user", "content": "What is left to do this week?"}


def smallest_budget(engine: ChatEngine) -> int:
    """The smallest ``token_limit`` a chat of ``engine`` works with: its guaranteed layers plus headroom.

    An upper bound for every chat of the engine: all its tools are counted, whatever a chat is
    offered. Example: with the sample workspace's assistant about 1,550 tokens.
    """
    tools = list(engine.registry.definitions())
    memory = engine.memory_factory(InMemoryBlobStore())
    system = housekeeping.guided(engine.system, tools)
    fragment = engine.budget.min_fragment_tokens
    budget = Budget(window=1, min_fragment_tokens=fragment)
    for _ in range(4):  # the reservation first, then (rarely) what joining the sections adds
        try:
            pack_turn(memory, budget, [_QUESTION], system=system, tools=tools, layers=[last_step_note()])
        except BudgetError as exc:
            budget = Budget(window=budget.window + max(1, exc.over_by), min_fragment_tokens=fragment)
            continue
        break
    return budget.window + HEADROOM


def budget_floor(engine: ChatEngine) -> int:
    """:func:`smallest_budget`, worked out once per system prompt and tool list of ``engine``."""
    key = (engine.system, tuple(engine.registry.names()), engine.budget.min_fragment_tokens)
    cached = engine.__dict__.get("_budget_floor")
    if cached is None or cached[0] != key:
        cached = engine.__dict__["_budget_floor"] = (key, smallest_budget(engine))
    return int(cached[1])
