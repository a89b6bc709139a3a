"""The store's memory side: segments, blobs, context snapshots and the audit log.

Mixed into :class:`~tierwise.store.repository.Store`; the same per-user scoping applies.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from tierwise.errors import InputError
from tierwise.store import models
from tierwise.store._base import MESSAGES, OWN_MESSAGES, StoreBase
from tierwise.store.checks import check_count, check_json, check_text, check_time
from tierwise.store.errors import NotFoundError
from tierwise.store.records import Audit, AuditRecord, BlobInfo, BlobRef, Snapshot, StoredSegment

__all__ = ["ArtifactsMixin"]

# Prepared Core INSERTs for the rows written on every turn: the ORM's unit of work (and an ownership
# read first) cost more than the write. The foreign keys check ownership instead.
_INSERT_SNAPSHOT = sa.insert(models.ContextSnapshot.__table__)  # type: ignore[arg-type]
_INSERT_AUDIT = sa.insert(models.AuditEntry.__table__)  # type: ignore[arg-type]
_AUDIT_COLUMNS = tuple(column.key for column in models.AuditEntry.__table__.columns)
_SHA256 = re.compile(r"\b[0-9a-f]{64}\b")  # a blob's name as a tool message points at it


def _upsert_segment(insert: Any) -> Any:
    """``INSERT … ON CONFLICT (chat_id, id) DO UPDATE`` of a segment, only over the same user's row."""
    table = models.Segment.__table__
    statement = insert(table).values({c.key: sa.bindparam(f"b_{c.key}") for c in table.columns})
    kept = ("chat_id", "id", "user_id", "created_at")
    return statement.on_conflict_do_update(
        index_elements=["chat_id", "id"],
        set_={c.key: statement.excluded[c.key] for c in table.columns if c.key not in kept},
        where=table.c.user_id == statement.excluded.user_id,
    ).returning(*table.columns)


_UPSERT_SEGMENT = {"sqlite": _upsert_segment(sqlite.insert), "postgresql": _upsert_segment(postgresql.insert)}
_SEGMENTS: sa.Table = models.Segment.__table__  # type: ignore[assignment]
_SEGMENT_SPAN = sa.select(_SEGMENTS.c.first_seq, _SEGMENTS.c.last_seq).where(
    _SEGMENTS.c.chat_id == sa.bindparam("b_chat"),
    _SEGMENTS.c.id == sa.bindparam("b_segment"),
    _SEGMENTS.c.user_id == sa.bindparam("b_user"),
)
# Only within the span the segment had (no other message carries its id): an index range, where
# "seq outside the new span" alone read every message of the chat for every segment saved —
# quadratic in a long history (20,000 messages: 17 s in one write transaction).
_UNSEGMENT_MESSAGES = (
    sa.update(MESSAGES)
    .where(*OWN_MESSAGES, MESSAGES.c.segment_id == sa.bindparam("b_segment"))
    .where(MESSAGES.c.seq >= sa.bindparam("b_old_first"), MESSAGES.c.seq <= sa.bindparam("b_old_last"))
    .where(sa.or_(MESSAGES.c.seq < sa.bindparam("b_first"), MESSAGES.c.seq > sa.bindparam("b_last")))
    .values(segment_id=None, is_in_summary=False)
)
_SEGMENT_MESSAGES = (
    sa.update(MESSAGES)
    .where(*OWN_MESSAGES, MESSAGES.c.seq >= sa.bindparam("b_first"), MESSAGES.c.seq <= sa.bindparam("b_last"))
    .values(segment_id=sa.bindparam("b_segment"), is_in_summary=sa.bindparam("b_in_summary"))
)


