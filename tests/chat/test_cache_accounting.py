"""Prompt-cache accounting: the pack report's prefix, cached tokens in usage, audit and dollars."""

from __future__ import annotations

from typing import Any

import pytest

from tierwise import Budget, InputError, conversation_layers, pack
from tierwise.chat.costguard import CostGuard, Limits, MemoryLedger, StoreLedger
from tierwise.chat.engine import ChatEngine
from tierwise.memory.persist import ChatMemory
from tierwise.packing.prefix import cached_tokens, shared_prefix
from tierwise.providers import ModelResponse, Usage, cache_savings, cost
from tierwise.providers.base import ModelRequest
from tierwise.providers.pricing import Price
from tierwise.providers.testing import FunctionModel, PromptCache, ScriptedModel
from tierwise.store import Store
from tierwise.tokens import get_counter

pytestmark = pytest.mark.anyio

BUDGET = Budget(window=6000, reserve=500)
PRICES = {"cached-model": Price(input=2.0, output=10.0, cached_input=0.5)}  # USD per 1M tokens
LONG_SYSTEM = "You plan offsites. " + "Keep every answer short and kind. " * 200  # > 1,024 tokens


def setup(store: Store, model: Any, **options: Any) -> tuple[ChatEngine, str, str]:
    user = store.create_user("maya")
    chat = store.create_chat(user.id)
    options.setdefault("budget", BUDGET)
    return ChatEngine(store, model, **options), user.id, chat.id


# -- the pack report ---------------------------------------------------------------------------------


def test_a_pack_outside_a_chat_has_no_previous_pack() -> None:
    report = pack(conversation_layers([{"role": "user", "content": "hi"}]), Budget(window=1000)).report
    assert report.prefix_tokens is None and report.prefix_share is None
    d = report.to_dict()
    assert d["prefix_tokens"] is None and d["prefix_share"] is None
    report.prefix_tokens = report.total_tokens - 1
    assert report.to_dict()["prefix_share"] == round((report.total_tokens - 1) / report.total_tokens, 4)


def test_a_chats_pack_says_what_it_repeats_of_the_previous_one(store: Store) -> None:
    user = store.create_user("maya")
    chat = ChatMemory(store, user.id, store.create_chat(user.id).id)
    chat.add({"role": "user", "content": "Where is the offsite?"})
    first = chat.pack(BUDGET, chat.memory.messages[-1:], system="Be brief.", upto=0)
    assert first.report.prefix_tokens is None  # the chat's first pack: nothing to compare with
    chat.add({"role": "assistant", "content": "In Lisbon, in May."})
    chat.add({"role": "user", "content": "And the budget?"})
    second = chat.pack(BUDGET, chat.memory.messages[-1:], system="Be brief.", upto=2)
    expected = shared_prefix(
        (first.messages, first.tools), second.messages, second.tools, chat.memory.counter
    )
    assert second.report.prefix_tokens == expected > 0
    assert second.report.to_dict()["prefix_tokens"] == expected
    audits = store.list_audit(user.id, chat_id=chat.chat_id, event="pack")
    assert sorted(a.details["prefix_tokens"] or 0 for a in audits) == [0, expected]
    snapshot = store.latest_snapshot(user.id, chat.chat_id)
    assert snapshot is not None and snapshot.tier_breakdown["total"]["prefix_tokens"] == expected


async def test_two_turns_the_second_pack_repeats_the_first_as_a_prefix(store: Store) -> None:
    model = ScriptedModel("Lisbon, in May.", "About 12,000 euros.")
    engine, user, chat = setup(store, model)
    first = await engine.run(user, chat, "Where is the offsite?")
    second = await engine.run(user, chat, "And the budget?")
    a, b = model.requests
    counter = engine.chat_memory(user, chat).memory.counter
    expected = shared_prefix((a.messages, a.tools), b.messages, b.tools, counter)
    assert expected > 0 and b.messages[: len(a.messages) - 1] == a.messages[:-1]
    packs = sorted(store.list_audit(user, chat_id=chat, event="pack"), key=lambda e: e.id)
    assert [p.details["prefix_tokens"] for p in packs].count(expected) == 1
    assert first.usage is not None and first.usage.prefix_tokens is None
    assert second.usage is not None and second.usage.prefix_tokens == expected
    assert second.usage.report["summary"]["prefixTokens"] == expected
    assert second.usage.cached_tokens == 0  # the fake reports no cache unless asked to


# -- usage: the provider's cached tokens, the audit, the dollars -----------------------------------------


