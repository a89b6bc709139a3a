"""Write ``examples/conversation.json``: one long working session with a productivity assistant.

The conversation is an OpenAI-style request body (``{"messages": [...], "tools": [...]}``) for the
reference app of tierwise: an assistant over one person's projects, tasks, notes, brain dumps and
calendar. Its tools are the seed's list/search → detail → action tools (progressive disclosure):
list and search results are abbreviated (previews, totals, ``has_more``), detail results are full.

The tools and system prompt are in ``conversation_tools.py``; the records and the tool results
made of them in ``conversation_data.py`` and ``conversation_notes.py``; this file is the
conversation itself. Everything is fixed text and data, so the output is byte-for-byte the same on
every run. Run it from anywhere (stdlib only, no network)::

    python examples/make_conversation.py
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from conversation_data import (  # the sibling modules (run as a script: its folder is on the path)
    CREATED,
    PROJECTS,
    TASKS,
    abbreviated,
    project_abbreviated,
    task_detail,
    task_list,
)
from conversation_notes import note_detail, note_hits
from conversation_tools import SYSTEM_PROMPT, tool_definitions

OUT = Path(__file__).with_name("conversation.json")

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
