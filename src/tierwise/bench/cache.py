"""What a chat costs once providers cache prompt prefixes: tierwise's packs against the peers.

A chat is replayed message by message and every contender builds a request before every model call,
the same calls as ``tierwise replay`` (:func:`model_calls`): before each assistant message ``i``, a
request from ``messages[:i]`` (everything said before the call: the user's message, and within a
turn the tool calls and results so far), and, when the chat ends on a message nothing answers yet,
one more for the call that would answer it. Every contender is measured on the same calls. For each
contender and budget, every request is compared with the contender's previous one
(:func:`tierwise.packing.prefix.shared_prefix`): the tokens it repeats at the front are what a
provider can serve from its prompt cache. Reported per contender:

* **prefix reuse**: shared prefix ÷ request tokens, summed over the requests;
* **tokens sent**: all request tokens;
* **effective input tokens**: uncached tokens + cached tokens × the cached price (10% and 50%),
  and under OpenAI's rule (only prefixes of 1,024+ tokens, in 128-token steps; cached at 10%);
* each as a ratio to the **full history** (every message before the call, sent whole: the user's
  alternative when the chat fits the model), measured in the same run on the same calls.

Contenders, in the same run: tierwise's packs as ``tierwise replay`` builds them (memory, retrieval,
compaction); the full history; langchain-core's ``trim_messages(strategy="last")`` at the budget (the
newest messages before the call that fit, starting on a user message); and a **stepped window** that
sends the newest messages before the call and, when they no longer fit, drops the oldest half of
them at once (at a group boundary, on a user message if the half it keeps holds one).
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from tierwise.bench.locomo import load_locomo, parse_session_date
from tierwise.bench.synthetic import synthetic_history, timestamped
from tierwise.budget import Budget
from tierwise.packing.groups import MessageGroups
from tierwise.packing.prefix import cached_tokens, shared_prefix
from tierwise.replay import parse_transcript, replay
from tierwise.tables import print_table
from tierwise.tokens import REPLY_PRIMING, TokenCounter, get_counter

__all__ = [
    "Chat",
    "ContenderResult",
    "locomo_chats",
    "model_calls",
    "productivity_chat",
    "run_cache_benchmark",
]

Message = dict[str, Any]
Packs = Iterator[tuple[int, list[Message], list[Message]]]  # (call, messages, tools) per model call

CONTENDERS = ("tierwise", "full history", "trim_messages", "stepped window")


@dataclass(frozen=True)
class Chat:
    """A conversation to replay: messages (system first), their times, and tool definitions."""

    name: str
    messages: list[Message]
    times: list[datetime | None]
    tools: list[Message] = field(default_factory=list)


def locomo_chats(path: Path) -> list[Chat]:
    """The LoCoMo conversations as chats: speaker A is the user, speaker B the assistant."""
    chats: list[Chat] = []
    for sample in load_locomo(path):
        conv = sample["conversation"]
        speaker_a = conv.get("speaker_a")
        messages: list[Message] = []
        times: list[datetime | None] = []
        numbers = sorted(int(k.split("_")[1]) for k in conv if k.count("_") == 1 and k[8:].isdigit())
        for n in numbers:
            turns = conv.get(f"session_{n}") or []
            date = conv.get(f"session_{n}_date_time")
            at = parse_session_date(date) if isinstance(date, str) else None
            for turn in turns:
                text = str(turn.get("text") or "")
                if turn.get("blip_caption"):
                    text += f" [shares a photo: {turn['blip_caption']}]"
                role = "user" if turn.get("speaker") == speaker_a else "assistant"
                messages.append({"role": role, "content": text})
                times.append(at)
        chats.append(Chat(str(sample.get("sample_id", f"conv-{len(chats)}")), messages, times))
    return chats


def productivity_chat(size: int = 400) -> Chat:
    """The synthetic productivity chat (tool calls included), with session gaps."""
    messages, times, tools = parse_transcript({"messages": timestamped(synthetic_history(size))})
    return Chat(f"productivity-{size}", messages, times, tools)


# -- contenders --------------------------------------------------------------------------------------


def _system(messages: Sequence[Message]) -> int:
    """How many system (or developer) messages lead: ``tierwise replay`` makes them the system prompt."""
    n = 0
    while n < len(messages) and messages[n].get("role") in ("system", "developer"):
        n += 1
    return n


def model_calls(chat: Chat) -> list[int]:
    """The model calls to build a request for, as the message index each precedes (``tierwise replay``'s).

    Every assistant message after the leading system messages (the request holds ``messages[:i]``),
    and ``len(messages)`` when the chat ends on a message nothing answers yet (a user message, a
    tool result): the call that would answer it.
    """
    messages = chat.messages
    first = _system(messages)
    calls = [i for i in range(first, len(messages)) if messages[i].get("role") == "assistant"]
    if len(messages) > first and messages[-1].get("role") != "assistant":
        calls.append(len(messages))
    return calls


def full_history(chat: Chat, budget: Budget, counter: TokenCounter) -> Packs:
    """Everything said before the call, whole."""
    for i in model_calls(chat):
        yield i, chat.messages[:i], chat.tools


def trim_last(chat: Chat, budget: Budget, counter: TokenCounter) -> Packs:
    """langchain-core ``trim_messages(strategy="last", include_system=True, start_on="human")``."""
    from langchain_core.messages import trim_messages

    from tierwise.bench.pack import langchain_counter, to_langchain

    lc_messages = to_langchain(chat.messages)
    system = 1 if chat.messages and chat.messages[0].get("role") == "system" else 0
    count = langchain_counter(counter)
    tools = counter.count_tools(chat.tools)
    for i in model_calls(chat):
        kept = trim_messages(
            lc_messages[:i],
            max_tokens=budget.available - tools,
            strategy="last",
            token_counter=count,
            include_system=bool(system),
            start_on="human",
            allow_partial=False,
        )
        k = len(kept) - (1 if system and kept and kept[0].type == "system" else 0)
        yield i, [*chat.messages[:system], *chat.messages[i - k : i]], chat.tools


def stepped_window(chat: Chat, budget: Budget, counter: TokenCounter) -> Packs:
    """The newest messages from a start that moves only when they overflow: then past half of them.

    The window is ``messages[start:i]`` before the call at ``i``. When it overflows, ``start`` moves
    to the newest whole groups (a call with its results is one) holding at most half of it, then on
    to the first user message among them; if they hold none (a turn's own calls and results fill
    half the window) the window starts on their first group.
    """
    system = 1 if chat.messages and chat.messages[0].get("role") == "system" else 0
    fixed = (
        REPLY_PRIMING
        + counter.count_tools(chat.tools)
        + counter.count_messages(chat.messages[:system], prime_reply=False)
    )
    costs = counter.message_costs(chat.messages)
    start = system
    for i in model_calls(chat):
        if fixed + sum(costs[start:i]) > budget.available:
            groups = MessageGroups(chat.messages[:i], costs[:i])
            half = sum(costs[start:i]) // 2
            first, _ = groups.newest(i, stop=start, budget=min(half, budget.available - fixed))
            first, _ = groups.start_on("user", first, i)
            start = max(start, first)
        yield i, [*chat.messages[:system], *chat.messages[start:i]], chat.tools


def tierwise_packs(chat: Chat, budget: Budget, counter: TokenCounter) -> Packs:
    """Tierwise's packs, as ``tierwise replay`` builds them (memory, retrieval, compaction)."""
    packs: list[tuple[int, list[Message], list[Message]]] = []
    replay(
        chat.messages,
        chat.times,
        budget,
        counter=counter,
        tools=chat.tools,
        on_pack=lambda call, pack: packs.append((call, pack.messages, pack.tools)),
    )
    yield from packs


CONTENDER_FUNCS: dict[str, Callable[[Chat, Budget, TokenCounter], Packs]] = {
    "tierwise": tierwise_packs,
    "full history": full_history,
    "trim_messages": trim_last,
    "stepped window": stepped_window,
}


# -- measuring ----------------------------------------------------------------------------------------


@dataclass
class ContenderResult:
    """One contender on one chat at one budget."""

    packs: int = 0
    sent: int = 0
    shared: int = 0
    shared_openai: int = 0
    max_pack: int = 0
    calls: list[int] = field(default_factory=list)  # the message index each request precedes

    def effective(self, rate: float, *, openai: bool = False) -> float:
        """Input tokens as billed: uncached at full price, cached at ``rate``."""
        cached = self.shared_openai if openai else self.shared
        return self.sent - cached + rate * cached

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "packs": self.packs,
            "tokens_sent": self.sent,
            "shared_prefix": self.shared,
            "prefix_reuse": round(self.shared / self.sent, 4) if self.sent else 0.0,
            "effective_10": round(self.effective(0.10)),
            "effective_50": round(self.effective(0.50)),
            "effective_openai_10": round(self.effective(0.10, openai=True)),
            "max_pack": self.max_pack,
        }


