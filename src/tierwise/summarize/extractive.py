"""The offline, deterministic extractive summarizer (the default: no model needed).

It keeps the sentences that carry the most of the text's vocabulary, with a bonus for the things
seed 003 wants a summary to hold: decisions, changes, open questions, dates and names. Sentences
keep their original order; the result always fits its cap and ends on a sentence boundary (a
sentence too long for the cap on its own is cut at a word and closed with "…").
"""

from __future__ import annotations

import math
import re
from collections import Counter

from bm25s.stopwords import STOPWORDS_EN_PLUS

from tierwise.summarize.base import check_summary
from tierwise.tokens import TokenCounter, get_counter

__all__ = ["ExtractiveSummarizer", "content_words", "split_sentences"]

_SENTENCES = re.compile(r"[^.!?\n。！？]+(?:[.!?。！？]+[\"')\]]*|\n+|$)")
_WORD = re.compile(r"[A-Za-z][A-Za-z'\-]{2,}|\d[\d:/.\-]*\d|\d")
_STOP = frozenset(STOPWORDS_EN_PLUS) | {
    "i",
    "im",
    "i'm",
    "it's",
    "that's",
    "yeah",
    "yes",
    "ok",
    "okay",
    "also",
    "just",
    "really",
    "like",
    "so",
    "get",
    "got",
    "one",
    "thing",
    "things",
    "know",
    "think",
}
_CUES = re.compile(
    r"\b(decid\w*|agree\w*|chose|choos\w*|will|won't|plan\w*|need\w*|must|should|deadline|due|"
    r"moved?|changed?|created?|scheduled?|finish\w*|done|completed?|blocked|next|tomorrow|todo)\b|\?",
    re.IGNORECASE,
)
_MARKUP = re.compile(r"\*\*|__|`")
_BULLET = re.compile(r"^\s*(?:[-*•>#]+|\d+[.)])\s+")
_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]{2,}\b")


def split_sentences(text: str) -> list[str]:
    """Sentences and lines of ``text``, stripped, in order."""
    return [s.strip() for s in _SENTENCES.findall(text) if s.strip()]


def content_words(text: str) -> list[str]:
    """Lower-cased words of ``text`` without stopwords (numbers and dates kept)."""
    return [w for w in map(str.lower, _WORD.findall(text)) if w not in _STOP]


class ExtractiveSummarizer:
    """Picks the most central sentences, in order, within a token cap. Deterministic.

    Example:
        >>> s = ExtractiveSummarizer()
        >>> s.summarize("We met. We decided to ship the webhook system on Friday. Lunch was fine.",
        ...             max_tokens=12)
        'We decided to ship the webhook system on Friday.'
    """

    name = "extractive"

    def __init__(self, counter: TokenCounter | None = None) -> None:
        self.counter = counter or get_counter()

    def summarize(self, text: str, *, max_tokens: int, focus: str | None = None) -> str:
        """Summarise ``text`` within ``max_tokens`` (``focus`` words count double)."""
        sentences = split_sentences(text)
        if not sentences or max_tokens < 1:
            return ""
        vocabularies = [set(content_words(sentence)) for sentence in sentences]
        freq = Counter(w for words in vocabularies for w in words)
        focus_words = set(content_words(focus or ""))
        scored = []
        for i, (sentence, words) in enumerate(zip(sentences, vocabularies, strict=True)):
            if not words:
                continue
            centrality = sum(freq[w] + (freq[w] if w in focus_words else 0) for w in words)
            score = centrality / math.sqrt(len(words) + 2)
            score += 1.5 * len(_CUES.findall(sentence)) + 0.5 * len(_NAME.findall(sentence))
            score += 1.0 if i == 0 else 0.0
            scored.append((-score, i, sentence))
        if not scored:
            return ""
        scored.sort()
        chosen: list[tuple[int, str]] = []
        used = 0
        for _, i, sentence in scored:
            line = _close(sentence)
            cost = self.counter.count(line) + (1 if chosen else 0)
            if used + cost <= max_tokens:
                chosen.append((i, line))
                used += cost
        if not chosen:  # the best sentence alone is too long: cut it at a word
            chosen = [(scored[0][1], self._cut(scored[0][2], max_tokens))]
        chosen.sort()
        summary = " ".join(line for _, line in chosen)
        return check_summary(summary, max_tokens, self.counter) if summary else ""

    def _cut(self, sentence: str, max_tokens: int) -> str:
        words = sentence.split()
        while words:
            candidate = " ".join(words).rstrip(",;:-") + "…"
            if self.counter.count(candidate) <= max_tokens:
                return candidate
            words.pop()
        return ""


def _close(sentence: str) -> str:
    sentence = _BULLET.sub("", _MARKUP.sub("", sentence)).strip() or sentence.strip()
    return sentence if sentence[-1:] in ".!?。！？…\"')]" else sentence + "."
