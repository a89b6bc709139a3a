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
from pydantic.json_schema import SkipJsonSchema
from pydantic_core import to_jsonable_python

from tierwise.chat.engine import ChatEngine
from tierwise.chat.events import TextEvent
from tierwise.chat.floor import budget_floor
from tierwise.chat.turn import chat_budget
from tierwise.server.api_models import ChatList, ChatOut, ContextStatus, RunningChat
from tierwise.server.chat_context import RETIRED, check_location, describe
from tierwise.server.chat_status import (
    compaction_steps,
    current_context,
    pack_status,
    spending_status,
    strategy,
    turn_input,
)
from tierwise.server.errors import ApiError
from tierwise.server.openai_errors import SSE_EVENT
from tierwise.server.openai_history import entity_id
from tierwise.server.openai_sessions import CONTEXT_TYPE
from tierwise.server.running import RunningTurns
from tierwise.server.sse import EventStream, frame
from tierwise.server.usage import chat_totals
from tierwise.store import Chat, Store
from tierwise.store.errors import NotFoundError

__all__ = ["router"]

router = APIRouter(prefix="/api")

ContextType = Literal["global", "project", "task", "calendar", "calendar_date"]
"""The locations a client may open a chat on (``api`` chats are the OpenAI-compatible endpoint's)."""


# What a blank entity_id may hold, spelled out: JSON Schema's `\s` (ECMA) and Python's `strip()`
# each count other characters as space, so the schema and the check share this set instead.
_BLANK = r"\t\n\x0b\x0c\r "
_BLANK_CHARS = "\t\n\x0b\x0c\r "


_DAY = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
_SPACE = r"\t\n\x0b\x0c\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
"""Python's white space (``str.isspace``), as a regex class: what ``strip()`` removes."""
_NOT_BLANK: dict[str, Any] = {"pattern": f"[^{_SPACE}]"}
"""A title or message is more than white space: the schema says what the check (``strip()``) does."""

TOKEN_LIMIT_MIN = 1
"""The schema's own floor of ``token_limit``; the real one is the engine's (:func:`budget_floor`: what
a pack's guaranteed layers need, ~1,700 tokens for the sample assistant), set as the documented
minimum when the OpenAPI document is made."""


class NewChat(BaseModel):
    """A chat to create: optionally titled, about a project, task, the calendar or one day of it.

    ``token_limit`` is the chat's budget: the tokens each of its prompts may use (default: the
    server's, its window less the answer's reserve), from what the chat's guaranteed layers need
    (system prompt, tools, a message: the schema's minimum) up to the server's.
    """

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={  # a project, task or day chat names one; a global or calendar chat none
            "if": {
                "properties": {"context_type": {"enum": ["project", "task", "calendar_date"]}},
                "required": ["context_type"],
            },
            "then": {
                "required": ["entity_id"],
                "properties": {"entity_id": {"type": "string", "pattern": f"[^{_BLANK}]"}},
            },
            "else": {
                "properties": {"entity_id": {"anyOf": [{"type": "null"}, {"pattern": f"^[{_BLANK}]*$"}]}}
            },
            "dependentSchemas": {  # a day chat's entity_id is the day
                "context_type": {
                    "if": {"properties": {"context_type": {"const": "calendar_date"}}},
                    "then": {
                        "properties": {"entity_id": {"type": "string", "format": "date", "pattern": _DAY}}
                    },
                }
            },
        },
    )

    title: Annotated[str | None, Field(max_length=200)] = None
    context_type: ContextType = "global"
    entity_id: Annotated[str | None, Field(max_length=64)] = None
    token_limit: Annotated[int | None, Field(ge=TOKEN_LIMIT_MIN)] = None


