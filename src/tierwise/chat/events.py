"""What a turn streams to its caller (seed 002's ``StreamChunk``, typed).

Every turn yields zero or more :class:`TextEvent`, :class:`ToolCallStart`, :class:`ToolCallComplete`,
:class:`Notice` and :class:`UsageEvent`, at most one :class:`ErrorEvent`, and always ends with exactly
one :class:`DoneEvent`. ``to_dict()`` gives the JSON the service sends as server-sent events; its
``type`` field is the SSE event name.
"""

from __future__ import annotations

import asyncio
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

__all__ = [
    "DoneEvent",
    "DoneReason",
    "ErrorEvent",
    "Notice",
    "TextEvent",
    "ToolCallComplete",
    "ToolCallStart",
    "TurnEvent",
    "UsageEvent",
    "joined_text",
]

DoneReason = Literal["answer", "stopped", "step_limit", "error", "refused"]
"""Why a turn ended: an answer, a stop request, the step limit, a failure, or a refusal (cost guard, busy)."""


@dataclass(frozen=True, slots=True)
class TextEvent:
    """A piece of the answer's text, as the model streams it."""

    text: str
    type: Literal["text"] = "text"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return asdict(self)


@dataclass(frozen=True, slots=True)
class ToolCallStart:
    """A tool call is about to run (its arguments are complete)."""

    call_id: str
    name: str
    arguments: str
    step: int
    type: Literal["tool_call_start"] = "tool_call_start"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return asdict(self)


@dataclass(frozen=True, slots=True)
class ToolCallComplete:
    """A tool call ran: what the model will read, and whether it worked."""

    call_id: str
    name: str
    content: str
    success: bool
    duration_ms: int
    error: str | None = None
    blob_sha256: str | None = None
    type: Literal["tool_call_complete"] = "tool_call_complete"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return asdict(self)


@dataclass(frozen=True, slots=True)
class Notice:
    """Something the user may want to know that is not part of the answer (a retry, a fallback model)."""

    kind: Literal["retry", "fallback"]
    message: str
    type: Literal["notice"] = "notice"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return asdict(self)


@dataclass(frozen=True, slots=True)
class UsageEvent:
    """The turn's token usage (seed 000's TokenUsageReport), cost and budget health.

    Prompt caching: ``cached_tokens`` are the prompt tokens the model reported as served from its
    cache (``None`` when it reported no usage); ``prefix_tokens`` the tokens the turn's packs repeated
    of the pack before each (the expected cache hit; ``None`` when no pack had one to compare with);
    ``saved_dollars`` what the cached tokens saved against the full input price. ``model_calls`` is
    how many model calls the turn made: ``prompt_tokens`` is their sum (each call re-sends its prompt).
    """

    report: dict[str, Any]
    prompt_tokens: int
    completion_tokens: int
    dollars: float
    price_known: bool
    health: float | None = None
    band: str | None = None
    cached_tokens: int | None = None
    prefix_tokens: int | None = None
    saved_dollars: float = 0.0
    model_calls: int = 1
    type: Literal["usage"] = "usage"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready; ``report`` is the event's own dict, not a copy (read it, do not change it)."""
        return {f: getattr(self, f) for f in self.__slots__}  # asdict deep-copies the report


@dataclass(frozen=True, slots=True)
class ErrorEvent:
    """The turn failed or was refused; ``message`` says why and what to do."""

    message: str
    kind: Literal["provider", "budget", "busy", "storage", "internal"] = "provider"
    retryable: bool = False
    type: Literal["error"] = "error"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return asdict(self)


@dataclass(frozen=True, slots=True)
class DoneEvent:
    """The turn is over; everything it produced is stored.

    Attributes:
        chat_id: the chat.
        reason: why it ended (see :data:`DoneReason`).
        text: the final answer's text (the partial text if stopped).
        steps: model calls made.
        message_seqs: positions of the messages stored in this turn, the user's first.
        title: the chat's title, if this turn generated it.
        trace_id: the turn's trace.
    """

    chat_id: str
    reason: DoneReason
    text: str = ""
    steps: int = 0
    message_seqs: list[int] = field(default_factory=list)
    title: str | None = None
    trace_id: str | None = None
    type: Literal["done"] = "done"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return asdict(self)


TurnEvent = TextEvent | ToolCallStart | ToolCallComplete | Notice | UsageEvent | ErrorEvent | DoneEvent
"""Everything a turn yields."""


def joined_text(first: TextEvent, queue: asyncio.Queue[Any]) -> tuple[TextEvent, Any]:
    """``first`` with the text events queued right after it, as one; and the next item taken, if any.

    A caller that reads the turn slower than the model streams it (a busy server) gets the text it
    fell behind on in one event instead of one per chunk: each event costs the caller a send.
    """
    parts, after = [first.text], None
    while not queue.empty():
        item = queue.get_nowait()
        if not isinstance(item, TextEvent):
            after = item
            break
        parts.append(item.text)
    return (TextEvent("".join(parts)) if len(parts) > 1 else first), after
