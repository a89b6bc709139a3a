"""List pages sized by tokens: what a list tool returns fits the ``result_tokens`` it declares.

A list tool fetches up to ``limit`` rows from ``offset`` and hands their abbreviated records to
:func:`fit_page`, which returns the largest first part of them whose result — exactly as the
executor sends it (compact JSON, :func:`~tierwise.tools.results.serialize_result`) — is at most
``budget`` tokens, with ``total``, ``has_more`` and ``next_offset`` (where the next page starts).

Records keep seed 000 §2.3's previews while a page can show at least :data:`MIN_SHOWN` of them; when
it cannot, the page drops its records' longest previews step by step (``shrink``: for tasks the
details preview, for projects the context preview …) and says so in its message, rather than show one
or two records. The detail tools always have everything.

In a page, metadata hints that are false (``has_subtasks``, ``is_overdue`` …) are left out
(:func:`lean`): a page of tasks would otherwise spend a fifth of its tokens saying ``false``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tierwise.tokens import get_counter
from tierwise.tools.results import serialize_result
from tierwise.workspace.views import preview

__all__ = ["MIN_SHOWN", "Shrink", "drop", "fit_page", "lean", "page_tokens", "shorten"]

MIN_SHOWN = 5
"""A page shows at least this many records (when there are) before keeping long previews."""

Shrink = Callable[[dict[str, Any]], dict[str, Any]]
"""One step that makes a record smaller (a preview dropped or shortened)."""

_HINT_PREFIXES = ("has_", "is_")


def page_tokens(result: Any) -> int:
    """The tokens of ``result`` as the model receives it (the default encoding)."""
    return get_counter().count(serialize_result(result)[0])


def lean(record: Mapping[str, Any]) -> dict[str, Any]:
    """``record`` without its false hints.

    Example:
        >>> lean({"id": "task_1", "has_subtasks": False, "is_overdue": True, "done": False})
        {'id': 'task_1', 'is_overdue': True, 'done': False}
    """
    return {k: v for k, v in record.items() if not (v is False and k.startswith(_HINT_PREFIXES))}


def drop(*keys: str) -> Shrink:
    """A shrink step that leaves ``keys`` out."""

    def step(record: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in record.items() if k not in keys}

    return step


def shorten(key: str, limit: int) -> Shrink:
    """A shrink step that cuts the text under ``key`` to ``limit`` characters (at a word, with …)."""

    def step(record: dict[str, Any]) -> dict[str, Any]:
        if not isinstance(record.get(key), str):
            return record
        return {**record, key: preview(record[key].rstrip("…"), limit)}

    return step


def fit_page(
    records: Sequence[dict[str, Any]],
    *,
    key: str,
    budget: int,
    total: int,
    offset: int,
    message: Callable[[int, bool], str],
    shrink: Sequence[Shrink] = (),
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The page of ``records`` (under ``key``) that fits ``budget`` tokens.

    Args:
        records: the candidate records in order (already fetched from ``offset``).
        key: the result key the records go under (``"tasks"`` …).
        budget: the most tokens the whole result may take.
        total: how many records match in all.
        offset: where ``records`` start among all matches.
        message: the page's message, from (records shown, whether more follow).
        shrink: steps that make records smaller, applied in turn while fewer than
            :data:`MIN_SHOWN` fit.
        extra: more keys for the result (``time_range`` …).

    A page always shows at least one record when there is one, even one over the budget.
    """
    forms = [list(records)]
    for step in shrink:
        forms.append([step(r) for r in forms[-1]])
    best: dict[str, Any] | None = None
    best_shown = -1
    for level, form in enumerate(forms):
        page, shown = _fit(form, key, budget, total, offset, message, extra or {}, brief=level > 0)
        if shown > best_shown:
            best, best_shown = page, shown
        if shown >= min(len(form), MIN_SHOWN):
            break
    assert best is not None
    return best


def _build(
    form: Sequence[dict[str, Any]],
    n: int,
    key: str,
    total: int,
    offset: int,
    message: Callable[[int, bool], str],
    extra: Mapping[str, Any],
    brief: bool,
) -> dict[str, Any]:
    more = offset + n < total
    page: dict[str, Any] = {key: list(form[:n]), "total": total, "has_more": more}
    if more:
        page["next_offset"] = offset + n
    page.update(extra)
    text = message(n, more)
    if brief:
        text += " Long previews left out to fit the page."
    page["message"] = text
    return page


def _fit(
    form: Sequence[dict[str, Any]],
    key: str,
    budget: int,
    total: int,
    offset: int,
    message: Callable[[int, bool], str],
    extra: Mapping[str, Any],
    *,
    brief: bool,
) -> tuple[dict[str, Any], int]:
    def build(n: int) -> dict[str, Any]:
        return _build(form, n, key, total, offset, message, extra, brief)

    if not form:
        return build(0), 0
    room = budget - page_tokens(build(0))  # an estimate first: each record's own tokens, summed
    n = 0
    for record in form:
        room -= page_tokens(record) + 1  # the comma
        if room < 0:
            break
        n += 1
    n = max(1, n)
    while n > 1 and page_tokens(build(n)) > budget:  # then exact: the whole result counted
        n -= 1
    while n < len(form) and page_tokens(build(n + 1)) <= budget:
        n += 1
    return build(n), n
