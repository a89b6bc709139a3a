"""Agent loops: one task, then many tool steps, packed step by step (memory/assemble.py)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from tierwise.budget import Budget
from tierwise.memory.assemble import pack_text, pack_turn
from tierwise.memory.blobs import InMemoryBlobStore, compressed_sha256
from tierwise.memory.compaction import step_interval
from tierwise.memory.engine import Memory
from tierwise.memory.policy import MemoryPolicy
from tierwise.tokens import get_counter

SYSTEM = "You are a coding agent. Run one shell command per step."
TASK = "Fix the proxy bug in requests/adapters.py.\n" + "\n".join(
    f"Context line {i}: the proxy sends Proxy-Authorization for user{i} but gets 407." for i in range(150)
)


def _file(k: int, lines: int) -> str:
    return "\n".join(
        f"{n:>5}  value_{k}_{n} = compute({n}, 'src/module_{k}.py')" for n in range(1, lines + 1)
    )


def _step(k: int) -> tuple[dict[str, Any], dict[str, Any]]:
    call = {
        "id": f"c{k}",
        "type": "function",
        "function": {"name": "cat", "arguments": json.dumps({"command": f"nl -ba src/module_{k}.py"})},
    }
    size = (40, 160, 15, 90, 180)[k % 5]  # the largest, ~3,300 tokens, within its share
    call_msg = {"role": "assistant", "content": f"THOUGHT: read module {k}.", "tool_calls": [call]}
    return call_msg, {"role": "tool", "tool_call_id": f"c{k}", "content": _file(k, size)}


def _loop(steps: int, budget: int, policy: MemoryPolicy | None = None) -> tuple[Memory, list[Any]]:
    """A task and ``steps`` steps, packed before every model call as the chat engine does."""
    memory = Memory(counter=get_counter("o200k_base"), blobs=InMemoryBlobStore(), policy=policy)
    turn = [{"role": "user", "content": TASK}]
    memory.add(turn[0])
    packs = []
    for k in range(steps):
        packs.append(pack_turn(memory, Budget(window=budget, reserve=0), turn, system=SYSTEM, upto=0))
        for message in _step(k):
            turn.append(message)
            memory.add(message)
    return memory, packs


def test_a_300_step_loop_at_8k_never_raises_and_keeps_the_task() -> None:
    memory, packs = _loop(300, 8000)
    assert len(packs) == 300
    assert all(p.report.total_tokens <= 8000 for p in packs)
    assert memory.events, "the loop compacted"
    for pack in packs[1:]:
        users = [m for m in pack.messages if m["role"] == "user"]
        assert users and users[0]["content"].startswith("Fix the proxy bug in requests/adapters.py.")
        assert users[0]["content"].rstrip().endswith("gets 407.")  # head and tail of a cut task


def _billed(packs: list[Any]) -> float:
    """Input tokens billed with each pack's prefix shared with the one before at the cached 10%."""
    from tierwise.bench.agents_metrics import Request, effective

    counter = get_counter("o200k_base")
    return effective([Request(k, p.messages) for k, p in enumerate(packs)], counter)[1]


def test_working_memory_grows_only_as_far_as_the_cache_price_makes_cheapest() -> None:
    memory, packs = _loop(120, 64_000)
    _, filling = _loop(120, 64_000, MemoryPolicy(cached_rate=None))
    largest = max(p.report.total_tokens for p in packs)
    assert len(memory.events) >= 2 and largest < 40_000 < max(p.report.total_tokens for p in filling)
    assert _billed(packs) < 0.9 * _billed(filling)
    for pack in packs[1:]:  # still every step whole, and the task
        assert pack.messages[1]["content"].startswith("Fix the proxy bug")


