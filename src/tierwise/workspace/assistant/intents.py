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

The phrases it reads come from :mod:`tierwise.workspace.assistant.when` (days, times, windows, durations,
recurrences) and :mod:`tierwise.workspace.assistant.phrases` (keywords, filter words, ordinals, pronouns);
``OPEN_STATUSES``, ``find_day``, ``find_time``, ``find_window`` and ``keywords`` are re-exported here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from tierwise.workspace.assistant.phrases import (
    FILTER_WORDS,
    INSIST,
    OPEN_STATUSES,
    PLAN_DAY,
    PRIORITY_WORDS,
    PRONOUN,
    SLOT,
    YES,
    clean_phrase,
    find_ordinal,
    find_priorities,
    find_statuses,
    find_target,
    keywords,
    normalise_message,
    remove_phrases,
)
from tierwise.workspace.assistant.when import (
    WEEKDAY,
    find_day,
    find_duration,
    find_hours,
    find_part,
    find_recurrence,
    find_time,
    find_window,
)

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
    "plan_day",
    "unknown",
]


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
        part: the part of the day asked for, ``(label, first hour, end hour)`` (``("morning", 8, 12)``):
            free slots and scheduling stay within those local hours.
        title: the new task's title.
        start_date: a new or moved task's day, ``YYYY-MM-DD``.
        start_time: when to schedule, local ``YYYY-MM-DDTHH:MM``.
        recurrence: ``daily``, ``weekdays``, ``weekly``, ``biweekly`` or ``monthly``.
        updates: a task's changes as ``(field, value)`` pairs (see :meth:`changes`).
        project_status: a project status filter (``active`` …).
        preview: the item is only to be shown ("show me the hiring project"): its preview answers,
            the detail tool is for "tell me more", "open", "work on".
        insist: book it even if it overlaps ("schedule it at 10 anyway", "book it anyway").
        slot: "in the second slot", "book the second one" → 2: a place in the last list of free
            slots an answer showed (``-1`` is the last one); the item's place when none was shown.
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
    preview: bool = False
    part: tuple[str, int, int] | None = None
    insist: bool = False
    slot: int | None = None

    def changes(self) -> dict[str, str]:
        """The updates as the ``updates`` argument of ``update_task``."""
        return dict(self.updates)


def _item(kind: IntentKind, phrase: str, target: str | None = None, **fields: Any) -> Intent:
    """An intent about one item named by ``phrase`` (an ordinal, a pronoun or words)."""
    target = target or find_target(phrase)
    ordinal = find_ordinal(phrase)
    pronoun = PRONOUN.match(phrase.strip()) or PRONOUN.match(clean_phrase(phrase) or "it")  # "that task"
    if ordinal is not None or pronoun:  # shown already: its details
        fields.pop("preview", None)
    if ordinal is not None:
        return Intent(kind, target=target, ordinal=ordinal, **fields)
    subject = clean_phrase(phrase)
    if not subject or pronoun:
        return Intent(kind, target=target, pronoun=True, **fields)
    return Intent(kind, subject=subject, target=target, **fields)


# -- the recogniser ----------------------------------------------------------------------------------

