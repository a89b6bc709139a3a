"""The store's API: users, chats, messages and tool calls.

Segments, blobs, snapshots and audit live in :mod:`tierwise.store.artifacts`. Every method takes
the ``user_id`` it acts for and scopes every query by it: another user's chat, message or blob is
indistinguishable from one that does not exist (:class:`NotFoundError`), and lists never include
another user's rows. Methods return frozen records, never ORM objects, and each write is
committed before the method returns.

Text is kept alike on SQLite and PostgreSQL: every string written — a message's content, parts,
name and fields, a tool call's arguments and result, a segment's header and summary, a blob's
summary, audit details, JSON keys included — has each NUL character (U+0000) and each lone UTF-16
surrogate replaced with U+FFFD (a surrogate pair becomes its character); the records returned
hold the text as stored (:func:`~tierwise.store.checks.clean_text`). PostgreSQL cannot keep a NUL
and neither backend can encode a lone surrogate, so refusing them would lose the whole turn
(ARCHITECTURE.md decision 46).

Example:
    >>> store = Store.open("sqlite://")
    >>> user = store.create_user("Ada")
    >>> chat = store.create_chat(user.id, title="Plans")
    >>> store.add_message(user.id, chat.id, {"role": "user", "content": "Hi"}, token_count=3).seq
    0
    >>> [m.message for m in store.list_messages(user.id, chat.id)]
    [{'role': 'user', 'content': 'Hi'}]
    >>> store.close()
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import fields
from datetime import datetime
from typing import Any, cast

import sqlalchemy as sa
from sqlalchemy.engine import URL

from tierwise.collector import breathe
from tierwise.errors import InputError
from tierwise.store import models
from tierwise.store._base import MESSAGES, OWN_MESSAGES
from tierwise.store.artifacts import ArtifactsMixin
from tierwise.store.checkpoint import Checkpointer
from tierwise.store.checks import (
    CHAT_FIELDS,
    check_chat_fields,
    check_count,
    check_json,
    check_text,
    check_time,
    message_columns,
)
from tierwise.store.engine import create_engine, migrate_engine, normalize_url, sqlite_memory
from tierwise.store.errors import NotFoundError
from tierwise.store.message_rows import message_row, stored_message
from tierwise.store.records import Chat, StoredMessage, ToolCallRecord, User
from tierwise.store.responses import ResponsesMixin
from tierwise.store.shared import SharedMixin
from tierwise.store.usage import UsageMixin

__all__ = ["CHAT_FIELDS", "Store"]


def _rowcount(result: sa.Result[Any]) -> int:
    """Rows an UPDATE matched (both backends report matched rows, not only changed ones)."""
    return int(cast("sa.CursorResult[Any]", result).rowcount)


_CHAT: sa.Table = models.Chat.__table__  # type: ignore[assignment]
_OWN_CHAT = (_CHAT.c.id == sa.bindparam("b_chat"), _CHAT.c.user_id == sa.bindparam("b_user"))


def _bump(column: sa.Column[int], by: Any) -> sa.Update:
    """``column += by`` on the user's chat (``:b_chat``, ``:b_user``) at ``:b_now``; the new value."""
    return (
        sa.update(_CHAT)
        .where(*_OWN_CHAT)
        .values({column.key: column + by, "updated_at": sa.bindparam("b_now")})
        .returning(column)
    )


