"""Replay: feed a conversation turn by turn through memory and the packer, and account for it.

Before each user message reaches the (imaginary) model, the pack is built exactly as the chat engine
would build it; the replay records its tokens against the full history's, the compaction steps taken,
and checks that every pack fits the budget and that no message is lost (every message fed is still
remembered — archived, summarised or retrieved, never deleted).
"""

from __future__ import annotations

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
    """One pack: before user message ``turn`` (its index among all messages).

    ``prefix`` is how many of its tokens repeat the previous pack from the start (what a provider's
    prompt cache can serve); ``full_prefix`` the same for the full history.
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
) -> ReplayReport:
    """Feed ``messages`` one by one; pack before every user message (after the first system ones).

    Args:
        messages: the conversation (leading system messages become the system prompt).
        times: one time (or ``None``) per message.
        budget: the budget every pack must fit.
        counter: the token counter (its encoding is the pack's).
        tools: tool definitions sent with every pack.
        store: optional ``(add, count)`` pair of callables persisting each message before it is
            packed (the chat store), so the replay can check nothing was lost there either.
        progress: called with the number of messages processed so far.
        on_pack: called with each user message's index and the pack built before it.
        summarizer: writes the segment summaries (default: extractive); a model summarizer's counts
            go in the report's ``summaries``.
    """
    start = 0
    while start < len(messages) and messages[start].get("role") in ("system", "developer"):
        start += 1
    system = "\n\n".join(str(m.get("content") or "") for m in messages[:start]) or None
    memory = Memory(counter=counter, blobs=InMemoryBlobStore(), summarizer=summarizer)
    report = ReplayReport(budget=budget.available)
    full = (
        REPLY_PRIMING + counter.count_tools(tools) + sum(counter.count_message(m) for m in messages[:start])
    )
    seen_events = 0
    previous: tuple[Sequence[Mapping[str, Any]], Sequence[Mapping[str, Any]]] | None = None
    full_previous = 0
    for i in range(start, len(messages)):
        message = messages[i]
        if store is not None:
            store[0](message, times[i])  # stored before any model sees it
        full += counter.count_message(message)
        if message.get("role") == "user":
            memory.begin_turn()
            pack = pack_turn(memory, budget, [message], system=system, tools=tools)
            if on_pack is not None:
                on_pack(i, pack)
            prefix = shared_prefix(previous, pack.messages, pack.tools, counter)
            previous = (pack.messages, pack.tools)
            events = memory.events[seen_events:]
            seen_events = len(memory.events)
            report.compactions.extend({"turn": i, **asdict(e)} for e in events)
            layers: dict[str, int] = {}
            for layer in pack.report.layers:
                layers[layer.kind] = layers.get(layer.kind, 0) + layer.tokens
            report.rows.append(
                ReplayRow(
                    turn=i,
                    pack_tokens=pack.report.total_tokens,
                    full_tokens=full,
                    saved=max(0, full - pack.report.total_tokens),
                    layers=layers,
                    compactions=tuple(e.action for e in events if e.changed),
                    within_budget=pack.report.total_tokens <= budget.available,
                    prefix=min(prefix, pack.report.total_tokens),
                    full_prefix=full_previous,
                )
            )
            full_previous = full - REPLY_PRIMING  # the next full history repeats all of this one
        memory.add(message, at=times[i])
        report.messages += 1
        if progress is not None:
            progress(i + 1)
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
    from tierwise.providers import OpenAICompatProvider, ProviderSettings

    settings = ProviderSettings.load()
    name = check_summary_model(model) or settings.summary_model
    if name is None or name.lower() in OFF:
        return None
    if settings.base_url is None:
        raise InputError(
            f"summary model {name!r} needs a model server: set TIERWISE_BASE_URL (and TIERWISE_API_KEY "
            "if it needs one), or leave out --summary-model for extractive summaries"
        )
    provider = OpenAICompatProvider(settings, model=name)
    return model_summarizer(provider, model=name, settings=settings, background_only=False, counter=counter)


def show_replay(report: ReplayReport, console: Any) -> None:
    """Print a replay report: totals, compaction steps and a sample of packs."""
    from rich.table import Table

    rows = report.rows
    packs = len(rows)
    mean_pack = sum(r.pack_tokens for r in rows) / packs if packs else 0.0
    mean_full = sum(r.full_tokens for r in rows) / packs if packs else 0.0
    table = Table(title="packs (every tenth, and the last)", title_justify="left")
    for header in ("before message", "pack tokens", "full history", "saved", "compaction"):
        table.add_column(header, justify="right" if header != "compaction" else "left")
    for i, row in enumerate(rows):
        if i % 10 == 0 or i == packs - 1 or row.compactions:
            table.add_row(
                str(row.turn),
                f"{row.pack_tokens:,}",
                f"{row.full_tokens:,}",
                f"{row.saved / row.full_tokens:.0%}" if row.full_tokens else "",
                ", ".join(row.compactions),
            )
    console.print(table)
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
