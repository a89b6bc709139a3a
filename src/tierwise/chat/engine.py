"""The turn loop: from the user's message to the final answer, streamed, stoppable, stored, accounted.

One turn::

    store the user's message (committed before anything else can fail)
    └─ cost guard: refuse if a hard limit is reached (nothing sent, the message kept)
    └─ step 1..max_steps:
         pack = memory + packer (budget health → pruning band; the turn so far travels whole)
         stream the model ──► text events; tool-call deltas assembled
         store the assistant message (with its tool calls)
         no tool calls → the answer; done
         run the calls concurrently ──► tool_call_start / tool_call_complete as each finishes
         store one tool message per call (in call order), loop
    └─ the last step is sent without tools, so a turn always ends with an answer
    └─ title after the first exchange · usage report + cost recorded · trace stored · done

A stop request (an :class:`asyncio.Event`, or the caller closing the stream) cancels the step in
flight. What was already stored stays; text streamed so far is stored as the assistant's message
with ``metadata.stopped``; calls cut off get a tool message saying so, so the history stays valid
for the next turn. A crash leaves at worst a user message without an answer (or calls without
results, which the packer leaves out); :meth:`ChatEngine.resume` answers it.

Every turn ends with exactly one :class:`~tierwise.chat.events.DoneEvent`; failures of the model,
the budget or the engine arrive as an :class:`~tierwise.chat.events.ErrorEvent` before it, never as
an exception out of the stream. A store that cannot write (the disk full, a read-only database) is
an error event of kind ``storage`` saying what was not stored and why (decision 77): the user's
message, or what the turn said after it; the chat's memory is then read again from the store.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from tierwise.budget import Budget, band_for_health
from tierwise.chat import housekeeping
from tierwise.chat.costguard import BudgetExceeded, CostGuard, unpriced_warning
from tierwise.chat.events import (
    DoneEvent,
    ErrorEvent,
    TextEvent,
    ToolCallComplete,
    ToolCallStart,
    TurnEvent,
    joined_text,
)
from tierwise.chat.memories import ChatMemories, default_memory, heavy, off_loop
from tierwise.chat.titles import title_chat
from tierwise.chat.trace import Tracer
from tierwise.chat.turn import (
    TurnResult,
    TurnState,
    account,
    account_side_call,
    cancel_when,
    chat_budget,
    created_entities,
    current_messages,
    failure_event,
    finish_turn,
    not_stored,
    pack_step,
    seen_text,
    step_tools,
    store_tool_results,
    stream_call,
    turn_start,
    waiting,
)
from tierwise.chat.upkeep import records_on_loop, store_records, upkeep_while_answering
from tierwise.errors import InputError, TierwiseError
from tierwise.memory.blobs import BlobStore
from tierwise.memory.engine import Memory
from tierwise.memory.persist import ChatMemory
from tierwise.packing.layers import ContextLayer
from tierwise.packing.prefix import cache_breakpoints
from tierwise.packing.report import PackReport
from tierwise.providers.base import ModelRequest, ModelResponse, Provider, ToolCall, Usage
from tierwise.providers.errors import ProviderError
from tierwise.providers.pricing import Price, cost
from tierwise.providers.settings import ProviderSettings
from tierwise.store import Chat, Store
from tierwise.store.faults import storage_fault
from tierwise.tools.definition import Tool, ToolContext
from tierwise.tools.executor import ToolExecutor
from tierwise.tools.offering import Toolbox, ToolOffering, escape_tool
from tierwise.tools.registry import ToolRegistry
from tierwise.tools.results import ToolResult
from tierwise.tools.strategies import DEFAULT_STRATEGIES, FailureStrategy

__all__ = ["DEFAULT_SYSTEM", "ChatEngine", "ContextSource", "TurnResult"]

ContextSource = Callable[[str, Chat], Sequence[ContextLayer]]
"""The application's layers for a turn, from the user id and the chat (its context type and entity)."""

log = logging.getLogger(__name__)

DEFAULT_SYSTEM = (
    "You are a concise, calm assistant. Answer in short paragraphs or short lists.\n"
    "Keep the conversation's narrative current with update_narrative when the objective or plan "
    "changes, and record_decision when the user decides something."
)
"""The default system prompt; how to recall earlier segments joins it once the chat has some
(:func:`~tierwise.chat.housekeeping.guided`)."""