def measure(packs: Packs, counter: TokenCounter) -> ContenderResult:
    """Prefix reuse and tokens of a sequence of packs."""
    result = ContenderResult()
    previous: tuple[Sequence[Message], Sequence[Message]] | None = None
    for call, messages, tools in packs:
        result.calls.append(call)
        tokens = counter.count_messages(messages) + counter.count_tools(tools)
        shared = min(shared_prefix(previous, messages, tools, counter), tokens)
        result.packs += 1
        result.sent += tokens
        result.shared += shared
        result.shared_openai += cached_tokens(shared, "openai")
        result.max_pack = max(result.max_pack, tokens)
        previous = (messages, tools)
    return result


def _budget_label(budget: int | None) -> str:
    return "fits" if budget is None else f"{budget:,}"


def run_cache_benchmark(
    data: Path | None,
    *,
    budgets: Sequence[int | None] = (4000, 8000, None),
    encoding: str = "o200k_base",
    productivity: bool = True,
    limit: int | None = None,
    out: Path | None = None,
    console: Console | None = None,
    wires: Sequence[str] = (),
    wire_limit: int | None = 1,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Replay each chat at each budget with every contender; print and return the figures.

    A budget of ``None`` is one the whole chat fits in (its full history's largest pack + 1,000).
    ``wires`` (``chat``, ``responses``, ``anthropic``): the chats are also replayed through those
    endpoints and ``/v1/chat/completions`` (:mod:`tierwise.bench.cache_wires`), the first
    ``wire_limit`` LoCoMo conversations (``None``: all) and the productivity chat; the result's
    ``wires`` holds their prefix reuse side by side. ``progress`` is told each chat and budget as its
    replay starts (``"conv-26 at 4000 (3 of 33)"``).
    """
    from tierwise.bench.cache_wires import wire_markdown, wire_rows, wire_summary

    console = console or Console()
    counter = get_counter(encoding)
    chats: list[Chat] = []
    if data is not None:
        chats.extend(locomo_chats(data)[: limit if limit else None])
    if productivity:
        chats.append(productivity_chat())
    rows: list[dict[str, Any]] = []
    by_wire: list[dict[str, Any]] = []
    locomo_seen = 0
    steps, step = len(chats) * len(budgets), 0
    for chat in chats:
        through_wires = bool(wires)
        if through_wires and not chat.name.startswith("productivity"):
            locomo_seen += 1
            through_wires = wire_limit is None or locomo_seen <= wire_limit
        for raw in budgets:
            step += 1
            if progress is not None:
                wired = " and through the endpoints" if through_wires else ""
                progress(f"{chat.name} at {_budget_label(raw)}{wired} ({step} of {steps})")
            whole = counter.count_messages(chat.messages) + counter.count_tools(chat.tools)
            budget = Budget(window=raw if raw is not None else whole + 1000)
            if through_wires:
                by_wire.extend(wire_rows(chat, _budget_label(raw), budget.window, counter, wires))
            results = {
                name: measure(CONTENDER_FUNCS[name](chat, budget, counter), counter) for name in CONTENDERS
            }
            calls = model_calls(chat)
            for name, res in results.items():  # every contender measured on the same model calls
                if res.calls != calls:
                    raise RuntimeError(
                        f"{name} built {len(res.calls)} requests on {chat.name}, not one before each of "
                        f"its {len(calls)} model calls"
                    )
            full = results["full history"]
            for name, res in results.items():
                row = {
                    "chat": chat.name,
                    "budget": _budget_label(raw),
                    "window": budget.window,
                    "contender": name,
                }
                row.update(res.to_dict())
                row["vs_full_10"] = round(res.effective(0.10) / full.effective(0.10), 4)
                row["vs_full_50"] = round(res.effective(0.50) / full.effective(0.50), 4)
                row["vs_full_openai"] = round(
                    res.effective(0.10, openai=True) / full.effective(0.10, openai=True), 4
                )
                row["vs_full_sent"] = round(res.sent / full.sent, 4)
                rows.append(row)
    summary = _summary(rows)
    _print(summary, console)
    result: dict[str, Any] = {
        "generated": datetime.now(UTC).isoformat(timespec="seconds"),
        "encoding": encoding,
        "chats": [c.name for c in chats],
        "summary": summary,
        "rows": rows,
    }
    wire_section = ""
    if by_wire:
        result["wires"] = {"summary": wire_summary(by_wire), "rows": by_wire}
        wire_section = (
            "\n## Through each endpoint\n\n"
            "The same chats replayed through tierwise's endpoints, each request in its wire's shape; "
            "prefix reuse of what the upstream received, and each wire's difference from "
            "/v1/chat/completions in points.\n\n" + wire_markdown(result["wires"]["summary"])
        )
        _print_wires(result["wires"]["summary"], console)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        command = f"tierwise bench cache --out {out}" + (f" --wire {','.join(wires)}" if wires else "")
        out.with_suffix(".md").write_text(
            "# Prompt-cache cost per chat\n\n"
            f"`{command}` ({result['generated']}, {encoding}); "
            "what the columns mean: bench/README.md.\n\n" + markdown(summary) + wire_section,
            encoding="utf-8",
        )
        console.print(f"written: {out} and {out.with_suffix('.md')}")
    return result


def _print_wires(summary: Sequence[Mapping[str, Any]], console: Console) -> None:
    table = Table(title="prefix reuse through each endpoint (means over chats)", title_justify="left")
    for col in ("chats", "budget", "wire", "prefix reuse", "vs chat (points)", "chats made"):
        table.add_column(col, justify="left" if col in ("chats", "wire") else "right", no_wrap=True)
    for s in summary:
        table.add_row(
            f"{s['chats']} ({s['n']})",
            s["budget"],
            s["wire"],
            f"{s['prefix_reuse']:.1%}",
            f"{s['vs_chat_points']:+.2f}",
            str(s["endpoint_chats"]),
        )
    print_table(console, table, keep=3)


def _summary(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Means over the LoCoMo conversations, and the productivity chat on its own, per budget and contender."""
    out = []
    keys: dict[tuple[str, str, str], list[Mapping[str, Any]]] = {}
    for row in rows:
        group = "productivity" if str(row["chat"]).startswith("productivity") else "locomo"
        keys.setdefault((group, row["budget"], row["contender"]), []).append(row)
    for (group, budget, contender), items in keys.items():
        trim = [r for r in rows if r["contender"] == "trim_messages" and r["budget"] == budget]
        by_chat_trim = {r["chat"]: r for r in trim}
        out.append(
            {
                "chats": group,
                "budget": budget,
                "contender": contender,
                "n": len(items),
                "prefix_reuse": statistics.fmean(r["prefix_reuse"] for r in items),
                "vs_full_sent": statistics.fmean(r["vs_full_sent"] for r in items),
                "vs_full_10": statistics.fmean(r["vs_full_10"] for r in items),
                "vs_full_50": statistics.fmean(r["vs_full_50"] for r in items),
                "vs_full_openai": statistics.fmean(r["vs_full_openai"] for r in items),
                "vs_trim_10": statistics.fmean(
                    r["effective_10"] / by_chat_trim[r["chat"]]["effective_10"] for r in items
                ),
                "max_pack": max(r["max_pack"] for r in items),
            }
        )
    return out


_COLUMNS = (
    ("chats", "left"),
    ("budget", "right"),
    ("contender", "left"),
    ("prefix reuse", "right"),
    ("sent ×full", "right"),
    ("@10% ×full", "right"),
    ("@50% ×full", "right"),
    ("OpenAI ×full", "right"),
    ("@10% ×trim", "right"),
)


def _cells(s: Mapping[str, Any]) -> list[str]:
    return [
        f"{s['chats']} ({s['n']})",
        s["budget"],
        s["contender"],
        f"{s['prefix_reuse']:.0%}",
        f"{s['vs_full_sent']:.2f}",
        f"{s['vs_full_10']:.2f}",
        f"{s['vs_full_50']:.2f}",
        f"{s['vs_full_openai']:.2f}",
        f"{s['vs_trim_10']:.2f}",
    ]


def _print(summary: Sequence[Mapping[str, Any]], console: Console) -> None:
    table = Table(title="prompt-cache cost per chat (means over chats)", title_justify="left")
    for col, justify in _COLUMNS:
        table.add_column(col, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    for s in summary:
        table.add_row(*_cells(s))
    print_table(console, table, keep=3)


def markdown(summary: Sequence[Mapping[str, Any]]) -> str:
    """The summary as a markdown table."""
    lines = ["| " + " | ".join(col for col, _ in _COLUMNS) + " |"]
    lines.append("|" + "|".join("---" if j == "left" else "---:" for _, j in _COLUMNS) + "|")
    for s in summary:
        cells = _cells(s)
        if s["contender"] == "tierwise":
            cells = [f"**{c}**" for c in cells]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
