"""MessageGroups (the packer's fast grouping) against a plain reference implementation."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tierwise import TokenCounter
from tierwise.packing.groups import MessageGroups, group_messages

COUNTER = TokenCounter()


def reference(messages: list[dict[str, Any]]) -> tuple[list[tuple[int, int]], list[int]]:
    """The obvious quadratic-free loop: a call group is the caller plus its results right after it."""
    groups: list[tuple[int, int]] = []
    orphans: list[int] = []
    i, n = 0, len(messages)
    while i < n:
        m = messages[i]
        calls = m.get("tool_calls") if m.get("role") == "assistant" else None
        if calls:
            wanted = [c.get("id") for c in calls]
            answered: set[Any] = set()
            j = i + 1
            while j < n and messages[j].get("role") == "tool":
                cid = messages[j].get("tool_call_id")
                if cid not in wanted or cid in answered:
                    break
                answered.add(cid)
                j += 1
                if answered == set(wanted):
                    break
            if len(set(wanted)) == len(wanted) and answered == set(wanted):
                groups.append((i, j))
            else:
                orphans.extend(range(i, j))
            i = j
        elif m.get("role") == "tool":
            orphans.append(i)
            i += 1
        else:
            groups.append((i, i + 1))
            i += 1
    return groups, orphans


ids = st.sampled_from(["a", "b", "c", "d"])


@st.composite
def messages(draw: st.DrawFn) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(0, 30))):
        kind = draw(st.sampled_from(["user", "assistant", "system", "call", "result", "empty_calls"]))
        if kind == "call":
            out.append(
                {
                    "role": "assistant",
                    "content": draw(st.none() | st.just("let me look")),
                    "tool_calls": [
                        {"id": i, "type": "function", "function": {"name": "f", "arguments": "{}"}}
                        for i in draw(st.lists(ids, min_size=1, max_size=3))
                    ],
                }
            )
        elif kind == "result":
            out.append({"role": "tool", "tool_call_id": draw(ids), "content": draw(st.text(max_size=20))})
        elif kind == "empty_calls":
            out.append({"role": "assistant", "content": "x", "tool_calls": []})
        else:
            out.append({"role": kind, "content": draw(st.text(max_size=40))})
    return out


@given(messages())
def test_groups_equal_the_reference(msgs: list[dict[str, Any]]) -> None:
    assert group_messages(msgs) == reference(msgs)


@given(messages(), st.integers(0, 400), st.integers(0, 12))
def test_newest_is_the_longest_affordable_suffix_of_groups(
    msgs: list[dict[str, Any]], budget: int, limit: int
) -> None:
    costs = COUNTER.message_costs(msgs)
    mg = MessageGroups(msgs, costs)
    groups, _ = reference(msgs)
    start, cost = mg.newest(len(msgs), budget=budget, max_messages=limit)
    # reference: take groups from the newest while both limits hold
    want_start, want_cost, count = len(msgs), 0, 0
    for a, b in reversed(groups):
        c = sum(costs[a:b])
        if want_cost + c > budget or count + (b - a) > limit:
            break
        want_cost += c
        count += b - a
        want_start = a
    assert (start, cost) == (want_start, want_cost)
    kept = mg.kept(start, len(msgs))
    assert sum(COUNTER.count_message(m) for m in kept) == cost


@given(messages())
def test_batched_costs_equal_per_message_counts(msgs: list[dict[str, Any]]) -> None:
    cold = TokenCounter()
    assert cold.message_costs(msgs) == [COUNTER.count_message(m) for m in msgs]
    assert COUNTER.message_costs(msgs) == [COUNTER.count_message(m) for m in msgs]


def test_odd_messages_take_the_slow_path() -> None:
    msgs = [
        {"role": "user", "content": [{"type": "text", "text": "parts"}]},
        {"role": "assistant"},
        {"role": "user", "content": "x", "name": "maya"},
    ]
    assert COUNTER.message_costs(msgs) == [COUNTER.count_message(m) for m in msgs]


def test_duplicate_call_ids_answered_in_order_are_orphans_not_a_group() -> None:
    call = {"id": "d", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    msgs = [
        {"role": "user", "content": ""},
        {"role": "user", "content": ""},
        {"role": "assistant", "content": None, "tool_calls": [call, dict(call)]},
        {"role": "tool", "tool_call_id": "d", "content": ""},
        {"role": "tool", "tool_call_id": "d", "content": ""},
    ]
    assert group_messages(msgs) == reference(msgs) == ([(0, 1), (1, 2)], [2, 3, 4])


def test_tool_calls_null_is_no_call() -> None:
    """``"tool_calls": null`` (OpenAI clients may resend it) was a TypeError: a 500 on ``/v1`` (issue 32)."""
    msgs: list[dict[str, Any]] = [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "b", "tool_calls": None},
        {"role": "user", "content": "c"},
    ]
    groups = MessageGroups(msgs, [1, 1, 1])
    assert groups.orphans == [] and groups.span_by_end == {}
    assert group_messages(msgs) == group_messages(
        [{k: v for k, v in m.items() if v is not None} for m in msgs]
    )
