"""The offline, deterministic extractive summarizer (the default: no model needed).

It picks the sentences that carry facts, not the ones that carry the conversation's mood:

* **never material**: greetings, thanks, acknowledgements ("Wow, that's great!"), tool logs (test
  runner output, tracebacks, shell prompts, lines that are mostly symbols) and code blocks;
* **facts score**: numbers and versions, dates and times, names, file paths and URLs, decisions and
  plans ("we decided", "will", "moved to"), answers to a question just asked;
* **central words score**: a sentence sharing the excerpt's recurring content words is about what
  the excerpt is about;
* **diverse**: each pick lowers the score of sentences repeating its words (maximal marginal
  relevance), so five sentences say five things.

Sentences keep their order and their speaker ("Caroline: I went to a support group yesterday.");
the result always fits its cap and ends on a sentence boundary (a sentence too long for the cap on
its own is cut at a word and closed with "…"). Input lines ``Speaker: text`` give the speakers.
"""

from __future__ import annotations

import logging
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from bm25s.stopwords import STOPWORDS_EN_PLUS

from tierwise.summarize.base import check_summary
from tierwise.summarize.sentences import split_sentences
from tierwise.tokens import TokenCounter, get_counter

__all__ = [
    "FILLER",
    "STOPWORDS",
    "ExtractiveSummarizer",
    "content_words",
    "english_rarity",
    "is_filler",
    "is_log_line",
    "split_sentences",
]

log = logging.getLogger(__name__)

