"""A realistic sample workspace, generated deterministically, for the demo, the tests and the benchmarks.

:func:`generate_workspace` fills one user's workspace: a profile, ten projects (the seeds' "Q4
Product Launch" first) with phases, about 300 tasks, 60 notes, 20 brain dumps and the calendar of
the week before and the week after ``today``. ``scale=k`` makes ``k`` copies of the project set
(about ``300·k`` tasks). The same ``(scale, seed, today, timezone)`` always gives the same rows, ids
included: every choice comes from a :class:`random.Random` seeded per copy, every moment from
``today`` (never the clock). :func:`clear_workspace` removes a user's workspace rows again.

Example:
    >>> from datetime import date
    >>> from tierwise.store import Store
    >>> store = Store.open("sqlite://")
    >>> maya = store.create_user("maya").id
    >>> summary = generate_workspace(store, maya, today=date(2025, 3, 12))
    >>> summary.projects, 250 < summary.tasks < 350
    (10, True)
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, Any, cast

import sqlalchemy as sa

from tierwise.errors import InputError
from tierwise.store.errors import NotFoundError
from tierwise.store.models import User, utcnow
from tierwise.workspace.calendar.recurrence import load_zone
from tierwise.workspace.context_cache import touch
from tierwise.workspace.ids import new_workspace_id
from tierwise.workspace.models import BrainDump, CalendarEvent, Note, Phase, Project, Task, UserProfile
from tierwise.workspace.queries import Profile
from tierwise.workspace.sample_calendar import CalendarMaker
from tierwise.workspace.sample_projects import PROJECTS
from tierwise.workspace.sample_rows import Made, Row, bullets, sentence
from tierwise.workspace.sample_text import (
    INBOX_TASKS,
    PROFILE,
    SEED_SUBTASKS,
    SEED_TASKS,
    SEED_TEXTS,
    Bank,
    ProjectText,
)

if TYPE_CHECKING:
    from tierwise.store import Store

__all__ = ["SampleSummary", "WorkspaceInUse", "clear_workspace", "generate_workspace"]

_BATCH = 2000
_DURATIONS = (15, 25, 30, 45, 50, 60, 60, 90, 90, 120, 180, 240)
_HOURS = (9, 10, 10, 11, 11, 14, 15, 16)  # mornings first: that is when Maya focuses
_TABLES: tuple[type[Any], ...] = (UserProfile, Project, Phase, Task, Note, BrainDump, CalendarEvent)


class WorkspaceInUse(InputError):
    """The user already has workspace rows: the sample goes only into an empty workspace."""


@dataclass(frozen=True)
class SampleSummary:
    """What :func:`generate_workspace` wrote: rows per table, and the day it was generated around."""

    today: date
    timezone: str
    scale: int
    seed: int
    profiles: int
    projects: int
    phases: int
    tasks: int
    notes: int
    brain_dumps: int
    calendar_events: int


class _Generator(CalendarMaker):
    """Builds the rows of one workspace in memory, as plain dicts ready for bulk inserts."""

    # --- profile, projects, phases ----------------------------------------------------------------

    def profile(self) -> None:
        hours = {"work_start_hour": 9, "work_end_hour": 18, "work_days": [1, 2, 3, 4, 5]}
        row = {"user_id": self.user_id, **PROFILE, "timezone": self.zone.key, **hours}
        self.rows["profiles"].append(row | {"updated_at": self.now - timedelta(days=30)})

    def copy(self, index: int, seed: int) -> None:
        """One copy of the project set, with its tasks, notes, brain dumps and calendar."""
        self.rng = random.Random(f"tierwise-sample:{seed}:{index}")
        self.ids = random.Random(f"tierwise-sample-ids:{seed}:{index}")
        self.suffix = f" ({index + 1})" if index else ""
        made = [self.project(text, index) for text in PROJECTS]
        self.inbox(index)
        for item in made:
            self.notes(item)
            self.brain_dumps(item, made)
        self.free_notes()
        self.calendar(index, made)

    def project(self, text: ProjectText, index: int) -> Made:
        rng = self.rng
        jitter = rng.randint(-10, 10) if index else 0
        start, end = self.day(text.span[0] + jitter), self.day(text.span[1] + jitter)
        end = min(end, self.day(-1)) if text.status == "completed" else end
        tags = rng.sample(text.tags, rng.randint(3, len(text.tags))) if index else list(text.tags)
        created = self.at(start - timedelta(days=rng.randint(2, 12)), 9, 30)
        touched = self.between(max(created, self.now - timedelta(days=9)), self.now)
        row = self.owned("project", created, touched)
        row |= {"name": text.name + self.suffix, "slug": text.slug + (f"-{index + 1}" if index else "")}
        description = rng.choice(text.descriptions) if index else text.descriptions[0]
        row |= {"status": text.status, "start_date": start, "end_date": end, "description": description}
        row |= {"executive_summary": text.summaries[0], "tags": tags, "context": self.context(text, index)}
        self.rows["projects"].append(row)
        total, count = (end - start).days, len(text.phases)
        for position, phase in enumerate(text.phases):
            name, _, description = phase.partition(": ")
            first = start + timedelta(days=total * position // count)
            last = start + timedelta(days=total * (position + 1) // count - 1)
            values = {
                "name": name,
                "description": description[:1].upper() + description[1:],
                "position": position,
            }
            ids = {
                "id": new_workspace_id("phase", self.ids),
                "project_id": row["id"],
                "user_id": self.user_id,
            }
            self.rows["phases"].append(ids | values | {"start_date": first, "end_date": last})
        elapsed = (self.today - start).days / max(total, 1)
        progress = {"completed": 1.0, "archived": 0.55}.get(text.status, min(max(elapsed, 0.0), 1.0))
        made = Made(text, row, [p.split(" — ")[0] for p in text.people], progress)
        self.tasks(made)
        return made

    def context(self, text: ProjectText, index: int) -> str:
        """The project's markdown context, 1,500-4,000 characters: overview, goals, people, decisions."""
        rng = self.rng

        def some(items: Sequence[str]) -> list[str]:
            return rng.sample(items, max(2, len(items) - rng.randint(0, 1))) if index else list(items)

        people = [f"**{name}** — {role}" for name, _, role in (p.partition(" — ") for p in text.people)]
        lists = zip(
            ("Goals", "Stakeholders", "Decisions", "Open questions", "Risks"),
            (text.goals, people, text.decisions, text.questions, text.risks),
            strict=True,
        )
        parts = [f"# {text.name}", "## Overview\n\n" + "\n\n".join(text.overview)]
        parts += [f"## {title}\n\n" + bullets([sentence(i) for i in some(items)]) for title, items in lists]
        facts = rng.sample(text.facts, len(text.facts))
        notes = facts[: rng.randint(2, 4)]
        while len("\n\n".join(parts)) + sum(len(f) + 3 for f in notes) < 1700 and len(notes) < len(facts):
            notes.append(facts[len(notes)])
        parts.append("## Running notes\n\n" + bullets(notes))
        if len("\n\n".join(parts)) < 1600:
            parts.append("## Phases\n\n" + bullets(text.phases))
        return "\n\n".join(parts)[:4000]

    # --- tasks ------------------------------------------------------------------------------------

    def tasks(self, made: Made) -> None:
        text, rng, row = made.text, self.rng, made.row
        fill = {"project": row["name"], "person": rng.choice(made.people[:3])}
        extra = rng.sample(Bank.EXTRA_TASKS, 3 if len(text.tasks) > 22 else 4)
        specs = [*text.tasks, *(t.format(**fill) for t in extra)]
        for position, spec in enumerate(specs):
            head, _, subs = spec.partition(" > ")
            title, _, recurrence = head.partition(" *")
            parent = self.task(made, title, position / max(len(specs) - 1, 1), recurrence or None)
            for number, sub in enumerate(subs.split("; ") if subs else ()):
                seeded = title in SEED_TASKS and text is PROJECTS[0]
                status = SEED_SUBTASKS[number] if seeded else self.sub_status(parent["status"], number)
                self.subtask(made, parent, sub, status, number)
        self.deletions_and_dependencies(made)

    def status(self, project_status: str, fraction: float, progress: float) -> str:
        """Earlier tasks of a project are more likely done; how far depends on the project's progress."""
        roll = self.rng.random()
        if project_status == "completed":
            return "done" if roll < 0.9 else "backlog"
        if project_status == "archived":
            return "done" if fraction < progress else ("backlog" if roll < 0.85 else "blocked")
        if fraction < progress * 0.85:
            state = "done" if roll < 0.85 else ("in_progress" if roll < 0.95 else "blocked")
        elif fraction < progress + 0.15:
            state = (
                "in_progress"
                if roll < 0.45
                else "done"
                if roll < 0.6
                else "blocked"
                if roll < 0.72
                else "backlog"
            )
        else:
            state = "backlog" if roll < 0.85 else ("in_progress" if roll < 0.95 else "blocked")
        if project_status == "paused" and state == "in_progress":
            return "blocked" if roll < 0.5 else "backlog"
        return state

    def start_for(self, status: str, project: Row | None, fraction: float) -> datetime | None:
        """When a task is planned: done ones in the project's past, in order; open ones around today."""
        rng = self.rng
        hour, minute, roll = rng.choice(_HOURS), rng.choice((0, 0, 30)), rng.random()
        low, high = (project["start_date"], project["end_date"]) if project else (self.day(-30), self.today)
        if status == "done":
            high = min(high, self.day(-1))
            span = max((high - low).days, 0)
            offset = max(0, min(int(span * fraction) + rng.randint(-3, 3), span))
            return self.at(min(low + timedelta(days=offset), high), hour, minute)
        if project is not None and project["status"] != "active":
            return None if roll < 0.6 else self.at(self.day(-rng.randint(5, 40)), hour, minute)
        if status == "in_progress":
            return self.at(self.day(rng.randint(-4, 3)), hour, minute)
        if status == "blocked" or roll < 0.25:
            return None if roll < 0.3 else self.at(self.day(rng.randint(-10, 5)), hour, minute)
        if roll < 0.4:  # planned in the past and not done: overdue
            return self.at(self.day(-rng.randint(1, 14)), hour, minute)
        return self.at(self.day(rng.randint(1, 45)), hour, minute)

    def task(self, made: Made, title: str, fraction: float, recurrence: str | None) -> Row:
        rng, text = self.rng, made.text
        status = self.status(text.status, fraction, made.progress)
        if recurrence is not None:
            status = "in_progress" if text.status == "active" and rng.random() < 0.5 else "backlog"
        start_at = self.start_for(status, made.row, fraction)
        if recurrence is not None and text.status == "active":
            start_at = self.at(self.day(rng.randint(0, 6)), 7 if "run" in title else rng.choice(_HOURS))
        seed = SEED_TASKS.get(title) if text is PROJECTS[0] else None
        if seed is not None:
            status, day = seed[0], seed[2]
            start_at = None if day is None else self.at(self.day(day), seed[3])
        row = self.task_row(made, title, status, start_at, recurrence)
        if seed is not None:
            row |= {"priority": seed[1], "duration_minutes": seed[4]}
            row["description"], row["details"] = SEED_TEXTS.get(title, (row["description"], row["details"]))
        made.tasks.append(row)
        self.rows["tasks"].append(row)
        return row

    def task_row(
        self,
        made: Made | None,
        title: str,
        status: str,
        start: datetime | None,
        recurrence: str | None = None,
    ) -> Row:
        """A task; its description and details come from the project's texts (or the inbox's)."""
        rng = self.rng
        duration = rng.choice(_DURATIONS)
        low = made.row["created_at"] if made is not None else self.now - timedelta(days=60)
        created = self.between(low, min(start or self.now, self.now) - timedelta(hours=1))
        completed = None
        if status == "done":
            end = start + timedelta(minutes=duration) if start else self.between(created, self.now)
            completed = min(end + timedelta(minutes=rng.randint(0, 600)), self.now)
            created = min(created, completed - timedelta(hours=1))
        priority = rng.choice(("high", "medium", "medium", "medium", "low"))
        if made is None:
            lead, approach = rng.choice(Bank.INBOX_LEADS), rng.choice(Bank.APPROACH)
            description = f"{lead} {approach.format(person='Sofia', project='home', phase='admin')}"
            details = None
        else:
            description = self.description(made, title, status)
            chance = 0.75 if priority == "high" else 0.5
            details = self.details(made, status) if rng.random() < chance else None
        row = self.owned("task", created, completed or self.between(created, self.now))
        row |= {"project_id": made.row["id"] if made else None, "parent_task_id": None, "title": title}
        row |= {"status": status, "priority": priority, "start_at": start, "duration_minutes": duration}
        row |= {"description": description, "details": details, "dependencies": [], "deleted_at": None}
        kind = "recurring" if recurrence else "one_off"
        return row | {"task_type": kind, "recurrence_pattern": recurrence, "completed_at": completed}

    def sub_status(self, parent: str, number: int) -> str:
        if parent in ("done", "backlog"):
            return parent
        first_done = number == 0 or self.rng.random() < 0.3
        return "done" if first_done else self.rng.choice(("backlog", "in_progress"))

    def subtask(self, made: Made, parent: Row, title: str, status: str, number: int) -> None:
        start = parent["start_at"]
        if start is not None:
            start += timedelta(days=number - 1 if status == "done" else number)
            start = min(start, self.now - timedelta(hours=4)) if status == "done" else start
        row = self.task_row(made, title, status, start)
        row |= {"parent_task_id": parent["id"], "priority": parent["priority"]}
        row["description"] = f"Step {number + 1} of '{parent['title']}'. {row['description']}"[:700]
        row["duration_minutes"] = self.rng.choice(_DURATIONS[:8])
        made.tasks.append(row)
        self.rows["subtasks"].append(row)

    def phase(self, made: Made, status: str) -> str:
        """The phase a task of ``status`` belongs to: done ones in earlier phases, open ones in later ones."""
        count = len(made.text.phases)
        current = min(int(made.progress * count), count - 1)
        low, high = {"done": (0, current), "backlog": (current, count - 1)}.get(status, (current, current))
        return made.text.phases[self.rng.randint(low, high)].split(":")[0].lower()

    def description(self, made: Made, title: str, status: str) -> str:
        """80-700 characters: why it matters, a fact, how to approach it, when it is done."""
        rng, words = self.rng, self.words(made, title=title, phase=self.phase(made, status))
        parts = [rng.choice(Bank.LEADS), "{fact}"]
        parts += [rng.choice(Bank.APPROACH)] if rng.random() < 0.6 else []
        parts += ["Watch out: {risk}"] if rng.random() < 0.35 else []
        parts += ["Still open: {question}"] if rng.random() < 0.3 else []
        parts.append(rng.choice(Bank.DONE_WHEN))
        out = ""
        for part in (p.format(**words) for p in parts):
            out = out if len(out) + len(part) + 1 > 600 else f"{out} {part}".strip()
        return out

    def details(self, made: Made, status: str) -> str:
        rng, words = self.rng, self.words(made, phase=self.phase(made, status))
        items = [item.format(**words) for item in rng.sample(Bank.CHECKLIST, rng.randint(3, 6))]
        done = len(items) if status == "done" else rng.randint(0, len(items) - 1)
        checklist = "\n".join(f"- [{'x' if n < done else ' '}] {item}" for n, item in enumerate(items))
        return Bank.DETAILS.format(**words | {"checklist": checklist})

    def deletions_and_dependencies(self, made: Made) -> None:
        """A few soft-deleted tasks; some tasks wait on earlier ones of the project (so there is no cycle)."""
        rng = self.rng
        parents = {t["parent_task_id"] for t in made.tasks}
        for task in made.tasks:
            if task["id"] not in parents and task["title"] not in SEED_TASKS and rng.random() < 0.025:
                task["deleted_at"] = task["updated_at"] = self.between(task["created_at"], self.now)
        live = [t for t in made.tasks if t["deleted_at"] is None]
        for position, task in enumerate(live[2:], start=2):
            parent = task["parent_task_id"]
            if parent is not None:
                siblings = [t for t in live[:position] if t["parent_task_id"] == parent]
                pool = siblings[-1:] if rng.random() < 0.3 else []
            else:
                earlier = [t for t in live[:position] if t["parent_task_id"] is None]
                pool = (
                    rng.sample(earlier, min(len(earlier), rng.randint(1, 2))) if rng.random() < 0.18 else []
                )
            done = task["status"] == "done"  # a done task waited only on done ones
            task["dependencies"] = [t["id"] for t in pool if t["status"] == "done" or not done]

    def inbox(self, index: int) -> None:
        rng = self.rng
        specs = rng.sample(INBOX_TASKS, len(INBOX_TASKS) - 3) if index else INBOX_TASKS
        for spec in specs:
            title, _, recurrence = spec.partition(" *")
            status = "backlog" if recurrence else rng.choice(("backlog", "backlog", "in_progress", "done"))
            row = self.task_row(
                None, title, status, self.start_for(status, None, rng.random()), recurrence or None
            )
            self.rows["tasks"].append(row | {"title": title + self.suffix})

    # --- notes and brain dumps --------------------------------------------------------------------

    def when(self, made: Made | None) -> datetime:
        """A moment in the project's life (or the last 45 days), before now."""
        if made is None:
            return self.between(self.now - timedelta(days=45), self.now - timedelta(hours=2))
        end = min(self.at(made.row["end_date"], 17), self.now - timedelta(hours=2))
        return self.between(min(made.row["created_at"], end), end)

    def note(
        self, made: Made | None, category: str, title: str, content: str, tags: list[str], at: datetime
    ) -> None:
        row = self.owned("note", at) | {"project_id": made.row["id"] if made else None}
        self.rows["notes"].append(
            row | {"title": title, "category": category, "content": content, "tags": tags}
        )

    def notes(self, made: Made) -> None:
        rng = self.rng
        for spec in (*made.text.notes, rng.choice(Bank.PROJECT_NOTES).format(project=made.row["name"])):
            category, _, title = spec.partition(": ")
            tags = [category, *rng.sample(made.row["tags"], 2)]
            picked = rng.sample(made.open_tasks(), min(3, len(made.open_tasks())))
            names = ", ".join(["Maya", *rng.sample(made.people, min(3, len(made.people)))])
            actions = "\n".join(f"- [ ] {rng.choice(made.people).split()[0]}: {t['title']}" for t in picked)
            moods = rng.sample(Bank.JOURNAL, 4)
            moment = self.when(made)
            when = f"{moment.astimezone(self.zone):%a %d %b}"
            words = self.words(made, title=title, attendees=names, actions=actions, when=when)
            words |= {"mood": " ".join(moods[:3]), "mood2": moods[3]}
            words |= {
                "idea": rng.choice(Bank.IDEA).format(**words),
                "idea2": rng.choice(Bank.IDEA).format(**words),
            }
            self.note(made, category, title, Bank.NOTES[category].format(**words), tags, moment)

    def free_notes(self) -> None:
        rng = self.rng
        for spec in Bank.FREE_NOTES:
            category, _, title = spec.partition(": ")
            content = " ".join(rng.sample(Bank.JOURNAL, rng.randint(3, 6)))
            if category == "idea":
                questions = [sentence(rng.choice(p.questions)) for p in rng.sample(PROJECTS, 5)]
                content = f"Parked for later, not for now:\n\n{bullets(questions)}\n\n{content}"
            elif category == "reference":
                content = f"{bullets(rng.sample(Bank.SHAPE_UP, 4))}\n\nWhy it matters to me: {content}"
            self.note(None, category, title + self.suffix, content, [category, "personal"], self.when(None))

    def brain_dumps(self, made: Made, everyone: list[Made]) -> None:
        """Two rambling dumps per project; applied ones list the tasks they created."""
        rng, text = self.rng, made.text
        for _ in range(2):
            other = rng.choice([m for m in everyone if m is not made])
            items = [*rng.sample(text.facts, 3), *rng.sample(text.questions, 2), rng.choice(text.goals)]
            items += [f"todo: {t['title']}" for t in rng.sample(made.tasks, 3)]
            items += [
                f"worried that {rng.choice(text.risks)}",
                f"for {other.row['name']}: {other.tasks[0]['title']}",
            ]
            rng.shuffle(items)
            content, target = rng.choice(Bank.RAMBLE_OPEN), rng.randint(300, 1400)
            for item in items:
                content += (
                    "" if len(content) > target else f" {rng.choice(Bank.RAMBLE_JOIN)} {item.rstrip('.')}"
                )
            content = f"{content}... {rng.choice(Bank.RAMBLE_CLOSE)}".lower()
            status = rng.choice(("pending", "processed", "processed", "applied", "applied"))
            created = rng.sample(made.open_tasks(), min(len(made.open_tasks()), rng.randint(1, 3)))
            moment = self.when(made)
            operations: list[dict[str, Any]] = []
            if status == "applied":
                operations = [{"op": "create", "table": "tasks", "id": t["id"]} for t in created]
                operations.append(
                    {"op": "update", "table": "projects", "id": made.row["id"], "fields": ["context"]}
                )
                moment = min(min(t["created_at"] for t in created) - timedelta(minutes=30), moment)
            elif status == "processed":
                operations = [{"op": "create", "table": "tasks", "title": t["title"]} for t in created]
            words = self.words(
                made, count=str(len(created)), task=created[0]["title"], other=other.row["name"]
            )
            row = self.owned("brain_dump", moment) | {"project_id": made.row["id"], "status": status}
            title = rng.choice(Bank.DUMP_TITLES).format(project=made.row["name"])
            summary = None if status == "pending" else Bank.DUMP_SUMMARY.format(**words)
            row |= {"title": title, "content": content, "ai_summary": summary, "operations": operations}
            self.rows["brain_dumps"].append(row)


