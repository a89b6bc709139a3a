"""The LLM-backed summarizer: any provider, its own model, max_tokens and input budget, guarded.

The provider is anything with a ``complete(messages, *, model, max_tokens) -> str`` method
(:class:`Completion`); :class:`~tierwise.providers.SyncCompletion` makes one of any provider, and
its ``respond`` (the whole answer) is used when present, so a model's ``finish_reason`` and usage
are seen too.

Every answer is checked before it is used: **empty**, **truncated** (the model stopped at its
``max_tokens`` — ``finish_reason`` ``"length"`` — or the text stops mid-sentence), **over the cap**
and **unfaithful** (a number, date, name, path or URL that is not in what was sent:
:func:`~tierwise.summarize.base.check_faithful`). A summary that fails, or a provider that fails, is
logged at WARNING with the model and the reason (kept in :attr:`LLMSummarizer.rejections`) and
replaced by the extractive summary, so a summary is never lost to a flaky model.

**Input budget.** Text over ``input_tokens`` is cut in the middle before it is sent: whole turns
(a line opening ``Speaker: ``, with the lines after it) are kept from the start (up to a third of
the budget: what the stretch is about) and from the end (the rest: where it concluded), and a line
``[… 12 turns (3,400 tokens) left out here …]`` marks the cut. A single turn too long for its share
is cut at a sentence or word. Faithfulness is checked against what was sent.

**Narrative.** :meth:`LLMSummarizer.merge_narrative` merges what is new into the narrative so far
(incremental, never rewritten from scratch: a merge that keeps under a third of the previous
narrative's words is rejected too); it raises :class:`SummaryRejected` instead of falling back, so
the caller keeps its own merge.

**Off the request path.** With ``background_only=True`` (what the chat engine and the
OpenAI-compatible endpoint use), the model is asked only inside :func:`off_request_path` — the
memory upkeep that runs after an answer, or while the upstream answers. Anywhere else (a pack that
compacts, a ``recall_segments`` call) a summary is the extractive one, at once, unless the model's
summary of that same text is ready (such a summarizer remembers its latest answers by text, so
upkeep finds a summary :func:`off_request_path` code made ahead of it); a merge raises
:class:`OnRequestPath`.
"""

from __future__ import annotations

import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Protocol

from bm25s.stopwords import STOPWORDS_EN_PLUS

from tierwise.packing.layers import truncate_text
from tierwise.summarize.base import SummaryRejected, check_faithful, check_summary
from tierwise.summarize.extractive import ExtractiveSummarizer
from tierwise.tokens import TokenCounter, get_counter

__all__ = [
    "Completion",
    "LLMSummarizer",
    "OnRequestPath",
    "counting_usage",
    "fit_input",
    "is_off_request_path",
    "off_request_path",
]

log = logging.getLogger(__name__)

PROMPT = (
    "Summarise the conversation excerpt below in at most {words} words. Keep decisions, changes, "
    "open questions, dates and names{focus}. Use only what the excerpt says: no number, date, name, "
    "file or link that is not in it. Write plain sentences, no preamble, and end with a full stop."
)
MERGE_PROMPT = (
    "You keep the running narrative of a conversation. Merge what is new into the narrative so "
    "far: keep everything in it that still holds, change what the new part changes, add its "
    "decisions and facts; do not start over. Use only what the two parts say: no number, date, "
    "name, file or link that is not in them. At most {words} words, plain sentences, no preamble, "
    "end with a full stop."
)
MAX_REJECTIONS = 20
"""How many rejection reasons :attr:`LLMSummarizer.rejections` keeps (the latest)."""
_MEMO_SIZE = 256
_KEEP_SHARE = 1 / 3  # of the previous narrative's words a merge must keep
_TURN = re.compile(r"[^\s:][^:\n]{0,60}: ")
_WORDS = re.compile(r"[a-z][a-z'\-]{3,}")
_STOP = frozenset(STOPWORDS_EN_PLUS)
_KEPT = "the narrative is merged without the model"

_where = threading.local()


