"""Which of the assistant's tools each model call is offered (issue 17): seed 000's list → detail, for tools.

:class:`WorkspaceOffering` is the reference assistant's :data:`~tierwise.tools.offering.ToolOffering`.
Every tool has a :class:`Rule`; a model call is offered a tool when

- **the user's message asks for it** (its words, e.g. "calendar", "free", "mark", "note") and any id it
  needs is in view — ``task_…``, ``proj_…`` or ``note_…`` in the context, the history or the turn
  (a detail or change tool without an id to take could only be called with an invented one); a
  message naming a project shown (a word of its name: "the Q4 launch") gets ``search_projects``; or
- **it can follow the results just in** (seed 000 §4.2 and §10.1's "likely next tools"): a detail tool
  after a list holding ids it takes, ``list_tasks`` after a project was found; or
- the message asked for nothing the rules know: the location's usual tools (:data:`LOCATION_TOOLS`).

Housekeeping follows the same idea: ``open_blob`` only while a compressed result (its sha256) is in
view, ``recall_segments`` at a turn's first call while earlier segments show, ``record_decision`` and
``update_narrative`` when the message speaks of a decision or a plan.

Nothing is out of reach: whatever is withheld is named in one line by the escape ``more_tools``, a
tool the turn called or asked for stays offered (:func:`~tierwise.tools.offering.offered`), and the
executor runs a withheld tool called by name. A first step is offered ~250–550 tokens of schemas
instead of ~1,100; the step after the results, ~50–250.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

from tierwise.tools.offering import OfferView

__all__ = ["LOCATION_TOOLS", "RULES", "Rule", "WorkspaceOffering", "message_words"]

_DETAIL = frozenset({"more", "detail", "full", "open", "tell", "explain", "describe", "everything", "read"})


@dataclass(frozen=True)
class Rule:
    """When a tool is offered.

    Attributes:
        words: words of the user's message that ask for it (lower case, a plural's ``s`` dropped).
        takes: the id prefix it needs in view (``"task"``, ``"proj"``, ``"note"``), if any.
        after: tools whose results it follows (it is offered at the next step when one was just run
            and, if it takes an id, the results hold one).
        first_only: offered on a turn's first call only (what the user's message, not a result, asks).
    """

    words: frozenset[str] = frozenset()
    takes: str | None = None
    after: frozenset[str] = frozenset()
    first_only: bool = False


def _w(*words: str) -> frozenset[str]:
    return frozenset(words)


RULES: dict[str, Rule] = {
    "list_tasks": Rule(
        _w(
            "task",
            "todo",
            "to-do",
            "overdue",
            "due",
            "priority",
            "blocked",
            "progress",
            "backlog",
            "next",
            "deadline",
            "pending",
            "urgent",
            "work",
        ),
        after=_w("search_projects", "get_project_details"),
    ),
    "search_projects": Rule(_w("project", "initiative")),
    "search_notes": Rule(_w("note", "wrote", "idea", "journal", "written", "jotted", "reference")),
    "get_task_details": Rule(_DETAIL, "task", _w("list_tasks", "get_project_details")),
    "get_project_details": Rule(_DETAIL | {"work"}, "proj", _w("search_projects")),
    "get_note_details": Rule(_DETAIL, "note", _w("search_notes")),
    "create_task": Rule(_w("add", "create", "new", "remind", "reminder", "capture")),
    "update_task": Rule(
        _w(
            "mark",
            "set",
            "change",
            "rename",
            "move",
            "complete",
            "finish",
            "finished",
            "done",
            "status",
            "reschedule",
            "postpone",
            "update",
            "edit",
            "unblock",
            "block",
        ),
        "task",
    ),
    "update_project_context": Rule(_w("context", "goal", "scope", "vision", "strategy"), "proj"),
    "get_calendar_events": Rule(
        _w(
            "calendar",
            "event",
            "meeting",
            "agenda",
            "busy",
            "appointment",
            "today",
            "tomorrow",
            "week",
            "tonight",
            "morning",
            "afternoon",
            "evening",
            "monday",
            "tuesday",
            "wednesday",
            "thursday",
            "friday",
            "saturday",
            "sunday",
        )
    ),
    "find_available_slots": Rule(_w("free", "slot", "available", "availability", "hour", "minute", "gap")),
    "schedule_task": Rule(_w("schedule", "book", "block", "plan"), "task", _w("find_available_slots")),
    "record_decision": Rule(
        _w("decide", "decided", "decision", "agreed", "agree", "chose", "choose"), first_only=True
    ),
    "update_narrative": Rule(_w("goal", "objective", "focus", "plan", "priorities"), first_only=True),
}
"""Each tool's rule (the retrieval tools, ``open_blob`` and ``recall_segments``, have their own)."""