W_RARE = 4.0  # weight of rarity in the conversation, against centrality (2.0) and facts (~0.5 each)
_WORD = re.compile(r"[A-Za-z][A-Za-z'\-]{2,}|\d[\d:/.\-]*\d|\d")
STOPWORDS = frozenset(STOPWORDS_EN_PLUS) | {
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
FILLER = frozenset(
    [
        "hey",
        "hi",
        "hello",
        "bye",
        "goodbye",
        "thanks",
        "thank",
        "thx",
        "cheers",
        "welcome",
        "great",
        "wow",
        "awesome",
        "amazing",
        "cool",
        "nice",
        "glad",
        "happy",
        "sure",
        "sounds",
        "sound",
        "good",
        "lovely",
        "wonderful",
        "fantastic",
        "incredible",
        "totally",
        "absolutely",
        "definitely",
        "exactly",
        "agree",
        "true",
        "love",
        "loved",
        "congrats",
        "congratulations",
        "yay",
        "haha",
        "lol",
        "omg",
        "gosh",
        "oh",
        "ah",
        "hope",
        "hopefully",
        "appreciate",
        "appreciated",
        "means",
        "mean",
        "lot",
        "much",
        "kind",
        "sweet",
        "proud",
        "excited",
        "awesome",
        "super",
        "fun",
        "cute",
        "beautiful",
        "gorgeous",
        "stunning",
        "inspiring",
        "inspired",
        "feel",
        "feels",
        "feeling",
        "keep",
        "going",
        "doing",
        "see",
        "talk",
        "chat",
        "soon",
        "care",
        "take",
        "catch",
        "later",
        "day",
        "time",
        "yep",
        "yup",
        "nope",
        "hmm",
        "indeed",
        "right",
        "alright",
        "bet",
        "hear",
        "heard",
        "hearing",
        "listen",
        "sounds",
        "haha",
        "hehe",
        "wishing",
        "best",
        "luck",
        "totally",
        "agreed",
    ]
)
_CAPITALISED = re.compile(r"(?<=[\w,;:!] )[A-Z][a-z]+|^[A-Z][a-z]+(?=[,!.])")
_SYMBOL = re.compile(r"[^\w\s]|_")
_SPEAKER = re.compile(r"^([A-Za-z][A-Za-z0-9 '-]{0,30}):\s+(.*)$")  # a line that opens a turn
_CUES = re.compile(
    r"\b(decid\w*|agree\w*|chose|choos\w*|will|won't|plan\w*|need\w*|must|should|deadline|due|"
    r"moved?|changed?|created?|scheduled?|finish\w*|completed?|fixed|blocked|released?|shipped|"
    r"merged|deployed|booked|adopt\w*|started|joined|bought|signed|tomorrow|next)\b",
    re.IGNORECASE,
)
_EVENT = re.compile(  # something that happened to the speaker: "I went", "we adopted", "my son broke"
    r"\b(?:I|we|my \w+|our \w+)\s+(?:just\s+|finally\s+|recently\s+|also\s+)?"
    r"(?:\w+ed|went|made|took|got|bought|ran|saw|met|gave|began|won|wrote|read|did|had|found|built|"
    r"drew|sang|told|left|came|felt|broke|sold|spent|taught|threw|caught|lost)\b",
    re.IGNORECASE,
)
_NUMBER = re.compile(r"\d+(?:[.,:/-]\d+)*")
_WHEN = re.compile(
    r"\b(jan(uary)?|feb(ruary)?|mar(ch)?|apr(il)?|may|june?|july?|aug(ust)?|sep(tember)?|oct(ober)?|"
    r"nov(ember)?|dec(ember)?|monday|tuesday|wednesday|thursday|friday|saturday|sunday|yesterday|"
    r"today|tonight|tomorrow|weekend|week|month|year|ago|last|summer|winter|spring|autumn|fall)\b",
    re.IGNORECASE,
)
_NAME = re.compile(r"(?<=[\w,;:] )[A-Z][\w'-]+")
_CODE_EXTENSION = r"\.(?:py|js|ts|md|json|yaml|yml|toml|sql|go|rs)\b"
_CODE = re.compile(r"[\w-]+(?:/[\w.-]+)+|\b\w+" + _CODE_EXTENSION + r"|https?://\S+")
_CODE_FILE = re.compile(_CODE_EXTENSION)  # without it and without "/", _CODE cannot match
# The words _WHEN and _CUES match, for counting them in ASCII text without the patterns.
_RUN = re.compile(r"\w+")
# fmt: off
_WHEN_WORDS = frozenset({
    "jan", "january", "feb", "february", "mar", "march", "apr", "april", "may", "jun", "june", "jul",
    "july", "aug", "august", "sep", "september", "oct", "october", "nov", "november", "dec",
    "december", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
    "yesterday", "today", "tonight", "tomorrow", "weekend", "week", "month", "year", "ago", "last",
    "summer", "winter", "spring", "autumn", "fall"
})
_CUE_WORDS = frozenset({
    "chose", "will", "must", "should", "deadline", "due", "move", "moved", "change", "changed",
    "create", "created", "schedule", "scheduled", "complete", "completed", "fixed", "blocked",
    "release", "released", "shipped", "merged", "deployed", "booked", "started", "joined", "bought",
    "signed", "tomorrow", "next"
})
# fmt: on
_CUE_STEMS = ("decid", "agree", "choos", "plan", "need", "finish", "adopt")  # the \w* alternatives
_OPENER = re.compile(  # "Wow, Caroline! ", "Hey Mel, ", "Yeah, ": interjections that open a sentence
    r"^(?:(?:wow|hey|hi|hello|oh|ooh|aw+|yeah|yes|yep|well|haha|omg|gosh|thanks|ok|okay|so|btw|"
    r"by the way)\b[,!.]*\s+(?:[A-Z][a-z]+[,!.]+\s+)?)+",
    re.IGNORECASE,
)
_MARKUP = re.compile(r"\*\*|__|`")
_BULLET = re.compile(r"^\s*(?:[-*•>#]+|\d+[.)])\s+")
# A log line: how it starts (only at the start: no re.MULTILINE), or a runner's words anywhere.
_LOG_START = re.compile(
    r"^\s*(?:\$ |>>> |\.\.\. |Traceback|File \"|FAILED|PASSED|ERROR\b|WARNING\b|INFO\b|DEBUG\b|"
    r"={3,}|-{3,}|\+{3,}|@@|\d{4}-\d\d-\d\d[T ]\d\d:\d\d|[\w.]+(?:Error|Exception|Warning):|"
    r"\[\d+/\d+\]|collected \d+|\d+ (?:passed|failed))"
    # code: an assignment from a call, a definition or an import, a lone call
    r"|^\s*[\w.\[\]]+\s*=\s*[\w.]+\("
    r"|^\s*(?:def|class|import|from \S+ import|return|raise|yield|async def|await)\s"
    r"|^\s*[\w.]+\([^)]*\)\s*$",
)
_LOG_ANYWHERE = re.compile(r"\b\d+ passed\b|\bpassed in \d|\bexit code \d")


def english_rarity(word: str, counter: TokenCounter | None) -> float:
    """0.6 for the commonest English words, 1.0 for rare ones, by the tokenizer's merge rank.

    A word that is one low-ranked token (" important") is common in the text the tokenizer was
    trained on; a rare word takes several tokens or a late merge. Data the package already has.
    """
    return 1.0 if counter is None else _rarity(word, counter)


@lru_cache(maxsize=65_536)
def _rarity(word: str, counter: TokenCounter) -> float:
    ids = counter.encode(" " + word)
    if len(ids) > 1:
        return 1.0
    return min(1.0, max(0.6, math.log(ids[0] + 1) / math.log(60_000)))


def content_words(text: str) -> list[str]:
    """Lower-cased words of ``text`` without stopwords (numbers and dates kept)."""
    return [w for w in map(str.lower, _WORD.findall(text)) if w not in STOPWORDS]


@lru_cache(maxsize=16_384)  # a sentence is read by several layers (key phrases, summary, narrative)
def is_filler(sentence: str) -> bool:
    """A greeting, thanks or acknowledgement: at most one content word that is not small talk.

    Example:
        >>> is_filler("Wow, that's so great to hear, thanks!"), is_filler("Thanks, the fix is in v0.4.1.")
        (True, False)
    """
    names = {w.lower() for w in _CAPITALISED.findall(sentence)}
    words = content_words(sentence)
    substantive = sum(w not in FILLER and w not in names for w in words)
    return substantive <= (0 if len(words) <= 3 else 1)


@lru_cache(maxsize=16_384)
def is_log_line(sentence: str) -> bool:
    """Tool or terminal output: runner summaries, tracebacks, prompts, or mostly symbols."""
    if _LOG_START.match(sentence):
        return True
    if ("passed" in sentence or "exit code" in sentence) and _LOG_ANYWHERE.search(sentence):
        return True
    text = sentence.strip()
    return len(text) >= 12 and len(_SYMBOL.findall(text)) / len(text) > 0.3


@dataclass
class _Sentence:
    index: int
    speaker: str
    text: str
    words: frozenset[str]
    facts: float
    answer: bool = False


class ExtractiveSummarizer:
    """Picks fact-bearing, central, diverse sentences, in order, within a token cap. Deterministic.

    Example:
        >>> s = ExtractiveSummarizer()
        >>> s.summarize("Maya: Hi! We decided to ship the webhook system on Friday. Thanks!", max_tokens=20)
        'Maya: We decided to ship the webhook system on Friday.'
    """

    name = "extractive"

    def __init__(
        self,
        counter: TokenCounter | None = None,
        *,
        rarity: Callable[[str], float] | None = None,
        embed: Callable[[Sequence[str]], Any] | None = None,
    ) -> None:
        self.counter = counter or get_counter()
        self.rarity = rarity  # word -> how rare it is in the whole conversation (idf), if known
        # texts -> unit vectors (the dense model, when installed): "says the same" beyond shared words
        self.embed = embed

    def summarize(self, text: str, *, max_tokens: int, focus: str | None = None) -> str:
        """Summarise ``text`` within ``max_tokens`` (``focus`` words count double)."""
        if max_tokens < 1:
            return ""
        sentences = _sentences(text)
        if not sentences:
            return ""
        freq = Counter(w for s in sentences for w in s.words)
        focus_words = set(content_words(focus or ""))
        # Each word's part of a sentence's centrality and rarity, worked out once per word.
        shared = {w: math.log1p(n - 1) * (2 if w in focus_words else 1) for w, n in freq.items()}
        central = {s.index: sum(shared[w] for w in s.words) / math.sqrt(len(s.words) + 2) for s in sentences}
        top = max(central.values()) or 1.0
        rarities = self._rarities(freq)
        rare = {s.index: self._informative(s.words, rarities) for s in sentences}
        most = max(rare.values()) or 1.0
        base = {}
        for s in sentences:
            value = 0.2 + 2.0 * central[s.index] / top + W_RARE * rare[s.index] / most + s.facts
            value += 0.75 if s.answer else 0.0
            # A question says what was asked, not what is known: its answer is the better pick.
            base[s.index] = max(0.05, value * (0.3 if s.text.endswith("?") else 1.0))
        chosen = self._choose(sentences, base, max_tokens)
        if not chosen:  # the best sentence alone is too long: cut it at a word
            best = max(sentences, key=lambda s: (base[s.index], -s.index))
            cut = self._cut(_label(best, None) + best.text, max_tokens)
            return check_summary(cut, max_tokens, self.counter) if cut else ""
        summary = _render(sorted(chosen, key=lambda s: s.index))
        while self.counter.count(summary) > max_tokens and len(chosen) > 1:  # labels merged differently
            chosen.remove(min(chosen, key=lambda s: (base[s.index], -s.index)))
            summary = _render(sorted(chosen, key=lambda s: s.index))
        return check_summary(summary, max_tokens, self.counter)

    def _informative(self, words: frozenset[str], rarities: Mapping[str, float] | None = None) -> float:
        """How much of what the sentence says is rare in the conversation (0 without a rarity).

        ``rarities``: each word's (:meth:`_rarities`), if already known.
        """
        if self.rarity is None or not words:
            return 0.0
        known = rarities if rarities is not None else self._rarities(words)
        return sum(known[w] for w in words) / math.sqrt(len(words) + 2)

    def _rarities(self, words: Iterable[str]) -> dict[str, float]:
        """How rare each word is, in the conversation (capped) and in English (empty without a rarity)."""
        rarity = self.rarity
        if rarity is None:
            return {}
        return {w: min(3.0, rarity(w)) * english_rarity(w, self.counter) for w in words}

    def _choose(self, sentences: list[_Sentence], base: dict[int, float], max_tokens: int) -> list[_Sentence]:
        """Greedy maximal marginal relevance: best value per token, less for repeated words.

        Each round takes the best sentence that still fits and does not repeat a chosen one (the
        first in order on a tie); a sentence that no longer fits, or repeats, never will again (the
        tokens used and the words seen only grow), so it leaves the candidates at once. Candidates
        are tried best-possible value first (repeating nothing), so a round stops at the first that
        could not beat the best found; the words a candidate shares with those chosen are counted
        as they are added, not intersected again every round.
        """
        chosen: list[_Sentence] = []
        seen: set[str] = set()
        used = 0
        costs = {s.index: self.counter.count(_close(s.text)) + 1 for s in sentences}
        roots = {i: math.sqrt(cost) for i, cost in costs.items()}
        bounds = {i: base[i] / root for i, root in roots.items()}  # the value when nothing repeats
        shared = {s.index: 0 for s in sentences}  # words shared with the sentences chosen
        similar = self._similarities(sentences)
        closest = {s.index: 0.0 for s in sentences}  # cosine to the nearest sentence chosen
        left = sorted(sentences, key=lambda s: -bounds[s.index])
        while left:
            best: tuple[float, int, int] | None = None  # (value, sentence, where in ``still``)
            still: list[_Sentence] = []
            for n, s in enumerate(left):
                i = s.index
                if best is not None and bounds[i] < best[0]:
                    still += left[n:]  # none of these can reach the best any more
                    break
                repeated = max(shared[i] / len(s.words), closest[i])
                if repeated >= 0.9 or used + costs[i] > max_tokens:
                    continue  # says again what a chosen sentence says, or too long now: never
                value = base[i] * (1.0 - 0.7 * repeated) / roots[i]
                if best is None or value > best[0] or (value == best[0] and i < best[1]):
                    best = (value, i, len(still))
                still.append(s)
            if best is None:
                break
            pick = still.pop(best[2])
            left = still
            chosen.append(pick)
            new = pick.words - seen
            seen |= new
            used += costs[pick.index]
            if new:
                for s in left:
                    shared[s.index] += len(s.words & new)
            if similar is not None:  # 0 below a cosine of 0.3 (unrelated), 1 at 1.0 (the same)
                for s in left:
                    near = max(0.0, (float(similar[s.index][pick.index]) - 0.3) / 0.7)
                    closest[s.index] = max(closest[s.index], near)
        return chosen

    def _similarities(self, sentences: list[_Sentence]) -> Any:
        """Cosine similarities between the sentences (``None`` without the dense model)."""
        if self.embed is None or len(sentences) < 2:
            return None
        try:
            vectors = self.embed([s.text for s in sentences])
            return vectors @ vectors.T
        except Exception as exc:  # the optional model failing must not cost the summary
            log.warning("dense similarity unavailable for a summary (%s); words only", exc)
            return None

    def _cut(self, sentence: str, max_tokens: int) -> str:
        if self.counter.count(_close(sentence)) <= max_tokens:
            return _close(sentence)
        words = sentence.split()
        while words:
            candidate = " ".join(words).rstrip(",;:-") + "…"
            if self.counter.count(candidate) <= max_tokens:
                return candidate
            words.pop()
        return ""


def _sentences(text: str) -> list[_Sentence]:
    """The candidate sentences of ``text`` (filler and logs left out), with speakers and fact scores."""
    out: list[_Sentence] = []
    speaker = ""
    asked_by: str | None = None  # the speaker of the latest question, until someone else answers
    index = 0
    for line in text.splitlines():
        match = _SPEAKER.match(line)
        if match and not _CODE.fullmatch(match.group(1)):
            speaker, body = match.group(1), match.group(2)
        else:
            body = line
        answering = asked_by is not None and asked_by != speaker
        for raw in split_sentences(body):
            sentence, material, question, words, facts = _candidate(raw)
            if not material:
                if question:
                    asked_by = speaker
                continue
            if question:
                asked_by, answering = speaker, False
            if words:
                out.append(_Sentence(index, speaker, sentence, words, facts, answering))
                index += 1
        if answering:
            asked_by = None
    return out


@lru_cache(maxsize=8192)
def _candidate(raw: str) -> tuple[str, bool, bool, frozenset[str], float]:
    """What one sentence offers a summary: its text, whether it is material, a question, words, facts.

    It depends on the sentence alone, so it is made once however often the sentence is read.
    """
    sentence = _OPENER.sub("", _BULLET.sub("", _MARKUP.sub("", raw)).strip())
    sentence = sentence[:1].upper() + sentence[1:]
    question = raw.rstrip().endswith("?")
    intro = sentence.endswith(":")  # "Checking the plan:" leads into a tool call or a list
    if not sentence or intro or is_log_line(raw) or is_filler(sentence):
        return sentence, False, question, frozenset(), 0.0
    words = frozenset(content_words(sentence))
    return sentence, True, question, words, _facts(sentence) if words else 0.0


def _facts(sentence: str) -> float:
    """What the sentence carries besides words: numbers, dates, names, code, decisions, events."""
    when, cues = _time_and_cue_words(sentence)
    code = len(_CODE.findall(sentence)) if "/" in sentence or _CODE_FILE.search(sentence) else 0
    score = 0.6 * min(2, len(_NUMBER.findall(sentence)))
    score += 0.6 * min(2, when)
    score += 0.5 * min(3, len(_NAME.findall(sentence)))
    score += 0.8 * min(2, code)
    score += 0.8 * min(2, cues)
    score += 1.6 * (_EVENT.search(sentence) is not None)  # what happened is what is asked about
    return score


def _time_and_cue_words(sentence: str) -> tuple[int, int]:
    r"""How many words of :data:`_WHEN` and of :data:`_CUES` the sentence has.

    Each of those patterns matches whole words (a run of word characters, ``\b`` on both sides), so
    in plain ASCII they are counted by looking the words up; elsewhere (case rules beyond ASCII) and
    for "won't" (across an apostrophe) the patterns themselves count.
    """
    if not sentence.isascii():
        return len(_WHEN.findall(sentence)), len(_CUES.findall(sentence))
    lowered = sentence.lower()
    words = _RUN.findall(lowered)
    when = sum(map(_WHEN_WORDS.__contains__, words))
    if "won't" in lowered:
        return when, len(_CUES.findall(sentence))
    return when, sum(1 for w in words if w in _CUE_WORDS or w.startswith(_CUE_STEMS))


def _label(s: _Sentence, previous: _Sentence | None) -> str:
    if not s.speaker or (previous is not None and previous.speaker == s.speaker):
        return ""
    return f"{s.speaker}: "


def _render(chosen: list[_Sentence]) -> str:
    parts = []
    previous = None
    for s in chosen:
        parts.append(_label(s, previous) + _close(s.text))
        previous = s
    return " ".join(parts)


def _close(sentence: str) -> str:
    sentence = sentence.strip()
    return sentence if sentence[-1:] in ".!?。！？…\"')]" else sentence + "."
