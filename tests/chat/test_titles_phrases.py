"""Titles made without a model end where a phrase ends (issue 33).

Before: the first six words, wherever they stopped — "Find time on my calendar for",
"High priority tasks for the Q4", "Remind me to call Sam Alex".
"""

from __future__ import annotations

import pytest

from tierwise.chat.titles import MAX_CHARS, distinct_title, fallback_title

DANGLING = {"a", "an", "the", "and", "or", "for", "with", "to", "of", "in", "on", "my", "your", "about"}


@pytest.mark.parametrize(
    ("message", "title"),
    [
        ("What are my high priority tasks for the Q4 launch?", "High priority tasks for the Q4 launch"),
        ("Find time on my calendar for a 2 hour deep work session tomorrow", "Find time on my calendar"),
        ("Schedule a meeting with the design team for next week", "Schedule a meeting with the design team"),
        ("Draft an email to the team about the new release and the delays", "Draft an email to the team"),
        ("Remind me to call Sam, Alex and Jo tomorrow about the budget", "Remind me to call Sam, Alex"),
        ("Can you list the tasks for the launch and the ones for marketing", "List the tasks for the launch"),
        ("what tasks do I have?", "What tasks do I have"),
        ("Plan the trip for", "Plan the trip"),
    ],
)
def test_a_title_ends_where_a_phrase_ends(message: str, title: str) -> None:
    assert fallback_title(message) == title


@pytest.mark.parametrize(
    "message",
    [
        "Review the notes from the planning meeting with Sam and the team",
        "I want to write the launch plan and the budget for next quarter",
        "I need the quarterly numbers, the hiring plan and the budget for the board",
        "Book flights to Lisbon, Madrid, Paris and Rome for the team offsite next month",
        "Tell me about quantum chromodynamics lattice simulation parameter sweeps and their results",
        "Could you please go through all of my overdue tasks in the marketing project and the ones for sales",
    ],
)
def test_no_title_ends_on_a_word_that_needs_more(message: str) -> None:
    title = fallback_title(message)

    assert title and len(title) <= MAX_CHARS
    last = title.split()[-1]
    assert last.casefold() not in DANGLING, title
    assert not title.endswith((",", ";", ":", "-")), title


def test_a_distinct_title_is_cut_between_words() -> None:
    long = "Review the quarterly marketing budget and hiring plan"
    title = distinct_title(long, f"{long} for Supercalifragilistic", [long])

    assert len(title) <= MAX_CHARS
    assert title.endswith(" · Supercalifragilistic")
    head = title.removesuffix(" · Supercalifragilistic")
    assert long.startswith(head) and head.split()[-1].casefold() not in DANGLING
    assert long.split()[: len(head.split())] == head.split()  # whole words only
