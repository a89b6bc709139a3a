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

:func:`stable_prefix` says where a pack's stable part ends (everything before its per-turn tail, or
before its input when it has none) and :func:`cache_breakpoints` which messages end the parts a
provider that takes explicit breakpoints (Anthropic-style ``cache_control``) should be told to cache.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from tierwise.packing.packer import TAIL_LEAD
from tierwise.tokens import TOKENS_PER_MESSAGE, TokenCounter

__all__ = ["CacheRule", "cache_breakpoints", "cached_tokens", "shared_prefix", "stable_prefix"]

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


def _is_tail(message: Message, after_system: bool) -> bool:
    content = message.get("content")
    if message.get("role") == "user":
        return isinstance(content, str) and content.startswith(TAIL_LEAD)
    return message.get("role") == "system" and not after_system  # a tail sent as a system message


def stable_prefix(messages: Sequence[Message]) -> int:
    """How many leading messages of a pack the next pack of the same chat repeats, between steps.

    A pack is laid out system · head · history · tail · input (:mod:`tierwise.packing.packer`):
    the input is the newest user message and what follows it (a turn's tool calls and results),
    the tail the one message before it that memory chose for this turn (a user message opened by
    ``TAIL_LEAD``, or a system message after the history when the packer's ``tail_role`` is
    ``"system"``). Everything before the tail, or before the input when there is no tail, is
    stable: the next pack starts with it unless a compaction step came between.

    Example:
        >>> from tierwise.packing.packer import TAIL_LEAD
        >>> pack = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
        ...         {"role": "assistant", "content": "Hello!"}, {"role": "user", "content": "Bye"}]
        >>> stable_prefix(pack)
        3
        >>> stable_prefix([*pack[:3], {"role": "user", "content": TAIL_LEAD + " Retrieved: …"}, pack[3]])
        3
    """
    start = len(messages) - 1
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        if message.get("role") == "user" and not _is_tail(message, True):
            start = i
            break
    if start <= 0:
        return max(start, 0)
    after_system = all(m.get("role") in ("system", "developer") for m in messages[: start - 1])
    return start - 1 if _is_tail(messages[start - 1], after_system) else start


def cache_breakpoints(messages: Sequence[Message], system: int = 0) -> tuple[int, ...]:
    """The messages that end a stable part of a pack: where explicit cache breakpoints belong.

    Two at most, in order: the last of the ``system`` leading messages (the caller's system layer,
    byte-stable for the whole chat: it and the tools before it stay cached across compaction
    steps), and the last message of :func:`stable_prefix` (the head and history, repeated by every
    pack until the next step). A pack without a stable part has none.

    Example:
        >>> pack = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
        ...         {"role": "assistant", "content": "Hello!"}, {"role": "user", "content": "Bye"}]
        >>> cache_breakpoints(pack, system=1), cache_breakpoints(pack[:1] + pack[3:], system=1)
        ((0, 2), (0,))
    """
    stable = stable_prefix(messages)
    ends = {min(system, stable) - 1, stable - 1}
    return tuple(sorted(i for i in ends if i >= 0))
