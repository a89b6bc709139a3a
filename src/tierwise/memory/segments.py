"""Segments: stretches of conversation about one thing, each kept as a trio.

A new segment starts at a gap in time, an explicit boundary, a change of topic (a user turn that
shares almost no words with the recent turns), or when the open segment reaches its size cap.
Segments are append-only, so their ids (``S1``, ``S2``, …) are stable.

Each segment is stored three ways (seed 003's trio): a **header** (≤ 12 tokens: when, topic, key
entities, outcome), a **summary** (≤ 120 tokens: decisions, changes, open questions) and its **full
text** (every turn, verbatim). Caps are checked when the trio is made, before anything is sent.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from tierwise.collector import breathe
from tierwise.memory import code
from tierwise.memory.keyphrases import Vocabulary, key_phrases
from tierwise.memory.narrative import day_label
from tierwise.memory.scrub import Scrubber
from tierwise.memory.turns import Turn, render_turn
from tierwise.packing.layers import TRUNCATION_MARKER, truncate_text
from tierwise.summarize.base import Summarizer, SummaryRejected, check_summary
from tierwise.summarize.dates import CALENDAR_ABBREVIATIONS, CALENDAR_WORDS, anchor_dates
from tierwise.summarize.extractive import ExtractiveSummarizer, content_words, is_filler, is_log_line
from tierwise.summarize.sentences import split_sentences
from tierwise.tokens import TokenCounter

__all__ = ["Segment", "SegmentPolicy", "Segmenter", "make_trio", "source_text"]

HEADER_TOKENS = 12
SUMMARY_TOKENS = 120
_FOLLOW_UP = re.compile(r"^\s*(and|also|but|so|then|what about|how about|it|that|this|they|those|ok)\b", re.I)
_NAMED = r"\b(?:[A-Z][a-z]+(?:\s[A-Z][a-z]+)?|[a-z]+_[a-z0-9_]+|[A-Z]{2,}\d*\+?)\b"
_ENTITY = re.compile(_NAMED + r"|[\w.-]*\w(?:/[\w.-]*\w)+|\bv\d+(?:\.\d+)+")
_ENTITY_NAME = re.compile(_NAMED)  # the same matches where no path ("/") or version ("v2") can be
_VERSION_START = re.compile(r"\bv\d")
_CALENDAR = CALENDAR_WORDS | CALENDAR_ABBREVIATIONS
_NOT_ENTITY = frozenset(
    {
        "I",
        "I'm",
        "The",
        "This",
        "That",
        "What",
        "When",
        "Where",
        "How",
        "Why",
        "Yes",
        "No",
        "Ok",
        "Okay",
        "Hey",
        "Hi",
        "Hello",
        "Thanks",
        "Thank",
        "And",
        "But",
        "So",
        "It",
        "We",
        "You",
        "My",
        "Oh",
        "Wow",
        "Let",
        "Sure",
        "Great",
        "Also",
        "Just",
        "Do",
        "Did",
        "Is",
        "Are",
        "Can",
        "Will",
        "Not",
        "Me",
        "If",
        "OK",
        "Here",
        "There",
        "Yeah",
        "Yep",
        "Nope",
        "Please",
        "Agreed",
        "Congrats",
        "Everyone",
        "Absolutely",
    }
)
_DONE = re.compile(r"\b(done|finished|completed|scheduled|created|booked|sent|fixed|decided|agreed)\b", re.I)
_RESULT = re.compile(
    r"\b(fixed|resolved|shipped|released|merged|deployed|decided|agreed|booked|scheduled|finished|"
    r"completed|cancell?ed|postponed|approved|rejected|signed|adopted)\b",
    re.I,
)
_ERROR = re.compile(r"\b(error|failed|failure|couldn't|could not|broken)\b", re.I)


@dataclass(frozen=True)
class SegmentPolicy:
    """When a new segment starts.

    Args:
        gap: a pause at least this long between two turns starts a new segment.
        max_tokens: the open segment closes when its full text reaches this many tokens.
        max_turns: ... or this many turns.
        topic_overlap: a user turn sharing less than this share of its words with the recent turns
            starts a new topic (0 disables topic boundaries).
        min_turns: no topic boundary before the open segment has this many turns.
    """

    gap: timedelta = timedelta(minutes=30)
    max_tokens: int = 1_500
    max_turns: int = 40
    topic_overlap: float = 0.12
    min_turns: int = 6


@dataclass
class Segment:
    """One segment: its turns (``first``…``last`` inclusive) and its trio once made."""

    id: str
    seq: int
    first: int
    last: int
    started_at: datetime | None
    ended_at: datetime | None
    boundary: str
    tokens: int = 0
    closed: bool = False
    header: str = ""
    summary: str = ""
    topic: str = ""
    entities: tuple[str, ...] = ()
    outcome: str = "ongoing"
    words: Counter[str] = field(default_factory=Counter, repr=False)
    # What the header was made from (last turn, vocabulary, segment before, counter, scrubber).
    made_from: tuple[Any, ...] | None = field(default=None, repr=False, compare=False)

    @property
    def size(self) -> int:
        """Number of turns."""
        return self.last - self.first + 1


class Segmenter:
    """Assigns turns to segments as they arrive (append-only)."""

    def __init__(self, policy: SegmentPolicy | None = None) -> None:
        self.policy = policy or SegmentPolicy()
        self.segments: list[Segment] = []
        self.vocabulary = Vocabulary()  # document frequency of words over segments (for headers)
        self._recent: list[set[str]] = []  # content words of the open segment's latest turns

    def add(self, turn: Turn, tokens: int, *, boundary: bool = False) -> tuple[Segment, Segment | None]:
        """Place ``turn``; returns its segment and the segment it closed, if any."""
        # First-occurrence order, not a set's: the segment's word counts keep this insertion order,
        # and ``most_common`` breaks ties by it, so a set here would make headers (and pack
        # checksums) depend on PYTHONHASHSEED.
        analysis = turn.analysis
        ordered = (
            analysis.words
            if analysis is not None
            else tuple(dict.fromkeys(content_words(turn.text + " " + turn.extra)))
        )
        words = set(ordered)
        current = self.segments[-1] if self.segments else None
        reason = "start" if current is None else self._boundary(current, turn, tokens, words, boundary)
        closed = None
        if current is None or reason is not None:
            if current is not None:
                current.closed = True
                closed = current
            current = Segment(
                id=f"S{len(self.segments) + 1}",
                seq=len(self.segments) + 1,
                first=turn.index,
                last=turn.index,
                started_at=turn.at,
                ended_at=turn.at,
                boundary=reason or "start",
            )
            self.segments.append(current)
            self.vocabulary.documents += 1
            self._recent = []
        current.last = turn.index
        current.ended_at = turn.at or current.ended_at
        current.tokens += tokens
        self.vocabulary.add_all(ordered, current.seq)
        current.words.update(ordered)
        self._recent = [*self._recent[-5:], words]
        return current, closed

    def _boundary(
        self, current: Segment, turn: Turn, tokens: int, words: set[str], explicit: bool
    ) -> str | None:
        policy = self.policy
        if explicit:
            return "explicit"
        if turn.at is not None and current.ended_at is not None and turn.at - current.ended_at >= policy.gap:
            return "gap"
        if current.tokens + tokens > policy.max_tokens or current.size >= policy.max_turns:
            return "size"
        if (
            policy.topic_overlap > 0
            and turn.role == "user"
            and current.size >= policy.min_turns
            and len(words) >= 4
            and not _FOLLOW_UP.match(turn.text)
        ):
            seen = set().union(*self._recent) if self._recent else set()
            if len(words & seen) / len(words) < policy.topic_overlap:
                return "topic"
        return None


def make_trio(
    segment: Segment,
    turns: Sequence[Turn],
    counter: TokenCounter,
    summarizer: Summarizer | None = None,
    scrubber: Scrubber | None = None,
    *,
    summarize: bool = True,
    vocabulary: Vocabulary | None = None,
    previous: Segment | None = None,
    embedder: Any = None,
    scrub_input: bool = True,
) -> None:
    """Fill the segment's header, summary, topic, entities and outcome from its ``turns``.

    The summary goes through ``summarizer`` (extractive by default) and the scrubber; a summary that
    fails its checks is replaced by the extractive one, never stored broken. ``summarize=False``
    refreshes only the header (the open segment, which is still growing). ``vocabulary`` (the
    conversation's document frequencies) makes the header say what is distinctive about the segment;
    ``previous`` (the segment before) tells whether its day needs saying again; ``embedder`` (the
    dense model, when installed) keeps the extractive summary from saying one thing twice. A header
    made before from the same turns, against the same vocabulary, segment before, counter and
    scrubber is kept as it is (it would come out the same): a segment shown with its header first
    and summarised later gets its header once. ``scrub_input``: a ``summarizer`` (a model) is sent
    the turns scrubbed (``MemoryPolicy.scrub_resent``, README "Privacy"), not as they were said.
    """
    actions = code.actions_of(t.message for t in turns if t.message is not None)
    if actions:  # a coding agent's steps: what it did, to which files, with what outcome (memory/code.py)
        _code_trio(segment, actions, counter, scrubber, summarize)
        return
    made_from = (segment.last, vocabulary, previous, counter, scrubber)
    if segment.header and _same(segment.made_from, made_from):
        words = vocabulary.upto(segment.seq) if vocabulary is not None else _own_vocabulary(segment)
    else:
        words = _make_header(segment, turns, counter, scrubber, vocabulary, previous)
        segment.made_from = made_from
    if not summarize:
        return
    breathe()  # a long backlog's upkeep (~3 ms a header, ~4 a summary): the event loop gets the lock
    text = source_text(turns)
    if summarizer is not None and scrubber is not None and scrub_input:
        text = scrubber.scrub_text(text)  # what a summary model is sent (the extractive one sends nothing)
    embed = embedder.embed if embedder is not None else None
    extractive = ExtractiveSummarizer(counter, rarity=words.idf, embed=embed)
    summary = ""
    # A summary is often read without its header (recall, the summaries layer): it says its day.
    dated = f"{day_label(segment.started_at)}: " if segment.started_at is not None else ""
    cap = SUMMARY_TOKENS - counter.count(dated)
    if text:
        focus = "decisions, changes, open questions"
        try:
            summary = (summarizer or extractive).summarize(text, max_tokens=cap, focus=focus)
            if scrubber is not None:
                summary = scrubber.scrub_text(summary)
            summary = check_summary(summary, cap, counter)
        except SummaryRejected:
            summary = extractive.summarize(text, max_tokens=cap, focus=focus)
            summary = scrubber.scrub_text(summary) if scrubber is not None else summary
    segment.summary = dated + summary if summary else ""


def _code_trio(
    segment: Segment,
    actions: Sequence[code.Action],
    counter: TokenCounter,
    scrubber: Scrubber | None,
    summarize: bool,
) -> None:
    """A segment of an agent's steps: the header and summary say its files, commands and outcomes."""
    scrub = scrubber.scrub_text if scrubber is not None else (lambda text: text)
    header = scrub(code.header(actions))
    for cut in (header, header.split(";")[0], header.split(" · ")[0]):  # the outcome's detail goes first
        if counter.count(cut) <= HEADER_TOKENS:
            header = cut
            break
    else:
        header = truncate_text(header, HEADER_TOKENS, counter, min_tokens=1, force=True) or header[:40]
    segment.header = header.replace(TRUNCATION_MARKER, "…")
    segment.topic = segment.header
    segment.entities = tuple(dict.fromkeys(p for a in actions for p in a.paths))[:10]
    segment.outcome = actions[-1].outcome[:80]
    if not summarize:
        return
    dated = f"{day_label(segment.started_at)}: " if segment.started_at is not None else ""
    cap = SUMMARY_TOKENS - counter.count(dated)
    summary = scrub(code.summary(actions))
    if counter.count(summary) > cap:
        summary = (truncate_text(summary, cap, counter, min_tokens=1, force=True) or "").replace(
            TRUNCATION_MARKER, " …"
        )
    segment.summary = dated + summary


def _make_header(
    segment: Segment,
    turns: Sequence[Turn],
    counter: TokenCounter,
    scrubber: Scrubber | None,
    vocabulary: Vocabulary | None,
    previous: Segment | None,
) -> Vocabulary:
    """The header, topic, entities and outcome of :func:`make_trio`; the vocabulary they were made as of."""
    split = [split_sentences(spoken(t.text)) if t.role != "tool" else [] for t in turns]  # read thrice
    said = [s for parts in split for s in parts]
    sentences = [s for s in said if not is_filler(s) and not is_log_line(s)]
    if any(t.role == "assistant" for t in turns):  # in a chat, the user names the task: count it twice
        asked = [
            s
            for t, parts in zip(turns, split, strict=True)
            if t.role == "user"
            for s in (parts if "→ " not in t.text else split_sentences(t.text))
        ]
        sentences += [s for s in asked if not is_filler(s) and not is_log_line(s)]
    speakers = {w.lower() for t in turns for w in (t.speaker or "").split()}
    words = vocabulary.upto(segment.seq) if vocabulary is not None else _own_vocabulary(segment)
    phrases = key_phrases(sentences, words, exclude=speakers, counter=counter, limit=6)
    if not phrases:  # nothing but greetings and thanks: say so, in their own words
        phrases = key_phrases(said, words, exclude=speakers, counter=counter, limit=2) or ["small talk"]
    segment.topic = ", ".join(phrases[:2])
    segment.entities = _entities(turns, speakers, split)
    segment.outcome = _outcome(turns)
    when = _when(segment.started_at, previous.started_at if previous is not None else None)
    segment.header = _header(when, phrases, _result(turns, split), counter, scrubber)
    return words


def _same(made_from: tuple[Any, ...] | None, now: tuple[Any, ...]) -> bool:
    """Whether a header was made from the segment's turns up to the same one, in the same context."""
    if made_from is None or made_from[0] != now[0]:
        return False
    return all(a is b for a, b in zip(made_from[1:], now[1:], strict=True))


def spoken(text: str) -> str:
    """A turn's text without the tool calls rendered into it (``→ name({...})`` lines)."""
    if "→ " not in text:
        return text
    return "\n".join(line for line in text.splitlines() if not line.startswith("→ "))


def source_text(turns: Sequence[Turn]) -> str:
    """What a segment's summary is made from: ``Speaker: text`` lines, relative dates anchored.

    Tool results and calls are left out (their digests are in memory; the assistant's answer says
    what they meant); "yesterday" becomes "yesterday (7 May 2023)" when the turn's time is known.
    """
    lines = []
    for t in turns:
        if t.role == "tool" or not t.text.strip():
            continue
        text = anchor_dates(spoken(t.text), t.at).strip()
        if text:  # the turn's further lines indented: "Decision: …" in a turn is not a speaker
            who = t.speaker or t.role.capitalize()
            lines.append(f"{who}: " + "\n\t".join(text.splitlines()))
    return "\n".join(lines)


def full_text(turns: Sequence[Turn]) -> str:
    """A segment's full text: every turn rendered, verbatim."""
    return "\n".join(render_turn(t) for t in turns)


def _own_vocabulary(segment: Segment) -> Vocabulary:
    return Vocabulary({w: [1] for w in segment.words}, 1)


def _entities(
    turns: Sequence[Turn], speakers: set[str], split: Sequence[Sequence[str]] | None = None
) -> tuple[str, ...]:
    """Names, files and versions the segment mentions, most mentioned first (speakers left out).

    A capitalised word counts as a name only inside a sentence, never as its first word. ``split``:
    each turn's sentences, if already made.
    """
    counts: Counter[str] = Counter()
    for n, t in enumerate(turns):
        if t.role == "tool":
            continue
        for sentence in split_sentences(spoken(t.text)) if split is None else split[n]:
            whole = "/" in sentence or _VERSION_START.search(sentence)
            for match in (_ENTITY if whole else _ENTITY_NAME).finditer(sentence):
                word = match.group(0)
                initial = match.start() == len(sentence) - len(sentence.lstrip())
                if initial or word.split()[0] in _NOT_ENTITY or word.lower() in speakers:
                    continue
                first = word.split()[0].lower()
                if first in _CALENDAR or (word.isupper() and len(word) <= 3):
                    continue  # months and days; short acronyms (API, CI, MB) say little
                if any(name.startswith(first) for name in speakers):
                    continue  # a speaker's nickname ("Mel" for Melanie)
                counts[word] += 1
    return tuple(w for w, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:3])