def test_the_interval_between_steps_is_the_cheapest_one() -> None:
    rebill, growth, rate = 3_000, 500, 0.1
    best = step_interval(rebill, growth, rate)

    def per_step(g: int) -> float:  # the growth's cached cost on average, plus the step's re-bill
        return rate * g / 2 + (1 - rate) * rebill * growth / g

    assert per_step(best) < min(per_step(best // 2), per_step(best * 2))
    assert step_interval(rebill, growth, 0.5) < best < step_interval(rebill * 2, growth, rate)
    assert step_interval(rebill, 0, rate) == 0


def test_a_cached_rate_outside_0_to_1_names_the_fix() -> None:
    import pytest

    with pytest.raises(ValueError, match="between 0 and 1"):
        MemoryPolicy(cached_rate=0)


def test_the_step_being_answered_is_sent_whole() -> None:
    _, packs = _loop(120, 8000)
    for k, pack in enumerate(packs[1:]):
        last = pack.messages[-1]
        assert last["role"] == "tool" and last["content"] == _step(k)[1]["content"]


def test_a_result_too_large_for_its_share_keeps_head_and_tail_and_names_its_blob() -> None:
    memory = Memory(counter=get_counter("o200k_base"), blobs=InMemoryBlobStore())
    huge = _file(9, 3000)
    turn: list[dict[str, Any]] = [{"role": "user", "content": "Read the module."}]
    call, _ = _step(9)
    turn += [call, {"role": "tool", "tool_call_id": "c9", "content": huge}]
    for message in turn:
        memory.add(message)
    opens = [{"type": "function", "function": {"name": "open_blob", "parameters": {"type": "object"}}}]
    pack = pack_turn(memory, Budget(window=8000, reserve=0), turn, system=SYSTEM, tools=opens, upto=0)
    shown = pack.messages[-1]["content"]
    assert pack.report.total_tokens <= 8000 and memory.pointed  # the engine offers open_blob next
    lines = huge.splitlines()
    assert shown.startswith(lines[0]) and shown.endswith(lines[-1])
    assert f'open_blob(sha256="{hashlib.sha256(huge.encode()).hexdigest()}")' in shown


def test_recent_steps_stay_whole_after_a_compaction_step() -> None:
    memory, packs = _loop(60, 8000)
    assert memory.events
    text = pack_text(packs[-1])
    previous = _step(58)[1]["content"]  # the result before the one being answered
    assert previous in text


def test_a_result_is_compressed_once() -> None:
    memory = Memory(counter=get_counter("o200k_base"), blobs=InMemoryBlobStore())
    log = "\n".join(
        f"tests/test_{i}.py::test_case FAILED - AssertionError: {i} != {i + 1}" for i in range(400)
    )
    compressed = memory.compress({"role": "tool", "tool_call_id": "c1", "content": log})
    sha = compressed_sha256(compressed["content"])
    assert sha == hashlib.sha256(log.encode()).hexdigest()
    # As ChatMemory stores it: memory is given both forms, and a reload gives it the stored form.
    memory.add(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "pytest", "arguments": "{}"}}
            ],
        }
    )
    memory.add(compressed, given={"role": "tool", "tool_call_id": "c1", "content": log})
    memory.add(dict(compressed))
    assert memory.messages[1] == compressed and memory.messages[2] == compressed


def test_a_compressed_log_keeps_its_failures_and_tail() -> None:
    memory = Memory(counter=get_counter("o200k_base"), blobs=InMemoryBlobStore())
    log = "\n".join(
        [
            "============ test session starts ============",
            *[f"tests/test_{i}.py ....." for i in range(300)],
            "E   AssertionError: expected 407 to be 200",
            "FAILED tests/test_proxy.py::test_auth",
            "======= 1 failed, 300 passed in 3.2s =======",
        ]
    )
    shown = memory.compress({"role": "tool", "tool_call_id": "c1", "name": "pytest", "content": log})[
        "content"
    ]
    assert "[tool result pytest" in shown
    assert "E   AssertionError: expected 407 to be 200" in shown
    assert "1 failed, 300 passed" in shown
    assert get_counter("o200k_base").count(shown) < 400  # under the threshold: never compressed again


def test_a_step_note_brings_back_archived_lines_and_stays_for_the_cache() -> None:
    from tierwise.memory.policy import MemoryPolicy

    policy = MemoryPolicy(step_retrieval_share=0.05)
    memory = Memory(counter=get_counter("o200k_base"), blobs=InMemoryBlobStore(), policy=policy)
    grep = "\n".join(
        [
            *(f"src/other_{n}.py:{n}: unrelated_{n} = {n}" for n in range(30)),
            "requests/adapters.py:412:    def proxy_headers(self, proxy_url):",
            "requests/adapters.py:430:        username, password = get_auth_from_url(proxy_url)",
        ]
    )
    turn: list[dict[str, Any]] = [{"role": "user", "content": TASK}]
    call = {
        "id": "g",
        "type": "function",
        "function": {"name": "grep", "arguments": '{"command": "grep -rn proxy"}'},
    }
    turn += [
        {"role": "assistant", "content": "THOUGHT: find it.", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "g", "content": grep},
    ]
    for message in turn:
        memory.add(message)
    for k in range(40):  # the grep leaves working memory
        for message in _step(k):
            turn.append(message)
            memory.add(message)
        pack_turn(memory, Budget(window=8000, reserve=0), turn, system=SYSTEM, upto=0)
    edit = {
        "id": "e",
        "type": "function",
        "function": {
            "name": "sed",
            "arguments": json.dumps(
                {"command": "nl -ba requests/adapters.py  # proxy_headers get_auth_from_url"}
            ),
        },
    }
    turn += [
        {"role": "assistant", "content": "THOUGHT: look at proxy_headers again.", "tool_calls": [edit]},
        {"role": "tool", "tool_call_id": "e", "content": "<returncode>0</returncode>"},
    ]
    for message in turn[-2:]:
        memory.add(message)
    first = pack_turn(memory, Budget(window=8000, reserve=0), turn, system=SYSTEM, upto=0)
    note = first.messages[-1]["content"]
    assert "username, password = get_auth_from_url(proxy_url)" in note  # verbatim, from the archive
    call_msg, result = _step(99)
    turn += [call_msg, result]
    memory.add(call_msg)
    memory.add(result)
    second = pack_turn(memory, Budget(window=8000, reserve=0), turn, system=SYSTEM, upto=0)
    assert first.messages[-1] in second.messages  # the note stays with its step, paid for once