class Rename(BaseModel):
    """A new title, a new budget (``token_limit``), or both."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"minProperties": 1})

    title: (
        Annotated[str, Field(min_length=1, max_length=200, json_schema_extra=_NOT_BLANK)]
        | SkipJsonSchema[None]
    ) = None
    token_limit: Annotated[int, Field(ge=TOKEN_LIMIT_MIN)] | SkipJsonSchema[None] = None


def _token_limit(engine: ChatEngine, value: int | None) -> int | None:
    """``value`` checked against what the server allows (``None``: the server's budget).

    At least :func:`budget_floor` (below it every turn would fail: the guaranteed layers would not
    fit), at most the server's budget.
    """
    most = engine.budget.available
    if value is None:
        return None
    least = min(budget_floor(engine), most)
    if value < least:
        raise ApiError(
            422,
            f"token_limit {value:,} is too small: the smallest budget that works is {least:,} tokens "
            f"(the system prompt, the {len(engine.registry)} tools' definitions and a message must always "
            f"fit); send {least:,} or more",
        )
    if value > most:
        raise ApiError(
            422,
            f"token_limit must be between {least:,} and {most:,} tokens (the server's budget: "
            f"its window less the answer's reserve), got {value:,}; start the server with a larger "
            "--budget to allow more",
        )
    return value


class NewMessage(BaseModel):
    """The user's message."""

    model_config = ConfigDict(extra="forbid")

    content: Annotated[str, Field(min_length=1, max_length=100_000, json_schema_extra=_NOT_BLANK)]


def _ctx(request: Request) -> tuple[Store, ChatEngine, str]:
    state = request.app.state
    return state.store, state.engine, state.user_of(request)


def _json(value: Any) -> Any:
    return to_jsonable_python(value)


@router.post("/chats", status_code=201, responses={201: {"model": ChatOut, "description": "The chat"}})
def create_chat(body: NewChat, request: Request) -> Any:
    """Create a chat: global, on the calendar, on one day of it, or on one of the user's projects or tasks.

    A project or task chat needs ``entity_id``, the id of one of the user's projects or tasks
    (another user's is a 404 like an unknown one); a ``calendar_date`` chat the day (YYYY-MM-DD);
    a global or calendar chat takes none. ``token_limit`` sets the chat's budget (422 outside
    1,000 … the server's budget).
    """
    store, engine, user = _ctx(request)
    entity = body.entity_id.strip(_BLANK_CHARS) or None if body.entity_id else None
    if body.context_type == "calendar_date":
        entity = body.entity_id  # the day exactly as the schema states it (YYYY-MM-DD)
    check_location(store, user, body.context_type, entity)
    limit = _token_limit(engine, body.token_limit)
    chat = store.create_chat(user, context_type=body.context_type, entity_id=entity, token_limit=limit)
    if body.title and body.title.strip():
        chat = store.rename_chat(user, chat.id, body.title.strip())
    return _described(store, engine, user, [chat])[0]


def _described(store: Store, engine: ChatEngine, user: str, chats: list[Chat]) -> list[dict[str, Any]]:
    """:func:`describe`, with each chat's ``token_limit`` the budget its packs get."""
    out = describe(store, user, chats)
    for chat, record in zip(chats, out, strict=True):
        record["token_limit"] = chat_budget(engine.budget, chat).available
    return out


@router.get("/chats", responses={200: {"model": ChatList, "description": "The chats"}})
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
    store, engine, user = _ctx(request)
    hidden = () if include_superseded or context_type == RETIRED else (RETIRED,)
    found = store.list_chats(
        user, context_type=context_type, entity_id=entity_id, limit=limit, exclude_context_types=hidden
    )
    return {"chats": _described(store, engine, user, found)}


@router.get("/chats/{chat_id}", responses={200: {"model": RunningChat, "description": "The chat"}})
def get_chat(chat_id: str, request: Request) -> Any:
    """One chat, with its ``context`` and whether a turn is running."""
    store, engine, user = _ctx(request)
    chat = _described(store, engine, user, [store.get_chat(user, chat_id)])[0]
    return {**chat, "running": request.app.state.running.is_running(user, chat_id)}


@router.patch("/chats/{chat_id}", responses={200: {"model": ChatOut, "description": "The chat"}})
def rename_chat(chat_id: str, body: Rename, request: Request) -> Any:
    """Rename a chat, change its budget (``token_limit``, used from its next pack), or both."""
    store, engine, user = _ctx(request)
    nulls = sorted(name for name in body.model_fields_set if getattr(body, name) is None)
    if nulls:
        raise ApiError(422, f"{', '.join(nulls)} cannot be null; leave it out to keep it")
    if body.title is None and body.token_limit is None:
        raise ApiError(422, "nothing to change; send a title, a token_limit, or both")
    title = body.title.strip() if body.title is not None else None
    if title == "":
        raise ApiError(422, "the title is empty; send some text")
    chat = store.get_chat(user, chat_id)
    if body.token_limit is not None:
        chat = store.update_chat(user, chat_id, token_limit=_token_limit(engine, body.token_limit))
    if title is not None:
        chat = store.rename_chat(user, chat_id, title)
    return _described(store, engine, user, [chat])[0]


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
        record.pop("tool_results", None)  # never written: a call's result is its tool message
        if message.id in calls:
            record["tool_executions"] = calls[message.id]
        out.append(record)
    return {"messages": out}


PING_SECONDS = 15.0  # a turn's stream quiet this long (a slow tool, a slow model) sends a comment

_TURN_EVENTS = {
    "description": "The turn as server-sent events (text, tool calls, usage… then one done)",
    "content": {"text/event-stream": {"schema": SSE_EVENT}},
}


@router.post("/chats/{chat_id}/messages", response_class=EventStream, responses={200: _TURN_EVENTS})
async def post_message(chat_id: str, body: NewMessage, request: Request) -> EventStream:
    """Send the user's message and stream the turn as server-sent events."""
    store, engine, user = _ctx(request)
    row = store.get_chat(user, chat_id)  # 404 before the stream starts
    if not body.content.strip():
        raise ApiError(422, "the message is empty; send some text")
    running: RunningTurns = request.app.state.running
    stop = await running.start(user, chat_id)  # 409 if a turn runs in the chat, in any process

    async def events() -> AsyncIterator[bytes]:
        async with running.held(user, chat_id, stop):  # no other turn can start now: row stays true
            async for event in engine.turn(user, chat_id, body.content, stop=stop, row=row):
                if isinstance(event, TextEvent):  # most of a turn's events: written directly
                    yield frame("text", json.dumps({"text": event.text, "type": "text"}))
                    continue
                payload = event.to_dict()
                yield frame(str(payload.get("type", "message")), json.dumps(_json(payload)))

    return EventStream(events(), ping_s=PING_SECONDS)


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


def _session_chat(store: Store, user: str, session_id: str) -> Chat:
    """The chat ``session_id`` names: its id, or an OpenAI-compatible session's key.

    The key is what ``/v1`` answers in ``X-Tierwise-Session``; the chat id in ``X-Tierwise-Chat``.
    """
    try:
        return store.get_chat(user, session_id)
    except NotFoundError:
        found = store.list_chats(user, context_type=CONTEXT_TYPE, entity_id=entity_id(session_id), limit=1)
        if not found:
            raise
        return found[0]


@router.get("/context/status", responses={200: {"model": ContextStatus, "description": "The status"}})
def context_status(request: Request, session_id: Annotated[str, Query(alias="sessionId")]) -> Any:
    """Seed 004's status: the last pack's breakdown, budget health and band, totals, last update.

    ``sessionId`` is a chat's id or a ``/v1`` session's key (its ``X-Tierwise-Session``).

    ``budgetPercent`` is the last pack's tokens as a share of its budget (``null`` before the first
    pack), whatever the spending limits (their side is ``budgetHealth``); ``tierBreakdown`` seed
    004's tiers 1–4 (``tier``, ``name``, ``tokens``, ``items``, ``percent`` of the pack, ``layers``);
    both are the running turn's latest pack while one runs in this process (``live: true``).
    ``currentContext`` is where the chat is (``type``, ``entityId``, ``name``) and the tokens its
    location took; ``strategy`` the pruning band in force (``band``, ``historyMessages``,
    ``relatedItems``, ``references``) and ``reason``, one sentence why; ``tokenLimit`` the chat's
    budget; ``spending.warning`` says when a dollar limit cannot work (the model has no price).

    ``cache`` is the chat's prompt caching: ``hitShare`` of its prompt tokens served from the model's
    cache (``source: "provider"``), or expected from the prefixes its packs repeated when the model
    reported none (``source: "expected"``); ``savedDollars`` the cache saved; ``lastPackPrefixTokens``
    what the last pack repeated of the one before (``null`` when it had none to compare with).
    """
    store, engine, user = _ctx(request)
    chat = _session_chat(store, user, session_id)
    session_id = chat.id
    snapshot = store.latest_snapshot(user, session_id)
    cache = chat_totals(store, user, chat).cache()
    last = (snapshot.tier_breakdown.get("total") or {}) if snapshot is not None else {}
    health = engine.guard.health(user, session_id) if engine.guard is not None else None
    band = engine.guard.band_at(health) if engine.guard is not None else None  # one read of the spend
    budget = chat_budget(engine.budget, chat)
    live = engine.live.get((user, session_id))
    return {
        "sessionId": session_id,
        "running": request.app.state.running.is_running(user, session_id),
        "budget": {"window": budget.window, "reserve": budget.reserve, "available": budget.available},
        "tokenLimit": budget.available,
        **pack_status(snapshot, live),
        "currentContext": current_context(store, user, chat, snapshot, live),
        "strategy": strategy(engine.guard, band, health),
        "spending": spending_status(engine.guard, engine.prices, engine.model or engine.provider.model),
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
    """What the dashboard shows: the last pack's layers (and why), usage per turn, compactions.

    The pack's ``input`` says what its ``input`` layer (the turn so far) holds: ``question_tokens``
    and the ``tool_calls`` made before it (``null`` when the question is not found).
    """
    store, _, user = _ctx(request)
    chat = store.get_chat(user, chat_id)
    packs = store.list_audit(user, chat_id=chat_id, event="pack", limit=1)
    done = store.list_audit(user, chat_id=chat_id, event="turn", limit=turns)
    compactions = compaction_steps(store.list_audit(user, chat_id=chat_id, event="compaction", limit=500))
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
        "pack": {
            **packs[0].details,
            "checksum": packs[0].checksum,
            "at": _json(packs[0].created_at),
            "input": turn_input(store, user, chat, packs[0].created_at),
        }
        if packs
        else None,
        "turns": per_turn,
        "compactions": compactions,
    }