LOCATION_TOOLS: dict[str, tuple[str, ...]] = {
    "global": ("list_tasks", "search_projects", "search_notes", "get_calendar_events"),
    "project": ("list_tasks", "search_notes", "get_project_details"),
    "task": ("get_task_details", "update_task", "list_tasks"),
    "calendar": ("get_calendar_events", "find_available_slots", "list_tasks"),
    "calendar_date": ("get_calendar_events", "find_available_slots", "list_tasks"),
}
"""What a first call is offered when its message asks for nothing the rules know, by location."""

_WORD = re.compile(r"[a-z][a-z'-]*")
_BLOB = re.compile(r"sha256:[0-9a-f]{64}|open with open_blob")


def message_words(text: str) -> set[str]:
    """The words of ``text`` as rules read them: lower case, ``'s`` and a plural's ``s`` dropped.

    Example:
        >>> sorted(message_words("What's on my calendar? Notes, tasks and the API docs"))
        ['and', 'api', 'calendar', 'doc', 'my', 'note', 'on', 'task', 'the', 'what']
    """
    words = set()
    for word in _WORD.findall(text.lower()):
        word = word.removesuffix("'s").strip("'-")
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        if word:
            words.add(word)
    return words


_PROJECT_LINE = re.compile(r"^- (.+?) · .*\bproj_[0-9a-z]{6,}", re.MULTILINE)  # the overview's
_PROJECT_NAME = re.compile(r'"name":\s*"([^"]+)"')  # a search_projects result or its recap
_COMMON = frozenset({"with", "from", "this", "that", "your", "about", "what", "have", "task", "project"})


def _names_a_project(words: set[str], text: str) -> bool:
    """Whether the message (its ``words``) names a project shown in ``text`` by a word of its name."""
    names = _PROJECT_LINE.findall(text) + (_PROJECT_NAME.findall(text) if "proj_" in text else [])
    named = {w for name in names for w in message_words(name) if len(w) > 3} - _COMMON
    return bool(words & named)


def _in_view(prefix: str, text: str) -> bool:
    return re.search(rf"\b{prefix}_[0-9a-z]{{6,}}", text) is not None


class WorkspaceOffering:
    """The assistant's offering policy (see the module docstring); a callable ``view → names``.

    Example:
        >>> offer = WorkspaceOffering()
        >>> sorted(offer(OfferView(step=1, message="What's on my calendar today?")))
        ['get_calendar_events']
        >>> sorted(offer(OfferView(step=1, message="Tell me more", seen="- task_4k7d2x9q1m3a: Draft")))
        ['get_task_details']
        >>> found = '{"notes": [{"id": "note_4k7d2x9q1m3a"}]}'
        >>> turn = [{"role": "tool", "name": "search_notes", "content": found}]
        >>> sorted(offer(OfferView(step=2, message="Open the pricing note", turn=turn)))
        ['get_note_details']
        >>> sorted(offer(OfferView(step=2, message="Find notes about pricing", turn=turn)))
        []
    """

    def __init__(self, rules: dict[str, Rule] | None = None) -> None:
        self.rules = dict(RULES if rules is None else rules)

    def __call__(self, view: OfferView) -> Collection[str]:
        """The names ``view``'s model call is offered."""
        words = message_words(view.message)
        turn_text = "\n".join(content for _, content in view.results())
        everything = f"{view.seen}\n{turn_text}"
        if view.location[1]:
            everything += f"\n{view.location[1]}"
        last = view.last_results()
        just_in = {name for name, content in last if not content.startswith("error")}
        last_text = "\n".join(content for _, content in last)
        chosen: set[str] = set()
        for name, rule in self.rules.items():
            asked = bool(words & rule.words)
            if view.step == 1:  # what the message asks for, with the ids it needs in view
                offer = asked and (rule.takes is None or _in_view(rule.takes, everything))
            elif rule.first_only or name in just_in or not asked:
                offer = False  # after results: only what the message asked for and can follow them
            elif rule.takes is None:
                offer = bool(just_in & rule.after)
            else:  # … taking an id the results just in hold (or, after its `after` tools, any in view)
                offer = _in_view(rule.takes, last_text) or (
                    bool(just_in & rule.after) and _in_view(rule.takes, everything)
                )
            if offer:
                chosen.add(name)
        if view.step == 1 and _names_a_project(words, everything):  # "the Q4 launch": found by name
            chosen.add("search_projects")
        if view.step == 1 and not chosen - {"record_decision", "update_narrative"}:
            chosen.update(LOCATION_TOOLS.get(view.location[0], LOCATION_TOOLS["global"]))
        if _BLOB.search(everything):
            chosen.add("open_blob")
        if view.segments and view.step == 1:
            chosen.add("recall_segments")
        return chosen
