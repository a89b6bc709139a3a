"""What a workspace tool's result is re-sent as once its turn is over: seed 000 §2 applied to history.

A list or detail result is read whole in the turn that asked for it; the answer then tells the user
what it found. Later model calls in the chat (the next requests) get the result's *recap* instead
(:mod:`tierwise.chat.recap`): each record shown, by id and title — what the model needs to refer to
"the second one" or to ask for it again — and a note naming the tool that gives it in full. Details
one tool call away, as seed 000 has it for the context, holds for the conversation too.

========================  ==========================================================================
tool                      recap
========================  ==========================================================================
``list_tasks``            ``tasks``: id, title, status; ``total``
``search_projects``       ``projects``: id, name, status; ``total``
``search_notes``          ``notes``: id, title; ``total``
``get_task_details``      ``task``: id, title, status, priority, start date, project id and name
                          (and its subtasks' ids, titles and statuses)
``get_project_details``   ``project``: id, name, status (and its tasks, notes and brain dumps by
                          id and title, when the result had them)
``get_note_details``      ``note``: id, title, category, project id
``get_calendar_events``   ``events``: title, start, end; ``total``
========================  ==========================================================================

Actions (``create_task``, ``update_task``, ``schedule_task``, ``update_project_context``) and
``find_available_slots`` have no recap: their results are short and say what changed or was found.
An error, or a result that is not a JSON object, is kept as it came.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["RECAPS", "recap_result"]

_ROWS: Mapping[str, tuple[str, ...]] = {
    "tasks": ("id", "title", "status"),
    "projects": ("id", "name", "status"),
    "notes": ("id", "title"),
    "brain_dumps": ("id", "title"),
    "subtasks": ("id", "title", "status"),
    "events": ("summary", "start", "end"),
}
_SINGLE: Mapping[str, tuple[str, ...]] = {
    "task": ("id", "title", "status", "priority", "start_date", "project_id", "project_name"),
    "project": ("id", "name", "status"),
    "note": ("id", "title", "category", "project_id"),
}
_AGAIN = {
    "list_tasks": "get_task_details(task_id) for one in full",
    "search_projects": "get_project_details(project_id) for one in full",
    "search_notes": "get_note_details(note_id) for one in full",
    "get_task_details": "get_task_details(task_id) for it again",
    "get_project_details": "get_project_details(project_id) for it again",
    "get_note_details": "get_note_details(note_id) for it again",
    "get_calendar_events": "get_calendar_events again for the details",
}


def _row(record: Any, fields: Sequence[str]) -> Any:
    if not isinstance(record, Mapping):
        return record
    return {k: record[k] for k in fields if record.get(k) not in (None, "", [])}


def _single(record: Mapping[str, Any], kind: str) -> dict[str, Any]:
    out: dict[str, Any] = _row(record, _SINGLE[kind])
    project = record.get("project")
    if kind == "task" and "project_name" not in out and isinstance(project, Mapping) and project.get("name"):
        out["project_name"] = project["name"]
    for key, fields in _ROWS.items():  # a detail's nested lists (subtasks; a project's tasks, notes…)
        rows = record.get(key)
        if isinstance(rows, list) and rows:
            out[key] = [_row(r, fields) for r in rows]
    return out


def recap_result(name: str, text: str) -> str | None:
    """The recap of ``name``'s result ``text`` (see the module docstring), or ``None`` to keep it.

    Example:
        >>> text = json.dumps({"tasks": [{"id": "task_1", "title": "Draft plan", "status": "backlog",
        ...     "priority": "high", "description_preview": "A long preview…", "is_overdue": False}],
        ...     "total": 1, "has_more": False, "message": "Showing 1 of 1 open tasks."})
        >>> print(recap_result("list_tasks", text))
        {"tasks":[{"id":"task_1","title":"Draft plan","status":"backlog"}],"total":1,"message":"Recap \
of an earlier result; get_task_details(task_id) for one in full."}
        >>> recap_result("list_tasks", "error: the project was not found") is None
        True
    """
    if name not in _AGAIN:
        return None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None  # an error, or a result memory already compressed
    if not isinstance(data, dict):
        return None
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key in _ROWS and isinstance(value, list):
            out[key] = [_row(r, _ROWS[key]) for r in value]
        elif key in _SINGLE and isinstance(value, Mapping):
            out[key] = _single(value, key)
        elif key == "total":
            out[key] = value
    if not out:
        return None
    out["message"] = f"Recap of an earlier result; {_AGAIN[name]}."
    return json.dumps(out, ensure_ascii=False, separators=(",", ":"))


def _recap_of(name: str) -> Callable[[str], str | None]:
    def recap(text: str) -> str | None:
        return recap_result(name, text)

    recap.__name__ = f"recap_{name}"
    return recap


RECAPS: Mapping[str, Callable[[str], str | None]] = {name: _recap_of(name) for name in _AGAIN}
"""Each recapped tool's :attr:`~tierwise.tools.Tool.recap` (one function per tool, made once)."""
