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

from typing import Annotated, Literal

from pydantic import Field

from tierwise.memory.blobs import open_blob as read_blob
from tierwise.memory.scrub import Scrubber
from tierwise.tools.definition import Tool, ToolContext, tool

__all__ = ["MEMORY_TOOL_NAMES", "memory_tools"]

_NO_MEMORY = "error: this tool needs the chat's memory, which this executor was not given"

MEMORY_TOOL_NAMES = ("recall_segments", "open_blob", "update_narrative", "record_decision")


@tool(tier="detail", result_tokens=400)
async def recall_segments(
    ids: Annotated[list[str] | str, Field(description='Segment ids, e.g. ["S3", "S7"] (at most 10)')],
    ctx: ToolContext,
    form: Literal["header", "summary", "full"] = "summary",
) -> str:
    """Bring back earlier parts of this conversation by segment id.

    The ids are those of the 'Conversation segments' list (S1, S2, …). Ask for 'summary' first;
    'full' returns every message verbatim and is limited to 3 segments per turn.
    """
    if ctx.memory is None:
        return _NO_MEMORY
    wanted = [i.strip() for i in ids.replace(";", ",").split(",")] if isinstance(ids, str) else ids
    wanted = [i for i in wanted if i.strip()]
    if not wanted:
        return 'error: give "ids": a list of segment ids such as ["S3"]; see the segment list.'
    return ctx.memory.recall(wanted[:10], form)


@tool(tier="detail", result_tokens=800)
async def open_blob(
    sha256: Annotated[str, Field(description="the 64 hex digits after sha256: in the compressed result")],
    ctx: ToolContext,
    start: Annotated[int | None, Field(ge=0, description="first byte (default 0)")] = None,
    end: Annotated[int | None, Field(ge=0, description="byte after the last (default: all)")] = None,
) -> str:
    """Read a stored tool result in full (or a byte range of it) by its sha256."""
    blobs = ctx.blobs if ctx.blobs is not None else (ctx.memory.blobs if ctx.memory else None)
    if blobs is None:
        return "error: no stored tool results are available in this chat"
    return read_blob(blobs, sha256.strip().removeprefix("sha256:"), start=start, end=end)


@tool(tier="action", result_tokens=120)
async def update_narrative(
    ctx: ToolContext,
    objective: Annotated[str | None, Field(max_length=300, description="what the user is after now")] = None,
    state: Annotated[str | None, Field(max_length=300, description="where things stand")] = None,
    achievements: Annotated[
        list[Annotated[str, Field(max_length=200)]], Field(max_length=6, description="what got done")
    ] = [],  # noqa: B006 - pydantic copies defaults
    entities: Annotated[
        list[Annotated[str, Field(max_length=80)]],
        Field(max_length=8, description="people, projects, files in play"),
    ] = [],  # noqa: B006
    next_steps: Annotated[
        list[Annotated[str, Field(max_length=200)]] | None,
        Field(max_length=6, description="what comes next (replaces the old list)"),
    ] = None,
) -> str:
    """Update the conversation's running narrative, which is shown at the top of every turn.

    Call it when the user's objective changes, something is achieved, or the plan moves on. Fields
    left out are kept.
    """
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
    decision: Annotated[str, Field(min_length=3, max_length=300, description="the decision, one sentence")],
    ctx: ToolContext,
) -> str:
    """Record a decision the user made, so it stays in context for the rest of the conversation."""
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
    """The four housekeeping tools, ready to register."""
    return [recall_segments, open_blob, update_narrative, record_decision]
