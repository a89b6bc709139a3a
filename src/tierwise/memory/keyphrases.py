"""Key phrases: what is distinctive about one stretch of conversation against the rest.

A header must say what a segment is about in a few tokens. Frequent words are not enough (every
LoCoMo session is full of "great" and the speakers' names); what sets a segment apart is the words
it uses often and the rest of the conversation rarely. :class:`Vocabulary` keeps how many segments
used each word (document frequency, updated as turns arrive); :func:`key_phrases` scores candidate
phrases — runs of one to three content words inside a sentence, with their original spelling — by
tf × idf of their words, and returns the best ones that do not repeat each other's words.

Deterministic: every tie is broken by first appearance, never by hash order.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import compress, pairwise
from typing import NamedTuple

from tierwise.summarize.dates import CALENDAR_WORDS
from tierwise.summarize.extractive import FILLER, STOPWORDS, english_rarity
from tierwise.tokens import TokenCounter

__all__ = ["Vocabulary", "key_phrases"]

_EXTENSION = r"\.(?:py|js|ts|tsx|md|json|ya?ml|toml|sql|go|rs|sh|txt|csv|html|css)\b"
_PLAIN_TOKEN = (
    r"v?\d+(?:\.\d+)+"  # versions and decimals: v0.4.0, 3.5
    r"|[A-Za-z][A-Za-z0-9'+#-]*[A-Za-z0-9+#]|[A-Za-z]|\d+|[^\s\w]+"
)
_TOKEN = re.compile(
    r"[\w.-]*\w(?:/[\w.-]*\w)+"  # paths: app/auth/jwt.py
    r"|[A-Za-z][\w-]*" + _EXTENSION + "|" + _PLAIN_TOKEN  # files, then the rest
)
# The same tokens where no path or file name can be (no "/", no ".py"): the first two alternatives
# would fail at every position, at a cost; without them the matches are the same.
_TOKEN_PLAIN = re.compile(_PLAIN_TOKEN)
_FILE_NAME = re.compile(_EXTENSION)
_WEAK = (
    FILLER
    | CALENDAR_WORDS
    | frozenset(
        [
            "want",
            "wanted",
            "make",
            "made",
            "going",
            "went",
            "come",
            "came",
            "say",
            "said",
            "tell",
            "told",
            "ask",
            "asked",
            "try",
            "tried",
            "look",
            "looking",
            "lots",
            "bit",
            "kind",
            "sort",
            "stuff",
            "pretty",
            "right",
            "well",
            "still",
            "even",
            "ever",
            "yet",
            "way",
            "able",
            "let",
            "thought",
            "remember",
            "guess",
            "wish",
            "hear",
            "heard",
            "share",
            "sharing",
            "shared",
            "glad",
            "happy",
            "new",
            "old",
            "big",
            "little",
            "first",
            "last",
            "next",
            "user",
            "assistant",
            "yesterday",
            "today",
            "tomorrow",
            "week",
            "weekend",
            "month",
            "year",
            "ago",
            "lately",
            "recently",
            "gonna",
            "wanna",
            "gotta",
            "thinkin",
            "kinda",
            "sorta",
            "lemme",
            "ya",
            "someone",
            "something",
            "anything",
            "everything",
            "everyone",
            "anyone",
            "others",
            "would",
            "could",
            "should",
            "might",
            "must",
            "shall",
            "never",
            "always",
            "often",
            "maybe",
            "perhaps",
            "quite",
            "rather",
            "instead",
            "though",
            "although",
            "else",
            "elsewhere",
        ]
    )
)


@dataclass
class Vocabulary:
    """Document frequency of content words over segments (a segment is one document).

    ``seqs[word]`` lists the segments (by ``seq``, ascending) that use the word, so the frequencies
    can be read *as of* a segment (:meth:`upto`): a segment's header and summary are the same
    whether they are made when it closes or later, in the background.
    """

    seqs: dict[str, list[int]] = field(default_factory=dict)
    documents: int = 0
    upto_seq: int | None = None  # a view as of this segment (None: everything so far)
    # A view's idf of each word, worked out once (a trio reads a word's several times); the live
    # vocabulary's change as turns arrive, so it keeps none.
    _idf: dict[str, float] = field(default_factory=dict, repr=False, compare=False)

    def add(self, word: str, seq: int) -> None:
        """Record that segment ``seq`` (the newest) uses ``word``."""
        seen = self.seqs.setdefault(word, [])
        if not seen or seen[-1] != seq:
            seen.append(seq)

    def add_all(self, words: Iterable[str], seq: int) -> None:
        """:meth:`add` each of ``words`` (one call for a turn's words)."""
        seqs = self.seqs
        for word in words:
            seen = seqs.get(word)
            if seen is None:
                seqs[word] = [seq]
            elif seen[-1] != seq:
                seen.append(seq)

    def upto(self, seq: int) -> Vocabulary:
        """The frequencies as they were when segment ``seq`` was the newest."""
        return Vocabulary(self.seqs, min(self.documents, seq), seq)

    def df(self, word: str) -> int:
        """How many segments (up to the view's) use ``word``."""
        seen = self.seqs.get(word, ())
        return len(seen) if self.upto_seq is None else bisect_right(seen, self.upto_seq)

    def idf(self, word: str) -> float:
        """Rarity of ``word`` across segments: high for words few segments use."""
        known = self._idf.get(word)
        if known is None:
            known = math.log((1 + self.documents) / (0.5 + self.df(word)))
            if self.upto_seq is not None:
                self._idf[word] = known
        return known


SAID = 0.75  # how much less a phrase counts when the sentences it is in are covered already
_VERSION = re.compile(r"v\d+(?:\.\d+)+|\d+\.\d+\.\d+")
_DETERMINERS = frozenset(
    [
        "a",
        "an",
        "the",
        "my",
        "your",
        "his",
        "her",
        "our",
        "their",
        "its",
        "this",
        "that",
        "these",
        "those",
        "some",
        "any",
        "each",
        "every",
        "another",
        "no",
        "which",
        "whose",
    ]
)


def _usable(key: str) -> bool:
    if key.isalpha():  # the common case: a plain word
        return len(key) >= 3 and key not in STOPWORDS and key not in _WEAK
    if not key:
        return False
    if any(c.isdigit() for c in key):  # versions (v0.4.0, 0.4.0) and paths, not bare numbers
        return bool(_VERSION.fullmatch(key)) or ("/" in key and any(c.isalpha() for c in key))
    if "/" in key or "." in key:
        return len(key) >= 4
    return len(key) >= 3 and key[0].isalpha() and key not in STOPWORDS and key not in _WEAK


def key_phrases(
    sentences: Sequence[str],
    vocabulary: Vocabulary,
    *,
    exclude: Iterable[str] = (),
    limit: int = 3,
    counter: TokenCounter | None = None,
) -> list[str]:
    """The ``limit`` most distinctive phrases of ``sentences``, best first, words not repeated.

    Args:
        sentences: the segment's sentences (filler and logs already left out).
        vocabulary: document frequencies over the conversation's segments, this one included.
        exclude: words never to use (lower case), e.g. the speakers' names.
        limit: how many phrases.
        counter: its tokenizer's merge ranks say how common a word is in English at large (a word
            that is one low-ranked token, like "important", is common), which matters while the
            conversation has too few segments for its own frequencies to tell.

    Example:
        >>> v = Vocabulary({"support": [1], "group": [1], "lgbtq": [1], "painting": [1, 2, 3]}, 3)
        >>> key_phrases(["I went to a LGBTQ support group.", "The LGBTQ support group helped."], v, limit=1)
        ['LGBTQ support group']
    """
    banned = frozenset(w.lower() for w in exclude)
    # Every occurrence of every phrase, in order: each sentence's runs of usable words, and in each
    # run its one-, two- and three-word phrases (lower case, as spelled, whether a word is a name).
    keys: list[str] = []
    spellings: list[str] = []
    names: list[bool] = []
    nominal: set[str] = set()  # words seen after a determiner ("my dance studio"): nouns, mostly
    phrasings: list[frozenset[str]] = []  # each sentence's phrases
    words: set[str] = set()  # the phrases of one word
    for sentence in sentences:
        said = _phrases(sentence, banned)
        keys += said.keys
        spellings += said.spellings
        names += said.names
        nominal |= said.nominal
        words |= said.words
        phrasings.append(said.distinct)
    counts = Counter(keys)
    weight = {  # tf × idf × English rarity of each word
        w: math.log1p(counts[w])
        * vocabulary.idf(w)
        * english_rarity(w, counter)
        * (1.0 if w in nominal else 0.6)
        for w in words
    }
    # Where each phrase first and last occurs (1 for the first phrase): a later occurrence overwrites.
    firsts = dict(zip(reversed(keys), range(len(keys), 0, -1), strict=True))
    lasts = dict(zip(keys, range(1, len(keys) + 1), strict=True))
    # Only words, recurring phrases and names can score (most phrases are said once): the rest are
    # left out by set operations, not one by one.
    recurring = {key for key, _ in firsts.items() - lasts.items()}
    spelling: dict[str, str] = {}
    scored = []
    for key in words | recurring | set(compress(keys, names)):
        at, count = firsts[key], counts[key]
        size = key.count(" ") + 1
        name = names[at - 1]  # a word of the phrase (as first spelled) is capitalised: a name
        if size > 1 and count < 2 and not name:
            continue  # a multi-word phrase must recur, or be a name, to be a phrase
        score = sum(weight[w] for w in key.split(" "))
        if size == 1 and not name and len(key) >= 5 and key.endswith(("ed", "ing", "ly")):
            score *= 0.4  # most likely a verb or an adverb: a weak topic on its own
        if size == 1 and not name and count < 2 and key not in nominal:
            score *= 0.5  # said once, never as a noun: a passing word, not a topic
        spelling[key] = spellings[at - 1]
        scored.append((-(score * (1 + 0.25 * (count - 1)) / (1 + 0.35 * (size - 1))), float(at), key))
    scored.sort()
    where: dict[str, set[int]] = {}  # the sentences a phrase occurs in (for the phrases weighed)

    def sentences_of(key: str) -> set[int]:
        found = where.get(key)
        if found is None:
            found = where[key] = {number for number, said in enumerate(phrasings) if key in said}
        return found

    chosen: list[str] = []
    used: set[str] = set()
    covered: set[int] = set()
    while len(chosen) < limit:
        best: tuple[float, float, str] | None = None
        for neg, first, key in scored:  # best first: stop once no later one can beat the best
            if best is not None and -neg <= best[0]:
                break
            if -neg <= 0 or set(key.split()) & used:
                continue
            found = sentences_of(key)
            value = -neg * (1.0 - SAID * len(found & covered) / len(found))  # said already
            if best is None or value > best[0]:
                best = (value, first, key)
        if best is None:
            break
        chosen.append(spelling[best[2]])
        used |= set(best[2].split())
        covered |= sentences_of(best[2])
    return chosen


class _Said(NamedTuple):
    """The phrases of one sentence, in order (see :func:`_phrases`)."""

    keys: tuple[str, ...]  # lower case
    spellings: tuple[str, ...]
    names: tuple[bool, ...]  # a word of the phrase is capitalised
    nominal: frozenset[str]  # words read as nouns: the head after a determiner, a name opening a run
    distinct: frozenset[str]  # its phrases
    words: frozenset[str]  # its phrases of one word


@lru_cache(maxsize=4096)  # a chat reads its user's sentences twice; a few MB at most
def _phrases(sentence: str, banned: frozenset[str]) -> _Said:
    """Every phrase of a sentence, made once per sentence (and set of words not to use).

    In each run of usable words (a word in ``banned`` ends a run), its one-, two- and three-word
    phrases, in that order. Possessives lose their ``'s``, other contractions end a run, and a
    sentence-initial capital is lowered (it is not a name).
    """
    keys: list[str] = []
    spellings: list[str] = []
    names: list[bool] = []
    nominal: set[str] = set()
    run: list[str] = []
    run_keys: list[str] = []
    run_names: list[bool] = []
    after_determiner = False
    pattern = _TOKEN if "/" in sentence or _FILE_NAME.search(sentence) else _TOKEN_PLAIN
    for n, raw in enumerate([*pattern.findall(sentence), ""]):  # "" ends the last run
        token, key, usable, determiner, capital = _word(raw)
        if not n and capital and not token.isupper():
            token, capital = token.lower(), False  # sentence-initial capital: not a name
        if usable and key not in banned:
            if n and capital and not run:
                nominal.add(key)
            run.append(token)
            run_keys.append(key)
            run_names.append(capital)
            continue
        if run:
            if after_determiner:  # the head of "a helpful group" is "group": a noun
                nominal.add(run_keys[-1])
            keys += run_keys
            spellings += run
            names += run_names
            if len(run) > 1:
                pairs = [a or b for a, b in pairwise(run_names)]
                keys += map(" ".join, pairwise(run_keys))
                spellings += map(" ".join, pairwise(run))
                names += pairs
                if len(run) > 2:
                    keys += map(" ".join, zip(run_keys, run_keys[1:], run_keys[2:], strict=False))
                    spellings += map(" ".join, zip(run, run[1:], run[2:], strict=False))
                    names += [a or b for a, b in zip(pairs, run_names[2:], strict=False)]
            run, run_keys, run_names = [], [], []
        after_determiner = determiner
    distinct = frozenset(keys)
    return _Said(
        tuple(keys),
        tuple(spellings),
        tuple(names),
        frozenset(nominal),
        distinct,
        frozenset(k for k in distinct if " " not in k),
    )


@lru_cache(maxsize=32_768)
def _word(token: str) -> tuple[str, str, bool, bool, bool]:
    """A token as a phrase word: ``(spelling, lower-case key, usable, a determiner, capitalised)``.

    A possessive loses its ``'s``; another contraction (what's, I'm, don't) becomes empty.
    """
    if "'" in token or "’" in token:
        token = re.sub(r"['’]s$", "", token)
        if "'" in token or "’" in token:
            token = ""
    key = token.lower()
    return token, key, _usable(key), key in _DETERMINERS, token[:1].isupper()
