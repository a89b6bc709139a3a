"""A head layer that changed since the frame was made: the tail carries only what changed."""

from __future__ import annotations

import asyncio

from tierwise import Budget, ContextLayer
from tierwise.chat.engine import ChatEngine
from tierwise.memory.frame import changed_lines, updated
from tierwise.providers.testing import ScriptedModel
from tierwise.store import Chat, Store

OVERVIEW = """## Current context
Now: Monday 2026-11-23 {time} (Europe/Lisbon)

## Overview: 3 active projects
- Website Redesign · 47% · 16 open tasks · proj_web
- Q4 Product Launch · {done}% · {open} open tasks · proj_q4
- Tax & Finances · 29% · 17 open tasks · proj_tax

### Overdue: 3 task(s)
- [medium] Sign the contract addendum with Rui · task_rui
- [high] Update changelog · task_log
- [low] Renew the passport · task_pass"""


def test_only_changed_lines_are_listed_under_their_headings() -> None:
    before = OVERVIEW.format(time="10:30", done=21, open=30)
    after = OVERVIEW.format(time="11:05", done=24, open=29).replace(
        "### Overdue: 3 task(s)\n- [medium] Sign the contract addendum with Rui · task_rui\n",
        "### Overdue: 2 task(s)\n",
    )
    text = changed_lines(before, after)
    assert text is not None
    assert text.splitlines()[1:] == [
        "## Current context",
        "Now: Monday 2026-11-23 11:05 (Europe/Lisbon)",
        "## Overview: 3 active projects",
        "- Q4 Product Launch · 24% · 29 open tasks · proj_q4",
        "### Overdue: 2 task(s)",
        "No longer:",
        "- [medium] Sign the contract addendum with Rui · task_rui",
    ]
    assert changed_lines(before, before) is None


def test_a_layer_changed_beyond_half_is_sent_whole() -> None:
    held = ContextLayer("location", "location", "## Project\n- a\n- b\n- c", placement="head")
    now = ContextLayer("location", "location", "## Other project\n- x\n- y\n- z", placement="head")
    assert updated(now, held).content == now.content
    small = ContextLayer("location", "location", OVERVIEW.format(time="11:00", done=21, open=30))
    shown = updated(
        small, ContextLayer("location", "location", OVERVIEW.format(time="10:30", done=21, open=30))
    )
    assert (
        shown.placement == "tail" and "11:00" in str(shown.content) and "proj_web" not in str(shown.content)
    )


def test_a_turn_after_the_clock_moved_resends_one_line_not_the_whole_context(store: Store) -> None:
    """Was: every turn after the first re-sent the whole location context (~480 tokens) in the tail."""
    clock = iter(["10:30", "10:41", "10:52"])

    def context(user_id: str, chat: Chat) -> list[ContextLayer]:
        return [ContextLayer("location", "location", OVERVIEW.format(time=next(clock), done=21, open=30))]

    model = ScriptedModel("One.", "Two.", "Three.")
    user = store.create_user("maya").id
    chat = store.create_chat(user).id
    engine = ChatEngine(store, model, budget=Budget(window=8_000, reserve=500), context=context)
    for text in ("What is overdue?", "And the launch?", "Thanks."):
        asyncio.run(engine.run(user, chat, text))
    last = model.requests[-1].messages
    system = "\n".join(m["content"] for m in last if m["role"] == "system")
    assert "10:30" in system and "proj_web" in system  # the front as at the first turn: cached
    tail = next(m["content"] for m in last if "(updated)" in str(m["content"]))
    assert "Now: Monday 2026-11-23 10:52" in tail and "proj_web" not in tail and "task_rui" not in tail
