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

from tierwise.summarize.dates import CALENDAR_WORDS
from tierwise.summarize.extractive import FILLER, STOPWORDS, english_rarity
from tierwise.tokens import TokenCounter

__all__ = ["Vocabulary", "key_phrases"]

_TOKEN = re.compile(
    r"[\w.-]*\w(?:/[\w.-]*\w)+"  # paths: app/auth/jwt.py
    r"|[A-Za-z][\w-]*\.(?:py|js|ts|tsx|md|json|ya?ml|toml|sql|go|rs|sh|txt|csv|html|css)\b"  # files
    r"|v?\d+(?:\.\d+)+"  # versions and decimals: v0.4.0, 3.5
    r"|[A-Za-z][A-Za-z0-9'+#-]*[A-Za-z0-9+#]|[A-Za-z]|\d+|[^\s\w]+"
)
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

    def add(self, word: str, seq: int) -> None:
        """Record that segment ``seq`` (the newest) uses ``word``."""
        seen = self.seqs.setdefault(word, [])
        if not seen or seen[-1] != seq:
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
        return math.log((1 + self.documents) / (0.5 + self.df(word)))


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
    banned = {w.lower() for w in exclude}
    tf: Counter[str] = Counter()
    nominal: set[str] = set()  # words seen after a determiner ("my dance studio"): nouns, mostly
    runs: list[tuple[int, list[str]]] = []
    for number, sentence in enumerate(sentences):
        run: list[str] = []
        after_determiner = False
        for n, token in enumerate(_TOKEN.findall(sentence)):
            if "'" in token or "’" in token:
                token = re.sub(r"['’]s$", "", token)
                if "'" in token or "’" in token:
                    token = ""  # contractions: what's, I'm, don't
            if n == 0 and token[:1].isupper() and not token.isupper():
                token = token.lower()  # sentence-initial capital: not a name
            key = token.lower()
            if _usable(key) and key not in banned:
                if not run and n and token[:1].isupper():
                    nominal.add(key)
                run.append(token)
                tf[key] += 1
                continue
            if run:
                if after_determiner:  # the head of "a helpful group" is "group": a noun
                    nominal.add(run[-1].lower())
                runs.append((number, run))
                run = []
            after_determiner = key in _DETERMINERS
        if run:
            if after_determiner:
                nominal.add(run[-1].lower())
            runs.append((number, run))
    weight = {
        w: math.log1p(n) * vocabulary.idf(w) * english_rarity(w, counter) * (1.0 if w in nominal else 0.6)
        for w, n in tf.items()
    }
    candidates: dict[str, list[float]] = {}  # lower-case phrase -> [score, count, first position]
    spelling: dict[str, str] = {}
    where: dict[str, set[int]] = {}  # the sentences a phrase occurs in
    position = 0
    for number, run in runs:
        for size in (1, 2, 3):
            for i in range(len(run) - size + 1):
                words = run[i : i + size]
                key = " ".join(w.lower() for w in words)
                position += 1
                where.setdefault(key, set()).add(number)
                if key in candidates:
                    candidates[key][1] += 1
                    continue
                spelling[key] = " ".join(words)
                candidates[key] = [sum(weight[w.lower()] for w in words), 1.0, float(position)]
    scored = []
    for key, (score, count, first) in candidates.items():
        size = key.count(" ") + 1
        proper = any(w[:1].isupper() for w in spelling[key].split())
        if size > 1 and count < 2 and not proper:
            continue  # a multi-word phrase must recur, or be a name, to be a phrase
        if size == 1 and not proper and len(key) >= 5 and key.endswith(("ed", "ing", "ly")):
            score *= 0.4  # most likely a verb or an adverb: a weak topic on its own
        if size == 1 and not proper and count < 2 and key not in nominal:
            score *= 0.5  # said once, never as a noun: a passing word, not a topic
        scored.append((-(score * (1 + 0.25 * (count - 1)) / (1 + 0.35 * (size - 1))), first, key))
    scored.sort()
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
            value = -neg * (1.0 - SAID * len(where[key] & covered) / len(where[key]))  # said already
            if best is None or value > best[0]:
                best = (value, first, key)
        if best is None:
            break
        chosen.append(spelling[best[2]])
        used |= set(best[2].split())
        covered |= where[best[2]]
    return chosen
