r"""Lines of earlier tool output, found by the names a step uses: retrieval for agent loops.

An agent quotes what it read many steps ago: a function it grepped for, a line it is about to edit, a
test id from an old run. Once that output has left working memory, the turn retriever
(:mod:`tierwise.memory.retrieval`) can bring back its turn — but a tool result is remembered as its
compressed form, and the line the agent needs is in the middle of the output. :class:`LineIndex`
keeps every tool output's lines by the *names* in them (identifiers, dotted names, paths: ``[\w.]``
runs with a letter, four characters or more) and answers a query — the step being answered: its
command, its thought, its output — with the lines that share the most of its rarer names, verbatim,
grouped under the step they came from.

Deterministic: the same outputs and query give the same lines. Building is incremental (one pass per
output as it is added); a query touches only the lines that share a name with it.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tierwise.tokens import TokenCounter

__all__ = ["LineIndex", "names"]

_NAME = re.compile(r"[A-Za-z_][\w.]*\w")
_MIN_NAME = 4
_MAX_LINE_CHARS = 240
_MAX_LINES = 4_000  # lines indexed per output (a huge log's first lines are rarely what is quoted)
_COMMON = 0.05  # a name on more than this share of all lines says nothing
MIN_NAMES = 2  # a line is found by at least this many of the query's names


def names(text: str) -> set[str]:
    """The names in ``text``: identifiers, dotted names and their parts, four characters or more.

    Example:
        >>> sorted(names("itrs_coo.transform_to(observed) at x=1"))
        ['itrs_coo', 'itrs_coo.transform_to', 'observed', 'transform_to']
    """
    out: set[str] = set()
    for match in _NAME.finditer(text):
        word = match.group()
        if len(word) >= _MIN_NAME:
            out.add(word)
        if "." in word:
            out.update(part for part in word.split(".") if len(part) >= _MIN_NAME)
    return out


@dataclass(frozen=True)
class _Line:
    source: int  # the message index of the output
    number: int  # its line number in the output (1-based)
    text: str


class LineIndex:
    r"""Tool outputs' lines by the names in them (see the module docstring).

    Example:
        >>> from tierwise.tokens import get_counter
        >>> index = LineIndex()
        >>> index.add(3, "def transform_to(self, frame):\n    return self.frame\nclass ITRS:\n    pass")
        >>> label = lambda i: f"#{i}"
        >>> print(index.select("edit transform_to(frame)", get_counter(), 50, before=10, label=label))
        #3
        1: def transform_to(self, frame):
    """

    def __init__(self) -> None:
        self._lines: list[_Line] = []
        self._by_name: dict[str, list[int]] = defaultdict(list)
        self._sources: set[int] = set()

    def __len__(self) -> int:
        return len(self._lines)

    def add(self, source: int, output: str) -> None:
        """Index the lines of one tool output (``source``: its message index; once per source)."""
        if source in self._sources:
            return
        self._sources.add(source)
        for number, line in enumerate(output.splitlines()[:_MAX_LINES], 1):
            found = names(line)
            if not found:
                continue
            at = len(self._lines)
            self._lines.append(_Line(source, number, line.strip()[:_MAX_LINE_CHARS]))
            for name in found:
                self._by_name[name].append(at)

    def select(
        self,
        query: str,
        counter: TokenCounter,
        budget: int,
        *,
        before: int,
        exclude: Iterable[int] = (),
        label: object = None,
        shown: set[str] | frozenset[str] = frozenset(),
    ) -> str:
        """The lines of outputs before message ``before`` (none of ``exclude``) that best match ``query``.

        Lines are scored by the rarity (idf) of the query's names they hold; those holding only one
        common name are not taken. The best fit ``budget`` tokens and are shown in their order,
        under their output's ``label(source)`` (default ``[message N]``), each as ``number: text``;
        a line in ``shown`` (rendered so) is not repeated.
        """
        wanted = names(query)
        total = len(self._lines)
        if not wanted or not total:
            return ""
        skip = set(exclude)
        scores: dict[int, float] = defaultdict(float)
        matched: dict[int, int] = defaultdict(int)
        for name in wanted:
            hits = self._by_name.get(name)
            if not hits or len(hits) > max(8, total * _COMMON):
                continue
            weight = math.log(1 + total / len(hits))
            for at in hits:
                line = self._lines[at]
                if line.source < before and line.source not in skip:
                    scores[at] += weight
                    matched[at] += 1
        if not scores:
            return ""
        best = max(scores.values())
        ranked = sorted(
            (at for at, s in scores.items() if s >= best * 0.5 and matched[at] >= MIN_NAMES),
            key=lambda at: (-scores[at], at),
        )
        chosen: list[int] = []
        seen: set[str] = set()
        used = 0
        heads: set[int] = set()
        for at in ranked:
            line = self._lines[at]
            if line.text in seen or f"{line.number}: {line.text}" in shown:
                continue
            cost = counter.count(line.text) + 4 + (0 if line.source in heads else 8)
            if used + cost > budget:
                continue
            chosen.append(at)
            seen.add(line.text)
            heads.add(line.source)
            used += cost
        return _render([self._lines[at] for at in sorted(chosen)], label)


def _render(lines: Sequence[_Line], label: object) -> str:
    out: list[str] = []
    source = None
    for line in lines:
        if line.source != source:
            source = line.source
            out.append(label(source) if callable(label) else f"[message {source}]")
        out.append(f"{line.number}: {line.text}")
    return "\n".join(out)
