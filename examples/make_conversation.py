"""Write ``examples/conversation.json``: one long working session with a productivity assistant.

The conversation is an OpenAI-style request body (``{"messages": [...], "tools": [...]}``) for the
reference app of tierwise: an assistant over one person's projects, tasks, notes, brain dumps and
calendar. Its tools are the seed's list/search → detail → action tools (progressive disclosure):
list and search results are abbreviated (previews, totals, ``has_more``), detail results are full.

Everything is fixed text and data, so the output is byte-for-byte the same on every run. Run it
from anywhere (stdlib only, no network)::

    python examples/make_conversation.py
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

OUT = Path(__file__).with_name("conversation.json")
TODAY = "2026-10-13"
TZ = "-04:00"

# ---------------------------------------------------------------------------------------------
# Tools: the seed's definitions (names, descriptions and JSON schemas), in OpenAI's format.
# ---------------------------------------------------------------------------------------------

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


# ---------------------------------------------------------------------------------------------
# Data: projects, tasks and notes. List results are derived from these, so ids and previews stay
# consistent between the abbreviated and the detailed views.
# ---------------------------------------------------------------------------------------------


def preview(text: str | None, limit: int) -> str | None:
    """Return the first ``limit`` characters of ``text``, with ``...`` if it was cut."""
    if text is None:
        return None
    return text if len(text) <= limit else text[:limit].rstrip() + "..."


PROJECTS: dict[str, dict[str, Any]] = {
    "proj_q4_launch": {
        "id": "proj_q4_launch",
        "name": "Q4 Product Launch",
        "slug": "q4-product-launch",
        "status": "active",
        "start_date": "2026-08-03",
        "end_date": "2026-11-17",
        "description": "Launch Atlas Insights, the AI weekly-report add-on, to enterprise customers.",
        "executive_summary": "Atlas Insights ships Nov 17 as a paid add-on. API v2 is done; the docs "
        "portal and the pricing page are the critical path. Goal: 12 beta customers converted by Dec 31.",
        "tags": ["work", "launch", "atlas"],
        "context": "## Goal\nShip Atlas Insights (AI-generated weekly reports for enterprise admins) as a "
        "paid add-on on Nov 17, 2026, and convert 12 of the 19 beta customers to paid by Dec 31.\n\n"
        "## Status (Oct 12)\nAPI v2 is feature-complete and load-tested. The docs portal is the long pole: "
        "search indexing and the SDK quickstarts are left. The pricing page is blocked on legal review of "
        "the tier wording (Dana Whitfield). Support readiness review with Priya Nair on Oct 16. Beta "
        "webinar on Oct 22; the deck is not started.\n\n## Risks\n- Legal sign-off after Oct 20 pushes the "
        "pricing page and the launch email.\n- Docs search not indexed; Algolia crawler needs the prod "
        "domain.",
        "task_count": 34,
        "active_task_count": 7,
        "completed_task_count": 19,
        "completion_percentage": 56,
        "has_phases": True,
        "has_notes": True,
        "has_brain_dumps": True,
    },
    "proj_kitchen_reno": {
        "id": "proj_kitchen_reno",
        "name": "Kitchen renovation",
        "slug": "kitchen-renovation",
        "status": "active",
        "start_date": "2026-09-01",
        "end_date": "2026-12-12",
        "description": "Gut and redo the kitchen: new layout, cabinets, counters, lighting. Budget $38,000.",
        "executive_summary": "Demo and rough plumbing are done. Electrical rough-in inspection is Oct 16. "
        "Cabinets slipped to Oct 27. Countertop material still undecided.",
        "tags": ["home", "renovation"],
        "context": "## Scope\nFull kitchen remodel with Ruiz Builders (Luis Ruiz, GC). Move the sink to the "
        "island, add a pantry wall, new cabinets (Kessler Cabinetry, shaker, sage green), new counters, "
        "under-cabinet and pendant lighting, new appliances (ordered, arrive Nov 3).\n\n## Budget\n$38,000 "
        "total incl. 10% contingency ($3,450). Spent or committed so far: $24,300. Payment milestones: "
        "#1 paid (demo), #2 paid (rough-in), #3 $9,500 at cabinet install, #4 $4,200 at completion.\n\n"
        "## Status (Oct 12)\nDemo done Sep 12. Rough plumbing done and inspected Oct 2. Electrical "
        "rough-in in progress; city inspection booked Thu Oct 16, 08:00-12:00 window. Kessler pushed "
        "cabinet delivery from Oct 20 to Oct 27. Counter templating can only happen after the cabinets "
        "are installed, and the fabricator needs the material choice 10 days before templating.\n\n"
        "## Decisions pending\n- Countertop: quartz (Calacatta look) vs butcher block (walnut).\n"
        "- Backsplash tile.\n- Pendant lights (3 over the island).",
        "task_count": 22,
        "active_task_count": 4,
        "completed_task_count": 9,
        "completion_percentage": 41,
        "has_phases": True,
        "has_notes": True,
        "has_brain_dumps": True,
        "phases": [
            {
                "id": "ph_kr_1",
                "name": "Design and ordering",
                "order": 1,
                "start_date": "2026-08-01",
                "end_date": "2026-09-10",
                "status": "done",
                "description": "Layout, cabinet order, appliance order, permits.",
            },
            {
                "id": "ph_kr_2",
                "name": "Demo and rough-in",
                "order": 2,
                "start_date": "2026-09-11",
                "end_date": "2026-10-17",
                "status": "in_progress",
                "description": "Demo, rough plumbing, rough electrical, inspections.",
            },
            {
                "id": "ph_kr_3",
                "name": "Cabinets and counters",
                "order": 3,
                "start_date": "2026-10-27",
                "end_date": "2026-11-20",
                "status": "planned",
                "description": "Cabinet install, counter templating and install, sink hookup.",
            },
            {
                "id": "ph_kr_4",
                "name": "Finish",
                "order": 4,
                "start_date": "2026-11-21",
                "end_date": "2026-12-12",
                "status": "planned",
                "description": "Backsplash, lighting, appliances, paint, punch list.",
            },
        ],
    },
    "proj_thesis_ch3": {
        "id": "proj_thesis_ch3",
        "name": "Thesis chapter 3",
        "slug": "thesis-chapter-3",
        "status": "active",
        "start_date": "2026-07-01",
        "end_date": "2026-11-30",
        "description": "Chapter 3 (Methods and pilot study) of the dissertation on async decision records.",
        "executive_summary": "Full draft exists; methods section 3.2 needs a rewrite after advisor feedback. "
        "Advisor meeting with Prof. Okafor on Thu Oct 15.",
        "tags": ["phd", "writing"],
        "context": "Dissertation: how distributed product teams use written decision records. Chapter 3 "
        "covers the interview study (n=24) and the coding procedure. Prof. Adaeze Okafor (advisor) wants a "
        "complete chapter draft before the Nov 30 committee check-in. Biweekly advisor meetings, next one "
        "Thu Oct 15 at 14:00.",
        "task_count": 15,
        "active_task_count": 2,
        "completed_task_count": 6,
        "completion_percentage": 40,
        "has_phases": False,
        "has_notes": True,
        "has_brain_dumps": True,
    },
    "proj_team_offsite": {
        "id": "proj_team_offsite",
        "name": "Team offsite",
        "slug": "team-offsite",
        "status": "active",
        "start_date": "2026-09-15",
        "end_date": "2026-11-06",
        "description": "Two-day offsite for the 14-person product team, Nov 5-6, Hudson Valley.",
        "executive_summary": "Dates fixed (Nov 5-6). Venue not booked yet: Wildflower Farm is the "
        "favourite. Budget $9,800 approved by Sam.",
        "tags": ["work", "team", "events"],
        "context": "Purpose: 2027 planning and team time after the launch. 14 people, one night. Budget "
        "$9,800 (approved by Sam Ortiz, VP Product) covering venue, food, transport, one activity. "
        "Agenda owner: Maya; logistics helper: Jonah.",
        "task_count": 11,
        "active_task_count": 2,
        "completed_task_count": 4,
        "completion_percentage": 36,
        "has_phases": False,
        "has_notes": True,
        "has_brain_dumps": False,
    },
}


def _task(
    id: str,
    title: str,
    project_id: str,
    status: str,
    priority: str,
    start_date: str | None,
    duration: int,
    description: str,
    details: str | None = None,
    subtasks: list[dict[str, Any]] | None = None,
    dependencies: list[dict[str, Any]] | None = None,
    recurrence: str | None = None,
) -> dict[str, Any]:
    """Return one task record in the detail (complete) shape."""
    return {
        "id": id,
        "title": title,
        "status": status,
        "priority": priority,
        "project_id": project_id,
        "project_name": PROJECTS[project_id]["name"],
        "start_date": start_date,
        "duration_minutes": duration,
        "task_type": "recurring" if recurrence else "one_off",
        "recurrence_pattern": recurrence,
        "description": description,
        "details": details,
        "subtasks": subtasks or [],
        "dependencies": dependencies or [],
    }


TASKS: dict[str, dict[str, Any]] = {
    t["id"]: t
    for t in [
        _task(
            "task_q4_101",
            "Finish API documentation portal",
            "proj_q4_launch",
            "in_progress",
            "high",
            "2026-10-12",
            240,
            "Ship the public docs portal for API v2: interactive examples, authentication guide, and "
            "quickstarts for the Python, JavaScript and Go SDKs. Must be live before the Oct 22 beta "
            "webinar.",
            "Stack: Next.js + MDX, Shiki highlighting, OpenAPI 3.1 reference generated from the spec, "
            "Algolia DocSearch. Open items: search indexing needs the prod domain (docs.atlas.example), the "
            "Go quickstart is unreviewed, and the rate-limit page still shows v1 numbers (600/min, now "
            "1,200/min). Reviewer: Tom (DevRel).",
            subtasks=[
                {"id": "sub_q4_101a", "title": "Set up docs site and CI preview", "status": "done"},
                {"id": "sub_q4_101b", "title": "Generate API reference from OpenAPI spec", "status": "done"},
                {"id": "sub_q4_101c", "title": "Write auth guide (OAuth + API keys)", "status": "done"},
                {"id": "sub_q4_101d", "title": "SDK quickstarts (Py/JS/Go)", "status": "in_progress"},
                {"id": "sub_q4_101e", "title": "Fix rate-limit page for v2 limits", "status": "backlog"},
                {"id": "sub_q4_101f", "title": "Point Algolia crawler at prod domain", "status": "blocked"},
            ],
            dependencies=[
                {"id": "task_q4_093", "title": "Move docs to prod domain", "status": "in_progress"}
            ],
        ),
        _task(
            "task_q4_104",
            "Publish pricing page for Insights tiers",
            "proj_q4_launch",
            "blocked",
            "high",
            "2026-10-09",
            90,
            "Publish the Atlas Insights pricing page (Team, Pro, Enterprise) with the tier comparison "
            "table, FAQ and the annual-discount toggle. Copy is final apart from tier wording under legal "
            "review.",
            "Blocked by legal review (Dana Whitfield). Design is approved and built behind the flag "
            "pricing_insights_v1. Once legal signs off: update copy, flip the flag, tell Marketing (Lena) so "
            "the launch email can link to it.",
            dependencies=[
                {"id": "task_q4_099", "title": "Legal review of tier wording", "status": "in_progress"}
            ],
        ),
        _task(
            "task_q4_107",
            "Beta customer webinar deck",
            "proj_q4_launch",
            "backlog",
            "high",
            "2026-10-19",
            180,
            "Deck for the Oct 22 beta webinar: what Insights does, live demo script, pricing, migration "
            "path from the beta, and Q&A plan. 20 minutes plus 10 minutes of questions.",
        ),
        _task(
            "task_q4_109",
            "Launch readiness review with Support",
            "proj_q4_launch",
            "backlog",
            "high",
            "2026-10-16",
            60,
            "Walk Priya Nair's support team through Insights: known limits, escalation path, macros for "
            "the top 10 expected tickets. Bring the draft FAQ.",
        ),
        _task(
            "task_q4_112",
            "Finalize v2 migration guide",
            "proj_q4_launch",
            "in_progress",
            "high",
            "2026-10-14",
            120,
            "Guide for beta customers moving from the v1 reports endpoint to v2: breaking changes, code "
            "diffs, and a checklist. Draft is 80% done; needs the webhook section.",
        ),
        _task(
            "task_kr_305",
            "Confirm cabinet delivery date with Kessler",
            "proj_kitchen_reno",
            "in_progress",
            "high",
            "2026-10-13",
            30,
            "Kessler moved delivery from Oct 20 to Oct 27. Get the new date in writing and ask whether the "
            "pantry tall units ship with the rest.",
        ),
        _task(
            "task_kr_306",
            "Pick backsplash tile",
            "proj_kitchen_reno",
            "backlog",
            "medium",
            "2026-11-02",
            60,
            "Choose between the zellige sample (white) and the 3x12 matte green. Needed by early November "
            "for the finish phase.",
        ),
        _task(
            "task_kr_310",
            "Order pendant lights",
            "proj_kitchen_reno",
            "backlog",
            "medium",
            "2026-10-23",
            30,
            "Three pendants over the island, max $900 total. Shortlist in the 'Lighting ideas' note.",
        ),
        _task(
            "task_kr_311",
            "Payment milestone #3 ($9,500)",
            "proj_kitchen_reno",
            "backlog",
            "medium",
            "2026-10-28",
            15,
            "Pay Ruiz Builders milestone #3 when the cabinets are installed and checked.",
        ),
        _task(
            "task_th_203",
            "Rewrite 3.2 Methods: coding procedure",
            "proj_thesis_ch3",
            "in_progress",
            "high",
            "2026-10-12",
            120,
            "Rewrite section 3.2 so the coding procedure is reproducible: codebook versions, who coded "
            "what, how disagreements were resolved, and the inter-rater reliability numbers.",
        ),
        _task(
            "task_th_205",
            "Re-run inter-rater reliability on the 40-excerpt sample",
            "proj_thesis_ch3",
            "backlog",
            "high",
            "2026-10-14",
            90,
            "Recompute Cohen's kappa with codebook v3 on the 40-excerpt sample coded by Maya and Wen.",
        ),
        _task(
            "task_th_207",
            "Update Table 3.1 participant demographics",
            "proj_thesis_ch3",
            "backlog",
            "medium",
            None,
            45,
            "Add team size and remote/hybrid split to Table 3.1; two participants are missing role tenure.",
        ),
        _task(
            "task_th_211",
            "Prep slides for advisor meeting",
            "proj_thesis_ch3",
            "backlog",
            "medium",
            "2026-10-15",
            45,
            "Three slides: what changed in 3.2, kappa results, open questions on the pilot study scope.",
        ),
        _task(
            "task_th_198",
            "Send Okafor the revised chapter outline",
            "proj_thesis_ch3",
            "backlog",
            "medium",
            "2026-10-09",
            20,
            "Email the revised outline (3.1-3.5) so she can read it before Thursday.",
        ),
        _task(
            "task_off_401",
            "Draft offsite agenda",
            "proj_team_offsite",
            "in_progress",
            "medium",
            "2026-10-21",
            90,
            "Day 1: 2027 bets and planning; day 2: retro of the launch and team time. Leave room for one "
            "outdoor activity.",
        ),
        _task(
            "task_off_403",
            "Book venue",
            "proj_team_offsite",
            "backlog",
            "high",
            "2026-10-16",
            30,
            "Decide between Wildflower Farm Retreat and Catskill Lodge, then pay the deposit to hold Nov "
            "5-6.",
        ),
        _task(
            "task_off_405",
            "Send dietary and travel form",
            "proj_team_offsite",
            "backlog",
            "low",
            "2026-10-10",
            15,
            "Google Form for dietary needs, rooming, and who needs a ride from the city.",
        ),
    ]
}

# Tasks the assistant creates during the session, with their creation times.
CREATED = {
    "task_q4_118": "2026-10-13T13:22:00Z",
    "task_kr_315": "2026-10-13T14:06:00Z",
    "task_kr_314": "2026-10-13T14:06:01Z",
}
TASKS.update(
    (t["id"], t)
    for t in [
        _task(
            "task_q4_118",
            "Send Dana the revised pricing tier table",
            "proj_q4_launch",
            "backlog",
            "high",
            "2026-10-14",
            45,
            "Apply Dana's 4 asks from the Oct 8 legal sync (note_q4_017) to 'Insights tiers v4': 500 "
            "reports/month + fair-use clause, overage prices for every tier, SOC 2 badge on Enterprise "
            "only, 'save 2 months'. Send by Wed Oct 14 EOD. Ask Sam about grandfathering beta customers.",
        ),
        _task(
            "task_kr_315",
            "Approve electrical change order with Luis",
            "proj_kitchen_reno",
            "backlog",
            "high",
            "2026-10-13",
            15,
            "Knob-and-tube behind the old sink wall + dedicated island circuit, ~$1,850 from contingency. "
            "Luis needs a yes by Wed Oct 14 to keep the Oct 16 inspection.",
        ),
        _task(
            "task_kr_314",
            "Decide countertop material",
            "proj_kitchen_reno",
            "backlog",
            "high",
            "2026-10-16",
            60,
            "Quartz (Stoneworks, $6,480) vs walnut butcher block (Hearth & Grain, $4,150, no undermount on "
            "island). See note_kr_031. Decide by Fri Oct 16 so templating follows the Oct 27 cabinet "
            "install.",
        ),
    ]
)

TASK_META = {
    "task_q4_101": ("2026-09-02T10:14:00Z", "2026-10-12T21:40:00Z"),
    "task_q4_104": ("2026-09-08T15:02:00Z", "2026-10-09T18:25:00Z"),
    "task_th_203": ("2026-09-25T12:00:00Z", "2026-10-12T23:05:00Z"),
}


def abbreviated(task_id: str) -> dict[str, Any]:
    """Return the list_tasks (abbreviated) view of a task."""
    t = TASKS[task_id]
    overdue = bool(t["start_date"] and t["start_date"] < TODAY and t["status"] != "done")
    return {
        "id": t["id"],
        "title": t["title"],
        "status": t["status"],
        "priority": t["priority"],
        "start_date": t["start_date"],
        "duration_minutes": t["duration_minutes"],
        "description_preview": preview(t["description"], 100),
        "details_preview": preview(t["details"], 100),
        "has_subtasks": bool(t["subtasks"]),
        "has_dependencies": bool(t["dependencies"]),
        "is_recurring": t["recurrence_pattern"] is not None,
        "project_name": t["project_name"],
        "is_overdue": overdue,
    }


def task_list(ids: list[str], total: int | None = None) -> dict[str, Any]:
    """Return a list_tasks result for ``ids`` (``total`` may exceed the page)."""
    total = len(ids) if total is None else total
    return {
        "tasks": [abbreviated(i) for i in ids],
        "total": total,
        "has_more": total > len(ids),
        "message": f"Showing {len(ids)} of {total} tasks. Use get_task_details(task_id) for full "
        "information.",
    }


def task_detail(task_id: str, include_project_context: bool = False) -> dict[str, Any]:
    """Return a get_task_details result (complete task)."""
    t = dict(TASKS[task_id])
    created, updated = TASK_META.get(task_id, ("2026-09-20T09:00:00Z", "2026-10-10T16:00:00Z"))
    p = PROJECTS[t["project_id"]]
    t["project"] = {"id": p["id"], "name": p["name"], "status": p["status"]}
    t["created_at"], t["updated_at"] = created, updated
    t["project_context"] = (
        {"context": p["context"], "executive_summary": p["executive_summary"]}
        if include_project_context
        else None
    )
    t["_complete"] = True
    return {
        "task": t,
        "message": "Complete task details loaded including full descriptions and relationships.",
    }


def project_abbreviated(project_id: str) -> dict[str, Any]:
    """Return the search_projects (abbreviated) view of a project."""
    p = PROJECTS[project_id]
    keys = (
        "id",
        "name",
        "slug",
        "status",
        "start_date",
        "end_date",
        "description",
        "executive_summary",
        "tags",
    )
    out = {k: p[k] for k in keys}
    out["context_preview"] = preview(p["context"], 500)
    for k in (
        "task_count",
        "active_task_count",
        "completed_task_count",
        "completion_percentage",
        "has_phases",
        "has_notes",
        "has_brain_dumps",
    ):
        out[k] = p[k]
    return out


NOTES: dict[str, dict[str, Any]] = {
    "note_q4_017": {
        "id": "note_q4_017",
        "title": "Legal sync - Insights pricing tiers (Oct 8)",
        "category": "meeting",
        "tags": ["legal", "pricing"],
        "created_at": "2026-10-08T16:05:00Z",
        "project_name": "Q4 Product Launch",
        "content": "Attendees: Dana Whitfield (Legal), Lena Park (Marketing), Maya.\n\nDana's asks before "
        "sign-off:\n1. Drop 'unlimited reports' from the Pro tier. Use 'up to 500 reports/month' and add a "
        "fair-use clause that links to the ToS section 7.3.\n2. The overage table must show per-report "
        "prices for every tier, not just Pro ($0.04 Team, $0.03 Pro, contract for Enterprise).\n3. The "
        "'SOC 2 Type II' badge can only appear under Enterprise until the report is renewed (expected Jan).\n"
        "4. Annual discount wording: 'save 2 months' is fine, '17% off' is not (rounding).\n\nNext steps:\n"
        "- Maya sends Dana the revised tier table (Google Sheet 'Insights tiers v4') by Wed Oct 14 EOD.\n"
        "- Dana turns around sign-off within 2 business days of getting it, so Fri Oct 16 at best.\n- Lena "
        "holds the launch email draft until the page is live.\n\nOpen question: do we grandfather beta "
        "customers at Team price for 6 months? Dana is fine legally; needs Sam's call.",
    },
    "note_q4_021": {
        "id": "note_q4_021",
        "title": "Pricing FAQ draft",
        "category": "draft",
        "tags": ["pricing", "faq"],
        "created_at": "2026-10-05T13:30:00Z",
        "project_name": "Q4 Product Launch",
        "content": "Q: What counts as a report? A: One generated weekly summary for one workspace. Q: What "
        "happens if I go over? A: Overage is billed per report at the end of the month.",
    },
    "note_kr_031": {
        "id": "note_kr_031",
        "title": "Countertop quotes (Stoneworks vs Hearth & Grain)",
        "category": "research",
        "tags": ["kitchen", "quotes"],
        "created_at": "2026-10-06T19:12:00Z",
        "project_name": "Kitchen renovation",
        "content": "Stoneworks (quartz, Calacatta Laza, 52 sq ft incl. island, undermount cutout): $6,480, "
        "templating 10 days after order, install 8-10 days after templating. Hearth & Grain (walnut butcher "
        "block, 1.75in, oiled): $4,150, 3 weeks lead time, needs re-oiling every few months and no "
        "undermount sink on the island.",
    },
    "note_kr_027": {
        "id": "note_kr_027",
        "title": "Lighting ideas",
        "category": "ideas",
        "tags": ["kitchen", "lighting"],
        "created_at": "2026-09-21T20:40:00Z",
        "project_name": "Kitchen renovation",
        "content": "Pendants: Schoolhouse Isaac (brass, $240 each), Rejuvenation Cedar & Moss ($195), "
        "Hay PC Double ($289). Under-cabinet: 2700K LED strips, dimmable.",
    },
    "note_th_044": {
        "id": "note_th_044",
        "title": "Advisor meeting 2026-10-01 - Okafor feedback",
        "category": "meeting",
        "tags": ["advisor", "methods"],
        "created_at": "2026-10-01T18:50:00Z",
        "project_name": "Thesis chapter 3",
        "content": "Prof. Okafor's feedback on the chapter 3 draft:\n\nMethods (3.2) - main concern\n- The "
        "coding procedure reads as if it happened once. Make the iterations explicit: open coding on 6 "
        "transcripts, codebook v1, two rounds of revision, v3 applied to all 24.\n- Report inter-rater "
        "reliability properly: who double-coded, sample size, kappa per code family, and how "
        "disagreements were resolved. The current 'substantial agreement' sentence is not enough; she "
        "wants a table.\n- Say why the 40-excerpt sample is representative (stratified by team size?).\n\n"
        "Sampling (3.1)\n- Fine. Add the recruitment timeline and the 3 people who dropped out.\n\nPilot "
        "study (3.4)\n- Cut it down to one page or move it to an appendix; it distracts from the main "
        "study.\n\n"
        "Writing\n- Too many forward references to chapter 5.\n- Use 'decision record', not 'ADR', outside "
        "the software-team context.\n\nFor Oct 15: bring the rewritten 3.2 and the kappa table. She will "
        "read 3.2 before the meeting if it arrives by Wednesday evening.",
    },
    "note_th_039": {
        "id": "note_th_039",
        "title": "Codebook v3 changes",
        "category": "research",
        "tags": ["codebook"],
        "created_at": "2026-09-28T22:15:00Z",
        "project_name": "Thesis chapter 3",
        "content": "Merged 'tradeoff framing' into 'rationale'. Split 'escalation' into 'escalation-up' and "
        "'escalation-sideways'. 31 codes in 6 families.",
    },
    "note_off_052": {
        "id": "note_off_052",
        "title": "Venue shortlist",
        "category": "research",
        "tags": ["offsite", "venue"],
        "created_at": "2026-10-02T14:20:00Z",
        "project_name": "Team offsite",
        "content": "Wildflower Farm Retreat: $6,900 for 14 incl. catering; deposit $2,400 due Oct 16 to hold "
        "Nov 5-6. Catskill Lodge: $5,600 + catering (~$1,900), hold expires Oct 14. Wildflower has a meeting "
        "barn and 16 rooms; Catskill is 2h from the city.",
    },
    "note_off_055": {
        "id": "note_off_055",
        "title": "Activity ideas",
        "category": "ideas",
        "tags": ["offsite"],
        "created_at": "2026-10-03T09:10:00Z",
        "project_name": "Team offsite",
        "content": "Guided hike (free, weather), cooking class at the venue ($45 pp), pottery ($60 pp).",
    },
}


def note_hits(ids: list[str], total: int | None = None) -> dict[str, Any]:
    """Return a search_notes result (200-char previews)."""
    notes = []
    for i in ids:
        n = NOTES[i]
        notes.append(
            {
                "id": n["id"],
                "title": n["title"],
                "category": n["category"],
                "content_preview": preview(n["content"], 200),
                "tags": n["tags"],
                "created_at": n["created_at"],
                "project_name": n["project_name"],
            }
        )
    total = len(ids) if total is None else total
    return {
        "notes": notes,
        "total": total,
        "has_more": total > len(ids),
        "message": f"Found {total} notes. Use get_note_details(note_id) for full content.",
    }


def note_detail(note_id: str) -> dict[str, Any]:
    """Return a get_note_details result (complete note)."""
    return {
        "note": dict(NOTES[note_id], updated_at=NOTES[note_id]["created_at"]),
        "message": "Complete note loaded.",
    }


# ---------------------------------------------------------------------------------------------
# The conversation.
# ---------------------------------------------------------------------------------------------


class Conversation:
    """Accumulates messages; tool calls get deterministic ids and are followed by their results."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT}]
        self._calls = 0

    def user(self, text: str) -> None:
        """Add a user message."""
        self.messages.append({"role": "user", "content": text})

    def assistant(self, text: str) -> None:
        """Add an assistant answer."""
        self.messages.append({"role": "assistant", "content": text})

    def calls(self, *specs: tuple[str, dict[str, Any], dict[str, Any]], text: str | None = None) -> None:
        """Add one assistant message calling every ``(name, arguments, result)``, then each result."""
        tool_calls, results = [], []
        for name, args, result in specs:
            self._calls += 1
            digest = hashlib.sha256(f"tierwise-example:{self._calls}:{name}".encode()).hexdigest()
            call_id = f"call_{digest[:24]}"
            tool_calls.append(
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args)},
                }
            )
            results.append({"role": "tool", "tool_call_id": call_id, "content": json.dumps(result)})
        self.messages.append({"role": "assistant", "content": text, "tool_calls": tool_calls})
        self.messages.extend(results)


