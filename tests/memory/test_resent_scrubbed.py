"""What memory sends again after its turn is scrubbed (README "Privacy", decision 78, issue 32).

The long chats of ``tests/test_privacy_policy.py`` cover retrieval, ``recall_segments``, the summary
model and titles through ``/api`` and ``/v1``; these cover the agent-loop paths and ``open_blob``,
and the setting that turns it off.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from tests.memory.test_agent_loops import SYSTEM, TASK, _step
from tierwise.budget import Budget
from tierwise.chat.housekeeping import open_blob
from tierwise.errors import UserError
from tierwise.memory.assemble import pack_turn
from tierwise.memory.blobs import InMemoryBlobStore
from tierwise.memory.engine import Memory
from tierwise.memory.policy import MemoryPolicy, scrub_resent_from_env
from tierwise.memory.resend import resent_turn
from tierwise.memory.turns import Turn
from tierwise.tokens import get_counter
from tierwise.tools.definition import ToolContext

KEY = "sk-proj-7Hq2LmX9vR4tK8wN3pZ6yB1cF5gJ0dS2aE7uI4oQ9xW3"
PASSWORD = "Tr0ub4dor&3xQ"


def _two_turn_loop(policy: MemoryPolicy | None = None) -> list[Any]:
    """An agent loop whose first message holds a key, then a second turn of many steps: its packs."""
    memory = Memory(counter=get_counter("o200k_base"), blobs=InMemoryBlobStore(), policy=policy)
    first = {"role": "user", "content": f"Deploy with the key {KEY} when done. {TASK}"}
    turn: list[dict[str, Any]] = [first]
    memory.add(first)
    for k in range(12):
        pack_turn(memory, Budget(window=8000, reserve=0), turn, system=SYSTEM, upto=0)
        for message in _step(k):
            turn.append(message)
            memory.add(message)
    second = {"role": "user", "content": "Now run the tests."}
    memory.add(second)
    at, turn = len(memory.messages) - 1, [second]
    packs = []
    for k in range(12, 60):
        packs.append(pack_turn(memory, Budget(window=8000, reserve=0), turn, system=SYSTEM, upto=at))
        for message in _step(k):
            turn.append(message)
            memory.add(message)
    assert memory.agent_loop and memory.live_from > 0
    return packs


def test_an_agent_loops_pinned_first_message_is_scrubbed_after_its_turn() -> None:
    """Before: the first message, pinned in every pack of the later turns, carried the key."""
    last = _two_turn_loop()[-1]
    users = [m for m in last.messages if m["role"] == "user"]
    assert users[0]["content"].startswith("Deploy with the key [api-key] when done.")
    assert users[-1]["content"] == "Now run the tests."  # the turn's own task: as given
    off = _two_turn_loop(MemoryPolicy(scrub_resent=False))[-1]
    assert KEY in json.dumps(off.messages)  # the setting off: as it was said


def test_a_step_note_of_earlier_output_is_scrubbed() -> None:
    """Before: a step's note brought back an archived line with the password in it, verbatim."""
    policy = MemoryPolicy(step_retrieval_share=0.05)
    memory = Memory(counter=get_counter("o200k_base"), blobs=InMemoryBlobStore(), policy=policy)
    grep = "\n".join(
        [
            *(f"src/other_{n}.py:{n}: unrelated_{n} = {n}" for n in range(30)),
            "requests/adapters.py:412:    def proxy_headers(self, proxy_url):",
            f"requests/adapters.py:430:    user = get_auth_from_url(proxy_url)  # password: {PASSWORD}",
        ]
    )
    call = {"id": "g", "type": "function", "function": {"name": "grep", "arguments": '{"command": "grep"}'}}
    turn: list[dict[str, Any]] = [
        {"role": "user", "content": TASK},
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
    arguments = json.dumps({"command": "nl -ba requests/adapters.py  # proxy_headers get_auth_from_url"})
    edit = {"id": "e", "type": "function", "function": {"name": "sed", "arguments": arguments}}
    turn += [
        {"role": "assistant", "content": "THOUGHT: look at proxy_headers again.", "tool_calls": [edit]},
        {"role": "tool", "tool_call_id": "e", "content": "<returncode>0</returncode>"},
    ]
    for message in turn[-2:]:
        memory.add(message)
    pack = pack_turn(memory, Budget(window=8000, reserve=0), turn, system=SYSTEM, upto=0)
    note = pack.messages[-1]["content"]
    assert "user = get_auth_from_url(proxy_url)  # password: [password]" in note
    assert PASSWORD not in json.dumps(pack.messages)


def _opened(memory: Memory, sha256: str) -> str:
    arguments = open_blob.validate({"sha256": sha256})
    return str(asyncio.run(open_blob.invoke(arguments, ToolContext(memory=memory))))


def test_open_blob_reads_a_stored_result_scrubbed() -> None:
    blobs = InMemoryBlobStore()
    ref = blobs.put(f"DB_PASSWORD={PASSWORD}\nrows: 12".encode(), mime="text/plain", summary="", entities=())
    assert _opened(Memory(blobs=blobs), ref.sha256) == "DB_PASSWORD=[password]\nrows: 12"
    assert PASSWORD in _opened(Memory(blobs=blobs, policy=MemoryPolicy(scrub_resent=False)), ref.sha256)


def test_a_turn_is_scrubbed_once_and_shown_the_same_every_time() -> None:
    memory = Memory()
    turn = Turn("m3", 3, "user", f"the key is {KEY}")
    shown = resent_turn(memory, turn)
    assert shown.text == "the key is [api-key]" and shown.index == 3 and shown.id == "m3"
    assert resent_turn(memory, turn) is shown  # held: not scrubbed again
    clean = Turn("m4", 4, "user", "nothing secret here")
    assert resent_turn(memory, clean) is clean
    assert memory.retriever.shown is not None  # retrieval shows and costs turns this way
    assert Memory(policy=MemoryPolicy(scrub_resent=False)).retriever.shown is None


@pytest.mark.parametrize(
    ("value", "expected"), [("", True), ("1", True), ("on", True), ("0", False), ("off", False)]
)
def test_the_setting_is_read_from_the_environment(
    value: str, expected: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIERWISE_SCRUB_RESENT", value)
    assert scrub_resent_from_env() is expected


def test_a_bad_setting_names_the_values_that_work(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIERWISE_SCRUB_RESENT", "maybe")
    with pytest.raises(UserError, match="TIERWISE_SCRUB_RESENT='maybe' is not on or off"):
        scrub_resent_from_env()
