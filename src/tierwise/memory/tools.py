"""Memory's model-facing tools: recall segments by id, open a stored tool result.

Each tool is an OpenAI tool definition plus a handler that never raises on bad arguments: whatever a
model invents (an unknown id, a wrong form, a malformed hash, a negative range) comes back as a
message that says what to do instead. The chat engine registers them beside the workspace tools.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tierwise.memory.blobs import BlobStore, open_blob
from tierwise.memory.engine import Form, Memory

__all__ = ["OPEN_BLOB", "RECALL_SEGMENTS", "call_open_blob", "call_recall_segments"]

_FORMS: tuple[Form, ...] = ("header", "summary", "full")

RECALL_SEGMENTS: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "recall_segments",
        "description": (
            "Bring back earlier parts of this conversation by segment id (the ids in the "
            "'Conversation segments' list, like S3). Ask for 'summary' first; 'full' returns every "
            "message verbatim and is limited to 3 per turn."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "ids": {
                    "type": "array",
                    "items": {"type": "string"},
                    "minItems": 1,
                    "maxItems": 10,
                    "description": 'Segment ids, e.g. ["S3", "S7"]',
                },
                "form": {"type": "string", "enum": list(_FORMS), "default": "summary"},
            },
            "required": ["ids"],
        },
    },
}

OPEN_BLOB: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "open_blob",
        "description": (
            "Read a stored tool result in full (or a byte range of it) by the sha256 shown in its "
            "compressed form."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "sha256": {"type": "string", "description": "the 64 hex digits after sha256:"},
                "start": {"type": "integer", "minimum": 0, "description": "first byte (default 0)"},
                "end": {"type": "integer", "minimum": 0, "description": "byte after the last (default: all)"},
            },
            "required": ["sha256"],
        },
    },
}


def call_recall_segments(memory: Memory, arguments: Mapping[str, Any]) -> str:
    """Run ``recall_segments`` with arguments as a model sent them."""
    ids = arguments.get("ids")
    if isinstance(ids, str):
        ids = [part.strip() for part in ids.replace(";", ",").split(",") if part.strip()]
    if not isinstance(ids, list) or not ids or not all(isinstance(i, str | int) for i in ids):
        return 'recall_segments needs "ids": a list of segment ids such as ["S3"]; see the segment list.'
    form = arguments.get("form", "summary")
    if form not in _FORMS:
        return f"unknown form {form!r}; use one of {', '.join(_FORMS)}."
    return memory.recall([str(i) for i in ids[:10]], form)


def call_open_blob(store: BlobStore, arguments: Mapping[str, Any]) -> str:
    """Run ``open_blob`` with arguments as a model sent them."""
    sha = arguments.get("sha256")
    if not isinstance(sha, str):
        return 'open_blob needs "sha256": the hash shown in the compressed tool result.'
    start, end = arguments.get("start"), arguments.get("end")
    for name, value in (("start", start), ("end", end)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            return f'"{name}" must be a whole number of bytes (or left out).'
    return open_blob(store, sha.strip().removeprefix("sha256:"), start=start, end=end)
