"""Memory upkeep around a turn, and the turn's records once it is done.

While the model answers, segments closed in the turn are summarised in a worker thread
(:func:`upkeep_while_answering`); after ``done``, the rest of the upkeep runs and the turn's records
(pack audits, snapshots, usage, the turn's audit entry with its trace) are written in one commit
(:func:`store_records`), on the event loop or in a thread (:func:`records_on_loop`).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

from tierwise.chat.memories import heavy
from tierwise.chat.turn import TurnState
from tierwise.collector import run_long
from tierwise.memory.engine import Memory
from tierwise.memory.persist import SEGMENTS_PER_COMMIT, ChatMemory
from tierwise.providers.base import Usage
from tierwise.store import Audit, Store
from tierwise.summarize.llm import LLMSummarizer, counting_usage, off_request_path

__all__ = ["records_on_loop", "store_records", "upkeep_while_answering"]

log = logging.getLogger(__name__)


@asynccontextmanager
async def upkeep_while_answering(
    memory: Memory, spend: Callable[[Usage, str], None] | None = None
) -> AsyncIterator[None]:
    """While the model answers: the summaries of segments closed in this turn, in a worker thread.

    An agent loop closes segments step after step inside one turn; their trios waited for the turn's
    end (:func:`store_records`), so the next compaction step made them all on the request path
    (26–29 ms p95 pack builds at 8k). Pieces run until the answer is in (the caller is back), then
    the thread is waited for: nothing reads the memory meanwhile (the pack is built, tools run after).
    """
    if not memory.unsummarized:  # nothing waits
        yield
        return
    stopped = threading.Event()

    def work() -> None:
        with off_request_path(), counting_usage() as spent:
            while not stopped.is_set() and memory.summarize_step():
                pass
        if spend is not None and any(spent):
            prompt, completion = spent
            spend(
                Usage(prompt, completion, prompt + completion), str(getattr(memory.summarizer, "model", ""))
            )

    task = asyncio.ensure_future(asyncio.to_thread(run_long, work))
    try:
        yield
    finally:
        stopped.set()
        await asyncio.wait([task])


def records_on_loop(store: Store, chat: ChatMemory) -> bool:
    """Whether a turn's records (:func:`store_records`) are written on the event loop, not in a thread.

    On SQLite, when no summary model is waited for and no backlog of trios is made: SQLite runs in
    the process, so a worker thread would only contend for the interpreter lock with the loop, and
    hold the writers' gate while it does (50 web chat streams: 15.6 against 19.4 ms of CPU a turn,
    added p50 51 against 91 ms), as ``/v1`` found (decision 33). A PostgreSQL write waits on a
    socket: a thread.
    """
    memory = chat.memory
    return (
        store.engine.dialect.name == "sqlite"
        and not memory.backlog
        and not heavy(chat)
        and not isinstance(memory.summarizer, LLMSummarizer)
    )


def store_records(
    store: Store,
    t: TurnState,
    trace_path: Path | None,
    stop: Callable[[], bool] | None = None,
    spend: Callable[[Usage, str], None] | None = None,
) -> None:
    """After done (in a worker thread): memory upkeep, then the turn's records.

    Upkeep summarises segments that closed during the turn and rebuilds the search index when due;
    then the packs' audit entries and snapshots, the turn with its usage and trace, and the new
    summaries are written in one commit. Nothing here changes what the model or the user saw; a
    crash before it loses only these records (summaries are made again on the next load).
    Upkeep runs in pieces (:meth:`~tierwise.memory.engine.Memory.maintain_step`) and ends early when
    ``stop()`` says so; what is left waits for the next upkeep. What a summary model's calls used
    is the chat's spend: ``spend(usage, model)`` is told (the cost guard's ledger, the chat's tokens).
    """
    memory = t.chat.memory
    with off_request_path(), counting_usage() as spent:  # a summary model may be asked: the answer is out
        while memory.maintain_step() and not (stop is not None and stop()):
            pass  # summaries of segments closed in the turn, index rebuilds
    if spend is not None and any(spent):  # this thread's calls: this chat's (one summarizer serves all)
        prompt, completion = spent
        spend(Usage(prompt, completion, prompt + completion), str(getattr(memory.summarizer, "model", "")))
    t.chat.save_segments(beyond=SEGMENTS_PER_COMMIT)  # a backlog's: in slices (SQLite's one writer)
    entry = Audit(
        "turn",
        t.chat_id,
        t.reports[-1].checksum if t.reports else None,
        {
            "reason": t.reason,
            "steps": t.steps,
            "message_seqs": t.seqs,
            "model": t.model,
            "trace_id": t.tracer.trace_id,
            "usage": t.usage.to_dict() if t.usage else None,
            "error": t.error.message if t.error else None,
            "trace": [span.to_dict() for span in t.tracer.spans],
        },
    )
    with store.batch(savepoints=False):  # one commit for every record of the turn (and those summaries)
        for i, (pack, compaction) in enumerate(t.records, 1):  # the turn's entry with the last pack's
            t.chat.record(pack, compaction, after=[entry] if i == len(t.records) else ())
        if not t.records:
            store.audit_many(t.user_id, [entry])
        if t.usage is not None:
            used = t.usage.prompt_tokens + t.usage.completion_tokens + t.side_tokens
            store.add_tokens_used(t.user_id, t.chat_id, used)
        if t.created:
            made = store.get_chat(t.user_id, t.chat_id).created_entities
            store.update_chat(t.user_id, t.chat_id, created_entities=[*made, *t.created])
    if trace_path is not None:
        try:
            t.tracer.write(trace_path)
        except OSError as exc:
            log.warning("could not write the trace to %s: %s", trace_path, exc)
