"""Seed 000 §10 in ``tierwise bench disclosure``: prefetching, location cache, adaptive related layers.

The progressive contender runs twice: as shipped (§10 on) and with the three off
(``assistant_engine(prefetch=None, context_cache=None, adaptive=None)``). Reported:

- **prefetching** (§10.1): details offered after list calls, hits (the model asked for that detail
  next), the hit rate, and the build time the hits took off the request path;
- **location cache** (§10.2): lookups, hits, the hit rate, build time spent and saved;
- **adaptive related layers** (§10.3): allowances grown and shrunk, details opened from the layer or
  missing from it, and the tokens sent with and without (the only one of the three that changes
  what is sent);
- whether the answers are the same with and without (they should be: §10 changes cost, not content).
"""

from __future__ import annotations

from typing import Any

from tierwise.chat.engine import ChatEngine
from tierwise.workspace.adaptive import AdaptiveBudgets
from tierwise.workspace.context import WorkspaceContext
from tierwise.workspace.prefetch import Prefetcher

__all__ = ["seed10_lines", "seed10_stats", "seed10_summary"]


def seed10_stats(engine: ChatEngine) -> dict[str, Any] | None:
    """The §10 statistics of an assistant engine after a run (``None`` when §10 was off)."""
    prefetch = engine.tool_extras.get("prefetch")
    context = engine.context
    cache = getattr(context, "cache", None) if isinstance(context, WorkspaceContext) else None
    adaptive = engine.tool_extras.get("adaptive")
    if not isinstance(prefetch, Prefetcher) and cache is None and not isinstance(adaptive, AdaptiveBudgets):
        return None
    stats: dict[str, Any] = {}
    if isinstance(prefetch, Prefetcher):
        prefetch.close()  # wait for work under way: its figures are final
        stats["prefetch"] = prefetch.stats.as_dict()
    if cache is not None:
        stats["context_cache"] = cache.stats.as_dict()
    if isinstance(adaptive, AdaptiveBudgets):
        stats["adaptive"] = adaptive.stats.as_dict()
    return stats


def _detail_ms(rows: list[dict[str, Any]], tiers: dict[str, str]) -> int:
    return sum(
        ms
        for r in rows
        for name, ms in zip(r["tools"], r.get("tool_ms", []), strict=False)
        if tiers.get(name) == "detail"
    )


def seed10_summary(on: dict[str, Any], off: dict[str, Any], tiers: dict[str, str]) -> dict[str, Any]:
    """The §10 figures from the progressive run with §10 (``on``) and without (``off``)."""
    rows_on, rows_off = on["requests"], off["requests"]
    sent_on = sum(r["tokens_sent"] for r in rows_on)
    sent_off = sum(r["tokens_sent"] for r in rows_off)
    return {
        **(on.get("seed10") or {}),
        "tokens_sent": {"with": sent_on, "without": sent_off},
        "tokens_saved": sent_off - sent_on,
        "detail_tool_ms": {"with": _detail_ms(rows_on, tiers), "without": _detail_ms(rows_off, tiers)},
        "same_answers": sum(1 for a, b in zip(rows_on, rows_off, strict=True) if a["answer"] == b["answer"]),
        "requests": len(rows_on),
    }


def seed10_lines(s: dict[str, Any]) -> list[str]:
    """Markdown lines for the report (empty when the run had no §10 comparison)."""
    if not s:
        return []
    lines = [
        "Seed 000 §10 (the progressive contender with and without it, same requests):",
        "",
        "| | what it did |",
        "|---|---|",
    ]
    if "prefetch" in s:
        p = s["prefetch"]
        lines.append(
            f"| §10.1 prefetch the top row's detail after a list call | {p['offered']} offered, "
            f"{p['hits']} served (hit rate {p['hit_rate']:.0%} of {p['hits'] + p['misses']} detail calls), "
            f"{p['saved_ms']:.1f} ms of detail building taken off the request path |"
        )
    if "context_cache" in s:
        c = s["context_cache"]
        lines.append(
            f"| §10.2 location context cache (invalidated by writes) | {c['hits']} of "
            f"{c['hits'] + c['misses']} turns served from the cache (hit rate {c['hit_rate']:.0%}; "
            f"{c['stale']} rebuilt after a write), {c['build_ms']:.1f} ms built, "
            f"{c['saved_ms']:.1f} ms saved |"
        )
    if "adaptive" in s:
        a = s["adaptive"]
        lines.append(
            f"| §10.3 adaptive related layer (per location) | grown {a['grown']}×, shrunk {a['shrunk']}×; "
            f"details opened from it {a['opened_shown']}, missing from it {a['opened_missing']}; "
            f"tokens sent {s['tokens_sent']['with']:,} with vs {s['tokens_sent']['without']:,} without "
            f"({s['tokens_saved']:,} saved) |"
        )
    lines += [
        "",
        f"Answers the same with and without §10: {s['same_answers']} / {s['requests']}. Detail tool time "
        f"(executor, whole ms): {s['detail_tool_ms']['with']} with, {s['detail_tool_ms']['without']} "
        "without.",
        "",
    ]
    return lines
