"""Memory for agent loops: how working memory's messages are sent, the task kept, a step's note.

An agent loop is one task followed by many steps (the model's message with its tool calls, and their
results). :mod:`tierwise.memory.assemble` packs its completed steps as memory's turns; this module
holds what memory does differently for them (:class:`~tierwise.memory.engine.Memory` delegates here):

* **forms** (:func:`window_groups`): a message is sent as given (a large tool result whole) from
  ``whole_from`` on, within ``whole_cap`` tokens; compressed (memory/blobs.py) before it; as a one-line
  stub where a later output in working memory shows its lines again (:func:`supersede`, decided at a
  compaction step); with its step's note, if it has one;
* **the task** (:func:`task_layer`): the loop's first user message and the turn's, once working
  memory has moved past them, each cut to its share (head and tail) with the segment that holds it;
* **a step's note** (:func:`step_note`): lines of earlier output the step's names find
  (memory/lines.py), attached to the step's last message and kept there while it is in working
  memory, so a prompt cache serves it after the first time.

Every form changes only at a compaction step or when a message is added, so packs between two steps
repeat each other from the start.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from tierwise.memory import code
from tierwise.memory.blobs import compressed_sha256
from tierwise.memory.outputs import head_tail
from tierwise.memory.resend import resent_text
from tierwise.packing.groups import MessageGroups
from tierwise.packing.layers import TRUNCATION_MARKER, ContextLayer, truncate_text

if TYPE_CHECKING:
    from tierwise.memory.engine import Memory

__all__ = [
    "NEVER_WHOLE",
    "STEP_NOTE",
    "message_forms",
    "message_ids",
    "step_note",
    "supersede",
    "task_layer",
    "window_groups",
    "work_narrative",
]

STEP_NOTE = "[Added by tierwise from memory: lines of earlier output that this step's names match]"
NEVER_WHOLE = sys.maxsize
"""``whole_from`` once a chat (not an agent loop) has compacted: its large results go compressed."""
_SUPERSEDE_SHARE = 0.8  # a later output showing this share of a result's lines supersedes it
_SUPERSEDE_MIN_TOKENS = 100  # smaller results are not worth a stub
_LINE_CHARS = 8  # lines shorter than this (blank, braces) are not compared


def message_ids(memory: Memory, start: int, end: int) -> set[int]:
    """The ``id()`` of messages ``[start, end)``, in memory's form and as given."""
    out = {id(m) for m in memory.messages[start:end]}
    out.update(id(memory._given[i][0]) for i in range(start, end) if i in memory._given)
    return out


def message_forms(memory: Memory, start: int, end: int) -> dict[int, int]:
    """The ``id()`` of messages ``[start, end)``, in memory's form and as given, each to its index."""
    out = {id(m): i for i, m in enumerate(memory.messages[start:end], start)}
    out.update((id(given), i) for i, (given, _) in memory._given.items() if start <= i < end)
    return out


def window_groups(memory: Memory) -> MessageGroups:
    """Messages as packs send them (see the module docstring), grouped and costed."""
    key = (
        memory.whole_from,
        memory.whole_cap,
        len(memory.messages),
        len(memory._notes),
        len(memory._superseded),
    )
    if memory._window is not None and memory._window[0] == key:
        return memory._window[1]
    cap = memory.whole_cap
    given = memory._given if memory.whole_from < len(memory.messages) else {}
    changed = memory._notes or memory._superseded
    if not given and not changed:
        groups = memory.groups()
    elif not changed and memory.whole_from == 0 and cap is None:
        groups = memory.groups(as_given=True)
    else:
        messages, costs = list(memory.messages), list(memory.costs)
        for i, (message, cost) in given.items():
            if i >= memory.whole_from and (cap is None or cost <= cap):
                messages[i], costs[i] = message, cost
        for i, (message, cost) in memory._superseded.items():
            messages[i], costs[i] = message, cost
        for i, (note, cost) in memory._notes.items():
            if i < len(messages):
                messages[i] = {**messages[i], "content": f"{messages[i].get('content') or ''}{note}"}
                costs[i] += cost
        groups = MessageGroups(messages, costs)
    memory._window = (key, groups)
    return groups


