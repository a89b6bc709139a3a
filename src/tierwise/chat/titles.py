"""Chat titles: a short title after the first exchange, by a model if one is configured.

The deterministic fallback takes the first user message's leading clause, drops filler ("can you",
"please", "I want to"), and keeps at most six words, capitalised. A model's title is used only if it
is non-empty, at most 60 characters and one line; otherwise the fallback is used and the reason
logged.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from tierwise.providers.base import ModelRequest

if TYPE_CHECKING:
    from tierwise.providers.base import Provider
    from tierwise.store import Store

__all__ = ["fallback_title", "make_title", "title_chat"]

log = logging.getLogger(__name__)

_FILLER = re.compile(
    r"^(hi|hey|hello|ok|okay|so|please|can you|could you|would you|will you|i want to|i'd like to|"
    r"i need to|i need|help me|let's|lets|tell me|show me)\b[\s,:!]*",
    re.IGNORECASE,
)
_CLAUSE = re.compile(r"[.!?\n;:]")
_WORD = re.compile(r"[\w'’\-/#@&]+", re.UNICODE)
MAX_WORDS = 6
MAX_CHARS = 60


def fallback_title(first_message: str) -> str:
    """A title from the first user message, without a model.

    Example:
        >>> fallback_title("Can you help me plan the Q4 product launch timeline? It's urgent.")
        'Plan the Q4 product launch timeline'
    """
    text = " ".join(first_message.split())
    previous = None
    while previous != text:  # strip stacked filler: "hi, can you please …"
        previous = text
        text = _FILLER.sub("", text).strip()
    clause = _CLAUSE.split(text, maxsplit=1)[0].strip() or text
    words = _WORD.findall(clause)[:MAX_WORDS]
    if not words:
        return "New chat"
    title = " ".join(words)
    return (title[0].upper() + title[1:])[:MAX_CHARS]


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
            f"User: {first_message[:800]}\nAssistant: {first_answer[:400]}"
        )
        try:
            answer = (await ask(prompt)).strip().strip("\"'").strip()
        except Exception as exc:  # a title is never worth failing a turn
            log.warning("title model failed (%s: %s); using the fallback title", type(exc).__name__, exc)
        else:
            if answer and "\n" not in answer and len(answer) <= MAX_CHARS:
                return answer.rstrip("."), True
            log.warning("title model answer rejected (%r); using the fallback title", answer[:80])
    return fallback_title(first_message), False


async def title_chat(
    store: Store, user_id: str, chat_id: str, first_message: str, first_answer: str, model: Provider | None
) -> str | None:
    """Title a chat after its first exchange (by ``model`` if given) and store it; the title.

    ``None`` if the user named the chat while the title was being made: their name stands.
    """
    ask = None
    if model is not None:
        titler = model

        async def ask_model(prompt: str) -> str:
            request = ModelRequest([{"role": "user", "content": prompt}], max_tokens=24, temperature=0.2)
            return (await titler.complete(request)).text

        ask = ask_model
    title, _ = await make_title(first_message, first_answer, ask)
    now = store.get_chat(user_id, chat_id)
    if now.title_generated or now.title.strip() not in ("", "New Chat"):
        return None
    store.update_chat(user_id, chat_id, title=title, title_generated=True)
    return title
