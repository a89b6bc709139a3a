"""The example conversation's tools and system prompt: the seed's definitions, in OpenAI's format.

Part of ``make_conversation.py`` (stdlib only): the tools follow the progressive disclosure
pattern (list/search → detail → action) that the system prompt teaches.
"""

from __future__ import annotations

from typing import Any

__all__ = ["SYSTEM_PROMPT", "tool_definitions"]

_TOOL_SPECS: list[tuple[str, str, dict[str, Any]]] = [
    (
        "list_tasks",
        """Get abbreviated list of tasks. Returns task summaries with first 100 chars of descriptions.
        Use get_task_details for complete information about specific tasks.""",
        {
            "type": "object",
            "properties": {
                "project_id": {"type": "string", "description": "Filter by specific project"},
                "status": {
                    "type": "array",
                    "items": {"type": "string", "enum": ["backlog", "in_progress", "done", "blocked"]},
                    "description": "Filter by status (multiple allowed)",
                },
                "priority": {
                    "type": "array",
                    "items": {"type": "string", "enum": ["low", "medium", "high"]},
                    "description": "Filter by priority (multiple allowed)",
                },
                "has_date": {"type": "boolean", "description": "Only tasks with start_date"},
                "limit": {
                    "type": "number",
                    "default": 20,
                    "maximum": 50,
                    "description": "Maximum tasks to return",
                },
                "sort_by": {
                    "type": "string",
                    "enum": ["priority", "start_date", "created_at"],
                    "default": "priority",
                },
            },
        },
    ),
    (
        "search_projects",
        """Search projects returning abbreviated info with 500 char context preview.
        Use get_project_details for full context and detailed information.""",
        {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Search in name, description, tags"},
                "status": {"type": "string", "enum": ["active", "paused", "completed", "archived"]},
                "has_active_tasks": {"type": "boolean", "description": "Only projects with active tasks"},
                "limit": {"type": "number", "default": 10, "maximum": 20},
            },
        },
    ),
    (
        "search_notes",
        """Search notes returning abbreviated content (200 char preview).
        Use get_note_details for full content.""",
        {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Search in title and content"},
                "project_id": {"type": "string", "description": "Filter by project"},
                "category": {"type": "string", "description": "Filter by category"},
                "limit": {"type": "number", "default": 10},
            },
        },
    ),
    (
        "get_task_details",
        """Get COMPLETE details for a specific task including full descriptions,
        all subtasks, dependencies, and parent project context.""",
        {
            "type": "object",
            "properties": {
                "task_id": {"type": "string", "description": "Task ID from list_tasks"},
                "include_subtasks": {
                    "type": "boolean",
                    "default": True,
                    "description": "Include full subtask details",
                },
                "include_project_context": {
                    "type": "boolean",
                    "default": False,
                    "description": "Include parent project context",
                },
            },
            "required": ["task_id"],
        },
    ),
    (
        "get_project_details",
        """Get COMPLETE project details including full context, core dimensions,
        all phases, and optionally tasks and notes.""",
        {
            "type": "object",
            "properties": {
                "project_id": {"type": "string", "description": "Project ID from search_projects"},
                "include_tasks": {
                    "type": "boolean",
                    "default": False,
                    "description": "Include abbreviated task list",
                },
                "include_phases": {
                    "type": "boolean",
                    "default": True,
                    "description": "Include project phases",
                },
                "include_notes": {
                    "type": "boolean",
                    "default": False,
                    "description": "Include recent notes (abbreviated)",
                },
                "include_brain_dumps": {
                    "type": "boolean",
                    "default": False,
                    "description": "Include recent brain dumps",
                },
            },
            "required": ["project_id"],
        },
    ),
    (
        "get_note_details",
        "Get complete note content",
        {
            "type": "object",
            "properties": {"note_id": {"type": "string", "description": "Note ID from search_notes"}},
            "required": ["note_id"],
        },
    ),
    (
        "create_task",
        "Create a new task",
        {
            "type": "object",
            "properties": {
                "title": {"type": "string"},
                "description": {"type": "string"},
                "project_id": {"type": "string"},
                "priority": {"type": "string", "enum": ["low", "medium", "high"], "default": "medium"},
                "task_type": {"type": "string", "enum": ["one_off", "recurring"], "default": "one_off"},
                "duration_minutes": {"type": "number", "default": 60},
                "start_date": {"type": "string", "format": "date"},
                "parent_task_id": {"type": "string", "description": "Create as subtask of another task"},
            },
            "required": ["title"],
        },
    ),
    (
        "find_available_slots",
        "Find available time slots using CalendarService.findAvailableSlots",
        {
            "type": "object",
            "properties": {
                "timeMin": {"type": "string", "format": "date-time"},
                "timeMax": {"type": "string", "format": "date-time"},
                "duration_minutes": {"type": "number", "default": 60},
                "preferred_hours": {
                    "type": "array",
                    "items": {"type": "number"},
                    "description": "Hours 0-23, e.g. [9,10,11,14,15,16]",
                },
            },
            "required": ["timeMin", "timeMax"],
        },
    ),
    (
        "schedule_task",
        "Schedule task to calendar using CalendarService.scheduleTask",
        {
            "type": "object",
            "properties": {
                "task_id": {"type": "string"},
                "start_time": {"type": "string", "format": "date-time"},
                "duration_minutes": {"type": "number"},
                "recurrence_pattern": {
                    "type": "string",
                    "enum": ["daily", "weekdays", "weekly", "biweekly", "monthly"],
                },
            },
            "required": ["task_id", "start_time"],
        },
    ),
]


