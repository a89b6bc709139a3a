"""The sample workspace's calendar: the week before and after the day of generation.

Recurring meetings (a daily standup, a weekly 1:1 or project sync), morning focus blocks linked to
open tasks, afternoon meetings about work projects and lunchtime ones about personal ones, Saturday
long runs and a few all-day events.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import Any

from tierwise.workspace.sample_rows import Made, RowMaker, mailbox
from tierwise.workspace.sample_text import SEED_TASKS, Bank

__all__ = ["CalendarMaker"]

_WINDOW = range(-7, 8)  # the calendar: the week before today, today, and the week after
_WORKDAYS = "MO,TU,WE,TH,FR"
_TEAM = ("Priya Nair", "Tomás Reis", "Ana Lima", "Hugo Almeida", "Mei Chen")
_SLOTS = ((13, 0, 30), (14, 0, 60), (15, 30, 45), (16, 30, 30))  # lunch (personal), then afternoon meetings


class CalendarMaker(RowMaker):
    """Makes the calendar's rows (``calendar_events``)."""

    def event(self, summary: str, start: datetime, minutes: int, **fields: Any) -> None:
        """An event of ``minutes``; ``fields`` may set description, location, rrule, attendees, task."""
        created = self.between(
            min(start, self.now) - timedelta(days=21), min(start, self.now) - timedelta(days=1)
        )
        row = self.owned("event", created, created)
        people, task = fields.pop("attendees", ()), fields.pop("task", None)
        domain = fields.pop("domain", "lumen.example")
        attendees = [{"name": p, "email": f"{mailbox(p)}@{domain}"} for p in people]
        row |= {
            "uid": f"{row['id']}@tierwise.sample",
            "summary": summary,
            "start_at": start,
            "all_day": False,
        }
        row |= {
            "end_at": start + timedelta(minutes=minutes),
            "timezone": self.zone.key,
            "attendees": attendees,
        }
        row |= {"description": None, "location": None, "rrule": None} | fields
        self.rows["calendar_events"].append(row | {"linked_task_id": task["id"] if task else None})

    def calendar(self, index: int, made: list[Made]) -> None:
        """Recurring meetings, morning focus blocks (linked to tasks), afternoon meetings, all-day events."""
        rng, suffix = self.rng, self.suffix
        days = [self.day(offset) for offset in _WINDOW]
        weekdays = [d for d in days if d.isoweekday() <= 5]
        if index == 0:
            standup = "Yesterday, today, blockers. Fifteen minutes, hard stop."
            rule = f"FREQ=WEEKLY;BYDAY={_WORKDAYS}"
            self.event(
                "Daily standup",
                self.at(weekdays[0], 9, 30),
                15,
                rrule=rule,
                attendees=_TEAM,
                description=standup,
            )
            monday = next(d for d in days if d.isoweekday() == 1)
            agenda = "Running agenda in the shared doc: launch risks, hiring, team health."
            rule = "FREQ=WEEKLY;BYDAY=MO"
            self.event(
                "1:1 with Priya", self.at(monday, 10), 30, rrule=rule, attendees=_TEAM[:1], description=agenda
            )
        else:
            first = rng.choice(weekdays[:5])
            rule = f"FREQ=WEEKLY;BYDAY={_WORKDAYS.split(',')[first.isoweekday() - 1]}"
            summary, people = f"Weekly sync: {made[0].row['name']}", rng.sample(_TEAM, 3)
            self.event(summary, self.at(first, 14), 45, rrule=rule, attendees=people, location="Google Meet")
        work = [m for m in made if m.text.status == "active" and "personal" not in m.text.tags]
        focusable = [t for m in work for t in m.open_tasks() if t["task_type"] == "one_off"]
        focusable = [t for t in focusable if t["title"] not in SEED_TASKS and t["parent_task_id"] is None]
        rng.shuffle(focusable)
        for day in weekdays:
            docs = made[0].tasks[0]  # the seed's API docs task, in its morning block the day before today
            if index == 0 and day == self.day(-1) and docs["title"] == "Design API documentation portal":
                about = "Deep work on the docs portal: OpenAPI pages and the auth guide."
                self.event(f"Focus: {docs['title']}", docs["start_at"], 120, task=docs, description=about)
            elif focusable and rng.random() < 0.6:
                task = focusable.pop()
                task["start_at"] = start = self.at(day, 10, 30 if day.isoweekday() == 1 else 0)
                task["duration_minutes"] = 90
                about = f"Deep work, phone on silent. {task['description'][:160]}"
                self.event(f"Focus: {task['title']}", start, 90, task=task, description=about)
            for hour, minute, length in sorted(rng.sample(_SLOTS, 2)):
                self.meeting(made, day, hour, minute, length)
        runs = [t for m in made if m.text.slug == "marathon-training" for t in m.tasks]
        long_run = next((t for t in runs if t["title"] == "Saturday long run"), None)
        route = "Easy pace, a gel every 40 minutes. Route: Belém and back along the river."
        for day in (d for d in days if d.isoweekday() == 6):
            start = self.at(day, 7, 30)
            self.event(f"Long run{suffix}", start, 150, task=long_run, description=route, location="Belém")
        for name in rng.sample(Bank.ALL_DAY, 3):
            day = rng.choice(days)
            start, end = self.at(day, 0), self.at(day + timedelta(days=1), 0)
            self.event(name + suffix, start, int((end - start).total_seconds() // 60), all_day=True)

    def meeting(self, made: list[Made], day: date, hour: int, minute: int, length: int) -> None:
        """A meeting about one project: work ones in the afternoon, personal ones at lunch."""
        rng, past = self.rng, day < self.today
        personal = hour == 13
        weight = {"active": 4, "paused": 1, "completed": 1 if past else 0, "archived": 0}
        choices = [m for m in made if ("personal" in m.text.tags) == personal]
        project = rng.choices(choices, [weight[m.text.status] for m in choices])[0]
        people = [p for p in project.people if all(w[:1].isupper() for w in p.split())]
        linked = rng.choice(project.open_tasks()) if rng.random() < 0.3 else None
        words = self.words(project) | ({"task": linked["title"]} if linked else {})
        about = Bank.AGENDA.format(**words) if rng.random() < 0.7 else None
        extra: dict[str, Any] = {"attendees": rng.sample(people, min(len(people), rng.randint(1, 3)))}
        extra |= {"domain": "example.com", "task": linked} if personal else {"task": linked}
        summary = rng.choice(project.text.meetings) + self.suffix
        start = self.at(day, hour, minute)
        self.event(summary, start, length, description=about, location=rng.choice(Bank.LOCATIONS), **extra)