_POLITE = r"^(?:(?:please|pls|can you|could you|would you|will you|i'd like you to|i want you to)\s+)*"
_TASK_WORD = r"\b(?:tasks?|todos?|to-dos?|to do list|to-do list)\b"
_GENRE = (
    r"(?:haiku|poem|poetry|limerick|sonnet|song|lyrics|rap|story|tale|joke|pun|riddle|essay|speech|"
    r"tweet|slogan|email|e-mail|letter|cover letter|blog post|post|press release|toast)s?"
)
# Requests to write or transform text: the offline assistant only reads and changes the workspace.
_COMPOSE = re.compile(
    _POLITE + r"(?:"
    r"(?:write|compose|draft|pen|make up|invent|come up with|tell|sing|give|create|generate)\s+"
    r"(?:me\s+|us\s+)?"
    r"(?:a\s+|an\s+|some\s+|another\s+|the\s+)?(?:\w+\s+){0,2}?" + _GENRE + r"\b"
    r"|write\s+(?:me|us)\b"
    r"|(?:translate|rewrite|rephrase|paraphrase|proofread|brainstorm|compose)\b"
    r")"
)


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
    text = normalise_message(message)
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
    created = _create(text, lower, now)  # "add a task: write a poem for Mum" is a task
    if created is not None:
        return created
    if _COMPOSE.search(lower):  # writing, translating, jokes: not a search of the workspace
        return Intent("unknown", subject=text)
    for recogniser in (_schedule, _update, _details, _free_slots, _calendar, _lists):
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
    priority = find_priorities(rest)
    if priority:
        fields["priority"] = priority[:1]
        for pattern, _ in PRIORITY_WORDS:
            rest = re.sub(
                r"(?:,\s*|\s+)?(?:with\s+|as\s+|at\s+)?(?:a\s+)?(?:" + pattern + ")", " ", rest, flags=re.I
            )
    recurrence = find_recurrence(rest)
    if recurrence:
        fields["recurrence"] = recurrence[0]
        rest = remove_phrases(rest, recurrence[1])
    day = find_day(rest, now.date())
    if day:
        fields["start_date"] = day[0].isoformat()
        rest = remove_phrases(rest, day[1])
        rest = re.sub(r"\s+(?:due|by|starting|start|on|for)$", "", rest, flags=re.I)
    duration = find_duration(rest)
    if duration:
        fields["duration_minutes"] = duration[0]
        rest = remove_phrases(rest, duration[1])
    title = rest.strip(" ,;:.-\"'“”")
    title = re.sub(r"\s+(?:due|by|on)$", "", title, flags=re.I)
    title = title[:1].upper() + title[1:]
    return Intent("create_task", title=title[:300], project=clean_phrase(project), **fields)