class ArtifactsMixin(StoreBase):
    """Segments, blobs, snapshots and audit entries of one user."""

    # segments ------------------------------------------------------------------------------------

    def save_segment(
        self,
        user_id: str,
        chat_id: str,
        segment_id: str,
        *,
        seq: int,
        first_seq: int,
        last_seq: int,
        header: str = "",
        summary: str = "",
        entities: Iterable[Any] = (),
        topic: str | None = None,
        outcome: str | None = None,
        token_count: int = 0,
        boundary_reason: str | None = None,
        started_at: datetime | None = None,
        ended_at: datetime | None = None,
    ) -> StoredSegment:
        """Create or replace segment ``segment_id`` of the chat (ids are stable per chat).

        The messages ``first_seq``..``last_seq`` get its id as their ``segment_id`` and, when it has
        a summary, ``is_in_summary`` (messages it no longer covers lose both).
        """
        segment_id = check_text("segment_id", segment_id)
        for name, value in (("seq", seq), ("first_seq", first_seq), ("last_seq", last_seq)):
            check_count(name, value)
        if last_seq < first_seq:
            raise InputError(f"segment {segment_id!r}: last_seq {last_seq} is before first_seq {first_seq}")
        header = check_text("header", header)
        summary = check_text("summary", summary)
        topic = check_text("topic", topic, optional=True)
        outcome = check_text("outcome", outcome, optional=True)
        boundary_reason = check_text("boundary_reason", boundary_reason, optional=True)
        check_count("token_count", token_count)
        check_time("started_at", started_at)
        check_time("ended_at", ended_at)
        now = models.utcnow()
        values: dict[str, Any] = {
            "seq": seq,
            "first_seq": first_seq,
            "last_seq": last_seq,
            "started_at": started_at,
            "ended_at": ended_at,
            "header": header,
            "summary": summary,
            "entities": check_json("entities", list(entities)),
            "topic": topic,
            "outcome": outcome,
            "token_count": token_count,
            "boundary_reason": boundary_reason,
            "updated_at": now,
        }
        params = {f"b_{name}": value for name, value in values.items()}
        params.update(b_chat_id=chat_id, b_id=segment_id, b_user_id=user_id, b_created_at=now)
        span: dict[str, Any] = {"b_user": user_id, "b_chat": chat_id, "b_segment": segment_id}
        span.update(b_first=first_seq, b_last=last_seq)
        with self._write() as session:  # prepared Core statements: a segment closes every few turns
            old = session.execute(_SEGMENT_SPAN, span).one_or_none()
            try:
                row = session.execute(_UPSERT_SEGMENT[self._engine.dialect.name], params).one_or_none()
            except sa.exc.IntegrityError:  # the (chat, user) foreign key: not this user's chat
                raise NotFoundError("chat", chat_id, user_id) from None
            if row is None:  # the id is taken in this chat by another user's row: not theirs to change
                raise NotFoundError("chat", chat_id, user_id)
            if old is not None and tuple(old) != (first_seq, last_seq):  # messages it no longer covers
                session.execute(_UNSEGMENT_MESSAGES, {**span, "b_old_first": old[0], "b_old_last": old[1]})
            session.execute(_SEGMENT_MESSAGES, {**span, "b_in_summary": bool(summary.strip())})
            return StoredSegment.of(row)

    def get_segment(self, user_id: str, chat_id: str, segment_id: str) -> StoredSegment:
        """The segment, or :class:`NotFoundError`."""
        seg = models.Segment
        query = sa.select(seg).where(seg.user_id == user_id, seg.chat_id == chat_id, seg.id == segment_id)
        with self._read() as session:
            row = session.scalars(query).one_or_none()
            if row is None:
                raise NotFoundError("segment", segment_id, user_id)
            return StoredSegment.of(row)

    def list_segments(self, user_id: str, chat_id: str) -> list[StoredSegment]:
        """The chat's segments in order (``seq``, then ``first_seq``)."""
        seg = _SEGMENTS.c
        query = (
            sa.select(_SEGMENTS)  # Core rows, not ORM objects: a long chat has hundreds
            .where(seg.user_id == user_id, seg.chat_id == chat_id)
            .order_by(seg.seq, seg.first_seq, seg.id)
        )
        with self._read() as session:
            self._chat(session, user_id, chat_id)
            return [StoredSegment.of(row) for row in session.execute(query)]

    # blobs ---------------------------------------------------------------------------------------

    def put_blob(
        self,
        user_id: str,
        content: bytes,
        mime: str = "application/octet-stream",
        summary: str | None = None,
        entities: Iterable[Any] = (),
    ) -> BlobRef:
        """Store ``content`` once per user (keyed by its sha256); storing it again counts a hit.

        A repeated put keeps the first MIME type and entities, and fills the summary if it had none.
        """
        if not isinstance(content, bytes | bytearray | memoryview):
            raise InputError(f"blob content must be bytes, got {type(content).__name__}")
        data = bytes(content)
        mime = check_text("mime", mime)
        summary = check_text("summary", summary, optional=True)
        sha = hashlib.sha256(data).hexdigest()
        blob = models.Blob
        with self._write() as session:
            self._user(session, user_id)
            insert = self._insert(blob).values(
                user_id=user_id,
                sha256=sha,
                size=len(data),
                mime=mime,
                content=data,
                summary=summary,
                entities=check_json("entities", list(entities)),
                created_at=models.utcnow(),
                hits=1,
            )
            upsert = insert.on_conflict_do_update(
                index_elements=["user_id", "sha256"],
                set_={
                    "hits": blob.hits + 1,
                    "summary": sa.func.coalesce(blob.summary, insert.excluded.summary),
                },
            ).returning(blob.size, blob.mime)
            size, stored_mime = session.execute(upsert).one()
            return BlobRef(sha, int(size), stored_mime)

    @staticmethod
    def _chat_blobs(session: sa.orm.Session, user_id: str, chat_id: str) -> set[str]:
        """The blobs the chat's tool calls stored or its tool messages point at (before it is deleted)."""
        calls = models.ChatToolCall
        shas = set(
            session.scalars(
                sa.select(calls.blob_sha256).where(
                    calls.user_id == user_id, calls.chat_id == chat_id, calls.blob_sha256.is_not(None)
                )
            )
        )
        tool_texts = sa.select(MESSAGES.c.content).where(
            MESSAGES.c.user_id == user_id, MESSAGES.c.chat_id == chat_id, MESSAGES.c.role == "tool"
        )
        for text in session.scalars(tool_texts):
            shas.update(_SHA256.findall(text or ""))
        return {sha for sha in shas if sha}

    @staticmethod
    def _drop_unused_blobs(session: sa.orm.Session, user_id: str, shas: Iterable[str]) -> None:
        """Delete those of ``shas`` no tool call or tool message of the user's other chats uses."""
        calls, blob = models.ChatToolCall, models.Blob
        for sha in sorted(shas):
            used = sa.select(calls.id).where(calls.user_id == user_id, calls.blob_sha256 == sha).limit(1)
            if session.execute(used).first() is not None:
                continue
            mentioned = (
                sa.select(MESSAGES.c.id)
                .where(MESSAGES.c.user_id == user_id, MESSAGES.c.role == "tool")
                .where(MESSAGES.c.content.contains(sha, autoescape=True))
                .limit(1)
            )
            if session.execute(mentioned).first() is not None:
                continue
            session.execute(sa.delete(blob).where(blob.user_id == user_id, blob.sha256 == sha))

    def get_blob(self, user_id: str, sha256: str, start: int | None = None, end: int | None = None) -> bytes:
        """The blob's bytes ``[start:end]`` (Python slice rules); only that range is read."""
        blob = models.Blob
        mine = (blob.user_id == user_id, blob.sha256 == sha256)
        with self._read() as session:
            size = session.scalar(sa.select(blob.size).where(*mine))
            if size is None:
                raise NotFoundError("blob", sha256, user_id)
            lo, hi, _ = slice(start, end).indices(int(size))
            if hi <= lo:
                return b""
            if lo == 0 and hi == size:
                part = session.scalar(sa.select(blob.content).where(*mine))
            else:
                piece = sa.func.substr(
                    blob.content,
                    sa.cast(lo + 1, sa.Integer),
                    sa.cast(hi - lo, sa.Integer),
                    type_=sa.LargeBinary,
                )
                part = session.scalar(sa.select(piece).where(*mine))
            return bytes(part or b"")

    def blob_info(self, user_id: str, sha256: str) -> BlobInfo:
        """The blob's description (no content), or :class:`NotFoundError`."""
        blob = models.Blob
        columns = (blob.sha256, blob.size, blob.mime, blob.summary, blob.entities, blob.hits, blob.created_at)
        with self._read() as session:
            row = session.execute(
                sa.select(*columns).where(blob.user_id == user_id, blob.sha256 == sha256)
            ).one_or_none()
            if row is None:
                raise NotFoundError("blob", sha256, user_id)
            return BlobInfo(row[0], int(row[1]), row[2], row[3], list(row[4]), row[5], row[6])

    # snapshots -----------------------------------------------------------------------------------

    def save_snapshot(
        self,
        user_id: str,
        chat_id: str,
        *,
        tier_breakdown: Mapping[str, Any],
        total_tokens: int,
        budget_percent: float,
        pruning_strategy: Mapping[str, Any],
        checksum: str | None = None,
        at: datetime | None = None,
    ) -> Snapshot:
        """Record what one pack of the chat spent (seed 004's context snapshot)."""
        check_count("total_tokens", total_tokens)
        if isinstance(budget_percent, bool) or not isinstance(budget_percent, int | float):
            raise InputError(f"budget_percent must be a number, got {budget_percent!r}")
        check_json("budget_percent", budget_percent)
        checksum = check_text("checksum", checksum, optional=True)
        check_time("at", at)
        snapshot = Snapshot(
            models.new_id(),
            chat_id,
            user_id,
            check_json("tier_breakdown", dict(tier_breakdown)),
            total_tokens,
            float(budget_percent),
            check_json("pruning_strategy", dict(pruning_strategy)),
            checksum,
            at or models.utcnow(),
        )
        values = {  # a Core INSERT of plain values: an ORM row costs more than the write (every pack)
            "id": snapshot.id,
            "session_id": chat_id,
            "user_id": user_id,
            "tier_breakdown": snapshot.tier_breakdown,
            "total_tokens": total_tokens,
            "budget_percent": snapshot.budget_percent,
            "pruning_strategy": snapshot.pruning_strategy,
            "checksum": checksum,
            "created_at": snapshot.created_at,
        }
        with self._write_core() as connection:
            try:
                connection.execute(_INSERT_SNAPSHOT, values)
            except sa.exc.IntegrityError:  # the (chat, user) foreign key: not this user's chat
                raise NotFoundError("chat", chat_id, user_id) from None
        return snapshot

    def list_snapshots(self, user_id: str, chat_id: str, *, limit: int | None = None) -> list[Snapshot]:
        """The chat's snapshots, newest first."""
        snap = models.ContextSnapshot
        query = (
            sa.select(snap)
            .where(snap.user_id == user_id, snap.session_id == chat_id)
            .order_by(snap.created_at.desc(), snap.id.desc())
        )
        if limit is not None:
            query = query.limit(check_count("limit", limit))
        with self._read() as session:
            self._chat(session, user_id, chat_id)
            return [Snapshot.of(row) for row in session.scalars(query)]

    def latest_snapshot(self, user_id: str, chat_id: str) -> Snapshot | None:
        """The chat's newest snapshot (``None`` if it has none)."""
        found = self.list_snapshots(user_id, chat_id, limit=1)
        return found[0] if found else None

    # audit ---------------------------------------------------------------------------------------

    def audit(
        self,
        user_id: str,
        event: str,
        *,
        chat_id: str | None = None,
        checksum: str | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> AuditRecord:
        """Append an entry to the user's audit log (``chat_id`` may name a chat since deleted)."""
        return self.audit_many(user_id, [Audit(event, chat_id, checksum, details)])[0]

    def audit_many(self, user_id: str, entries: Sequence[Audit]) -> list[AuditRecord]:
        """Append several entries to the user's audit log in one statement, in order."""
        records = []
        for entry in entries:
            record = AuditRecord(
                models.new_id(),
                user_id,
                check_text("chat_id", entry.chat_id, optional=True),
                check_text("event", entry.event),
                check_text("checksum", entry.checksum, optional=True),
                check_json("details", dict(entry.details or {})),
                models.utcnow(),
            )
            records.append(record)
        if not records:
            return []
        with self._write_core() as connection:
            try:
                rows = [{name: getattr(record, name) for name in _AUDIT_COLUMNS} for record in records]
                connection.execute(_INSERT_AUDIT, rows if len(rows) > 1 else rows[0])
            except sa.exc.IntegrityError:  # the user foreign key
                raise NotFoundError("user", user_id, user_id) from None
            return records

    def list_audit(
        self,
        user_id: str,
        *,
        chat_id: str | None = None,
        event: str | None = None,
        limit: int | None = None,
    ) -> list[AuditRecord]:
        """The user's audit entries, newest first (one chat's or one event's, if given)."""
        entry = models.AuditEntry
        query = sa.select(entry).where(entry.user_id == user_id)
        if chat_id is not None:
            query = query.where(entry.chat_id == chat_id)
        if event is not None:
            query = query.where(entry.event == event)
        query = query.order_by(entry.created_at.desc(), entry.id.desc())
        if limit is not None:
            query = query.limit(check_count("limit", limit))
        with self._read() as session:
            return [AuditRecord.of(row) for row in session.scalars(query)]
