"""Memory bound to a stored chat: persisted first, written through, audited.

Each method's writes are one transaction (``store.batch(savepoints=False)``: nothing in them
catches a store error, so a failure rolls all of it back) — except that more closed segments than
:data:`SEGMENTS_PER_COMMIT` (a long history's, made after it was stored) are written in commits of
their own that many at a time (:meth:`ChatMemory.save_segments`): on SQLite one writer at a time holds
the database, and a long transaction kept every other write waiting (or failing after the busy timeout).

:class:`ChatMemory` is what the chat engine and the service use. Every message is stored before
memory (or any model) sees it; closed segments, the narrative and archiving are written through to
the store; every pack's composition, drops and reasons go to the audit log with its checksum (and
the scrubber's redactions since the last one, by kind), and a context snapshot (seed 004) is saved
per pack. :meth:`ChatMemory.load` rebuilds memory from what the store holds, so a chat survives a
restart.

Each pack's report says how many of its tokens repeat the chat's previous pack from the start
(``PackReport.prefix_tokens``, the expected prompt-cache hit). The previous pack is held in memory
only: after a restart (or a reload) the first pack has nothing to compare with (``None``).

The one exception is :meth:`ChatMemory.stage`, for callers whose client keeps the conversation
itself (the OpenAI-compatible endpoint): messages are remembered at once and stored with the next
write, so a request's history is stored in the same commit as its answer. Lost staged messages are
sent again by the client with its next request.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, NamedTuple

from tierwise.budget import Budget, PruningBand
from tierwise.collector import breathe
from tierwise.memory.analysis import of_message, trusted
from tierwise.memory.assemble import Recap, pack_turn
from tierwise.memory.blobs import BlobRef, UnknownBlobError
from tierwise.memory.compaction import CompactionEvent
from tierwise.memory.engine import Form, Memory
from tierwise.memory.narrative import Narrative
from tierwise.memory.segments import Segment
from tierwise.packing.layers import ContextLayer
from tierwise.packing.prefix import shared_prefix
from tierwise.packing.report import Pack
from tierwise.packing.tiers import tier_breakdown
from tierwise.store import Audit, NotFoundError, Store, StoredMessage
from tierwise.store.models import utcnow

__all__ = [
    "MESSAGES_PER_COMMIT",
    "SEGMENTS_PER_COMMIT",
    "ChatMemory",
    "StaleMemory",
    "StoreBlobs",
    "record_pack",
]

SEGMENTS_PER_COMMIT = 50
"""Closed segments written per commit when there are more (~50 ms of a write transaction on SQLite)."""

MESSAGES_PER_COMMIT = 2_000
"""Staged messages stored per commit when there are more (~60 ms of a write transaction on SQLite).