def _schedule(text: str, lower: str, now: datetime) -> Intent | None:
    yes = YES.match(text)
    if yes and yes.end() < len(text):
        text, lower = text[yes.end() :], lower[yes.end() :]
    fields: dict[str, Any] = {}
    insist = INSIST.search(text)
    if insist:
        fields["insist"] = True
        text = (text[: insist.start()] + text[insist.end() :]).strip()
        lower = text.lower()
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
    slot = SLOT.search(rest)
    if slot:  # "in the second slot", "book the second one (for the changelog task)"
        fields["slot"] = find_ordinal(slot[1])
        rest = (rest[: slot.start()] + " " + rest[slot.end() :]).strip()
        rest = re.sub(r"^(?:for|with)\s+", "", rest, flags=re.I) or "it"
    recurrence = find_recurrence(rest)
    if recurrence:
        fields["recurrence"] = recurrence[0]
    time_found = find_time(rest)
    if time_found:
        rest = remove_phrases(rest, time_found[2])
    duration = find_duration(rest)
    if duration:
        fields["duration_minutes"] = duration[0]
        rest = remove_phrases(rest, duration[1])
    day = find_day(rest, now.date())
    if day:
        rest = remove_phrases(rest, day[1])
    if recurrence:
        rest = remove_phrases(rest, recurrence[1])
    part = find_part(rest)
    hours, phrase = find_hours(rest)
    if hours:
        fields["preferred_hours"] = hours
        rest = remove_phrases(rest, phrase)
    if part and not time_found:
        fields["part"] = part[:3]
    when = day[0] if day else None
    if time_found:
        hour, minute = time_found[0], time_found[1]
        later_today = (hour, minute) > (now.hour, now.minute)
        if when is None:
            when = now.date() if later_today else now.date() + timedelta(days=1)
        elif when == now.date() and not later_today and day and re.search(WEEKDAY, day[1], re.I):
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
        if not clean_phrase(phrase) and not PRONOUN.match(phrase.strip()):
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
        r"^(?:open|show me|show|pull up|let's look at|look at)\s+(.+?)(?:\s+in detail)?$",
    )
    for index, pattern in enumerate(rules):
        match = re.match(_POLITE.rstrip("*") + "*" + pattern.lstrip("^"), lower)
        if match is None:
            continue
        phrase = text[match.start(1) : match.end(1)]
        named = find_ordinal(phrase) is not None or PRONOUN.match(phrase.strip())  # "show me that task"
        if index == len(rules) - 1 and not named and (
            re.search(_TASK_WORD + r"|\bprojects\b|\bnotes\b|\bcalendar\b|\bagenda\b|\bschedule\b|"
                      r"\bevents?\b|\bslots?\b|\bfree\b|\bmeetings\b", phrase, re.I)
        ):  # fmt: skip
            return None  # "show me my tasks", "show my calendar": lists, not an item
        if index == 2 and re.search(r"\bcalendar\b|\bagenda\b", phrase, re.I):
            return None
        if index == len(rules) - 1 and not re.search(r"^\W*open\b|\bin detail$", lower):
            return _item("details", phrase, preview=True)  # "show me X": its preview, not its details
        return _item("details", phrase, "note" if index == 2 and lower.endswith(" note") else None)
    if find_ordinal(lower) is not None:
        return _item("details", lower)
    match = re.match(
        r"^(?:i (?:want|need|would like|'d like) to |let's |lets |can we |i'll |time to )?"
        r"(?:work on|focus on|switch to|go to|jump into|continue with|continue on|pick up)\s+(.+)$",
        lower,
    )
    if match:
        phrase = text[match.start(1) : match.end(1)]
        return _item("details", phrase, find_target(phrase) or "project")
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
    duration = find_duration(text)
    fields["duration_minutes"] = duration[0] if duration else 60
    hours, _ = find_hours(text)
    fields["preferred_hours"] = hours
    part = find_part(text)
    if part:
        fields["part"] = part[:3]
    window = find_window(text, now)
    if window is not None:
        fields["window"], fields["window_label"] = (window[0], window[1]), window[2]
    elif part:  # "in the morning": the next one (today's while it lasts, else tomorrow's)
        day = datetime.combine(now.date(), datetime.min.time())
        if now.hour >= part[2]:
            day += timedelta(days=1)
        fields["window"] = (day, day + timedelta(days=1))
        fields["window_label"] = "today" if day.date() == now.date() else "tomorrow"
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
    if PLAN_DAY.search(lower) and not re.search(r"\bproject\b|\bnext week\b|\bthis week\b", lower):
        window = find_window(text, now)
        if window is None:
            start = datetime.combine(now.date(), datetime.min.time())
            window = (start, start + timedelta(days=1), "today")
        return Intent("plan_day", window=(window[0], window[1]), window_label=window[2])
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
        subject, project = (clean_phrase(text[match.start(1) : match.end(1)]) if match else ""), ""
        if match and re.search(r"\bproject\b", match[1]):
            subject, project = "", subject
        return Intent("search_notes", subject=subject, project=project)
    if re.search(r"\bprojects?\b", lower):
        match = re.search(r"\b(?:about|on|for|related to|mentioning|matching|tagged|with)\s+(.+)$", lower)
        subject = clean_phrase(text[match.start(1) : match.end(1)]) if match else ""
        status = next(
            (s for s in ("active", "paused", "completed", "archived") if re.search(rf"\b{s}\b", lower)), None
        )
        if status is None and re.search(r"\b(?:done|finished)\b", lower):
            status = "completed"
        return Intent("list_projects", subject=subject, project_status=status)
    return None


def _task_list(text: str, lower: str, now: datetime, tasks_named: re.Match[str] | None) -> Intent:
    fields: dict[str, Any] = {"priority": find_priorities(lower), "status": find_statuses(lower)}
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
            subject = clean_phrase(match[1])
            after = after[: match.start()]
        match = re.search(r"\b(?:for|in|on|under|from|of|within)\s+(?:the\s+|my\s+)?(.+?)$", after, re.I)
        if match and not find_window(match[1], now) and not FILTER_WORDS.fullmatch(match[1].strip()):
            project = clean_phrase(re.sub(r"\s+project$", "", match[1].strip(), flags=re.I))
        if not project:
            head = re.sub(
                r"^(?:(?:what|which|show|list|give|get|see|find|are|is|me|do|i|have|my|the|all|our|any|"
                r"can|you|please|were|there|how|many)\s+)+",
                "",
                before.strip() + " ",
                flags=re.I,
            )
            head = FILTER_WORDS.sub(" ", head)
            head = re.sub(r"\bproject'?s?\b|\bpriority\b|\bmy\b|\bthe\b", " ", head, flags=re.I)
            if keywords(head):
                project = re.sub(r"\s+", " ", head).strip(" ,'")
    if project and find_window(project, now):
        project = ""
    return Intent("list_tasks", subject=subject, project=project, **fields)
