"""Chat routes: create, list, rename, delete; post a message and stream the turn; stop; read back.

A chat is opened global, on the calendar, or on one of the user's projects or tasks (checked, see
:mod:`tierwise.server.chat_context`); every chat returned carries a ``context`` naming that project
or task. The list leaves out retired OpenAI-compatible sessions unless asked for them.

``POST /api/chats/{id}/messages`` answers with server-sent events, one per turn event: the SSE
``event`` is the event's ``type`` (``text``, ``tool_call_start``, ``tool_call_complete``, ``notice``,
``usage``, ``error``, ``done``) and ``data`` its JSON (``TurnEvent.to_dict()``). The stream always
ends with ``done``. A client that goes away stops the turn; what was said is kept.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request, Response
from pydantic import BaseModel, ConfigDict, Field
from pydantic_core import to_jsonable_python
from sse_starlette.sse import EventSourceResponse

from tierwise.chat.engine import ChatEngine
from tierwise.server.app import ApiError
from tierwise.server.chat_context import RETIRED, check_location, describe
from tierwise.server.openai_errors import SSE_EVENT
from tierwise.server.running import RunningTurns
from tierwise.server.usage import chat_totals
from tierwise.store import Store

__all__ = ["router"]

router = APIRouter(prefix="/api")

ContextType = Literal["global", "project", "task", "calendar"]
"""The locations a client may open a chat on (``api`` chats are the OpenAI-compatible endpoint's)."""


# What a blank entity_id may hold, spelled out: JSON Schema's `\s` (ECMA) and Python's `strip()`
# each count other characters as space, so the schema and the check share this set instead.
_BLANK = r"\t\n\x0b\x0c\r "
_BLANK_CHARS = "\t\n\x0b\x0c\r "


class NewChat(BaseModel):
    """A chat to create: optionally titled, optionally about a project, task or the calendar."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={  # a project or task chat names one; a global or calendar chat none
            "if": {
                "properties": {"context_type": {"enum": ["project", "task"]}},
                "required": ["context_type"],
            },
            "then": {
                "required": ["entity_id"],
                "properties": {"entity_id": {"type": "string", "pattern": f"[^{_BLANK}]"}},
            },
            "else": {
                "properties": {"entity_id": {"anyOf": [{"type": "null"}, {"pattern": f"^[{_BLANK}]*$"}]}}
            },
        },
    )

    title: Annotated[str | None, Field(max_length=200)] = None
    context_type: ContextType = "global"
    entity_id: Annotated[str | None, Field(max_length=64)] = None


class Rename(BaseModel):
    """A new title."""

    model_config = ConfigDict(extra="forbid")

    title: Annotated[str, Field(min_length=1, max_length=200)]


class NewMessage(BaseModel):
    """The user's message."""

    model_config = ConfigDict(extra="forbid")

    content: Annotated[str, Field(min_length=1, max_length=100_000)]


def _ctx(request: Request) -> tuple[Store, ChatEngine, str]:
    state = request.app.state
    return state.store, state.engine, state.user_of(request)


def _json(value: Any) -> Any:
    return to_jsonable_python(value)


@router.post("/chats", status_code=201)
def create_chat(body: NewChat, request: Request) -> Any:
    """Create a chat: global, on the calendar, or on one of the user's projects or tasks.

    A project or task chat needs ``entity_id``, the id of one of the user's projects or tasks
    (another user's is a 404 like an unknown one); a global or calendar chat takes none.
    """
    store, _, user = _ctx(request)
    entity = body.entity_id.strip(_BLANK_CHARS) or None if body.entity_id else None
    check_location(store, user, body.context_type, entity)
    chat = store.create_chat(user, context_type=body.context_type, entity_id=entity)
    if body.title and body.title.strip():
        chat = store.rename_chat(user, chat.id, body.title.strip())
    return describe(store, user, [chat])[0]


@router.get("/chats")
def list_chats(
    request: Request,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
    context_type: Annotated[str | None, Query(max_length=64)] = None,
    entity_id: Annotated[str | None, Query(max_length=128)] = None,
    include_superseded: bool = False,
) -> Any:
    """The user's chats, most recent first, each with its ``context`` (type, entity and its name).

    Retired OpenAI-compatible sessions (``api-superseded``) are left out unless
    ``include_superseded`` is true or ``context_type`` asks for them.
    """
    store, _, user = _ctx(request)
    hidden = () if include_superseded or context_type == RETIRED else (RETIRED,)
    found = store.list_chats(
        user, context_type=context_type, entity_id=entity_id, limit=limit, exclude_context_types=hidden
    )
    return {"chats": describe(store, user, found)}


@router.get("/chats/{chat_id}")
def get_chat(chat_id: str, request: Request) -> Any:
    """One chat, with its ``context`` and whether a turn is running."""
    store, _, user = _ctx(request)
    chat = describe(store, user, [store.get_chat(user, chat_id)])[0]
    return {**chat, "running": request.app.state.running.is_running(user, chat_id)}


@router.patch("/chats/{chat_id}")
def rename_chat(chat_id: str, body: Rename, request: Request) -> Any:
    """Rename a chat."""
    store, _, user = _ctx(request)
    title = body.title.strip()
    if not title:
        raise ApiError(422, "the title is empty; send some text")
    return describe(store, user, [store.rename_chat(user, chat_id, title)])[0]


@router.delete("/chats/{chat_id}", status_code=204)
def delete_chat(chat_id: str, request: Request) -> Response:
    """Delete a chat and everything in it."""
    store, engine, user = _ctx(request)
    if request.app.state.running.is_running(user, chat_id):
        raise ApiError(409, "a turn is running in this chat; stop it first")
    store.delete_chat(user, chat_id)
    engine.memories.forget(user, chat_id)
    return Response(status_code=204)


@router.get("/chats/{chat_id}/messages")
def list_messages(chat_id: str, request: Request) -> Any:
    """The chat's messages in order, each assistant message with the tool calls it made."""
    store, _, user = _ctx(request)
    messages = store.list_messages(user, chat_id)
    calls: dict[str, list[Any]] = {}
    for call in store.list_tool_calls(user, chat_id):
        calls.setdefault(call.message_id, []).append(_json(call))
    out = []
    for message in messages:
        record = _json(message)
        if message.id in calls:
            record["tool_executions"] = calls[message.id]
        out.append(record)
    return {"messages": out}


_TURN_EVENTS = {
    "description": "The turn as server-sent events (text, tool calls, usage… then one done)",
    "content": {"text/event-stream": {"schema": SSE_EVENT}},
}


@router.post("/chats/{chat_id}/messages", response_class=EventSourceResponse, responses={200: _TURN_EVENTS})
async def post_message(chat_id: str, body: NewMessage, request: Request) -> EventSourceResponse:
    """Send the user's message and stream the turn as server-sent events."""
    store, engine, user = _ctx(request)
    store.get_chat(user, chat_id)  # 404 before the stream starts
    if not body.content.strip():
        raise ApiError(422, "the message is empty; send some text")
    running: RunningTurns = request.app.state.running
    stop = await running.start(user, chat_id)  # 409 if a turn runs in the chat, in any process

    async def events() -> AsyncIterator[dict[str, str]]:
        async with running.held(user, chat_id, stop):
            async for event in engine.turn(user, chat_id, body.content, stop=stop):
                payload = event.to_dict()
                yield {"event": str(payload.get("type", "message")), "data": json.dumps(_json(payload))}

    return EventSourceResponse(events(), ping=15)


@router.post("/chats/{chat_id}/stop", status_code=202)
async def stop_turn(chat_id: str, request: Request) -> Any:
    """Stop the turn running in the chat, in whichever process runs it (what was said so far is kept)."""
    store, _, user = _ctx(request)
    store.get_chat(user, chat_id)
    running: RunningTurns = request.app.state.running
    return {"stopping": await running.stop(user, chat_id)}


@router.get("/chats/{chat_id}/snapshots")
def snapshots(chat_id: str, request: Request, limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> Any:
    """The chat's context snapshots (seed 004), newest first."""
    store, _, user = _ctx(request)
    store.get_chat(user, chat_id)
    return {"snapshots": _json(store.list_snapshots(user, chat_id, limit=limit))}


@router.get("/context/status")
def context_status(request: Request, session_id: Annotated[str, Query(alias="sessionId")]) -> Any:
    """Seed 004's status: the last pack's breakdown, budget health and band, totals, last update.

    ``cache`` is the chat's prompt caching: ``hitShare`` of its prompt tokens served from the model's
    cache (``source: "provider"``), or expected from the prefixes its packs repeated when the model
    reported none (``source: "expected"``); ``savedDollars`` the cache saved; ``lastPackPrefixTokens``
    what the last pack repeated of the one before (``null`` when it had none to compare with).
    """
    store, engine, user = _ctx(request)
    chat = store.get_chat(user, session_id)
    snapshot = store.latest_snapshot(user, session_id)
    cache = chat_totals(store, user, chat).cache()
    last = (snapshot.tier_breakdown.get("total") or {}) if snapshot is not None else {}
    health = engine.guard.health(user, session_id) if engine.guard is not None else None
    band = engine.guard.band(user, session_id) if engine.guard is not None else None
    return {
        "sessionId": session_id,
        "running": request.app.state.running.is_running(user, session_id),
        "budget": {
            "window": engine.budget.window,
            "reserve": engine.budget.reserve,
            "available": engine.budget.available,
        },
        "budgetHealth": health,
        "pruningBand": _json(band) if band is not None else None,
        "snapshot": _json(snapshot) if snapshot is not None else None,
        "totals": {"tokensUsed": chat.total_tokens_used, "messages": chat.message_count},
        "cache": {
            "hitShare": cache["hit_share"],
            "source": cache["source"],
            "promptTokens": cache["prompt_tokens"],
            "cachedTokens": cache["cached_tokens"],
            "expectedTokens": cache["expected_tokens"],
            "savedDollars": cache["saved_dollars"],
            "lastPackPrefixTokens": last.get("prefix_tokens") if isinstance(last, dict) else None,
        },
        "lastUpdated": _json(snapshot.created_at if snapshot is not None else chat.updated_at),
    }


@router.get("/chats/{chat_id}/context")
def context_detail(chat_id: str, request: Request, turns: Annotated[int, Query(ge=1, le=500)] = 50) -> Any:
    """What the dashboard shows: the last pack's layers (and why), usage per turn, compactions."""
    store, _, user = _ctx(request)
    store.get_chat(user, chat_id)
    packs = store.list_audit(user, chat_id=chat_id, event="pack", limit=1)
    done = store.list_audit(user, chat_id=chat_id, event="turn", limit=turns)
    compactions = store.list_audit(user, chat_id=chat_id, event="compaction", limit=50)
    per_turn = []
    for entry in reversed(done):
        usage = entry.details.get("usage") or {}
        summary = (usage.get("report") or {}).get("summary", {})
        per_turn.append(
            {
                "at": _json(entry.created_at),
                "reason": entry.details.get("reason"),
                "steps": entry.details.get("steps"),
                "prompt_tokens": usage.get("prompt_tokens"),
                "completion_tokens": usage.get("completion_tokens"),
                "total_used": summary.get("totalUsed"),
                "dollars": usage.get("dollars"),
                "cached_tokens": usage.get("cached_tokens"),
                "prefix_tokens": usage.get("prefix_tokens"),
                "saved_dollars": usage.get("saved_dollars"),
            }
        )
    return {
        "pack": {**packs[0].details, "checksum": packs[0].checksum, "at": _json(packs[0].created_at)}
        if packs
        else None,
        "turns": per_turn,
        "compactions": [{**c.details, "at": _json(c.created_at)} for c in compactions],
    }