def _outcome(turns: Sequence[Turn]) -> str:
    tail = " ".join(t.text for t in turns[-2:])
    if _ERROR.search(tail):
        return "error"
    if turns and turns[-1].text.rstrip().endswith("?"):
        return "open"
    return "done" if _DONE.search(tail) else "ongoing"


def _result(turns: Sequence[Turn], split: Sequence[Sequence[str]] | None = None) -> str:
    """The segment's outcome in one word, when its last turns state one ("fixed", "decided")."""
    for n in range(len(turns) - 1, max(-1, len(turns) - 4), -1):
        t = turns[n]
        if t.role == "tool":
            continue
        for sentence in reversed(split_sentences(spoken(t.text)) if split is None else split[n]):
            if sentence.rstrip().endswith("?"):
                continue
            found = _RESULT.findall(sentence)
            if found:
                return str(found[-1]).lower()
    return ""


def _when(start: datetime | None, before: datetime | None) -> str:
    """The day a header names: none if the segment before began the same day, no year if the same year.

    Headers are read in order (a diary's dates), so a day is said once; the 12 tokens go to topics.
    """
    if start is None:
        return ""
    if before is not None and before.date() == start.date():
        return ""
    if before is not None and before.year == start.year:
        return f"{start.day} {start.strftime('%b')}"
    return day_label(start)


def _header(
    when: str, phrases: Sequence[str], result: str, counter: TokenCounter, scrubber: Scrubber | None
) -> str:
    """``8 May 2023 · LGBTQ support group, adoption · decided``: as many key phrases as fit the cap.

    The day (when it changed since the segment before) and the first phrase come first; then the
    outcome when there is one; then more phrases while they fit.
    """
    clean = scrubber.scrub_text if scrubber is not None else (lambda text: text)

    def render(chosen: Sequence[str], outcome: str) -> str:
        return clean(" · ".join(p for p in (when, ", ".join(chosen), outcome) if p))

    best = render([], "")
    for outcome in (result, "") if result else ("",):
        chosen: list[str] = []
        for phrase in phrases:
            if counter.count(render([*chosen, phrase], outcome)) <= HEADER_TOKENS:
                chosen.append(phrase)
        if chosen:
            return render(chosen, outcome)
    return best if counter.count(best) <= HEADER_TOKENS else ""
