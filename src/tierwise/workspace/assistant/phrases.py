"""The words of a message besides its dates and times: keywords, item names and filter phrases.

The word-level helpers of :mod:`tierwise.workspace.assistant.intents` (which re-exports :func:`keywords` and
``OPEN_STATUSES``): the significant words of a text, a phrase cleaned into an item's name, the
priority and status filter words, ordinals ("the second one"), pronouns ("it") and the kind of item
a phrase names.
"""

from __future__ import annotations

import re

__all__ = [
    "FILTER_WORDS",
    "INSIST",
    "OPEN_STATUSES",
    "PLAN_DAY",
    "PRIORITY_WORDS",
    "PRONOUN",
    "SLOT",
    "YES",
    "clean_phrase",
    "find_ordinal",
    "find_priorities",
    "find_statuses",
    "find_target",
    "keywords",
    "normalise_message",
    "remove_phrases",
]

OPEN_STATUSES = ("backlog", "in_progress", "blocked")
"""The statuses of a task that is not done."""


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


def clean_phrase(text: str) -> str:
    """``text`` without leading articles and trailing "task"/"project"/"note", quotes and punctuation."""
    text = text.strip().strip("\"'“”‘’`").strip()
    text = re.sub(r"^(?:(?:the|my|our|a|an|this|that)\s+)+", "", text, flags=re.I)
    text = re.sub(r"\s+(?:tasks?|projects?|note|one|item)$", "", text, flags=re.I)
    return text.strip(" ,.;:!?\"'“”‘’`")


def normalise_message(message: str) -> str:
    """``message`` with typographic quotes made plain, spaces collapsed, and end punctuation dropped."""
    text = message.strip().replace("’", "'").replace("“", '"').replace("”", '"')
    text = re.sub(r"\s+", " ", text)
    return text.rstrip(" ?!.")


def remove_phrases(text: str, *phrases: str) -> str:
    """``text`` without the first occurrence of each of ``phrases`` (and a comma before it)."""
    for phrase in phrases:
        if phrase:
            text = re.sub(r"\s*,?\s*" + re.escape(phrase) + r"\b", " ", text, count=1, flags=re.I)
    return re.sub(r"\s+", " ", text).strip(" ,;:-")


# -- filters ---------------------------------------------------------------------------------------

PRIORITY_WORDS = (
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
FILTER_WORDS = re.compile(
    r"\b(?:high|top|low|medium|normal)[\s-]*priority\b|\burgent\b|\bimportant\b|\bcritical\b|\bblocked\b|"
    r"\bin[\s-]progress\b|\bongoing\b|\bstarted\b|\bdone\b|\bcompleted?\b|\bfinished\b|\bbacklog\b|"
    r"\bopen\b|\bactive\b|\bpending\b|\bremaining\b|\boutstanding\b|\boverdue\b|\blate\b|\bcurrent\b|"
    r"\ball\b|\bother\b|\bnext\b|\btoday'?s?\b|\btomorrow'?s?\b|\bthis week'?s?\b",
    re.I,
)


def find_priorities(text: str) -> tuple[str, ...]:
    """The priorities ``text`` names (``high``, ``low``, ``medium``), in that order."""
    return tuple(value for pattern, value in PRIORITY_WORDS if re.search(pattern, text, re.I))


def find_statuses(text: str) -> tuple[str, ...]:
    """The statuses of the first status rule ``text`` matches (blocked, in progress, done, backlog, open)."""
    for pattern, values in _STATUS_WORDS:
        if re.search(pattern, text, re.I):
            return values
    return ()


def find_ordinal(text: str) -> int | None:
    """The position ``text`` names ("the second one" → 2, "the last one" → -1), or ``None``."""
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


INSIST = re.compile(
    r"[,\s]*\b(?:anyway|anyhow|regardless|all the same|even so|even if it (?:overlaps|clashes|conflicts)|"
    r"despite (?:the )?(?:conflicts?|overlaps?|clash(?:es)?))\b",
    re.I,
)
"""Words that book a time even if it overlaps: "anyway", "regardless", "despite the conflicts"."""
YES = re.compile(
    r"^(?:yes|yeah|yep|ok|okay|sure|fine|go ahead)\b[,.!]?\s*(?:and\s+|then\s+|please\s+)?", re.I
)
"""A leading "yes," / "ok," before a request ("yes, book it anyway")."""

PLAN_DAY = re.compile(
    r"\bwhat should i (?:work on|do|focus on|tackle|start with|prioriti[sz]e)\b|"
    r"\bwhat (?:do|must) i (?:need|have) to (?:do|work on) (?:today|tomorrow|now)\b|"
    r"\bon my plate (?:for )?(?:today|tomorrow)\b|\bplan (?:my|the) day\b|\bwhere (?:should|do) i start\b|"
    r"\bwhat(?:'s| is) (?:my|the) (?:plan|priority|priorities|focus) (?:for )?(?:today|tomorrow)\b"
)
"""Asking what to work on: "what should I work on today?", "plan my day"."""


PRONOUN = re.compile(r"^(?:it|this|that|this one|that one|this task|that task|them)$", re.I)


def find_target(text: str) -> str | None:
    """The kind of item ``text`` names (``task``, ``project`` or ``note``), or ``None``."""
    lower = text.lower()
    for word, kind in (("task", "task"), ("todo", "task"), ("project", "project"), ("note", "note")):
        if re.search(rf"\b{word}s?\b", lower):
            return kind
    return None


SLOT = re.compile(
    r"(?:\b(?:in|into|at|for|on)\s+)?\bthe\s+"
    r"(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|last|(?:[1-9]|10)(?:st|nd|rd|th))"
    r"\s+(?:one|(?:free\s+)?slot|time|option)\b",
    re.I,
)
"""A place in a list of free slots: "in the second slot", "the last one"."""
