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
import random
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
from tierwise.budget import Budget
from tierwise.packing import Packer, conversation_layers

__all__ = ["langchain_counter", "run_pack_benchmark", "synthetic_history", "to_langchain"]

SEED = 20240601
WARMUP = 3
Message = dict[str, Any]

_PROJECTS = [
    "Apollo launch",
    "Q3 roadmap",
    "website redesign",
    "hiring plan",
    "onboarding revamp",
    "budget review",
    "mobile app v2",
    "customer survey",
    "data migration",
    "team offsite",
]
_PEOPLE = ["Maya", "Tom", "Priya", "Lukas", "Sofia", "Dev", "Amara", "Jonas", "Elena", "Kenji"]
_TOPICS = [
    "task",
    "deadline",
    "meeting",
    "note",
    "milestone",
    "sprint review",
    "draft",
    "agenda",
    "reminder",
    "estimate",
    "blocker",
    "retro",
    "status report",
    "design doc",
]
_SLOTS = {
    "project": _PROJECTS,
    "project2": _PROJECTS,
    "person": _PEOPLE,
    "topic": _TOPICS,
    "day": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"],
    "verb": ["move", "schedule", "summarise", "assign", "reprioritise", "archive", "split", "review"],
    "status": ["on track", "at risk", "blocked", "done", "in progress", "not started"],
}
_SENTENCES = [
    "{project} has {n} open tasks, {m} of them due before {day}.",
    "\n- {verb} the {topic} for {project} ({status}, due {date})",
    "Your calendar is free on {day} between {hour}:00 and {hour2}:30.",
    "I moved the {topic} with {person} to {day} at {hour}:00 so it no longer clashes with {project}.",
    "{person} owns the {topic} for {project}; it is {status} and due on {date}.",
    "Your notes from the {project} sync mention a {topic} that {person} still has to confirm.",
    "Consider splitting the {topic} into {n} smaller tasks so {person} can start on {day}.",
    "First the {status} items for {project}, then the {topic} for {project2}.",
    "I added a reminder for {day} morning to check the {topic} with {person}.",
    "The {project} milestone slipped by {n} days because the {topic} is {status}.",
    "If you {verb} the {topic} now, {project2} keeps its {date} deadline.",
    "**{project}**: {m} of {n} tasks done; the next {topic} is on {day}.",
]
_QUESTIONS = [
    "What is left on {project} this week?",
    "Can you {verb} the {topic} with {person} to {day}?",
    "Summarise my notes on {project}.",
    "Which tasks are overdue for {project}?",
    "When am I free on {day} for a {topic} with {person}?",
    "Draft an agenda for the {project} {topic}.",
    "Is the {topic} for {project2} still {status}?",
    "Remind me what {person} said about {project}.",
]
_TOOLS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "list_tasks": lambda s: {"project": s["project"], "status": s["status"]},
    "search_notes": lambda s: {"query": f"{s['project']} {s['topic']}", "limit": s["n"]},
    "get_calendar": lambda s: {"day": s["day"], "days": s["m"] % 7 + 1},
    "create_task": lambda s: {
        "title": f"{s['verb']} {s['topic']}",
        "project": s["project"],
        "owner": s["person"],
    },
}
_LC_CLASSES: dict[str, type[lc.BaseMessage]] = {
    "system": lc.SystemMessage,
    "user": lc.HumanMessage,
    "tool": lc.ToolMessage,
}
_LC_ROLES = {"system": "system", "human": "user", "ai": "assistant", "tool": "tool"}


def _slots(rng: random.Random) -> dict[str, Any]:
    n, date = rng.randint(2, 40), f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    return {
        **{k: rng.choice(v) for k, v in _SLOTS.items()},
        "n": n,
        "m": rng.randint(0, n),
        "hour": rng.randint(8, 16),
        "hour2": rng.randint(9, 18),
        "date": date,
    }


def _text(rng: random.Random, words: int, pool: Sequence[str]) -> str:
    parts: list[str] = []
    count = 0  # words so far
    while count < words:
        sentence = rng.choice(pool).format(**_slots(rng))
        parts.append(sentence[:1].upper() + sentence[1:])
        count += len(sentence.split())
    return " ".join(parts).replace(" \n", "\n")


def _tool_result(rng: random.Random, words: int) -> str:
    items: list[dict[str, Any]] = []
    while len(json.dumps({"items": items}).split()) < words:
        s = _slots(rng)
        items.append(
            {
                "id": f"T-{rng.randint(100, 9999)}",
                "title": f"{s['verb']} {s['topic']}",
                "project": s["project"],
                "owner": s["person"],
                "status": s["status"],
                "due": s["date"],
                "note": rng.choice(_SENTENCES).format(**s).strip("\n- "),
            }
        )
    return json.dumps({"ok": True, "count": len(items), "items": items})


def synthetic_history(size: int, seed: int = SEED) -> list[Message]:
    """A deterministic productivity-assistant chat of ``size`` messages (at least 2), ending on a user turn.

    About one turn in four calls 1–2 tools; every call is followed by its result, then an answer.
    Sizes no mix of turns can reach exactly (3 and 5) come out one message short.
    """
    rng = random.Random(seed)
    system = "You are Tierwise Assistant, a productivity assistant for projects, tasks, calendars and notes. "
    messages: list[Message] = [{"role": "system", "content": system + _text(rng, 120, _SENTENCES)}]
    left = max(0, size - 2)  # messages before the final user question
    while left >= 2:
        want = 3 + rng.randint(1, 2) if rng.random() < 0.25 else 2  # messages in this turn
        fits = [n for n in (want, 2, 4, 5) if left - n >= 0 and left - n not in (1, 3)]
        need = fits[0] if fits else 2
        messages.append({"role": "user", "content": _text(rng, rng.randint(5, 60), _QUESTIONS)})
        if need > 2:
            calls = [
                {
                    "id": f"call_{rng.getrandbits(64):016x}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(_TOOLS[name](_slots(rng)))},
                }
                for name in rng.sample(sorted(_TOOLS), need - 3)
            ]
            messages.append({"role": "assistant", "content": None, "tool_calls": calls})
            messages += [
                {
                    "role": "tool",
                    "tool_call_id": call["id"],
                    "content": _tool_result(rng, rng.randint(50, 400)),
                }
                for call in calls
            ]
        answer = _text(rng, int(rng.triangular(10, 300, 60)), _SENTENCES)
        messages.append({"role": "assistant", "content": answer})
        left -= need
    messages.append({"role": "user", "content": _text(rng, rng.randint(5, 60), _QUESTIONS)})
    return messages


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
    table = Table(title="tierwise pack vs langchain-core trim_messages (milliseconds)", title_justify="left")
    for header in _HEADERS:
        table.add_column(header, justify="left" if header == "mode" else "right")
    for row in rows:
        table.add_row(*_cells(row))
    console.print(table)
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