@contextmanager
def off_request_path() -> Iterator[None]:
    """Code inside runs off every request's path (in this thread): summarizers may ask their model."""
    previous = getattr(_where, "off", False)
    _where.off = True
    try:
        yield
    finally:
        _where.off = previous


@contextmanager
def counting_usage() -> Iterator[list[int]]:
    """``[prompt_tokens, completion_tokens]`` the summarizers' model calls in this thread use inside.

    A summarizer serving every chat counts the process's calls; this counts one caller's (a chat's
    upkeep), so its spend goes to that chat.
    """
    previous = getattr(_where, "spent", None)
    _where.spent = spent = [0, 0]
    try:
        yield spent
    finally:
        _where.spent = previous


def is_off_request_path() -> bool:
    """Whether this thread is inside :func:`off_request_path`."""
    return bool(getattr(_where, "off", False))


class OnRequestPath(SummaryRejected):
    """A ``background_only`` summarizer was asked to merge on a request's path: nothing was asked."""


class Completion(Protocol):
    """What the LLM summarizer needs from a provider."""

    def complete(self, messages: Sequence[Mapping[str, Any]], *, model: str, max_tokens: int) -> str:
        """Return the model's text answer to ``messages``."""
        ...


def fit_input(text: str, budget: int, counter: TokenCounter) -> str:
    r"""``text`` within ``budget`` tokens: whole turns from its start and end, the cut marked.

    Example:
        >>> from tierwise.tokens import get_counter
        >>> turns = "\n".join(f"U{i}: message number {i} of the chat." for i in range(40))
        >>> cut = fit_input(turns, 120, get_counter())
        >>> cut.splitlines()[0], cut.splitlines()[-1]
        ('U0: message number 0 of the chat.', 'U39: message number 39 of the chat.')
        >>> [line for line in cut.splitlines() if line.startswith("[")]
        ['[… 32 turns (384 tokens) left out here …]']
    """
    if budget < 1 or counter.count(text) <= budget:
        return text
    units = _turns(text)
    costs = [counter.count(unit) + 1 for unit in units]  # +1: the newline
    marker_room = 16
    head_room = max(1, (budget - marker_room) // 3)
    head: list[str] = []
    used = 0
    for unit, cost in zip(units, costs, strict=True):
        if used + cost > head_room:
            break
        head.append(unit)
        used += cost
    if not head:  # the first turn alone is too long for its share: its start
        head = [truncate_text(units[0], head_room, counter, min_tokens=1, force=True) or ""]
        used = counter.count(head[0]) + 1
        units, costs = units[1:], costs[1:]
    else:
        units, costs = units[len(head) :], costs[len(head) :]
    tail: list[str] = []
    tail_room = budget - marker_room - used
    for unit, cost in zip(reversed(units), reversed(costs), strict=True):
        if cost > tail_room:
            break
        tail.insert(0, unit)
        tail_room -= cost
    left = units[: len(units) - len(tail)]
    if not tail and left and tail_room > 0:  # the last turn alone is too long: its start
        tail = [truncate_text(left[-1], tail_room, counter, min_tokens=1, force=True) or ""]
        left = left[:-1]
    if not left:
        return "\n".join(u for u in (*head, *tail) if u)
    dropped = sum(costs[: len(left)])
    noun = "turn" if len(left) == 1 else "turns"
    marker = f"[… {len(left)} {noun} ({dropped:,} tokens) left out here …]"
    return "\n".join(u for u in (*head, marker, *tail) if u)


def _turns(text: str) -> list[str]:
    """``text`` as turns: a line opening ``Speaker: `` starts one; the lines after it belong to it."""
    units: list[str] = []
    for line in text.split("\n"):
        if units and not _TURN.match(line):
            units[-1] += "\n" + line
        else:
            units.append(line)
    return units


class LLMSummarizer:
    """Summarises with a model; falls back to the extractive summarizer when the answer fails checks.

    Args:
        provider: anything with ``complete(messages, model=..., max_tokens=...)`` (and, ideally,
            ``respond``: :class:`~tierwise.providers.SyncCompletion`).
        model: the model name to ask (may differ from the chat model: a small one is usually right).
        max_tokens: the model's response limit (separate from each summary's cap; keep it above the
            caps: 120 for a segment's summary, 300 for the narrative).
        input_tokens: the most text sent per request (``None``: no limit); see the module docstring.
        fallback: used when the model fails; defaults to :class:`ExtractiveSummarizer`.
        background_only: ask the model only inside :func:`off_request_path`.

    Attributes:
        calls: requests made to the model.
        fallbacks: summaries that came from the fallback (and merges rejected).
        rejections: the latest reasons (at most :data:`MAX_REJECTIONS`), e.g. ``the summary mentions
            the number "42", which is not in the source``.
        deferred: summaries asked for on a request's path and made extractively (``background_only``).
        prompt_tokens, completion_tokens: what the model reported using (when it reports usage).
    """

    name = "llm"

    def __init__(
        self,
        provider: Completion,
        *,
        model: str,
        max_tokens: int = 400,
        input_tokens: int | None = None,
        counter: TokenCounter | None = None,
        fallback: ExtractiveSummarizer | None = None,
        background_only: bool = False,
    ) -> None:
        self.provider = provider
        self.model = model
        self.max_tokens = max_tokens
        self.input_tokens = input_tokens
        self.counter = counter or get_counter()
        self.fallback = fallback or ExtractiveSummarizer(self.counter)
        self.background_only = background_only
        self.calls = 0
        self.fallbacks = 0
        self.deferred = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.rejections: list[str] = []
        self._made: OrderedDict[tuple[str, int, str | None], str] = OrderedDict()
        self._asking: set[tuple[str, int, str | None]] = set()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        limits = f"max_tokens={self.max_tokens}, input_tokens={self.input_tokens}"
        return f"LLMSummarizer(model={self.model!r}, {limits})"

    @property
    def asking(self) -> int:
        """How many summaries are being asked of the model right now (in any thread)."""
        with self._lock:
            return len(self._asking)

    def has_summary(self, text: str, *, max_tokens: int, focus: str | None = None) -> bool:
        """Whether a ``background_only`` summarizer holds the summary of ``text`` (returned at once)."""
        with self._lock:
            return (text, max_tokens, focus) in self._made

    # -- summaries -------------------------------------------------------------------------------

    def summarize(self, text: str, *, max_tokens: int, focus: str | None = None) -> str:
        """Summarise ``text`` within ``max_tokens`` tokens, or fall back and log why."""
        key = (text, max_tokens, focus)
        with self._lock:
            made = self._made.get(key)
            if made is not None:
                self._made.move_to_end(key)
                return made
            asking = key in self._asking
        if self.background_only and not is_off_request_path():
            with self._lock:
                self.deferred += 1
            log.debug(
                "summary by %s wanted on a request's path%s; using the extractive summary",
                self.model,
                " before the model's was ready" if asking else "",
            )
            return self.fallback.summarize(text, max_tokens=max_tokens, focus=focus)
        with self._lock:
            self._asking.add(key)
        try:
            summary = self._summarize(text, max_tokens, focus)
            if self.background_only:  # for the request path's own ask, soon (see the module docstring)
                with self._lock:
                    self._made[key] = summary
                    while len(self._made) > _MEMO_SIZE:
                        self._made.popitem(last=False)
        finally:
            with self._lock:
                self._asking.discard(key)
        return summary

    def _summarize(self, text: str, max_tokens: int, focus: str | None) -> str:
        sent = fit_input(text, self.input_tokens, self.counter) if self.input_tokens else text
        words = max(5, int(max_tokens * 0.7))
        messages = [
            {
                "role": "system",
                "content": PROMPT.format(words=words, focus=f"; focus on {focus}" if focus else ""),
            },
            {"role": "user", "content": sent},
        ]
        try:
            return self._checked(self._ask(messages), max_tokens, sent)
        except SummaryRejected as exc:
            reason = exc.reason
        except Exception as exc:  # any provider failure: the summary must not be lost
            reason = f"the provider failed: {type(exc).__name__}: {exc}"
        self._rejected("summary", reason)
        return self.fallback.summarize(text, max_tokens=max_tokens, focus=focus)

    # -- the narrative ---------------------------------------------------------------------------

    def merge_narrative(self, previous: str, addition: str, *, max_tokens: int) -> str:
        """The narrative ``previous`` with ``addition`` (new segment summaries, decisions) merged in.

        Returns:
            The merged narrative, at most ``max_tokens`` tokens (``previous`` itself if there is
            nothing to add).

        Raises:
            SummaryRejected: the merge failed a check (the same as a summary's, faithfulness against
                ``previous`` and ``addition``, and it must keep the previous narrative) or the
                provider failed; the reason is logged. The caller keeps its own merge.
            OnRequestPath: (a ``SummaryRejected``; ``background_only``) this is a request's path:
                the model was not asked, nothing is logged above DEBUG.
        """
        if not addition.strip():
            return previous.strip()
        if self.background_only and not is_off_request_path():
            with self._lock:
                self.deferred += 1
            raise OnRequestPath("model merges are made off the request path; merge without the model")
        room = (self.input_tokens or 0) - self.counter.count(previous) - 16
        sent = fit_input(addition, max(room, 1), self.counter) if self.input_tokens else addition
        so_far = previous.strip() or "(nothing yet)"
        messages = [
            {"role": "system", "content": MERGE_PROMPT.format(words=max(5, int(max_tokens * 0.7)))},
            {"role": "user", "content": f"Narrative so far:\n{so_far}\n\nWhat is new:\n{sent}"},
        ]
        try:
            merged = self._checked(self._ask(messages), max_tokens, f"{previous}\n{sent}")
            _keeps(previous, merged)
            return merged
        except SummaryRejected as exc:
            self._rejected("narrative merge", exc.reason, _KEPT)
            raise
        except Exception as exc:
            reason = f"the provider failed: {type(exc).__name__}: {exc}"
            self._rejected("narrative merge", reason, _KEPT)
            raise SummaryRejected(reason) from exc

    # -- shared ------------------------------------------------------------------------------------

    def _ask(self, messages: list[dict[str, str]]) -> tuple[str, str | None]:
        """The model's text and finish reason (``None`` if the provider does not say)."""
        with self._lock:
            self.calls += 1
        respond = getattr(self.provider, "respond", None)
        if respond is None:
            return self.provider.complete(messages, model=self.model, max_tokens=self.max_tokens), None
        response = respond(messages, model=self.model, max_tokens=self.max_tokens)
        usage = getattr(response, "usage", None)
        if usage is not None:
            prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
            completion = int(getattr(usage, "completion_tokens", 0) or 0)
            with self._lock:
                self.prompt_tokens += prompt
                self.completion_tokens += completion
            spent = getattr(_where, "spent", None)
            if spent is not None:  # a caller counts its own (counting_usage)
                spent[0] += prompt
                spent[1] += completion
        return str(getattr(response, "text", "") or ""), getattr(response, "finish_reason", None)

    def _checked(self, answer: tuple[str, str | None], cap: int, source: str) -> str:
        """The answer's text if it passes every check (empty, truncated, over cap, unfaithful)."""
        text, finish = answer
        if not text.strip():
            raise SummaryRejected("the summary is empty")
        if finish == "length":
            raise SummaryRejected(
                f"the summary was cut off: the model stopped at its max_tokens ({self.max_tokens})"
            )
        text = check_summary(text, cap, self.counter)
        check_faithful(text, source)
        return text

    def _rejected(self, what: str, reason: str, instead: str = "using the extractive summary") -> None:
        log.warning("%s by %s rejected (%s); %s", what, self.model, reason, instead)
        with self._lock:
            self.fallbacks += 1
            self.rejections.append(reason)
            del self.rejections[:-MAX_REJECTIONS]


def _keeps(previous: str, merged: str) -> None:
    """Raise if ``merged`` keeps under a third of ``previous``'s content words (rewritten, not merged)."""
    before = {w for w in _WORDS.findall(previous.lower()) if w not in _STOP}
    if len(before) < 8:
        return
    kept = len(before & set(_WORDS.findall(merged.lower()))) / len(before)
    if kept < _KEEP_SHARE:
        raise SummaryRejected(
            f"the merge keeps {kept:.0%} of the previous narrative's words: rewritten, not merged"
        )
