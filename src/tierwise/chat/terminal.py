"""The terminal chat behind ``tierwise chat``: a prompt, streamed markdown answers, tools as they run.

::

    chat_loop ── read a line (Ctrl-C / Ctrl-D at the prompt: exit, saying how to resume)
      ├─ /exit · /new · /title · /help
      └─ run_turn ── SIGINT sets the turn's stop event (the engine keeps what was said)
           └─ render_turn ── text as live markdown · → tool(args) · ✓ tool · 12 ms · notices ·
                             errors · the usage line · the title, when the first exchange makes one

Everything here takes a :class:`~rich.console.Console` and a ``read_line`` function, so tests drive
it with a recording console and scripted input; :func:`make_provider` is the one place the model is
built from the ``TIERWISE_*`` environment.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import signal
import threading
from collections.abc import AsyncIterable, Callable, Iterator
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.markdown import Markdown
from rich.text import Text

from tierwise.budget import DEFAULT_WINDOW, Budget
from tierwise.chat.costguard import CostGuard, Limits, StoreLedger
from tierwise.chat.engine import ChatEngine
from tierwise.chat.events import (
    DoneEvent,
    ErrorEvent,
    Notice,
    TextEvent,
    ToolCallComplete,
    ToolCallStart,
    TurnEvent,
    UsageEvent,
)
from tierwise.chat.resume_view import history_lines
from tierwise.errors import UserError
from tierwise.providers import Provider
from tierwise.store import NotFoundError, Store

__all__ = [
    "HELP",
    "LOCAL_USER",
    "chat_loop",
    "dollars_text",
    "history_lines",
    "housekeeping_label",
    "local_user",
    "make_engine",
    "make_provider",
    "render_turn",
    "resume_hint",
    "run_turn",
    "tool_complete_line",
    "tool_start_line",
    "usage_line",
]

LOCAL_USER = "local"
"""The id (and name) of the one user of the terminal chat."""

HELP = """\
Commands: /new starts a new chat · /title shows this chat's title · /exit leaves (so do Ctrl-D and
Ctrl-C at the prompt) · /help shows this. Ctrl-C while an answer streams stops it; what was said is kept."""

_ARGS_CHARS = 60
_LINE_CHARS = 96


def make_provider(model: str | None = None, *, cache_hints: bool | None = None) -> Provider:
    """The chat's model, from the ``TIERWISE_*`` environment (``model`` overrides ``TIERWISE_MODEL``).

    With nothing configured it is the offline assistant (:mod:`tierwise.workspace.assistant`), which
    says so in the banner and in every fallback answer. ``cache_hints`` (``--cache-hints``)
    overrides ``TIERWISE_CACHE_HINTS`` for a configured model.

    Raises:
        ProviderNotConfigured: only one of the base URL and the model is set; the message says what to set.
        InputError: a ``TIERWISE_*`` variable has a bad value.
    """
    from tierwise.providers.http import HTTPProvider
    from tierwise.workspace.app import assistant_provider

    provider = assistant_provider(model)
    if cache_hints is not None and isinstance(provider, HTTPProvider):  # a model server, any wire
        provider.cache_hints = cache_hints
    return provider


def make_engine(
    store: Store,
    provider: Provider,
    *,
    window: int | None = 16_000,
    reserve: int = 1_000,
    summary_model: str | None = None,
) -> ChatEngine:
    """The reference assistant's engine: workspace tools and context, spending limits from the environment.

    ``window`` is the budget (``reserve`` of it kept for the answer); ``None``: none set — the web chat
    packs under 16,000 tokens and the OpenAI-compatible endpoint under the upstream model's window
    (:mod:`tierwise.server.openai_budget`).

    Titles are asked of ``provider`` too (falling back to a title made from the first message);
    segment summaries, after each answer, by ``summary_model`` (``--summary-model``), else
    ``TIERWISE_SUMMARY_MODEL``, else none: they are extractive (:mod:`tierwise.chat.summaries`).

    Raises:
        InputError: ``window``/``reserve`` make no budget, a ``TIERWISE_*_LIMIT`` is not a number, or a
            ``TIERWISE_SUMMARY_*`` setting is bad.
    """
    from tierwise.chat.memories import summarizing_memory
    from tierwise.chat.summaries import model_summarizer
    from tierwise.workspace.app import assistant_engine

    guard = CostGuard(Limits.from_env(), StoreLedger(store))
    budget = Budget(window=DEFAULT_WINDOW if window is None else window, reserve=reserve)
    summarizer = model_summarizer(provider, model=summary_model)
    factory = summarizing_memory(summarizer)
    return assistant_engine(
        store, provider, budget=budget, budget_set=window is not None, guard=guard, memory_factory=factory
    )


def local_user(store: Store) -> str:
    """The id of the local user, created on first use."""
    try:
        return store.get_user(LOCAL_USER).id
    except NotFoundError:
        return store.create_user(LOCAL_USER, user_id=LOCAL_USER).id


def resume_hint(chat_id: str) -> str:
    """The command that continues chat ``chat_id``."""
    return f"tierwise chat --session {chat_id}"


# -- lines ----------------------------------------------------------------------------------------


def _abbreviate(text: str, limit: int) -> str:
    """``text`` on one line, at most ``limit`` characters (an ellipsis marks a cut)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _arguments(arguments: str) -> str:
    """A call's JSON arguments as ``key=value`` pairs (the raw text if it is not a JSON object)."""
    try:
        parsed: Any = json.loads(arguments) if arguments.strip() else {}
    except json.JSONDecodeError:
        return _abbreviate(arguments, _ARGS_CHARS)
    if not isinstance(parsed, dict):
        return _abbreviate(arguments, _ARGS_CHARS)
    pairs = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in parsed.items())
    return _abbreviate(pairs, _ARGS_CHARS)


