"""The past gate: does the input ask about something working memory does not show?

Retrieved turns go in the pack's per-turn tail (see :mod:`tierwise.memory.frame`), which the
provider's prompt cache never covers: every token of it is billed in full, every turn. So memory
retrieves only when the input reaches past working memory — when the words it is about are missing
from the recent turns sent whole but were said before.

Each of the input's searchable words (stemmed, stopwords left out: :func:`~tierwise.memory.retrieval.
tokenize`) weighs its rarity in the conversation (inverse document frequency over turns), so a name
said in every turn counts little and a rare word much; a word never said before is no clue either
way. The gate opens when the words said only before working memory carry at least
``question_share`` of the weight of the input's words said anywhere in the conversation
(``statement_share`` for an input that asks no question: a remark needs the past less than a
question does).

Measured on the LoCoMo dev conversations replayed as chats (``tierwise bench cache``, 4k budget):
open for 7 % of chat turns and for 99.6 % of the benchmark's questions (``tierwise bench locomo``).
The two shares were chosen on that split (question 0.3–0.5, statement 0.6–0.75 tried).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from itertools import chain

from tierwise.memory.retrieval import terms_of, tokenize
from tierwise.memory.turns import Turn

__all__ = ["PastGate"]


class PastGate:
    """Decides, per input, whether memory should retrieve older turns.

    Each turn's word set is made once, as turns are first looked at; word frequencies are kept up
    to date incrementally, so a decision costs the size of working memory, not of the conversation.

    Example:
        >>> turns = [Turn(f"m{i}", i, "user", text) for i, text in enumerate(
        ...     ["The venue is the Old Mill.", "Catering is booked.", "Dana sends invites."])]
        >>> gate = PastGate()
        >>> gate.opens("Which venue did we pick?", turns, start=2, end=3)
        True
        >>> gate.opens("Who sends invites?", turns, start=2, end=3)
        False
    """

    def __init__(self, *, question_share: float = 0.4, statement_share: float = 0.75) -> None:
        self.question_share = question_share
        self.statement_share = statement_share
        self._terms: list[list[str]] = []  # each turn's searchable words, as tokenize() gives them
        self._sets: list[set[str]] = []  # … as a set
        self._counted = 0  # turns counted into _df
        self._df: Counter[str] = Counter()  # word → turns it occurs in

    def opens(self, query: str, turns: Sequence[Turn], start: int, end: int) -> bool:
        """Whether ``query`` asks about something turns ``[start, end)`` lack and earlier turns hold."""
        terms = sorted(set(tokenize([query])[0]))
        if not terms or start <= 0:
            return False
        self._extend(turns, end)
        df, total = self._df, len(self._sets)
        said = [t for t in terms if df.get(t, 0) > 0]  # a word never said before is no clue
        later = self.words(turns, start, total)  # working memory and any turn after it
        weight = {t: math.log((total + 1) / (df[t] + 0.5)) for t in said}
        older = [t for t in said if t not in later]
        share = self.question_share if "?" in query else self.statement_share
        return bool(older) and sum(weight[t] for t in older) >= share * sum(weight.values())

    def words(self, turns: Sequence[Turn], start: int, end: int) -> set[str]:
        """The searchable words of turns ``[start, end)``."""
        self._extend(turns, end)
        out: set[str] = set()
        for words in self._sets[start:end]:
            out |= words
        return out

    def terms(self, start: int, end: int) -> list[list[str]]:
        """The terms of turns ``[start, end)`` the gate has made so far (for the search index)."""
        return self._terms[start:end]

    def _extend(self, turns: Sequence[Turn], end: int) -> None:
        sets = self._sets
        if len(sets) < end:
            terms = terms_of(turns[len(sets) : end])
            self._terms.extend(terms)
            sets.extend(set(words) for words in terms)
        self._df.update(chain.from_iterable(sets[self._counted :]))  # counted in C
        self._counted = len(sets)
