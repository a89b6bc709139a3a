"""tierwise's packer against langchain-core's ``trim_messages``, on the same synthetic histories.

Both contenders share one :class:`~tierwise.tokens.TokenCounter` and count identically, so the
timings compare the selection work, not two tokenizers. *Warm* rows are the steady state of a chat
engine that re-packs every turn (counts cached); *cold* rows clear the cache before every run.
"""

from __future__ import annotations

import json
import math
import os
import platform
import statistics
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from importlib.metadata import version
from operator import attrgetter
from pathlib import Path
from typing import Any

from langchain_core import messages as lc
from rich.console import Console
from rich.table import Table

from tierwise import tokens as tk
from tierwise.bench.synthetic import synthetic_history
from tierwise.budget import Budget
from tierwise.packing import Packer, conversation_layers
from tierwise.tables import print_table

__all__ = ["langchain_counter", "run_pack_benchmark", "synthetic_history", "to_langchain"]

WARMUP = 3
Message = dict[str, Any]

_LC_CLASSES: dict[str, type[lc.BaseMessage]] = {
    "system": lc.SystemMessage,
    "user": lc.HumanMessage,
    "tool": lc.ToolMessage,
}
_LC_ROLES = {"system": "system", "human": "user", "ai": "assistant", "tool": "tool"}


def to_langchain(messages: Sequence[Message]) -> list[lc.BaseMessage]:
    """The same history as langchain-core messages (tool calls as langchain-openai parses them)."""
    out: list[lc.BaseMessage] = []
    for m in messages:
        role, content = m["role"], m.get("content") or ""
        if role != "assistant":
            extra = {"tool_call_id": m["tool_call_id"]} if role == "tool" else {}
            out.append(_LC_CLASSES[role](content=content, **extra))
        else:
            raw = m.get("tool_calls") or []
            calls = [
                {
                    "name": c["function"]["name"],
                    "args": json.loads(c["function"]["arguments"]),
                    "id": c["id"],
                    "type": "tool_call",
                }
                for c in raw
            ]
            out.append(
                lc.AIMessage(
                    content=content, tool_calls=calls, additional_kwargs={"tool_calls": raw} if raw else {}
                )
            )
    return out


def langchain_counter(counter: tk.TokenCounter) -> Callable[[list[lc.BaseMessage]], int]:
    """A ``trim_messages`` token counter equal to ``counter.count_messages`` on the OpenAI dicts."""

    def count(messages: list[lc.BaseMessage]) -> int:
        total = tk.REPLY_PRIMING
        for m in messages:
            n = tk.TOKENS_PER_MESSAGE + counter.count(_LC_ROLES[m.type]) + counter.count_content(m.content)
            if m.name:
                n += counter.count(m.name) + tk.TOKENS_PER_NAME
            for call in m.additional_kwargs.get("tool_calls") or ():
                n += tk.TOKENS_PER_TOOL_CALL + counter.count(call["function"]["name"])
                n += counter.count(call["function"]["arguments"])
            total += n
        return total

    return count


def langchain_batched_counter(counter: tk.TokenCounter) -> Callable[[list[lc.BaseMessage]], int]:
    """The same counts as :func:`langchain_counter`, batched the way tierwise batches its own.

    Contents and types are fetched and looked up in the shared cache with C-level ``map`` calls,
    so ``trim_messages`` gets as fast a counter as tierwise's packer has.
    """
    roles = {kind: counter.count(role) for kind, role in _LC_ROLES.items()}
    per_message = langchain_counter(counter)

    def count(messages: list[lc.BaseMessage]) -> int:
        contents = list(map(_LC_CONTENT, messages))
        try:
            cached: list[int | None] = list(map(counter._cache.get, contents))
        except TypeError:  # list content
            return per_message(messages)
        total = tk.REPLY_PRIMING + tk.TOKENS_PER_MESSAGE * len(messages)
        total += sum(map(roles.__getitem__, map(_LC_TYPE, messages)))
        counts = [counter.count_content(c) if n is None else n for n, c in zip(cached, contents, strict=True)]
        total += sum(counts)
        for m in messages:
            if m.name or m.additional_kwargs:
                total += per_message([m]) - tk.REPLY_PRIMING - tk.TOKENS_PER_MESSAGE
                total -= counter.count(_LC_ROLES[m.type]) + counter.count_content(m.content)
        return total

    return count


