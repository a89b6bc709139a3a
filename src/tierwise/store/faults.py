"""Storage faults as a user is told of them: what failed, in words, and what to do (issue 32).

A write that fails because of the database's medium — the disk is full, the file or its directory is
read-only, the disk failed, another process kept the database locked — is not a bug in tierwise, and
the client must hear of it (decision 77). :func:`storage_fault` says whether an exception is one and
words it; :func:`check_writable` is ``tierwise serve``'s check before it starts, raising
:class:`StoreNotWritable` with the fix.

Example:
    >>> import sqlite3
    >>> storage_fault(sqlite3.OperationalError("database or disk is full"))
    'the disk holding the database is full (database or disk is full); free some space'
    >>> storage_fault(ValueError("not a storage fault")) is None
    True
"""

from __future__ import annotations

import errno
import os
import sqlite3
import uuid
from pathlib import Path

import sqlalchemy as sa
import sqlalchemy.exc

from tierwise.store.engine import normalize_url, sqlite_memory
from tierwise.store.errors import StoreError

__all__ = ["StoreNotWritable", "check_writable", "storage_fault"]

_FIX_PLACE = (
    "make it writable by this user, or set TIERWISE_DATA_DIR (or TIERWISE_DATABASE_URL) to a writable place"
)

_WORDS = (
    (
        ("database or disk is full", "disk full", "no space left", "diskfull"),
        "the disk holding the database is full ({}); free some space",
    ),
    (("readonly", "read-only", "read only"), "the database is read-only ({}); " + _FIX_PLACE),
    (("disk i/o error", "input/output error"), "the disk holding the database failed ({})"),
    (
        ("database is locked", "lock timeout", "locknotavailable"),
        "the database stayed locked by another process ({})",
    ),
    (
        ("unable to open database", "permission denied"),
        "the database cannot be opened for writing ({}); " + _FIX_PLACE,
    ),
)
_ERRNOS = {errno.ENOSPC: 0, errno.EROFS: 1, errno.EIO: 2, errno.EACCES: 4, errno.EPERM: 4}


class StoreNotWritable(StoreError):
    """The database (or the directory of a SQLite file) cannot be written; the message names the fix."""


def _causes(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen and len(seen) < 8:
        seen.append(current)
        original = getattr(current, "orig", None)  # SQLAlchemy's DBAPIError keeps the driver's
        current = (
            original if isinstance(original, BaseException) else (current.__cause__ or current.__context__)
        )
    return seen


def storage_fault(exc: BaseException) -> str | None:
    """``exc`` as a sentence when it is the database failing (its medium, or the database itself).

    ``None`` for anything else (a tierwise error, a bug): the caller handles those as before.
    """
    chain = _causes(exc)
    for cause in chain:
        if isinstance(cause, OSError) and cause.errno in _ERRNOS:
            phrases, template = _WORDS[_ERRNOS[cause.errno]]
            return template.format(cause.strerror or phrases[0])
    database = [c for c in chain if isinstance(c, sqlite3.Error | sqlalchemy.exc.DBAPIError)]
    if not database:
        return None
    driver = database[-1]  # the driver's own exception, with its own words
    said = str(driver).strip().splitlines()[0] if str(driver).strip() else type(driver).__name__
    lowered = f"{type(driver).__name__} {said}".lower()
    for phrases, template in _WORDS:
        if any(phrase in lowered for phrase in phrases):
            return template.format(said)
    return f"the database failed ({said})"


def check_writable(url: str | sa.URL) -> None:
    """Make sure the store at ``url`` can be written, before serving from it.

    SQLite: the file's directory (created if missing) and the file, if it exists, must be writable
    — tested by the operating system's answer, then by creating and removing a file there (``root``
    passes permission checks a read-only mount still refuses). Other databases are checked by
    opening them (:meth:`Store.open`).

    Raises:
        StoreNotWritable: what cannot be written, and how to fix it.
    """
    parsed = normalize_url(url)
    if parsed.get_backend_name() != "sqlite" or sqlite_memory(parsed) or not parsed.database:
        return
    if parsed.query.get("mode") == "ro" or "mode=ro" in parsed.database:
        raise StoreNotWritable(
            f"the database {parsed.database} is opened read-only (mode=ro) and tierwise serve writes "
            "to it: drop mode=ro from TIERWISE_DATABASE_URL"
        )
    if parsed.database.startswith("file:"):  # a SQLite URI: opening it (Store.open) says the rest
        return
    path = Path(parsed.database).expanduser()
    directory = path.parent
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreNotWritable(
            f"cannot create the data directory {directory} ({exc.strerror}); {_FIX_PLACE}"
        ) from exc
    for target in (directory, path):
        if target.exists() and not os.access(target, os.W_OK):
            what = "data directory" if target == directory else "database file"
            why = " (it is on a read-only file system)" if _read_only_mount(target) else ""
            raise StoreNotWritable(f"the {what} {target} is not writable{why}; {_FIX_PLACE}")
    probe = directory / f".tierwise-write-check-{uuid.uuid4().hex[:8]}"
    try:
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        reason = "it is on a read-only file system" if exc.errno == errno.EROFS else str(exc.strerror)
        raise StoreNotWritable(
            f"cannot write in the data directory {directory} ({reason}); {_FIX_PLACE}"
        ) from exc


def _read_only_mount(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False