def test_a_re_read_file_supersedes_its_older_view() -> None:
    memory = Memory(counter=get_counter("o200k_base"), blobs=InMemoryBlobStore())
    view = _file(7, 60)
    turn: list[dict[str, Any]] = [{"role": "user", "content": TASK}]
    memory.add(turn[0])

    def read(call_id: str, content: str) -> None:
        call = {
            "id": call_id,
            "type": "function",
            "function": {"name": "cat", "arguments": '{"command": "cat m7"}'},
        }
        for message in (
            {"role": "assistant", "content": "THOUGHT: read module 7.", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call_id, "content": content},
        ):
            turn.append(message)
            memory.add(message)

    read("first", view)
    for k in range(3):
        for message in _step(k * 5 + 2):  # small steps between the two views
            turn.append(message)
            memory.add(message)
    read("again", view.replace("compute(3,", "compute(33,"))  # edited one line, viewed again
    packs = []
    for k in range(30):  # a larger budget: both views are still in working memory at the step
        packs.append(pack_turn(memory, Budget(window=32000, reserve=0), turn, system=SYSTEM, upto=0))
        for message in _step(k * 5 + 1):
            turn.append(message)
            memory.add(message)
    assert memory.events, "the loop compacted"
    sent = memory.window_groups().messages  # what a pack sends of each message from now on
    first = next(i for i, m in enumerate(sent) if m.get("tool_call_id") == "first")
    again = next(i for i, m in enumerate(sent) if m.get("tool_call_id") == "again")
    assert str(sent[first]["content"]).startswith("[tool result cat · blob sha256:")
    assert "Superseded" in str(sent[first]["content"]) and 'cat {"command": "cat m7"}' in str(
        sent[first]["content"]
    )
    assert "Superseded" not in str(sent[again]["content"])  # the newer view stays


def test_the_narrative_of_a_coding_session_names_the_files_it_changed() -> None:
    memory = Memory(counter=get_counter("o200k_base"), blobs=InMemoryBlobStore())
    turn: list[dict[str, Any]] = [{"role": "user", "content": TASK}]
    memory.add(turn[0])

    def step(call_id: str, command: str, output: str, thought: str = "THOUGHT: next.") -> None:
        call = {
            "id": call_id,
            "type": "function",
            "function": {"name": "bash", "arguments": json.dumps({"command": command})},
        }
        for message in (
            {"role": "assistant", "content": thought, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call_id, "content": output},
        ):
            turn.append(message)
            memory.add(message)

    step("v", "nl -ba requests/adapters.py", _file(1, 150))
    step(
        "e",
        "sed -i 's/proxy_headers = {}/proxy_headers = self.proxy_headers(proxy)/' requests/adapters.py",
        "<returncode>0</returncode>\n<output>\n</output>",
    )
    step(
        "t",
        "pytest tests/test_adapters.py",
        "<returncode>1</returncode>\n<output>\n"
        "E   AssertionError: 407 != 200\n===== 1 failed, 12 passed in 0.4s =====\n</output>",
        "THOUGHT: The proxy test still fails; I will check get_auth_from_url next.",
    )
    for k in range(40):
        pack = pack_turn(memory, Budget(window=8000, reserve=0), turn, system=SYSTEM, upto=0)
        for message in _step(k):
            turn.append(message)
            memory.add(message)
    story = next(
        m["content"] for m in pack.messages if m["role"] == "system" and "Story so far" in str(m["content"])
    )
    assert "Changed: requests/adapters.py (last: `sed -i 's/proxy_headers = {}/" in story
    assert "Failing: `pytest tests/test_adapters.py` → 1 failed, 12 passed" in story
    assert "Task: Fix the proxy bug in requests/adapters.py." in story
    headers = story.split("## Conversation segments")[1]
    assert "edited adapters.py" in headers  # a segment's header names the file it changed