# Prepared statements for what every turn does (the ORM's unit of work costs more than the write).
_TAKE_SEQ = _bump(_CHAT.c.message_count, 1)
_TAKE_SEQS = _bump(_CHAT.c.message_count, sa.bindparam("b_n", type_=sa.Integer))
_ADD_TOKENS = _bump(_CHAT.c.total_tokens_used, sa.bindparam("b_tokens", type_=sa.Integer))
_GET_CHAT = sa.select(_CHAT).where(*_OWN_CHAT)
_INSERT_CHAT = sa.insert(_CHAT)
_INSERT_MESSAGE = sa.insert(MESSAGES)
_FIND_MESSAGE = sa.select(MESSAGES.c.id).where(
    MESSAGES.c.id == sa.bindparam("b_id"),
    MESSAGES.c.user_id == sa.bindparam("b_user"),
    MESSAGES.c.chat_id == sa.bindparam("b_chat"),
)
# A chat's messages as StoredMessage's fields, in their order: Core rows, not ORM objects (3× faster).
_MESSAGE_FIELDS = [MESSAGES.c[f.name] for f in fields(StoredMessage)]
_INSERT_TOOL_CALL = sa.insert(models.ChatToolCall.__table__)  # type: ignore[arg-type]
_ARCHIVE = (
    sa.update(MESSAGES)
    .where(*OWN_MESSAGES, MESSAGES.c.seq > sa.bindparam("b_after"), MESSAGES.c.seq <= sa.bindparam("b_upto"))
    .where(MESSAGES.c.is_archived.is_(False))
    .values(is_archived=True)
)
_COUNT_ARCHIVED = (
    sa.update(_CHAT)
    .where(*_OWN_CHAT)
    .values(
        messages_archived=sa.select(sa.func.count())
        .select_from(MESSAGES)
        .where(*OWN_MESSAGES, MESSAGES.c.is_archived.is_(True))
        .scalar_subquery(),
        updated_at=sa.bindparam("b_now"),
    )
    .returning(_CHAT.c.id)
)