async def test_usage_carries_the_providers_cached_tokens_into_the_audit_and_dollars(store: Store) -> None:
    reported = Usage(2_000, 40, 2_040, cached_tokens=1_536)
    model = ScriptedModel(ModelResponse(text="Booked.", usage=reported, model="cached-model"))
    guard = CostGuard(Limits(month_dollars=100.0), StoreLedger(store))
    engine, user, chat = setup(store, model, prices=PRICES, guard=guard)
    result = await engine.run(user, chat, "Is the venue booked?")
    usage = result.usage
    assert usage is not None and usage.cached_tokens == 1_536 and usage.prompt_tokens == 2_000
    full = (2_000 * 2.0 + 40 * 10.0) / 1e6
    assert usage.dollars == pytest.approx(cost(reported, "cached-model", prices=PRICES).dollars)
    assert usage.dollars == pytest.approx(full - 1_536 * 1.5 / 1e6)
    assert usage.saved_dollars == pytest.approx(1_536 * 1.5 / 1e6)
    assert usage.report["model_usage"] == {
        "prompt_tokens": 2_000,
        "completion_tokens": 40,
        "cached_tokens": 1_536,
    }
    (ledger,) = store.list_audit(user, chat_id=chat, event="usage")
    assert ledger.details == {"tokens": 2_040, "dollars": usage.dollars, "cached_tokens": 1_536}
    (turn,) = store.list_audit(user, chat_id=chat, event="turn")
    assert turn.details["usage"]["cached_tokens"] == 1_536
    assert turn.details["usage"]["saved_dollars"] == pytest.approx(usage.saved_dollars)
    (group,) = store.spend_groups(user, chat_id=chat)
    assert group.cached_tokens == 1_536 and group.saved_dollars == pytest.approx(usage.saved_dollars)


async def test_a_fake_with_openais_cache_rule_reports_cached_tokens(store: Store) -> None:
    model = ScriptedModel("One.", "Two.", model="cached-model", cache="openai")
    engine, user, chat = setup(store, model, prices=PRICES, system=LONG_SYSTEM, memory_tools=False)
    first = await engine.run(user, chat, "Plan the offsite.")
    second = await engine.run(user, chat, "And the dinner?")
    assert first.usage is not None and first.usage.cached_tokens == 0  # a cold cache
    a, b = model.requests
    prefix = shared_prefix((a.messages, a.tools), b.messages, b.tools, model.counter)
    assert second.usage is not None and second.usage.cached_tokens == cached_tokens(prefix, "openai") > 1024
    assert (second.usage.cached_tokens - 1024) % 128 == 0
    assert second.usage.saved_dollars == pytest.approx(second.usage.cached_tokens * 1.5 / 1e6, abs=1e-6)


def test_the_prompt_cache_is_deterministic_and_checks_its_rule() -> None:
    counter = get_counter()
    chat = [{"role": "system", "content": LONG_SYSTEM}, {"role": "user", "content": "Hi"}]
    later = ModelRequest(
        [*chat, {"role": "assistant", "content": "Hello!"}, {"role": "user", "content": "Bye"}]
    )
    other = ModelRequest([{"role": "user", "content": "Something else entirely"}])
    figures = []
    for _ in range(2):
        cache = PromptCache("prefix")
        figures.append([cache.serve(r, counter) for r in (ModelRequest(chat), other, later)])
    assert figures[0] == figures[1]
    assert figures[0][:2] == [0, 0] and figures[0][2] == counter.count_messages(chat, prime_reply=False)
    with pytest.raises(InputError, match="cache rule"):
        PromptCache("anthropic")  # type: ignore[arg-type]


async def test_function_model_reports_cached_tokens_with_a_cache() -> None:
    model = FunctionModel(lambda request: "ok", cache="prefix")
    request = ModelRequest([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}])
    prompt = get_counter().count_messages(request.messages)
    assert (await model.complete(request)).usage == Usage(prompt, 1, prompt + 1)  # a cold cache
    again = (await model.complete(request)).usage
    assert again is not None and again.cached_tokens == get_counter().count_messages(
        request.messages, prime_reply=False
    )


def test_cache_savings() -> None:
    usage = Usage(1_000_000, 0, 1_000_000, cached_tokens=400_000)
    assert cache_savings(usage, "cached-model", prices=PRICES) == pytest.approx(0.6)
    assert cache_savings(usage, "no-such-model", prices={}) == 0.0
    assert cache_savings(usage, "gpt-3.5-turbo", prices={}) == 0.0  # no cached rate: nothing saved
    assert cache_savings(Usage(10, 0, 10, cached_tokens=50), "cached-model", prices=PRICES) == pytest.approx(
        10 * 1.5 / 1e6
    )
    assert cache_savings(Usage(10, 0, 10), "cached-model", prices=PRICES) == 0.0


def test_ledgers_take_cached_tokens() -> None:
    guard = CostGuard(Limits(session_tokens=1_000), MemoryLedger())
    guard.record("u", "c", tokens=600, dollars=0.01, cached_tokens=400)
    assert guard.spend("u", "c").session_tokens == 600  # limits count every token, cached or not
