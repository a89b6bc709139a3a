"""One turn's state while it runs, its collected result, and what is recorded of it once it is done."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from tierwise.budget import Budget, band_for_health
from tierwise.chat import housekeeping
from tierwise.chat.costguard import CostGuard
from tierwise.chat.events import DoneEvent, DoneReason, ErrorEvent, Notice, TextEvent, TurnEvent, UsageEvent
from tierwise.chat.recap import history_recap, turn_recap
from tierwise.chat.trace import Tracer
from tierwise.chat.usage import ToolUsage, usage_report
from tierwise.errors import InputError
from tierwise.memory.compaction import CompactionEvent
from tierwise.memory.persist import ChatMemory
from tierwise.packing.layers import ContextLayer
from tierwise.packing.report import Pack, PackReport
from tierwise.providers.base import (
    Event,
    Fallback,
    ModelRequest,
    ModelResponse,
    Provider,
    Retry,
    TextDelta,
    ToolCall,
    Usage,
    aclose,
    collect,
)
from tierwise.providers.pricing import Price, cache_savings, cost
from tierwise.store import Chat
from tierwise.store.faults import storage_fault
from tierwise.tools.offering import MORE_TOOLS, OfferView, Toolbox, ToolOffering, offered
from tierwise.tools.registry import ToolRegistry
from tierwise.tools.results import ToolResult

__all__ = [
    "CREATING_TOOLS",
    "TurnResult",
    "TurnState",
    "account",
    "account_side_call",
    "cancel_when",
    "chat_budget",
    "created_entities",
    "current_messages",
    "failure_event",
    "finish_turn",
    "last_step_note",
    "not_stored",
    "seen_text",
    "step_tools",
    "store_tool_results",
    "stream_call",
    "turn_start",
    "usage_of",
    "waiting",
]

log = logging.getLogger(__name__)


@dataclass
class TurnResult:
    """A whole turn, collected (see :meth:`ChatEngine.run`)."""

    events: list[TurnEvent]
    done: DoneEvent

    @property
    def text(self) -> str:
        """The final answer (the partial answer if the turn was stopped)."""
        return self.done.text

    @property
    def error(self) -> ErrorEvent | None:
        """The error, if the turn failed or was refused."""
        return next((e for e in self.events if isinstance(e, ErrorEvent)), None)

    @property
    def usage(self) -> UsageEvent | None:
        """The turn's usage, if any model call was made."""
        return next((e for e in self.events if isinstance(e, UsageEvent)), None)


@dataclass
class TurnState:
    """The state of one turn in flight (the engine's); the finaliser reads it after a stop or failure."""

    user_id: str
    chat_id: str
    chat: ChatMemory
    start: int  # index of the turn's user message in memory
    tracer: Tracer
    queue: asyncio.Queue[Any] = field(default_factory=asyncio.Queue)
    steps: int = 0
    seqs: list[int] = field(default_factory=list)
    reports: list[PackReport] = field(default_factory=list)
    tool_usage: list[ToolUsage] = field(default_factory=list)
    response_tokens: int = 0
    reported: Usage | None = None
    counted_prompt: int = 0
    dollars: float = 0.0
    saved_dollars: float = 0.0  # what the model's cache saved (cached tokens at full input price, less)
    price_known: bool = True
    model: str = ""
    reason: DoneReason = "answer"
    error: ErrorEvent | None = None
    answer: str = ""
    answered: bool = False
    titled: bool = False  # the chat had a title before this turn (generated, or named by the user)
    finished_at: float | None = None  # perf_counter when done was emitted
    usage: UsageEvent | None = None
    records: list[tuple[Pack, list[CompactionEvent]]] = field(default_factory=list)
    whole: dict[int, str] = field(default_factory=dict)  # memory index → a tool result in full
    title: str | None = None
    budget: Budget | None = None  # the chat's (its token_limit), else the engine's
    row: Chat | None = None  # the chat's row as the turn began (its context, offering, budget)
    side_tokens: int = 0  # tokens of the turn's side calls (its title): spend, not the answer's
    created: list[dict[str, Any]] = field(default_factory=list)  # entities its tool calls made
    # what is in flight, for the finaliser
    partial: list[str] = field(default_factory=list)
    pending_calls: list[ToolCall] = field(default_factory=list)
    finished: dict[str, ToolResult] = field(default_factory=dict)
    started: set[str] = field(default_factory=set)

    def emit(self, event: TurnEvent) -> None:
        """Hand ``event`` to the caller streaming the turn."""
        self.queue.put_nowait(event)


