"""Deterministic synthetic conversations for benchmarks, replay and tests (no data files needed).

:func:`synthetic_history` writes a productivity-assistant chat with tool calls; :func:`timestamped`
adds message times with short pauses inside a session and long gaps between sessions, in the
transcript format ``tierwise replay`` reads (an ISO 8601 ``timestamp`` beside each message).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

__all__ = ["SEED", "synthetic_history", "timestamped"]

SEED = 20240601
Message = dict[str, Any]

_PROJECTS = [
    "Apollo launch",
    "Q3 roadmap",
    "website redesign",
    "hiring plan",
    "onboarding revamp",
    "budget review",
    "mobile app v2",
    "customer survey",
    "data migration",
    "team offsite",
]
_PEOPLE = ["Maya", "Tom", "Priya", "Lukas", "Sofia", "Dev", "Amara", "Jonas", "Elena", "Kenji"]
_TOPICS = [
    "task",
    "deadline",
    "meeting",
    "note",
    "milestone",
    "sprint review",
    "draft",
    "agenda",
    "reminder",
    "estimate",
    "blocker",
    "retro",
    "status report",
    "design doc",
]
_SLOTS = {
    "project": _PROJECTS,
    "project2": _PROJECTS,
    "person": _PEOPLE,
    "topic": _TOPICS,
    "day": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"],
    "verb": ["move", "schedule", "summarise", "assign", "reprioritise", "archive", "split", "review"],
    "status": ["on track", "at risk", "blocked", "done", "in progress", "not started"],
}
_SENTENCES = [
    "{project} has {n} open tasks, {m} of them due before {day}.",
    "\n- {verb} the {topic} for {project} ({status}, due {date})",
    "Your calendar is free on {day} between {hour}:00 and {hour2}:30.",
    "I moved the {topic} with {person} to {day} at {hour}:00 so it no longer clashes with {project}.",
    "{person} owns the {topic} for {project}; it is {status} and due on {date}.",
    "Your notes from the {project} sync mention a {topic} that {person} still has to confirm.",
    "Consider splitting the {topic} into {n} smaller tasks so {person} can start on {day}.",
    "First the {status} items for {project}, then the {topic} for {project2}.",
    "I added a reminder for {day} morning to check the {topic} with {person}.",
    "The {project} milestone slipped by {n} days because the {topic} is {status}.",
    "If you {verb} the {topic} now, {project2} keeps its {date} deadline.",
    "**{project}**: {m} of {n} tasks done; the next {topic} is on {day}.",
]
_QUESTIONS = [
    "What is left on {project} this week?",
    "Can you {verb} the {topic} with {person} to {day}?",
    "Summarise my notes on {project}.",
    "Which tasks are overdue for {project}?",
    "When am I free on {day} for a {topic} with {person}?",
    "Draft an agenda for the {project} {topic}.",
    "Is the {topic} for {project2} still {status}?",
    "Remind me what {person} said about {project}.",
]
_TOOLS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "list_tasks": lambda s: {"project": s["project"], "status": s["status"]},
    "search_notes": lambda s: {"query": f"{s['project']} {s['topic']}", "limit": s["n"]},
    "get_calendar": lambda s: {"day": s["day"], "days": s["m"] % 7 + 1},
    "create_task": lambda s: {
        "title": f"{s['verb']} {s['topic']}",
        "project": s["project"],
        "owner": s["person"],
    },
}


def _slots(rng: random.Random) -> dict[str, Any]:
    n, date = rng.randint(2, 40), f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    return {
        **{k: rng.choice(v) for k, v in _SLOTS.items()},
        "n": n,
        "m": rng.randint(0, n),
        "hour": rng.randint(8, 16),
        "hour2": rng.randint(9, 18),
        "date": date,
    }


def _text(rng: random.Random, words: int, pool: Sequence[str]) -> str:
    parts: list[str] = []
    count = 0  # words so far
    while count < words:
        sentence = rng.choice(pool).format(**_slots(rng))
        parts.append(sentence[:1].upper() + sentence[1:])
        count += len(sentence.split())
    return " ".join(parts).replace(" \n", "\n")


def _tool_result(rng: random.Random, words: int) -> str:
    items: list[dict[str, Any]] = []
    while len(json.dumps({"items": items}).split()) < words:
        s = _slots(rng)
        items.append(
            {
                "id": f"T-{rng.randint(100, 9999)}",
                "title": f"{s['verb']} {s['topic']}",
                "project": s["project"],
                "owner": s["person"],
                "status": s["status"],
                "due": s["date"],
                "note": rng.choice(_SENTENCES).format(**s).strip("\n- "),
            }
        )
    return json.dumps({"ok": True, "count": len(items), "items": items})


def synthetic_history(size: int, seed: int = SEED) -> list[Message]:
    """A deterministic productivity-assistant chat of ``size`` messages (at least 2), ending on a user turn.

    About one turn in four calls 1–2 tools; every call is followed by its result, then an answer.
    Sizes no mix of turns can reach exactly (3 and 5) come out one message short.
    """
    rng = random.Random(seed)
    system = "You are Tierwise Assistant, a productivity assistant for projects, tasks, calendars and notes. "
    messages: list[Message] = [{"role": "system", "content": system + _text(rng, 120, _SENTENCES)}]
    left = max(0, size - 2)  # messages before the final user question
    while left >= 2:
        want = 3 + rng.randint(1, 2) if rng.random() < 0.25 else 2  # messages in this turn
        fits = [n for n in (want, 2, 4, 5) if left - n >= 0 and left - n not in (1, 3)]
        need = fits[0] if fits else 2
        messages.append({"role": "user", "content": _text(rng, rng.randint(5, 60), _QUESTIONS)})
        if need > 2:
            calls = [
                {
                    "id": f"call_{rng.getrandbits(64):016x}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(_TOOLS[name](_slots(rng)))},
                }
                for name in rng.sample(sorted(_TOOLS), need - 3)
            ]
            messages.append({"role": "assistant", "content": None, "tool_calls": calls})
            messages += [
                {
                    "role": "tool",
                    "tool_call_id": call["id"],
                    "content": _tool_result(rng, rng.randint(50, 400)),
                }
                for call in calls
            ]
        answer = _text(rng, int(rng.triangular(10, 300, 60)), _SENTENCES)
        messages.append({"role": "assistant", "content": answer})
        left -= need
    messages.append({"role": "user", "content": _text(rng, rng.randint(5, 60), _QUESTIONS)})
    return messages


def timestamped(
    messages: Sequence[Message], *, seed: int = SEED, start: datetime | None = None
) -> list[Message]:
    """Copies of ``messages`` with a ``timestamp``.

    Messages are seconds to minutes apart; every 30–80 user turns a new session starts after a gap of
    hours to days.
    """
    rng = random.Random(seed + 1)
    at = start or datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
    next_session = rng.randint(30, 80)
    out = []
    for message in messages:
        if message.get("role") == "user":
            next_session -= 1
            if next_session <= 0:
                at += timedelta(hours=rng.randint(3, 60))
                next_session = rng.randint(30, 80)
            else:
                at += timedelta(minutes=rng.randint(1, 8))
        else:
            at += timedelta(seconds=rng.randint(2, 40))
        out.append({**message, "timestamp": at.isoformat()})
    return out
