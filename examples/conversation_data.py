"""The example conversation's data: Maya's projects and tasks, and the tool results made of them.

Part of ``make_conversation.py`` (stdlib only; the notes are in ``conversation_notes.py``). List
results are derived from the same records as detail results, so ids and previews stay consistent
between the abbreviated and the detailed views.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "CREATED",
    "PROJECTS",
    "TASKS",
    "TODAY",
    "abbreviated",
    "preview",
    "project_abbreviated",
    "task_detail",
    "task_list",
]

TODAY = "2026-10-13"


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
