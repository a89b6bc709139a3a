"""When a message says something happens: days, times, windows, durations, recurrences, parts of day.

The date and time helpers of :mod:`tierwise.workspace.assistant.intents` (which re-exports :func:`find_day`,
:func:`find_time` and :func:`find_window`). Each returns the phrase it read as well, so the caller can
take it out of the message; all are pure — "today" and "now" are arguments, never the clock.

Example:
    >>> find_duration("block 90 minutes for it"), find_recurrence("every Monday at 9")
    ((90, '90 minutes'), ('weekly', 'every Monday'))
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta

__all__ = [
    "PARTS_OF_DAY",
    "WEEKDAY",
    "find_day",
    "find_duration",
    "find_hours",
    "find_part",
    "find_recurrence",
    "find_time",
    "find_window",
]

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
WEEKDAY = r"(monday|tuesday|wednesday|thursday|friday|saturday|sunday|mon|tues?|wed|thur?s?|fri|sat|sun)"
"""A weekday's name or abbreviation, as a regex group."""
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
        (rf"\b(?:on\s+|by\s+|for\s+)?next\s+{WEEKDAY}\b", "next"),
        (rf"\b(?:on\s+|by\s+|for\s+|this\s+|every\s+)?{WEEKDAY}\b", "weekday"),
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


def find_duration(text: str) -> tuple[int, str] | None:
    """A duration in ``text`` as ``(minutes, phrase)``, kept within 5 to 1440 minutes, or ``None``."""
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


def find_recurrence(text: str) -> tuple[str, str] | None:
    """A recurrence in ``text`` as ``(pattern, phrase)`` (``daily``, ``weekdays`` …), or ``None``."""
    alone = r"(?=\s*(?:$|,|;|at\b|on\b|from\b|starting\b|for\b|in the\b))"  # "weekly", not "weekly review"
    rules = (
        (r"\b(?:every|each)\s+(?:week\s*day|work\s*day|weekday)s?\b|\bon weekdays\b", "weekdays"),
        (r"\bevery (?:other|second|2nd) week\b|\bevery (?:two|2) weeks\b", "biweekly"),
        (r"\b(?:every|each) (?:day|morning|evening)\b", "daily"),
        (rf"\b(?:every|each) (?:week|{WEEKDAY})\b", "weekly"),
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


PARTS_OF_DAY: tuple[tuple[str, str, int, int, tuple[int, ...]], ...] = (
    # (pattern, label, first hour, end hour (exclusive), preferred hours)
    (
        r"\b(?:at|over|during|around|for)\s+lunch(?:time)?\b|\blunch ?time\b|\blunch break\b",
        "lunch",
        12,
        14,
        (12, 13),
    ),
    (r"\bbefore lunch\b", "before lunch", 9, 12, (9, 10, 11)),
    (r"\bafter lunch\b", "after lunch", 13, 17, (13, 14, 15, 16)),
    (r"\btonight\b|\bthis evening\b", "tonight", 18, 23, (18, 19, 20, 21, 22)),
    (r"\b(?:in the |this )?morning\b|\bearly\b", "morning", 8, 12, (9, 10, 11)),
    (r"\b(?:in the |this )?afternoon\b", "afternoon", 12, 17, (13, 14, 15, 16)),
    (r"\b(?:in the |this )?evening\b|\blate\b", "evening", 17, 21, (17, 18, 19)),
)
"""The parts of a day a message can name, with the local hours they cover (``[first, end)``)."""


def find_part(text: str) -> tuple[str, int, int, str] | None:
    """The part of the day ``text`` names as ``(label, first hour, end hour, phrase)``, or ``None``.

    The hours are local and the end is exclusive: morning 08-12 (working hours clip it), lunch 12-14,
    afternoon 12-17, evening 17-21, tonight 18-23.

    Example:
        >>> find_part("find a free hour tomorrow morning")
        ('morning', 8, 12, 'morning')
        >>> find_part("anything free tonight?")[:3]
        ('tonight', 18, 23)
    """
    lower = text.lower()
    for pattern, label, first, end, _ in PARTS_OF_DAY:
        match = re.search(pattern, lower)
        if match:
            return label, first, end, match.group(0)
    return None


def find_hours(text: str) -> tuple[tuple[int, ...], str]:
    """The local hours a part of the day in ``text`` prefers, and its phrase (``((), "")`` if none)."""
    lower = text.lower()
    for pattern, _, _, _, hours in PARTS_OF_DAY:
        match = re.search(pattern, lower)
        if match:
            return hours, match.group(0)
    return (), ""
