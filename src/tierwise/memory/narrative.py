"""The narrative (seed 003's layer 0): the always-present story of the conversation, ≤ 300 tokens.

It holds the overall narrative, the current objective, key achievements, active entities, where
things stand and the next steps. It is updated incrementally, by merging what each closed segment
adds into what is already there, never rebuilt from scratch; an update that would leave it empty or
over its cap is refused and the previous narrative stays (and the refusal is logged).

The model can also update it through a housekeeping tool (the chat engine): :meth:`Narrative.merge`
accepts partial updates and keeps the rest.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from tierwise.memory.scrub import Scrubber
from tierwise.summarize.extractive import split_sentences
from tierwise.tokens import TokenCounter

__all__ = ["NARRATIVE_TOKENS", "Narrative"]

log = logging.getLogger(__name__)

NARRATIVE_TOKENS = 300
_ACHIEVED = re.compile(
    r"\b(done|finished|completed|created|scheduled|booked|decided|agreed|shipped|sent)\b", re.I
)
_NEXT = re.compile(r"\b(will|next|tomorrow|plan(?:ning)? to|need to|going to|should|todo|later)\b", re.I)
_ASK = re.compile(
    r"\?\s*$|^(please|can you|could you|help|let'?s|i want|i need|find|show|create|schedule)\b", re.I
)


@dataclass(frozen=True)
class Narrative:
    r"""The current-context summary. Immutable: updates return a new one.

    Example:
        >>> n = Narrative().merge(objective="Plan the Q4 launch.", entities=["Dana"])
        >>> n.render()
        'Objective: Plan the Q4 launch.\nActive: Dana'
    """

    story: tuple[str, ...] = ()  # one or two sentences per stretch of conversation, oldest first
    objective: str = ""
    achievements: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()
    state: str = ""
    next_steps: tuple[str, ...] = ()
    updated_at: datetime | None = field(default=None, compare=False)

    def render(self) -> str:
        """The text that goes into the pack."""
        lines = []
        if self.story:
            lines.append("Story: " + " ".join(self.story))
        if self.objective:
            lines.append("Objective: " + self.objective)
        if self.achievements:
            lines.append("Achieved: " + "; ".join(self.achievements))
        if self.entities:
            lines.append("Active: " + ", ".join(self.entities))
        if self.state:
            lines.append("Now: " + self.state)
        if self.next_steps:
            lines.append("Next: " + "; ".join(self.next_steps))
        return "\n".join(lines)

    def is_empty(self) -> bool:
        """True if there is nothing to render."""
        return not self.render()

    def merge(
        self,
        *,
        story: str | None = None,
        objective: str | None = None,
        achievements: Sequence[str] = (),
        entities: Sequence[str] = (),
        state: str | None = None,
        next_steps: Sequence[str] | None = None,
        at: datetime | None = None,
    ) -> Narrative:
        """A new narrative with these additions; fields not given are kept."""
        return replace(
            self,
            story=(*self.story, story) if story else self.story,
            objective=objective or self.objective,
            achievements=_merge_items(self.achievements, achievements, keep=6),
            entities=_merge_items(self.entities, entities, keep=8, newest_first=True),
            state=state or self.state,
            next_steps=tuple(next_steps) if next_steps is not None else self.next_steps,
            updated_at=at or self.updated_at,
        )

    def fit(self, counter: TokenCounter, max_tokens: int = NARRATIVE_TOKENS) -> Narrative:
        """This narrative shortened to ``max_tokens``: oldest story sentences and items go first."""
        current = self
        while counter.count(current.render()) > max_tokens:
            if len(current.story) > 1:
                current = replace(current, story=current.story[1:])
            elif len(current.achievements) > 2:
                current = replace(current, achievements=current.achievements[1:])
            elif len(current.entities) > 3:
                current = replace(current, entities=current.entities[:-1])
            elif len(current.next_steps) > 1:
                current = replace(current, next_steps=current.next_steps[:-1])
            elif current.story:
                current = replace(current, story=())
            elif current.achievements:
                current = replace(current, achievements=current.achievements[1:])
            else:
                break
        return current

    def update_from_segment(
        self,
        *,
        summary: str,
        header: str,
        entities: Sequence[str],
        texts: Sequence[tuple[str, str]],
        counter: TokenCounter,
        scrubber: Scrubber | None = None,
        at: datetime | None = None,
        max_tokens: int = NARRATIVE_TOKENS,
    ) -> Narrative:
        """Merge what a closed segment adds; refuse (keep ``self``) if the result would be empty.

        Args:
            summary: the segment's summary; its first sentence joins the story.
            header: the segment's header; it becomes "where things stand".
            entities: the segment's key entities.
            texts: ``(role, text)`` of its turns, to find the objective, achievements and next steps.
            counter: to enforce ``max_tokens``.
            scrubber: applied to everything the narrative takes in.
            at: when the segment ended.
            max_tokens: the narrative's cap.
        """
        clean = scrubber.scrub_text if scrubber is not None else (lambda s: s)
        first = split_sentences(summary)[:1]
        objective = next((clean(t) for role, t in reversed(texts) if role == "user" and _ASK.search(t)), None)
        sentences = [s for role, t in texts if role != "tool" for s in split_sentences(t)]
        achieved = [clean(s) for s in sentences if _ACHIEVED.search(s) and len(s) < 160][-2:]
        upcoming = [clean(s) for s in sentences if _NEXT.search(s) and len(s) < 160][-3:]
        merged = self.merge(
            story=clean(first[0]) if first else None,
            objective=_short(objective) if objective else None,
            achievements=achieved,
            entities=list(entities),
            state=clean(header) or None,
            next_steps=upcoming or None,
            at=at,
        ).fit(counter, max_tokens)
        if merged.is_empty() and not self.is_empty():
            log.warning("narrative update refused: it would leave the narrative empty")
            return self
        return merged

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (stored in chats.narrative)."""
        return {
            "story": list(self.story),
            "objective": self.objective,
            "achievements": list(self.achievements),
            "entities": list(self.entities),
            "state": self.state,
            "next_steps": list(self.next_steps),
            "updated_at": self.updated_at.isoformat() if self.updated_at else None,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Narrative:
        """The inverse of :meth:`to_dict`."""
        updated = data.get("updated_at")
        return cls(
            story=tuple(data.get("story", ())),
            objective=data.get("objective", ""),
            achievements=tuple(data.get("achievements", ())),
            entities=tuple(data.get("entities", ())),
            state=data.get("state", ""),
            next_steps=tuple(data.get("next_steps", ())),
            updated_at=datetime.fromisoformat(updated) if updated else None,
        )


def _merge_items(
    old: Sequence[str], new: Sequence[str], *, keep: int, newest_first: bool = False
) -> tuple[str, ...]:
    if newest_first:
        merged = list(dict.fromkeys([*new, *old]))
        return tuple(merged[:keep])
    merged = list(dict.fromkeys([*old, *new]))
    return tuple(merged[-keep:])


def _short(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rsplit(" ", 1)[0] + "…"
