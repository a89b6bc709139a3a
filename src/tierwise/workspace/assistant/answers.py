"""The offline assistant's answers: tool results worded as short markdown.

:func:`render` turns one tool result (a :class:`~tierwise.workspace.assistant.reading.Step`) into the
answer :class:`~tierwise.workspace.assistant.model.OfflineAssistant` gives — a task or project list, an
item's details, calendar events, free slots, a created, updated or scheduled task — and never raises
on an odd shape; :func:`render_error` words a tool's error, and :func:`task_line` one task bullet.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from tierwise.workspace.assistant.reading import Step

__all__ = ["SHOWN", "more_line", "render", "render_error", "render_preview", "task_line"]

SHOWN = 10
"""How many items a list answer shows."""


def render_error(step: Step, doing: str) -> str:
    """The answer for a failed ``step``: "I couldn't <doing>: <the tool's message>"."""
    message = (step.error or "failed").strip()
    message = re.sub(r"^error:\s*", "", message, flags=re.I)
    if "tell the user:" in message:
        message = message.split("tell the user:", 1)[1].strip()
    if len(message) > 240:
        message = message[:239].rstrip() + "…"
    return f"I couldn't {doing}: {message}"


def _short(text: Any, limit: int) -> str:
    flat = re.sub(r"\s+", " ", str(text or "")).strip()
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip(" ,;:.") + "…"


def _block(text: Any) -> str:
    """A record's text as written: lines, markdown lists and paragraphs kept, never cut.

    Only trailing spaces and runs of blank lines are trimmed (a detail answer shows the whole text;
    previews, cut by the tools at a word, are for lists).
    """
    lines = [line.rstrip() for line in str(text or "").strip().splitlines()]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines))


def _when(value: Any) -> str:
    """``2026-11-24 14:00`` → ``Tue 24 Nov 14:00``; a bare day → ``Tue 24 Nov``."""
    text = str(value or "")
    for form, out in (("%Y-%m-%d %H:%M", "%a %d %b %H:%M"), ("%Y-%m-%d", "%a %d %b")):
        try:
            return datetime.strptime(text, form).strftime(out)
        except ValueError:
            continue
    return text


def task_line(task: Mapping[str, Any], *, project: bool = True) -> str:
    """One task as a bullet: ``- [priority] title · status · start date · project``."""
    parts = [f"- [{task.get('priority', '?')}] {task.get('title') or 'Untitled'}"]
    if task.get("status"):
        parts.append(str(task["status"]).replace("_", " "))
    if task.get("start_date"):
        parts.append(str(task["start_date"]) + (" (overdue)" if task.get("is_overdue") else ""))
    if project and task.get("project_name"):
        parts.append(str(task["project_name"]))
    return " · ".join(parts)


def render(step: Step, now: datetime, label: str = "") -> str:
    """The answer for one tool result (never raises on an odd shape)."""
    data = step.data or {}
    renderer = _RENDERERS.get(step.name)
    try:
        text = renderer(data, now, label) if renderer else ""
    except (TypeError, ValueError, AttributeError, KeyError):
        text = ""
    if not text:
        message = data.get("message")
        return _short(message, 300) if isinstance(message, str) and message else "Done."
    return text


def more_line(shown: int, total: Any, *, has_more: Any = False, at_least: bool = False) -> list[str]:
    """The bullet that says a list answer left items out (``- … and N more``), or none.

    ``total`` is the result's count; without one, ``has_more`` (a next page) still gets a bullet.
    ``at_least``: ``total`` counts only the rows read so far and a next page holds more (``N+``).
    """
    if isinstance(total, int) and not isinstance(total, bool) and total > shown:
        return [f"- … and {total - shown}{'+' if at_least else ''} more"]
    return ["- … and more on the next page"] if has_more and (at_least or not isinstance(total, int)) else []


def _rows(data: Mapping[str, Any], key: str) -> list[dict[str, Any]]:
    rows = data.get(key)
    return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []


def _r_tasks(data: Mapping[str, Any], now: datetime, label: str) -> str:
    tasks = _rows(data, "tasks")
    if not tasks:
        return "No tasks matched."
    lines = [f"**Tasks** ({data.get('total', len(tasks))}):"] + [task_line(t) for t in tasks[:SHOWN]]
    lines += more_line(min(SHOWN, len(tasks)), data.get("total"), has_more=data.get("has_more"))
    return "\n".join(lines) + "\n\nAsk about any of them for details."


def _r_projects(data: Mapping[str, Any], now: datetime, label: str) -> str:
    projects = _rows(data, "projects")
    if not projects:
        return "No projects matched."
    lines = [f"**Projects** ({data.get('total', len(projects))}):"]
    for p in projects[:SHOWN]:
        line = f"- **{p.get('name') or 'Untitled'}** · {p.get('status', '?')}"
        if "completion_percentage" in p:
            line += f" · {p['completion_percentage']}% done · {p.get('active_task_count', 0)} open tasks"
        lines.append(line)
    lines += more_line(min(SHOWN, len(projects)), data.get("total"), has_more=data.get("has_more"))
    return "\n".join(lines) + "\n\nAsk about any of them, or say which one you want to work on."


def _r_notes(data: Mapping[str, Any], now: datetime, label: str) -> str:
    notes = _rows(data, "notes")
    if not notes:
        return "No notes matched."
    lines = [f"**Notes** ({data.get('total', len(notes))}):"]
    for n in notes[:8]:
        tags = " · ".join(str(n[k]) for k in ("category", "project_name") if n.get(k))
        line = f"- **{n.get('title') or 'Untitled'}**" + (f" · {tags}" if tags else "")
        if n.get("content_preview"):
            line += f" — {_short(n['content_preview'], 90)}"
        lines.append(line)
    lines += more_line(min(8, len(notes)), data.get("total"), has_more=data.get("has_more"))
    return "\n".join(lines) + "\n\nAsk me to open any of them."


def _r_task(data: Mapping[str, Any], now: datetime, label: str) -> str:
    t = data.get("task")
    if not isinstance(t, dict):
        return ""
    project = t.get("project", {}).get("name") if isinstance(t.get("project"), dict) else None
    head = [
        f"**{t.get('title') or 'Untitled'}**",
        str(t.get("status", "?")).replace("_", " "),
        str(t.get("priority", "?")),
    ]
    lines = [" · ".join(head + ([project] if project else []))]
    when = (
        [str(t["start_date"]) + (" (overdue)" if t.get("is_overdue") else "")] if t.get("start_date") else []
    )
    when += [f"{t['duration_minutes']} min"] if t.get("duration_minutes") else []
    when += [f"repeats {t['recurrence_pattern']}"] if t.get("recurrence_pattern") else []
    if when:
        lines.append("- When: " + " · ".join(when))
    subtasks = _rows(t, "subtasks")
    if subtasks:
        finished = sum(1 for s in subtasks if s.get("status") == "done")
        names = ", ".join(str(s.get("title")) for s in subtasks[:5]) + (", …" if len(subtasks) > 5 else "")
        lines.append(f"- Subtasks ({finished}/{len(subtasks)} done): {names}")
    deps = _rows(t, "dependencies")
    if deps:
        lines.append("- Depends on: " + ", ".join(f"{d.get('title')} ({d.get('status')})" for d in deps[:4]))
    if isinstance(t.get("parent_task"), dict):
        lines.append(f"- Part of: {t['parent_task'].get('title')}")
    if t.get("description"):  # the record's own text, whole and as written (issue 33)
        lines += ["", _block(t["description"])]
    if t.get("details"):
        lines += ["", "**Details**", "", _block(t["details"])]
    return "\n".join(lines) + "\n\nI can update it, or schedule it (“schedule it tomorrow at 10”)."


def _r_project(data: Mapping[str, Any], now: datetime, label: str) -> str:
    p = data.get("project")
    if not isinstance(p, dict):
        return ""
    lines = [
        f"**{p.get('name') or 'Untitled'}** · {p.get('status', '?')} · {p.get('completion_percentage', 0)}% "
        f"complete · {p.get('active_task_count', 0)} open of {p.get('task_count', 0)} tasks"
    ]
    summary = p.get("executive_summary") or p.get("description")
    if summary:
        lines.append(_block(summary))
    if p.get("start_date") or p.get("end_date"):
        lines.append(f"- Period: {p.get('start_date') or '?'} → {p.get('end_date') or '?'}")
    if p.get("context"):  # the whole context, as written
        lines += ["", "**Context**", "", _block(p["context"]), ""]
    elif p.get("context_preview"):  # a list's preview of it (details have it whole)
        lines.append(f"- Context: {_short(p['context_preview'], 200)}")
    phases = _rows(p, "phases")
    today = now.date().isoformat()
    if phases:
        names = [
            f"**{x.get('name')}** (now)"
            if str(x.get("start_date") or "9") <= today <= str(x.get("end_date") or "0")
            else str(x.get("name"))
            for x in phases[:6]
        ]
        lines.append("- Phases: " + ", ".join(names))
    open_tasks = [t for t in _rows(p, "tasks") if t.get("status") != "done"]
    if open_tasks:
        lines.append("- Top open tasks:")
        lines += ["  " + task_line(t, project=False) for t in open_tasks[:5]]
    return "\n".join(lines) + "\n\nAsk about any task, or for this project's high-priority tasks."


def render_preview(kind: str, record: Mapping[str, Any], now: datetime) -> str:
    """One item from its preview (a list's abbreviated record), with what its details would add."""
    if kind == "project":
        text = _r_project({"project": dict(record)}, now, "")
        text = text.rsplit("\n\n", 1)[0]
        return text + "\n\nSay “work on it” for its full context, phases and top tasks."
    if kind == "task":
        lines = [task_line(record)]
        previews = ("description_preview", "details_preview")
        lines += [f"  {_short(record[k], 240)}" for k in previews if record.get(k)]
        return "\n".join(lines) + "\n\nAsk for more about it for its full text, subtasks and dependencies."
    tags = " · ".join(str(record[k]) for k in ("category", "project_name") if record.get(k))
    lines = [f"**{record.get('title') or 'Untitled'}**" + (f" · {tags}" if tags else "")]
    lines += [_short(record["content_preview"], 240)] if record.get("content_preview") else []
    return "\n".join(lines) + "\n\nAsk me to open it for the whole note."


def _r_note(data: Mapping[str, Any], now: datetime, label: str) -> str:
    n = data.get("note")
    if not isinstance(n, dict):
        return ""
    tags = " · ".join(str(n[k]) for k in ("category", "project_name") if n.get(k))
    lines = [f"**{n.get('title') or 'Untitled'}**" + (f" · {tags}" if tags else "")]
    if n.get("content"):
        lines += ["", _block(n["content"])]
    return "\n".join(lines)


def _r_events(data: Mapping[str, Any], now: datetime, label: str) -> str:
    events = _rows(data, "events")
    if not events:
        return f"Nothing on your calendar {label or 'in that window'}."
    lines = [f"**Calendar, {label}** ({data.get('total', len(events))} events):"]
    for e in events[:12]:
        start, end = str(e.get("start", "")), str(e.get("end", ""))
        if e.get("is_all_day"):
            when = f"{_when(start)} (all day)"
        else:
            when = (
                f"{_when(start)}–{end[11:16]}" if end[:10] == start[:10] else f"{_when(start)}–{_when(end)}"
            )
        extra = f" · {e['location']}" if e.get("location") else ""
        lines.append(f"- {when} {e.get('summary') or 'No title'}{extra}")
    lines += more_line(min(12, len(events)), data.get("total"), has_more=data.get("has_more"))
    return "\n".join(lines)


def _r_slots(data: Mapping[str, Any], now: datetime, label: str) -> str:
    slots = _rows(data, "slots")
    if not slots:
        return _short(data.get("message") or "No free slot in that window.", 300)
    lines = [f"**Free slots {label}**:"]
    lines += [
        f"- {_when(s.get('start'))}–{str(s.get('end', ''))[11:16]}"
        + (" (preferred)" if s.get("preferred") else "")
        for s in slots[:6]
    ]
    lines += more_line(min(6, len(slots)), data.get("total"), has_more=data.get("has_more"))
    return "\n".join(lines) + "\n\nSay “schedule <task> <day> at <time>” to book one."


def _r_created(data: Mapping[str, Any], now: datetime, label: str) -> str:
    t = data.get("task")
    if not isinstance(t, dict):
        return ""
    parts = [f"Created **{t.get('title')}** · [{t.get('priority', 'medium')}]"]
    if t.get("project_name"):
        parts.append(f"in {t['project_name']}")
    if t.get("start_date"):
        parts.append(f"starts {t['start_date']}")
    if t.get("is_recurring"):
        parts.append("recurring")
    return " · ".join(parts) + ".\n\nSay “schedule it tomorrow at 10” to put it on your calendar."


def _r_updated(data: Mapping[str, Any], now: datetime, label: str) -> str:
    t = data.get("task")
    if not isinstance(t, dict):
        return ""
    changed = [c for c in data.get("changed") or [] if isinstance(c, str)]
    if not changed:
        return f"**{t.get('title')}** already had those values; nothing changed."
    shown = {"start_date": t.get("start_date", "none")}
    changes = ", ".join(
        f"{c.replace('_', ' ')} → {str(shown.get(c, t.get(c))).replace('_', ' ')}" for c in changed
    )
    return f"Updated **{t.get('title')}**: {changes}."


def _r_scheduled(data: Mapping[str, Any], now: datetime, label: str) -> str:
    event = data.get("event")
    if not isinstance(event, dict):
        return ""
    start, end = str(event.get("start", "")), str(event.get("end", ""))
    line = f"Scheduled **{event.get('summary')}** on {_when(start)}–{end[11:16]}"
    line += f" ({label})" if label else ""
    message = str(data.get("message") or "")
    match = re.search(r"repeating (\w+)", message)
    line += f", repeating {match[1]}." if match else "."
    conflicts = _rows(data, "conflicts")
    if conflicts:
        line += "\n- Heads-up, it overlaps: " + ", ".join(
            f"{c.get('summary')} ({_when(c.get('start'))})" for c in conflicts[:3]
        )
    return line


_RENDERERS: dict[str, Callable[[Mapping[str, Any], datetime, str], str]] = {
    "list_tasks": _r_tasks,
    "search_projects": _r_projects,
    "search_notes": _r_notes,
    "get_task_details": _r_task,
    "get_project_details": _r_project,
    "get_note_details": _r_note,
    "get_calendar_events": _r_events,
    "find_available_slots": _r_slots,
    "create_task": _r_created,
    "update_task": _r_updated,
    "schedule_task": _r_scheduled,
}
