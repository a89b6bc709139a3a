"""Which session a request continues (:func:`session_key`), and whether its history diverged from it.

A session is named by the client (a header, ``prompt_cache_key``, a ``metadata`` entry) or derived
from the conversation's opening, within the body's ``user`` (an end user scopes sessions, it does
not name one). Messages are compared by meaning: texts stripped, tool-call arguments as parsed JSON.

An OpenAI client resends its whole conversation on every request. It continues the session's chat
when every stored message is still there, alike, at its place; otherwise (an edit, a regenerate, a
tool result that changed) it *diverged* and :class:`~tierwise.server.openai_sessions.Sessions`
starts a fresh chat, so the upstream gets the client's messages and stored history is never
rewritten. A message that is alike but not equal — the client resent it with other fields (a
``cache_control`` moved to it, ``reasoning_content`` dropped, an answer's ``refusal: null``) — is
forwarded as the client sent it this time, wherever memory sends it whole (:func:`resent`).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tierwise.chat.titles import fallback_title
from tierwise.memory.steps import message_forms

if TYPE_CHECKING:
    from tierwise.memory.engine import Memory

__all__ = [
    "METADATA_KEYS",
    "arguments_key",
    "diverged",
    "entity_id",
    "resent",
    "session_key",
    "session_title",
    "text_of",
]

_MAX_ENTITY_ID = 128

# How memory keeps a tool result over the blob threshold (tierwise.memory.blobs.CompressedToolResult).
_BLOB_REF = re.compile(r"\[tool result[^\]]* · blob sha256:([0-9a-f]{64}) \(open with open_blob\)\]")


def text_of(content: Any) -> str:
    """A message content's text (the text parts of a list content)."""
    if isinstance(content, list):
        texts = [p.get("text") for p in content if isinstance(p, Mapping) and p.get("type") == "text"]
        return "\n".join(t for t in texts if isinstance(t, str))
    return content if isinstance(content, str) else ""


def arguments_key(arguments: Any) -> Any:
    """A tool call's arguments as their meaning: parsed JSON, whitespace and key order aside.

    Clients re-serialise the arguments they got: LangChain sends ``{"city":"Paris"}`` back as
    ``{"city": "Paris"}``, pydantic-ai the other way round. Text that is not JSON is compared as
    sent (stripped).

    Example:
        >>> arguments_key('{"city":"Paris","n":1}') == arguments_key('{"n": 1, "city": "Paris"}')
        True
    """
    if not isinstance(arguments, str):
        return arguments
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return arguments.strip()
    return json.dumps(parsed, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _fingerprint(message: Mapping[str, Any]) -> tuple[Any, ...]:
    """What must match between a stored message and the client's copy of it, tool results aside.

    A tool result's content is compared by :func:`_same_result` (memory may keep a large one as a
    blob reference); a call's arguments by their meaning (:func:`arguments_key`).
    """
    role = message.get("role")
    if role == "tool":
        return (role, message.get("tool_call_id"))
    calls = tuple(
        (
            c.get("id"),
            (c.get("function") or {}).get("name"),
            arguments_key((c.get("function") or {}).get("arguments")),
        )
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


def resent(
    memory: Memory,
    conversation: Sequence[Mapping[str, Any]],
    messages: list[dict[str, Any]],
    tokens: int,
    room: int,
) -> tuple[list[dict[str, Any]], int]:
    """A pack's ``messages``, those memory sends whole as the client sent them this time; and its tokens.

    The client resends its whole conversation; memory holds the copy it got first (or the answer as
    tierwise relayed it). Where memory's copy is in the pack with the same content but other fields,
    the client's copy goes instead: its fields this time (a moved ``cache_control``, a dropped
    ``reasoning_content``, an added ``refusal: null``) are what it asks for. A compressed form (its
    content differs) stays; a copy that would take the pack past ``room`` tokens stays too.
    """
    forms = message_forms(memory, memory.live_from, min(len(memory.messages), len(conversation)))
    out = messages
    for position, message in enumerate(messages):
        index = forms.get(id(message))
        if index is None:
            continue
        sent = conversation[index]
        if sent is message or sent == message or sent.get("content") != message.get("content"):
            continue
        more = memory.counter.count_message(sent) - memory.counter.count_message(message)
        if tokens + more > room:
            continue
        if out is messages:
            out = list(messages)
        out[position], tokens = dict(sent), tokens + more
    return out, tokens


METADATA_KEYS = ("tierwise_session", "session_id")
"""``metadata`` entries that name a session, in the order they are read."""


def session_key(
    header: str | None,
    user: str | None,
    messages: Sequence[Mapping[str, Any]],
    *,
    cache_key: str | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> str:
    """The session a request continues: named by the client, else derived from the conversation's start.

    Named, first found: the ``X-Tierwise-Session`` header (``header``), OpenAI's ``prompt_cache_key``
    (``cache_key``; Codex CLI sends its conversation's id there), a ``metadata`` entry
    (:data:`METADATA_KEYS`). Else the key hashes the first system message and the first other one:
    both stay put as the conversation grows (the literal first two messages would change when a
    system-less chat gets its first answer). The body's ``user`` — the end user, as OpenAI advises —
    *scopes* the session: two end users with the same opening are two sessions, and one end user's
    conversations are not one.

    Example:
        >>> opening = [{"role": "user", "content": "Hi"}]
        >>> session_key(None, None, opening) == session_key(None, None, opening)
        True
        >>> session_key(None, "alice", opening) == session_key(None, "bob", opening)
        False
        >>> session_key(None, None, opening, cache_key="conv-7")
        'conv-7'
    """
    named = [header, cache_key, *((metadata or {}).get(k) for k in METADATA_KEYS)]
    key = next((k.strip() for k in named if isinstance(k, str) and k.strip()), None)
    if key is None:
        system = next((m for m in messages if m.get("role") in ("system", "developer")), None)
        opening = next((m for m in messages if m.get("role") not in ("system", "developer")), None)
        first = [[m.get("role"), m.get("content")] if m is not None else None for m in (system, opening)]
        dumped = json.dumps(first, sort_keys=True, ensure_ascii=False)
        digest = hashlib.sha256(dumped.encode("utf-8", "surrogatepass")).hexdigest()  # lone surrogates too
        key = f"auto-{digest[:32]}"
    if user and user.strip():
        return f"{user.strip()}/{key}"
    return key


def session_title(key: str, conversation: Sequence[Mapping[str, Any]]) -> str:
    """A new session's title: from its first user message, as the web chat's offline title; else its key.

    Example:
        >>> session_title("auto-1f2e", [{"role": "user", "content": "Please fix the login bug in auth.py"}])
        'Fix the login bug in auth'
    """
    opening = next((m for m in conversation if m.get("role") == "user"), None)
    text = text_of(opening.get("content")) if opening is not None else ""
    return fallback_title(text) if text.strip() else f"API {key[:60]}"


def entity_id(key: str) -> str:
    """The chat's ``entity_id`` for a session key (hashed when long or unprintable)."""
    if len(key) <= _MAX_ENTITY_ID and key.isprintable():
        return key
    return hashlib.sha256(key.encode()).hexdigest()[:32]