def _given_text(memory: Memory, index: int) -> str:
    message = memory._given[index][0] if index in memory._given else memory.messages[index]
    content = message.get("content")
    return content if isinstance(content, str) else ""


def _lines(memory: Memory, index: int) -> frozenset[str]:
    found = memory._line_sets.get(index)
    if found is None:
        text = _given_text(memory, index)
        found = frozenset(line.strip() for line in text.splitlines() if len(line.strip()) >= _LINE_CHARS)
        memory._line_sets[index] = found
    return found


def supersede(memory: Memory, start: int, end: int) -> None:
    """At a compaction step: stub each result in ``[start, end)`` whose lines a later one shows again.

    A file viewed, edited and viewed again, a test run repeated: the older output is sent as one line
    naming the call that showed it again, with its blob. Results under
    ``_SUPERSEDE_MIN_TOKENS`` are left as they are. Decided once per step, so packs keep their prefix.
    """
    results = [i for i in range(start, end) if memory.messages[i].get("role") == "tool"]
    for k, i in enumerate(results):
        if i in memory._superseded:
            continue
        cost = memory._given[i][1] if i in memory._given else memory.costs[i]
        if cost < _SUPERSEDE_MIN_TOKENS:
            continue
        mine = _lines(memory, i)
        if len(mine) < 3:
            continue
        later = next(
            (j for j in results[k + 1 :] if len(mine & _lines(memory, j)) >= _SUPERSEDE_SHARE * len(mine)),
            None,
        )
        if later is None:
            continue
        sha = compressed_sha256(memory.messages[i].get("content"))
        blob = f" · blob sha256:{sha} (open with open_blob)" if sha else ""
        name = memory._call_names.get(str(memory.messages[i].get("tool_call_id")), "tool")
        stub = (
            f"[tool result {name}{blob}] Superseded: a later output in this conversation shows these "
            f"lines again ({_call_of(memory, later)})."
        )
        message = {**memory.messages[i], "content": stub}
        memory._superseded[i] = (message, memory.counter.count_message(message))


def _call_of(memory: Memory, index: int) -> str:
    """The call a tool result answered, shortly: ``name {arguments}``."""
    wanted = memory.messages[index].get("tool_call_id")
    for back in range(index - 1, max(-1, index - 64), -1):
        for call in memory.messages[back].get("tool_calls") or ():
            if isinstance(call, Mapping) and call.get("id") == wanted:
                function = call.get("function") or {}
                return f"{function.get('name', '')} {function.get('arguments', '')}"[:100]
    return "a later call"