_MAX_CACHED_CHATS = 64
_SENTINEL = object()


class ChatEngine:
    """Runs chat turns against a store, a provider and tools.

    Args:
        store: where chats, messages, tool calls, snapshots, audit and spend are kept.
        provider: the model (any :class:`~tierwise.providers.Provider`).
        tools: the application's tools (the four housekeeping tools are added unless
            ``memory_tools=False``).
        budget: the prompt budget; its ``reserve`` is the answer's ``max_tokens``.
        budget_set: whether ``budget`` is a ceiling the user chose (default: whether one was given).
            The OpenAI-compatible endpoint packs under the upstream model's window when it knows it,
            and under ``min(model window, budget)`` when the budget was set (decision 68).
        system: the system prompt (how to use recall_segments and open_blob is added while they
            are offered: :func:`~tierwise.chat.housekeeping.guided`).
        model: the model to ask for (default: the provider's).
        max_steps: model calls per turn at most; the last one is made without tools.
        guard: the cost guard (limits, spend ledger); ``None`` means no limits.
        title_provider: a model for titles; ``None`` uses the deterministic fallback.
        memory_factory: makes the memory engine of a chat, given its blob store (default: summaries
            of closed segments deferred until after each answer).
        prices: price overrides for :func:`~tierwise.providers.cost` (default: ``TIERWISE_PRICES``).
        trace_path: a JSONL file every turn's trace is appended to (traces are also in the audit log).
        tool_timeout_s: the limit for one tool run.
        memory_tools: register the housekeeping tools (recall_segments, open_blob,
            update_narrative, record_decision).
        context: the application's context layers for a turn (a user profile, the chat's location,
            related items), given the user id and the chat; called once per turn, packed with memory.
        tool_extras: handed to every tool in ``ToolContext.extras`` (a clock, a calendar, …).
        max_result_tokens: a tool result up to this size is read whole in the turn that asked for it
            (default: any size — one too large for its share of the step being answered keeps its
            head and tail and names its blob: memory/assemble.py); later turns get its tool's
            ``recap``, if it has one, and history keeps results over the blob threshold as blobs.
        tool_strategies: what to do when a tool fails (default: seed 000 §8.2's three).
        tool_offering: which tools each model call is offered (:mod:`tierwise.tools.offering`; the
            escape ``more_tools`` is registered with it); ``None``: all of them on every call.
        tools_grow: with an offering, a chat's tool list only grows (:class:`Toolbox`: a provider's
            prompt cache keeps it); ``False``: each call is offered only what it picks (fewest tokens,
            for a provider without prompt caching).

    Example:
        >>> import asyncio
        >>> from tierwise.providers.testing import ScriptedModel
        >>> store = Store.open("sqlite://")
        >>> user = store.create_user("ada")
        >>> chat = store.create_chat(user.id)
        >>> engine = ChatEngine(store, ScriptedModel("Friday at 10."))
        >>> result = asyncio.run(engine.run(user.id, chat.id, "When is the review?"))
        >>> result.text, result.done.reason, result.done.title
        ('Friday at 10.', 'answer', 'When is the review')
        >>> [m.message["role"] for m in store.list_messages(user.id, chat.id)]
        ['user', 'assistant']
    """

    def __init__(
        self,
        store: Store,
        provider: Provider,
        *,
        tools: ToolRegistry | Iterable[Tool] = (),
        budget: Budget | None = None,
        budget_set: bool | None = None,
        system: str = DEFAULT_SYSTEM,
        model: str | None = None,
        max_steps: int = 8,
        guard: CostGuard | None = None,
        title_provider: Provider | None = None,
        memory_factory: Callable[[BlobStore], Memory] | None = None,
        prices: Mapping[str, Price] | None = None,
        trace_path: Path | None = None,
        tool_timeout_s: float = 30,
        memory_tools: bool = True,
        context: ContextSource | None = None,
        tool_extras: Mapping[str, Any] | None = None,
        max_result_tokens: int | None = None,
        tool_strategies: Sequence[FailureStrategy] = DEFAULT_STRATEGIES,
        tool_offering: ToolOffering | None = None,
        tools_grow: bool = True,
    ) -> None:
        if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
            raise InputError(
                f"max_steps must be a whole number of model calls, 1 or more (got {max_steps!r})"
            )
        self.store = store
        self.provider = provider
        self.registry = tools if isinstance(tools, ToolRegistry) else ToolRegistry(tools)
        extras = housekeeping.memory_tools() if memory_tools else []
        for extra in [*extras, escape_tool()] if tool_offering is not None else extras:
            if extra.name not in self.registry:
                self.registry.register(extra)
        self.offering = tool_offering
        self.toolbox = Toolbox() if tool_offering is not None and tools_grow else None
        self.budget = budget or Budget(window=16_000, reserve=1_000)
        self.budget_set = budget is not None if budget_set is None else budget_set
        self.system = system
        self.model = model
        self.max_steps = max_steps
        self.guard = guard
        self.title_provider = title_provider
        self.memory_factory = memory_factory or default_memory
        if prices is None:  # read TIERWISE_PRICES once, not on every model call
            prices = ProviderSettings.load().prices or {}
        self.prices = prices
        if guard is not None and (
            unpriced := unpriced_warning(guard.limits, model or provider.model, prices)
        ):
            log.warning("%s", unpriced)  # a dollar limit this model's calls could never reach
        self.trace_path = trace_path
        self.tool_timeout_s = tool_timeout_s
        self.context = context
        self.tool_extras = dict(tool_extras or {})
        self.max_result_tokens = max_result_tokens
        self.tool_strategies = tuple(tool_strategies)
        self.memories = ChatMemories(store, self.memory_factory, _MAX_CACHED_CHATS)
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}
        self._upkeep: set[tuple[str, str]] = set()  # chats whose lock only upkeep after done holds
        self._wanted: set[tuple[str, str]] = set()  # … and a new turn waits for (a backlog yields)
        self.live: dict[tuple[str, str], PackReport] = {}  # a running turn's last pack (status)

    # -- public ------------------------------------------------------------------------------------

    def chat_memory(self, user_id: str, chat_id: str) -> ChatMemory:
        """The chat's memory, loaded from the store (and reloaded if the store moved on without us).

        Raises:
            NotFoundError: ``user_id`` has no chat ``chat_id``.
        """
        return self.memories.load(user_id, chat_id)[0]

    def is_running(self, user_id: str, chat_id: str) -> bool:
        """Whether a turn is in flight in this chat (its upkeep after ``done`` does not count)."""
        lock = self._locks.get((user_id, chat_id))
        return lock is not None and lock.locked() and (user_id, chat_id) not in self._upkeep

    async def turn(
        self,
        user_id: str,
        chat_id: str,
        content: str | None,
        *,
        stop: asyncio.Event | None = None,
        row: Chat | None = None,
    ) -> AsyncIterator[TurnEvent]:
        """Run one turn and stream its events; the last is always a :class:`DoneEvent`.

        Args:
            user_id: the chat's owner.
            chat_id: the chat.
            content: the user's message; ``None`` resumes a turn whose user message (or tool
                results) is stored but was never answered.
            stop: set it to stop the turn; closing the stream stops it too.
            row: the chat's row, if the caller has just read it (:meth:`Store.get_chat`) and no turn
                of the chat can have started since: saves reading it again.

        Raises:
            InputError: ``content`` is empty or not text, or there is nothing to resume.
            NotFoundError: ``user_id`` has no chat ``chat_id`` (nothing is stored).
        """
        if content is not None and (not isinstance(content, str) or not content.strip()):
            raise InputError("the message is empty; send some text")
        key = (user_id, chat_id)
        lock = self._locks.setdefault(key, asyncio.Lock())
        if lock.locked() and key not in self._upkeep:  # a turn runs (its upkeep after done: wait)
            yield ErrorEvent(
                "a turn is already running in this chat; stop it or wait for it to finish", kind="busy"
            )
            yield DoneEvent(chat_id, "refused")
            return
        if key in self._upkeep:  # the previous turn's upkeep: a long one stops at its next piece
            self._wanted.add(key)
        async with lock:
            try:
                chat, record = await self.memories.aload(user_id, chat_id, row)  # a long one: in a thread
            except Exception as exc:  # NotFoundError, and the rest but a storage fault, raised
                if (why := storage_fault(exc)) is None:
                    raise
                for event in not_stored(chat_id, f"the chat could not be read: {why}"):
                    yield event
                return
            start = turn_start(chat.memory.messages, content)
            if self.guard is not None:
                try:
                    self.guard.check(user_id, chat_id)
                except BudgetExceeded as exc:
                    yield ErrorEvent(f"{exc} (your message was not sent)", kind="budget")
                    yield DoneEvent(chat_id, "refused")
                    return
            t = TurnState(
                user_id, chat_id, chat, start, Tracer(), budget=chat_budget(self.budget, record), row=record
            )
            t.titled = record.title_generated or record.title.strip() not in ("", "New Chat")
            if content is not None:
                try:
                    t.seqs.append(chat.add({"role": "user", "content": content}).seq)
                except Exception as exc:
                    if (why := storage_fault(exc)) is None:
                        raise
                    self.memories.forget(user_id, chat_id)  # it may hold what the store lost
                    for event in not_stored(chat_id, why):
                        yield event
                    return
                t.start = len(chat.memory.turns) - 1
            chat.memory.begin_turn()
            producer = asyncio.create_task(self._produce(t))
            watcher = asyncio.create_task(cancel_when(stop, producer, t)) if stop is not None else None
            try:
                event = await t.queue.get()
                while event is not _SENTINEL:
                    if isinstance(event, TextEvent) and not t.queue.empty():
                        event, after = joined_text(event, t.queue)  # the caller fell behind: one event
                        yield event
                        event = after if after is not None else await t.queue.get()
                        continue
                    yield event
                    event = await t.queue.get()
            finally:
                if watcher is not None:
                    watcher.cancel()
                if not producer.done():
                    if t.finished_at is None:  # the caller went away mid-turn: stop, keep what was done
                        producer.cancel()
                    await asyncio.wait([producer])  # maintenance after done is left to finish

    async def run(
        self, user_id: str, chat_id: str, content: str | None, *, stop: asyncio.Event | None = None
    ) -> TurnResult:
        """Run one turn and collect its events (see :meth:`turn`)."""
        events = [event async for event in self.turn(user_id, chat_id, content, stop=stop)]
        done = events[-1]
        assert isinstance(done, DoneEvent)
        return TurnResult(events, done)

    async def resume(self, user_id: str, chat_id: str) -> TurnResult:
        """Answer a stored user message (or tool results) that was never answered, e.g. after a crash."""
        return await self.run(user_id, chat_id, None)

    def pending(self, user_id: str, chat_id: str) -> bool:
        """Whether the chat's last stored message still waits for the model (a crash, a failed turn)."""
        chat = self.chat_memory(user_id, chat_id)
        return bool(chat.memory.messages) and waiting(chat.memory.messages[-1])

    # -- the loop ----------------------------------------------------------------------------------

    async def _produce(self, t: TurnState) -> None:
        """Run the steps, then finish the turn whatever happened; always ends the event queue."""
        started = time.perf_counter()
        try:
            with t.tracer.span("turn", chat_id=t.chat_id):
                await self._steps(t)
        except asyncio.CancelledError:
            if not t.answered:  # a stop while titling leaves the stored answer an answer
                t.reason = "stopped"
            t.tracer.event("turn.stopped", step=t.steps, answered=t.answered)
        except BudgetExceeded as exc:  # pragma: no cover - checked before the loop
            t.reason, t.error = "refused", ErrorEvent(str(exc), kind="budget")
        except ProviderError as exc:
            t.reason = "error"
            t.error = ErrorEvent(f"the model failed: {exc}", kind="provider", retryable=exc.retryable)
        except TierwiseError as exc:  # ProviderNotConfigured, blocked requests, bad settings …
            t.reason, t.error = "error", ErrorEvent(str(exc), kind="provider")
        except Exception as exc:
            t.reason, t.error = "error", failure_event(exc, t.chat_id, "the turn stopped: the answer")
        try:
            with self.store.batch():  # one commit for everything the turn's end writes
                ending = finish_turn(t, self.guard, self.max_result_tokens, time.perf_counter() - started)
        except Exception as exc:  # never leave the caller waiting, nor untold
            told = failure_event(exc, t.chat_id, "the end of the turn")
            ending = [e for e in (t.error, told) if e is not None]
            ending.append(DoneEvent(t.chat_id, "error", t.answer, t.steps, list(t.seqs), t.title))
        if any(isinstance(e, ErrorEvent) and e.kind == "storage" for e in ending):
            self.memories.forget(t.user_id, t.chat_id)  # it may hold what the store lost
        for event in ending:
            t.emit(event)
        t.finished_at = time.perf_counter()
        self._upkeep.add((t.user_id, t.chat_id))
        try:  # after done, still holding the chat: records and maintenance
            if records_on_loop(self.store, t.chat):
                await asyncio.sleep(0)  # done goes out first
                self._after(t)
            else:
                await asyncio.to_thread(self._after, t)
        except Exception:
            log.exception("recording the turn in chat %s failed", t.chat_id)
        finally:
            self._upkeep.discard((t.user_id, t.chat_id))
            self._wanted.discard((t.user_id, t.chat_id))
            self.live.pop((t.user_id, t.chat_id), None)
            t.queue.put_nowait(_SENTINEL)

    async def _steps(self, t: TurnState) -> None:
        chat, budget = t.chat, t.budget or self.budget
        extra: Sequence[ContextLayer] = ()
        row = t.row if self.context or self.offering else None
        if self.context is not None and row is not None:
            with t.tracer.span("context.sources"):
                extra = list(self.context(t.user_id, row))
        seen = seen_text(chat.memory, t.start, extra, self.registry) if self.offering else ""
        tool_context = ToolContext(extras={**self.tool_extras, "registry": self.registry})
        executor = ToolExecutor(
            self.registry,
            store=self.store,
            user_id=t.user_id,
            chat_id=t.chat_id,
            memory=chat.memory,
            counter=chat.memory.counter,
            timeout_s=self.tool_timeout_s,
            strategies=self.tool_strategies,
        )  # no blobs here: storing a result compresses it for history; this turn sees it whole
        had_past = housekeeping.has_past(chat.memory)
        for step in range(1, self.max_steps + 1):
            last = step == self.max_steps
            t.steps = step
            health = self.guard.health(t.user_id, t.chat_id) if self.guard is not None else None
            band = band_for_health(health, self.guard.bands) if self.guard and health is not None else None
            events_before = len(chat.memory.events)
            current = current_messages(t)
            past = housekeeping.has_past(chat.memory)
            # Without an offering, one tool list a turn — but the retrieval tools join the step that
            # first has something to retrieve (an agent loop compacts within its one turn).
            if step == 1 or self.offering is not None or past != had_past:
                definitions = step_tools(
                    self.registry, self.offering, chat.memory, step, current, seen, row, self.toolbox
                )
            with t.tracer.span("context.build", step=step) as span:
                made = (chat, self.registry, self.system, budget, current, (band, health), t.start)
                build = partial(pack_step, *made, extra, last)
                pack = await off_loop(partial(build, definitions)) if heavy(chat) else build(definitions)
                if self.offering is None and not past and housekeeping.has_past(chat.memory):
                    # This pack compacted first (or cut a step): its pointers go out with their tools,
                    # in the same call, so the prompt's front changes once.
                    definitions = step_tools(
                        self.registry, self.offering, chat.memory, step, current, seen, row, self.toolbox
                    )
                    pack = build(definitions)
                had_past = housekeeping.has_past(chat.memory)
                report = pack.report
                span.attributes.update(
                    tokens=report.total_tokens,
                    budget=report.budget,
                    band=report.band,
                    checksum=report.checksum,
                )
            for event in chat.memory.events[events_before:]:
                t.tracer.event(
                    "compaction",
                    action=event.action,
                    tokens_before=event.tokens_before,
                    tokens_after=event.tokens_after,
                )
            t.records.append((pack, list(chat.memory.events[events_before:])))
            t.reports.append(report)
            self.live[(t.user_id, t.chat_id)] = report
            t.counted_prompt += report.total_tokens
            request = ModelRequest(
                pack.messages,
                pack.tools,
                model=self.model,
                max_tokens=budget.reserve or None,
                tool_choice="none" if last and pack.tools else None,
                cache_breakpoints=cache_breakpoints(pack.messages, system=int(bool(self.system))),
            )
            with t.tracer.span(
                "model.call", step=step, model=self.model or self.provider.model or ""
            ) as span:
                async with upkeep_while_answering(chat.memory, partial(self._spend_upkeep, t)):
                    response = await stream_call(t, self.provider, request)
                span.attributes.update(
                    model=response.model,
                    finish_reason=response.finish_reason,
                    fallbacks=len(response.fallbacks),
                    retries=len(response.retries),
                )
            account(t, response, response.model or self.model or self.provider.model or "", self.prices)
            calls = [] if last else response.tool_calls
            message = ModelResponse(text=response.text, tool_calls=calls).message()
            if response.tool_calls and last:
                t.reason = "step_limit"
            if message["content"] is None and not calls:
                message["content"] = ""  # an empty answer is still an answer, stored as such
            meta = {"model": response.model, "step": step, "finish_reason": response.finish_reason}
            stored = chat.add(message, metadata=meta)
            t.partial.clear()
            t.seqs.append(stored.seq)
            if not calls:
                t.answer, t.answered = response.text, True
                await self._title(t)
                return
            await self._run_tools(t, executor, calls, stored.id, step, tool_context)

    async def _run_tools(
        self,
        t: TurnState,
        executor: ToolExecutor,
        calls: Sequence[ToolCall],
        message_id: str,
        step: int,
        context: ToolContext,
    ) -> None:
        """Run the calls concurrently, report each as it finishes, store the results in call order."""
        t.pending_calls = list(calls)
        t.finished.clear()
        t.started.clear()

        async def one(call: ToolCall) -> ToolResult:
            t.started.add(call.id)
            t.emit(ToolCallStart(call.id, call.name, call.arguments, step))
            with t.tracer.span("tool.call", tool=call.name, call_id=call.id, step=step) as span:
                result = await executor.execute(
                    call.id, call.name, call.arguments, message_id=message_id, context=context
                )
                span.status = "ok" if result.success else "error"
                span.attributes.update(duration_ms=result.duration_ms, attempts=result.attempts)
                if result.error:
                    span.attributes["error"] = result.error
            t.finished[call.id] = result
            t.created.extend(created_entities(result, step))
            t.emit(
                ToolCallComplete(
                    call.id,
                    result.name,
                    result.content,
                    result.success,
                    result.duration_ms,
                    result.error,
                    result.blob_sha256,
                )
            )
            return result

        tasks = [asyncio.create_task(one(call)) for call in calls]
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
        store_tool_results(t, self.max_result_tokens)

    async def _title(self, t: TurnState) -> None:
        """Title the chat after its first exchange (a model if one is set, the fallback otherwise)."""
        if t.titled:
            return  # titled already, or named by the user
        first = next((m for m in t.chat.memory.messages if m.get("role") == "user"), None)
        if first is None:
            return
        with t.tracer.span("title", model=self.title_provider is not None):
            title = await title_chat(
                self.store,
                t.user_id,
                t.chat_id,
                str(first.get("content") or ""),
                t.answer,
                self.title_provider,
                spend=partial(account_side_call, t, prices=self.prices),  # a title is spend too
            )
        if title is not None:
            t.title = title

    # -- finishing ---------------------------------------------------------------------------------

    def _after(self, t: TurnState) -> None:
        """After done (on the loop or in a worker thread): memory upkeep, then the turn's records.

        A backlog of trios (a long chat stored without them) is made in pieces and left for the
        next turn's upkeep when a new message waits for this chat.
        """
        key, memory = (t.user_id, t.chat_id), t.chat.memory
        store_records(
            self.store,
            t,
            self.trace_path,
            lambda: memory.backlog and key in self._wanted,
            spend=partial(self._spend_upkeep, t),
        )

    def _spend_upkeep(self, t: TurnState, usage: Usage, model: str) -> None:
        """A summary model's calls after the turn: the chat's spend (guard ledger, the chat's tokens)."""
        dollars = cost(usage, model or t.model, prices=self.prices).dollars
        if self.guard is not None:
            self.guard.record(t.user_id, t.chat_id, tokens=usage.total_tokens, dollars=dollars)
        self.store.add_tokens_used(t.user_id, t.chat_id, usage.total_tokens)
