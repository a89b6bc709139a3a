"""Chat titles: a short title after the first exchange, by a model if one is configured.

The deterministic fallback takes the first user message's leading clause, drops filler ("can you",
"please", "I want to", a question's opening "what are my"), and keeps it whole if it has at most
seven words; a longer one is cut where a phrase ends — at a comma, or before a word that starts the
next phrase ("for", "with", "and" …) — never after a word that needs one ("the", "for", "and", "my"),
then capitalised (issue 33: titles ended mid-phrase, "Find time on my calendar for").
A title another of the user's recent chats has already gets the first message's most distinctive
word added (:func:`distinct_title`), so chats started alike stay apart in the list. A model's title
is used only if it is non-empty, at most 60 characters and one line; otherwise the fallback is used
and the reason logged. A model's title call is the chat's spend (``spend`` in :func:`title_chat`).

A title is stored and shown in every list, so it is made from the messages scrubbed (README
"Privacy"): the model is sent them scrubbed, its answer is scrubbed, and the fallback reads the
scrubbed first message; a rejected answer is logged by its length, not its text.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING

from tierwise.memory.scrub import scrub_text
from tierwise.providers.base import ModelRequest, ModelResponse

if TYPE_CHECKING:
    from tierwise.providers.base import Provider
    from tierwise.store import Store

__all__ = ["distinct_title", "fallback_title", "make_title", "title_chat"]

log = logging.getLogger(__name__)

_FILLER = re.compile(
    r"^(hi|hey|hello|ok|okay|so|please|can you|could you|would you|will you|i want to|i'd like to|"
    r"i need to|i need|help me|let's|lets|tell me|show me|"
    r"(?:what|which) (?:are|is) (?:my|the)|what's (?:my|the))\b[\s,:!]*",
    re.IGNORECASE,
)
_CLAUSE = re.compile(r"[.!?\n;:]")
_WORD = re.compile(r"[\w'’\-/#@&]+", re.UNICODE)
MAX_WORDS = 7
MAX_CHARS = 60
_DANGLING = frozenset(
    [
        "a",
        "an",
        "the",
        "this",
        "that",
        "these",
        "those",
        "some",
        "any",
        "each",
        "every",
        "no",
        "my",
        "your",
        "our",
        "their",
        "his",
        "her",
        "its",
        "for",
        "with",
        "about",
        "to",
        "from",
        "on",
        "in",
        "at",
        "by",
        "of",
        "into",
        "onto",
        "over",
        "under",
        "between",
        "after",
        "before",
        "during",
        "without",
        "within",
        "per",
        "via",
        "than",
        "as",
        "and",
        "or",
        "but",
        "nor",
        "so",
        "yet",
        "if",
        "because",
        "while",
        "when",
        "where",
        "which",
        "whose",
        "whom",
        "very",
    ]
)
"""Words nothing ends on: articles, possessives, prepositions, conjunctions (they need what follows)."""
_WEAK_END = _DANGLING | frozenset(
    [
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "do",
        "does",
        "did",
        "have",
        "has",
        "had",
        "can",
        "could",
        "will",
        "would",
        "should",
        "may",
        "might",
        "must",
        "not",
        "more",
        "most",
        "just",
        "also",
        "who",
    ]
)
"""Words a cut clause does not end on either (a whole one may: "What tasks do I have")."""
_PHRASE_START = frozenset(
    [
        "for",
        "with",
        "about",
        "to",
        "from",
        "on",
        "in",
        "at",
        "by",
        "into",
        "over",
        "under",
        "between",
        "after",
        "before",
        "during",
        "without",
        "within",
        "via",
        "and",
        "or",
        "but",
        "so",
        "because",
        "while",
        "when",
        "where",
        "which",
        "who",
        "that",
        "if",
        "than",
    ]
)
"""Words that start the next phrase: a clause cut before one ends a phrase."""
RECENT_CHATS = 50
"""How many of the user's most recent chats a new title is kept distinct from."""
_COMMON = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "can",
        "do",
        "does",
        "for",
        "from",
        "have",
        "how",
        "i",
        "in",
        "is",
        "it",
        "me",
        "my",
        "of",
        "on",
        "or",
        "our",
        "please",
        "show",
        "so",
        "that",
        "the",
        "this",
        "to",
        "was",
        "we",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "you",
        "your",
    ]
)


def fallback_title(first_message: str) -> str:
    """A title from the first user message, without a model.

    Example:
        >>> fallback_title("Can you help me plan the Q4 product launch timeline? It's urgent.")
        'Plan the Q4 product launch timeline'
        >>> fallback_title("Find time on my calendar for a 2 hour deep work session tomorrow")
        'Find time on my calendar'
    """
    text = " ".join(scrub_text(first_message[:2000]).split())  # a secret never becomes the title
    previous = None
    while previous != text:  # strip stacked filler: "hi, can you please …"
        previous = text
        text = _FILLER.sub("", text).strip()
    clause = _CLAUSE.split(text, maxsplit=1)[0].strip() or text
    found = list(_WORD.finditer(clause))
    words = [m.group() for m in found]
    commas = [
        clause[m.end() : (found[i + 1].start() if i + 1 < len(found) else len(clause))]
        .strip()
        .startswith(",")
        for i, m in enumerate(found)
    ]
    title = _phrase(words, commas)
    if not title:
        return "New chat"
    return title[0].upper() + title[1:]


def _weak(word: str) -> bool:
    return word.casefold() in _WEAK_END


