"""The model's housekeeping and context requests (seed 003), as tools.

Seed 003 asks the model to return, beside its answer, "housekeeping" (a context summary, key
decisions) and "context requests" (conversations to retrieve as header, summary or full). A
structured side channel like that needs every provider to honour a response format; tools do not.
So the chat engine registers four tools beside the application's:

- ``recall_segments``: earlier segments by id, as header, summary or full text;
- ``open_blob``: a stored tool result in full, or a byte range of it;
- ``update_narrative``: the model's own update to the always-present narrative (objective, state,
  achievements, active entities, next steps);
- ``record_decision``: a decision the user made, kept in the chat's ``key_decisions`` and in the
  narrative.

They act on the chat's memory and store through :class:`~tierwise.tools.ToolContext`, so they run
through the same executor as every tool: validated arguments, timing, logging, errors the model can
act on. They are ``async`` so that they run on the event loop, one at a time: parallel calls never
race on the memory they change.

Example:
    >>> [t.name for t in memory_tools()]
    ['recall_segments', 'open_blob', 'update_narrative', 'record_decision']
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any, Literal
from weakref import WeakKeyDictionary

from pydantic import Field

from tierwise.memory.blobs import open_blob as read_blob
from tierwise.memory.resend import resent_text
from tierwise.memory.scrub import Scrubber
from tierwise.tools.compact import compact
from tierwise.tools.definition import Tool, ToolContext, tool

if TYPE_CHECKING:
    from tierwise.memory.engine import Memory

__all__ = [
    "MEMORY_TOOL_NAMES",
    "RETRIEVAL_GUIDE",
    "RETRIEVAL_TOOL_NAMES",
    "guided",
    "memory_tools",
    "offered",
]

_NO_MEMORY = "error: this tool needs the chat's memory, which this executor was not given"

MEMORY_TOOL_NAMES = ("recall_segments", "open_blob", "update_narrative", "record_decision")
RETRIEVAL_TOOL_NAMES = ("recall_segments", "open_blob")
"""The tools that bring back what is no longer in the prompt: offered once there is something."""

RETRIEVAL_GUIDE = (
    "## Memory\n"
    "Earlier parts of the chat show as a narrative and one-line headers of segments (S1, S2, …), "
    "some with summaries: recall_segments brings one back (summary first, full only if needed). "
    "A compressed tool result shows a sha256: open_blob reads it in full."
)
"""How to use the retrieval tools: added to the system prompt only while they are offered
(:func:`guided`)."""

_BLOB_MARK = "(open with open_blob)]"
_HAS_PAST: WeakKeyDictionary[Memory, bool] = WeakKeyDictionary()  # once true, true for good


@tool(tier="detail", result_tokens=400)
async def recall_segments(
    ids: Annotated[list[str] | str, Field(description='e.g. ["S3", "S7"] (at most 10)')],
    ctx: ToolContext,
    form: Literal["header", "summary", "full"] = "summary",
) -> str:
    """Bring back earlier segments (S1, S2, …) of this chat: 'summary' first; 'full' (verbatim) ≤ 3 a turn."""
    if ctx.memory is None:
        return _NO_MEMORY
    wanted = [i.strip() for i in ids.replace(";", ",").split(",")] if isinstance(ids, str) else ids
    wanted = [i for i in wanted if i.strip()]
    if not wanted:
        return 'error: give "ids": a list of segment ids such as ["S3"]; see the segment list.'
    return ctx.memory.recall(wanted[:10], form)


@tool(tier="detail", result_tokens=800)
async def open_blob(
    sha256: Annotated[str, Field(description="64 hex digits")],
    ctx: ToolContext,
    start: Annotated[int | None, Field(ge=0)] = None,
    end: Annotated[int | None, Field(ge=0)] = None,
) -> str:
    """Read a compressed tool result in full (or bytes start to end) by its sha256."""
    blobs = ctx.blobs if ctx.blobs is not None else (ctx.memory.blobs if ctx.memory else None)
    if blobs is None:
        return "error: no stored tool results are available in this chat"
    text = read_blob(blobs, sha256.strip().removeprefix("sha256:"), start=start, end=end)
    return resent_text(ctx.memory, text) if ctx.memory is not None else text  # re-sent: scrubbed


@tool(tier="action", result_tokens=120)
async def update_narrative(
    ctx: ToolContext,
    objective: Annotated[str | None, Field(max_length=300)] = None,
    state: Annotated[str | None, Field(max_length=300)] = None,
    achievements: Annotated[list[Annotated[str, Field(max_length=200)]], Field(max_length=6)] = [],  # noqa: B006 - pydantic copies defaults
    entities: Annotated[
        list[Annotated[str, Field(max_length=80)]],
        Field(max_length=8, description="people, projects, files in play"),
    ] = [],  # noqa: B006
    next_steps: Annotated[
        list[Annotated[str, Field(max_length=200)]] | None,
        Field(max_length=6, description="replaces the list"),
    ] = None,
) -> str:
    """Update the narrative shown every turn when the objective or plan moves on; omitted fields stay."""
    if ctx.memory is None:
        return _NO_MEMORY
    if not any((objective, state, achievements, entities, next_steps is not None)):
        return "nothing to update: give at least one of objective, state, achievements, entities, next_steps"
    memory = ctx.memory
    clean = memory.scrubber.scrub_text  # what the model writes is kept and sent: scrubbed like the rest
    memory.narrative = memory.narrative.merge(
        objective=clean(objective) if objective else objective,
        state=clean(state) if state else state,
        achievements=[clean(a) for a in achievements],
        entities=[clean(e) for e in entities],
        next_steps=None if next_steps is None else [clean(n) for n in next_steps],
    ).fit(memory.counter)
    if ctx.store is not None and ctx.user_id is not None and ctx.chat_id is not None:
        ctx.store.update_chat(ctx.user_id, ctx.chat_id, narrative=memory.narrative.to_dict())
    return "narrative updated:\n" + memory.narrative.render()


@tool(tier="action", result_tokens=60)
async def record_decision(
    decision: Annotated[str, Field(min_length=3, max_length=300, description="one sentence")],
    ctx: ToolContext,
) -> str:
    """Keep a decision the user made in context for the rest of the chat."""
    scrubber = ctx.memory.scrubber if ctx.memory is not None else Scrubber()
    text = scrubber.scrub_text(" ".join(decision.split()))
    if ctx.memory is not None:
        memory = ctx.memory
        memory.narrative = memory.narrative.merge(achievements=[f"Decided: {text}"]).fit(memory.counter)
    if ctx.store is not None and ctx.user_id is not None and ctx.chat_id is not None:
        chat = ctx.store.get_chat(ctx.user_id, ctx.chat_id)
        decisions = [*[d for d in chat.key_decisions if d != text][-49:], text]
        fields: dict[str, object] = {"key_decisions": decisions}
        if ctx.memory is not None:
            fields["narrative"] = ctx.memory.narrative.to_dict()
        ctx.store.update_chat(ctx.user_id, ctx.chat_id, **fields)
    elif ctx.memory is None:
        return _NO_MEMORY
    return f"decision recorded: {text}"


def memory_tools() -> list[Tool]:
    """The four housekeeping tools, ready to register (compact schemas: they travel on every call)."""
    return [compact(t) for t in (recall_segments, open_blob, update_narrative, record_decision)]


def has_past(memory: Memory | None) -> bool:
    """Whether ``memory`` holds something a retrieval tool could bring back.

    True once part of the conversation has left working memory (segments, summaries) or a pack
    points at a stored result (a compressed one sent as such, a cut step: ``Memory.points_back``), and
    true from then on for that memory. A result stored as a blob but still sent whole (a turn, or an
    agent loop before its first compaction) points nowhere yet.
    """
    if memory is None:
        return False
    if _HAS_PAST.get(memory):
        return True
    found = memory.points_back(_BLOB_MARK)
    if found:
        _HAS_PAST[memory] = True
    return found


def offered(definitions: Sequence[dict[str, Any]], memory: Memory | None) -> list[dict[str, Any]]:
    """The tool definitions to send for a chat: retrieval tools only once it has a past (issue 17).

    A chat whose whole conversation is in the prompt has nothing to recall and no compressed result
    to open, so ``recall_segments`` and ``open_blob`` (143 tokens) are left out of its prompts. They
    appear with the first archived segment or stored blob and then stay (:func:`has_past` never
    turns false), so the tool list — the front of every prompt — changes once per chat at most.
    The executor still runs them if called: only the offer is held back.
    """
    if has_past(memory):
        return list(definitions)
    return [d for d in definitions if d.get("function", {}).get("name") not in RETRIEVAL_TOOL_NAMES]


def guided(system: str, definitions: Sequence[dict[str, Any]], guide: str | None = RETRIEVAL_GUIDE) -> str:
    r"""``system`` with ``guide`` after it while a retrieval tool is among ``definitions``.

    Instructions travel with the tools they are about: a chat with nothing to recall is neither
    offered ``recall_segments`` nor told about it (about 40 tokens on every call, and an invitation
    to call a tool it does not have). The guide joins when the tools do (:func:`offered`), and
    stays, so the prompt's front changes once, at the same call as the tool list.

    Example:
        >>> guided("Be brief.", [{"function": {"name": "open_blob"}}], "## Memory")
        'Be brief.\n\n## Memory'
        >>> guided("Be brief.", [{"function": {"name": "update_narrative"}}], "## Memory")
        'Be brief.'
    """
    names = {d.get("function", {}).get("name") for d in definitions}
    if not guide or names.isdisjoint(RETRIEVAL_TOOL_NAMES):
        return system
    return f"{system}\n\n{guide}" if system else guide