def task_layer(memory: Memory, task: int | None, available: int) -> ContextLayer | None:
    """The user messages of an agent loop that working memory has moved past (the ``task`` layer).

    In a step of a turn (``task``: its user message) and, in an agent loop (``memory.agent_loop``),
    the conversation's first user message, as user messages in their order: the first cut to
    ``policy.task_share`` of the budget, the turn's beside it to a fifth of that (head and tail, with
    the segment that holds it whole; a cut that never depends on what is pinned beside it). Chosen
    when working memory moves and held until it moves again (a turn that starts meanwhile is in
    working memory), so packs between two compaction steps repeat each other from the start. The
    conversation's first message, re-sent after its turn, is scrubbed (:mod:`tierwise.memory.resend`);
    the turn's own is the turn in progress, sent as given.
    """
    if memory.step_turn is None:
        return None
    first = memory.first_user if memory.agent_loop else None
    key = (memory.live_from, available)  # chosen when working memory moves, then held: a new turn
    if memory._pinned is not None and memory._pinned[0] == key:  # does not change the pack's front
        return memory._pinned[1]
    pinned = tuple(sorted(i for i in {first, task} if i is not None and i < memory.live_from))
    layer = None
    if pinned:
        share = int(available * memory.policy.task_share)
        messages: list[Mapping[str, Any]] = []
        for i in pinned:
            # The first message's cut never depends on whether a turn's is pinned beside it: a new
            # turn must not change the front of the pack it shares with the packs before.
            cap = max(64, share // 5 if i != first and first in pinned else share)
            message = memory.messages[i]
            content = message.get("content")
            if i != task and isinstance(content, str):  # the first message, re-sent after its turn
                message = {**message, "content": resent_text(memory, content)}
                content = message["content"]
            if isinstance(content, str) and memory.costs[i] > cap:
                where = memory._excerpt_label(memory.turns[i]).strip("[]").split(" · ")[0]
                pointer = f"[… part of this message left out: recall_segments {where} full reads it]"
                message = {**message, "content": head_tail(content, memory.counter, cap - 8, pointer)}
            messages.append(message)
        layer = ContextLayer("task", "task", messages, guaranteed=True, truncatable=False)
    memory._pinned = (key, layer)
    return layer


def step_note(memory: Memory, step: str, at: int, budget: int) -> str:
    """Lines of earlier output the names of a step (``step``: its text) find, as a note for it.

    The note goes at the end of the step's last message (index ``at``) and stays there while that
    message is in working memory, so it is paid for once, not on every model call. Only outputs
    working memory no longer shows whole are searched, and lines an earlier note shows are not
    repeated. ``""`` if nothing matches or ``budget`` is too small.
    """
    before = min(memory.whole_from, at)
    if budget < 40 or before <= 0:
        return ""
    shown = {
        line for i, (note, _) in memory._notes.items() if i >= memory.live_from for line in note.splitlines()
    }
    text = memory.lines.select(
        step,
        memory.counter,
        budget - 30,
        before=before,
        label=lambda i: _output_label(memory, i),
        shown=shown,
    )
    if not text:
        return ""
    note = f"\n\n{STEP_NOTE}\n{resent_text(memory, text)}"  # earlier output, re-sent: scrubbed
    memory._notes[at] = (note, memory.counter.count(note) + 1)
    return note


def _output_label(memory: Memory, index: int) -> str:
    """The heading of a tool output's retrieved lines: its segment and the call that made it."""
    where = memory._excerpt_label(memory.turns[index]).strip("[]").split(" · ")[0]
    return f"[{where} · output of {_call_of(memory, index)}]"


def work_narrative(memory: Memory, end: int, cap: int) -> str:
    """An agent loop's narrative (seed 003's ``CurrentContextSummary``), within ``cap`` tokens.

    The task, the files changed and how, what is failing and passing, the last step and what the
    agent said it would do next (:func:`tierwise.memory.code.work_summary`), read from the messages
    before ``end`` as given; scrubbed. ``""`` if no step is a coding agent's (the chat narrative is
    used instead).
    """
    done, actions = memory._actions
    if done < end:  # read once, as the conversation grows: each step's call and result as given
        start = max(0, done - 64)  # a call whose result was not in yet
        given = [memory._given[i][0] if i in memory._given else memory.messages[i] for i in range(start, end)]
        new = code.actions_of(given[done - start :], calls=given[: done - start])
        actions = actions + new
        memory._actions = (end, actions)
    if not actions:
        return ""
    first = memory.messages[memory.first_user].get("content") if memory.first_user is not None else ""
    task = re.sub(r"<[^>\n]{1,40}>", " ", str(first or ""))[:400]  # its words, not its markup
    said = next(
        (
            str(m.get("content") or "")
            for m in reversed(memory.messages[max(0, end - 8) : end])
            if m.get("role") == "assistant" and m.get("content")
        ),
        "",
    )
    next_step = next((line for line in reversed(said.splitlines()) if line.strip()), "")
    text = memory.scrubber.scrub_text(code.work_summary(task, actions, next_step))
    if memory.counter.count(text) > cap:
        text = (truncate_text(text, cap, memory.counter, min_tokens=1, force=True) or "").replace(
            TRUNCATION_MARKER, " …"
        )
    return text