def _joined(words: list[str], commas: list[bool], n: int) -> str:
    """The first ``n`` words, a comma kept after each that had one (never after the last)."""
    return "".join(
        w + ("," if commas[i] and i < n - 1 else "") + " " for i, w in enumerate(words[:n])
    ).strip()


def _phrase(words: list[str], commas: list[bool]) -> str:
    """The longest start of ``words`` that ends a phrase, within ``MAX_WORDS`` and ``MAX_CHARS``.

    Whole if it fits and does not end on a word like "the" or "for"; else cut after a comma or
    before a word that starts a phrase; failing both, after the last word a cut may end on.
    """
    if not words:
        return ""
    most = min(len(words), MAX_WORDS)
    fits = [n for n in range(1, most + 1) if len(_joined(words, commas, n)) <= MAX_CHARS]
    if not fits:  # one word longer than a title
        return words[0][:MAX_CHARS]
    if fits[-1] == len(words) and words[-1].casefold() not in _DANGLING:
        return _joined(words, commas, len(words))
    strong = [n for n in fits if not _weak(words[n - 1])]
    if not strong:
        return ""
    ends = [n for n in strong if n >= 2 and (commas[n - 1] or words[n].casefold() in _PHRASE_START)]
    return _joined(words, commas, (ends or strong)[-1])


def _shortened(title: str, limit: int) -> str:
    """``title`` in at most ``limit`` characters, cut between words, not ending on a word like "the"."""
    if len(title) <= limit:
        return title
    words = title[: limit + 1].split()[:-1] or [title[:limit]]
    while len(words) > 1 and (_weak(words[-1].rstrip(",")) or not words[-1].rstrip(",")):
        words.pop()
    return " ".join(words).rstrip(" ,;:")


async def make_title(
    first_message: str,
    first_answer: str,
    ask: Callable[[str], Awaitable[str]] | None = None,
) -> tuple[str, bool]:
    """``(title, from_model)`` for a chat after its first exchange.

    Args:
        first_message: the user's first message.
        first_answer: the assistant's first answer.
        ask: sends a prompt to a model and returns its text; ``None`` uses the fallback.
    """
    if ask is not None:
        prompt = (
            "Give this conversation a title of at most 6 words. Reply with the title only.\n\n"
            f"User: {scrub_text(first_message[:1600])[:800]}\n"
            f"Assistant: {scrub_text(first_answer[:800])[:400]}"
        )
        try:
            answer = scrub_text((await ask(prompt)).strip().strip("\"'").strip())
        except Exception as exc:  # a title is never worth failing a turn
            log.warning("title model failed (%s: %s); using the fallback title", type(exc).__name__, exc)
        else:
            if answer and "\n" not in answer and len(answer) <= MAX_CHARS:
                return answer.rstrip(" .,;:"), True
            lines = answer.count("\n") + 1 if answer else 0  # never its text: it may repeat the chat's
            log.warning(
                "title model answer rejected (%d characters, %d lines); using the fallback title",
                len(answer),
                lines,
            )
    return fallback_title(first_message), False


async def title_chat(
    store: Store,
    user_id: str,
    chat_id: str,
    first_message: str,
    first_answer: str,
    model: Provider | None,
    *,
    spend: Callable[[ModelRequest, ModelResponse], None] | None = None,
) -> str | None:
    """Title a chat after its first exchange (by ``model`` if given) and store it; the title.

    ``spend`` is told of the model's call (its tokens and dollars are the chat's spend). A title
    another of the user's recent chats already has gets a distinguishing word from this chat's
    first message (:func:`distinct_title`). ``None`` if the user named the chat while the title
    was being made: their name stands.
    """
    ask = None
    if model is not None:
        titler = model

        async def ask_model(prompt: str) -> str:
            request = ModelRequest([{"role": "user", "content": prompt}], max_tokens=24, temperature=0.2)
            response = await titler.complete(request)
            if spend is not None:
                spend(request, response)
            return response.text

        ask = ask_model
    title, _ = await make_title(first_message, first_answer, ask)
    now = store.get_chat(user_id, chat_id)
    if now.title_generated or now.title.strip() not in ("", "New Chat"):
        return None
    others = [c.title for c in store.list_chats(user_id, limit=RECENT_CHATS) if c.id != chat_id]
    title = distinct_title(title, first_message, others)
    store.update_chat(user_id, chat_id, title=title, title_generated=True)
    return title


def distinct_title(title: str, first_message: str, taken: Sequence[str]) -> str:
    """``title``, or, if another chat has it, ``title`` with the message's most distinctive word.

    The word is the first of the message's words that is in none of the taken titles and not a
    common word; failing one, a number (``"… (2)"``).

    Example:
        >>> distinct_title("What are my high priority", "What are my high priority tasks for Acme?",
        ...                ["What are my high priority"])
        'What are my high priority · Acme'
    """
    used = {t.strip().casefold() for t in taken}
    if title.strip().casefold() not in used:
        return title
    seen = {w.casefold() for t in taken for w in _WORD.findall(t)} | {
        w.casefold() for w in _WORD.findall(title)
    }
    words = [
        w for w in _WORD.findall(first_message) if w.casefold() not in seen and w.casefold() not in _COMMON
    ]
    words.sort(key=lambda w: (not w[:1].isupper(), not any(c.isdigit() for c in w), -len(w)))
    for word in words:
        candidate = f"{_shortened(title, MAX_CHARS - len(word) - 3)} · {word}"
        if candidate.casefold() not in used:
            return candidate
    n = 2
    while f"{title} ({n})".casefold() in used:
        n += 1
    return f"{_shortened(title, MAX_CHARS - 5)} ({n})"
