"""Context layers: the candidate blocks a pack is made of, and how text is truncated.

A layer is text (a section of the system message), messages (chat turns, kept or dropped in whole
tool-call groups) or, for kind ``tools``, tool definitions. Every layer has a kind, a priority
(1 is the most important) and two flags: *guaranteed* (always in the pack, or the pack fails with a
:class:`~tierwise.errors.BudgetError`) and *truncatable* (may be cut instead of dropped).

Kinds and their defaults (any other kind is allowed and ranks after these):

===========  ========  ==========  ===========  ===================================================
kind         priority  guaranteed  truncatable  what it holds
===========  ========  ==========  ===========  ===================================================
system       1         yes         no           system prompt (tool usage pattern, guardrails)
tools        1         yes         no           tool definitions (sent as the request's ``tools``)
input        1         yes         no           the newest user message and the turn in progress
task         1         yes         no           an agent loop's task, once working memory moved past it
narrative    2         yes         yes          the always-present story so far (seed 003 layer 0)
profile      3         no          yes          who the user is and how they work
location     4         no          yes          the current project / task / calendar, abbreviated
headers      5         yes         yes          one line per conversation segment
related      6         no          yes          related items, abbreviated
history      7         no          yes          recent turns in full (dropped oldest first)
summaries    8         no          yes          summaries of mid-age segments
retrieved    9         no          yes          old turns or segments retrieved or requested by id
tool_results 10        no          yes          compressed tool results (blob summaries)
===========  ========  ==========  ===========  ===================================================

Where a layer goes in the pack (its **placement**) follows how often it changes, so that a pack
repeats the previous one from the start for as long as possible (providers cache prompt prefixes):

* ``system``: the system layer, first and as given (text: one system message; messages: each as sent);
* ``head``: text that changes rarely (profile, location, related, narrative, headers, summaries
  and kinds of your own), as one system message right after the system layer;
* ``tail``: text chosen for this turn (``retrieved``, ``tool_results``), as one message just before
  the ``input`` layer, after the history.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from tierwise.errors import InputError
from tierwise.tokens import TokenCounter

__all__ = [
    "DEFAULT_PRIORITY",
    "KIND_ORDER",
    "TRUNCATION_MARKER",
    "ContextLayer",
    "LayerForm",
    "Placement",
    "truncate_text",
]

Message = Mapping[str, Any]
LayerForm = Literal["text", "messages", "tools"]
Placement = Literal["system", "head", "tail"]

KIND_ORDER: tuple[str, ...] = (
    "system",
    "tools",
    "profile",
    "location",
    "related",
    "narrative",
    "headers",
    "summaries",
    "retrieved",
    "tool_results",
    "task",
    "history",
    "input",
)

DEFAULT_PRIORITY: dict[str, int] = {
    "system": 1,
    "tools": 1,
    "input": 1,
    "task": 1,
    "narrative": 2,
    "profile": 3,
    "location": 4,
    "headers": 5,
    "related": 6,
    "history": 7,
    "summaries": 8,
    "retrieved": 9,
    "tool_results": 10,
}
_UNKNOWN_PRIORITY = 50
_GUARANTEED = frozenset({"system", "tools", "input", "task", "narrative", "headers"})
_NOT_TRUNCATABLE = frozenset({"system", "tools", "input", "task"})
_TAIL = frozenset({"retrieved", "tool_results"})

_TITLES = {
    "profile": "User profile",
    "location": "Current context",
    "related": "Related items",
    "narrative": "Story so far",
    "headers": "Conversation segments",
    "summaries": "Earlier segments",
    "retrieved": "Retrieved from earlier",
    "tool_results": "Tool results",
}

TRUNCATION_MARKER = "\n[… truncated]"


@dataclass(frozen=True, init=False)
class ContextLayer:
    """One candidate block of context.

    Args:
        id: unique within a pack; appears in the report.
        kind: one of :data:`KIND_ORDER` or any other name.
        content: text, or a sequence of OpenAI-format messages, or (kind ``tools``) tool
            definitions.
        priority: 1 is the most important; defaults by kind.
        guaranteed: always included; defaults by kind.
        truncatable: may be cut (text) or lose its oldest message groups (messages); defaults by kind.
        title: heading of a text layer's section in the system message (defaults by kind).
        summary: a shorter stand-in used when the pruning band asks for summaries.
        placement: where a text layer goes: ``head`` (after the system layer) or ``tail`` (just
            before the input); defaults by kind (see the module docstring).

    Example:
        >>> ContextLayer("profile", "profile", "Works best in the morning.").priority
        3
    """

    id: str
    kind: str
    content: str | tuple[Message, ...]
    priority: int
    guaranteed: bool
    truncatable: bool
    title: str | None
    summary: str | None
    plain: bool  # every item is a plain dict (the packer can pass them on without copying)
    form: LayerForm  # text, messages, or (kind tools with a sequence) tools
    placement: Placement

    def __init__(
        self,
        id: str,
        kind: str,
        content: str | Sequence[Message],
        *,
        priority: int | None = None,
        guaranteed: bool | None = None,
        truncatable: bool | None = None,
        title: str | None = None,
        summary: str | None = None,
        placement: Placement | None = None,
    ) -> None:
        if not id:
            raise InputError("a context layer needs a non-empty id")
        if not kind:
            raise InputError(f"layer {id!r} needs a kind, e.g. 'history' or 'related'")
        if not isinstance(content, str):
            if isinstance(content, Mapping):
                raise InputError(f"layer {id!r}: give messages as a list, not a single message")
            content = tuple(content)
            plain = True
            for item in content:
                if item.__class__ is not dict:
                    plain = False
                    if not isinstance(item, Mapping):
                        raise InputError(f"layer {id!r}: every message must be an object")
            object.__setattr__(self, "plain", plain)
            object.__setattr__(self, "form", "tools" if kind == "tools" else "messages")
        else:
            object.__setattr__(self, "plain", True)
            object.__setattr__(self, "form", "text")
        default_guaranteed = kind in _GUARANTEED
        object.__setattr__(self, "id", id)
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "content", content)
        object.__setattr__(
            self, "priority", DEFAULT_PRIORITY.get(kind, _UNKNOWN_PRIORITY) if priority is None else priority
        )
        object.__setattr__(self, "guaranteed", default_guaranteed if guaranteed is None else guaranteed)
        object.__setattr__(
            self, "truncatable", (kind not in _NOT_TRUNCATABLE) if truncatable is None else truncatable
        )
        object.__setattr__(self, "title", title)
        object.__setattr__(self, "summary", summary)
        if kind == "system":
            placement = "system"
        elif placement not in (None, "head", "tail"):
            raise InputError(f"layer {id!r}: placement is 'head' or 'tail', not {placement!r}")
        object.__setattr__(self, "placement", placement or ("tail" if kind in _TAIL else "head"))

    @property
    def heading(self) -> str:
        """The section heading this text layer gets in the system message ('' for ``system``)."""
        if self.kind == "system" and self.title is None:
            return ""
        title = self.title or _TITLES.get(self.kind) or self.kind.replace("_", " ").capitalize()
        return f"## {title}\n"

    def render(self, text: str | None = None) -> str:
        """The section for this text layer, with ``text`` in place of the content if given."""
        body = self.content if text is None else text
        assert isinstance(body, str)
        return self.heading + body

    def tokens(self, counter: TokenCounter) -> int:
        """Tokens of the whole layer as it would enter a pack (section, messages or tools)."""
        if isinstance(self.content, str):
            return counter.count(self.render())
        if self.form == "tools":
            return counter.count_tools(self.content)
        return sum(counter.count_message(m) for m in self.content)


_SENTENCE_END = re.compile(r"[.!?。！？…](?=[\s\"')\]]|$)|\n")
_WORD_END = re.compile(r"\s")


def truncate_text(
    text: str,
    max_tokens: int,
    counter: TokenCounter,
    *,
    min_tokens: int = 100,
    marker: str = TRUNCATION_MARKER,
    force: bool = False,
) -> str | None:
    r"""Cut ``text`` to at most ``max_tokens`` tokens, marker included, at a clean boundary.

    The cut falls at the end of a sentence if that keeps at least half of what fits (and at least
    ``min_tokens``), else at the end of a word, else between tokens (text with no spaces, such as
    CJK). The visible ``marker`` is appended. Returns ``text`` unchanged if it already fits, and
    ``None`` if no fragment of at least ``min_tokens`` tokens fits: a smaller one is not worth
    sending. With ``force`` (for guaranteed layers), a clean cut that fails the minimum falls back to
    the plain token cut, however small.

    Example:
        >>> from tierwise.tokens import get_counter
        >>> truncate_text("One. Two. Three. Four. Five. Six.", 8, get_counter(), min_tokens=1)
        'One. Two.\n[… truncated]'
    """
    if counter.count(text) <= max_tokens:
        return text
    marker_tokens = counter.count(marker)
    budget = max_tokens - marker_tokens
    if budget < (1 if force else min_tokens):
        return None
    ids = counter.encode(text)
    for _ in range(8):
        if budget < (1 if force else min_tokens):
            return None
        prefix = counter.encoding.decode_bytes(ids[:budget]).decode("utf-8", errors="ignore")
        cut = _clean_cut(prefix, budget, counter, min_tokens)
        if cut is None:
            if not force or not prefix:
                return None
            cut = prefix
        result = cut + marker
        excess = len(counter.encode(result)) - max_tokens
        if excess <= 0:
            return result
        budget -= excess
    return None


def _clean_cut(prefix: str, budget: int, counter: TokenCounter, min_tokens: int) -> str | None:
    floor = max(min_tokens, budget // 2)
    sentence = None
    for match in _SENTENCE_END.finditer(prefix):
        sentence = match.end()
    if sentence is not None:
        candidate = prefix[:sentence].rstrip()
        if len(counter.encode(candidate)) >= floor:
            return candidate
    word = None
    for match in _WORD_END.finditer(prefix):
        word = match.start()
    if word is not None:
        candidate = prefix[:word].rstrip()
        if len(counter.encode(candidate)) >= min_tokens:
            return candidate
    candidate = prefix.rstrip()
    if candidate and len(counter.encode(candidate)) >= min_tokens:
        return candidate
    return None
