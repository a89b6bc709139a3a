"""The narrative (seed 003's layer 0): the always-present story of the conversation, ≤ 300 tokens.

It says what the whole conversation is about and where it stands: who takes part, a timeline of
its threads (the distinctive phrases of each closed segment, by day: "8 May 2023: support group,
counselor; 25 May 2023: charity race, adoption"), the current objective, what was decided or done,
the names in play, where things stand and what is open. It is updated incrementally, by merging
what each closed segment adds into what is already there, never rebuilt from scratch; when it
outgrows its cap the oldest timeline entries are compressed (fewer phrases, then merged days)
before anything is dropped, so the start of a long conversation stays in view. An update that would
leave it empty is refused and the previous narrative stays (and the refusal is logged).

When a summary model is configured, ``prose`` holds the model's narrative, merged with each new
segment (never rewritten from scratch); the structured fields are kept up to date beside it and
are what is shown whenever the model's text is missing, rejected or too long for the room.

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
from tierwise.summarize.extractive import content_words, is_filler
from tierwise.summarize.sentences import split_sentences
from tierwise.tokens import TokenCounter

__all__ = ["NARRATIVE_TOKENS", "Narrative", "day_label"]

log = logging.getLogger(__name__)

NARRATIVE_TOKENS = 300
_DECIDED = re.compile(r"\b(decid\w*|decision|agreed|we'll go with|chose|settled on)\b", re.I)
_DECISION_LEAD = re.compile(r"^(?:decision|decided)\s*:\s*", re.I)
_ACHIEVED = re.compile(
    r"\b(finished|completed|created|scheduled|booked|decided|agreed|shipped|sent|fixed|resolved|"
    r"released|merged|deployed|chose|picked|signed|passed|adopted|bought|started|moved)\b",
    re.I,
)
_NEXT = re.compile(
    r"\b(will|next|tomorrow|plan(?:ning)? to|need to|going to|todo|later|thinking about)\b", re.I
)
_ASK = re.compile(
    r"^(please|can you|could you|help me|let'?s|i want|i need|find|show|create|schedule)\b", re.I
)
_PHRASES_PER_DAY = 4


@dataclass(frozen=True)
class Narrative:
    r"""The current-context summary. Immutable: updates return a new one.

    Example:
        >>> n = Narrative().merge(objective="Plan the Q4 launch.", entities=["Dana"])
        >>> n.render()
        'Objective: Plan the Q4 launch.\nNames: Dana'
    """

    story: tuple[str, ...] = ()  # timeline entries "8 May 2023: support group, counselor", oldest first
    objective: str = ""
    achievements: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()
    state: str = ""
    next_steps: tuple[str, ...] = ()
    participants: tuple[str, ...] = ()
    prose: str = ""  # a summary model's narrative, when one is configured
    updated_at: datetime | None = field(default=None, compare=False)

    def render(self) -> str:
        """The text that goes into the pack (the model's narrative when there is one)."""
        return self.prose or self.render_fields()

    def render_fields(self) -> str:
        """The structured narrative, whatever ``prose`` holds."""
        lines = []
        if self.participants:
            lines.append("Between: " + ", ".join(self.participants))
        if self.story:
            lines.append("Timeline: " + "; ".join(self.story))
        if self.objective:
            lines.append("Objective: " + self.objective)
        if self.achievements:
            lines.append("Decided or done: " + " ".join(_sentence(a) for a in self.achievements))
        if self.entities:
            lines.append("Names: " + ", ".join(self.entities))
        if self.state:
            lines.append("Now: " + self.state)
        if self.next_steps:
            lines.append("Open: " + " ".join(_sentence(n) for n in self.next_steps))
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
        """This narrative shortened to ``max_tokens``: old timeline entries compressed, then dropped.

        The model's prose is kept only if it fits as it is (it is never cut mid-way).
        """
        current = self
        if current.prose and counter.count(current.prose) > max_tokens:
            current = replace(current, prose="")
        if current.prose:
            return current
        while counter.count(current.render()) > max_tokens:
            story = _compress(current.story)
            if len(current.achievements) > 3:  # the oldest that is not a decision goes first
                items = current.achievements
                drop = next((i for i, a in enumerate(items) if not a.startswith("Decided: ")), 0)
                current = replace(current, achievements=items[:drop] + items[drop + 1 :])
            elif len(current.entities) > 5:
                current = replace(current, entities=current.entities[:-1])
            elif story is not None:
                current = replace(current, story=story)
            elif len(current.achievements) > 2:
                current = replace(current, achievements=current.achievements[1:])
            elif len(current.entities) > 3:
                current = replace(current, entities=current.entities[:-1])
            elif len(current.next_steps) > 1:
                current = replace(current, next_steps=current.next_steps[:-1])
            elif len(current.story) > 1:
                current = replace(current, story=current.story[1:])
            elif current.participants:
                current = replace(current, participants=())
            elif current.story:
                current = replace(current, story=())
            elif current.achievements:
                current = replace(current, achievements=current.achievements[1:])
            elif current.entities:
                current = replace(current, entities=current.entities[:-1])
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
        topic: str = "",
        when: str = "",
        speakers: Sequence[str] = (),
    ) -> Narrative:
        """Merge what a closed segment adds; refuse (keep ``self``) if the result would be empty.

        Args:
            summary: the segment's summary: its decisions and plans join "decided" and "open".
            header: the segment's header; it becomes "where things stand".
            entities: the segment's key names.
            texts: ``(role, text)`` of its turns, for the objective and an unanswered question.
            counter: to enforce ``max_tokens``.
            scrubber: applied to everything the narrative takes in.
            at: when the segment ended.
            max_tokens: the narrative's cap.
            topic: the segment's key phrases (``"support group, counselor"``): the timeline entry.
            when: the segment's day (``"8 May 2023"``), the timeline entry's label.
            speakers: who spoke in it (named speakers; roles are not participants).
        """
        clean = scrubber.scrub_text if scrubber is not None else (lambda s: s)
        facts = [s for s in split_sentences(_unlabelled(summary)) if not s.rstrip().endswith("?")]
        facts = [s for s in facts if len(s.split()) >= 5 and not s.rstrip().endswith(":")]
        short = [s for s in facts if len(s) < 200]
        decided = [f"Decided: {clean(_DECISION_LEAD.sub('', s))}" for s in short if _DECIDED.search(s)][-2:]
        done = [clean(s) for s in short if _ACHIEVED.search(s) and not _DECIDED.search(s)][-1:]
        achieved = decided + done
        upcoming = [clean(s) for s in facts if _NEXT.search(s) and len(s) < 200][-2:]
        last = next((t for role, t in reversed(texts) if role != "tool" and t.strip()), "")
        asked = (split_sentences(last) or [""])[-1]
        if asked.endswith("?") and not is_filler(asked) and len(content_words(asked)) >= 3:
            upcoming.append(clean(_short(asked)))  # the segment ended on a question: still open
        objective = next(
            (clean(t) for role, t in reversed(texts) if role == "user" and _ASK.search(t.strip())), None
        )
        merged = replace(
            self.merge(
                objective=_short(objective) if objective else None,
                achievements=achieved,
                entities=[clean(e) for e in entities],
                state=clean(header) or None,
                next_steps=upcoming or None,
                at=at,
            ),
            story=_add_to_timeline(self.story, when, [clean(p) for p in topic.split(", ") if p]),
            participants=tuple(dict.fromkeys([*self.participants, *speakers]))[:6],
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
            "participants": list(self.participants),
            "prose": self.prose,
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
            participants=tuple(data.get("participants", ())),
            prose=str(data.get("prose") or ""),
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


def _sentence(text: str) -> str:
    text = text.strip()
    return text if text[-1:] in ".!?…\"')" else text + "."


def _unlabelled(summary: str) -> str:
    """A summary without its ``Speaker:`` labels, so sentences split cleanly."""
    return re.sub(r"(?:^|(?<=[.!?…] ))[A-Z][\w .'-]{0,30}: ", "", summary)


def _entry(label: str, phrases: Sequence[str]) -> str:
    return f"{label}: {', '.join(phrases)}" if label else ", ".join(phrases)


def _parse(entry: str) -> tuple[str, list[str]]:
    label, sep, rest = entry.partition(": ")
    if not sep:
        return "", [p for p in entry.split(", ") if p]
    return label, [p for p in rest.split(", ") if p]


def _add_to_timeline(story: tuple[str, ...], when: str, phrases: Sequence[str]) -> tuple[str, ...]:
    """The timeline with a segment's phrases added: to the same day's entry while it has room."""
    if not phrases:
        return story
    entries = list(story)
    if entries:
        label, old = _parse(entries[-1])
        if (label == when or (label == "then" and when == _last_day(story))) and len(old) < _PHRASES_PER_DAY:
            new = [p for p in phrases if p.lower() not in {o.lower() for o in old}]
            entries[-1] = _entry(label, [*old, *new][:_PHRASES_PER_DAY])
            return tuple(entries)
        if label in (when, "then") and when == _last_day(story):
            return (*entries, _entry("then", phrases[:2]))
    return (*entries, _entry(when, phrases[:2]))


def _last_day(story: Sequence[str]) -> str:
    for entry in reversed(story):
        label, _ = _parse(entry)
        if label and label != "then":
            return label
    return ""


def _compress(story: tuple[str, ...]) -> tuple[str, ...] | None:
    """One step of shortening the oldest half of the timeline, or ``None`` when nothing is left to do.

    An old entry keeps two phrases, then one; then two old neighbours become one entry spanning
    their days ("8 May 2023 – 25 May 2023: support group, charity race"), until the oldest half is
    one entry. The newest half is left as it is.
    """
    old = max(1, len(story) // 2)
    for keep in (2, 1):
        for i, entry in enumerate(story[:old]):
            label, phrases = _parse(entry)
            if len(phrases) > keep and (keep == 2 or "–" not in label):
                return (*story[:i], _entry(label, phrases[:keep]), *story[i + 1 :])
    if old >= 2:
        (a, pa), (b, pb) = _parse(story[0]), _parse(story[1])
        start = a.split(" – ")[0] if a != "then" else ""
        end = b.split(" – ")[-1] if b != "then" else a.split(" – ")[-1]
        label = f"{start} – {end}" if start and end and start != end else start or end
        return (_entry(label, list(dict.fromkeys([*pa[:1], *pb[:1]]))), *story[2:])
    return None


def day_label(at: datetime | None) -> str:
    """``8 May 2023`` (a segment header's and the timeline's way of saying the day)."""
    return f"{at.day} {at.strftime('%b')} {at.year}" if at is not None else ""
