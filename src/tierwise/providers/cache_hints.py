"""Explicit prompt-cache breakpoints on the wire: Anthropic-style ``cache_control`` content parts.

OpenAI, DeepSeek, Gemini and the local servers cache prompt prefixes by themselves. Anthropic's
models (directly, or through OpenRouter and other OpenAI-compatible gateways) cache only up to a
message marked with a breakpoint: a content part ``{"type": "text", "text": …, "cache_control":
{"type": "ephemeral"}}``, at most four per request. :func:`with_cache_hints` marks the messages a
:class:`~tierwise.providers.base.ModelRequest` names in ``cache_breakpoints`` (the ends of its
stable parts: :func:`tierwise.packing.prefix.cache_breakpoints`), on a copy; the provider sends the
copy when its ``cache_hints`` setting is on (``TIERWISE_CACHE_HINTS``).

A marked message keeps its text byte for byte: a string content becomes one text part holding the
same string; a list content gets the marker on its last part. Tool results and assistant messages
without text are not marked (gateways disagree on where a tool result's marker goes); the nearest
earlier message that can carry one is marked instead. Breakpoints the client set itself count
towards the limit and are never moved.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["CACHE_CONTROL", "MAX_BREAKPOINTS", "with_cache_hints"]

CACHE_CONTROL = {"type": "ephemeral"}
MAX_BREAKPOINTS = 4  # Anthropic's limit per request (tools, system and messages together)
_MARKABLE_ROLES = frozenset({"system", "developer", "user", "assistant"})


def _marks(item: Mapping[str, Any]) -> int:
    """Breakpoints already in a message or tool definition (its own, or its content parts')."""
    count = int("cache_control" in item)
    content = item.get("content")
    if isinstance(content, list):
        count += sum(1 for part in content if isinstance(part, Mapping) and "cache_control" in part)
    return count


def _markable(message: Mapping[str, Any]) -> bool:
    if message.get("role") not in _MARKABLE_ROLES:
        return False
    content = message.get("content")
    if isinstance(content, str):
        return bool(content)
    if isinstance(content, list) and content:
        last = content[-1]
        return isinstance(last, Mapping) and bool(last.get("type"))
    return False


def _marked(message: Mapping[str, Any]) -> dict[str, Any]:
    content = message["content"]
    if isinstance(content, str):
        parts: list[Any] = [{"type": "text", "text": content, "cache_control": dict(CACHE_CONTROL)}]
    else:
        parts = [*content[:-1], {**content[-1], "cache_control": dict(CACHE_CONTROL)}]
    return {**message, "content": parts}


def with_cache_hints(
    messages: Sequence[Mapping[str, Any]],
    breakpoints: Iterable[int],
    *,
    tools: Sequence[Mapping[str, Any]] = (),
    limit: int = MAX_BREAKPOINTS,
) -> list[dict[str, Any]]:
    """``messages`` with a ``cache_control`` breakpoint on each message in ``breakpoints``.

    The latest breakpoints are placed first (they save the most) while the request holds fewer
    than ``limit``, counting those already in ``messages`` and ``tools``. Only marked messages are
    copied; the others (and ``messages`` itself) are left as they are.

    Example:
        >>> sent = with_cache_hints([{"role": "system", "content": "Be brief."},
        ...                          {"role": "user", "content": "Hi"}], [0])
        >>> sent[0]["content"]
        [{'type': 'text', 'text': 'Be brief.', 'cache_control': {'type': 'ephemeral'}}]
        >>> sent[1]
        {'role': 'user', 'content': 'Hi'}
    """
    out: list[dict[str, Any]] = [m if isinstance(m, dict) else dict(m) for m in messages]
    room = limit - sum(_marks(m) for m in out) - sum(_marks(t) for t in tools)
    done: set[int] = set()
    for index in sorted({i for i in breakpoints if 0 <= i < len(out)}, reverse=True):
        if room <= 0:
            break
        at = next((i for i in range(index, -1, -1) if _markable(out[i]) or _marks(out[i])), None)
        if at is None or at in done or _marks(out[at]):  # nothing to mark, or marked already
            continue
        out[at] = _marked(out[at])
        done.add(at)
        room -= 1
    return out