def account(t: TurnState, response: ModelResponse, model: str, prices: Mapping[str, Price] | None) -> None:
    """Add one model call to the turn: tokens produced (counted if not reported), usage, dollars.

    Dollars price the model's cached prompt tokens at the cached rate; ``saved_dollars`` adds what
    that saved.
    """
    counter = t.chat.memory.counter
    produced = counter.count(response.text) + sum(
        counter.count(c.name) + counter.count(c.arguments) for c in response.tool_calls
    )
    t.response_tokens += produced
    t.model = response.model or t.model
    usage = response.usage or Usage(
        t.reports[-1].total_tokens, produced, t.reports[-1].total_tokens + produced
    )
    if response.usage is not None:
        t.reported = usage if t.reported is None else t.reported + usage
    priced = cost(usage, model, prices=prices)
    t.dollars += priced.dollars
    t.saved_dollars += cache_savings(usage, model, prices=prices)
    t.price_known = t.price_known and priced.known


def chat_budget(default: Budget, chat: Any) -> Budget:
    """The budget of a chat's packs: ``default`` with the chat's ``token_limit`` as what prompts may use.

    Example:
        >>> chat_budget(Budget(window=16_000, reserve=1_000), type("C", (), {"token_limit": 8_000})).window
        9000
    """
    limit = getattr(chat, "token_limit", None)
    if not isinstance(limit, int) or limit <= 0 or limit == default.available:
        return default
    return replace(default, window=limit + default.reserve)


def account_side_call(
    t: TurnState, request: ModelRequest, response: ModelResponse, prices: Mapping[str, Price] | None
) -> None:
    """Add a call made for the turn but not part of its answer (the chat's title) to its spend.

    Its tokens (reported, else counted) and dollars go to the cost guard and the usage ledger with
    the turn's; the answer's prompt and completion figures stay the answer's.
    """
    counter = t.chat.memory.counter
    usage = response.usage or Usage(counter.count_messages(request.messages), counter.count(response.text), 0)
    model = response.model or request.model or t.model
    priced = cost(usage, model, prices=prices)
    t.side_tokens += usage.prompt_tokens + usage.completion_tokens
    t.dollars += priced.dollars
    t.price_known = t.price_known and priced.known


CREATING_TOOLS = ("create_", "schedule_", "add_")
"""Tool name prefixes of calls that make something (seed 001: ``create_task``, ``schedule_task``)."""


def created_entities(result: ToolResult, step: int) -> list[dict[str, Any]]:
    """What a successful creating call made: ``{"type", "id", "title", "tool", "step"}`` per record.

    A record is a top-level value of the result that is an object with an ``id`` (``{"task": {...}}``,
    ``{"event": {...}}``).
    """
    if not result.success or not result.name.startswith(CREATING_TOOLS) or not isinstance(result.data, dict):
        return []
    out = []
    for kind, value in result.data.items():
        if isinstance(value, dict) and isinstance(value.get("id"), str):
            title = value.get("title") or value.get("name") or value.get("summary")
            out.append({"type": kind, "id": value["id"], "title": title, "tool": result.name, "step": step})
    return out


def usage_of(t: TurnState, guard: CostGuard | None) -> UsageEvent | None:
    """The turn's usage event (``None`` if no model call was made); its spend recorded by ``guard``."""
    if not t.reports:
        return None
    prompt = t.reported.prompt_tokens if t.reported else t.counted_prompt
    completion = t.reported.completion_tokens if t.reported else t.response_tokens
    cached = min(t.reported.cached_tokens, prompt) if t.reported else None
    prefixes = [r.prefix_tokens for r in t.reports if r.prefix_tokens is not None]
    report = usage_report(
        t.reports,
        tool_calls=t.tool_usage,
        response_tokens=t.response_tokens,
        prompt_tokens_reported=t.reported.prompt_tokens if t.reported else None,
        completion_tokens_reported=t.reported.completion_tokens if t.reported else None,
        cached_tokens_reported=cached,
    )
    health = band = None
    if guard is not None:
        guard.record(
            t.user_id,
            t.chat_id,
            tokens=prompt + completion + t.side_tokens,
            dollars=t.dollars,
            cached_tokens=cached or 0,
        )
        health = guard.health(t.user_id, t.chat_id)
        band = band_for_health(health, guard.bands) if health is not None else None
    return UsageEvent(
        report.to_dict(),
        prompt,
        completion,
        round(t.dollars, 6),
        t.price_known,
        health,
        band.name if band else None,
        cached,
        sum(prefixes) if prefixes else None,
        round(t.saved_dollars, 6),
        len(t.reports),
    )


