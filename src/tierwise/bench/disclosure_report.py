"""The disclosure benchmark's report: targets, what each side sends, per request (markdown, console).

Kept apart from :mod:`tierwise.bench.disclosure` (which runs the contenders and computes the figures):
this module only words them.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from tierwise.bench.disclosure_seed10 import seed10_lines
from tierwise.tables import print_table

__all__ = ["PARTS", "markdown", "show"]

PARTS = {
    "tool_schemas": "tool schemas (those offered, every call)",
    "system": "system text (prompt, profile, location, related)",
    "messages": "conversation: user messages, answers, tool calls",
    "results_this_request": "tool results of the request's own steps",
    "results_earlier": "tool results of earlier requests (recaps on the progressive side)",
}
"""What a prompt is made of, as the report splits it (every model call of every request, summed)."""


def _part_lines(s: dict[str, Any]) -> list[str]:
    parts = s.get("parts")
    if not parts or "full" not in parts:
        return []
    prog, full = parts["progressive"], parts["full"]
    total = sum(full.values()) or 1
    lines = [
        "What each side sends (tokens, all model calls; share of the full peer's total):",
        "",
        "| part | progressive | full records | |",
        "|---|---|---|---|",
    ]
    for key, label in PARTS.items():
        note = (
            "same context for both (the full peer's also tells how to open the compressed results it has)"
            if key == "system"
            else ""
        )
        lines.append(
            f"| {label} | {prog[key]:,} ({prog[key] / total:.1%}) | "
            f"{full[key]:,} ({full[key] / total:.1%}) | {note} |"
        )
    lines += [
        f"| all | {sum(prog.values()):,} | {sum(full.values()):,} | |",
        "",
    ]
    return lines


def _met(verdict: dict[str, Any], unit: str = "") -> str:
    if verdict["met"]:
        return "met"
    by = verdict["by"]
    return f"**missed** by {by:.1%}" if unit == "%" else f"**missed** by {by:,}{unit}"


def _target_rows(s: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """(figure, value, target, verdict) for the headline table."""
    ic, v = s["initial_context"], s["targets"]
    rows = [
        (
            "fewer tokens than full records, context held equal",
            f"{s['reduction']:.1%}",
            "≥ 70%",
            _met(v["reduction"], "%"),
        ),
        (
            "detail ÷ list calls (seed 000 §7.1; list = §5.1's Tier 1, calendar events included)",
            f"{s['detail_per_list']} ({s['detail_calls']} ÷ {s['list_calls']})",
            "< 0.30",
            _met(v["detail_per_list"]),
        ),
        (
            "initial context with tool schemas, max",
            f"{ic['with_tools_max']:,} (mean {ic['with_tools_mean']:,.0f})",
            "< 2,000",
            _met(v["initial_context_with_tools"], " tokens"),
        ),
        (
            "initial context without tool schemas, max",
            f"{ic['max']:,} (mean {ic['mean']:,.0f})",
            "< 1,500",
            _met(v["initial_context"], " tokens"),
        ),
    ]
    if "tool_p95_ms_x10" in v:
        rows.append(
            (
                "tool p95 at ×10",
                f"{v['tool_p95_ms_x10']['value']} ms",
                "< 50 ms",
                _met(v["tool_p95_ms_x10"], " ms"),
            )
        )
    return rows


def _share_lines(s: dict[str, Any]) -> list[str]:
    if "reduction_ceiling" not in s:
        return []
    results = s["tool_result_tokens"]
    return [
        f"What bounds the headline: tool results are {results['progressive']:,} of the progressive "
        f"contender's tokens and {results['full']:,} of the full peer's; the rest (the system text — the "
        "same context for both —, the tool schemas each call is offered and the conversation's messages) "
        "is re-sent on every model call, so even tool results costing nothing would make the headline "
        f"{s['reduction_ceiling']:.1%}. Tool results alone: {s['tool_result_reduction']:.1%} fewer "
        "(seed 000 §7.2's tokens_saved; not the headline).",
        "",
    ]


_VARIANTS = {
    "progressive": "progressive, as shipped (the chat's toolbox, only growing)",
    "every_tool": "every tool on every call (the default before the toolbox)",
    "per_call": "each call offered only its own tools (`tools_grow=False`)",
    "full": "full records, every tool (the peer)",
}


def _variant_lines(s: dict[str, Any]) -> list[str]:
    """How the progressive side's tool offer changes what it sends and what it is billed."""
    sent, billed = s["tokens_sent"], s["billed_tokens"]
    if not sent.get("full"):
        return []
    lines = [
        "| contender | tokens sent | fewer than full | billed with caching | less than full |",
        "|---|---|---|---|---|",
    ]
    for mode, label in _VARIANTS.items():
        if mode not in sent:
            continue
        less = 1 - sent[mode] / sent["full"]
        cheaper = 1 - billed[mode] / billed["full"]
        lines.append(f"| {label} | {sent[mode]:,} | {less:.1%} | {billed[mode]:,} | {cheaper:.1%} |")
    return [*lines, ""]


