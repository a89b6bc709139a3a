"""Tool-call groups: the units in which messages are kept or dropped.

A **group** is an assistant message that calls tools together with every result it received (in
any order, right after it), or any other single message. An **orphan** is a tool result with no call
before it, or a call that is missing a result: providers reject both, so a pack never contains them.

:class:`MessageGroups` is built once per message layer and is the packer's hot path. It prices every
message in one batched call (:meth:`TokenCounter.message_costs`), walks only the tool traffic to find
multi-message groups and orphans, and answers "which newest groups fit in N tokens?" by walking back
from the end, so the work is proportional to what is kept, not to the length of the history.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import compress, repeat
from operator import contains, eq, itemgetter
from typing import Any

__all__ = ["MessageGroups", "group_messages"]

Message = Mapping[str, Any]

_ROLE = itemgetter("role")


class MessageGroups:
    """Groups, orphans and per-message costs of one message sequence.

    Args:
        messages: OpenAI-format messages, oldest first.
        costs: the token cost of each message (``None``: all 0, for grouping alone).
    """

    __slots__ = ("_groups", "costs", "messages", "orphan_cost", "orphans", "span_by_end", "total")

    def __init__(self, messages: Sequence[Message], costs: list[int] | None = None) -> None:
        self.messages = messages
        self.costs = costs if costs is not None else [0] * len(messages)
        self.total = sum(self.costs)
        # Multi-message groups and orphan runs, by the index just past their end:
        # end -> (start, cost, complete).
        self.span_by_end: dict[int, tuple[int, int, bool]] = {}
        self.orphans: list[int] = []
        self._groups: list[tuple[int, int]] | None = None
        if len(messages) == 1:  # the usual input layer: one user message
            only = messages[0]
            if only.get("role") == "tool" or only.get("tool_calls"):
                self._orphan_run(0, 1)
            self.orphan_cost = self.total if self.orphans else 0
            return
        try:
            roles = list(map(_ROLE, messages))
        except KeyError:  # a message without a role: let .get give None
            roles = [m.get("role") for m in messages]
        n = len(messages)
        results = list(compress(range(n), map(eq, roles, repeat("tool"))))
        callers = list(compress(range(n), map(contains, messages, repeat("tool_calls"))))
        if (results or callers) and not self._single_calls(roles, results, callers):
            self.span_by_end.clear()
            self._scan_traffic(roles, sorted(results + callers))
        self.orphan_cost = sum(self.costs[i] for i in self.orphans)

    def _single_calls(self, roles: list[Any], results: list[int], callers: list[int]) -> bool:
        """Fast path for the common shape: every call answered right after it, in order.

        Records those groups and returns True; returns False at the first other shape (the general
        scan then runs instead).
        """
        messages, costs, spans = self.messages, self.costs, self.span_by_end
        pos, total = 0, len(results)
        for i in callers:
            calls: Sequence[Any] = messages[i]["tool_calls"] or ()  # "tool_calls": null is OpenAI's "none"
            k = len(calls)
            if roles[i] != "assistant" or not k or pos + k > total or results[pos] != i + 1:
                return False
            if k == 1:
                if calls[0].get("id") != messages[i + 1].get("tool_call_id"):
                    return False
            else:
                ids = [c.get("id") for c in calls]
                answers = [messages[j].get("tool_call_id") for j in range(i + 1, i + 1 + k)]
                if results[pos + k - 1] != i + k or ids != answers or len(set(ids)) < k:
                    return False  # duplicate call ids are for the general scan (never a group)
            pos += k
            spans[i + 1 + k] = (i, sum(costs[i : i + 1 + k]), True)
        return pos == total

    def _scan_traffic(self, roles: list[Any], traffic: list[int]) -> None:
        """Find complete tool-call groups and orphans, looking only at calls and results."""
        messages, costs, spans = self.messages, self.costs, self.span_by_end
        start, last = -1, -2
        waiting: set[Any] = set()
        for i in traffic:
            calls = messages[i].get("tool_calls") if roles[i] == "assistant" else None
            if roles[i] != "tool" and not calls:  # a "tool_calls": [] or a non-assistant
                continue
            if start >= 0:
                call_id = messages[i].get("tool_call_id") if roles[i] == "tool" else None
                if i == last + 1 and call_id in waiting:
                    waiting.discard(call_id)
                    last = i
                    if not waiting:
                        spans[i + 1] = (start, sum(costs[start : i + 1]), True)
                        start = -1
                    continue
                self._orphan_run(start, last + 1)  # the group ended with calls unanswered
                start = -1
            if roles[i] != "assistant":  # a result with no call before it
                self._orphan_run(i, i + 1)
                continue
            assert calls is not None
            ids = {call.get("id") for call in calls}
            if len(ids) == len(calls):
                waiting, start, last = ids, i, i
            else:  # duplicate call ids can never be answered unambiguously
                self._orphan_run(i, i + 1)
        if start >= 0:
            self._orphan_run(start, last + 1)

    def _orphan_run(self, a: int, b: int) -> None:
        self.span_by_end[b] = (a, 0, False)
        self.orphans.extend(range(a, b))

    # -- queries ---------------------------------------------------------------------------------

    @property
    def whole_cost(self) -> int:
        """Cost of every group (orphans excluded)."""
        return self.total - self.orphan_cost

    def groups(self) -> list[tuple[int, int]]:
        """Every group as ``(start, end)``, oldest first (built on first use)."""
        if self._groups is None:
            out: list[tuple[int, int]] = []
            end = len(self.messages)
            while end > 0:
                span = self.span_by_end.get(end)
                if span is None:
                    out.append((end - 1, end))
                    end -= 1
                else:
                    if span[2]:
                        out.append((span[0], end))
                    end = span[0]
            out.reverse()
            self._groups = out
        return self._groups

    def newest(
        self,
        end: int,
        *,
        stop: int = 0,
        budget: int | None = None,
        max_messages: int | None = None,
        max_groups: int | None = None,
    ) -> tuple[int, int]:
        """The start and cost of the newest whole groups in ``[stop, end)`` within the limits.

        Walks back from ``end`` taking whole groups while their cost stays within ``budget``, their
        messages within ``max_messages`` and their number within ``max_groups``. Returns
        ``(start, cost)``; ``start == end`` means not even the newest group fits.
        """
        spans, costs = self.span_by_end, self.costs
        start, cost, count, taken = end, 0, 0, 0
        i = end
        while i > stop:
            span = spans.get(i)
            if span is None:
                a, c = i - 1, costs[i - 1]
            else:
                a, c, complete = span
                if not complete:  # orphans are never kept: step over them
                    i = a
                    continue
            if a < stop:
                break
            if (
                (budget is not None and cost + c > budget)
                or (max_messages is not None and count + i - a > max_messages)
                or (max_groups is not None and taken >= max_groups)
            ):
                break
            cost += c
            count += i - a
            taken += 1
            start = a
            i = a
        return start, cost

    def start_on(self, role: str, start: int, end: int) -> tuple[int, int]:
        """Move ``start`` forward to the first group in ``[start, end)`` that begins with ``role``.

        Returns the new start and the cost dropped by moving; ``(start, 0)`` if there is none.
        """
        for a, _ in self._groups_from(start, end):
            if self.messages[a].get("role") == role:
                return a, self.cost_between(start, a)
        return start, 0

    def _groups_from(self, start: int, end: int) -> list[tuple[int, int]]:
        out: list[tuple[int, int]] = []
        i = end
        while i > start:
            span = self.span_by_end.get(i)
            if span is None:
                out.append((i - 1, i))
                i -= 1
            else:
                if span[2]:
                    out.append((span[0], i))
                i = span[0]
        out.reverse()
        return out

    def cost_between(self, a: int, b: int) -> int:
        """Cost of the groups in ``[a, b)`` (orphans excluded)."""
        return sum(self.costs[a:b]) - sum(self.costs[i] for i in self.orphans if a <= i < b)

    def kept(self, start: int, end: int) -> Sequence[Message]:
        """The messages of the groups in ``[start, end)``, orphans left out."""
        if not self.orphans or (self.orphans[-1] < start or self.orphans[0] >= end):
            if start == 0 and end == len(self.messages):
                return self.messages
            return self.messages[start:end]
        skip = set(self.orphans)
        return [self.messages[i] for i in range(start, end) if i not in skip]


def group_messages(messages: Sequence[Message]) -> tuple[list[tuple[int, int]], list[int]]:
    """Split ``messages`` into atomic groups ``[start, end)`` and the indices of orphans.

    Example:
        >>> msgs = [{"role": "user", "content": "hi"},
        ...         {"role": "assistant", "tool_calls": [{"id": "a", "function": {"name": "f"}}]},
        ...         {"role": "tool", "tool_call_id": "a", "content": "ok"},
        ...         {"role": "tool", "tool_call_id": "zz", "content": "stray"}]
        >>> group_messages(msgs)
        ([(0, 1), (1, 3)], [3])
    """
    scan = MessageGroups(messages)
    return scan.groups(), sorted(scan.orphans)