def tool_definitions() -> list[dict[str, Any]]:
    """Return the tool definitions in OpenAI's ``{"type": "function", "function": {...}}`` format."""
    return [
        {
            "type": "function",
            "function": {"name": name, "description": " ".join(desc.split()), "parameters": params},
        }
        for name, desc, params in _TOOL_SPECS
    ]


SYSTEM_PROMPT = """\
You are the assistant inside Maya Chen's productivity workspace. Maya is a product lead who also \
writes a part-time PhD thesis and runs a home renovation, so she juggles several projects at once \
and switches between them often. Help her decide what matters, keep her lists honest, and turn \
loose thoughts into concrete tasks.

Current date: Tuesday 2026-10-13. Timezone: America/New_York (UTC-04:00). Working hours: \
09:00-17:30.

## Progressive information access

Your tools follow a progressive disclosure pattern:

1. LIST/SEARCH tools return abbreviated data: list_tasks (100-char previews), search_projects \
(500-char context preview), search_notes (200-char previews).
2. DETAIL tools return complete data: get_task_details, get_project_details, get_note_details.
3. ACTION tools change data: create_task.
4. CALENDAR tools: find_available_slots, schedule_task.

Always follow this pattern:
- Start with a list or search call to find the relevant items.
- Answer from the abbreviated results when they are enough.
- Call a detail tool only for the item the user asks about, or when a preview is cut off exactly \
where the answer is. Never fetch details for a whole list.
- Reuse ids and facts from earlier tool results in this conversation instead of fetching them again.
- When two lookups are independent, call them in parallel in the same turn.

## Actions

- Create or schedule only what Maya asked for, or what she confirmed after you proposed it.
- Confirm every change in one line with the new id, date and time.
- Times are local (UTC-04:00). Prefer her focus hours (9-11, 14-16) for deep work and never \
double-book an existing event.

## Brain dumps

When Maya writes a long, unstructured message, sort it by project, separate actions from \
worries, check what already exists before proposing new tasks, and ask before creating more than \
two tasks at once.

## Style

- Be concise, calm and practical; no pep talk.
- Use short bullets; lead with the answer, then the detail.
- Name tasks by title, with the id in backticks when she may act on it.
- If something is blocked or overdue, say so plainly and suggest the next step.
- If you are unsure, say what you checked and what is missing."""