def markdown(result: dict[str, Any], dialogues: int, encoding: str) -> str:
    """The report as markdown (``dialogues``: how many the requests came in; ``encoding``: the counts')."""
    s = result["summary"]
    ic, sent = s["initial_context"], s["tokens_sent"]
    lines = [
        "# Progressive disclosure (`tierwise bench disclosure`)",
        "",
        f"Machine: {result['machine']}. {s['requests']} requests in {dialogues} dialogues, "
        f"sample workspace ×1, offline assistant, exact `{encoding}` counts, all contenders in the same run.",
        "",
        "Headline: the same location context for both; the full peer's list tools (seed 000 §5.1's Tier 1, "
        "calendar events included) return the same rows as full records, as do the subtasks and tasks "
        "inside its details, and it is sent every tool's schema on every model call (an application "
        "without tierwise). The progressive side, as shipped, offers each chat the tools its calls need, "
        "its tool list only growing at the end, so a provider's prompt cache keeps the front "
        "(`tools/offering.py: Toolbox`).",
        "",
        f"Billed input with prompt caching (cached tokens at 10%, OpenAI's rule for which are cached): "
        f"progressive {s['billed_tokens']['progressive']:,} vs full {s['billed_tokens']['full']:,}, "
        f"**{_less(s.get('reduction_billed') or 0)}**.",
        "",
        *_variant_lines(s),
        "| figure | value | target | |",
        "|---|---|---|---|",
        *(f"| {a} | {b} | {c} | {d} |" for a, b, c, d in _target_rows(s)),
        "",
        "| tokens sent (all model calls) | progressive | full records | full records + full context |",
        "|---|---|---|---|",
        f"| 30 requests | {sent['progressive']:,} | {sent['full']:,} | {sent.get('full_context', 0):,} |",
        f"| progressive sends fewer by | | **{s['reduction']:.1%}** (headline) | "
        f"{(s['reduction_full_context'] or 0):.1%} (the old comparison: the full peer's location context "
        "holds whole records too) |",
        f"| initial context (system text), mean | {ic['mean']:,.0f} | {ic.get('full_mean', 0):,.0f} | "
        f"{ic.get('full_context_mean', 0):,.0f} |",
        "",
        *_share_lines(s),
        *_part_lines(s),
        f"Tool schemas of the first request's first call: {ic['tool_definitions']:,} tokens; first prompt "
        f"(with the user's message), max {ic['first_prompt_max']:,}. Tool calls per request "
        f"{s['tool_calls_per_request']}; detail calls ÷ all calls {s['detail_share']:.1%} (not the seed's "
        f"rate); detail ÷ calls of our list-tier tools (seed 001's grouping: calendar events apart) "
        f"{s.get('detail_per_list_tier', 0)} ({s['detail_calls']} ÷ {s.get('list_tier_calls', 0)}). "
        f"Requests answered / tool errors: {s['answered']} / {s['tool_errors']}.",
        "",
        *seed10_lines(s.get("seed10") or {}),
        "Tool latency through the executor (SQLite file, ms):",
        "",
        "| scale | workspace generated in | p50 | p95 | worst tool p95 | target |",
        "|---|---|---|---|---|---|",
    ]
    for row in result["latency"]:
        target = "p95 < 50 ms" if row["scale"] == 10 else ""
        lines.append(
            f"| ×{row['scale']} | {row['generate_s']} s | {row['p50']} | {row['p95']} | "
            f"{row['worst_tool_p95']} | {target} |"
        )
    lines += ["", "Per request (progressive → full records → full context, tokens sent; tools called):", ""]
    rows = zip(
        result["progressive"]["requests"],
        result["full"]["requests"],
        result.get("full_context", result["full"])["requests"],
        strict=True,
    )
    for p, f, c in rows:
        lines.append(
            f"- {p['request']} — {p['tokens_sent']:,} → {f['tokens_sent']:,} → {c['tokens_sent']:,} · "
            f"{', '.join(p['tools']) or '–'}"
        )
    return "\n".join(lines) + "\n"


def _less(reduction: float) -> str:
    """A reduction in words: ``7.5% less``, or ``7.5% more`` when it went the other way.

    Example:
        >>> _less(0.412), _less(-0.075), _less(0.0)
        ('41.2% less', '7.5% more', 'the same')
    """
    if abs(reduction) < 0.0005:
        return "the same"
    return f"{abs(reduction):.1%} {'less' if reduction > 0 else 'more'}"


def show(result: dict[str, Any], console: Console) -> None:
    """The headline table on the console."""
    s = result["summary"]
    table = Table(title="progressive disclosure vs full records (context held equal; same run)")
    for header in ("figure", "value", "target", ""):
        table.add_column(header)
    for row in _target_rows(s):
        table.add_row(*(cell.replace("**", "") for cell in row))
    sent = s["tokens_sent"]
    table.add_row(
        "tokens sent: " + " / ".join(sent),
        " / ".join(f"{n:,}" for n in sent.values()),
        "",
        "",
    )
    billed = s["billed_tokens"]
    table.add_row(
        "billed with prompt caching (10%)",
        f"{billed['progressive']:,} vs {billed['full']:,}: {_less(s.get('reduction_billed') or 0)}",
        "",
        "",
    )
    for mode, variant in (s.get("variants") or {}).items():
        table.add_row(
            f"{mode.replace('_', ' ')}: sent / billed",
            f"{_less(variant['reduction'])} / {_less(variant['reduction_billed'])}",
            "",
            "",
        )
    table.add_row("old comparison (full context too)", f"{(s['reduction_full_context'] or 0):.1%}", "", "")
    table.add_row("answered / tool errors", f"{s['answered']} / {s['tool_errors']}", "", "")
    for row in result["latency"]:
        table.add_row(f"tool latency ×{row['scale']} p50 / p95", f"{row['p50']} / {row['p95']} ms", "", "")
    print_table(console, table)
