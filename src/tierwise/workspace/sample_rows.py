"""The sample workspace's building blocks: a generated project, row helpers, and the words picker.

:class:`RowMaker` holds what every part of the generator shares — the user, the day of generation
and its time zone, the seeded random sources and the rows made so far — and the helpers that turn
days into UTC moments and pick a project's words. :mod:`tierwise.workspace.sample_calendar` and
:mod:`tierwise.workspace.sample` build on it.
"""

from __future__ import annotations

import random
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from tierwise.workspace.ids import new_workspace_id
from tierwise.workspace.sample_text import ProjectText

__all__ = ["TABLES_LAST", "Made", "Row", "RowMaker", "bullets", "mailbox", "sentence"]

Row = dict[str, Any]
TABLES_LAST = ("brain_dumps", "calendar_events")  # made after every project of a copy


@dataclass
class Made:
    """One generated project of one copy, with what later steps need of it."""

    text: ProjectText
    row: Row
    people: list[str]
    progress: float  # how far along the project is, 0-1: earlier tasks and phases are done
    tasks: list[Row] = field(default_factory=list)  # parents before their subtasks

    def open_tasks(self) -> list[Row]:
        """Its tasks not done nor deleted (all of them if none is left)."""
        return [t for t in self.tasks if t["status"] != "done" and t["deleted_at"] is None] or self.tasks


def sentence(text: str) -> str:
    """``text`` ending as a sentence."""
    return text if text.endswith((".", "?", "!")) else f"{text}."


def mailbox(name: str) -> str:
    """``Tomás Reis`` → ``tomas.reis``."""
    plain = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    return ".".join(plain.lower().replace(".", " ").split())


def bullets(items: Sequence[str]) -> str:
    """A markdown list."""
    return "\n".join(f"- {item}" for item in items)


class RowMaker:
    """The state and helpers every part of the sample workspace's generator shares."""

    def __init__(self, user_id: str, today: date, zone: ZoneInfo) -> None:
        self.user_id, self.today, self.zone = user_id, today, zone
        self.now = self.at(today, 8)  # the moment of generation: nothing was created after it
        self.rows: dict[str, list[Row]] = {
            key: [] for key in ("profiles", "projects", "phases", "tasks", "subtasks", "notes", *TABLES_LAST)
        }
        self.rng, self.ids, self.suffix = random.Random(), random.Random(), ""

    # --- helpers ----------------------------------------------------------------------------------

    def at(self, day: date, hour: int, minute: int = 0) -> datetime:
        """``hour:minute`` local time on ``day``, in UTC."""
        return datetime.combine(day, time(hour, minute), self.zone).astimezone(UTC)

    def day(self, offset: int) -> date:
        """The day ``offset`` days from the day of generation."""
        return self.today + timedelta(days=offset)

    def between(self, low: datetime, high: datetime) -> datetime:
        """A whole minute in ``[low, high]`` (``low`` if the range is empty)."""
        minutes = int((high - low).total_seconds() // 60)
        return low + timedelta(minutes=self.rng.randint(0, minutes)) if minutes > 0 else low

    def owned(self, kind: str, created: datetime, updated: datetime | None = None) -> Row:
        """The columns every row has: a reproducible id, the user, and its two timestamps."""
        updated = updated or self.between(created, self.now)
        return {
            "id": new_workspace_id(kind, self.ids),
            "user_id": self.user_id,
            "created_at": created,
            "updated_at": updated,
        }

    def words(self, made: Made, **extra: str) -> dict[str, str]:
        """Random picks from a project's texts, by the names the templates of :class:`Bank` use."""
        rng, text = self.rng, made.text
        facts = rng.sample(text.facts, rng.randint(2, 4))
        return {
            "project": made.row["name"],
            "slug": made.row["slug"],
            "person": rng.choice(made.people),
            "phase": rng.choice(text.phases).split(":")[0].lower(),
            "fact": facts[0],
            "facts": bullets(facts),
            "goal": sentence(rng.choice(text.goals)),
            "decision": sentence(rng.choice(text.decisions)),
            "decisions": bullets([sentence(d) for d in text.decisions]),
            "question": rng.choice(text.questions),
            "risk": sentence(rng.choice(text.risks)),
            "people": bullets(text.people),
            "task": rng.choice(made.tasks)["title"] if made.tasks else text.tasks[0],
            **extra,
        }