async def stream_call(t: TurnState, provider: Provider, request: ModelRequest) -> ModelResponse:
    """Stream one model call: text goes out as it comes (retries and fallbacks as notices).

    Returns the response, assembled.
    """

    async def tee(stream: AsyncIterator[Event]) -> AsyncIterator[Event]:
        try:
            async for event in stream:
                if isinstance(event, TextDelta):
                    t.partial.append(event.text)
                    t.emit(TextEvent(event.text))
                elif isinstance(event, Retry):
                    t.emit(Notice("retry", f"{event.model}: {event.error}; retrying in {event.delay:.1f} s"))
                    t.tracer.event("model.retry", **asdict(event))
                elif isinstance(event, Fallback):
                    said = f"{event.from_model} failed ({event.error}); using {event.to_model}"
                    t.emit(Notice("fallback", said))
                    t.tracer.event("model.fallback", **asdict(event))
                yield event
        finally:
            await aclose(stream)

    return await collect(tee(provider.stream(request)))


_LAST_STEP = (
    "This is the last step of this turn: tools are not available now. Answer the user with "
    "what you have, and say what is still open."
)


def last_step_note() -> ContextLayer:
    """The last step's note, in the tail (the system prompt before it stays as it was)."""
    return ContextLayer("last_step", "notice", _LAST_STEP, guaranteed=True, title="Note", placement="tail")


def seen_text(memory: Any, upto: int, layers: Sequence[ContextLayer], registry: ToolRegistry) -> str:
    """The text a turn's prompts show before the turn: context layers, then working memory's history.

    Earlier tool results are read as they are sent (their recaps); it is what a
    :class:`~tierwise.tools.offering.ToolOffering` searches for ids a tool can take.
    """
    parts = [layer.content for layer in layers if isinstance(layer.content, str)]
    recap = history_recap(registry)
    history = memory.window_groups().messages  # as a pack sends them
    for message in history[memory.live_from : upto]:
        shown = (recap(message) if recap is not None and message.get("role") == "tool" else None) or message
        content = shown.get("content")
        if isinstance(content, str):
            parts.append(content)
    return "\n".join(parts)


def step_tools(
    registry: ToolRegistry,
    offering: ToolOffering | None,
    memory: Any,
    step: int,
    current: Sequence[Mapping[str, Any]],
    seen: str,
    chat: Chat | None,
    toolbox: Toolbox | None = None,
) -> list[dict[str, Any]]:
    """The tool definitions one model call of a turn is sent (``current``: the turn so far).

    Without an offering: every tool, the retrieval tools once the chat has a past
    (:func:`~tierwise.chat.housekeeping.offered`). With one: what it picks for this step
    (:func:`~tierwise.tools.offering.offered`: the turn's tools stay, the escape names the rest),
    after every tool the chat was offered before if there is a ``toolbox`` (its list only grows).
    """
    if offering is None:  # every tool (the escape has nothing to offer)
        return [
            d
            for d in housekeeping.offered(registry.definitions(), memory)
            if d["function"]["name"] != MORE_TOOLS
        ]
    first = current[0] if current and current[0].get("role") == "user" else None
    message = first.get("content") if first is not None else ""
    view = OfferView(
        step=step,
        message=message if isinstance(message, str) else "",
        turn=current[1:] if first is not None else current,
        seen=seen,
        location=(chat.context_type, chat.entity_id) if chat is not None else ("global", None),
        segments=memory.live_from > 0,
    )
    if toolbox is not None and chat is not None:
        return toolbox.offered((chat.user_id, chat.id), registry, offering, view)
    return offered(registry, offering, view)


_STOPPED_CALL = "stopped by the user before {name} finished; its effect, if any, is unknown"
_NOT_RUN = "not run: the turn was stopped before this call started"


def pack_step(
    chat: ChatMemory,
    registry: ToolRegistry,
    system: str,
    budget: Budget,
    current: Sequence[Mapping[str, Any]],
    guard: tuple[Any, float | None],
    start: int,
    extra: Sequence[ContextLayer],
    last: bool,
    tools: list[dict[str, Any]],
) -> Pack:
    """One model call's pack: the turn so far with memory, ``tools`` offered with their guide.

    ``guard`` is the cost guard's pruning band and health; audited and snapshotted after done.
    """
    band, health = guard
    return chat.pack(
        budget,
        turn_recap(current, registry),  # lists the turn moved on from
        system=housekeeping.guided(system, tools),
        tools=tools,
        band=band,
        health=health,
        upto=start,
        layers=[*extra, last_step_note()] if last and tools else extra,
        record=False,  # audited and snapshotted after done, off the answer's path
        recap=history_recap(registry),  # earlier turns' results: recaps (chat/recap.py)
    )


