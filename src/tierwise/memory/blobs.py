"""Tool-result compression: large outputs stored once by sha256, packs carry a summary and a reference.

Seed 003 ("Reference Index, Compression, Deduplication"): a tool output larger than a threshold is
stored as a content-addressed blob; the pack carries a :class:`CompressedToolResult` instead — an
extractive summary of at most ``summary_tokens`` tokens, the key entities, code pointers and the blob
reference — and the model calls :func:`open_blob` when it needs the raw bytes.

This module is storage-independent: :class:`BlobStore` is the protocol (a SQL-backed store
implements it elsewhere) and :class:`InMemoryBlobStore` the dict-backed one for tests and embedding.

Summaries are deterministic (no model): JSON results are described by their structure (top-level
keys, list lengths, ``total`` / ``has_more`` / ``message`` fields, the first items' titles and
ids), text by its line count and first sentences. They pass the scrubber when one is given, then are
cut to the cap between parts or words (between tokens only for text without spaces). The rendered
reference carries the full 64-digit hash: the model must pass it back to :func:`open_blob`, and an
abbreviated one could not be opened.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from tierwise.errors import InputError
from tierwise.memory.digest import (
    _NOT_JSON,
    _SCAN_CHARS,
    _clip,
    _parse_json,
    _summarize,
    extract_entities,
    extract_pointers,
    summarize_content,
)
from tierwise.memory.outputs import excerpt
from tierwise.memory.scrub import Scrubber
from tierwise.tokens import TokenCounter

__all__ = [
    "BlobRecord",
    "BlobRef",
    "BlobStore",
    "CompressedToolResult",
    "InMemoryBlobStore",
    "UnknownBlobError",
    "compress_tool_result",
    "compressed_sha256",
    "extract_entities",
    "extract_pointers",
    "open_blob",
    "summarize_content",
]

_HASH = re.compile(r"[0-9a-f]{64}")


class UnknownBlobError(InputError):
    """No blob with this sha256 is stored."""


@dataclass(frozen=True, slots=True)
class BlobRef:
    """Where a blob is: its sha256 (64 lower-case hex digits), size in bytes and MIME type."""

    sha256: str
    size: int
    mime: str


class BlobStore(Protocol):
    """Content-addressed storage for tool outputs.

    ``put`` stores ``content`` under its sha256 unless it is already there (deduplication: the
    summary and entities of the first ``put`` are kept). ``get`` returns the bytes
    ``content[start:end]`` (``None`` means from the beginning / to the end) and raises
    :class:`UnknownBlobError` for a hash it does not hold, :class:`~tierwise.errors.InputError` for a
    negative offset or ``start > end``.
    """

    def put(self, content: bytes, *, mime: str, summary: str, entities: Sequence[str]) -> BlobRef:
        """Store ``content`` (once per sha256) and return its reference."""
        ...

    def get(self, sha256: str, start: int | None = None, end: int | None = None) -> bytes:
        """The bytes ``[start, end)`` of the blob with this sha256."""
        ...


@dataclass(frozen=True, slots=True)
class BlobRecord:
    """What :class:`InMemoryBlobStore` holds for one blob, and how often it was put."""

    ref: BlobRef
    content: bytes
    summary: str
    entities: tuple[str, ...]
    hits: int


class InMemoryBlobStore:
    """A :class:`BlobStore` in a dict: deduplicates by sha256 and counts hits (puts per blob).

    Example:
        >>> store = InMemoryBlobStore()
        >>> ref = store.put(b"hello world", mime="text/plain", summary="greeting", entities=())
        >>> _ = store.put(b"hello world", mime="text/plain", summary="greeting", entities=())
        >>> len(store), store.hits(ref.sha256), store.get(ref.sha256, 6)
        (1, 2, b'world')
    """

    def __init__(self) -> None:
        self._records: dict[str, BlobRecord] = {}
        self._lock = threading.Lock()

    def put(self, content: bytes, *, mime: str, summary: str, entities: Sequence[str]) -> BlobRef:
        """Store ``content`` once; a repeated put only counts a hit and returns the same reference."""
        digest = hashlib.sha256(content).hexdigest()
        with self._lock:
            old = self._records.get(digest)
            new = BlobRecord(BlobRef(digest, len(content), mime), bytes(content), summary, tuple(entities), 1)
            self._records[digest] = new if old is None else replace(old, hits=old.hits + 1)
            return self._records[digest].ref

    def get(self, sha256: str, start: int | None = None, end: int | None = None) -> bytes:
        """The bytes ``[start, end)`` of a stored blob.

        Raises:
            UnknownBlobError: no blob has this sha256.
            InputError: a negative offset, or ``start > end``.
        """
        if (start is not None and start < 0) or (end is not None and end < 0):
            raise InputError(f"byte offsets must be 0 or more (got start={start}, end={end})")
        if start is not None and end is not None and start > end:
            raise InputError(f"start ({start}) must not be after end ({end})")
        record = self._records.get(sha256)
        if record is None:
            raise UnknownBlobError(f"no blob sha256:{sha256}")
        return record.content[start:end]

    def record(self, sha256: str) -> BlobRecord | None:
        """Everything held for ``sha256`` (content, summary, entities, hits), or ``None``."""
        return self._records.get(sha256)

    def hits(self, sha256: str) -> int:
        """How many times this content was put (0 if never)."""
        record = self._records.get(sha256)
        return record.hits if record is not None else 0

    def __len__(self) -> int:
        return len(self._records)

    def __contains__(self, sha256: object) -> bool:
        return sha256 in self._records


def _size(n: int) -> str:
    if n < 1000:
        return f"{n} B"
    if n < 999_950:
        return f"{n / 1000:.1f} kB"
    return f"{n / 1_000_000:.1f} MB"


@dataclass(frozen=True, slots=True)
class CompressedToolResult:
    """What a pack carries instead of a large tool output.

    Attributes:
        blob: the stored raw output.
        summary: extractive summary, at most the ``summary_tokens`` it was built with.
        entities: ids, names, file paths and URLs found in the output (at most 10).
        pointers: code locations (``path:line``) found in the output (at most 5).
        tool: the name of the tool that produced it.
    """

    blob: BlobRef
    summary: str
    entities: tuple[str, ...]
    pointers: tuple[str, ...]
    tool: str = ""
    excerpt: str = ""
    lines: int = 0

    def render(self) -> str:
        """The compact text a pack carries; the full hash lets the model call ``open_blob``.

        Example:
            >>> ref = BlobRef("ab" * 32, 14_200, "application/json")
            >>> result = CompressedToolResult(ref, "12 tasks.", ("task_q4_101",), (), "list_tasks")
            >>> print(result.render())  # doctest: +ELLIPSIS
            [tool result list_tasks · 14.2 kB · blob sha256:abab...abab (open with open_blob)] 12 tasks. ...
        """
        name = f" {_clip(self.tool, 60)}" if self.tool else ""
        lines = f" · {self.lines:,} lines" if self.lines > 1 else ""
        parts = [f"[tool result{name} · {_size(self.blob.size)}{lines} · blob sha256:{self.blob.sha256}"]
        parts[0] += " (open with open_blob)]"
        if self.excerpt:  # text output: its telling lines, in order (memory/outputs.py)
            if self.pointers:
                parts.append(f"Pointers: {', '.join(self.pointers)}.")
            return " ".join(parts) + "\n" + self.excerpt
        if self.summary:
            parts.append(self.summary)
        if self.entities:
            parts.append(f"Entities: {', '.join(self.entities)}.")
        if self.pointers:
            parts.append(f"Pointers: {', '.join(self.pointers)}.")
        return " ".join(parts)


# -- summaries --------------------------------------------------------------------------------------


def compress_tool_result(
    tool_name: str,
    content: str,
    store: BlobStore,
    counter: TokenCounter,
    *,
    threshold_tokens: int = 400,
    summary_tokens: int = 60,
    excerpt_tokens: int = 200,
    scrubber: Scrubber | None = None,
) -> str | CompressedToolResult:
    """``content`` itself if it is small; otherwise store it and return its compressed form.

    Args:
        tool_name: the tool that produced ``content`` (shown in :meth:`CompressedToolResult.render`).
        content: the tool's output (JSON or text).
        store: where the raw bytes go (deduplicated by sha256).
        counter: counts tokens for the threshold and the summary cap.
        threshold_tokens: outputs of at most this many tokens are returned unchanged.
        summary_tokens: the summary's cap in tokens.
        excerpt_tokens: a text output's excerpt cap (its failures, tail, head and outline lines:
            :func:`~tierwise.memory.outputs.excerpt`); JSON is summarised by its shape instead.
        scrubber: redacts the summary; entities and pointers it finds anything in are left out.

    Returns:
        ``content`` unchanged, or a :class:`CompressedToolResult` whose blob holds ``content``.

    Raises:
        InputError: a negative threshold or summary cap.
    """
    if threshold_tokens < 0 or summary_tokens < 0:
        raise InputError(
            f"threshold_tokens and summary_tokens must be 0 or more "
            f"(got {threshold_tokens} and {summary_tokens})"
        )
    raw = content.encode("utf-8", errors="surrogatepass")
    if len(raw) <= threshold_tokens:  # a token is at least one byte: small enough without counting
        return content
    tokens = counter.count(content) if len(content) <= _SCAN_CHARS else len(counter.encode(content))
    if tokens <= threshold_tokens:
        return content
    data = _parse_json(content)
    summary = _summarize(content, data, counter, summary_tokens, scrubber)
    entities = extract_entities(content)
    pointers = extract_pointers(content)
    if scrubber is not None:
        entities = tuple(e for e in entities if not scrubber.scrub(e).findings)
        pointers = tuple(p for p in pointers if not scrubber.scrub(p).findings)
    mime = "application/json" if data is not _NOT_JSON else "text/plain; charset=utf-8"
    ref = store.put(raw, mime=mime, summary=summary, entities=entities)
    cut, lines = "", 0
    if data is _NOT_JSON and excerpt_tokens > 0:
        cut = excerpt(
            content if len(content) <= 4 * _SCAN_CHARS else content[-4 * _SCAN_CHARS :],
            counter,
            excerpt_tokens,
        )
        cut = scrubber.scrub(cut).text if scrubber is not None else cut
        lines = content.count("\n") + 1
    return CompressedToolResult(ref, summary, entities, pointers, tool_name, cut, lines)


_RENDERED = re.compile(r"\[tool result[^\]\n]* · blob sha256:([0-9a-f]{64}) \(open with open_blob\)\]")


def compressed_sha256(content: object) -> str | None:
    """The blob hash if ``content`` is a rendered :class:`CompressedToolResult`, else ``None``.

    Memory never compresses such a text again (its blob would hash the compressed form).

    Example:
        >>> compressed_sha256(f"[tool result cat · 6.8 kB · blob sha256:{'ab' * 32} (open with open_blob)] …")
        'abababababababababababababababababababababababababababababababab'
        >>> compressed_sha256("plain output") is None
        True
    """
    if not isinstance(content, str) or not content.startswith("[tool result"):
        return None
    match = _RENDERED.match(content)
    return match.group(1) if match else None


_COPY_HASH = "Copy the 64 hex digits after 'sha256:' from the '[tool result … blob sha256:…]' line."


def _digest(value: object) -> str:
    """The 64-hex sha256 in ``value`` (``sha256:`` prefix, quotes and case tolerated), or an error."""
    text = value.strip() if isinstance(value, str) else ""
    digest = text.strip("\"'`").strip().lower().removeprefix("sha256:").strip()
    if not text:
        return f"error: sha256 must be the blob's hash as a string (got {value!r}). {_COPY_HASH}"
    if "…" in digest or "..." in digest:
        return f"error: {text[:80]!r} is an abbreviated hash; pass all of it. {_COPY_HASH}"
    if not _HASH.fullmatch(digest):
        return (
            f"error: {text[:80]!r} is not a blob hash (64 hex digits 0-9a-f, got {len(digest)}). {_COPY_HASH}"
        )
    return digest


def _offset(value: object, name: str) -> int | str | None:
    """``value`` as a byte offset (ints, whole floats and digit strings), ``None``, or an error."""
    if isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*", value):
        value = int(value)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    omit = f"omit {name} to read {'from the beginning' if name == 'start' else 'to the end'}"
    if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
        return f"error: {name} must be a whole number of bytes (got {value!r}); {omit}."
    if value is not None and value < 0:
        return f"error: {name}={value} is negative. Byte offsets count from 0; {omit}."
    return value


def open_blob(
    store: BlobStore,
    sha256: str,
    *,
    start: int | str | None = None,
    end: int | str | None = None,
    max_bytes: int = 16_000,
) -> str:
    """The text of bytes ``[start, end)`` of a blob, for a model-facing tool; never raises on bad input.

    At most ``max_bytes`` bytes are returned (cut at a character boundary), then a note saying how
    to read on. A malformed or unknown hash, a non-numeric or negative offset, ``start >= end`` or a
    start past the end return one ``error: …`` line that names the fix. Bytes are decoded as UTF-8
    (invalid bytes become U+FFFD).

    Args:
        store: where the blob is.
        sha256: the hash from the rendered tool result (``sha256:`` prefix allowed).
        start: first byte to read (default 0).
        end: byte to stop before (default: the end of the blob).
        max_bytes: the most bytes returned in one call.

    Example:
        >>> store = InMemoryBlobStore()
        >>> ref = store.put(b"0123456789", mime="text/plain", summary="", entities=())
        >>> open_blob(store, f"sha256:{ref.sha256}", start=2, end=5)
        '234'
        >>> print(open_blob(store, ref.sha256, max_bytes=4))  # doctest: +ELLIPSIS
        0123
        [… truncated: bytes 0–4 shown; call open_blob(sha256="84d8...", start=4) for the rest]
        >>> open_blob(store, ref.sha256, start=7, end=3)
        'error: start=7 is after end=3, so the range is empty (end is exclusive). Did you mean start=3, end=7?'
    """  # noqa: E501
    digest = _digest(sha256)
    lo, hi = _offset(start, "start"), _offset(end, "end")
    for problem in (digest, lo, hi):
        if isinstance(problem, str) and problem.startswith("error:"):
            return problem
    assert not isinstance(lo, str) and not isinstance(hi, str)  # errors were returned above
    if lo is not None and hi is not None and lo >= hi:
        fix = (
            f"Did you mean start={hi}, end={lo}?" if lo > hi else f"Pass a larger end, e.g. end={lo + 1000}."
        )
        relation = "is after" if lo > hi else "equals"
        return f"error: start={lo} {relation} end={hi}, so the range is empty (end is exclusive). {fix}"
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes <= 0:
        return f"error: max_bytes must be a positive whole number (got {max_bytes!r})."
    first = lo or 0
    capped = hi is None or hi - first > max_bytes
    try:
        data = store.get(digest, first, first + max_bytes + 1 if capped else hi)
    except (UnknownBlobError, LookupError):  # LookupError: a store that raises KeyError
        return (
            f"error: no blob sha256:{digest} is stored. Copy the hash exactly from a '[tool result … "
            "blob sha256:…]' line of this conversation."
        )
    except InputError as exc:
        return f"error: {exc}"
    if not data and first > 0:
        return (
            f"error: start={first} is at or past the end of blob sha256:{digest}; nothing to read. "
            "Use a smaller start, or omit start to read from the beginning."
        )
    if not capped or len(data) <= max_bytes:
        return data.decode("utf-8", errors="replace")
    cut = max_bytes
    while cut > max(0, max_bytes - 3) and (data[cut] & 0xC0) == 0x80:  # keep UTF-8 characters whole
        cut -= 1
    if (data[cut] & 0xC0) == 0x80:
        cut = max_bytes
    following = first + cut
    until = f", end={hi}" if hi is not None else ""
    return (
        data[:cut].decode("utf-8", errors="replace") + f"\n[… truncated: bytes {first}–{following} shown; "
        f'call open_blob(sha256="{digest}", start={following}{until}) for the rest]'
    )
