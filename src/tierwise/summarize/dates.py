"""Relative times anchored to the day they were said: "yesterday" → "yesterday (7 May 2023)".

A summary is read long after the turn it quotes; "last week" then means nothing, or the wrong week.
Before a segment is summarised, each relative expression in a turn with a known time gets the date
it meant, in parentheses, so the summary (extractive or a model's) keeps it. Deterministic and
conservative: only the expressions below, only when the turn's time is known.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta

from dateutil.relativedelta import relativedelta

__all__ = ["CALENDAR_ABBREVIATIONS", "CALENDAR_WORDS", "anchor_dates", "day"]

_MONTHS = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
]
CALENDAR_WORDS = frozenset(
    [*_MONTHS, "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
)
"""Month and day names: when something happened, never what it was about."""
CALENDAR_ABBREVIATIONS = frozenset(
    [
        "jan",
        "feb",
        "mar",
        "apr",
        "jun",
        "jul",
        "aug",
        "sep",
        "sept",
        "oct",
        "nov",
        "dec",
        "mon",
        "tue",
        "tues",
        "wed",
        "thu",
        "thur",
        "thurs",
        "fri",
        "sat",
        "sun",
    ]
)

_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_SAME_DAY = ("today", "tonight", "this morning", "this afternoon", "this evening")
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "few": 3}
_RELATIVE = re.compile(
    r"\b(?:(yesterday|today|tonight|tomorrow|this morning|this afternoon|this evening|last night)"
    r"|(last|next|this) (week|weekend|month|year|" + "|".join(_WEEKDAYS) + r")"
    r"|(\d{1,2}|a|an|one|two|three|four|five|six|few) (day|week|month|year)s? ago)\b"
    r"(?! \()",
    re.IGNORECASE,
)
_CUE_WORDS = ("yesterday", "today", "tonight", "tomorrow", "this", "last", "next", "ago")  # one is in each


def day(d: date) -> str:
    """``7 May 2023``."""
    return f"{d.day} {d.strftime('%B')} {d.year}"


def _meaning(match: re.Match[str], today: date) -> str | None:
    """The date a relative expression meant, or ``None`` for a spelling beyond ASCII's cases.

    The pattern ignores case the Unicode way ("THİS WEEK", "yeſterday" match); what such a spelling
    lower-cases to is no word of ours, so it is left as it is rather than anchored wrongly.
    """
    single, which, unit, count, ago_unit = match.groups()
    if single:
        word = single.lower()
        if word in ("yesterday", "last night"):
            return day(today - timedelta(days=1))
        if word == "tomorrow":
            return day(today + timedelta(days=1))
        return day(today) if word in _SAME_DAY else None
    if which:
        which, unit = which.lower(), unit.lower()
        step = {"last": -1, "next": 1, "this": 0}.get(which)
        if step is None or unit not in (*_WEEKDAYS, "week", "weekend", "month", "year"):
            return None
        if unit in _WEEKDAYS:
            target = _WEEKDAYS.index(unit)
            delta = (target - today.weekday()) % 7
            if step < 0:
                delta = delta - 7 if delta > 0 else -7
            elif step > 0:
                delta = delta if delta > 0 else 7
            return day(today + timedelta(days=delta))
        if unit in ("week", "weekend"):
            if step == 0:
                return f"the {unit} of {day(today)}"
            return f"the {unit} {'before' if step < 0 else 'after'} {day(today)}"
        if unit == "month":
            d = today + relativedelta(months=step)
            return f"{d.strftime('%B')} {d.year}"
        return str(today.year + step)
    n = int(count) if count.isdigit() else _NUMBERS.get(count.lower())
    unit = ago_unit.lower()
    if n is None or unit not in ("day", "week", "month", "year"):
        return None
    if unit == "day":
        return day(today - timedelta(days=n))
    if unit == "week":
        return f"the week of {day(today - timedelta(weeks=n))}"
    if unit == "month":
        d = today - relativedelta(months=n)
        return f"{d.strftime('%B')} {d.year}"
    return str(today.year - n)


def anchor_dates(text: str, at: datetime | None) -> str:
    """``text`` with each relative time followed by the date it meant when said at ``at``.

    Example:
        >>> anchor_dates("I went to a support group yesterday.", datetime(2023, 5, 8, 13, 56))
        'I went to a support group yesterday (7 May 2023).'
        >>> anchor_dates("We painted it last year.", datetime(2023, 5, 8))
        'We painted it last year (2022).'
    """
    if at is None or not text:
        return text
    if text.isascii():
        lowered = text.lower()
        if not any(word in lowered for word in _CUE_WORDS):
            return text  # none of the words every relative expression has: nothing to anchor
    today = at.date()

    def annotate(match: re.Match[str]) -> str:
        meaning = _meaning(match, today)
        return f"{match.group(0)} ({meaning})" if meaning else match.group(0)

    return _RELATIVE.sub(annotate, text)