_LC_CONTENT = attrgetter("content")
_LC_TYPE = attrgetter("type")


def _stats(samples: list[int]) -> dict[str, float]:
    ordered = sorted(samples)
    p99 = ordered[max(0, math.ceil(0.99 * len(ordered)) - 1)]  # nearest rank
    return {
        "p50_ms": statistics.median(ordered) / 1e6,
        "p99_ms": p99 / 1e6,
        "mean_ms": statistics.fmean(ordered) / 1e6,
        "runs": len(ordered),
    }


def _case(
    messages: list[Message],
    lc_messages: list[lc.BaseMessage],
    counter: tk.TokenCounter,
    budget: int,
    runs: int,
    cold: bool,
) -> dict[str, Any]:
    lc_count, lc_batched, plan = (
        langchain_counter(counter),
        langchain_batched_counter(counter),
        Budget(window=budget),
    )

    def trim(token_counter: Callable[[list[lc.BaseMessage]], int]) -> Any:
        return lc.trim_messages(
            lc_messages,
            max_tokens=budget,
            strategy="last",
            token_counter=token_counter,
            include_system=True,
            start_on="human",
            allow_partial=False,
        )

    contenders: dict[str, Callable[[], Any]] = {
        "tierwise": lambda: Packer(counter).pack(conversation_layers(messages), plan),
        # the same, plus the sha256 checksum (computed on first access)
        "tierwise_checksum": lambda: Packer(counter).pack(conversation_layers(messages), plan).checksum,
        "trim_messages": lambda: trim(lc_count),
        "trim_batched": lambda: trim(lc_batched),
    }
    samples: dict[str, list[int]] = {name: [] for name in contenders}
    results: dict[str, Any] = {}
    for i in range(runs + (0 if cold else WARMUP)):
        for name, fn in contenders.items():  # interleaved: A, B, C, D, A, B, ...
            if cold:
                counter.clear_cache()
            start = time.perf_counter_ns()
            results[name] = fn()
            elapsed = time.perf_counter_ns() - start
            if cold or i >= WARMUP:
                samples[name].append(elapsed)
    pack, trimmed = results["tierwise"], results["trim_messages"]
    if lc_count(results["trim_batched"]) != lc_count(trimmed):
        raise AssertionError("the two trim_messages counters chose differently")
    out: dict[str, Any] = {
        "tierwise": {
            **_stats(samples["tierwise"]),
            "tokens": pack.report.total_tokens,
            "messages": len(pack.messages),
        },
        "tierwise_checksum": _stats(samples["tierwise_checksum"]),
        "trim_messages": {
            **_stats(samples["trim_messages"]),
            "tokens": lc_count(trimmed),
            "messages": len(trimmed),
        },
        "trim_batched": _stats(samples["trim_batched"]),
    }
    for peer in ("trim_messages", "trim_batched"):
        for p in ("p50", "p99"):
            out[f"ratio_{peer}_{p}"] = out[peer][f"{p}_ms"] / out["tierwise"][f"{p}_ms"]
    return out


_NOTE = (
    "ratio = peer / tierwise at the same percentile (above 1: tierwise is faster). "
    "trim = trim_messages with a per-message counter (how langchain's own counters work); "
    "trim batched = the same counts, batched like tierwise's. "
    "tw+sha = tierwise including its sha256 checksum."
)
_HEADERS = [
    "messages",
    "budget",
    "mode",
    "runs",
    "tierwise p50",
    "tierwise p99",
    "tw+sha p50",
    "trim p50",
    "trim p99",
    "trim batched p50",
    "trim batched p99",
    "ratio trim p50 / p99",
    "ratio batched p50 / p99",
    "tokens tw / trim",
    "msgs tw / trim",
]


