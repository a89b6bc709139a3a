"""The chat engine's model calls carry cache hints on the wire when the provider is set to send them."""

from __future__ import annotations

from typing import Any

import pytest

from tests.fake_openai import FakeOpenAI
from tests.providers.test_cache_hints import plain
from tierwise import Budget
from tierwise.chat.engine import ChatEngine
from tierwise.packing.packer import TAIL_LEAD
from tierwise.packing.prefix import cache_breakpoints, stable_prefix
from tierwise.providers import OpenAICompatProvider
from tierwise.store import Store

pytestmark = pytest.mark.anyio

CATERERS = ("Quillon", "Brambleworth")


def note(i: int) -> str:
    caterer = f" The caterer {CATERERS[i]} serves it." if i < len(CATERERS) else ""
    return (
        f"Note {i}: venue option {i} in district {i % 17} costs {i * 7} euros, seats {20 + i} people, "
        f"has parking for {i % 9} cars and a terrace.{caterer}"
    )


QUESTIONS = [note(i) for i in range(24)] + [f"Which caterer was {name}?" for name in CATERERS]


async def wire(fake_openai: FakeOpenAI, *, cache_hints: bool | None) -> list[list[dict[str, Any]]]:
    """The messages each model call sent, for one chat of ``QUESTIONS`` (the provider as given)."""
    store = Store.open("sqlite://")
    try:
        user = store.create_user("maya")
        chat = store.create_chat(user.id)
        provider = OpenAICompatProvider(base_url=fake_openai.url, model="m", cache_hints=cache_hints)
        engine = ChatEngine(store, provider, budget=Budget(window=1_000, reserve=200), memory_tools=False)
        seen = len(fake_openai.requests)
        for question in QUESTIONS:
            fake_openai.script("Noted.")
            result = await engine.run(user.id, chat.id, question)
            assert result.done.reason == "answer", result.events
        await provider.aclose()
        return [body["messages"] for body in fake_openai.requests[seen:]]
    finally:
        store.close()


async def test_the_engine_marks_the_system_prompt_and_the_end_of_the_stable_prefix(
    fake_openai: FakeOpenAI,
) -> None:
    off = await wire(fake_openai, cache_hints=None)
    on = await wire(fake_openai, cache_hints=True)
    assert len(on) == len(off) == len(QUESTIONS)
    for sent in off:  # off by default: every content as the pack has it
        assert all(isinstance(m["content"], str) for m in sent)
    tails = heads = 0
    for hinted, unhinted in zip(on, off, strict=True):
        unmarked, marked = plain(hinted)
        assert unmarked == unhinted  # the same text, byte for byte
        stable = stable_prefix(unhinted)
        assert marked == sorted({0, stable - 1})  # the system prompt, the last stable message
        assert tuple(marked) == cache_breakpoints(unhinted, system=1)
        tails += unhinted[stable]["content"].startswith(TAIL_LEAD)
        heads += unhinted[1]["role"] == "system"
    assert tails and heads  # packs with memory's head and with a per-turn tail were among them
