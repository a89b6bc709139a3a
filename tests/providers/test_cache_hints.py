"""Cache hints: where a pack's stable parts end, and Anthropic-style ``cache_control`` on the wire."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.fake_openai import FakeOpenAI
from tierwise.cli_common import assistant as _assistant
from tierwise.packing.packer import TAIL_LEAD
from tierwise.packing.prefix import cache_breakpoints, stable_prefix
from tierwise.providers import ModelRequest, OpenAICompatProvider, ProviderSettings
from tierwise.providers.cache_hints import CACHE_CONTROL, with_cache_hints

SYSTEM = {"role": "system", "content": "Be brief.  \n"}
HEAD = {"role": "system", "content": "## Story so far\nMaya plans the offsite."}
TAIL = {"role": "user", "content": f"{TAIL_LEAD}\n\n## Retrieved\nuser: the venue seats 40"}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def assistant(text: str | None, **extra: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": text, **extra}


CALL = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}


def plain(messages: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[int]]:
    """The messages with each marked content turned back into its string, and which were marked."""
    out, marked = [], []
    for i, message in enumerate(messages):
        content = message.get("content")
        if isinstance(content, list) and content and "cache_control" in content[-1]:
            (part,) = content
            assert part == {"type": "text", "text": part["text"], "cache_control": CACHE_CONTROL}
            message = {**message, "content": part["text"]}
            marked.append(i)
        out.append(message)
    return out, marked


# -- where the stable parts end --------------------------------------------------------------------


def test_the_stable_prefix_ends_before_the_tail_or_the_input() -> None:
    history = [user("Hi"), assistant("Hello!")]
    assert stable_prefix([SYSTEM, *history, user("Bye")]) == 3
    assert stable_prefix([SYSTEM, HEAD, *history, TAIL, user("Bye")]) == 4
    assert stable_prefix([SYSTEM, HEAD, TAIL, user("Bye")]) == 2
    # a turn in progress: the input is the user message and the calls after it
    turn = [
        user("Do it"),
        assistant(None, tool_calls=[CALL]),
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
    ]
    assert stable_prefix([SYSTEM, *history, TAIL, *turn]) == 3
    # a tail sent as a system message (Packer(tail_role="system")) after the history
    system_tail = {"role": "system", "content": "## Retrieved\nuser: the venue seats 40"}
    assert stable_prefix([SYSTEM, HEAD, *history, system_tail, user("Bye")]) == 4
    assert stable_prefix([user("Hi")]) == 0 and stable_prefix([]) == 0


def test_breakpoints_end_the_system_layer_and_the_stable_prefix() -> None:
    history = [user("Hi"), assistant("Hello!")]
    assert cache_breakpoints([SYSTEM, HEAD, *history, TAIL, user("Bye")], system=1) == (0, 3)
    assert cache_breakpoints([SYSTEM, SYSTEM, *history, user("Bye")], system=2) == (1, 3)
    assert cache_breakpoints([SYSTEM, user("Hi")], system=1) == (0,)
    assert cache_breakpoints([*history, user("Bye")]) == (1,)
    assert cache_breakpoints([user("Hi")]) == ()


# -- the wire --------------------------------------------------------------------------------------


def test_marks_keep_the_text_and_copy_only_what_they_mark() -> None:
    messages = [SYSTEM, HEAD, user("Hi"), assistant("Hello!"), TAIL, user("Bye")]
    before = [dict(m) for m in messages]
    sent = with_cache_hints(messages, (0, 3))
    assert messages == before  # the pack is left as it was
    unmarked, marked = plain(sent)
    assert marked == [0, 3] and unmarked == messages
    assert sent[0]["content"][0]["text"] is SYSTEM["content"]  # the very string, byte for byte
    assert all(sent[i] is messages[i] for i in (1, 2, 4, 5))


def test_tool_results_and_bare_tool_calls_pass_the_mark_back() -> None:
    messages = [
        SYSTEM,
        user("Check"),
        assistant(None, tool_calls=[CALL]),
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        user("Next"),
    ]
    assert plain(with_cache_hints(messages, (0, 3)))[1] == [0, 1]
    assert plain(with_cache_hints(messages, (1, 3)))[1] == [1]  # both fall on the same message


def test_list_contents_and_the_clients_own_breakpoints() -> None:
    parts = [{"type": "text", "text": "Look"}, {"type": "image_url", "image_url": {"url": "data:,"}}]
    sent = with_cache_hints([user("Hi"), {"role": "user", "content": parts}, user("Bye")], (1,))
    assert sent[1]["content"] == [parts[0], {**parts[1], "cache_control": CACHE_CONTROL}]
    assert parts[1] == {"type": "image_url", "image_url": {"url": "data:,"}}
    # the client's breakpoints stay, count towards the limit, and are not marked twice
    own = {
        "role": "system",
        "content": [{"type": "text", "text": "Be brief.", "cache_control": CACHE_CONTROL}],
    }
    messages = [own, user("a"), user("b"), user("c")]
    assert with_cache_hints(messages, (0, 2))[0] is own
    three = [own, *([{**own, "role": "user"}] * 2), user("c"), user("d")]
    sent = with_cache_hints(three, (3, 4), limit=4)
    assert plain(sent[3:])[1] == [1] and sent[3] == user("c")  # one left: the latest breakpoint


@given(
    st.lists(st.sampled_from(["system", "user", "assistant", "tool"]), max_size=12),
    st.lists(st.integers(-2, 14), max_size=5),
)
def test_marking_never_changes_a_text_nor_exceeds_the_limit(roles: list[str], breakpoints: list[int]) -> None:
    messages = [{"role": role, "content": f"{role} {i} ✓ "} for i, role in enumerate(roles)]
    sent = with_cache_hints(messages, breakpoints)
    unmarked, marked = plain(sent)
    assert unmarked == messages and len(marked) <= min(
        4, len({b for b in breakpoints if 0 <= b < len(roles)})
    )
    assert all(messages[i]["role"] != "tool" for i in marked)


# -- the provider ----------------------------------------------------------------------------------


def test_the_setting_is_off_by_default_and_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert ProviderSettings().cache_hints is False
    assert OpenAICompatProvider(base_url="http://127.0.0.1:9/v1", model="m").cache_hints is False
    monkeypatch.setenv("TIERWISE_CACHE_HINTS", "true")
    assert OpenAICompatProvider(base_url="http://127.0.0.1:9/v1", model="m").cache_hints is True
    assert (
        OpenAICompatProvider(base_url="http://127.0.0.1:9/v1", model="m", cache_hints=False).cache_hints
        is False
    )


@pytest.mark.anyio
async def test_the_provider_marks_the_breakpoints_on_the_wire_only_when_set(fake_openai: FakeOpenAI) -> None:
    messages = [SYSTEM, HEAD, user("Hi"), assistant("Hello!"), TAIL, user("Bye")]
    request = ModelRequest(messages, cache_breakpoints=cache_breakpoints(messages, system=1))
    fake_openai.script("One.", "Two.")
    async with OpenAICompatProvider(base_url=fake_openai.url, model="m") as off:
        assert (await off.complete(request)).text == "One."
    async with OpenAICompatProvider(base_url=fake_openai.url, model="m", cache_hints=True) as on:
        assert (await on.complete(request)).text == "Two."
    plain_body, hinted_body = fake_openai.requests
    assert plain_body["messages"] == messages  # off: the pack as it is
    unmarked, marked = plain(hinted_body["messages"])
    assert marked == [0, 3] and unmarked == messages
    assert request.messages == messages


@pytest.mark.parametrize(
    ("flag", "env", "expected"), [(True, None, True), (False, "true", False), (None, "1", True)]
)
def test_the_cli_flag_overrides_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, flag: bool | None, env: str | None, expected: bool
) -> None:
    monkeypatch.setenv("TIERWISE_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("TIERWISE_MODEL", "m")
    if env is not None:
        monkeypatch.setenv("TIERWISE_CACHE_HINTS", env)
    store, _, provider, engine, _ = _assistant(f"sqlite:///{tmp_path / 'cli.db'}", None, 4_000, None, flag)
    try:
        assert isinstance(provider, OpenAICompatProvider) and engine.provider is provider
        assert provider.cache_hints is expected
    finally:
        store.close()