def housekeeping_label(name: str, arguments: str | dict[str, Any]) -> str | None:
    """What a housekeeping call (:mod:`tierwise.chat.housekeeping`) did, in words; ``None`` for other tools.

    The web chat words them the same way (``static/transcript.js``): never a blob's hash.

    Example:
        >>> housekeeping_label("recall_segments", '{"ids": ["S12"], "form": "summary"}')
        'recalled S12 (summary)'
        >>> housekeeping_label("open_blob", {"sha256": "ab" * 32, "start": 0, "end": 6000})
        'read a stored tool result in full (bytes 0–6,000)'
        >>> housekeeping_label("list_tasks", "{}") is None
        True
    """
    if isinstance(arguments, str):
        try:
            parsed: Any = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            parsed = {}
    else:
        parsed = arguments
    args: dict[str, Any] = parsed if isinstance(parsed, dict) else {}
    if name == "recall_segments":
        raw = args.get("ids")
        listed = raw if isinstance(raw, list) else str(raw or "").replace(";", ",").split(",")
        ids = ", ".join(str(i).strip() for i in listed if str(i).strip())
        return f"recalled {ids or 'earlier segments'} ({args.get('form') or 'summary'})"
    if name == "open_blob":
        start, end = args.get("start"), args.get("end")
        span = ""
        if start is not None or end is not None:
            span = f" (bytes {start or 0:,}–{f'{end:,}' if isinstance(end, int) else 'end'})"
        return f"read a stored tool result in full{span}"
    if name == "more_tools":
        raw = args.get("names")
        names = ", ".join(str(n).strip() for n in raw if str(n).strip()) if isinstance(raw, list) else ""
        return f"asked for more tools{': ' + names if names else ''}"
    if name == "update_narrative":
        return "updated the conversation's narrative"
    if name == "record_decision":
        decision = args.get("decision")
        return "noted a decision" + (f": {_abbreviate(str(decision), _ARGS_CHARS)}" if decision else "")
    return None


def tool_start_line(event: ToolCallStart) -> str:
    """``→ name(key=value, …)``, or for a housekeeping call what it does (``→ recalled S3 (summary)``).

    Example:
        >>> tool_start_line(ToolCallStart("c1", "list_tasks", '{"project": "Launch", "limit": 2}', 1))
        '→ list_tasks(project="Launch", limit=2)'
    """
    label = housekeeping_label(event.name, event.arguments)
    return f"→ {label}" if label else f"→ {event.name}({_arguments(event.arguments)})"