SQLite has one writer: a 100,001-message history stored in one commit held every other chat's
writes for 2.9 s; in slices, they wait for one slice at most (the store's writers take turns)."""


class _Staged(NamedTuple):
    """A message remembered but not stored yet (:meth:`ChatMemory.stage`)."""

    message: Mapping[str, Any]
    tokens: int
    at: datetime | None
    metadata: Mapping[str, Any] | None
    analysis: tuple[str, str] | None = None  # what memory read off it (memory/analysis.py), stored


class StaleMemory(RuntimeError):
    """Staged messages were stored at other positions than memory gave them: load the chat again."""

    def __init__(self, chat_id: str, expected: int, got: int) -> None:
        super().__init__(f"chat {chat_id}: staged messages stored from position {got}, not {expected}")
        self.chat_id = chat_id


class StoreBlobs:
    """The store's ``blobs`` table as a :class:`~tierwise.memory.blobs.BlobStore` for one user."""

    def __init__(self, store: Store, user_id: str) -> None:
        self.store = store
        self.user_id = user_id

    def put(self, content: bytes, *, mime: str, summary: str, entities: Sequence[str]) -> BlobRef:
        """Store ``content`` once per user and sha256."""
        ref = self.store.put_blob(self.user_id, content, mime, summary=summary, entities=list(entities))
        return BlobRef(ref.sha256, ref.size, ref.mime)

    def get(self, sha256: str, start: int | None = None, end: int | None = None) -> bytes:
        """The bytes ``[start, end)`` of this user's blob.

        Raises:
            UnknownBlobError: this user has no blob with this sha256 (as the protocol says).
        """
        try:
            return self.store.get_blob(self.user_id, sha256, start, end)
        except NotFoundError:
            raise UnknownBlobError(f"no blob sha256:{sha256}") from None


class ChatMemory:
    """One stored chat's memory.

    Args:
        store: the store (scoped by ``user_id`` on every call).
        user_id: the chat's owner.
        chat_id: the chat.
        memory: the in-memory engine (a new :class:`Memory` by default).
    """

    def __init__(self, store: Store, user_id: str, chat_id: str, memory: Memory | None = None) -> None:
        self.store = store
        self.user_id = user_id
        self.chat_id = chat_id
        self.memory = memory or Memory(blobs=StoreBlobs(store, user_id))
        self._saved_segments: dict[str, tuple[int, bool]] = {}
        self._archived_seq = -1
        self._saved_narrative: Narrative | None = None
        self._staged: list[_Staged] = []
        self._previous: tuple[list[dict[str, Any]], list[dict[str, Any]]] | None = None  # the last pack

    @classmethod
    def load(cls, store: Store, user_id: str, chat_id: str, memory: Memory | None = None) -> ChatMemory:
        """Rebuild memory from the stored messages (and the stored narrative and trios, if any).

        Nothing stored is made again: the messages' token counts (when a sample of them matches
        memory's counter) and the closed segments' trios are taken as stored.
        """
        chat = store.get_chat(user_id, chat_id)  # raises NotFoundError for another user's chat
        bound = cls(store, user_id, chat_id, memory)
        messages = store.list_messages(user_id, chat_id)
        counted = _counts_hold(messages, bound.memory)
        bodies = [stored.message for stored in messages]
        analyses = trusted(bodies, store.message_analyses(user_id, chat_id))
        for stored, body, made in zip(messages, bodies, analyses, strict=True):
            breathe()
            tokens = stored.token_count if counted else None
            bound.memory.add(body, at=stored.created_at, id=f"m{stored.seq}", tokens=tokens, analysis=made)
        if chat.narrative:
            bound.memory.narrative = Narrative.from_dict(dict(chat.narrative))
            bound._saved_narrative = bound.memory.narrative
        bound._archived_seq = chat.messages_archived - 1
        bound.memory.resume(chat.messages_archived)  # working memory as it was: no step on reload
        trios = {saved.id: saved for saved in store.list_segments(user_id, chat_id)}
        for seg in bound.memory.segments:
            saved = trios.get(seg.id)
            if saved is None or not seg.closed or (saved.first_seq, saved.last_seq) != (seg.first, seg.last):
                continue
            bound._saved_segments[seg.id] = (seg.last, True)  # already stored: not written again
            if not bound.memory.settled(seg):  # summaries deferred: take the stored trio
                bound.memory.restore(
                    seg, saved.header, saved.summary, saved.entities, saved.topic, saved.outcome
                )
        bound.save_segments(beyond=SEGMENTS_PER_COMMIT)  # trios made again: in slices if many
        with store.batch(savepoints=False):
            bound._sync()
        return bound

    def add(
        self,
        message: Mapping[str, Any],
        *,
        at: datetime | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> StoredMessage:
        """Store ``message`` (committed first), then remember it.

        A tool result over the blob threshold is stored once: its full text as a blob, the message
        as the compressed form that points to it.
        """
        given, message = message, self.memory.compress(message)
        tokens = self.memory.counter.count_message(message)
        made = of_message(message)  # stored with it: a load reads it instead of the text again
        with self.store.batch(savepoints=False):  # the message and what it changed, committed together
            if self._staged:  # stored with the staged messages, in one statement
                stored = self._store_staged(_Staged(message, tokens, at, metadata, made.stored()))[-1]
            else:
                stored = self.store.add_message(
                    self.user_id,
                    self.chat_id,
                    message,
                    token_count=tokens,
                    at=at,
                    metadata=metadata,
                    analysis=made.stored(),
                )
            self.memory.add(
                stored.message,
                at=stored.created_at,
                id=f"m{stored.seq}",
                given=_given(given, message),
                analysis=made,
            )
            self._sync()
        return stored

    def extend(self, messages: Sequence[Mapping[str, Any]]) -> list[StoredMessage]:
        """Store several messages in one write (an imported history), then remember them in order.

        The same as :meth:`add` for each (tool results over the blob threshold kept as blobs), with
        one insert for them all and memory written through once at the end.
        """
        compressed = [self.memory.compress(message) for message in messages]
        counts = [self.memory.counter.count_message(message) for message in compressed]
        made = [of_message(message) for message in compressed]
        with self.store.batch(savepoints=False):
            self._store_staged()
            stored = self.store.add_messages(
                self.user_id,
                self.chat_id,
                compressed,
                token_counts=counts,
                analyses=[analysis.stored() for analysis in made],
            )
            for row, given, message, analysis in zip(stored, messages, compressed, made, strict=True):
                at, id = row.created_at, f"m{row.seq}"
                self.memory.add(row.message, at=at, id=id, given=_given(given, message), analysis=analysis)
            self._sync()
        return stored

    def stage(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        at: datetime | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        """Remember ``messages`` now and store them with the next write (:meth:`add`, :meth:`flush`…).

        For a client that holds the conversation and sends it again on every request: its
        messages are packed at once and stored later, off the answer's path, all in one insert.
        Each is remembered under the position it will be stored at (with ``metadata``, if given).
        """
        for message in messages:
            breathe()
            compressed = self.memory.compress(message)  # a large tool result's blob is stored now
            tokens = self.memory.counter.count_message(compressed)
            index = len(self.memory.turns)
            self.memory.add(compressed, at=at, id=f"m{index}", given=_given(message, compressed))
            made = self.memory.turns[-1].analysis
            self._staged.append(_Staged(dict(compressed), tokens, at, metadata, made and made.stored()))

    @property
    def staged(self) -> int:
        """How many remembered messages are not stored yet (:meth:`stage`)."""
        return len(self._staged)

    def flush(self) -> None:
        """Store the staged messages and what they changed (segments, narrative, archiving).

        One commit, unless more than :data:`SEGMENTS_PER_COMMIT` segments are to be written: then the
        messages first, the segments in slices (:meth:`save_segments`), then the rest.
        """
        self.store_staged()
        self.save_segments(beyond=SEGMENTS_PER_COMMIT)
        with self.store.batch(savepoints=False):
            self._store_staged()
            self._sync()

    def store_staged(
        self, per_commit: int = MESSAGES_PER_COMMIT, *, first: Callable[[], object] | None = None
    ) -> bool:
        """Store a long staged history ``per_commit`` messages a commit, all but the last slice; whether any.

        The last (up to ``per_commit``) are left for the write that stores what they changed, so
        the chat is consistent at every commit: a prefix of its messages, then the rest. ``first``
        runs in the first commit (a new chat's row). Call it outside a
        :meth:`~tierwise.store.Store.batch` (inside one, everything joins that batch's commit).
        """
        if len(self._staged) <= per_commit:
            return False
        last = -1
        while len(self._staged) > per_commit:
            with self.store.batch(savepoints=False):
                if first is not None:
                    first()
                    first = None
                last = self._store_staged(limit=per_commit)[-1].seq
        # What memory archived of them, as many a commit: one update of 100,000 rows held SQLite's
        # only writer ~0.5 s, and every other chat's write waited for it.
        upto = min(self.memory.archived_upto - 1, last)
        while self._archived_seq < upto:
            step = min(upto, self._archived_seq + per_commit)
            with self.store.batch(savepoints=False):
                self.store.archive_messages(self.user_id, self.chat_id, step, after_seq=self._archived_seq)
            self._archived_seq = step
        return True

    def save_segments(self, per_commit: int = SEGMENTS_PER_COMMIT, *, beyond: int = 0) -> int:
        """Write the closed segments not stored yet, ``per_commit`` in each commit; how many.

        Nothing if no more than ``beyond`` wait (the next write takes them with it). The staged
        messages are stored first (segments refer to their positions). Call it outside a
        :meth:`~tierwise.store.Store.batch` (inside one, everything joins that batch's commit).
        """
        pending = self._segments_to_save()
        if len(pending) <= beyond:
            return 0
        if self._staged:
            with self.store.batch(savepoints=False):
                self._store_staged()
        for start in range(0, len(pending), per_commit):
            with self.store.batch(savepoints=False):
                for seg in pending[start : start + per_commit]:
                    self._save_segment(seg)
        return len(pending)

    def _store_staged(self, then: _Staged | None = None, *, limit: int | None = None) -> list[StoredMessage]:
        """Store the staged messages at the positions memory gave them (``then`` after them).

        ``then`` is a message not remembered yet (:meth:`add`'s); ``limit``: only the first this many
        (without ``then``).

        Raises:
            StaleMemory: the chat was written to meanwhile (by another process, say), so the
                positions differ: the enclosing batch stores nothing, and this memory must be loaded
                again (the client sends the messages again).
        """
        if not self._staged:
            return []
        first = len(self.memory.turns) - len(self._staged)
        if limit is not None:
            rows, rest = self._staged[:limit], self._staged[limit:]
        else:
            rows, rest = ([*self._staged, then] if then is not None else self._staged), []
        stored = self.store.add_messages(
            self.user_id,
            self.chat_id,
            [row.message for row in rows],
            token_counts=[row.tokens for row in rows],
            at=[row.at for row in rows],
            metadata=[row.metadata for row in rows],
            analyses=[row.analysis for row in rows],
        )
        self._staged = rest  # stored, or lost to another writer (the client sends them again)
        if stored[0].seq != first:
            raise StaleMemory(self.chat_id, first, stored[0].seq)
        return stored

    def pack(
        self,
        budget: Budget,
        current: Sequence[Mapping[str, Any]],
        *,
        system: str | Sequence[Mapping[str, Any]] | None = None,
        tools: Sequence[Mapping[str, Any]] = (),
        requested: Sequence[tuple[str, Form]] = (),
        seed: str | int | None = None,
        band: PruningBand | None = None,
        health: float | None = None,
        upto: int | None = None,
        layers: Sequence[ContextLayer] = (),
        record: bool = True,
        recap: Recap | None = None,
    ) -> Pack:
        """Build a pack (see :func:`~tierwise.memory.assemble.pack_turn`), audit it and snapshot it.

        Its report's ``prefix_tokens`` are the tokens it repeats of this chat's previous pack.
        ``recap`` re-sends earlier turns' tool results as their recaps (see ``pack_turn``).

        With ``record=False`` the audit and snapshot are left to the caller (:meth:`record`), who may
        write them later, off the answer's path — the chat engine does so after a turn's ``done``.
        """
        events_before = len(self.memory.events)
        pack = pack_turn(
            self.memory,
            budget,
            current,
            system=system,
            tools=tools,
            requested=requested,
            seed=seed,
            band=band,
            health=health,
            upto=upto,
            layers=layers,
            recap=recap,
        )
        previous, self._previous = self._previous, (pack.messages, pack.tools)
        if previous is not None:
            counter = self.memory.counter
            pack.report.prefix_tokens = shared_prefix(previous, pack.messages, pack.tools, counter)
        if record:
            self.record(pack, self.memory.events[events_before:])
        return pack

    def record(
        self, pack: Pack, compaction: Sequence[CompactionEvent] = (), after: Sequence[Audit] = ()
    ) -> None:
        """Audit ``pack`` and the compaction done for it, save its snapshot, write memory through.

        One commit for all of it; the audit entries in one statement, with ``after`` (e.g. the
        turn's own entry) last.
        """
        with self.store.batch(savepoints=False):
            self._record(pack, compaction, after)

    def _record(self, pack: Pack, compaction: Sequence[CompactionEvent], after: Sequence[Audit] = ()) -> None:
        entries = [
            Audit(
                "compaction",
                self.chat_id,
                details={
                    "action": event.action,
                    "threshold": event.threshold,
                    "tokens_before": event.tokens_before,
                    "tokens_after": event.tokens_after,
                    "budget": event.budget,
                    "changed": event.changed,
                },
            )
            for event in compaction
        ]
        self._sync()
        redactions = self.memory.scrubber.take_counts()  # made since the last pack's audit entry
        record_pack(
            self.store, self.user_id, self.chat_id, pack, also=entries, after=after, redactions=redactions
        )

    @property
    def unsynced(self) -> int:
        """How much the next write carries besides a message: more staged ones, segments, the narrative.

        Counts staged messages beyond one, segments to save, archiving and a changed narrative, for a
        caller that would store those first, in a write of their own.
        """
        memory = self.memory
        return (
            max(0, len(self._staged) - 1)
            + len(self._segments_to_save())
            + (memory.archived_upto - 1 > self._archived_seq)
            + (memory.narrative is not self._saved_narrative and not memory.narrative.is_empty())
        )

    def _segments_to_save(self) -> list[Segment]:
        memory, saved = self.memory, self._saved_segments
        fresh = [seg for seg in memory.segments if seg.closed and saved.get(seg.id) != (seg.last, True)]
        waiting = memory.waiting() if fresh else set()
        return [seg for seg in fresh if id(seg) not in waiting]

    def _sync(self) -> None:
        """Write closed segments, the narrative and archiving through to the store."""
        self._store_staged()  # segments and archiving refer to the staged messages' positions
        memory, store = self.memory, self.store
        for seg in self._segments_to_save():
            self._save_segment(seg)
        upto = memory.archived_upto - 1
        if upto > self._archived_seq:
            store.archive_messages(self.user_id, self.chat_id, upto, after_seq=self._archived_seq)
            self._archived_seq = upto
        if memory.narrative is not self._saved_narrative and not memory.narrative.is_empty():
            store.update_chat(self.user_id, self.chat_id, narrative=memory.narrative.to_dict())
            self._saved_narrative = memory.narrative

    def _save_segment(self, seg: Segment) -> None:
        self.store.save_segment(
            self.user_id,
            self.chat_id,
            seg.id,
            seq=seg.seq,
            first_seq=seg.first,
            last_seq=seg.last,
            header=seg.header,
            summary=seg.summary,
            entities=list(seg.entities),
            topic=seg.topic,
            outcome=seg.outcome,
            token_count=seg.tokens,
            boundary_reason=seg.boundary,
            started_at=seg.started_at,
            ended_at=seg.ended_at,
        )
        self._saved_segments[seg.id] = (seg.last, seg.closed)


def record_pack(
    store: Store,
    user_id: str,
    chat_id: str,
    pack: Pack,
    *,
    also: Sequence[Audit] = (),
    after: Sequence[Audit] = (),
    redactions: Mapping[str, int] | None = None,
) -> None:
    """Audit a pack (composition, drops, reasons, checksum) and save its context snapshot.

    ``also`` are audit entries written before the pack's, ``after`` after it, in the same
    statement; a compaction entry in ``also`` that changed working memory sets the chat's
    ``last_compression_at``.
    ``redactions`` (scrubber findings per kind, never the secrets) go into the pack's entry as
    ``"redactions"``. The snapshot holds the tokens per layer kind, seed 004's tiers
    (:func:`~tierwise.packing.tiers.tier_breakdown`) under ``"tiers"``, and as ``budget_percent``
    the pack's share of its budget (the spending side is ``pruning_strategy["health"]``).
    """
    report = pack.report
    breakdown: dict[str, dict[str, int]] = {}
    for layer in report.layers:
        entry = breakdown.setdefault(layer.kind, {"tokens": 0, "items": 0})
        entry["tokens"] += layer.tokens
        entry["items"] += 1 if layer.status != "dropped" else 0
    audit = Audit(
        "pack",
        chat_id,
        report.checksum,
        {
            "total_tokens": report.total_tokens,
            "prefix_tokens": report.prefix_tokens,
            "budget": report.budget,
            "tokens_saved": report.tokens_saved,
            "dropped": report.dropped,
            "truncated": report.truncated,
            "layers": [
                {
                    "id": r.id,
                    "kind": r.kind,
                    "tokens": r.tokens,
                    "tokens_full": r.tokens_full,
                    "status": r.status,
                    "reason": r.reason,
                    "guaranteed": r.guaranteed,
                }
                for r in report.layers
            ],
            **({} if redactions is None else {"redactions": dict(sorted(redactions.items()))}),
        },
    )
    store.audit_many(user_id, [*also, audit, *after])
    compacted = any(entry.event == "compaction" and _changed(entry.details or {}) for entry in also)
    if compacted:
        store.update_chat(user_id, chat_id, last_compression_at=utcnow())
    store.save_snapshot(
        user_id,
        chat_id,
        tier_breakdown={
            **breakdown,
            "total": {
                "tokens": report.total_tokens,
                "items": len(report.layers),
                "prefix_tokens": report.prefix_tokens,
            },
            "tiers": tier_breakdown(report),
        },
        total_tokens=report.total_tokens,
        budget_percent=round(100 * report.total_tokens / report.budget, 1) if report.budget else 0.0,
        pruning_strategy={
            "band": report.band,
            "health": report.health,
            "policy": report.policy,
            "budget": report.budget,
        },
        checksum=report.checksum,
    )


def _changed(details: Mapping[str, Any]) -> bool:
    """Whether a compaction entry moved working memory (a step that changed nothing is no compaction)."""
    return bool(details.get("changed", True)) and details.get("tokens_before") != details.get("tokens_after")


def _counts_hold(messages: Sequence[StoredMessage], memory: Memory, sample: int = 8) -> bool:
    """Whether the stored token counts are memory's: ``sample`` messages, spread out, counted again.

    Another encoding (or a count made otherwise) makes memory count every message itself.
    """
    step = max(1, len(messages) // sample)
    chosen = [m for m in messages[::step] if m.role != "tool"][:sample]  # a tool result may be compressed
    return all(memory.counter.count_message(m.message) == m.token_count for m in chosen)


def _given(message: Mapping[str, Any], compressed: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The message as given, where compression changed it (memory sends it so while all fits)."""
    return message if compressed is not message else None
