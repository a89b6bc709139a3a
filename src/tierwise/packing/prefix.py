"""What a pack repeats of the one before it: the prefix a provider's prompt cache can serve.

Providers cache prompt prefixes (OpenAI automatically, Anthropic at ``cache_control`` breakpoints,
Gemini, DeepSeek, vLLM and llama.cpp alike) and bill cached tokens at 10–50% of the input price. A
request is served from the cache up to the first token that differs from an earlier request, so
what matters is how many tokens at the *front* of a pack equal the previous pack's.

The model reads a request as: tool definitions, then the messages in order, each framed by its role.
:func:`shared_prefix` walks both packs in that order: equal tool definitions, then equal messages
(whole, framing included), then, inside the first message that differs, the tokens its content
shares with the previous one. Nothing after the first difference counts, however much repeats.

:func:`cached_tokens` applies a provider's caching rule to a shared prefix: all of it (Anthropic
past a breakpoint, vLLM's prefix cache, the ideal), or OpenAI's (nothing below 1,024 tokens, then
in steps of 128).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from tierwise.tokens import TOKENS_PER_MESSAGE, TokenCounter

__all__ = ["CacheRule", "cached_tokens", "shared_prefix"]

Message = Mapping[str, Any]
CacheRule = Literal["prefix", "openai"]

OPENAI_MIN_PREFIX = 1024
OPENAI_STEP = 128


def shared_prefix(
    previous: tuple[Sequence[Message], Sequence[Mapping[str, Any]]] | None,
    messages: Sequence[Message],
    tools: Sequence[Mapping[str, Any]],
    counter: TokenCounter,
) -> int:
    """Tokens at the front of ``(messages, tools)`` that repeat ``previous`` (its messages and tools).

    Example:
        >>> from tierwise.tokens import get_counter
        >>> a = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
        >>> b = [*a, {"role": "assistant", "content": "Hello!"}, {"role": "user", "content": "Bye"}]
        >>> shared_prefix((a, []), b, [], get_counter()) == get_counter().count_messages(a, prime_reply=False)
        True
    """
    if previous is None:
        return 0
    before, before_tools = previous
    if list(before_tools) != list(tools):
        return 0  # the definitions come first: a changed tool list changes everything after it
    shared = counter.count_tools(tools)
    for old, new in zip(before, messages, strict=False):
        if old == new:
            shared += counter.count_message(new)
            continue
        if old.get("role") == new.get("role"):
            shared += TOKENS_PER_MESSAGE + counter.count(str(new.get("role") or ""))
            a, b = old.get("content"), new.get("content")
            if isinstance(a, str) and isinstance(b, str):
                shared += _common(counter.encode(a), counter.encode(b))
        break
    return shared


def _common(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def cached_tokens(prefix: int, rule: CacheRule = "prefix") -> int:
    """Of a shared prefix, the tokens a provider bills as cached under ``rule``.

    Example:
        >>> cached_tokens(1500, "openai"), cached_tokens(1000, "openai"), cached_tokens(1500)
        (1408, 0, 1500)
    """
    if rule == "openai":
        if prefix < OPENAI_MIN_PREFIX:
            return 0
        return OPENAI_MIN_PREFIX + (prefix - OPENAI_MIN_PREFIX) // OPENAI_STEP * OPENAI_STEP
    return prefix