def failure_event(exc: Exception, chat_id: str, what: str) -> ErrorEvent:
    """The exception that ended a turn as its error event: a storage fault says ``what`` was not stored.

    Anything else is an internal error, logged with its traceback.
    """
    why = storage_fault(exc)
    if why is None:
        log.error("turn in chat %s failed", chat_id, exc_info=exc)
        message = f"internal error ({type(exc).__name__}: {exc}); what was said so far is stored"
        return ErrorEvent(message, kind="internal")
    log.error("%s in chat %s could not be stored: %s", what, chat_id, why)
    return ErrorEvent(f"{what} could not be stored: {why}", kind="storage")


def finish_turn(
    t: TurnState, guard: CostGuard | None, whole_limit: int | None, seconds: float
) -> list[TurnEvent]:
    """Store what a stop or failure left in flight and account the turn; the events that end it.

    The events (the error, usage, done) are the caller's to emit once what this stored is committed:
    a turn whose end could not be stored says so instead (decision 77).
    """
    chat = t.chat
    if t.pending_calls:  # stopped while tools ran: every call gets its result message
        store_tool_results(t, whole_limit)
    text = "".join(t.partial)
    if text:  # stopped or failed mid-answer: keep the text, marked
        meta: dict[str, Any] = {"stopped": t.reason == "stopped", "partial": True, "step": t.steps}
        if t.error is not None:
            meta["error"] = t.error.message
        t.seqs.append(chat.add({"role": "assistant", "content": text}, metadata=meta).seq)
        t.answer = text
        t.partial.clear()
    events: list[TurnEvent] = [t.error] if t.error is not None else []
    usage = usage_of(t, guard)
    if usage is not None:
        events.append(usage)
    t.tracer.event("turn.done", reason=t.reason, steps=t.steps, seconds=round(seconds, 4))
    t.usage = usage
    events.append(DoneEvent(t.chat_id, t.reason, t.answer, t.steps, list(t.seqs), t.title, t.tracer.trace_id))
    return events


def store_tool_results(t: TurnState, whole_limit: int | None) -> None:
    """One tool message per pending call, in call order; calls cut off by a stop say so.

    A result memory stores compressed (a blob) but of at most ``whole_limit`` tokens (``None``: any
    size; the step being answered cuts one too large for its share: memory/assemble.py) is read
    whole for the rest of the turn.
    """
    counter = t.chat.memory.counter
    for call in t.pending_calls:
        result = t.finished.get(call.id)
        if result is not None:
            content, meta = result.content, {"success": result.success}
        else:
            content = _STOPPED_CALL.format(name=call.name) if call.id in t.started else _NOT_RUN
            meta = {"success": False, "stopped": True}
        message = {"role": "tool", "tool_call_id": call.id, "name": call.name, "content": content}
        t.tool_usage.append(ToolUsage(call.name, counter.count(call.arguments), counter.count(content)))
        t.seqs.append(t.chat.add(message, metadata=meta).seq)
        index = len(t.chat.memory.messages) - 1
        shown = t.chat.memory.messages[index].get("content")
        if shown != content and (whole_limit is None or counter.count(content) <= whole_limit):
            t.whole[index] = content  # stored as a blob for history; the model reads it whole now
    t.pending_calls = []


def not_stored(chat_id: str, why: str) -> list[TurnEvent]:
    """The turn's end when the user's message could not be stored: the error, and done."""
    log.error("storing a message in chat %s failed: %s", chat_id, why)
    return [ErrorEvent(f"your message was not stored: {why}", kind="storage"), DoneEvent(chat_id, "error")]


def waiting(message: Mapping[str, Any]) -> bool:
    """Whether ``message`` still needs the model: a user message, or a tool result."""
    return message.get("role") in ("user", "tool")


async def cancel_when(stop: asyncio.Event, task: asyncio.Task[Any], turn: TurnState) -> None:
    """Cancel the turn's ``task`` when ``stop`` is set, unless the turn is done."""
    await stop.wait()
    if turn.finished_at is None:  # a stop after done has nothing left to stop
        task.cancel()


def turn_start(messages: Sequence[Mapping[str, Any]], content: str | None) -> int:
    """Where a turn starts in the chat's messages: after them for a new message, else its user message.

    Raises:
        InputError: ``content`` is ``None`` (resume) but the last message has been answered.
    """
    if content is not None:
        return len(messages)
    if not messages or not waiting(messages[-1]):
        raise InputError("nothing to resume: the chat's last message has been answered; send a message")
    return max(i for i, m in enumerate(messages) if m.get("role") == "user")


def current_messages(t: TurnState) -> list[Mapping[str, Any]]:
    """The turn so far, as the model should read it: its own tool results whole (within bounds)."""
    messages = t.chat.memory.messages
    return [
        {**messages[i], "content": t.whole[i]} if i in t.whole else messages[i]
        for i in range(t.start, len(messages))
    ]
