"""The example conversation's notes, and the search and detail results made of them.

Part of ``make_conversation.py`` (stdlib only); previews are cut as in ``conversation_data.py``.
"""

from __future__ import annotations

from typing import Any

from conversation_data import preview

__all__ = ["NOTES", "note_detail", "note_hits"]


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