def created(task_id: str) -> dict[str, Any]:
    """Return a create_task result for one of the tasks in :data:`CREATED`."""
    t = TASKS[task_id]
    keys = (
        "id",
        "title",
        "status",
        "priority",
        "project_id",
        "project_name",
        "start_date",
        "duration_minutes",
    )
    task = {k: t[k] for k in keys}
    task["task_type"] = t["task_type"]
    task["created_at"] = CREATED[task_id]
    return {"task": task, "message": f"Task created: {t['title']}."}


def create_args(task_id: str) -> dict[str, Any]:
    """Return the create_task arguments the assistant sends for one of the :data:`CREATED` tasks."""
    t = TASKS[task_id]
    keys = ("title", "description", "project_id", "priority", "duration_minutes", "start_date")
    return {k: t[k] for k in keys}


def build() -> dict[str, Any]:
    """Return the whole request body: messages (last one from the user) and tools."""
    c = Conversation()

    # -- Morning overview -------------------------------------------------------------------
    c.user("Morning! Before I dive in, give me a quick overview of my active projects.")
    c.calls(
        (
            "search_projects",
            {"status": "active", "limit": 10},
            {
                "projects": [project_abbreviated(p) for p in PROJECTS],
                "total": 4,
                "message": "Found 4 projects. Use get_project_details(project_id) for full context.",
            },
        ),
    )
    c.assistant(
        "Four active projects:\n\n"
        "- **Q4 Product Launch** (56%, ends Nov 17): docs portal and pricing page are the critical path; "
        "pricing is waiting on legal.\n"
        "- **Kitchen renovation** (41%): electrical inspection Thu Oct 16; cabinets slipped to Oct 27; "
        "countertop still undecided.\n"
        "- **Thesis chapter 3** (40%): methods section 3.2 needs a rewrite before Thursday's meeting "
        "with Prof. Okafor.\n"
        "- **Team offsite** (36%, Nov 5-6): venue not booked yet.\n\n"
        "Want to start with the launch?"
    )

    # -- Launch: high-priority tasks ----------------------------------------------------------
    c.user("Yes. What are my high priority tasks for the Q4 launch?")
    c.calls(
        (
            "list_tasks",
            {
                "project_id": "proj_q4_launch",
                "priority": ["high"],
                "status": ["in_progress", "backlog", "blocked"],
                "sort_by": "start_date",
                "limit": 20,
            },
            task_list(["task_q4_104", "task_q4_101", "task_q4_112", "task_q4_109", "task_q4_107"]),
        ),
    )
    c.assistant(
        "Five high-priority launch tasks, by date:\n\n"
        "- **Publish pricing page** `task_q4_104`: blocked, was due Oct 9 (overdue).\n"
        "- **Finish API documentation portal** `task_q4_101`: in progress since yesterday, 4h block.\n"
        "- **Finalize v2 migration guide** `task_q4_112`: in progress, due tomorrow; webhook section left.\n"
        "- **Launch readiness review with Support** `task_q4_109`: Fri Oct 16.\n"
        "- **Beta customer webinar deck** `task_q4_107`: starts Oct 19, not begun.\n\n"
        "The pricing page is the one slipping; the docs portal has subtasks if you want the breakdown."
    )

    c.user("Show me the docs portal breakdown. What's actually left?")
    c.calls(
        ("get_task_details", {"task_id": "task_q4_101", "include_subtasks": True}, task_detail("task_q4_101"))
    )
    c.assistant(
        "Docs portal: 3 of 6 subtasks done. Left:\n\n"
        "- **SDK quickstarts** (in progress): the Go quickstart still needs Tom's review.\n"
        "- **Rate-limit page** (backlog): still shows v1 limits, 600/min instead of 1,200/min. Quick fix.\n"
        "- **Algolia crawler** (blocked): needs the prod domain, which waits on `task_q4_093` "
        "(Move docs to prod domain, in progress).\n\n"
        "The rate-limit fix is a 15-minute win; search depends on someone else."
    )

    c.user("And why exactly is the pricing page blocked? I thought legal was basically done.")
    c.calls(("get_task_details", {"task_id": "task_q4_104"}, task_detail("task_q4_104")))
    c.assistant(
        "It's waiting on `task_q4_099` (Legal review of tier wording, Dana Whitfield), still in progress.\n\n"
        "- The page itself is built and approved, behind the flag `pricing_insights_v1`.\n"
        "- After sign-off: update the copy, flip the flag, tell Lena so the launch email can link it.\n\n"
        "There may be notes from the legal sync with Dana's exact asks. Want me to look?"
    )

    c.user("Yes please, find the notes from the legal sync.")
    c.calls(
        (
            "search_notes",
            {"query": "legal pricing tiers", "project_id": "proj_q4_launch", "limit": 5},
            note_hits(["note_q4_017", "note_q4_021"]),
        ),
    )
    c.assistant(
        "Two matches:\n\n"
        "- **Legal sync - Insights pricing tiers (Oct 8)** `note_q4_017`: Dana's list of asks before "
        "sign-off.\n"
        "- **Pricing FAQ draft** `note_q4_021`: short FAQ, not legal feedback.\n\n"
        "The first one is the one you want; its preview cuts off partway through her list. Open it?"
    )

    c.user("Open it.")
    c.calls(("get_note_details", {"note_id": "note_q4_017"}, note_detail("note_q4_017")))
    c.assistant(
        "Legal is not done: **the ball is in your court.**\n\n"
        "Dana's four asks:\n"
        "- Pro tier: replace 'unlimited reports' with 'up to 500 reports/month' + fair-use clause (ToS "
        "7.3).\n"
        "- Overage table for every tier ($0.04 Team, $0.03 Pro, contract for Enterprise).\n"
        "- SOC 2 badge under Enterprise only, until January.\n"
        "- 'Save 2 months', not '17% off'.\n\n"
        "Next step was yours: send her the revised tier table ('Insights tiers v4') by **Wed Oct 14 EOD**. "
        "She needs 2 business days, so sign-off Fri Oct 16 at best.\n\n"
        "Open question for Sam: grandfather beta customers at Team price for 6 months?"
    )

    c.user(
        "Ugh, I completely forgot that was on me. Create a task to send Dana the revised tier table, high "
        "priority, for tomorrow. 45 minutes should do it."
    )
    c.calls(
        ("create_task", create_args("task_q4_118"), created("task_q4_118")),
        text="Creating it with Dana's four asks in the description.",
    )
    c.assistant(
        "Done: **Send Dana the revised pricing tier table** `task_q4_118`, high, Wed Oct 14, 45 min.\n\n"
        "Tip: if you send it today instead, sign-off could land Thursday rather than Friday."
    )

    # -- Kitchen --------------------------------------------------------------------------------
    c.user("Noted. Switching gears: where is the kitchen at? Luis called yesterday and I only half listened.")
    c.calls(
        (
            "get_project_details",
            {"project_id": "proj_kitchen_reno", "include_tasks": True, "include_phases": True},
            {
                "project": {
                    **{k: v for k, v in PROJECTS["proj_kitchen_reno"].items() if k != "phases"},
                    "phases": PROJECTS["proj_kitchen_reno"]["phases"],
                    "tasks": [
                        {
                            k: abbreviated(t)[k]
                            for k in (
                                "id",
                                "title",
                                "status",
                                "priority",
                                "start_date",
                                "description_preview",
                            )
                        }
                        for t in ("task_kr_305", "task_kr_310", "task_kr_311", "task_kr_306")
                    ],
                    "notes": None,
                    "brain_dumps": None,
                    "created_at": "2026-08-01T17:00:00Z",
                    "updated_at": "2026-10-12T22:10:00Z",
                    "_complete": True,
                    "_context_length": len(PROJECTS["proj_kitchen_reno"]["context"]),
                },
                "message": "Complete project details loaded with 4 tasks and 4 phases.",
            },
        ),
    )
    c.assistant(
        "Kitchen, phase 2 of 4 (Demo and rough-in):\n\n"
        "- **Done:** demo (Sep 12), rough plumbing, inspected Oct 2.\n"
        "- **This week:** electrical rough-in; city inspection **Thu Oct 16, 08:00-12:00**.\n"
        "- **Slipped:** Kessler cabinets Oct 20 → **Oct 27**. Confirming that in writing is on today's list "
        "(`task_kr_305`).\n"
        "- **Money:** $24,300 of $38,000 committed; $3,450 contingency left.\n"
        "- **Decision pending:** countertop (quartz vs walnut butcher block). The fabricator needs it "
        "10 days before templating, and templating follows cabinet install.\n\n"
        "I don't have notes from Luis's call. What did he say?"
    )

    c.user(
        "ok so, brain dump, bear with me. Luis said the electrician opened the wall behind where the old "
        "sink "
        "was and there's knob and tube wiring back there, which apparently has to go, and they want to add a "
        "dedicated circuit for the island while they're at it, so there's a change order, I think he said "
        "around $1,850? He needs a yes by tomorrow or the inspection on Thursday gets pushed and then "
        "everything slides. Which, fine, probably yes, it's within the contingency but I hate eating into it "
        "this early. Also he asked AGAIN about the countertop and I keep dodging it. I had two quotes, one "
        "quartz, one butcher block, I think I saved them somewhere in notes. Honestly I love the walnut but "
        "I'm scared of water damage around the sink. And if the cabinets come Oct 27 and the counters need "
        "10 days before templating that means I have to decide like... now? this week? Separately: thesis "
        "meeting with Okafor is Thursday at 2 and I haven't touched the methods rewrite since Sunday, I need "
        "a real block of time for that, not 20 minutes between calls. And I think I need to re-run the kappa "
        "thing with Wen's codes. Offsite: did I ever book the venue?? I feel like the deposit is due soon "
        "and "
        "I don't even know if I have a task for it. Jonah asked if the dietary form went out. It did not. "
        "Launch stuff I think we covered, except Priya wants the FAQ before Friday. Oh and my sister's "
        "birthday is Sunday, need to get a gift, but that's not really a project thing. Sorry. Help."
    )
    c.calls(
        (
            "search_notes",
            {"query": "countertop quote", "project_id": "proj_kitchen_reno", "limit": 5},
            note_hits(["note_kr_031"]),
        ),
        (
            "list_tasks",
            {"project_id": "proj_team_offsite", "status": ["backlog", "in_progress", "blocked"], "limit": 10},
            task_list(["task_off_403", "task_off_401", "task_off_405"]),
        ),
        text="Let me check the countertop quotes and the offsite tasks at the same time.",
    )
    c.assistant(
        "Sorted by project:\n\n"
        "**Kitchen** (most urgent)\n"
        "- Electrical change order, ~$1,850: **decide by tomorrow**, or Thursday's inspection slips. It fits "
        "the $3,450 contingency (leaves ~$1,600).\n"
        "- Countertop: found the quotes in `note_kr_031`. Quartz (Stoneworks) $6,480; walnut (Hearth & "
        "Grain) "
        "$4,150, 3-week lead time, re-oil every few months, **no undermount sink on the island**. With "
        "cabinets on Oct 27, deciding by **Fri Oct 16** keeps templating on schedule.\n\n"
        "**Thesis**\n"
        "- Methods rewrite needs a real 2-hour block before Thursday 14:00.\n"
        "- Re-run kappa with Wen's codes: likely already on your chapter 3 list; I'll check when we plan "
        "it.\n\n"
        "**Offsite**\n"
        "- Venue: **not booked**. `task_off_403` Book venue is due **Fri Oct 16** (deposit).\n"
        "- Dietary form `task_off_405` was due Oct 10: overdue; Jonah is asking.\n\n"
        "**Launch**\n"
        "- Priya wants the FAQ before Friday's readiness review (`task_q4_109`).\n\n"
        "**Personal**\n"
        "- Sister's birthday gift by Sunday.\n\n"
        "Shall I create two kitchen tasks: *Approve electrical change order* (today) and *Decide countertop "
        "material* (by Friday)? Then we can find time for the methods rewrite."
    )

    c.user("Yes, create both. The change order one is quick, 15 min. Countertop decision high priority too.")
    c.calls(
        ("create_task", create_args("task_kr_315"), created("task_kr_315")),
        ("create_task", create_args("task_kr_314"), created("task_kr_314")),
    )
    c.assistant(
        "Created:\n\n"
        "- **Approve electrical change order with Luis** `task_kr_315`: high, today, 15 min.\n"
        "- **Decide countertop material** `task_kr_314`: high, Fri Oct 16, 60 min.\n\n"
        "Next: the thesis block?"
    )

    # -- Thesis -----------------------------------------------------------------------------------
    c.user("Yes. First remind me what's open on chapter 3.")
    c.calls(
        (
            "list_tasks",
            {"project_id": "proj_thesis_ch3", "status": ["in_progress", "backlog"], "limit": 5},
            task_list(["task_th_203", "task_th_205", "task_th_198", "task_th_211", "task_th_207"], total=7),
        ),
    )
    c.assistant(
        "Chapter 3, top 5 of 7 open tasks:\n\n"
        "- **Rewrite 3.2 Methods: coding procedure** `task_th_203`: in progress, 2h, started yesterday.\n"
        "- **Re-run inter-rater reliability** `task_th_205`: tomorrow, 90 min.\n"
        "- **Send Okafor the revised chapter outline** `task_th_198`: was due Oct 9, overdue.\n"
        "- **Prep slides for advisor meeting** `task_th_211`: Thursday, 45 min.\n"
        "- **Update Table 3.1 demographics** `task_th_207`: no date.\n\n"
        "The outline email is 20 minutes and overdue; worth sending today."
    )

    c.user(
        "What did Okafor actually say about the methods section last time? I want to get the rewrite right."
    )
    c.calls(
        (
            "search_notes",
            {"query": "Okafor feedback methods", "project_id": "proj_thesis_ch3", "limit": 5},
            note_hits(["note_th_044", "note_th_039"]),
        ),
        text="Looking for the notes from your last advisor meeting.",
    )
    c.calls(
        ("get_note_details", {"note_id": "note_th_044"}, note_detail("note_th_044")),
        text="The Oct 1 meeting note is the one; its preview cuts off in the methods part, so opening it.",
    )
    c.assistant(
        "From the Oct 1 meeting (`note_th_044`), for **3.2 Methods**:\n\n"
        "- Make the iterations explicit: open coding on 6 transcripts → codebook v1 → two revisions → v3 "
        "applied to all 24.\n"
        "- Report inter-rater reliability as a **table**: who double-coded, sample size, kappa per code "
        "family, how disagreements were resolved.\n"
        "- Justify why the 40-excerpt sample is representative (e.g. stratified by team size).\n\n"
        "Also: add the recruitment timeline and 3 dropouts to 3.1; cut the pilot (3.4) to a page or move it "
        "to an appendix; fewer forward references to chapter 5; say 'decision record', not 'ADR'.\n\n"
        "Important: she'll read 3.2 before Thursday **if it arrives by Wednesday evening**. So the rewrite "
        "and the kappa re-run both need to land tomorrow."
    )

    c.user(
        "Right, so I need 2 hours of proper deep focus for the rewrite, ideally before Wednesday evening. "
        "When am I free?"
    )
    c.calls(
        (
            "find_available_slots",
            {
                "timeMin": "2026-10-13T10:45:00-04:00",
                "timeMax": "2026-10-14T18:00:00-04:00",
                "duration_minutes": 120,
                "preferred_hours": [9, 10, 11, 14, 15, 16],
            },
            {
                "slots": [
                    {
                        "start": "2026-10-13T15:30:00-04:00",
                        "end": "2026-10-13T17:30:00-04:00",
                        "duration_minutes": 120,
                        "in_preferred_hours": True,
                    },
                    {
                        "start": "2026-10-14T09:00:00-04:00",
                        "end": "2026-10-14T11:00:00-04:00",
                        "duration_minutes": 120,
                        "in_preferred_hours": True,
                    },
                    {
                        "start": "2026-10-14T14:30:00-04:00",
                        "end": "2026-10-14T16:30:00-04:00",
                        "duration_minutes": 120,
                        "in_preferred_hours": True,
                    },
                ],
                "busy": [
                    {"start": "2026-10-13T11:30:00-04:00", "end": "2026-10-13T13:30:00-04:00"},
                    {"start": "2026-10-13T15:00:00-04:00", "end": "2026-10-13T15:30:00-04:00"},
                    {"start": "2026-10-14T11:00:00-04:00", "end": "2026-10-14T12:00:00-04:00"},
                    {"start": "2026-10-14T13:00:00-04:00", "end": "2026-10-14T14:30:00-04:00"},
                ],
                "total_slots": 3,
                "time_range": {
                    "timeMin": "2026-10-13T10:45:00-04:00",
                    "timeMax": "2026-10-14T18:00:00-04:00",
                },
                "message": "Found 3 available 120-minute slots.",
            },
        ),
    )
    c.assistant(
        "Three free 2-hour blocks before Wednesday evening:\n\n"
        "- **Today 15:30-17:30** (after your 15:00 call)\n"
        "- **Wed 09:00-11:00** (morning, before your 11:00 meeting)\n"
        "- **Wed 14:30-16:30**\n\n"
        "Wednesday 09:00 gives you fresh focus and leaves the afternoon for the kappa re-run, with time to "
        "send 3.2 by evening. Which one?"
    )

    c.user("Wednesday 9am. Book it for the methods rewrite.")
    c.calls(
        (
            "schedule_task",
            {"task_id": "task_th_203", "start_time": "2026-10-14T09:00:00-04:00", "duration_minutes": 120},
            {
                "success": True,
                "event_id": "evt_7f3k2m9qp1",
                "task_id": "task_th_203",
                "summary": "Rewrite 3.2 Methods: coding procedure",
                "start": "2026-10-14T09:00:00-04:00",
                "end": "2026-10-14T11:00:00-04:00",
                "calendar_id": "primary",
                "html_link": "https://calendar.google.com/calendar/event?eid=evt_7f3k2m9qp1",
                "message": "Task scheduled on the calendar and task start_date updated to 2026-10-14.",
            },
        ),
    )
    c.assistant(
        "Booked: **Rewrite 3.2 Methods** `task_th_203`, **Wed Oct 14, 09:00-11:00**.\n\n"
        "Suggested order for tomorrow: rewrite 09:00-11:00, kappa re-run `task_th_205` at 14:30, send 3.2 "
        "to Prof. Okafor before 18:00."
    )

    # -- Offsite ----------------------------------------------------------------------------------
    c.user("Good. Now the offsite. Did we ever decide on a venue?")
    c.calls(
        (
            "search_notes",
            {"query": "venue", "project_id": "proj_team_offsite", "limit": 5},
            note_hits(["note_off_052", "note_off_055"]),
        ),
    )
    c.assistant(
        "No decision recorded. From the venue shortlist (`note_off_052`):\n\n"
        "- **Wildflower Farm Retreat:** $6,900 all-in for 14 (catering included), deposit **$2,400 due "
        "Fri Oct 16**.\n"
        "- **Catskill Lodge:** $5,600 + ~$1,900 catering ≈ $7,500; **hold expires tomorrow (Oct 14)**.\n\n"
        "Against the $9,800 budget, Wildflower leaves ~$2,900 for transport and one activity (cooking "
        "class ≈ $630). It's cheaper and simpler. If you pick it, `task_off_403` is the deposit; the "
        "dietary form `task_off_405` can go out the same day."
    )

    c.user(
        "Wildflower, obviously. I'll pay the deposit Thursday. Jonah can send the dietary form, I'll ping "
        "him."
    )
    c.assistant(
        "Makes sense.\n\n"
        "- Venue: Wildflower; deposit Thursday, one day before the Oct 16 deadline (`task_off_403`).\n"
        "- Catskill hold can lapse tomorrow; no action needed.\n"
        "- Dietary form: ping Jonah today so it's out before the deposit.\n\n"
        "Anything else before lunch?"
    )

    # -- Cross-project sweep -------------------------------------------------------------------
    c.user("Quick sweep: anything overdue across all my projects that I haven't mentioned?")
    c.calls(
        (
            "list_tasks",
            {
                "status": ["backlog", "in_progress", "blocked"],
                "has_date": True,
                "sort_by": "start_date",
                "limit": 5,
            },
            task_list(
                [
                    "task_q4_104",
                    "task_th_198",
                    "task_off_405",
                    "task_q4_101",
                    "task_kr_305",
                ],
                total=26,
            ),
        ),
    )
    c.assistant(
        "Overdue (start date passed, not done):\n\n"
        "- **Publish pricing page** `task_q4_104` (Oct 9): still waiting on the tier table for Dana.\n"
        "- **Send Okafor the revised chapter outline** `task_th_198` (Oct 9): 20 minutes.\n"
        "- **Send dietary and travel form** `task_off_405` (Oct 10): Jonah's taking it.\n"
        "- **Finish API documentation portal** `task_q4_101` (Oct 12): in progress rather than late.\n\n"
        "Due today: **Confirm cabinet delivery with Kessler** `task_kr_305`, plus the change order we "
        "created this morning (`task_kr_315`). Tomorrow: migration guide `task_q4_112`, the table for Dana "
        "`task_q4_118`, and the 3.2 rewrite block.\n\n"
        "Nothing else has slipped."
    )

    c.user("Thanks. Going to grab lunch, then I'll come back and plan the afternoon.")
    c.assistant("Enjoy lunch. Everything from this morning is captured; I'll have it ready when you're back.")

    # -- The question the next model call must answer ---------------------------------------------
    c.user(
        "Back. It's 1:30. I have the 3pm call with Kessler about the cabinets and I'm done at 5:30. Given "
        "everything we went through this morning, what should I focus on this afternoon? Give me a short, "
        "realistic plan in order."
    )

    return {"messages": c.messages, "tools": tool_definitions()}


def main() -> None:
    """Write the conversation to ``examples/conversation.json`` (indent 2, trailing newline)."""
    data = build()
    OUT.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {OUT} ({len(data['messages'])} messages, {len(data['tools'])} tools)")


if __name__ == "__main__":
    main()