def _refuse_if_used(store: Store, user_id: str) -> None:
    """Refuse (:class:`InputError`) a user with workspace rows, or one that does not exist."""
    with store.session() as session:
        if session.get(User, user_id) is None:
            raise NotFoundError("user", user_id, user_id)
        content = _TABLES[1:]  # a profile alone (what clear_workspace leaves) is an empty workspace
        query = (sa.select(model.user_id).where(model.user_id == user_id).limit(1) for model in content)
        found = [model.__tablename__ for model, q in zip(content, query, strict=True) if session.scalar(q)]
    if found:
        raise WorkspaceInUse(
            f"user {user_id!r} already has workspace rows ({', '.join(found)}): use a new user, "
            "or call clear_workspace(store, user_id) first"
        )


def generate_workspace(
    store: Store,
    user_id: str,
    *,
    scale: int = 1,
    seed: int = 0,
    today: date | None = None,
    timezone: str = "Europe/Lisbon",
) -> SampleSummary:
    """Fill ``user_id``'s empty workspace with a realistic, reproducible sample (see the module docs).

    Args:
        store: the store whose database holds the workspace tables.
        user_id: an existing user without workspace rows.
        scale: copies of the project set, about 300 tasks each; 1 or more.
        seed: varies texts, statuses, dates and ids; the same arguments always give the same rows.
        today: the day the sample is built around (default: today in ``timezone``).
        timezone: the profile's IANA time zone, in which events and task times are planned.

    Returns:
        The rows written per table, and the ``today`` used.

    Raises:
        InputError: ``scale`` is below 1, ``timezone`` is unknown, or the user already has a workspace.
        NotFoundError: no such user.
    """
    if isinstance(scale, bool) or not isinstance(scale, int) or scale < 1:
        raise InputError(f"scale is a number of copies, 1 or more (got {scale!r}): use scale=1 (~300 tasks)")
    zone = load_zone(timezone)
    day = today if today is not None else datetime.now(zone).date()
    _refuse_if_used(store, user_id)
    generator = _Generator(user_id, day, zone)
    generator.profile()
    for index in range(scale):
        generator.copy(index, seed)
    _refuse_if_used(store, user_id)  # again: another writer may have been quicker
    rows = generator.rows
    models = (UserProfile, Project, Phase, Task, Task, Note, BrainDump, CalendarEvent)  # parents first
    with store.session(write=True) as session:
        # The sample's profile replaces the one an emptied workspace keeps (see clear_workspace).
        session.execute(sa.delete(UserProfile).where(UserProfile.user_id == user_id))
        for model, table in zip(models, rows.values(), strict=True):
            # Core's insert: one executemany a batch (the ORM's bulk insert made one statement per
            # run of rows with the same None columns: 270 statements, 63 compiled, for scale 1)
            target = cast("sa.Table", model.__table__)
            for start in range(0, len(table), _BATCH):
                session.execute(sa.insert(target), table[start : start + _BATCH])
    counts = {key: len(value) for key, value in rows.items()}
    counts["tasks"] += counts.pop("subtasks")
    return SampleSummary(today=day, timezone=zone.key, scale=scale, seed=seed, **counts)


