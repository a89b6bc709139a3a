"""Tool-result compression: large outputs stored once by sha256, packs carry a summary and a reference.

Seed 003 ("Reference Index, Compression, Deduplication"): a tool output larger than a threshold is
stored as a content-addressed blob; the pack carries a :class:`CompressedToolResult` instead — an
extractive summary of at most ``summary_tokens`` tokens, the key entities, code pointers and the blob
reference — and the model calls :func:`open_blob` when it needs the raw bytes.

This module is storage-independent: :class:`BlobStore` is the protocol (a SQL-backed store
implements it elsewhere) and :class:`InMemoryBlobStore` the dict-backed one for tests and embedding.

Summaries are deterministic (no model): JSON results are described by their structure (top-level
keys, list lengths, ``total`` / ``has_more`` / ``message`` fields, the first items' titles and
ids), text by its length and first sentences. They pass the scrubber when one is given, then are cut
to the cap at a sentence or word boundary.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from tierwise.errors import InputError
from tierwise.memory.scrub import Scrubber
from tierwise.packing.layers import truncate_text
from tierwise.tokens import TokenCounter

__all__ = [
    "BlobRecord",
    "BlobRef",
    "BlobStore",
    "CompressedToolResult",
    "InMemoryBlobStore",
    "UnknownBlobError",
    "compress_tool_result",
    "extract_entities",
    "extract_pointers",
    "open_blob",
    "summarize_content",
]

MAX_ENTITIES = 10
MAX_POINTERS = 5
_SCAN_CHARS = 65_536  # entities and pointers are looked for in the first 64k characters
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

    def render(self) -> str:
        """The compact text a pack carries; the full hash lets the model call ``open_blob``.

        Example:
            >>> ref = BlobRef("ab" * 32, 14_200, "application/json")
            >>> result = CompressedToolResult(ref, "12 tasks.", ("task_q4_101",), (), "list_tasks")
            >>> print(result.render())  # doctest: +ELLIPSIS
            [tool result list_tasks · 14.2 kB · blob sha256:abab...abab (open with open_blob)] 12 tasks. ...
        """
        name = f" {self.tool}" if self.tool else ""
        parts = [f"[tool result{name} · {_size(self.blob.size)} · blob sha256:{self.blob.sha256}"]
        parts[0] += " (open with open_blob)]"
        if self.summary:
            parts.append(self.summary)
        if self.entities:
            parts.append(f"Entities: {', '.join(self.entities)}.")
        if self.pointers:
            parts.append(f"Pointers: {', '.join(self.pointers)}.")
        return " ".join(parts)


# -- summaries --------------------------------------------------------------------------------------

_TITLE_KEYS = ("title", "name", "subject", "summary", "label", "display_name", "filename", "path", "text")
_ID_KEYS = ("id", "uuid", "key", "_id", "slug", "number")
_META_KEYS = ("message", "error", "warning", "status", "total", "total_count", "count", "has_more", "page")
_NOT_JSON = object()
_WS = re.compile(r"\s+")


def _clip(text: str, limit: int) -> str:
    text = _WS.sub(" ", text).strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _scalar(value: Any, limit: int = 60) -> str:
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, (float, str)):
        return _clip(str(value), limit)
    return "[…]" if isinstance(value, list) else "{…}"


def _label(item: Any) -> str:
    """An item as a short label: its title and id (``Draft plan (task_1)``), or its first value."""
    if not isinstance(item, dict):
        return _scalar(item)
    title = next((item[k] for k in _TITLE_KEYS if isinstance(item.get(k), str) and item[k].strip()), None)
    ident = next((item[k] for k in _ID_KEYS if isinstance(item.get(k), (str, int)) and item[k] != ""), None)
    if title is None:
        first = ident if ident is not None else next(iter(item.values()), None)
        return _scalar(first) if first is not None else "{…}"
    return _clip(title, 60) + (f" ({_scalar(ident, 40)})" if ident is not None else "")


def _largest_list(data: Any, path: str = "", depth: int = 0) -> tuple[str, list[Any]] | None:
    """The longest list within three levels (the first one on ties), with its dotted path."""
    if isinstance(data, list):
        return (path, data)
    best: tuple[str, list[Any]] | None = None
    if isinstance(data, dict) and depth < 3:
        for key, value in data.items():
            found = _largest_list(value, f"{path}.{key}" if path else str(key), depth + 1)
            if found is not None and (best is None or len(found[1]) > len(best[1])):
                best = found
    return best


def _items(n: int) -> str:
    return "1 item" if n == 1 else f"{n:,} items"


def _keys(mapping: dict[Any, Any], limit: int) -> str:
    names = [
        _clip(str(k), 40) + (f" ({_items(len(v))})" if isinstance(v, list) else "")
        for k, v in list(mapping.items())[:limit]
    ]
    return ", ".join(names) + (f" (+{len(mapping) - limit} more)" if len(mapping) > limit else "")


def _json_parts(data: Any) -> list[str]:
    """Most important first: shape, status fields, the main list and its first items."""
    parts: list[str] = []
    if isinstance(data, dict):
        parts.append(f"JSON object, {len(data)} keys: {_keys(data, 12)}." if data else "Empty JSON object.")
        meta = [
            f"{k}: {_scalar(data[k], 120)}" for k in _META_KEYS if isinstance(data.get(k), (str, int, float))
        ]
        parts += [f"{'; '.join(meta)}."] if meta else []
    found = _largest_list(data)
    if found is not None:
        path, items = found
        parts.append(f"{path or 'JSON list'}: {_items(len(items))}." if items else f"{path}: empty.")
        if items:
            parts.append("First: " + "; ".join(_label(i) for i in items[:5]) + ".")
            if isinstance(items[0], dict) and items[0]:
                parts.append(f"Item keys: {_keys(items[0], 8)}.")
    return parts or [_clip(json.dumps(data), 2000)]


def _text_parts(content: str) -> list[str]:
    lines = content.count("\n") + 1
    return ([f"{lines:,} lines."] if lines > 1 else []) + [_clip(content[:4000], 4000)]


def _parse_json(content: str) -> Any:
    stripped = content.strip()
    if not stripped.startswith(("{", "[")):
        return _NOT_JSON
    try:
        return json.loads(stripped)
    except ValueError:
        return _NOT_JSON


def _fit_words(out: str, words: list[str], max_tokens: int, counter: TokenCounter) -> str:
    """``out`` and the longest prefix of ``words`` that fits, marked ``…`` ("" if no word fits)."""

    def cut(n: int) -> str:
        return f"{out} {' '.join(words[:n]).rstrip(',;:')} …".strip()

    lo, hi = 0, len(words)  # by bisection: counts grow with the number of words
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if counter.count(cut(mid)) <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    return cut(lo) if lo else ""


def _fit(parts: Sequence[str], max_tokens: int, counter: TokenCounter) -> str:
    """Whole parts while they fit, then as many words of the next as fit, marked ``…``."""
    out = ""
    for part in parts:
        joined = f"{out} {part}".strip()
        if counter.count(joined) <= max_tokens:
            out = joined
            continue
        words = _fit_words(out, part.split(" "), max_tokens, counter)
        if words:
            return words
        if not out:  # one long word (minified text, CJK): cut between tokens
            return truncate_text(part, max_tokens, counter, min_tokens=1, marker=" …", force=True) or ""
        return out
    return out


def summarize_content(
    content: str, counter: TokenCounter, *, max_tokens: int = 60, scrubber: Scrubber | None = None
) -> str:
    """An extractive summary of a tool output, at most ``max_tokens`` tokens (deterministic).

    JSON is described by its structure, text by its line count and first sentences. Each part is
    scrubbed (if a scrubber is given) before the summary is cut to size, so placeholders count too.

    Example:
        >>> from tierwise.tokens import get_counter
        >>> body = '{"tasks": [{"id": "task_1", "title": "Draft plan"}], "total": 1, "has_more": false}'
        >>> summarize_content(body, get_counter())
        'JSON object, 3 keys: tasks (1 item), total, has_more. total: 1; has_more: false. tasks: 1 item. First: Draft plan (task_1). Item keys: id, title.'
    """  # noqa: E501
    return _summarize(content, _parse_json(content), counter, max_tokens, scrubber)


def _summarize(content: str, data: Any, counter: TokenCounter, cap: int, scrubber: Scrubber | None) -> str:
    parts = _text_parts(content) if data is _NOT_JSON else _json_parts(data)
    if scrubber is not None:
        parts = [scrubber.scrub_text(p) for p in parts]
    summary = _fit(parts, cap, counter) if cap > 0 else ""
    return summary if counter.count(summary) <= cap else ""


# -- entities and pointers --------------------------------------------------------------------------

_ENTITY_PATTERNS = (
    re.compile(r"https?://[^\s\"'<>()\[\]{}|\\^`]{1,300}+"),
    re.compile(r"(?<![0-9A-Fa-f-])[0-9A-Fa-f]{8}(?:-[0-9A-Fa-f]{4}){3}-[0-9A-Fa-f]{12}(?![0-9A-Fa-f-])"),
    re.compile(r"(?<![\w./~:-])(?:~|\.{1,2})?/?[\w.-]++(?:/[\w.-]++)++"),
    re.compile(r"(?<![\w-])[A-Za-z][A-Za-z0-9]*+(?:_[A-Za-z0-9]++)++(?![\w-])"),
    re.compile(r"(?<![\w-])[A-Z][A-Z0-9]{1,9}-\d{1,7}(?![\w-])"),
    re.compile(r"(?<!\w)[A-Z][a-z]++(?: [A-Z][a-z]++){1,3}(?!\w)"),
)
_STOPWORDS = frozenset(
    re.findall(
        r"\S+",
        "A An And As At But By For From He If In It Its Of On Or She That The These They This Those To We "
        "When With You",
    )
)
_CODE_EXTENSIONS = frozenset(
    re.findall(
        r"\S+",
        "py pyi js mjs ts tsx jsx go rs java kt c h cc cpp hpp cs rb php swift scala sh sql json yaml yml "
        "toml md txt html css vue svelte ex exs erl hs lua r pl ipynb cfg ini xml log csv",
    )
)
_POINTER = re.compile(r"(?<![\w./~-])([\w./~-]{1,200}+):(\d{1,6})(?::\d{1,4})?(?!\d)")
_TRACEBACK = re.compile(r'File "([^"\r\n]{1,200})", line (\d{1,6})')


def _entity(kind: int, value: str) -> str | None:
    if kind == 0:  # URL: scheme, host and path only (queries carry tokens and noise)
        value = re.split(r"[?#]", value, maxsplit=1)[0].rstrip(".,;:!")
    elif kind == 2:  # path: rooted, or ending in a file extension
        rooted = value.startswith(("/", "~/", "./", "../"))
        extension = re.search(r"\.[A-Za-z][A-Za-z0-9]{0,7}\Z", value)
        value = value.rstrip(".") if re.search(r"[A-Za-z]", value) and (rooted or extension) else ""
    elif kind == 3 and not any(c.isdigit() for c in value):  # ids carry a digit: task_q4_101
        return None
    elif kind == 5:  # names: two to four capitalised words, not led by a sentence opener
        words = value.split(" ")
        while words and words[0] in _STOPWORDS:
            words.pop(0)
        value = " ".join(words) if len(words) >= 2 else ""
    return value if 0 < len(value) <= 80 else None


def extract_entities(content: str, *, limit: int = MAX_ENTITIES) -> tuple[str, ...]:
    """URLs, UUIDs, file paths, ids and capitalised names, in order of first appearance.

    At most 3 of a kind are taken before the others had their turn, so a list of 200 task URLs does
    not crowd out the rest. Only the first 64k characters are read; of overlapping matches the
    earliest, then the longest, wins.

    Example:
        >>> extract_entities('{"id": "task_q4_101", "owner": "Ada Lovelace", "file": "src/plan.md"}')
        ('task_q4_101', 'Ada Lovelace', 'src/plan.md')
    """
    text = content[:_SCAN_CHARS]
    matches = sorted(
        (m.start(), -len(m.group()), kind, m.group())
        for kind, pattern in enumerate(_ENTITY_PATTERNS)
        for m in pattern.finditer(text)
    )
    found: dict[str, tuple[int, int]] = {}  # value -> (position, kind)
    last_end = -1
    for start, neg_len, kind, raw in matches:
        value = _entity(kind, raw) if start >= last_end else None
        if value is not None:
            last_end = start - neg_len
            found.setdefault(value, (start, kind))
    chosen: list[tuple[int, str]] = []
    per_kind: dict[int, int] = {}
    for value, (position, kind) in found.items():  # first pass: three of each kind
        if len(chosen) < limit and per_kind.get(kind, 0) < 3:
            per_kind[kind] = per_kind.get(kind, 0) + 1
            chosen.append((position, value))
    taken = {value for _, value in chosen}
    chosen += [(p, v) for v, (p, _) in found.items() if v not in taken][: max(0, limit - len(chosen))]
    return tuple(value for _, value in sorted(chosen))


def extract_pointers(content: str, *, limit: int = MAX_POINTERS) -> tuple[str, ...]:
    """Code locations ``path:line`` (also from Python tracebacks), in order of first appearance."""
    text = content[:_SCAN_CHARS]
    hits = [(m.start(), f"{m.group(1)}:{m.group(2)}") for m in _TRACEBACK.finditer(text)]
    for m in _POINTER.finditer(text):
        stem, _, extension = m.group(1).rpartition(".")
        if extension.lower() in _CODE_EXTENSIONS and re.search(r"[A-Za-z]", stem):
            hits.append((m.start(), f"{m.group(1)}:{m.group(2)}"))
    pointers = dict.fromkeys(p for _, p in sorted(hits) if len(p) <= 120)
    return tuple(pointers)[:limit]


# -- compression and reading ------------------------------------------------------------------------


def compress_tool_result(
    tool_name: str,
    content: str,
    store: BlobStore,
    counter: TokenCounter,
    *,
    threshold_tokens: int = 400,
    summary_tokens: int = 60,
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
    return CompressedToolResult(ref, summary, entities, pointers, tool_name)


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
    except UnknownBlobError:
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
