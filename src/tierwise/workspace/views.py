"""What the model sees of a workspace row: abbreviated for lists, complete for details (seed 001).

Lists and searches return *abbreviated* records: the fields that are already short in full, previews
of the long ones cut at :data:`PREVIEW_LIMITS` characters (seed 000 §2.3), and metadata hints
(``has_subtasks``, ``has_notes``, ``is_overdue`` …) that tell the model whether drilling down would
find more. Detail tools return *complete* records. Both are plain JSON-able dicts.

Keys whose value is ``None`` are left out of abbreviated records: a list of twenty tasks would
otherwise spend a hundred tokens saying ``"details_preview": null``. Booleans are always present.
Times are shown in the user's time zone: ``2026-11-24`` for a day, ``2026-11-24 14:00`` for a moment.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, datetime, time, tzinfo
from typing import Any

__all__ = [
    "PREVIEW_LIMITS",
    "abbreviated_brain_dump",
    "abbreviated_note",
    "abbreviated_project",
    "abbreviated_task",
    "local_moment",
    "preview",
    "task_stats",
]

PREVIEW_LIMITS: Mapping[str, int] = {
    "task_description": 100,
    "task_details": 100,
    "project_context": 500,
    "note_content": 200,
}
"""Seed 000 §2.3's preview lengths, in characters; summaries (executive, brain dump) stay whole."""

_ELLIPSIS = "…"


def preview(text: str | None, limit: int) -> str | None:
    """The first ``limit`` characters of ``text``, cut at a word when one ends near the limit.

    A cut text ends with ``…`` (so the model knows there is more); text that fits is returned whole.

    Example:
        >>> preview("Build a robust webhook delivery system with retries", 30)
        'Build a robust webhook…'
        >>> preview("Short.", 100)
        'Short.'
        >>> preview(None, 100) is None
        True
    """
    if text is None:
        return None
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = text[:limit]
    space = cut.rfind(" ")
    if space >= limit * 0.7:
        cut = cut[:space]
    return cut.rstrip(" ,;:.-") + _ELLIPSIS


def local_moment(moment: datetime | None, zone: tzinfo) -> str | None:
    """A stored UTC moment in the user's zone: the day alone when it is local midnight.

    Example:
        >>> from datetime import UTC
        >>> from zoneinfo import ZoneInfo
        >>> local_moment(datetime(2026, 11, 24, 14, 0, tzinfo=UTC), ZoneInfo("Europe/Lisbon"))
        '2026-11-24 14:00'
        >>> local_moment(datetime(2026, 7, 1, 23, 0, tzinfo=UTC), ZoneInfo("Europe/Lisbon"))
        '2026-07-02'
    """
    if moment is None:
        return None
    local = moment.astimezone(zone)
    if local.time() == time(0, 0):
        return local.date().isoformat()
    return local.strftime("%Y-%m-%d %H:%M")


def _day(value: date | None) -> str | None:
    return value.isoformat() if value is not None else None


def _compact(record: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if v is not None and v != [] and v != ""}


def task_stats(total: int, done: int, in_progress: int) -> dict[str, int]:
    """Seed 001's task statistics; "active" means not done (backlog, in progress or blocked).

    Example:
        >>> task_stats(35, 8, 12)
        {'task_count': 35, 'active_task_count': 27, 'in_progress_task_count': 12, \
'completed_task_count': 8, 'completion_percentage': 23}
    """
    return {
        "task_count": total,
        "active_task_count": total - done,
        "in_progress_task_count": in_progress,
        "completed_task_count": done,
        "completion_percentage": (done * 200 + total) // (2 * total) if total else 0,  # half up
    }


def abbreviated_task(
    task: Any,
    zone: tzinfo,
    *,
    now: datetime,
    project_name: str | None = None,
    subtask_count: int = 0,
) -> dict[str, Any]:
    """Seed 001's ``AbbreviatedTask`` for a :class:`~tierwise.workspace.models.Task` row."""
    overdue = task.start_at is not None and task.status != "done" and task.start_at < now
    record = {
        "id": task.id,
        "title": task.title,
        "status": task.status,
        "priority": task.priority,
        "start_date": local_moment(task.start_at, zone),
        "duration_minutes": task.duration_minutes,
        "description_preview": preview(task.description, PREVIEW_LIMITS["task_description"]),
        "details_preview": preview(task.details, PREVIEW_LIMITS["task_details"]),
        "project_name": project_name,
        "parent_task_id": task.parent_task_id,
    }
    out = _compact(record)
    out["has_subtasks"] = subtask_count > 0
    out["has_dependencies"] = bool(task.dependencies)
    out["is_recurring"] = bool(task.recurrence_pattern)
    out["is_overdue"] = overdue
    return out


def abbreviated_project(project: Any, stats: Mapping[str, int], hints: Mapping[str, bool]) -> dict[str, Any]:
    """Seed 001's ``AbbreviatedProject``: full short fields, a 500-character context preview, stats."""
    record = _compact(
        {
            "id": project.id,
            "name": project.name,
            "slug": project.slug,
            "status": project.status,
            "start_date": _day(project.start_date),
            "end_date": _day(project.end_date),
            "description": project.description,
            "executive_summary": project.executive_summary,
            "tags": list(project.tags or []),
            "context_preview": preview(project.context, PREVIEW_LIMITS["project_context"]),
        }
    )
    record.update(stats)
    record.update(hints)
    return record


def abbreviated_note(note: Any, *, project_name: str | None = None) -> dict[str, Any]:
    """Seed 001's ``AbbreviatedNote``: a 200-character content preview."""
    return _compact(
        {
            "id": note.id,
            "title": note.title,
            "category": note.category,
            "content_preview": preview(note.content, PREVIEW_LIMITS["note_content"]),
            "tags": list(note.tags or []),
            "created_at": note.created_at.date().isoformat(),
            "project_name": project_name,
        }
    )


def abbreviated_brain_dump(dump: Any, *, project_name: str | None = None) -> dict[str, Any]:
    """Seed 001's ``AbbreviatedBrainDump``: the summary whole (already concise), not the raw text."""
    record = _compact(
        {
            "id": dump.id,
            "title": dump.title,
            "ai_summary": dump.ai_summary,
            "status": dump.status,
            "created_at": dump.created_at.date().isoformat(),
            "project_name": project_name,
        }
    )
    record["operation_count"] = len(dump.operations or [])
    return record