class Store(ArtifactsMixin, UsageMixin, SharedMixin, ResponsesMixin):
    """Persistent chats, messages, segments, blobs, snapshots, audit and spending sums, scoped per user.

    Build one with :meth:`open` (migrates first); use it from any thread; :meth:`close` it.
    """

    @classmethod
    def open(cls, url: str | URL | None = None) -> Store:
        """Migrate the database at ``url`` to the newest schema and return a store on it.

        ``url`` defaults to ``TIERWISE_DATABASE_URL``, else the SQLite file in the data dir. A
        SQLite file's WAL is checkpointed in a background thread, not by whichever commit crosses
        the threshold (:mod:`tierwise.store.checkpoint`).
        """
        parsed = normalize_url(url)
        file = parsed.get_backend_name() == "sqlite" and not sqlite_memory(parsed)
        engine = create_engine(parsed, background_checkpoints=file)
        try:
            migrate_engine(engine)
        except BaseException:
            engine.dispose()
            raise
        store = cls(engine)
        if file:
            store._checkpointer = Checkpointer(engine).start()
        return store

    def close(self) -> None:
        """Stop checkpointing (after a last checkpoint) and close every pooled connection."""
        checkpointer, self._checkpointer = self._checkpointer, None
        if checkpointer is not None:
            checkpointer.stop()
        self._engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # users ---------------------------------------------------------------------------------------

    def create_user(self, name: str, *, user_id: str | None = None) -> User:
        """A new user (``user_id`` generated unless given; an id in use is an :class:`InputError`)."""
        name = check_text("name", name)
        if user_id is not None and not (isinstance(user_id, str) and 0 < len(user_id) <= 36):
            raise InputError(f"a user id is a string of 1 to 36 characters, got {user_id!r}")
        row = models.User(id=user_id or models.new_id(), name=name, created_at=models.utcnow())
        with self._write() as session:
            if user_id is not None and session.get(models.User, user_id) is not None:
                raise InputError(f"user {user_id!r} already exists")
            session.add(row)
            return User.of(row)

    def get_user(self, user_id: str) -> User:
        """The user, or :class:`NotFoundError`."""
        with self._read() as session:
            return User.of(self._user(session, user_id))

    # chats ---------------------------------------------------------------------------------------

    def create_chat(
        self,
        user_id: str,
        *,
        title: str = "New Chat",
        context_type: str = "global",
        entity_id: str | None = None,
        token_limit: int | None = None,
        id: str | None = None,
    ) -> Chat:
        """A new, empty chat of ``user_id`` (defaults from seed 002).

        ``id`` is the chat's id if the caller made one already (with ``models.new_id``, say); by
        default a new one.

        Raises:
            NotFoundError: ``user_id`` is not a user (no ``id`` given).
            InputError: the ``id`` given is taken, or ``user_id`` is not a user.
        """
        id = check_text("id", id, optional=True)
        title = check_text("title", title)
        context_type = check_text("context_type", context_type)
        entity_id = check_text("entity_id", entity_id, optional=True)
        if token_limit is not None:  # its budget; None: the server's
            check_count("token_limit", token_limit)
        now = models.utcnow()
        values: dict[str, Any] = {
            "id": id or models.new_id(),
            "user_id": user_id,
            "context_type": context_type,
            "entity_id": entity_id,
            "title": title,
            "title_generated": False,
            "conversation_summary": None,
            "key_decisions": [],
            "created_entities": [],
            "total_tokens_used": 0,
            "token_limit": token_limit,
            "message_count": 0,
            "messages_archived": 0,
            "last_compression_at": None,
            "narrative": None,
            "created_at": now,
            "updated_at": now,
        }
        with self._write() as session:  # a prepared Core INSERT: the user's foreign key checks them
            try:
                session.execute(_INSERT_CHAT, values)
            except sa.exc.IntegrityError:
                if id is not None:  # (a lookup here would fail in PostgreSQL's aborted transaction)
                    raise InputError(
                        f"cannot create chat {id!r}: the id is taken or user {user_id!r} does not exist; "
                        "leave id out for a new one"
                    ) from None
                raise NotFoundError("user", user_id, user_id) from None
        return Chat(**{**values, "key_decisions": [], "created_entities": []})

    def get_chat(self, user_id: str, chat_id: str) -> Chat:
        """The chat, or :class:`NotFoundError` if ``user_id`` has no chat ``chat_id``."""
        with self._read_core() as connection:  # a prepared Core SELECT: read on every request
            row = connection.execute(_GET_CHAT, {"b_chat": chat_id, "b_user": user_id}).one_or_none()
            if row is None:
                raise NotFoundError("chat", chat_id, user_id)
            return Chat.of(row)

    def list_chats(
        self,
        user_id: str,
        *,
        context_type: str | None = None,
        entity_id: str | None = None,
        limit: int | None = None,
        exclude_context_types: Sequence[str] = (),
    ) -> list[Chat]:
        """The user's chats, most recently updated first, optionally for one context.

        ``exclude_context_types`` leaves out chats of those types (e.g. retired API sessions).
        """
        query = sa.select(_CHAT).where(_CHAT.c.user_id == user_id)  # Core rows: no mapped objects
        if context_type is not None:
            query = query.where(_CHAT.c.context_type == context_type)
        if exclude_context_types:
            query = query.where(_CHAT.c.context_type.not_in(list(exclude_context_types)))
        if entity_id is not None:
            query = query.where(_CHAT.c.entity_id == entity_id)
        query = query.order_by(_CHAT.c.updated_at.desc(), _CHAT.c.id.desc())
        if limit is not None:
            query = query.limit(check_count("limit", limit))
        with self._read() as session:
            return [Chat.of(row) for row in session.execute(query)]

    def rename_chat(self, user_id: str, chat_id: str, title: str) -> Chat:
        """Give the chat a title chosen by the user (``title_generated`` becomes false)."""
        return self.update_chat(user_id, chat_id, title=title, title_generated=False)

    def update_chat(self, user_id: str, chat_id: str, **fields: Any) -> Chat:
        """Change the chat's fields (names in :data:`CHAT_FIELDS`) and return it."""
        fields = check_chat_fields(fields)
        statement = (  # one Core UPDATE … RETURNING: the narrative is written each time a segment closes
            sa.update(_CHAT)
            .where(*_OWN_CHAT)
            .values({**fields, "updated_at": models.utcnow()})
            .returning(*_CHAT.columns)
        )
        with self._write() as session:
            row = session.execute(statement, {"b_chat": chat_id, "b_user": user_id}).one_or_none()
            if row is None:
                raise NotFoundError("chat", chat_id, user_id)
            return Chat.of(row)

    def add_tokens_used(self, user_id: str, chat_id: str, tokens: int) -> int:
        """Add ``tokens`` to the chat's ``total_tokens_used`` in one statement; returns the new total."""
        check_count("tokens", tokens)
        params = {"b_chat": chat_id, "b_user": user_id, "b_tokens": tokens, "b_now": models.utcnow()}
        with self._write_core() as connection:
            total = connection.execute(_ADD_TOKENS, params).scalar_one_or_none()
            if total is None:
                raise NotFoundError("chat", chat_id, user_id)
            return int(total)

    def delete_chat(self, user_id: str, chat_id: str) -> None:
        """Delete the chat with its messages, tool calls, segments, snapshots and the blobs only it used.

        The audit entries stay (counts and checksums, no text). On a SQLite file the deleted bytes
        are zeroed (``secure_delete``) and the log truncated soon after (:meth:`erase_soon`).
        """
        with self._write() as session:
            self._chat(session, user_id, chat_id, lock=True)
            blobs = self._chat_blobs(session, user_id, chat_id)
            for table in (models.ChatToolCall, models.ChatMessage, models.Segment):
                session.execute(sa.delete(table).where(table.user_id == user_id, table.chat_id == chat_id))
            snapshots = models.ContextSnapshot
            session.execute(
                sa.delete(snapshots).where(snapshots.user_id == user_id, snapshots.session_id == chat_id)
            )
            session.execute(sa.delete(models.Chat).where(models.Chat.id == chat_id))
            self._drop_unused_blobs(session, user_id, blobs)
        self.erase_soon()

    # messages ------------------------------------------------------------------------------------

    def add_message(
        self,
        user_id: str,
        chat_id: str,
        message: Mapping[str, Any],
        *,
        token_count: int,
        at: datetime | None = None,
        metadata: Mapping[str, Any] | None = None,
        tool_results: list[Any] | None = None,
        analysis: tuple[str, str] | None = None,
    ) -> StoredMessage:
        """Append an OpenAI-format message at the chat's next ``seq`` (0, 1, 2 … atomically).

        Args:
            user_id: the chat's owner.
            chat_id: the chat.
            message: ``{"role", "content", …}``; keys other than the OpenAI ones are kept and returned.
            token_count: the message's exact token count.
            at: when it was said (timezone-aware; default now).
            metadata: anything JSON to keep beside the message (never sent to a model).
            tool_results: results of the tool calls this assistant message made, if kept inline.
            analysis: what memory read off it (:meth:`message_analyses`), to keep beside it.
        """
        columns = message_columns(message)
        check_count("token_count", token_count)
        check_time("at", at)
        meta = dict(check_json("metadata", dict(metadata or {})))
        tool_results = check_json("tool_results", tool_results)
        now = models.utcnow()
        with self._write_core() as connection:
            # One statement takes the position and locks the chat: concurrent appends queue here.
            taken = connection.execute(
                _TAKE_SEQ, {"b_chat": chat_id, "b_user": user_id, "b_now": now}
            ).scalar_one_or_none()
            if taken is None:
                raise NotFoundError("chat", chat_id, user_id)
            values = message_row(
                chat_id, user_id, taken - 1, columns, token_count, at or now, meta, tool_results, analysis
            )
            # A prepared Core INSERT: the ORM's unit of work costs more than the write itself.
            connection.execute(_INSERT_MESSAGE, values)
            return stored_message(values)

    def add_messages(
        self,
        user_id: str,
        chat_id: str,
        messages: Sequence[Mapping[str, Any]],
        *,
        token_counts: Sequence[int],
        at: datetime | Sequence[datetime | None] | None = None,
        metadata: Sequence[Mapping[str, Any] | None] | None = None,
        analyses: Sequence[tuple[str, str] | None] | None = None,
    ) -> list[StoredMessage]:
        """Append several messages at the chat's next positions in two statements (an imported history).

        Like :meth:`add_message` for each, in order, all-or-nothing. ``at``: one time for all or each
        message's (``None``: now); ``metadata`` and ``analyses``, if given: each message's or ``None``.

        Raises:
            InputError: a message is not valid, or ``token_counts`` does not match ``messages``.
            NotFoundError: ``user_id`` has no chat ``chat_id`` (nothing is stored).
        """
        if len(token_counts) != len(messages):
            raise InputError(f"{len(messages)} messages but {len(token_counts)} token counts; give one each")
        if metadata is not None and len(metadata) != len(messages):
            raise InputError(f"{len(messages)} messages but {len(metadata)} metadata; give one each")
        if analyses is not None and len(analyses) != len(messages):
            raise InputError(f"{len(messages)} messages but {len(analyses)} analyses; give one each")
        times = list(at) if isinstance(at, Sequence) else [at] * len(messages)
        if len(times) != len(messages):
            raise InputError(f"{len(messages)} messages but {len(times)} times; give one each")
        for when in times:
            check_time("at", when)
        rows = []
        for i, (message, tokens) in enumerate(zip(messages, token_counts, strict=True)):
            breathe()  # a long history: the event loop's thread gets the interpreter lock meanwhile
            columns = message_columns(message)
            check_count("token_count", tokens)
            meta = dict(check_json("metadata", dict(metadata[i] or {}))) if metadata is not None else {}
            rows.append((columns, tokens, meta, analyses[i] if analyses is not None else None))
        if not rows:
            return []
        now = models.utcnow()
        with self._write() as session:
            taken = session.execute(
                _TAKE_SEQS, {"b_chat": chat_id, "b_user": user_id, "b_n": len(rows), "b_now": now}
            ).scalar_one_or_none()
            if taken is None:
                raise NotFoundError("chat", chat_id, user_id)
            first = taken - len(rows)
            values = [
                message_row(chat_id, user_id, first + i, columns, tokens, times[i] or now, meta, None, made)
                for i, (columns, tokens, meta, made) in enumerate(rows)
            ]
            session.execute(_INSERT_MESSAGE, values)  # one executemany
            return [stored_message(row) for row in values]

    def message_analyses(self, user_id: str, chat_id: str) -> list[tuple[str, str] | None]:
        """What memory read off each of the chat's messages, in ``seq`` order (``None``: not stored).

        Kept beside the messages (``terms``, ``words``: :mod:`tierwise.memory.analysis`) so a
        chat loaded again need not read its whole text twice.
        """
        msg = MESSAGES.c
        query = (
            sa.select(msg.terms, msg.words)
            .where(msg.user_id == user_id, msg.chat_id == chat_id)
            .order_by(msg.seq)
        )
        with self._read() as session:
            return [
                (terms, words) if terms is not None and words is not None else None
                for terms, words in session.execute(query)
            ]

    def list_messages(
        self,
        user_id: str,
        chat_id: str,
        *,
        include_archived: bool = True,
        after_seq: int | None = None,
        limit: int | None = None,
    ) -> list[StoredMessage]:
        """The chat's messages in ``seq`` order (only those after ``after_seq``, if given)."""
        msg = MESSAGES.c
        query = sa.select(*_MESSAGE_FIELDS).where(msg.user_id == user_id, msg.chat_id == chat_id)
        if not include_archived:
            query = query.where(msg.is_archived.is_(False))
        if after_seq is not None:
            query = query.where(msg.seq > after_seq)
        query = query.order_by(msg.seq)
        if limit is not None:
            query = query.limit(check_count("limit", limit))
        with self._read() as session:
            self._chat(session, user_id, chat_id)
            return [StoredMessage(*row) for row in session.execute(query)]

    def get_message(self, user_id: str, chat_id: str, seq: int) -> StoredMessage:
        """The message at ``seq``, or :class:`NotFoundError`."""
        msg = models.ChatMessage
        query = sa.select(msg).where(msg.user_id == user_id, msg.chat_id == chat_id, msg.seq == seq)
        with self._read() as session:
            row = session.scalars(query).one_or_none()
            if row is None:
                raise NotFoundError("message", f"{chat_id}#{seq}", user_id)
            return StoredMessage.of(row)

    def archive_messages(self, user_id: str, chat_id: str, upto_seq: int, *, after_seq: int = -1) -> int:
        """Mark every message up to ``upto_seq`` (inclusive) archived; nothing is deleted.

        ``after_seq``: those before it and it are archived already (the update reads only the rest).

        Returns:
            How many messages became archived now; ``Chat.messages_archived`` counts them all.
        """
        params = {"b_user": user_id, "b_chat": chat_id, "b_upto": upto_seq, "b_after": after_seq}
        params["b_now"] = models.utcnow()
        with self._write() as session:  # prepared Core statements: this runs on most turns
            changed = _rowcount(session.execute(_ARCHIVE, params))
            if session.execute(_COUNT_ARCHIVED, params).scalar_one_or_none() is None:
                raise NotFoundError("chat", chat_id, user_id)  # nothing was changed: rolled back
            return changed

    def mark_in_summary(
        self, user_id: str, chat_id: str, first_seq: int, last_seq: int, *, in_summary: bool = True
    ) -> int:
        """Set ``is_in_summary`` on messages ``first_seq``..``last_seq``; returns how many exist there."""
        msg = models.ChatMessage
        with self._write() as session:
            self._chat(session, user_id, chat_id)
            return _rowcount(
                session.execute(
                    sa.update(msg)
                    .where(msg.user_id == user_id, msg.chat_id == chat_id)
                    .where(msg.seq >= first_seq, msg.seq <= last_seq)
                    .values(is_in_summary=in_summary)
                    .execution_options(synchronize_session=False)
                )
            )

    # tool calls ----------------------------------------------------------------------------------

    def add_tool_call(
        self,
        user_id: str,
        chat_id: str,
        message_id: str,
        tool_name: str,
        arguments: Mapping[str, Any],
        *,
        result: Any = None,
        blob_sha256: str | None = None,
        duration_ms: int | None = None,
        success: bool = True,
        error: str | None = None,
        at: datetime | None = None,
    ) -> ToolCallRecord:
        """Record one tool execution asked for by message ``message_id`` of the chat."""
        tool_name = check_text("tool_name", tool_name)
        args = dict(check_json("arguments", dict(arguments)))
        result = check_json("result", result)
        check_count("duration_ms", duration_ms, optional=True)
        error = check_text("error", error, optional=True)
        check_time("at", at)
        with self._write() as session:
            found = session.execute(
                _FIND_MESSAGE, {"b_id": message_id, "b_user": user_id, "b_chat": chat_id}
            ).scalar_one_or_none()
            if found is None:
                self._chat(session, user_id, chat_id)  # which is missing: the chat, or the message?
                raise NotFoundError("message", message_id, user_id)
            if blob_sha256 is not None and session.get(models.Blob, (user_id, blob_sha256)) is None:
                raise NotFoundError("blob", blob_sha256, user_id)
            values = {
                "id": models.new_id(),
                "chat_id": chat_id,
                "message_id": message_id,
                "user_id": user_id,
                "tool_name": tool_name,
                "arguments": args,
                "result": result,
                "blob_sha256": blob_sha256,
                "duration_ms": duration_ms,
                "success": bool(success),
                "error": error,
                "created_at": at or models.utcnow(),
            }
            session.execute(_INSERT_TOOL_CALL, values)
            return ToolCallRecord(**values)

    def list_tool_calls(
        self, user_id: str, chat_id: str, *, message_id: str | None = None
    ) -> list[ToolCallRecord]:
        """The chat's tool calls in the order they were recorded (one message's, if given)."""
        call = models.ChatToolCall
        query = sa.select(call).where(call.user_id == user_id, call.chat_id == chat_id)
        if message_id is not None:
            query = query.where(call.message_id == message_id)
        with self._read() as session:
            self._chat(session, user_id, chat_id)
            return [ToolCallRecord.of(r) for r in session.scalars(query.order_by(call.created_at, call.id))]