def _cells(row: dict[str, Any]) -> list[str]:
    tw, tm, tb = row["tierwise"], row["trim_messages"], row["trim_batched"]
    return [
        f"{row['messages']:,}",
        f"{row['budget']:,}",
        row["mode"],
        str(tw["runs"]),
        f"{tw['p50_ms']:.3f}",
        f"{tw['p99_ms']:.3f}",
        f"{row['tierwise_checksum']['p50_ms']:.3f}",
        f"{tm['p50_ms']:.3f}",
        f"{tm['p99_ms']:.3f}",
        f"{tb['p50_ms']:.3f}",
        f"{tb['p99_ms']:.3f}",
        f"{row['ratio_trim_messages_p50']:.2f}× / {row['ratio_trim_messages_p99']:.2f}×",
        f"{row['ratio_trim_batched_p50']:.2f}× / {row['ratio_trim_batched_p99']:.2f}×",
        f"{tw['tokens']:,} / {tm['tokens']:,}",
        f"{tw['messages']:,} / {tm['messages']:,}",
    ]


def results_table(rows: list[dict[str, Any]]) -> Table:
    """The results as a rich table: a row per history length, budget and mode."""
    table = Table(title="tierwise pack vs langchain-core trim_messages (milliseconds)", title_justify="left")
    for header in _HEADERS:
        table.add_column(header, justify="left" if header == "mode" else "right")
    for row in rows:
        table.add_row(*_cells(row))
    return table


def _markdown(rows: list[dict[str, Any]], machine: str) -> str:
    align = [":---" if h == "mode" else "---:" for h in _HEADERS]
    lines = ["| " + " | ".join(cells) + " |" for cells in [_HEADERS, align]]
    lines += ["| " + " | ".join(_cells(r)) + " |" for r in rows]
    return f"{machine}\n\n" + "\n".join(lines) + f"\n\n{_NOTE}\n"


def run_pack_benchmark(
    sizes: list[int], budgets: list[int], *, repeat: int, encoding: str, out: Path | None
) -> list[dict[str, Any]]:
    """Time tierwise's packer and ``trim_messages`` on every (size, budget), warm and cold; print a table.

    Args:
        sizes: history lengths in messages; each gets one deterministic synthetic history.
        budgets: token budgets (the whole prompt, reply priming included).
        repeat: timed runs per warm case and contender (cold cases run ``max(5, repeat // 20)``).
        encoding: tokenizer both contenders count with.
        out: if given, write the rows as JSON there and a markdown table beside it (``.md``).

    Returns:
        One row per (size, budget, mode): both contenders' timings, tokens and messages kept.
    """
    counter = tk.TokenCounter(encoding)
    lc_version = version("langchain-core")
    machine = (
        f"python {platform.python_version()} · {platform.platform()} · {os.cpu_count()} CPUs · "
        f"langchain-core {lc_version} · encoding {encoding}"
    )
    console = Console()
    console.print(machine)
    rows: list[dict[str, Any]] = []
    for size in sizes:
        messages = synthetic_history(size)
        lc_messages = to_langchain(messages)
        for budget in budgets:
            full = counter.count_messages(messages)  # both counters must agree before anything is timed
            if langchain_counter(counter)(lc_messages) != full:
                raise AssertionError(f"langchain counter disagrees with tierwise ({size} messages)")
            for mode, runs in (("warm", repeat), ("cold", max(5, repeat // 20))):
                row = {
                    "size": size,
                    "messages": len(messages),
                    "history_tokens": full,
                    "budget": budget,
                    "mode": mode,
                    **_case(messages, lc_messages, counter, budget, runs, mode == "cold"),
                }
                rows.append(row)
    print_table(console, results_table(rows), keep=3)
    console.print(_NOTE)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        body = {
            "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpu_count": os.cpu_count(),
            "langchain_core": lc_version,
            "encoding": encoding,
            "repeat": repeat,
            "results": rows,
        }
        out.write_text(json.dumps(body, indent=2) + "\n", encoding="utf-8")
        out.with_suffix(".md").write_text(_markdown(rows, machine), encoding="utf-8")
    return rows
