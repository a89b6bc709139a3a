"""Turns: stored messages as memory sees them.

A :class:`Turn` is one message of a conversation with what memory needs besides the OpenAI fields:
a stable id, its position, who said it and when, and searchable extras that are never shown (an
image caption, the names of tools called). :func:`render_turn` is the one line a turn becomes when
memory puts it into a pack; its text is always verbatim.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tierwise.memory.analysis import Analysis

__all__ = ["Turn", "excerpt", "render_turn", "speaker_line", "turn_from_message"]


@dataclass(frozen=True, slots=True)
class Turn:
    """One message of a conversation, as memory indexes and packs it.

    Args:
        id: stable and unique within the conversation (``"m12"``, or LoCoMo's ``"D3:5"``).
        index: 0-based position in the conversation.
        role: ``user``, ``assistant``, ``tool`` or ``system``.
        text: what the turn said, shown verbatim in packs.
        speaker: who said it (a person's name), if known.
        at: when it was said (timezone-aware), if known.
        extra: searchable text that is never shown (image captions, tool names).
        message: the original OpenAI-format message, if it came from one.
        analysis: its BM25 terms and content words (:mod:`tierwise.memory.analysis`), once made.
    """

    id: str
    index: int
    role: str
    text: str
    speaker: str | None = None
    at: datetime | None = None
    extra: str = ""
    message: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)
    analysis: Analysis | None = field(default=None, compare=False, repr=False)


def render_turn(turn: Turn) -> str:
    """The line a turn becomes in a pack: ``[id · date] speaker: text`` (text verbatim).

    Example:
        >>> from datetime import datetime, timezone
        >>> render_turn(Turn("D1:3", 2, "user", "I went to a support group.", "Caroline",
        ...                  datetime(2023, 5, 7, 13, 56, tzinfo=timezone.utc)))
        '[D1:3 · 2023-05-07] Caroline: I went to a support group.'
    """
    when = f" · {turn.at.date().isoformat()}" if turn.at is not None else ""
    who = turn.speaker or turn.role
    return f"[{turn.id}{when}] {who}: {turn.text}"


def speaker_line(turn: Turn) -> str:
    """A turn as ``speaker: text`` (text verbatim), the line it takes under an :func:`excerpt` heading."""
    return f"{turn.speaker or turn.role}: {turn.text}"


def excerpt(turns: Sequence[Turn], label: Callable[[Turn], str]) -> list[str]:
    """Turns as lines, a ``label`` line opening each run of turns that share it.

    Retrieved turns are shown this way: one heading per segment and day (``[S3 · 2023-07-16]``)
    instead of an id and a date on every line, which leaves room for more of what was said.

    Example:
        >>> turns = [Turn("m1", 1, "user", "Book the venue."), Turn("m2", 2, "assistant", "Booked.")]
        >>> excerpt(turns, lambda t: "[S1]")
        ['[S1]', 'user: Book the venue.', 'assistant: Booked.']
    """
    lines: list[str] = []
    last: str | None = None
    for turn in turns:
        heading = label(turn)
        if heading != last:
            lines.append(heading)
            last = heading
        lines.append(speaker_line(turn))
    return lines


def turn_from_message(message: Mapping[str, Any], index: int, *, at: datetime | None = None) -> Turn:
    """A :class:`Turn` for an OpenAI-format message (tool calls rendered as ``name(arguments)``)."""
    content = message.get("content")
    if isinstance(content, list):
        text = "\n".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    else:
        text = content or ""
    calls = message.get("tool_calls") or ()
    names = []
    for call in calls:
        fn = call.get("function") or {}
        names.append(str(fn.get("name", "")))
        text += ("\n" if text else "") + f"→ {fn.get('name', '')}({fn.get('arguments', '')})"
    return Turn(
        id=str(message.get("id") or f"m{index}"),
        index=index,
        role=str(message.get("role", "")),
        text=text,
        speaker=message.get("name"),
        at=at,
        extra=" ".join(names),
        message=message,
    )
