"""What the detail tools say when an id is unknown: a search with the words of what was asked for.

A model that has not listed first often sends a title or a made-up id (``get_task_details("webhook
system")``, ``task_webhook_system``). Seed 000 §8.2's fallback then listed *every* task; here the
detail tool searches with the id's words instead (:func:`asked_words`) and its error names what
matches, so the model can retry with a real id — or, when nothing matches, which list tool to call.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from typing import Any

from tierwise.workspace.queries import WorkspaceNotFound, WorkspaceQueries

__all__ = ["asked_words", "or_similar"]

_ID_SPLIT = re.compile(r"[^\w%]+|_")
_ID_WORDS = frozenset({"task", "tasks", "proj", "project", "projects", "note", "notes", "id"})
_NOT_WORDS = _ID_WORDS | frozenset({"the", "a", "an", "of", "for", "to", "and", "my", "on", "in", "with"})
_SEARCH = {"task": "list_tasks", "project": "search_projects", "note": "search_notes"}


def asked_words(asked: str) -> list[str]:
    """The words of an id a model made up or misremembered ("task_webhook_system" → webhook, system).

    Prefixes, filler words and anything that looks like a generated id (letters and digits mixed)
    are left out, so a real id of a deleted row gives no words.

    Example:
        >>> asked_words("task_webhook-system"), asked_words("task_4k7d2x9q1m3a"), asked_words("The API docs")
        (['webhook', 'system'], [], ['api', 'docs'])
    """
    words = []
    for word in _ID_SPLIT.split(asked.lower()):
        generated = any(c.isdigit() for c in word) and any(c.isalpha() for c in word) and len(word) >= 6
        if len(word) >= 2 and word not in _NOT_WORDS and not generated:
            words.append(word)
    return words[:6]


def _found_instead(ws: WorkspaceQueries, user: str, kind: str, asked: str, now: datetime) -> str:
    """What a search with the words of ``asked`` finds (for the not-found message), or ``""``."""
    words = asked_words(asked)
    if not words:
        return ""
    queries = [" ".join(words)] + ([max(words, key=len)] if len(words) > 1 else [])
    for query in queries:
        if kind == "task":
            rows, _ = ws.list_tasks(user, query=query, sort_by="due", limit=5, now=now)
            found = [f"{r['id']} “{r['title']}” ({r['status']})" for r in rows]
        elif kind == "project":
            rows, _ = ws.search_projects(user, query=query, limit=5)
            found = [f"{r['id']} “{r['name']}” ({r['status']})" for r in rows]
        else:
            rows, _ = ws.search_notes(user, query=query, limit=5)
            found = [f"{r['id']} “{r.get('title') or 'Untitled'}”" for r in rows]
        if found:
            return f". {kind.capitalize()}s matching “{query}”: {'; '.join(found)}"
    return f"; no {kind} matches “{' '.join(words)}”: call {_SEARCH[kind]} with other words"


def or_similar(
    ws: WorkspaceQueries, user: str, kind: str, asked: str, now: datetime, read: Callable[[], Any]
) -> Any:
    """``read()``, or — for an unknown id — :class:`WorkspaceNotFound` naming what its words find."""
    try:
        return read()
    except WorkspaceNotFound as missing:
        if missing.kind != kind or missing.id != asked:
            raise
        similar = _found_instead(ws, user, kind, asked, now)
        if not similar:
            raise
        raise WorkspaceNotFound(kind, asked, similar) from None
