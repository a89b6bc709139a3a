"""What memory reads off each turn once: its BM25 terms and its content words, stored with the message.

Two readers need a turn's words: the past gate and the search index take its BM25 terms
(:func:`~tierwise.memory.retrieval.tokenize`: stemmed, stopwords out), and the segmenter and key
phrases take its content words (:func:`~tierwise.summarize.extractive.content_words`, first
occurrences in order). Both are made when a turn is remembered and stored beside the message
(``chat_messages.terms`` / ``.words``, migration 0006), so a chat loaded after a restart reads them
instead of scanning its whole text twice (10,000 messages: ~0.45 s of a first turn's ~1 s, decision 52).

Stored analyses are trusted like stored token counts: a load checks a sample against the code that
runs now (:func:`trusted`) and makes them all again if one differs (a new tokenizer, say), so packs
never depend on what an older version stored.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from tierwise.memory.retrieval import tokenize
from tierwise.memory.turns import turn_from_message
from tierwise.summarize.extractive import content_words

__all__ = ["Analysis", "analyse", "analyse_many", "of_message", "searchable", "trusted"]


class Analysis(NamedTuple):
    """A turn's BM25 terms (in order, repeats kept) and content words (first occurrences, in order)."""

    terms: tuple[str, ...]
    words: tuple[str, ...]

    def stored(self) -> tuple[str, str]:
        """The two columns it is stored as (words joined by spaces: neither kind holds one)."""
        return " ".join(self.terms), " ".join(self.words)

    @classmethod
    def of_stored(cls, terms: str, words: str, same: dict[str, str] | None = None) -> Analysis:
        """The analysis stored as ``terms`` and ``words`` (:meth:`stored`).

        ``same``: one string object per distinct word, shared by every analysis read with it. A
        word split off a stored text is a new string each time; the search index and the
        vocabulary look every word up, and one object per word makes those lookups a pointer check
        with a cached hash (the index of a 10,000-message chat: 0.35 → 0.16 s).
        """
        if same is None:
            return cls(tuple(terms.split()), tuple(words.split()))
        one = same.setdefault
        return cls(tuple([one(w, w) for w in terms.split()]), tuple([one(w, w) for w in words.split()]))


def searchable(text: str, extra: str) -> str:
    """The text a turn is searched and segmented by: what it said, then what is never shown."""
    return f"{text} {extra}"


def analyse(text: str) -> Analysis:
    """The analysis of one turn's :func:`searchable` text.

    Example:
        >>> analyse("The kids loved painting sunsets. ")
        Analysis(terms=('kid', 'love', 'paint', 'sunset'), words=('kids', 'loved', 'painting', 'sunsets'))
    """
    return analyse_many([text])[0]


def analyse_many(texts: Sequence[str]) -> list[Analysis]:
    """:func:`analyse` of each text (the terms in one pass)."""
    return [
        Analysis(tuple(terms), tuple(dict.fromkeys(content_words(text))))
        for text, terms in zip(texts, tokenize(texts), strict=True)
    ]


def of_message(message: Mapping[str, Any]) -> Analysis:
    """The analysis of the turn an OpenAI-format message becomes (:func:`turn_from_message`)."""
    turn = turn_from_message(message, 0)
    return analyse(searchable(turn.text, turn.extra))


def trusted(
    messages: Sequence[Mapping[str, Any]], stored: Sequence[tuple[str, str] | None], sample: int = 8
) -> list[Analysis | None]:
    """The stored analyses of ``messages``, if what this code makes of a sample of them agrees.

    Up to ``sample`` stored analyses spread over the chat are made again and compared: all equal,
    every stored one is taken (``None`` where none was stored); one differs (they were made by
    another version), none is.
    """
    same: dict[str, str] = {}
    decoded = [Analysis.of_stored(*pair, same) if pair is not None else None for pair in stored]
    have = [i for i, analysis in enumerate(decoded) if analysis is not None]
    picked = have[:: max(1, len(have) // sample)][:sample]
    if any(of_message(messages[i]) != decoded[i] for i in picked):
        return [None] * len(messages)
    return decoded
