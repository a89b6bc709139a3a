"""What the user asks for, recognised by rules: the offline assistant's reading of a message.

:func:`recognise` turns one message (and the user's local "now") into an :class:`Intent`: its
``kind`` and the parts a tool call needs — the words naming an item, a project to filter by,
priority and status filters, a calendar window, a duration, a start time, a recurrence. It is pure:
no store, no clock, no model, so every phrasing can be tested on its own.

The rules cover the common requests of seed 000's example dialogues (tasks, projects, notes,
calendar, creating, updating and scheduling tasks); anything else is ``"unknown"``.

Example:
    >>> from datetime import datetime
    >>> now = datetime(2026, 11, 23, 14, 5)  # a Monday
    >>> intent = recognise("What are my high priority tasks for the Q4 launch?", now)
    >>> intent.kind, intent.priority, intent.project
    ('list_tasks', ('high',), 'Q4 launch')
    >>> recognise("Tell me more about the API documentation task", now).subject
    'API documentation'
    >>> recognise("schedule the review tomorrow at 10", now).start_time
    '2026-11-24T10:00'
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any, Literal

__all__ = [
    "OPEN_STATUSES",
    "Intent",
    "IntentKind",
    "find_day",
    "find_time",
    "find_window",
    "keywords",
    "recognise",
]

IntentKind = Literal[
    "greeting",
    "thanks",
    "help",
    "list_tasks",
    "details",
    "list_projects",
    "search_notes",
    "calendar",
    "free_slots",
    "create_task",
    "update_task",
    "schedule_task",
    "unknown",
]

OPEN_STATUSES = ("backlog", "in_progress", "blocked")
"""The statuses of a task that is not done."""


@dataclass(frozen=True)
class Intent:
    """A recognised request; fields a kind does not use keep their defaults.

    Attributes:
        kind: what is asked for.
        subject: the words naming the item (task, project, note) or the search's words.
        target: ``"task"``, ``"project"`` or ``"note"`` when the message says which kind of item.
        project: a project named as a filter or as the new task's home ("for the Q4 launch").
        ordinal: "the second one" → 2; ``-1`` is "the last one".
        pronoun: the item is "it" / "this one" (the last one talked about).
        priority: priority filter (list) or the new task's priority (one value).
        status: status filter.
        overdue: only overdue tasks.
        window: a local, naive ``(start, end)`` for the calendar, slots or a date filter.
        window_label: how the message said it ("today", "this week" …).
        duration_minutes: how long (slots, scheduling, a new task).
        preferred_hours: local hours to prefer ("in the morning" → 9, 10, 11).
        title: the new task's title.
        start_date: a new or moved task's day, ``YYYY-MM-DD``.
        start_time: when to schedule, local ``YYYY-MM-DDTHH:MM``.
        recurrence: ``daily``, ``weekdays``, ``weekly``, ``biweekly`` or ``monthly``.
        updates: a task's changes as ``(field, value)`` pairs (see :meth:`changes`).
        project_status: a project status filter (``active`` …).
    """

    kind: IntentKind
    subject: str = ""
    target: str | None = None
    project: str = ""
    ordinal: int | None = None
    pronoun: bool = False
    priority: tuple[str, ...] = ()
    status: tuple[str, ...] = ()
    overdue: bool = False
    window: tuple[datetime, datetime] | None = None
    window_label: str = ""
    duration_minutes: int | None = None
    preferred_hours: tuple[int, ...] = ()
    title: str = ""
    start_date: str | None = None
    start_time: str | None = None
    recurrence: str | None = None
    updates: tuple[tuple[str, str], ...] = ()
    project_status: str | None = None

    def changes(self) -> dict[str, str]:
        """The updates as the ``updates`` argument of ``update_task``."""
        return dict(self.updates)


# -- words -----------------------------------------------------------------------------------------

_STOP = frozenset({
    "a", "an", "the", "my", "our", "your", "me", "i", "this", "that", "these", "those", "about", "on",
    "of", "for", "to", "in", "at", "with", "and", "or", "please", "task", "tasks", "todo", "project",
    "projects", "note", "notes", "one", "item", "thing", "called", "named", "titled", "any", "some",
    "all", "more", "details", "detail", "info", "information", "tell", "show", "give", "can", "you",
    "could", "would", "what", "whats", "is", "are", "it", "its", "do", "does", "did", "let", "lets",
    "let's", "us"
})  # fmt: skip
_TOKEN = re.compile(r"[a-z0-9][a-z0-9'’\-]*")


def keywords(text: str) -> list[str]:
    """The significant words of ``text``, lower case, in order (articles, "task", "project" … dropped).

    Example:
        >>> keywords("the API documentation task")
        ['api', 'documentation']
    """
    return [w.strip("'’-") for w in _TOKEN.findall(text.lower()) if w.strip("'’-") not in _STOP]


def _clean(text: str) -> str:
    """``text`` without leading articles and trailing "task"/"project"/"note", quotes and punctuation."""
    text = text.strip().strip("\"'“”‘’`").strip()
    text = re.sub(r"^(?:(?:the|my|our|a|an|this|that)\s+)+", "", text, flags=re.I)
    text = re.sub(r"\s+(?:tasks?|projects?|note|one|item)$", "", text, flags=re.I)
    return text.strip(" ,.;:!?\"'“”‘’`")


def _normalise(message: str) -> str:
    text = message.strip().replace("’", "'").replace("“", '"').replace("”", '"')
    text = re.sub(r"\s+", " ", text)
    return text.rstrip(" ?!.")


# -- dates and times -----------------------------------------------------------------------------

_WEEKDAYS = {
    "monday": 0, "mon": 0, "tuesday": 1, "tue": 1, "tues": 1, "wednesday": 2, "wed": 2,
    "thursday": 3, "thu": 3, "thur": 3, "thurs": 3, "friday": 4, "fri": 4, "saturday": 5, "sat": 5,
    "sunday": 6, "sun": 6,
}  # fmt: skip
_MONTHS = {
    m: i + 1
    for i, m in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
    )
}
_WEEKDAY = r"(monday|tuesday|wednesday|thursday|friday|saturday|sunday|mon|tues?|wed|thur?s?|fri|sat|sun)"
_MONTH = r"(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"


def find_day(text: str, today: date) -> tuple[date, str] | None:
    """The day a phrase of ``text`` names, and the phrase (``None`` if it names none).

    Example:
        >>> find_day("call Ana on Friday", date(2026, 11, 23))
        (datetime.date(2026, 11, 27), 'on Friday')
        >>> find_day("next monday", date(2026, 11, 23))[0]
        datetime.date(2026, 11, 30)
    """
    rules: list[tuple[str, object]] = [
        (r"\b(?:on\s+)?(\d{4})-(\d{2})-(\d{2})\b", "iso"),
        (r"\b(?:the\s+)?day after tomorrow\b", 2),
        (r"\b(?:by\s+|for\s+|on\s+)?tomorrow\b", 1),
        (r"\b(?:by\s+|for\s+)?(?:today|tonight|this (?:morning|afternoon|evening))\b", 0),
        (rf"\b(?:on\s+|by\s+|for\s+)?next\s+{_WEEKDAY}\b", "next"),
        (rf"\b(?:on\s+|by\s+|for\s+|this\s+|every\s+)?{_WEEKDAY}\b", "weekday"),
        (r"\b(?:by\s+|for\s+|on\s+)?next week\b", "next_week"),
        (r"\bin (\d{1,2}) days?\b", "in"),
        (rf"\b(?:on\s+|by\s+)?{_MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?\b", "month_day"),
        (rf"\b(?:on\s+|by\s+)?(?:the\s+)?(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}", "day_month"),
    ]
    for pattern, rule in rules:
        match = re.search(pattern, text, re.I)
        if match is None:
            continue
        phrase = match.group(0).strip()
        try:
            if rule == "iso":
                day = date(int(match[1]), int(match[2]), int(match[3]))
            elif isinstance(rule, int):
                day = today + timedelta(days=rule)
            elif rule in ("next", "weekday"):
                wanted = _WEEKDAYS[match.group(1).lower()]
                ahead = (wanted - today.weekday()) % 7
                if rule == "next" and ahead == 0:
                    ahead = 7
                day = today + timedelta(days=ahead)
            elif rule == "next_week":
                day = today + timedelta(days=7 - today.weekday())
            elif rule == "in":
                day = today + timedelta(days=int(match[1]))
            else:
                month_text, day_text = (match[1], match[2]) if rule == "month_day" else (match[2], match[1])
                day = date(today.year, _MONTHS[month_text[:3].lower()], int(day_text))
                if day < today - timedelta(days=60):
                    day = day.replace(year=today.year + 1)
        except (ValueError, KeyError):
            continue
        return day, phrase
    return None


def find_time(text: str) -> tuple[int, int, str] | None:
    """A time of day in ``text`` as ``(hour, minute, phrase)``; a bare hour from 1 to 7 is afternoon.

    Example:
        >>> find_time("tomorrow at 10"), find_time("at 2:30pm")[:2], find_time("at 3")[:2]
        ((10, 0, 'at 10'), (14, 30), (15, 0))
    """
    patterns = (
        r"\b(?:at\s+)?(\d{1,2})(?::(\d{2}))?\s*(am|pm|a\.m\.|p\.m\.)",
        r"\b(?:at\s+)?(\d{1,2}):(\d{2})()\b",
        r"\b(?:at|@)\s*(\d{1,2})()()(?:\s*h\b|\s*o'?clock\b)?(?![\d:/-])",
        r"\b(?:at\s+)?(noon|midday)()()",
    )
    for pattern in patterns:
        match = re.search(pattern, text, re.I)
        if match is None:
            continue
        if match[1].lower() in ("noon", "midday"):
            return 12, 0, match.group(0).strip()
        hour, minute = int(match[1]), int(match[2] or 0)
        suffix = (match[3] or "").lower().replace(".", "")
        if suffix == "pm" and hour < 12:
            hour += 12
        elif suffix == "am" and hour == 12:
            hour = 0
        elif not suffix and 1 <= hour <= 7:
            hour += 12
        if hour > 23 or minute > 59:
            continue
        return hour, minute, match.group(0).strip()
    return None


def find_window(text: str, now: datetime) -> tuple[datetime, datetime, str] | None:
    """A local window a message names — today, tomorrow, this/next week, a weekend, a day — or ``None``.

    Example:
        >>> start, end, label = find_window("what's on this week", datetime(2026, 11, 25, 9, 0))
        >>> start.isoformat(), end.isoformat(), label
        ('2026-11-25T00:00:00', '2026-11-30T00:00:00', 'this week')
    """
    midnight = datetime.combine(now.date(), datetime.min.time())
    monday = midnight - timedelta(days=now.weekday())
    lower = text.lower()
    if re.search(r"\bnext week\b", lower):
        return monday + timedelta(days=7), monday + timedelta(days=14), "next week"
    if re.search(r"\b(?:this|the|rest of the) week\b|\bweek\b", lower):
        return midnight, monday + timedelta(days=7), "this week"
    if re.search(r"\b(?:this |the )?weekend\b", lower):
        saturday = monday + timedelta(days=5)
        return saturday, saturday + timedelta(days=2), "this weekend"
    found = find_day(text, now.date())
    if found is None:
        return None
    day = datetime.combine(found[0], datetime.min.time())
    if found[0] == now.date():
        label = "today"
    elif found[0] == now.date() + timedelta(days=1):
        label = "tomorrow"
    else:
        label = day.strftime("%A %d %b")
    return day, day + timedelta(days=1), label


def _duration(text: str) -> tuple[int, str] | None:
    lower = text.lower()
    words = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4}
    match = re.search(r"\b(?:for\s+)?(half an|a half|half) hour\b", lower)
    if match:
        return 30, match.group(0)
    match = re.search(r"\b(?:for\s+)?(?:a\s+)?quarter (?:of an )?hour\b", lower)
    if match:
        return 15, match.group(0)
    match = re.search(r"\b(?:for\s+)?(\d+(?:\.\d+)?)[\s-]*(hours?|hrs?|h|minutes?|mins?|m)\b", lower)
    if not match:
        match = re.search(
            r"\b(?:for\s+)?(an?|one|two|three|four)[\s-]+(?:free\s+)?(hours?|minutes?|mins?)\b", lower
        )
    if not match:
        return None
    amount = float(words.get(match[1], 0) or match[1])
    minutes = amount * 60 if match[2].startswith("h") else amount
    return max(5, min(1440, round(minutes))), match.group(0)


def _recurrence(text: str) -> tuple[str, str] | None:
    alone = r"(?=\s*(?:$|,|;|at\b|on\b|from\b|starting\b|for\b|in the\b))"  # "weekly", not "weekly review"
    rules = (
        (r"\b(?:every|each)\s+(?:week\s*day|work\s*day|weekday)s?\b|\bon weekdays\b", "weekdays"),
        (r"\bevery (?:other|second|2nd) week\b|\bevery (?:two|2) weeks\b", "biweekly"),
        (r"\b(?:every|each) (?:day|morning|evening)\b", "daily"),
        (rf"\b(?:every|each) (?:week|{_WEEKDAY})\b", "weekly"),
        (r"\b(?:every|each) month\b", "monthly"),
        (r"\bweekdays\b" + alone, "weekdays"),
        (r"\b(?:bi-?weekly|fortnightly)\b" + alone, "biweekly"),
        (r"\bdaily\b" + alone, "daily"),
        (r"\bweekly\b" + alone, "weekly"),
        (r"\bmonthly\b" + alone, "monthly"),
    )
    for pattern, pattern_name in rules:
        match = re.search(pattern, text, re.I)
        if match:
            return pattern_name, match.group(0)
    return None


def _hours(text: str) -> tuple[tuple[int, ...], str]:
    lower = text.lower()
    for pattern, hours in (
        (r"\b(?:in the |this )?morning\b|\bbefore lunch\b|\bearly\b", (9, 10, 11)),
        (r"\b(?:in the |this )?afternoon\b|\bafter lunch\b", (13, 14, 15, 16)),
        (r"\b(?:in the |this )?evening\b|\blate\b", (17, 18, 19)),
    ):
        match = re.search(pattern, lower)
        if match:
            return hours, match.group(0)
    return (), ""


def _remove(text: str, *phrases: str) -> str:
    for phrase in phrases:
        if phrase:
            text = re.sub(r"\s*,?\s*" + re.escape(phrase) + r"\b", " ", text, count=1, flags=re.I)
    return re.sub(r"\s+", " ", text).strip(" ,;:-")


# -- filters ---------------------------------------------------------------------------------------

_PRIORITY_WORDS = (
    (r"\b(?:high|top)[\s-]*priority\b|\burgent\b|\bimportant\b|\bcritical\b|\bhigh[\s-]pri\b", "high"),
    (r"\blow[\s-]*priority\b|\bnot urgent\b", "low"),
    (r"\bmedium[\s-]*priority\b|\bnormal priority\b", "medium"),
)
_STATUS_WORDS = (
    (r"\bblocked\b|\bstuck\b|\bwaiting on\b", ("blocked",)),
    (r"\bin[\s-]progress\b|\bongoing\b|\bstarted\b|\bworking on\b", ("in_progress",)),
    (r"\bdone\b|\bcompleted?\b|\bfinished\b|\bclosed\b", ("done",)),
    (r"\bbacklog\b|\bnot started\b", ("backlog",)),
    (r"\bopen\b|\bactive\b|\bpending\b|\bremaining\b|\boutstanding\b|\bunfinished\b", OPEN_STATUSES),
)
_FILTER_WORDS = re.compile(
    r"\b(?:high|top|low|medium|normal)[\s-]*priority\b|\burgent\b|\bimportant\b|\bcritical\b|\bblocked\b|"
    r"\bin[\s-]progress\b|\bongoing\b|\bstarted\b|\bdone\b|\bcompleted?\b|\bfinished\b|\bbacklog\b|"
    r"\bopen\b|\bactive\b|\bpending\b|\bremaining\b|\boutstanding\b|\boverdue\b|\blate\b|\bcurrent\b|"
    r"\ball\b|\bother\b|\bnext\b|\btoday'?s?\b|\btomorrow'?s?\b|\bthis week'?s?\b",
    re.I,
)


def _priorities(text: str) -> tuple[str, ...]:
    return tuple(value for pattern, value in _PRIORITY_WORDS if re.search(pattern, text, re.I))


def _statuses(text: str) -> tuple[str, ...]:
    for pattern, values in _STATUS_WORDS:
        if re.search(pattern, text, re.I):
            return values
    return ()


def _ordinal(text: str) -> int | None:
    ordinals = {
        "first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4, "4th": 4,
        "fifth": 5, "5th": 5, "sixth": 6, "6th": 6, "seventh": 7, "7th": 7, "eighth": 8, "8th": 8,
        "ninth": 9, "9th": 9, "tenth": 10, "10th": 10, "last": -1,
    }  # fmt: skip
    lower = text.lower().strip()
    match = re.fullmatch(
        r"(?:(?:the|that)\s+)?(?:number|no\.?|#)\s*(\d{1,2})(?:\s+(?:one|task|project|note))?", lower
    )
    if match:
        return int(match[1])
    match = re.fullmatch(
        r"(?:(?:the|that)\s+)?(\w+)(?:\s+(?:one|task|project|note|item))?(?:\s+(?:on|in|from) the list)?",
        lower,
    )
    if match and match[1] in ordinals:
        return ordinals[match[1]]
    return None


_PRONOUN = re.compile(r"^(?:it|this|that|this one|that one|this task|that task|them)$", re.I)


def _target(text: str) -> str | None:
    lower = text.lower()
    for word, kind in (("task", "task"), ("todo", "task"), ("project", "project"), ("note", "note")):
        if re.search(rf"\b{word}s?\b", lower):
            return kind
    return None


def _item(kind: IntentKind, phrase: str, target: str | None = None, **fields: Any) -> Intent:
    """An intent about one item named by ``phrase`` (an ordinal, a pronoun or words)."""
    target = target or _target(phrase)
    ordinal = _ordinal(phrase)
    if ordinal is not None:
        return Intent(kind, target=target, ordinal=ordinal, **fields)
    subject = _clean(phrase)
    if not subject or _PRONOUN.match(subject):
        return Intent(kind, target=target, pronoun=True, **fields)
    return Intent(kind, subject=subject, target=target, **fields)


# -- the recogniser ----------------------------------------------------------------------------------

_POLITE = r"^(?:(?:please|pls|can you|could you|would you|will you|i'd like you to|i want you to)\s+)*"
_TASK_WORD = r"\b(?:tasks?|todos?|to-dos?|to do list|to-do list)\b"


def recognise(message: str, now: datetime) -> Intent:
    """Recognise one user message; ``now`` is the user's local time (naive or aware, used as local).

    Example:
        >>> now = datetime(2026, 11, 23, 14, 5)
        >>> recognise("Show me my active projects", now).project_status
        'active'
        >>> recognise("mark the webhook task as done", now).updates
        (('status', 'done'),)
    """
    now = now.replace(tzinfo=None)
    text = _normalise(message)
    lower = text.lower()
    if not lower:
        return Intent("help")
    if re.fullmatch(r"(?:hi|hello|hey|hiya|yo|howdy|good (?:morning|afternoon|evening)|hola|ola|olá)"
                    r"(?: there| again)?(?:[ ,]+\w+)?", lower):  # fmt: skip
        return Intent("greeting")
    if re.fullmatch(
        r"(?:thanks?(?: you)?|thx|cheers|great|perfect|ok(?:ay)?|cool|nice)(?:[ ,!]+\w+)*", lower
    ) and (len(lower.split()) <= 4):
        return Intent("thanks")
    if re.search(r"\bwhat can you do\b|^help\b|\bhow (?:do|can) (?:you|i use you)\b|\bwho are you\b|"
                 r"\bwhat are you\b|\bwhat do you do\b", lower):  # fmt: skip
        return Intent("help")
    if re.search(r"\bsub-?tasks?\b", lower) and not re.search(r"\b(?:add|create|new)\b", lower):
        match = re.search(r"\b(?:of|for|in|under|on)\s+(.+)$", text, re.I)
        return _item("details", match[1] if match else "it", "task")
    for recogniser in (_create, _schedule, _update, _details, _free_slots, _calendar, _lists):
        intent = recogniser(text, lower, now)
        if intent is not None:
            return intent
    return Intent("unknown", subject=text)


def _create(text: str, lower: str, now: datetime) -> Intent | None:
    head = re.match(
        _POLITE + r"(?:create|add|make|new|log|capture|jot down|note down|set up)\s+(?:me\s+)?"
        r"(?:a\s+|an\s+|another\s+)?(?:new\s+)?(?:task|todo|to-do|to do|reminder)\b\s*[:\-–]?\s*(.*)$",
        lower,
    )
    rest: str | None = None
    if head:
        rest = text[head.start(1) :]
    else:
        for pattern in (
            _POLITE + r"remind me to\s+(.+)$",
            _POLITE + r"(?:add|put)\s+(.+?)\s+(?:to|on) my (?:tasks|task list|to-?do(?: list)?|list)$",
        ):
            match = re.match(pattern, lower)
            if match:
                rest = text[match.start(1) : match.end(1)]
                break
    if rest is None:
        return None
    project = ""
    match = re.match(  # "to the Q4 launch project: write notes", "for the marathon: book physio"
        r"^(?:to|in|for|under|on)\s+(?:the|my)\s+((?:\S+\s+){0,3}?\S+?)(?:\s+project\b\s*[:,\-–]?|\s*:)\s*(.+)$",
        rest,
        re.I,
    )
    if match is None:
        match = re.match(r"^(?:in|for|under)\s+((?:\S+\s+){0,3}?\S+?)(?:\s+project)?\s*:\s*(.+)$", rest, re.I)
    if match:
        project, rest = match[1], match[2]
    rest = re.sub(r"^(?:to|called|named|titled|saying|that says)\s+", "", rest.strip(), flags=re.I)
    for pattern in (
        r"(?:,\s*|\s+)(?:for|in|under|to|on)\s+(?:the\s+|my\s+)?project\s+([^,;]+)",
        r"(?:,\s*|\s+)(?:for|in|under|to|on)\s+(?:the\s+|my\s+)?([^,;]+?)\s+project\b",
    ):
        match = re.search(pattern, rest, re.I)
        if match and not project:
            project = match[1]
            rest = (rest[: match.start()] + rest[match.end() :]).strip()
    fields: dict[str, Any] = {}
    priority = _priorities(rest)
    if priority:
        fields["priority"] = priority[:1]
        for pattern, _ in _PRIORITY_WORDS:
            rest = re.sub(
                r"(?:,\s*|\s+)?(?:with\s+|as\s+|at\s+)?(?:a\s+)?(?:" + pattern + ")", " ", rest, flags=re.I
            )
    recurrence = _recurrence(rest)
    if recurrence:
        fields["recurrence"] = recurrence[0]
        rest = _remove(rest, recurrence[1])
    day = find_day(rest, now.date())
    if day:
        fields["start_date"] = day[0].isoformat()
        rest = _remove(rest, day[1])
        rest = re.sub(r"\s+(?:due|by|starting|start|on|for)$", "", rest, flags=re.I)
    duration = _duration(rest)
    if duration:
        fields["duration_minutes"] = duration[0]
        rest = _remove(rest, duration[1])
    title = rest.strip(" ,;:.-\"'“”")
    title = re.sub(r"\s+(?:due|by|on)$", "", title, flags=re.I)
    title = title[:1].upper() + title[1:]
    return Intent("create_task", title=title[:300], project=_clean(project), **fields)


def _schedule(text: str, lower: str, now: datetime) -> Intent | None:
    match = re.match(
        _POLITE + r"(?:schedule|book|block(?: out)?|find|make|reserve|set aside|put|add|plan|set)"
        r"(?:\s+(?:some\s+|a\s+)?(?:time|slot|an? hour)\s+for)?\s+(.+)$",
        lower,
    )
    if match is None:
        return None
    lead = match.group(0)[: match.start(1)].strip()
    verb, rest = lead.split()[-1], text[match.start(1) :]
    if verb in ("find", "make", "reserve", "aside") and not lead.endswith("for"):
        return None
    if verb in ("put", "add", "set", "plan") and not re.search(
        r"\b(?:on|in|to|into) (?:my |the )?(?:calendar|agenda|schedule)\b", rest, re.I
    ):
        return None
    rest = re.sub(r"\s*\b(?:on|in|to|into) (?:my |the )?(?:calendar|agenda|schedule)\b", "", rest, flags=re.I)
    rest = re.sub(r"\s*\bfor me\b", "", rest, flags=re.I)
    fields: dict[str, Any] = {}
    recurrence = _recurrence(rest)
    if recurrence:
        fields["recurrence"] = recurrence[0]
    time_found = find_time(rest)
    if time_found:
        rest = _remove(rest, time_found[2])
    duration = _duration(rest)
    if duration:
        fields["duration_minutes"] = duration[0]
        rest = _remove(rest, duration[1])
    day = find_day(rest, now.date())
    if day:
        rest = _remove(rest, day[1])
    if recurrence:
        rest = _remove(rest, recurrence[1])
    hours, phrase = _hours(rest)
    if hours:
        fields["preferred_hours"] = hours
        rest = _remove(rest, phrase)
    when = day[0] if day else None
    if time_found:
        hour, minute = time_found[0], time_found[1]
        later_today = (hour, minute) > (now.hour, now.minute)
        if when is None:
            when = now.date() if later_today else now.date() + timedelta(days=1)
        elif when == now.date() and not later_today and day and re.search(_WEEKDAY, day[1], re.I):
            when += timedelta(days=7)  # "every Monday at 9" on a Monday afternoon: next Monday
        fields["start_time"] = f"{when.isoformat()}T{hour:02d}:{minute:02d}"
    elif when is not None:
        start = datetime.combine(when, datetime.min.time())
        fields["window"] = (start, start + timedelta(days=1))
        fields["window_label"] = when.isoformat()
    rest = re.sub(r"\s+(?:on|at|for|from)$", "", rest.strip(" ,;:"), flags=re.I)
    return _item("schedule_task", rest, "task", **fields)


_STATUS_VALUES = {
    "done": "done", "complete": "done", "completed": "done", "finished": "done", "closed": "done",
    "in progress": "in_progress", "in-progress": "in_progress", "started": "in_progress",
    "blocked": "blocked", "stuck": "blocked", "backlog": "backlog", "todo": "backlog", "to do": "backlog",
    "not started": "backlog", "open": "backlog",
}  # fmt: skip
_PRIORITY_VALUES = {
    "high": "high",
    "urgent": "high",
    "top": "high",
    "low": "low",
    "medium": "medium",
    "normal": "medium",
}
_STATE = r"(done|complete|completed|finished|closed|in progress|in-progress|started|blocked|stuck|backlog|todo|to do|not started|open)"  # noqa: E501
_LEVEL = r"(high|urgent|top|low|medium|normal)"


def _update(text: str, lower: str, now: datetime) -> Intent | None:
    rules: list[tuple[str, str]] = [
        (_POLITE + rf"(?:mark|set|flag|move|change)\s+(.+?)\s+(?:as|to|status to)\s+{_STATE}$", "status"),
        (_POLITE + rf"mark\s+(.+?)\s+{_STATE}$", "status"),
        (rf"^(.+?)\s+is\s+(?:now\s+)?{_STATE}$", "status"),
        (r"^(?:i(?:'ve| have)?\s+)?(?:just\s+)?(?:finished|completed|done with)\s+(.+)$", "done"),
        (_POLITE + r"(?:complete|close|finish|check off|tick off)\s+(.+)$", "done"),
        (_POLITE + r"(?:start|begin)\s+(?:working on\s+|work on\s+)?(.+)$", "start"),
        (_POLITE + r"(?:set|make|change|mark|move|bump)\s+(.+?)\s+(?:to\s+|as\s+)?(?:a\s+)?"
         + _LEVEL + r"(?:[\s-]priority)?$", "priority"),
        (_POLITE + rf"(?:set|change) (?:the )?priority (?:of|for|on) (.+?) to {_LEVEL}$", "priority"),
        (rf"^(.+?)\s+is\s+(?:now\s+)?(?:a\s+)?{_LEVEL}(?:[\s-]priority)?$", "priority"),
        (_POLITE + r"(?:prioriti[sz]e|escalate)\s+(.+)$", "high"),
        (_POLITE + r"(?:deprioriti[sz]e)\s+(.+)$", "low"),
        (_POLITE + r"(?:move|reschedule|push|postpone|shift|defer|change the date of)\s+(.+?)\s+"
         r"(?:to|until|till)\s+(.+)$", "date"),
        (_POLITE + r"rename\s+(.+?)\s+to\s+(.+)$", "title"),
    ]  # fmt: skip
    for pattern, what in rules:
        match = re.match(pattern, lower)
        if match is None:
            continue
        phrase = text[match.start(1) : match.end(1)]
        if what == "status":
            updates = (("status", _STATUS_VALUES[match[2]]),)
        elif what in ("done", "start"):
            if what == "start" and re.search(r"\b(?:project|timer|meeting)\b", lower):
                continue
            updates = (("status", "done" if what == "done" else "in_progress"),)
        elif what == "priority":
            updates = (("priority", _PRIORITY_VALUES[match[2]]),)
        elif what in ("high", "low"):
            updates = (("priority", what),)
        elif what == "date":
            target = text[match.start(2) : match.end(2)]
            if target.lower() in _STATUS_VALUES:
                updates = (("status", _STATUS_VALUES[target.lower()]),)
            else:
                day = find_day(target, now.date())
                if day is None:
                    continue
                updates = (("start_date", day[0].isoformat()),)
        else:
            updates = (("title", text[match.start(2) : match.end(2)].strip(" \"'“”")),)
        if not _clean(phrase) and not _PRONOUN.match(phrase.strip()):
            continue
        return _item("update_task", phrase, "task", updates=updates)
    return None


def _details(text: str, lower: str, now: datetime) -> Intent | None:
    if re.match(r"^what(?:'s| is| are)? in[\s-]progress\b", lower):
        return None
    rules = (
        r"^(?:tell me |show me |give me |get me |i want |i'd like |i need )?(?:some |the )?"
        r"(?:more|details|detail|info|information|everything|full details)(?: you have)?\s+"
        r"(?:about|on|of|for|regarding|re)\s+(.+)$",
        r"^(?:tell me|talk to me) about\s+(.+)$",
        r"^what(?:'s| is) in\s+(.+?)(?: note)?$",
        r"^(?:what(?:'s| is) the status of|status of|what about|how about|how is|how's|describe|explain|"
        r"read|expand on|drill into|dig into|zoom in on)\s+(.+)$",
        r"^(?:open|show|show me|pull up|let's look at|look at)\s+(.+?)(?:\s+in detail)?$",
    )
    for index, pattern in enumerate(rules):
        match = re.match(_POLITE.rstrip("*") + "*" + pattern.lstrip("^"), lower)
        if match is None:
            continue
        phrase = text[match.start(1) : match.end(1)]
        if index == len(rules) - 1 and _ordinal(phrase) is None and (
            re.search(_TASK_WORD + r"|\bprojects\b|\bnotes\b|\bcalendar\b|\bagenda\b|\bschedule\b|"
                      r"\bevents?\b|\bslots?\b|\bfree\b|\bmeetings\b", phrase, re.I)
        ):  # fmt: skip
            return None  # "show me my tasks", "show my calendar": lists, not an item
        if index == 2 and re.search(r"\bcalendar\b|\bagenda\b", phrase, re.I):
            return None
        return _item("details", phrase, "note" if index == 2 and lower.endswith(" note") else None)
    if _ordinal(lower) is not None:
        return _item("details", lower)
    match = re.match(
        r"^(?:i (?:want|need|would like|'d like) to |let's |lets |can we |i'll |time to )?"
        r"(?:work on|focus on|switch to|go to|jump into|continue with|continue on|pick up)\s+(.+)$",
        lower,
    )
    if match:
        phrase = text[match.start(1) : match.end(1)]
        return _item("details", phrase, _target(phrase) or "project")
    return None


def _free_slots(text: str, lower: str, now: datetime) -> Intent | None:
    asks = re.search(
        r"\bfree\b|\bavailab|\bopen (?:slot|time)\b|\bslots?\b|\bgap\b|\btime to\b|\bspare\b|\bwhen can i\b|"
        r"\bwhen could i\b|\bfind (?:me )?(?:an? )?(?:hour|half|\d+ ?(?:min|h)\w*|time)\b",
        lower,
    )
    if not asks:
        return None
    fields: dict[str, Any] = {}
    duration = _duration(text)
    fields["duration_minutes"] = duration[0] if duration else 60
    hours, _ = _hours(text)
    fields["preferred_hours"] = hours
    window = find_window(text, now)
    if window is not None:
        fields["window"], fields["window_label"] = (window[0], window[1]), window[2]
    return Intent("free_slots", **fields)


def _calendar(text: str, lower: str, now: datetime) -> Intent | None:
    calendar_words = (
        r"\bcalendar\b|\bagenda\b|\bmeetings?\b|\bevents?\b|\bappointments?\b|\bschedule\b|\bbusy\b|"
        r"\bcalls?\b(?! (?:with|to))"
    )
    day_question = re.search(
        r"^what(?:'s| is| do i have)? (?:on |happening |planned )?(?:for )?"
        r"(?:today|tomorrow|this week|next week|on \w+)$|\blooks? like\b|\bhow busy\b",
        lower,
    )
    if not (re.search(calendar_words, lower) or day_question) or re.search(_TASK_WORD, lower):
        return None
    window = find_window(text, now)
    if window is None:
        return Intent("calendar")
    return Intent("calendar", window=(window[0], window[1]), window_label=window[2])


def _lists(text: str, lower: str, now: datetime) -> Intent | None:
    tasks_named = re.search(_TASK_WORD, lower)
    plate = re.search(
        r"\bon my plate\b|\bwhat should i (?:work on|do|focus on)\b|\bwhat do i (?:need|have) to do\b|"
        r"\bwhat'?s next\b(?! week)|\boverdue\b|\bbehind on\b|\bwhat(?:'s| is) (?:in[\s-]progress|blocked)\b",
        lower,
    )
    if tasks_named or plate:
        return _task_list(text, lower, now, tasks_named)
    if re.search(r"\bnotes?\b", lower):
        match = re.search(
            r"\b(?:about|on|for|regarding|re|related to|mentioning|matching|containing|with)\s+(.+)$", lower
        )
        subject, project = (_clean(text[match.start(1) : match.end(1)]) if match else ""), ""
        if match and re.search(r"\bproject\b", match[1]):
            subject, project = "", subject
        return Intent("search_notes", subject=subject, project=project)
    if re.search(r"\bprojects?\b", lower):
        match = re.search(r"\b(?:about|on|for|related to|mentioning|matching|tagged|with)\s+(.+)$", lower)
        subject = _clean(text[match.start(1) : match.end(1)]) if match else ""
        status = next(
            (s for s in ("active", "paused", "completed", "archived") if re.search(rf"\b{s}\b", lower)), None
        )
        if status is None and re.search(r"\b(?:done|finished)\b", lower):
            status = "completed"
        return Intent("list_projects", subject=subject, project_status=status)
    return None


def _task_list(text: str, lower: str, now: datetime, tasks_named: re.Match[str] | None) -> Intent:
    fields: dict[str, Any] = {"priority": _priorities(lower), "status": _statuses(lower)}
    if re.search(r"\boverdue\b|\blate\b|\bbehind\b|\bpast due\b", lower):
        fields["overdue"] = True
    if re.search(r"\bwhat'?s next\b|\bwhat should i\b|\bon my plate\b", lower) and not fields["status"]:
        fields["status"] = OPEN_STATUSES
    window = find_window(text, now)
    if window is not None:
        fields["window"], fields["window_label"] = (window[0], window[1]), window[2]
    subject = project = ""
    if tasks_named:
        after = text[tasks_named.end() :]
        before = text[: tasks_named.start()]
        match = re.search(
            r"\b(?:about|mentioning|related to|matching|containing|regarding)\s+(.+)$", after, re.I
        )
        if match:
            subject = _clean(match[1])
            after = after[: match.start()]
        match = re.search(r"\b(?:for|in|on|under|from|of|within)\s+(?:the\s+|my\s+)?(.+?)$", after, re.I)
        if match and not find_window(match[1], now) and not _FILTER_WORDS.fullmatch(match[1].strip()):
            project = _clean(re.sub(r"\s+project$", "", match[1].strip(), flags=re.I))
        if not project:
            head = re.sub(
                r"^(?:(?:what|which|show|list|give|get|see|find|are|is|me|do|i|have|my|the|all|our|any|"
                r"can|you|please|were|there|how|many)\s+)+",
                "",
                before.strip() + " ",
                flags=re.I,
            )
            head = _FILTER_WORDS.sub(" ", head)
            head = re.sub(r"\bproject'?s?\b|\bpriority\b|\bmy\b|\bthe\b", " ", head, flags=re.I)
            if keywords(head):
                project = re.sub(r"\s+", " ", head).strip(" ,'")
    if project and find_window(project, now):
        project = ""
    return Intent("list_tasks", subject=subject, project=project, **fields)
