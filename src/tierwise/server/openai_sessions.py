"""Sessions of the OpenAI-compatible endpoint: which chat a request continues, what it stores, and when.

An OpenAI client sends its whole conversation on every request. tierwise keeps it as a chat of the
request's user (``context_type="api"``; its memory is the chat engine's, one object whether the web
UI or the endpoint touches it) and, per request:

1. **finds the chat** — the session's chat id is remembered in the process and its memory held by
   the chat engine, so a known session costs no store read (a chat changed or deleted behind the
   server's back is noticed on the next write, and the next request reloads or starts afresh); an
   unknown session is found by ``entity_id`` (the session key) or started (its chat row is stored
   with the request's first write);
2. **remembers what is new** — only messages not stored yet, *staged* in memory
   (:meth:`ChatMemory.stage`). If the client's history *diverges* from the stored one (shorter, or
   an earlier message differs: an edit or a regenerate), the request is on another *branch*: the
   earlier branch it continues, else a new one (:mod:`tierwise.server.openai_branches`; stored
   history is never rewritten, nothing deleted);
3. **packs the current turn** (the last user message and what follows it) with memory under the
   budget, in the cost guard's pruning band, and the caller forwards it;
4. **while the upstream answers**, has a summary model (if the chat has one) summarise the segments
   that closed, in a worker thread (:meth:`Sessions.summaries`), then runs memory upkeep (in pieces,
   the loop serving other requests between them) and stores the staged messages with the pack's
   audit and snapshot (:meth:`Sessions.settle`; a closed segment or a long history first, in a piece
   of its own, a long history 2,000 messages a commit so other chats' writes need not wait for it);
5. before ``[DONE]`` **remembers the answer** (:meth:`Sessions.answered`: the session's next
   request packs with it) and stores it with the turn's usage and spend — before a whole answer is
   sent, and before a stream's ``[DONE]`` when processes share the store; a single process stores
   a stream's answer right after ``[DONE]`` (decision 77: waiting cost 50 streams p99 163 ms).
   What could not be stored is told: :meth:`Sessions.answered` returns why, and
   :meth:`Sessions.settled` why the request's messages were not (the endpoint then answers 503). A
   request that gets no answer (the upstream failed, the client went away) still stores its
   messages, 20 ms later (:meth:`Sessions.end`).

Memory upkeep always runs at the same point of a request — after its messages, before its answer —
whichever step gets to it first, so the next pack does not depend on timing.

**Several processes** (``shared``, on PostgreSQL): each request finds the session's chat in the
store (one indexed read; the chat's memory is loaded again only if another process wrote to it), and
the answer, its usage and spend are stored before ``[DONE]`` (as with one process), so whichever
process the client's next request reaches finds it (and a cost guard sees its spend). Two requests of
one session at the same time on two processes are not serialised: the second to write finds the chat moved on
(:class:`StaleMemory`), stores nothing, and the client's next request carries its messages.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

import anyio

from tierwise.budget import Budget, band_for_health
from tierwise.chat.engine import ChatEngine
from tierwise.chat.memories import HEAVY_MESSAGES
from tierwise.chat.summaries import model_upkeep, pending_summaries
from tierwise.memory.persist import ChatMemory, StaleMemory
from tierwise.providers.base import ModelResponse
from tierwise.server.openai_branches import RETIRED_CONTEXT_TYPE, Branches
from tierwise.server.openai_history import diverged as _diverged
from tierwise.server.openai_history import entity_id, resent, session_title
from tierwise.server.openai_params import answer_message
from tierwise.server.openai_recall import Retrieval
from tierwise.server.session_prepared import Prepared
from tierwise.server.session_work import SessionWork
from tierwise.server.spent import Spent, record_spend, record_upkeep
from tierwise.store.errors import NotFoundError
from tierwise.store.faults import storage_fault
from tierwise.store.models import new_id, utcnow
from tierwise.summarize.llm import LLMSummarizer

__all__ = ["CONTEXT_TYPE", "HEAVY_MESSAGES", "RETIRED_CONTEXT_TYPE", "Prepared", "Sessions", "Turn"]

log = logging.getLogger(__name__)

CONTEXT_TYPE = "api"
_FINISH_AFTER_S = 0.02  # a request without an answer is stored after its error goes out
_MAX_REMEMBERED = 10_000

T = TypeVar("T")


@dataclass(frozen=True)
class Turn:
    """What a request asks for: its conversation (no system messages), its system messages, tools, budget."""

    conversation: list[dict[str, Any]]
    system: Sequence[Mapping[str, Any]] | None
    tools: list[dict[str, Any]]
    budget: Budget
    retrieval: Retrieval | None = None  # tierwise's retrieval tools, once there is a past (openai_recall)


@dataclass(frozen=True)
class Packed:
    """What the endpoint needs of a prepared request: the pack to forward, and a handle to finish it."""

    key: str
    chat_id: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    tokens: int
    handle: Prepared  # what Sessions needs to store the request and its answer


@dataclass
class _Finish:
    """A session's answer to store: ``work`` runs once, from its ``task`` or from the next request."""

    work: Callable[[], None]
    task: asyncio.Task[None] | None = None
    started: bool = False
    heavy: bool = False
    fault: str | None = None  # why the answer could not be stored


