"""Input checks: every mistake becomes an :class:`~tierwise.errors.InputError` naming the field."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from tierwise.errors import InputError
from tierwise.packing.conversation import ROLES

__all__ = [
    "CHAT_FIELDS",
    "check_chat_fields",
    "check_count",
    "check_json",
    "check_text",
    "check_time",
    "clean_text",
    "message_columns",
]


# An escaped NUL (``\u0000``) in JSON text, not preceded by an escaped backslash.
_JSON_NUL = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")
# A UTF-16 surrogate code point: alone it cannot be encoded as UTF-8 (nor stored by either backend).
_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"


def clean_text(value: str) -> str:
    r"""``value`` as the store keeps it: NUL (U+0000) and lone surrogates become U+FFFD.

    Neither can be stored as text (PostgreSQL refuses NUL in ``text`` and ``jsonb``; neither
    backend's driver encodes a lone surrogate as UTF-8), so both backends keep the same
    replacement. A high surrogate followed by a low one (a character split into its UTF-16 halves)
    becomes that character. Anything else is returned unchanged (the same object).

    Example:
        >>> clean_text("a\x00b\ud800c") == "a\ufffdb\ufffdc"
        True
    """
    if "\x00" in value:
        value = value.replace("\x00", REPLACEMENT)
    if value.isascii() or _SURROGATE.search(value) is None:
        return value
    return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def _clean_json(value: Any) -> Any:
    """``value`` with :func:`clean_text` applied to every string in it, keys included."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, Mapping):
        return {clean_text(k) if isinstance(k, str) else k: _clean_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean_json(v) for v in value]
    return value


def check_json(field: str, value: Any) -> Any:
    """``value`` as both backends store it alike as JSON, else :class:`InputError`.

    NaN and infinities are refused (not JSON); NUL characters and lone surrogates in its strings
    (keys too) become U+FFFD (:func:`clean_text`), in a copy: ``value`` itself is returned when it
    has none.
    """
    try:
        text = json.dumps(value, allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{field} must be JSON (lists, dicts, strings, finite numbers): {exc}") from exc
    # The substring tests first: 100x cheaper. (A NUL is always escaped; a surrogate is left as is.)
    if ("\\u0000" in text and _JSON_NUL.search(text)) or (not text.isascii() and _SURROGATE.search(text)):
        return _clean_json(value)
    return value


def check_time(field: str, value: datetime | None) -> datetime | None:
    """``value`` if it is timezone-aware (or ``None``), else :class:`InputError`."""
    if value is not None and (not isinstance(value, datetime) or value.utcoffset() is None):
        raise InputError(f"{field} must be a timezone-aware datetime, got {value!r}")
    return value


def check_text(field: str, value: Any, *, optional: bool = False) -> Any:
    """``value`` if it is a string (or ``None`` when optional), else :class:`InputError`.

    The string is returned as the store keeps it (:func:`clean_text`: NUL and lone surrogates
    become U+FFFD); callers store what this returns.
    """
    if value is None and optional:
        return value
    if isinstance(value, str):
        return clean_text(value)
    raise InputError(f"{field} must be a string{' or None' if optional else ''}, got {value!r}")


def check_count(field: str, value: Any, *, optional: bool = False) -> Any:
    """``value`` if it is a non-negative int (or ``None`` when optional), else :class:`InputError`."""
    if value is None and optional:
        return value
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError(f"{field} must be a non-negative integer, got {value!r}")
    return value


# What update_chat may change; message_count and messages_archived follow the messages.
CHAT_FIELDS = frozenset(
    {
        "context_type",
        "entity_id",
        "title",
        "title_generated",
        "conversation_summary",
        "key_decisions",
        "created_entities",
        "total_tokens_used",
        "token_limit",
        "last_compression_at",
        "narrative",
    }
)
_MESSAGE_KEYS = ("role", "content", "name", "tool_calls", "tool_call_id")


def message_columns(message: Mapping[str, Any]) -> dict[str, Any]:
    """The columns of an OpenAI-format message; unknown keys are kept in ``extra``."""
    if not isinstance(message, Mapping):
        raise InputError(f"a message must be a dict with a role, got {type(message).__name__}")
    role = message.get("role")
    if role not in ROLES:
        raise InputError(f"unknown message role {role!r}; use one of {', '.join(ROLES)}")
    content = message.get("content")
    parts: list[Any] | None = None
    if isinstance(content, list):
        parts = check_json("message content", list(content))
        texts = [p.get("text") for p in parts if isinstance(p, Mapping) and p.get("type") == "text"]
        content = "\n".join(t for t in texts if isinstance(t, str))
    elif content is not None and not isinstance(content, str):
        raise InputError(f"message content must be a string, a list of parts or None, got {content!r}")
    else:
        content = check_text("message content", content, optional=True)
    tool_calls = message.get("tool_calls")
    if tool_calls is not None and not isinstance(tool_calls, list):
        raise InputError(f"tool_calls must be a list, got {tool_calls!r}")
    extra = {k: v for k, v in message.items() if k not in _MESSAGE_KEYS}
    return {
        "role": role,
        "content": content,
        "content_parts": parts,
        "name": check_text("message name", message.get("name"), optional=True),
        "tool_calls": check_json("tool_calls", tool_calls),
        "tool_call_id": check_text("tool_call_id", message.get("tool_call_id"), optional=True),
        "extra": check_json("message fields", extra) or None,
    }


def check_chat_fields(fields: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of ``Store.update_chat`` as stored: known names (:data:`CHAT_FIELDS`) and types."""
    unknown = sorted(set(fields) - CHAT_FIELDS)
    if unknown:
        raise InputError(f"cannot update chat field(s) {', '.join(unknown)}; use {sorted(CHAT_FIELDS)}")
    fields = dict(fields)
    for key in ("title", "context_type"):
        if key in fields:
            fields[key] = check_text(key, fields[key])
    for key in ("entity_id", "conversation_summary"):
        if key in fields:
            fields[key] = check_text(key, fields[key], optional=True)
    for key in ("total_tokens_used", "token_limit"):
        if key in fields and not (key == "token_limit" and fields[key] is None):  # None: the server's
            check_count(key, fields[key])
    for key in ("key_decisions", "created_entities"):
        if key in fields:
            if not isinstance(fields[key], list):
                raise InputError(f"{key} must be a list, got {fields[key]!r}")
            fields[key] = check_json(key, fields[key])
    if "narrative" in fields:
        narrative = fields["narrative"] = check_json("narrative", fields["narrative"])
        if narrative is not None and not isinstance(narrative, dict):
            raise InputError(f"narrative must be a dict or None, got {narrative!r}")
    if "title_generated" in fields and not isinstance(fields["title_generated"], bool):
        raise InputError(f"title_generated must be a bool, got {fields['title_generated']!r}")
    check_time("last_compression_at", fields.get("last_compression_at"))
    return fields
