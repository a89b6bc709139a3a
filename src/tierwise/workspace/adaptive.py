"""Seed 000 §10.3: the related layer's allowance adapts, per location, to what the model used.

A project chat's *related* layer lists the project's recent notes (ids a model can open with
``get_note_details``). Whether that is worth its tokens depends on the chat: in one the user keeps
asking about notes, in another the layer rides along unread on every call. :class:`AdaptiveBudgets`
keeps, per ``(user, location)``, how many related items to show:

- it starts at ``base`` (3);
- **grows** by ``step`` (up to ``most``) when a detail tool opens an item the layer showed, or an
  item of the same location it did not show (the layer was too short);
- **shrinks** by one (down to ``least``) after ``patience`` turns in a row in which nothing it showed
  was opened.

Detail tools report what they open (:meth:`AdaptiveBudgets.opened`, through ``extras["adaptive"]``);
:class:`~tierwise.workspace.context.WorkspaceContext` asks :meth:`AdaptiveBudgets.allowance` before
it builds the layer and reports the ids it shows (:meth:`AdaptiveBudgets.shown`). State lives in this
process, in memory, bounded (least recently used locations go first). The statistics
(:class:`AdaptiveStats`) are reported by ``tierwise bench disclosure``.

Example:
    >>> budgets = AdaptiveBudgets(patience=2)
    >>> where = ("project", "proj_1")
    >>> budgets.allowance("u1", where)
    3
    >>> budgets.shown("u1", where, ["note_a", "note_b", "note_c"])
    >>> budgets.opened("u1", "note_b")  # the model opened one: the layer grows
    >>> budgets.allowance("u1", where)
    5
    >>> for _ in range(3):  # the turn that used it, then two in which nothing shown was opened
    ...     budgets.shown("u1", where, ["note_a"])
    >>> budgets.allowance("u1", where)
    4
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["AdaptiveBudgets", "AdaptiveStats"]


@dataclass
class AdaptiveStats:
    """What the budgets did: grown and shrunk allowances, items opened from the layer or missing."""

    grown: int = 0
    shrunk: int = 0
    opened_shown: int = 0  # a detail the layer offered
    opened_missing: int = 0  # a detail of the location the layer did not show (it grows for it)

    def as_dict(self) -> dict[str, Any]:
        """The figures, for reports."""
        return dict(self.__dict__)


@dataclass
class _Location:
    allowance: int
    shown: set[str] = field(default_factory=set)
    idle: int = 0  # turns in a row whose shown items were not opened
    used: bool = False  # something shown was opened since the last turn


class AdaptiveBudgets:
    """Per-location related-layer allowances that follow use (see the module docstring).

    Args:
        base: the allowance a location starts with (items).
        least: the smallest allowance (0 drops the layer's items altogether).
        most: the largest allowance.
        step: how much an open grows it.
        patience: idle turns before it shrinks by one.
        max_locations: how many locations are remembered.
    """

    def __init__(
        self,
        *,
        base: int = 3,
        least: int = 1,
        most: int = 8,
        step: int = 2,
        patience: int = 3,
        max_locations: int = 1024,
    ) -> None:
        if not 0 <= least <= base <= most or step < 1 or patience < 1 or max_locations < 1:
            raise ValueError(
                "need 0 <= least <= base <= most, step >= 1, patience >= 1 and max_locations >= 1"
            )
        self.base, self.least, self.most, self.step, self.patience = base, least, most, step, patience
        self.max_locations = max_locations
        self.stats = AdaptiveStats()
        self._locations: OrderedDict[tuple[str, Hashable], _Location] = OrderedDict()
        self._owner: dict[tuple[str, str], tuple[str, Hashable]] = {}  # (user, item id) → location
        self._lock = threading.Lock()

    def _get(self, user_id: str, where: Hashable) -> _Location:
        key = (user_id, where)
        state = self._locations.get(key)
        if state is None:
            state = self._locations[key] = _Location(self.base)
            while len(self._locations) > self.max_locations:
                (old_user, _), old = self._locations.popitem(last=False)
                for item in old.shown:
                    self._owner.pop((old_user, item), None)
        self._locations.move_to_end(key)
        return state

    def allowance(self, user_id: str, where: Hashable) -> int:
        """How many related items to show at ``where`` now."""
        with self._lock:
            return self._get(user_id, where).allowance

    def shown(self, user_id: str, where: Hashable, items: Iterable[str]) -> None:
        """A turn showed ``items`` at ``where``: count an idle turn if nothing shown was opened."""
        with self._lock:
            state = self._get(user_id, where)
            if state.shown and not state.used:
                state.idle += 1
                if state.idle >= self.patience and state.allowance > self.least:
                    state.allowance -= 1
                    state.idle = 0
                    self.stats.shrunk += 1
            elif state.used:
                state.idle = 0
            state.used = False
            for item in items:
                state.shown.add(item)
                self._owner[(user_id, item)] = (user_id, where)

    def opened(self, user_id: str, item_id: str, where: Hashable | None = None) -> None:
        """A detail tool opened ``item_id`` (of location ``where``, if known): grow that location's allowance.

        An item a layer showed counts for the location that showed it; one it did not show counts for
        ``where`` if that location has a layer (it was too short); anything else is not counted.
        """
        with self._lock:
            key = self._owner.get((user_id, item_id))
            if key is None and where is not None:
                key = (user_id, where)
            state = self._locations.get(key) if key is not None else None
            if state is None:
                return
            if item_id in state.shown:
                self.stats.opened_shown += 1
            else:
                self.stats.opened_missing += 1
            state.used = True
            state.idle = 0
            if state.allowance < self.most:
                state.allowance = min(self.most, state.allowance + self.step)
                self.stats.grown += 1