class Sessions(SessionWork):
    """The endpoint's sessions in one app: chat ids, per-session locks, answers still being stored.

    :meth:`prepare` and :meth:`finish` touch the store and pack; they run through :meth:`run` (on
    the event loop for SQLite, in worker threads for PostgreSQL). :meth:`begin`, :meth:`end`,
    :meth:`wait` and :meth:`drain` are called on the event loop.
    """

    def __init__(self, engine: ChatEngine, *, inline: bool | None = None, shared: bool | None = None) -> None:
        self.engine = engine
        self.store = engine.store
        sqlite = engine.store.engine.dialect.name == "sqlite"
        super().__init__(sqlite if inline is None else inline)
        # Other processes may serve the same database (PostgreSQL: ``serve --workers``, or several
        # hosts): a session's chat is found in the store on every request, and its answer is stored
        # before the client has it (see the module's "Several processes").
        self.shared = not sqlite if shared is None else shared
        self._guard = threading.Lock()
        self._locks: dict[tuple[str, str], threading.Lock] = {}
        self._chats: OrderedDict[tuple[str, str], str] = OrderedDict()
        self._pending: dict[tuple[str, str], _Finish] = {}
        self._creating: dict[tuple[str, str], dict[str, Any]] = {}  # new chats not stored yet
        self.branches = Branches(self.store, engine.memories, self._set_type)

    # -- on the event loop -------------------------------------------------------------------------

    async def begin(self, user: str, key: str, turn: Turn) -> Packed:
        """:meth:`prepare`, through :meth:`run` (with a cost guard, once the previous spend is recorded).

        The request's messages and pack audit are stored (:meth:`settle`) right after the caller has
        sent the pack upstream, while the answer is awaited.
        """
        await self.wait(user, key)
        heavy = len(turn.conversation) > HEAVY_MESSAGES  # a long history: off the loop, even on SQLite
        prepared = await self.run(lambda: self.prepare(user, key, turn), heavy=heavy)
        prepared.heavy = heavy

        async def settle() -> None:
            try:  # in pieces (and, first, the caller sends the pack upstream)
                await self._summaries_or_answer(prepared)
                while await self.later(partial(self.settle, prepared, "upkeep"), heavy=heavy):
                    pass
                if prepared.memory.unsynced:  # a closed segment, a long history: a piece of its own
                    await self.later(partial(self.settle, prepared, "messages"), heavy=heavy)
                await self.later(partial(self.settle, prepared), heavy=heavy)
            except Exception as exc:
                prepared.fault = _words(exc)
                log.error("storing the request of session %s failed: %s", key, prepared.fault, exc_info=exc)

        prepared.settling = self._spawn(settle())
        pack = prepared.pack
        messages, tokens = prepared.sent or (pack.messages, pack.report.total_tokens)
        return Packed(key, prepared.chat_id, messages, pack.tools, tokens, prepared)

    async def _summaries_or_answer(self, prepared: Prepared) -> None:
        """:meth:`summaries`, waited for until the answer is ready (:meth:`settled`), not longer.

        A summary model slower than the upstream never holds an answer (or a stream's first byte)
        back: the upkeep then goes on without it, its summaries provisional (extractive) until the
        model's, remembered when they come, replace them in the next request's upkeep.
        """
        summarizing = self._spawn(self.summaries(prepared))
        if not summarizing.done():
            hurried = asyncio.ensure_future(prepared.hurry.wait())
            await asyncio.wait((summarizing, hurried), return_when=asyncio.FIRST_COMPLETED)
            hurried.cancel()
        if summarizing.done():
            summarizing.result()  # (its failure is the request's, as before)
        else:
            summarizing.add_done_callback(_log_failure)

    async def summaries(self, prepared: Prepared) -> None:
        """A summary model's summaries of the segments that closed, made while the upstream answers.

        In a worker thread, outside the session's lock, on copies: the upkeep then finds them made
        (:mod:`tierwise.chat.summaries`). One the answer overtakes stays extractive. What the calls
        used is the chat's spend, as the web chat's upkeep is.
        """
        memory = prepared.memory.memory
        if isinstance(memory.summarizer, LLMSummarizer):
            jobs = await self.run(partial(pending_summaries, memory, prepared.lock))
            if jobs or memory.upkeep.unmerged:  # (merges: narrated by an earlier request's upkeep)
                used = await anyio.to_thread.run_sync(model_upkeep, memory, jobs, prepared.lock)
                if used.total_tokens:  # its own commit (the chat's row first, for a new session)
                    spend = (self.engine, prepared.memory, used, self._write_chat, prepared.lock)
                    await self.later(partial(record_upkeep, *spend), heavy=prepared.heavy)
                if prepared.hurry.is_set():  # the request's writes did not wait: the merge's, stored now
                    await self.later(partial(self._store_late, prepared), heavy=prepared.heavy)

    async def answered(
        self, packed: Packed, response: ModelResponse, spent: Spent, *, wait: bool = True
    ) -> str | None:
        """Remember the answer (the session's next request packs with it) and store it: why not, if not.

        Stored before the caller answers (decision 77): whole, with the turn's records, with
        ``wait`` (a whole answer, and its ``X-Tierwise-Stored`` header) or when processes share the
        store (another may serve the session's next request); otherwise — a stream, one process —
        the messages (:meth:`store_messages`), and the turn's records right after ``[DONE]``. Only
        while another session's long history is being written (SQLite has one writer) is a stream's
        answer stored right after ``[DONE]`` instead, by :meth:`end`'s job.
        """
        try:
            await self.run(partial(self.take_answer, packed.handle, response), heavy=packed.handle.heavy)
        except Exception:  # end() stores (and remembers) it all the same
            log.exception("remembering the answer of session %s failed", packed.key)
        job = self.end(packed, response, spent)
        if not wait and not self.shared:  # the messages now, the turn's records after [DONE]
            if self._heavy and not packed.handle.heavy:  # a long history is being written: after
                return None  # (waiting for SQLite's one writer held every stream: p50 548 ms)
            return await self.run(partial(self.store_messages, packed.handle), heavy=packed.handle.heavy)
        await self._start(job, now=True)
        return job.fault

    def store_messages(self, prepared: Prepared) -> str | None:
        """The request's messages and the answer remembered for it, committed: why not, if not.

        What a stream's ``[DONE]`` waits for in one process (decision 77): the conversation, so a
        process killed then has it. The turn's records (its pack's audit and snapshot, usage, spend)
        follow right after, from :meth:`end`'s job, whose write of the messages then finds nothing
        left to store.
        """
        try:
            with prepared.lock, self._losing(prepared):
                if not prepared.lost:
                    chat = prepared.memory
                    if not prepared.kept_up:  # (upkeep first, as in _settle: the same next pack)
                        prepared.kept_up = True
                        chat.memory.maintain()
                    self._store_long(chat)
                    self._write_chat(chat, chat.flush)
        except Exception as exc:  # end()'s job tries again, and logs
            return _words(exc)
        return None

    async def settled(self, packed: Packed) -> str | None:
        """Once the request's messages are stored (:meth:`begin`): why they could not be, if not."""
        prepared = packed.handle
        prepared.hurry.set()  # summaries still being made are not waited for
        if prepared.settling is not None and not prepared.settling.done():
            await asyncio.shield(prepared.settling)
        return prepared.fault

    def end(
        self, packed: Packed, response: ModelResponse | None = None, spent: Spent | None = None
    ) -> _Finish:
        """Store what :meth:`begin` prepared, with the answer if there is one, after the caller answered.

        Without ``response`` (the upstream failed, the client went away) only the request's new
        messages are stored. Runs through :meth:`run` once the event loop has sent what the caller
        just gave it. The session's next request does not wait for it (its memory is already up to
        date), unless a cost guard must see this answer's spend first (:meth:`wait`). A failure is
        logged, never raised (the client already has the answer, and sends it again next time).
        """
        prepared = packed.handle
        slot = (prepared.memory.user_id, prepared.key)

        def work() -> None:
            try:
                self.finish(prepared, response, spent)
            except Exception as exc:
                job.fault = _words(exc)
                log.error(
                    "storing the answer of session %s failed: %s", prepared.key, job.fault, exc_info=exc
                )

        job = _Finish(work, heavy=prepared.heavy)

        async def later() -> None:
            try:
                await asyncio.sleep(_FINISH_AFTER_S)  # the answer goes out; the next request comes in
                await self._start(job)
            finally:
                if self._pending.get(slot) is job:
                    del self._pending[slot]
                    with self._guard:
                        if slot not in self._chats:  # forgotten meanwhile: its lock goes too
                            self._drop_lock(slot)

        job.task = self._spawn(later())
        self._pending[slot] = job
        return job

    async def _start(self, job: _Finish, *, now: bool = False) -> None:
        if not job.started:
            job.started = True
            await (self.run if now else self.later)(job.work, heavy=job.heavy)

    async def wait(self, user: str, key: str) -> None:
        """With a cost guard or :attr:`shared`: the session's previous turn is stored first."""
        job = self._pending.get((user, key))
        if job is None or (self.engine.guard is None and not self.shared):
            return
        if not job.started:  # still queued behind other work: this request needs it now
            await self._start(job, now=True)
        elif job.task is not None:
            await asyncio.shield(job.task)

    # -- through run() ------------------------------------------------------------------------------

    def lock(self, user: str, key: str) -> threading.Lock:
        """The session's lock (requests of one session touch its chat one at a time)."""
        with self._guard:
            return self._locks.setdefault((user, key), threading.Lock())

    def prepare(self, user: str, key: str, turn: Turn) -> Prepared:
        """Find (or start) the session's chat, stage the new messages, pack the current turn.

        Raises:
            BudgetExceeded: the cost guard refuses the turn (nothing is stored).
        """
        with self.lock(user, key):
            try:
                return self._prepare(user, key, turn)
            except NotFoundError:  # the remembered chat was deleted meanwhile: find or start another
                self._forget(user, key)
                return self._prepare(user, key, turn)

    def _remembered(self, user: str, key: str) -> str | None:
        with self._guard:
            chat_id = self._chats.get((user, key))
            if chat_id is not None:
                self._chats.move_to_end((user, key))
            return chat_id

    def _remember(self, user: str, key: str, chat_id: str) -> None:
        with self._guard:
            self._chats[(user, key)] = chat_id
            while len(self._chats) > _MAX_REMEMBERED:  # the least recent session is forgotten
                evicted, _ = self._chats.popitem(last=False)
                self._drop_lock(evicted)

    def _drop_lock(self, slot: tuple[str, str]) -> None:
        """Forget a session's lock unless it is in use or its answer is still to be stored."""
        lock = self._locks.get(slot)
        if lock is not None and not lock.locked() and slot not in self._pending:
            del self._locks[slot]

    def _set_type(self, user: str, chat_id: str, context_type: str) -> None:
        """Mark a session's chat active or an earlier branch, stored or not stored yet."""
        with self._guard:
            if (creating := self._creating.get((user, chat_id))) is not None:  # stored later, as this
                creating["context_type"] = context_type
                return
        self.store.update_chat(user, chat_id, context_type=context_type)

    def _forget(self, user: str, key: str) -> None:
        with self._guard:
            self._chats.pop((user, key), None)

    def _chat(self, user: str, key: str, conversation: list[dict[str, Any]]) -> ChatMemory:
        chat_id = self._remembered(user, key)
        with self._guard:
            unstored = chat_id is not None and (user, chat_id) in self._creating  # ours alone so far
        if self.shared and not unstored:  # another process may have moved the session on
            chat_id = None
        if chat_id is None:
            found = self.store.list_chats(user, context_type=CONTEXT_TYPE, entity_id=entity_id(key), limit=1)
            chat_id = found[0].id if found else None
        memory = None
        if chat_id is not None and self.shared and not unstored:  # held if the store has not moved on
            memory = self.engine.memories.load(user, chat_id)[0]
        elif chat_id is not None:  # a session's own chat is read from the store only when not held
            memory = self.engine.memories.held(user, chat_id) or self.engine.chat_memory(user, chat_id)
        if memory is not None and _diverged(memory.memory.messages, conversation):  # an edit, a regenerate
            left = memory.chat_id  # (the session's lock keeps its own writes out meanwhile)
            memory = self.branches.switch(user, key, left, conversation, CONTEXT_TYPE)
            log.info("session %s left chat %s for %s", key, left, memory.chat_id if memory else "a fork")
        if memory is None:  # the chat row is stored with the request's first write (_settle)
            chat_id = new_id()
            with self._guard:
                self._creating[(user, chat_id)] = {
                    "title": session_title(key, conversation),
                    "context_type": CONTEXT_TYPE,
                    "entity_id": entity_id(key),
                    "id": chat_id,
                }
            memory = self.engine.memories.new(user, chat_id)
        self._remember(user, key, memory.chat_id)
        return memory

    def _prepare(self, user: str, key: str, turn: Turn) -> Prepared:
        conversation = turn.conversation
        memory = self._chat(user, key, conversation)
        guard = self.engine.guard
        health = band = None
        if guard is not None:
            guard.check(user, memory.chat_id)
            health = guard.health(user, memory.chat_id)
            band = band_for_health(health, guard.bands) if health is not None else None
        start = len(memory.memory.messages)
        if len(conversation) > start:  # stored with the answer (or by end() without one)
            with self.store.batch(savepoints=False):  # a large tool result's blob is stored now
                memory.stage(conversation[start:], at=utcnow())
        messages = memory.memory.messages
        users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
        upto = users[-1] if users else len(messages) - 1
        before = len(memory.memory.events)
        build = partial(
            memory.pack,
            turn.budget,
            conversation[upto:],  # as the client sent it: the step being answered whole, not compressed
            upto=upto,
            band=band,
            health=health,
            record=False,  # recorded by settle(), while the upstream answers
        )
        if turn.retrieval is not None:  # with tierwise's retrieval tools, once there is a past
            pack = turn.retrieval.pack(memory, build, turn.system, turn.tools)
        else:
            pack = build(system=turn.system, tools=turn.tools)
        compaction = list(memory.memory.events[before:])
        prepared = Prepared(key, memory, pack, compaction, len(conversation) - start, self.lock(user, key))
        report = pack.report  # what memory sends whole goes as the client sent it this time
        prepared.sent = resent(memory.memory, conversation, pack.messages, report.total_tokens, report.budget)
        return prepared

    def settle(self, prepared: Prepared, step: str = "all") -> bool:
        """Memory upkeep, then the request's messages and pack audit (while the upstream answers).

        ``step="upkeep"`` does one piece of the upkeep and says whether more is left; ``"messages"``
        stores what is staged and what it changed (a closed segment, say) in a commit of its own;
        ``"all"`` does the rest. The upkeep runs before the request's answer is remembered, and each
        piece once: whichever of :meth:`settle`, :meth:`take_answer` and :meth:`finish` gets to it
        first runs it, so the next pack is the same whatever the timing.
        """
        with prepared.lock, self._losing(prepared):
            if prepared.lost:
                return False
            if step == "upkeep":
                if not prepared.kept_up:  # summaries of segments that closed, index rebuilds
                    prepared.kept_up = not prepared.memory.memory.maintain_step()
                return not prepared.kept_up
            self._settle(prepared, "messages" if step == "messages" else "record")
        return False

    def _settle(self, prepared: Prepared, upto: str = "record") -> None:
        """Upkeep; then (``"messages"``) what is staged and what it changed; then (``"record"``) the pack."""
        chat = prepared.memory
        if not prepared.kept_up:
            prepared.kept_up = True
            chat.memory.maintain()
        if upto == "messages" and not prepared.recorded:
            self._store_long(chat)
            self._write_chat(chat, chat.flush)
        elif upto == "record" and not prepared.recorded:
            self._write_chat(chat, partial(chat.record, prepared.pack, prepared.compaction))
            prepared.recorded = True

    def _store_late(self, prepared: Prepared) -> None:
        """What the memory changed since the request's writes (a narrative merged after its answer)."""
        with prepared.lock, self._losing(prepared):
            if not prepared.lost:
                self._store_long(prepared.memory)
                self._write_chat(prepared.memory, prepared.memory.flush)

    def _store_long(self, chat: ChatMemory) -> None:
        """A long staged history stored in slices (the new chat's row with the first), outside any batch."""
        slot = (chat.user_id, chat.chat_id)
        with self._guard:
            creating = self._creating.get(slot)
        create = None if creating is None else partial(self.store.create_chat, chat.user_id, **creating)
        if chat.store_staged(first=create) and creating is not None:
            with self._guard:
                self._creating.pop(slot, None)

    def _write_chat(self, chat: ChatMemory, write: Callable[[], None]) -> None:
        """``write`` in one commit, with the chat's row first if it is a new session's not stored yet."""
        slot = (chat.user_id, chat.chat_id)
        with self._guard:
            creating = self._creating.get(slot)
        with self.store.batch(savepoints=False):
            if creating is not None:
                self.store.create_chat(chat.user_id, **creating)
            write()
        if creating is not None:
            with self._guard:
                self._creating.pop(slot, None)

    def take_answer(self, prepared: Prepared, response: ModelResponse) -> None:
        """Remember the answer in the session's memory (staged: stored by :meth:`finish`)."""
        with prepared.lock, self._losing(prepared):
            if not prepared.lost:
                self._settle(prepared, "upkeep")  # upkeep comes before the answer, always
                meta = {"source": "openai-compat", "model": response.model}
                prepared.memory.stage([answer_message(response)], at=utcnow(), metadata=meta)
                prepared.answered = True

    def finish(self, prepared: Prepared, response: ModelResponse | None, spent: Spent | None) -> None:
        """Store the answer with the turn's usage and spend, in one commit.

        What of :meth:`settle` has not run yet runs first, in the same commit; without an answer,
        only that is stored.
        """
        with prepared.lock, self._losing(prepared):
            if prepared.lost:
                return
            if response is None or spent is None:
                self._store_long(prepared.memory)
                with self.store.batch(savepoints=False):
                    self._settle(prepared)
                    prepared.memory.flush()
            else:
                self._store_answer(prepared, response, spent)

    @contextmanager
    def _losing(self, prepared: Prepared) -> Iterator[None]:
        """If the block finds the chat changed or gone, mark the request lost and forget the chat."""
        chat = prepared.memory
        try:
            yield
        except StaleMemory:  # another writer moved the chat on: nothing stored, memory reloaded
            log.info("chat %s changed under session %s: reloading it", chat.chat_id, prepared.key)
            prepared.lost = True
            self.engine.memories.forget(chat.user_id, chat.chat_id)
        except NotFoundError:  # deleted meanwhile: the client's next request starts a new chat
            log.info("chat %s of session %s is gone", chat.chat_id, prepared.key)
            prepared.lost = True
            self.engine.memories.forget(chat.user_id, chat.chat_id)
            self._forget(chat.user_id, prepared.key)

    def _store_answer(self, prepared: Prepared, response: ModelResponse, spent: Spent) -> None:
        chat, store = prepared.memory, self.store
        user, chat_id = chat.user_id, chat.chat_id
        details = {
            "source": "openai-compat",
            "reason": response.finish_reason or "stop",
            "steps": prepared.steps,
            **({"retrieval": prepared.retrieval} if prepared.retrieval else {}),
            "model": response.model,
            "messages_added": prepared.added + 1,
            "usage": {
                "prompt_tokens": spent.prompt_tokens,
                "completion_tokens": spent.completion_tokens,
                "dollars": round(spent.dollars, 6),
                "price_known": spent.known,
                "cached_tokens": spent.cached_tokens,
                "prefix_tokens": prepared.pack.report.prefix_tokens,
                "saved_dollars": round(spent.saved_dollars, 6),
            },
        }
        checksum = prepared.pack.report.checksum
        try:
            self._store_long(chat)
            with store.batch(savepoints=False):
                self._settle(prepared)  # what of it has not run yet
                if prepared.answered:
                    chat.flush()  # the answer (and whatever else is staged)
                else:  # take_answer() failed: stored (and remembered) now
                    chat.add(
                        answer_message(response),
                        metadata={"source": "openai-compat", "model": response.model},
                    )
                store.audit(user, "turn", chat_id=chat_id, checksum=checksum, details=details)
                store.add_tokens_used(user, chat_id, spent.total_tokens)
                record_spend(self.engine, user, chat_id, spent)
        except Exception:
            # The upstream answered (and billed): its spending is recorded even though the turn's
            # messages were not stored (all of the batch was rolled back), so limits still hold.
            try:
                with store.batch(savepoints=False):
                    store.audit(user, "turn", chat_id=chat_id, checksum=checksum, details=details)
                    record_spend(self.engine, user, chat_id, spent)
            except Exception:
                log.exception("recording the spending of session %s failed", prepared.key)
            raise


def _words(exc: Exception) -> str:
    """Why a write failed, as the client is told: a storage fault in words, else the exception."""
    return storage_fault(exc) or f"{type(exc).__name__}: {exc}"


def _log_failure(task: asyncio.Task[None]) -> None:
    """Log how summaries the answer did not wait for failed (nobody awaits them)."""
    if not task.cancelled() and task.exception() is not None:
        log.error("summaries made after the answer failed", exc_info=task.exception())
