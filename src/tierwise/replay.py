"""Replay: feed a conversation message by message through memory and the packer, and account for it.

Before every model call the pack is built as the chat engine builds it: every message is remembered
as it arrives (the engine stores first), and before each assistant message — a model call — memory
packs the turn so far (from the newest user message: the user's message, then the turn's tool calls
and results) with everything before it as memory's layers (``upto``). A transcript that ends on a
message nothing answers yet (a user message, a tool result) gets one more pack, for the call that
would answer it. The replay records each pack's tokens against the full history's (everything
before the call), its build time, the compaction steps taken, and checks that every pack fits the
budget and that no message is lost (every message fed is still remembered — archived, summarised or
retrieved, never deleted).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from tierwise.budget import Budget
from tierwise.errors import InputError
from tierwise.memory.assemble import pack_turn
from tierwise.memory.blobs import InMemoryBlobStore
from tierwise.memory.engine import Memory
from tierwise.packing.prefix import shared_prefix
from tierwise.packing.report import Pack
from tierwise.summarize.base import Summarizer
from tierwise.tokens import REPLY_PRIMING, TokenCounter

__all__ = ["ReplayReport", "ReplayRow", "replay", "replay_summarizer"]


@dataclass(frozen=True)
class ReplayRow:
    """One pack: before message ``turn`` (its index among all messages), the model call it feeds.

    ``turn`` is an assistant message's index, or the transcript's length for the call that would
    answer its last message. ``prefix`` is how many of its tokens repeat the previous pack from the
    start (what a provider's prompt cache can serve); ``full_prefix`` the same for the full
    history. ``ms``: the time memory and the packer took to build it.
    """

    turn: int
    pack_tokens: int
    full_tokens: int
    saved: int
    layers: dict[str, int]
    compactions: tuple[str, ...]
    within_budget: bool
    prefix: int = 0
    full_prefix: int = 0
    ms: float = 0.0
    checksum: str = ""


@dataclass
class ReplayReport:
    """Everything a replay measured."""

    budget: int
    messages: int = 0
    remembered: int = 0
    stored: int | None = None
    rows: list[ReplayRow] = field(default_factory=list)
    compactions: list[dict[str, Any]] = field(default_factory=list)
    summaries: dict[str, Any] | None = None  # a summary model's counts: calls, fallbacks, rejections

    @property
    def lost(self) -> int:
        """Messages fed but no longer remembered (must be 0)."""
        return self.messages - self.remembered

    @property
    def all_within_budget(self) -> bool:
        """Whether every pack fitted the budget."""
        return all(r.within_budget for r in self.rows)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "budget": self.budget,
            "messages": self.messages,
            "remembered": self.remembered,
            "stored": self.stored,
            "lost": self.lost,
            "packs": len(self.rows),
            "all_within_budget": self.all_within_budget,
            "max_pack_tokens": max((r.pack_tokens for r in self.rows), default=0),
            "compactions": self.compactions,
            "summaries": self.summaries,
            "rows": [asdict(r) for r in self.rows],
        }


def parse_transcript(data: Any) -> tuple[list[dict[str, Any]], list[datetime | None], list[dict[str, Any]]]:
    """Messages, their times and tool definitions from a transcript object.

    A transcript is ``{"messages": [...], "tools": [...]}`` (tools optional); a message may carry an
    ISO 8601 ``timestamp`` (or ``at``), which is taken off before the message is used.
    """
    from tierwise.packing.conversation import parse_conversation

    if not isinstance(data, Mapping):
        raise InputError('a transcript is a JSON object like {"messages": [...]}')
    times: list[datetime | None] = []
    clean: list[dict[str, Any]] = []
    for i, raw in enumerate(data.get("messages") or []):
        if not isinstance(raw, Mapping):
            raise InputError(f"messages[{i}] must be an object with a role and content")
        message = dict(raw)
        stamp = message.pop("timestamp", None) or message.pop("at", None)
        times.append(_parse_time(stamp, i))
        clean.append(message)
    conversation = parse_conversation({**data, "messages": clean})
    return conversation.message_dicts(), times, conversation.tool_dicts()


def _parse_time(value: Any, index: int) -> datetime | None:
    if value is None:
        return None
    try:
        at = datetime.fromisoformat(str(value))
    except ValueError:
        raise InputError(
            f"messages[{index}].timestamp {value!r} is not ISO 8601; write it like 2026-01-05T09:00:00+00:00"
        ) from None
    if at.tzinfo is None:
        raise InputError(f"messages[{index}].timestamp {value!r} has no time zone; add one, e.g. +00:00")
    return at


class _Calls:
    """The packs of one replay: each built, timed, measured against the full history and reported."""

    def __init__(
        self,
        memory: Memory,
        report: ReplayReport,
        budget: Budget,
        counter: TokenCounter,
        system: str | None,
        tools: Sequence[Mapping[str, Any]],
        on_pack: Callable[[int, Pack], None] | None,
        on_row: Callable[[ReplayRow, Pack], None] | None,
    ) -> None:
        self.memory, self.report, self.budget, self.counter = memory, report, budget, counter
        self.system, self.tools = system, tools
        self.on_pack, self.on_row = on_pack, on_row
        self.previous: tuple[Sequence[Mapping[str, Any]], Sequence[Mapping[str, Any]]] | None = None
        self.full_previous = 0
        self.seen_events = 0

    def pack(self, turn: int, current: Sequence[Mapping[str, Any]], upto: int, full: int) -> None:
        """Pack ``current`` (remembered from memory's turn ``upto`` on) before message ``turn``.

        ``full`` is the full history's request for the same call (everything before it).
        """
        memory, counter = self.memory, self.counter
        began = time.perf_counter()
        pack = pack_turn(memory, self.budget, current, system=self.system, tools=self.tools, upto=upto)
        ms = (time.perf_counter() - began) * 1000
        if self.on_pack is not None:
            self.on_pack(turn, pack)
        prefix = shared_prefix(self.previous, pack.messages, pack.tools, counter)
        self.previous = (pack.messages, pack.tools)
        events = memory.events[self.seen_events :]
        self.seen_events = len(memory.events)
        self.report.compactions.extend({"turn": turn, **asdict(e)} for e in events)
        layers: dict[str, int] = {}
        for layer in pack.report.layers:
            layers[layer.kind] = layers.get(layer.kind, 0) + layer.tokens
        total = pack.report.total_tokens
        row = ReplayRow(
            turn=turn,
            pack_tokens=total,
            full_tokens=full,
            saved=max(0, full - total),
            layers=layers,
            compactions=tuple(e.action for e in events if e.changed),
            within_budget=total <= self.budget.available,
            prefix=min(prefix, total),
            full_prefix=self.full_previous,
            ms=round(ms, 3),
            checksum=pack.report.checksum,
        )
        self.report.rows.append(row)
        if self.on_row is not None:
            self.on_row(row, pack)
        self.full_previous = full - REPLY_PRIMING  # the next full history repeats all of this one


def replay(
    messages: Sequence[Mapping[str, Any]],
    times: Sequence[datetime | None],
    budget: Budget,
    *,
    counter: TokenCounter,
    tools: Sequence[Mapping[str, Any]] = (),
    store: Any | None = None,
    progress: Callable[[int], None] | None = None,
    on_pack: Callable[[int, Pack], None] | None = None,
    summarizer: Summarizer | None = None,
    on_row: Callable[[ReplayRow, Pack], None] | None = None,
) -> ReplayReport:
    """Feed ``messages`` one by one; pack before every model call (every assistant message).

    The pack before assistant message ``i`` is memory's, as the chat engine builds it: the turn so
    far (``messages[start:i]``, ``start`` the newest user message before ``i``) as the input, and
    what came before it as memory's layers. If the last message is not an assistant's, one more
    pack is built for the call that would answer it (its ``turn`` is ``len(messages)``).

    Args:
        messages: the conversation (leading system messages become the system prompt).
        times: one time (or ``None``) per message.
        budget: the budget every pack must fit.
        counter: the token counter (its encoding is the pack's).
        tools: tool definitions sent with every pack.
        store: optional ``(add, count)`` pair of callables persisting each message before it is
            packed (the chat store), so the replay can check nothing was lost there either.
        progress: called with the number of messages processed so far.
        on_pack: called with the index of the message each pack precedes, and the pack.
        summarizer: writes the segment summaries (default: extractive); a model summarizer's counts
            go in the report's ``summaries``.
        on_row: called with each pack's row (its build time and checksum among the rest) and the pack.
    """
    first = 0
    while first < len(messages) and messages[first].get("role") in ("system", "developer"):
        first += 1
    system = "\n\n".join(str(m.get("content") or "") for m in messages[:first]) or None
    memory = Memory(counter=counter, blobs=InMemoryBlobStore(), summarizer=summarizer)
    report = ReplayReport(budget=budget.available)
    full = (
        REPLY_PRIMING + counter.count_tools(tools) + sum(counter.count_message(m) for m in messages[:first])
    )
    state = _Calls(memory, report, budget, counter, system, tools, on_pack, on_row)
    start = first  # the turn in progress: from the newest user message
    for i in range(first, len(messages)):
        message = messages[i]
        if message.get("role") == "assistant":  # a model call: packed before its answer is known
            state.pack(i, messages[start:i], start - first, full)
        if store is not None:
            store[0](message, times[i])  # stored before any model sees it
        memory.add(message, at=times[i])
        full += counter.count_message(message)
        if message.get("role") == "user":
            start = i
            memory.begin_turn()
        report.messages += 1
        if progress is not None:
            progress(i + 1)
    if len(messages) > first and messages[-1].get("role") != "assistant":  # still waits for an answer
        state.pack(len(messages), messages[start:], start - first, full)
    # Every message must still be reachable: covered, in order, by exactly one segment.
    covered = 0
    for segment in memory.segments:
        if segment.first != covered:
            break
        covered = segment.last + 1
    report.remembered = covered
    if store is not None:
        report.stored = store[1]()
    rejections = getattr(summarizer, "rejections", None)
    if rejections is not None:
        report.summaries = {
            "model": getattr(summarizer, "model", None),
            "calls": getattr(summarizer, "calls", 0),
            "fallbacks": getattr(summarizer, "fallbacks", 0),
            "rejections": list(rejections),
        }
    return report


def replay_summarizer(model: str | None, counter: TokenCounter) -> Summarizer | None:
    """The summarizer of ``tierwise replay``: a model's if ``--summary-model`` or the settings name one.

    A replay has no chat model, so without ``model`` and ``TIERWISE_SUMMARY_MODEL`` (or with
    ``extractive``) summaries are extractive and no model is called. The model is reached at
    ``TIERWISE_BASE_URL``; a replay has no request path, so it is asked as segments close.

    Raises:
        InputError: a model is named but ``TIERWISE_BASE_URL`` is not set, or a setting is bad.
    """
    from tierwise.chat.summaries import OFF, check_summary_model, model_summarizer
    from tierwise.providers import ProviderSettings
    from tierwise.providers.upstream import upstream_provider

    settings = ProviderSettings.load()
    name = check_summary_model(model) or settings.summary_model
    if name is None or name.lower() in OFF:
        return None
    if settings.base_url is None:
        raise InputError(
            f"summary model {name!r} needs a model server: set TIERWISE_BASE_URL (and TIERWISE_API_KEY "
            "if it needs one), or leave out --summary-model for extractive summaries"
        )
    provider = upstream_provider(settings, model=name)
    return model_summarizer(provider, model=name, settings=settings, background_only=False, counter=counter)


_SAMPLE = "every tenth from the first, the last, and each compaction step"
"""Which packs ``tierwise replay``'s table shows (numbered in the order of the model calls they precede)."""


def show_replay(report: ReplayReport, console: Any) -> None:
    """Print a replay report: totals, compaction steps and a sample of packs (:data:`_SAMPLE`)."""
    from rich.table import Table

    from tierwise.tables import print_table

    rows = report.rows
    packs = len(rows)
    mean_pack = sum(r.pack_tokens for r in rows) / packs if packs else 0.0
    mean_full = sum(r.full_tokens for r in rows) / packs if packs else 0.0
    table = Table(title=f"{packs:,} packs: {_SAMPLE}", title_justify="left")
    for header in ("pack", "before message", "pack tokens", "full history", "saved", "compaction"):
        table.add_column(header, justify="right" if header != "compaction" else "left")
    for i, row in enumerate(rows):
        if i % 10 == 0 or i == packs - 1 or row.compactions:
            table.add_row(
                f"{i + 1:,}",
                str(row.turn),
                f"{row.pack_tokens:,}",
                f"{row.full_tokens:,}",
                f"{row.saved / row.full_tokens:.0%}" if row.full_tokens else "",
                ", ".join(row.compactions),
            )
    print_table(console, table, keep=2)
    actions: dict[str, int] = {}
    for event in report.compactions:
        if event["live_from_after"] != event["live_from_before"]:
            actions[event["action"]] = actions.get(event["action"], 0) + 1
    steps = ", ".join(f"{k} ×{v}" for k, v in actions.items()) or "none"
    console.print(
        f"{report.messages:,} messages · {packs:,} packs · budget {report.budget:,} · "
        f"max pack {max((r.pack_tokens for r in rows), default=0):,} · mean pack {mean_pack:,.0f} "
        f"vs full history {mean_full:,.0f} ({1 - mean_pack / mean_full:.0%} saved)"
        if mean_full
        else ""
    )
    sent = sum(r.pack_tokens for r in rows)
    full_sent = sum(r.full_tokens for r in rows)
    if sent and full_sent:
        cached = sum(r.prefix for r in rows)
        full_cached = sum(r.full_prefix for r in rows)
        effective = sent - 0.9 * cached
        full_effective = full_sent - 0.9 * full_cached
        console.print(
            f"prompt cache: {cached / sent:.0%} of pack tokens repeat the previous pack "
            f"(full history {full_cached / full_sent:.0%}) · input tokens billed with cached tokens "
            f"at 10%: {effective:,.0f} vs full history {full_effective:,.0f} "
            f"({effective / full_effective:.2f}×)"
        )
    console.print(
        f"compaction: {steps} · every pack within budget: {'yes' if report.all_within_budget else 'NO'} · "
        f"lost messages: {report.lost}"
        + (f" · stored: {report.stored:,}" if report.stored is not None else "")
    )
    if report.summaries is not None:
        made = report.summaries
        console.print(
            f"summaries by {made['model']}: {made['calls']:,} requests · {made['fallbacks']:,} rejected "
            "(extractive used)" + (f" · last reason: {made['rejections'][-1]}" if made["rejections"] else "")
        )