_ENGINE_TOOL_WORDS = {
    "more_tools": "more tools",
    "open_blob": "stored result read",
    "recall_segments": "recalled",
    "update_narrative": "narrative updated",
    "record_decision": "decision noted",
}
"""How the end of an engine tool's call reads: words, not the tool's name (its start line says what)."""


def tool_complete_line(event: ToolCallComplete) -> str:
    """``✓ name · 12 ms``, or ``✗ name: what went wrong``.

    Example:
        >>> tool_complete_line(ToolCallComplete("c1", "list_tasks", "[]", True, 12))
        '✓ list_tasks · 12 ms'
        >>> tool_complete_line(ToolCallComplete("c2", "send", "", False, 3, "mail server down"))
        '✗ send: mail server down'
    """
    name = _ENGINE_TOOL_WORDS.get(event.name, event.name)
    if event.success:
        return f"✓ {name} · {event.duration_ms} ms"
    return f"✗ {name}: {_abbreviate(event.error or event.content or 'failed', _LINE_CHARS)}"


def dollars_text(dollars: float) -> str:
    """Dollars as a person reads them: cents for a dollar or more, two significant figures below.

    Example:
        >>> [dollars_text(d) for d in (12.3456, 0.4567, 0.0123, 0.00031, 0.0000041)]
        ['$12.35', '$0.46', '$0.012', '$0.00031', '<$0.0001']
    """
    if dollars >= 0.995:
        return f"${dollars:,.2f}"
    if dollars < 0.0001:
        return "<$0.0001" if dollars > 0 else "$0"
    rounded = float(f"{dollars:.2g}")  # two significant figures (0.0995 → 0.10, not 0.100)
    return f"${rounded:.{1 - math.floor(math.log10(rounded))}f}"


def usage_line(event: UsageEvent) -> str:
    """Tokens, dollars, context utilisation and the budget band of a turn, on one line.

    A model that costs nothing (the offline assistant, a local model priced at zero) shows no cost;
    one without a known price says so.

    Example:
        >>> report = {"summary": {"utilizationPercent": 12.5, "limit": 15000}}
        >>> print(usage_line(UsageEvent(report, 1875, 40, 0.00031, True, 0.72, "caution")))
        1,875 prompt + 40 completion tokens · $0.00031 · context 12.5% of 15,000 · band caution (health 72%)
        >>> usage_line(UsageEvent(report, 10, 2, 0.0, False))
        '10 prompt + 2 completion tokens · price unknown · context 12.5% of 15,000'
        >>> usage_line(UsageEvent(report, 10, 2, 0.0, True))
        '10 prompt + 2 completion tokens · context 12.5% of 15,000'

    A turn with tool steps made several model calls, each re-sending its prompt; the line says so, or
    the sum would read as one prompt's size:

        >>> usage_line(UsageEvent(report, 5400, 60, 0.0, True, model_calls=3))
        '3 model calls: 5,400 prompt + 60 completion tokens · context 12.5% of 15,000'
    """
    calls = f"{event.model_calls} model calls: " if event.model_calls > 1 else ""
    parts = [f"{calls}{event.prompt_tokens:,} prompt + {event.completion_tokens:,} completion tokens"]
    if not event.price_known:
        parts.append("price unknown")
    elif event.dollars > 0:
        parts.append(dollars_text(event.dollars))
    summary = event.report.get("summary", {})
    percent, limit = summary.get("utilizationPercent"), summary.get("limit")
    if percent is not None:
        parts.append(f"context {percent}%" + (f" of {limit:,}" if isinstance(limit, int) else ""))
    if event.band is not None:
        health = f" (health {event.health:.0%})" if event.health is not None else ""
        parts.append(f"band {event.band}{health}")
    return " · ".join(parts)


# -- one turn -------------------------------------------------------------------------------------


