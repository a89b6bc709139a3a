"""Digests of tool output: the ≤ 60-token summary, key entities and code pointers of a result.

Deterministic and model-free. JSON results are summarised by structure (top-level keys, list sizes,
totals, ``has_more``/``message`` fields, the first few item titles and ids); text by its first
sentences. Entities are ids, UUIDs, capitalised names, file paths and URLs (at most 10, in order of
first appearance, at most 3 of one kind before the others get a turn); pointers are code locations.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from tierwise.memory.scrub import Scrubber
from tierwise.packing.layers import truncate_text
from tierwise.tokens import TokenCounter

__all__ = [
    "MAX_ENTITIES",
    "MAX_POINTERS",
    "extract_entities",
    "extract_pointers",
    "summarize_content",
]

MAX_ENTITIES = 10
MAX_POINTERS = 5
_SCAN_CHARS = 65_536  # entities and pointers are looked for in the first 64k characters

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