def clear_workspace(store: Store, user_id: str) -> None:
    """Delete ``user_id``'s workspace rows (projects, tasks, notes, dumps, events); others stay.

    The profile goes back to the defaults (no description, UTC, 9–17 on weekdays) rather than away:
    a user with a profile has a workspace, empty now, so the assistant does not load the sample into
    it again when it next starts (:func:`~tierwise.workspace.app.ensure_sample`);
    :func:`generate_workspace` still loads it when asked. Rows that point at others go first, and
    subtasks are detached before tasks are deleted, so no foreign key is violated. The user, its
    chats and its memory are left alone.
    """
    options = {"synchronize_session": False}
    defaults = {f.name: getattr(Profile(), f.name) for f in dataclasses.fields(Profile)}
    with store.session(write=True) as session:
        for model in reversed(_TABLES):  # events, dumps, notes, tasks, phases, projects, profile
            if model is Task:
                detach = sa.update(Task).where(Task.user_id == user_id, Task.parent_task_id.is_not(None))
                session.execute(detach.values(parent_task_id=None), execution_options=options)
            session.execute(sa.delete(model).where(model.user_id == user_id), execution_options=options)
        defaults["work_days"] = list(defaults["work_days"])
        session.add(UserProfile(user_id=user_id, updated_at=utcnow(), **defaults))
    touch(store, user_id)  # contexts cached in this process go stale
