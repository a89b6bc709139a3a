"""Which session a request continues (:func:`session_key`), and whether its history diverged from it.

An OpenAI client resends its whole conversation on every request. It continues the session's chat
when every stored message is still there, alike, at its place; otherwise (an edit, a regenerate, a
tool result that changed) it *diverged* and :class:`~tierwise.server.openai_sessions.Sessions`
starts a fresh chat, so the upstream gets the client's messages and stored history is never
rewritten.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["diverged", "entity_id", "session_key", "text_of"]

_MAX_ENTITY_ID = 128

# How memory keeps a tool result over the blob threshold (tierwise.memory.blobs.CompressedToolResult).
_BLOB_REF = re.compile(r"\[tool result[^\]]* · blob sha256:([0-9a-f]{64}) \(open with open_blob\)\]")


def text_of(content: Any) -> str:
    """A message content's text (the text parts of a list content)."""
    if isinstance(content, list):
        texts = [p.get("text") for p in content if isinstance(p, Mapping) and p.get("type") == "text"]
        return "\n".join(t for t in texts if isinstance(t, str))
    return content if isinstance(content, str) else ""


def _fingerprint(message: Mapping[str, Any]) -> tuple[Any, ...]:
    """What must match between a stored message and the client's copy of it, tool results aside.

    A tool result's content is compared by :func:`_same_result` (memory may keep a large one as a
    blob reference).
    """
    role = message.get("role")
    if role == "tool":
        return (role, message.get("tool_call_id"))
    calls = tuple(
        (c.get("id"), (c.get("function") or {}).get("name"), (c.get("function") or {}).get("arguments"))
        for c in message.get("tool_calls") or ()
        if isinstance(c, Mapping)
    )
    return (role, text_of(message.get("content")).strip(), calls)


def _same_result(stored: Mapping[str, Any], sent: Mapping[str, Any]) -> bool:
    """Whether a stored tool result is the client's: the same text, or a blob of the same bytes."""
    kept, given = stored.get("content"), sent.get("content")
    if text_of(kept).strip() == text_of(given).strip():
        return True
    if not isinstance(kept, str) or not isinstance(given, str):
        return False
    ref = _BLOB_REF.match(kept)
    if ref is None:
        return False
    return hashlib.sha256(given.encode("utf-8", errors="surrogatepass")).hexdigest() == ref.group(1)


def _alike(stored: Mapping[str, Any], sent: Mapping[str, Any]) -> bool:
    if stored == sent:
        return True
    if _fingerprint(stored) != _fingerprint(sent):
        return False
    return stored.get("role") != "tool" or _same_result(stored, sent)


def diverged(stored: Sequence[Mapping[str, Any]], conversation: Sequence[Mapping[str, Any]]) -> bool:
    """Whether the client's history differs from the stored one (a message stored as sent is alike).

    Roles, texts, tool calls (ids, names, arguments) and tool results (their call's id and content)
    are compared: a tool result the client changed ("BALANCE=100" → "BALANCE=999") is a divergence.

    Example:
        >>> call = {"id": "c1", "type": "function", "function": {"name": "balance", "arguments": "{}"}}
        >>> asked = [{"role": "user", "content": "Balance?"}, {"role": "assistant", "tool_calls": [call]}]
        >>> old = [*asked, {"role": "tool", "tool_call_id": "c1", "content": "BALANCE=100"}]
        >>> new = [*asked, {"role": "tool", "tool_call_id": "c1", "content": "BALANCE=999"}]
        >>> diverged(old, old), diverged(old, new)
        (False, True)
    """
    return len(stored) > len(conversation) or any(
        not _alike(a, b) for a, b in zip(stored, conversation, strict=False)
    )


def session_key(header: str | None, user: str | None, messages: Sequence[Mapping[str, Any]]) -> str:
    """The session: the header, else the body's ``user``, else derived from the conversation's start.

    The derived key hashes the first system message and the first other one: both stay put as the
    conversation grows (the literal first two messages would change when a system-less chat gets its
    first answer).
    """
    if header and header.strip():
        return header.strip()
    if user and user.strip():
        return user.strip()
    system = next((m for m in messages if m.get("role") in ("system", "developer")), None)
    opening = next((m for m in messages if m.get("role") not in ("system", "developer")), None)
    first = [[m.get("role"), m.get("content")] if m is not None else None for m in (system, opening)]
    dumped = json.dumps(first, sort_keys=True, ensure_ascii=False)
    digest = hashlib.sha256(dumped.encode("utf-8", "surrogatepass")).hexdigest()  # lone surrogates too
    return f"auto-{digest[:32]}"


def entity_id(key: str) -> str:
    """The chat's ``entity_id`` for a session key (hashed when long or unprintable)."""
    if len(key) <= _MAX_ENTITY_ID and key.isprintable():
        return key
    return hashlib.sha256(key.encode()).hexdigest()[:32]