class _Answer:
    """The answer's text shown as live markdown; paused (and printed) when a tool line comes."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.text = ""
        self.live: Live | None = None

    def add(self, piece: str) -> None:
        self.text += piece
        if self.live is None:
            if not self.text.strip():
                return
            self.live = Live(
                Markdown(self.text),
                console=self.console,
                refresh_per_second=12,
                vertical_overflow="visible",
            )
            self.live.start()
        else:
            self.live.update(Markdown(self.text))

    def close(self) -> None:
        if self.live is not None:
            self.live.update(Markdown(self.text), refresh=True)
            self.live.stop()
            if not self.console.is_terminal:  # rich ends the last line on terminals only
                self.console.line()
        self.live, self.text = None, ""


async def render_turn(events: AsyncIterable[TurnEvent], console: Console) -> DoneEvent | None:
    """Show one turn's events on ``console`` as they come; return its :class:`DoneEvent`.

    Text is rendered as markdown, refreshed as it streams; tool calls, notices, errors, the usage
    line and a new title are printed between the stretches of text.
    """
    answer = _Answer(console)
    done: DoneEvent | None = None
    try:
        async for event in events:
            if isinstance(event, TextEvent):
                answer.add(event.text)
                continue
            answer.close()
            _show(event, console)
            if isinstance(event, DoneEvent):
                done = event
    finally:
        answer.close()
    return done


def _show(event: TurnEvent, console: Console) -> None:
    """Print one event other than text."""
    if isinstance(event, ToolCallStart):
        console.print(Text(tool_start_line(event), style="dim"))
    elif isinstance(event, ToolCallComplete):
        console.print(Text(tool_complete_line(event), style="dim" if event.success else "dim red"))
    elif isinstance(event, Notice):
        console.print(Text(event.message, style="dim"))
    elif isinstance(event, ErrorEvent):
        console.print(Text(f"error: {event.message}", style="red"))
    elif isinstance(event, UsageEvent):
        console.print(Text(usage_line(event), style="dim"))
    elif isinstance(event, DoneEvent):
        if event.reason == "stopped":
            console.print(Text("stopped; what was said so far is kept", style="dim"))
        elif event.reason == "step_limit":
            console.print(Text("the turn reached its step limit", style="dim"))
        if event.title:
            console.print(Text(f"title: {event.title}", style="bold"))


def _on_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def _sigint_sets(stop: asyncio.Event) -> Iterator[None]:
    """While inside, Ctrl-C (SIGINT) sets ``stop`` instead of interrupting; then the old handler is back."""
    if not _on_main_thread():  # signals reach the main thread only: nothing to install
        yield
        return
    loop = asyncio.get_running_loop()
    previous = signal.getsignal(signal.SIGINT)
    try:
        loop.add_signal_handler(signal.SIGINT, stop.set)
        installed = True
    except (NotImplementedError, RuntimeError, ValueError):  # Windows: a plain handler, thread-safe
        signal.signal(signal.SIGINT, lambda _sig, _frame: loop.call_soon_threadsafe(stop.set))
        installed = False
    try:
        yield
    finally:
        if installed:
            loop.remove_signal_handler(signal.SIGINT)
        signal.signal(signal.SIGINT, previous if previous is not None else signal.default_int_handler)


@contextlib.contextmanager
def _sigint_raises() -> Iterator[None]:
    """While inside, Ctrl-C raises :class:`KeyboardInterrupt` (asyncio's runner only cancels its task)."""
    if not _on_main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous if previous is not None else signal.default_int_handler)


async def run_turn(
    engine: ChatEngine, user_id: str, chat_id: str, content: str | None, console: Console
) -> DoneEvent | None:
    """Run and show one turn (``content=None`` answers a stored, unanswered message).

    Ctrl-C during the turn stops it: the engine stores what was said, marked as stopped.

    Returns:
        The turn's :class:`DoneEvent`, or ``None`` if the engine refused to start it (the reason is
        printed).
    """
    stop = asyncio.Event()
    try:
        with _sigint_sets(stop):
            return await render_turn(engine.turn(user_id, chat_id, content, stop=stop), console)
    except UserError as exc:  # nothing to resume, a chat gone missing
        console.print(Text(f"error: {exc}", style="red"))
        return None


# -- the loop -------------------------------------------------------------------------------------


def _read(read_line: Callable[[], str | None], console: Console) -> str | None:
    """The next line, or ``None`` for EOF (Ctrl-D) and Ctrl-C (the prompt's line is ended)."""
    try:
        line = read_line()
    except (EOFError, KeyboardInterrupt):
        line = None
    if line is None:
        console.line()
    return line


