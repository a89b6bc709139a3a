"""The words of the sample workspace: one person's projects, their people, facts and task titles.

Pure data for :mod:`tierwise.workspace.sample`, which picks and combines it with a seeded RNG (the
projects themselves are in :mod:`tierwise.workspace.sample_projects`). Lists
are written as ``|``-separated strings to keep the file short; a task line is ``Title``, ``Title
*weekly`` (recurring, a value of ``RECURRENCES``) or ``Parent > Sub one; Sub two`` (subtasks). Each
project has its own vocabulary (webhooks, Webflow, câmara permit, tempo run, e-Fatura …) so that a
search for it finds it. Texts name no calendar months: every date comes from the day of generation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

__all__ = [
    "INBOX_TASKS",
    "PROFILE",
    "SEED_SUBTASKS",
    "SEED_TASKS",
    "SEED_TEXTS",
    "Bank",
    "ProjectText",
    "project_text",
]


def _split(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split("|") if part.strip())


@dataclass(frozen=True)
class ProjectText:
    """Everything the generator says about one project (each field a tuple of variants or items)."""

    name: str
    slug: str
    status: str
    span: tuple[int, int]  # start and end, in days from the day of generation
    tags: tuple[str, ...]
    descriptions: tuple[str, ...]
    summaries: tuple[str, ...]
    overview: tuple[str, ...]
    goals: tuple[str, ...]
    people: tuple[str, ...]  # "Name — role"
    decisions: tuple[str, ...]
    questions: tuple[str, ...]
    risks: tuple[str, ...]
    phases: tuple[str, ...]  # "Name: description"
    tasks: tuple[str, ...]
    facts: tuple[str, ...]
    notes: tuple[str, ...]  # "category: title"
    meetings: tuple[str, ...]


def project_text(head: str, **fields: str) -> ProjectText:
    """``head`` is ``name|slug|status|start|end`` (days from today); every other field is ``|``-separated."""
    name, slug, status, start, end = head.split("|")
    lists = {key: _split(value) for key, value in fields.items()}
    return ProjectText(name, slug, status, (int(start), int(end)), **lists)


PROFILE = {
    "who_i_am": (
        "Maya Costa, product lead at Lumen, a 60-person B2B workflow-automation startup in Lisbon. "
        "I own the Q4 launch and the product roadmap, I am hiring for the platform team, and outside "
        "work I am training for my first marathon, renovating our flat in Arroios with my partner "
        "Sofia, and keeping our taxes sane. I have ADHD: many open loops, lots of ideas, short fuse "
        "for busywork."
    ),
    "how_i_work": (
        "- Best focus 9:00-12:00: protect mornings for deep work, put meetings after lunch\n"
        "- Answer in short bullets; lead with the one thing to do next\n"
        "- Break big tasks into 25-50 minute steps with a clear first action\n"
        "- Remind me of deadlines early and calmly; no guilt, no exclamation marks\n"
        "- I context-switch a lot: tell me which project something belongs to\n"
        "- Fridays after 15:00 are for the weekly review and inbox zero"
    ),
}

# The seed's tasks (seed 000 §3.2, §4.3): (status, priority, day from today or None, hour, minutes).
SEED_TASKS: dict[str, tuple[str, str, int | None, int, int]] = {
    "Design API documentation portal": ("in_progress", "high", -1, 10, 240),
    "Implement webhook system": ("in_progress", "high", 1, 10, 480),
    "Create demo videos": ("backlog", "medium", 6, 14, 180),
    "Write blog posts": ("backlog", "medium", 8, 10, 120),
    "Update changelog": ("backlog", "low", None, 0, 30),
}
SEED_SUBTASKS = ("done", "in_progress", "backlog", "backlog")  # of the first two
SEED_TEXTS = {  # (description, details)
    "Design API documentation portal": (
        "Create comprehensive API documentation with interactive examples, authentication guides, and "
        "SDKs for Python, JavaScript, and Go. The portal should include versioning support, automatic "
        "code generation from OpenAPI specs, and integrated testing capabilities.",
        "Technical requirements:\n- Next.js 14 with App Router\n- MDX for documentation content\n- "
        "Shiki for syntax highlighting\n- OpenAPI 3.1 specification support\n- Interactive API "
        "explorer using Swagger UI\n- Authentication flow diagrams with Mermaid\n- Search powered by "
        "Algolia DocSearch\n- Dark mode support\n- Mobile-responsive design\n\nContent requirements:\n"
        "- Getting started guide\n- Authentication & authorization\n- Rate limiting documentation\n- "
        "Webhook implementation guide\n- Error handling reference\n- SDK quickstarts\n- API changelog\n"
        "- Status page integration",
    ),
    "Implement webhook system": (
        "Build robust webhook delivery system with retry logic, signature verification, and event "
        "filtering. Customers subscribe an endpoint to the events they care about (workflow.completed, "
        "run.failed, approval.requested) and get at-least-once delivery, with a delivery log they can "
        "inspect and replay from. Design partners asked for this more than any other feature.",
        "Technical requirements:\n- Exponential backoff for retries\n- HMAC-SHA256 signatures\n- Event "
        "deduplication with idempotency keys\n- Per-endpoint rate limits (no retry storms)\n- Event "
        "filtering per subscription\n- Delivery log kept 30 days, with manual replay\n- Disable an "
        "endpoint after 24 hours of failures and email the account owner\n\nOpen points:\n- Who owns "
        "webhook support tickets after launch?\n- Payload versioning: header or URL?",
    ),
}

INBOX_TASKS = _split(
    "Renew passport|Book dentist appointment|Call mom *weekly|Reply to Leo about the board deck slide|Buy a "
    "birthday present for Sofia|Fix the bike brakes|Schedule the car inspection (IPO)|Order a new laptop "
    "charger|Read 'Shape Up' chapter 4|Clean up Google Drive|Set up a password manager for the family|Return "
    "the online clothes order|Book a haircut|Weekly review *weekly|Inbox zero before the weekend "
    "*weekly|Plan Sofia's birthday dinner|Update LinkedIn profile|Donate old clothes|Write a thank-you note "
    "to Priya|Check train tickets to Porto for the family weekend|Take Miso to the vet"
)


class Bank:
    """Generic sentences and markdown templates, filled with a project's words (``{person}`` …)."""

    NOTES: ClassVar[dict[str, str]] = {
        "meeting": (
            "**{title}** ({when})\n**Attendees:** {attendees}\n\n### Discussed\n{facts}\n- {question}\n\n"
            "### Decisions\n- {decision}\n\n### Action items\n{actions}"
        ),
        "idea": "{title}.\n\n{fact}\n\n{idea}\n\n{idea2}\n\nOpen question: {question}",
        "research": (
            "## Findings\n{facts}\n\n## So what\n- {goal}\n- Risk to keep in mind: {risk}\n\n"
            "## Next\n- {task}"
        ),
        "reference": "## Key facts\n{facts}\n\n## Decisions so far\n{decisions}\n\n## People\n{people}",
        "journal": "{mood} On {project}: {fact} Worry: {risk} {mood2}",
    }
    DETAILS = (
        "**Checklist**\n\n{checklist}\n\n**Context**\n\n- {fact}\n- Decided: {decision}\n"
        "- Open: {question}\n\nProject doc: /projects/{slug}"
    )
    LEADS = _split(
        "Part of the {phase} phase of {project}.|Supports the goal: {goal}|{title}: agreed in the last "
        "{project} check-in."
    )
    DUMP_SUMMARY = (
        "About {project}: {count} possible tasks, the main one '{task}'. Worry: {risk} Also: {other}."
    )
    AGENDA = "{fact}\n\nAgenda:\n- {question}\n- {task}"

    APPROACH = _split(
        "Start with a 25-minute timebox and see how far it gets.|Best done in a morning block; it needs "
        "focus.|If it stalls for more than two days, break it into smaller steps.|Keep the first version "
        "rough; polish only after feedback.|Write open questions down as they come up instead of chasing "
        "them.|Pair with {person} if it takes more than an hour.|The context is in the {project} project "
        "notes; read them first.|Low-energy version: do only the first step, then stop.|This unblocks the "
        "next step of the {phase} phase.|Do it right after standup, before Slack gets loud."
    )
    DONE_WHEN = _split(
        "Done when {person} has reviewed it.|Done when it is linked from the {project} project doc.|Done "
        "when the result is shared in the team channel.|Done when the next step is written down and "
        "scheduled.|Done when {person} confirms it works for them.|Done when nothing about it is left in my "
        "head."
    )
    CHECKLIST = _split(
        "Block a 90-minute morning slot|Write a one-paragraph brief|Share the draft with {person} for "
        "comments|Collect open questions in the project doc|Check it against the {phase} phase goals|Ask "
        "{person} for the missing numbers|Make a first rough version|Set a timer and stop at 50 "
        "minutes|Update the project context with what changed|Send a short summary to {person}|Decide what "
        "is out of scope|Archive the old version|Link related notes|Book a 15-minute check-in with {person}"
    )
    JOURNAL = _split(
        "Mornings are still my best hours; everything after 15:00 is shallow work.|I said yes to too many "
        "things this week again.|The trick that worked today: write the first sentence before opening Slack.|"
        "Switching between five projects in one afternoon leaves me fried.|Hyperfocus got me three hours of "
        "good work and a missed lunch.|I feel behind, but the list says I am not; trust the list.|A walk "
        "after lunch helped more than the third coffee.|Body doubling with Ana in the café made the boring "
        "admin go fast.|Writing things down here means I stop rehearsing them at night."
    )
    RAMBLE_OPEN = _split(
        "ok so|right, brain dump time.|writing this before I forget:|can't sleep, so:|quick dump after "
        "standup:|on the train, thinking about|too many tabs open in my head again."
    )
    RAMBLE_JOIN = _split(
        "and also|oh and|wait, also|which reminds me,|not sure about this but|honestly|the thing is,|"
        "meanwhile|I keep forgetting that|and then"
    )
    RAMBLE_CLOSE = _split(
        "ok that's it for now.|anyway. sleep.|need to turn this into actual tasks tomorrow morning.|will "
        "sort this out after the coffee.|feels better written down.|ask the assistant to make tasks from "
        "this."
    )
    IDEA = _split(
        "Could be a small experiment first: one week, one team, measure before and after.|The cheap version "
        "is a spreadsheet and a weekly reminder; the real version is a feature.|Worth asking {person} "
        "whether anyone tried this before.|If it works, it saves a few hours a week for everyone "
        "involved.|Risk: it becomes one more thing to maintain."
    )
    SHAPE_UP = _split(
        "Appetite, not estimates: fix the time, vary the scope.|Shape the work before betting on it: rough, "
        "solved, bounded.|Six-week cycles, then two weeks of cool-down.|The betting table picks from "
        "pitches; the backlog is not a promise.|Scope hammering: cut what is not core to the problem."
    )
    LOCATIONS = _split("Room Tejo|Room Alfama|Google Meet|Zoom|Café A Brasileira|Office kitchen|Phone")
    EXTRA_TASKS = _split(
        "Update the {project} project context|Review open questions for {project}|Share a {project} progress "
        "update with {person}|Clean up the {project} backlog|Plan next week for {project}|Follow up with "
        "{person} on {project}"
    )
    PROJECT_NOTES = _split(
        "meeting: {project} check-in|journal: {project}: where it stands|reference: {project} key facts"
    )
    FREE_NOTES = _split(
        "journal: Monday reset|journal: Energy and focus this week|idea: Ideas parking lot|reference: "
        "Reading notes: Shape Up|journal: Things I keep postponing|journal: What worked this week"
    )
    INBOX_LEADS = _split(
        "Personal admin: small, but it keeps nagging.|Not tied to a project; do it in a low-energy slot.|Two-"
        "minute rule does not apply, sadly; needs a real slot.|Sofia asked about this twice already."
    )
    DUMP_TITLES = _split(
        "{project}: thoughts after standup|Late-night {project} worries|{project}: everything in my head|"
        "Morning dump about {project}|{project}: what is actually blocking me"
    )
    ALL_DAY = _split(
        "Sofia's birthday|Design partner day (remote)|Hiring day: final interviews|Deadline: documents to "
        "Carla|Renovation: tile delivery window|Focus day: no meetings"
    )