def _banner(engine: ChatEngine, console: Console) -> None:
    model = engine.model or engine.provider.model or engine.provider.name
    if engine.provider.name == "offline":
        from tierwise.workspace.app import OFFLINE_NOTICE

        console.print(Text(OFFLINE_NOTICE, style="yellow"))
    console.print(
        Text(
            f"tierwise chat · {model} · prompt budget {engine.budget.available:,} tokens · "
            "/help for commands, Ctrl-C stops an answer, Ctrl-D leaves",
            style="dim",
        )
    )


async def _recap(engine: ChatEngine, user_id: str, chat_id: str, console: Console) -> None:
    """Show a resumed chat's last messages; answer its last message if it never was."""
    chat = engine.store.get_chat(user_id, chat_id)
    console.print(Text(f"resuming “{chat.title}” · {chat.message_count} messages", style="bold"))
    for line in history_lines(engine.store, user_id, chat_id):
        console.print(Text(line, style="dim"))
    if engine.pending(user_id, chat_id):
        console.print(Text("the last message was never answered; answering it now", style="dim"))
        await run_turn(engine, user_id, chat_id, None, console)


class _Loop:
    """What the prompt loop carries from line to line: the chat in use."""

    def __init__(self, engine: ChatEngine, user_id: str, chat_id: str | None, console: Console) -> None:
        self.engine, self.user_id, self.chat_id, self.console = engine, user_id, chat_id, console

    async def handle(self, text: str) -> bool:
        """Act on one line of input; ``False`` means leave."""
        if not text:
            return True
        if text.startswith("/") and " " not in text:
            return self.command(text)
        if self.chat_id is None:
            self.chat_id = self.engine.store.create_chat(self.user_id).id
        await run_turn(self.engine, self.user_id, self.chat_id, text, self.console)
        return True

    def command(self, word: str) -> bool:
        """Carry out a ``/command``; ``False`` means leave."""
        say = self.console.print
        if word == "/exit":
            return False
        if word == "/new":
            if self.chat_id is not None:
                hint = f"new chat (to return to the last one: {resume_hint(self.chat_id)})"
                say(Text(hint, style="dim"), soft_wrap=True)  # never break the command
            self.chat_id = None
        elif word == "/help":
            say(Text(HELP, style="dim"))
        elif word == "/title":
            chat = self.engine.store.get_chat(self.user_id, self.chat_id) if self.chat_id else None
            say(Text(f"title: {chat.title}" if chat else "no title yet: say something first"))
        else:
            say(Text(f"unknown command {word}; /help lists the commands", style="red"))
        return True


def _goodbye(chat_id: str | None, console: Console) -> None:
    if chat_id is None:
        console.print(Text("bye", style="dim"))
    else:
        hint = f"bye · continue this chat with: {resume_hint(chat_id)}"
        console.print(Text(hint, style="dim"), soft_wrap=True)  # never break the command


async def chat_loop(
    engine: ChatEngine,
    user_id: str,
    chat_id: str | None,
    console: Console,
    read_line: Callable[[], str | None],
    *,
    resumed: bool = False,
) -> str | None:
    """Chat until ``/exit``, Ctrl-D or Ctrl-C at the prompt; say how to resume.

    Args:
        engine: runs the turns.
        user_id: the chatting user.
        chat_id: the chat; ``None`` creates one with the first message (so does ``/new``).
        console: where everything is shown.
        read_line: the next line of input, ``None`` (or :class:`EOFError`) at the end of input.
            Called on the event loop's thread: nothing else runs between turns.
        resumed: ``chat_id`` is an existing chat to continue: show its last messages and answer
            its last message first if it was never answered.

    Returns:
        The chat in use when the loop ended (``None`` if nothing was said since the last ``/new``).
    """
    _banner(engine, console)
    state = _Loop(engine, user_id, chat_id, console)
    try:
        with _sigint_raises():  # outside a turn, Ctrl-C leaves (inside one, it stops the turn)
            if resumed and chat_id is not None:
                await _recap(engine, user_id, chat_id, console)
            while (line := _read(read_line, console)) is not None and await state.handle(line.strip()):
                pass
    except KeyboardInterrupt:
        pass
    _goodbye(state.chat_id, console)
    return state.chat_id
