"""Every packer rule, checked on random conversations and layer sets (hypothesis).

CI runs each property with 1,000 examples (the "ci" profile in conftest.py).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from hypothesis import given, note
from hypothesis import strategies as st

from tierwise import (
    BANDS,
    Budget,
    BudgetError,
    ContextLayer,
    Pack,
    Packer,
    TokenCounter,
    conversation_layers,
)
from tierwise.packing import canonical_json
from tierwise.packing.packer import TAIL_LEAD

COUNTER = TokenCounter()
KINDS = ["profile", "location", "related", "narrative", "headers", "summaries", "retrieved", "tool_results"]

sentence = st.text(alphabet=st.sampled_from(list("abcdefghij klmnop.,!?\n日本🙂")), min_size=0, max_size=60)
paragraph = st.lists(sentence, min_size=0, max_size=30).map(" ".join)


@st.composite
def histories(draw: st.DrawFn) -> list[dict[str, Any]]:
    msgs: list[dict[str, Any]] = []
    if draw(st.booleans()):
        msgs.append({"role": "system", "content": draw(paragraph)})
    n_call = 0
    for _ in range(draw(st.integers(0, 25))):
        kind = draw(st.sampled_from(["user", "assistant", "calls", "calls", "orphan_result", "orphan_call"]))
        if kind in ("user", "assistant"):
            msgs.append({"role": kind, "content": draw(paragraph)})
        elif kind == "calls":
            ids = []
            for _ in range(draw(st.integers(1, 3))):
                n_call += 1
                ids.append(f"call_{n_call}")
            msgs.append(
                {
                    "role": "assistant",
                    "content": draw(st.none() | sentence),
                    "tool_calls": [
                        {
                            "id": i,
                            "type": "function",
                            "function": {"name": "list_tasks", "arguments": draw(sentence)},
                        }
                        for i in ids
                    ],
                }
            )
            for i in ids:
                msgs.append({"role": "tool", "tool_call_id": i, "content": draw(paragraph)})
        elif kind == "orphan_result":
            msgs.append({"role": "tool", "tool_call_id": "ghost", "content": draw(sentence)})
        else:
            n_call += 1
            msgs.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": f"call_{n_call}",
                            "type": "function",
                            "function": {"name": "f", "arguments": "{}"},
                        }
                    ],
                }
            )
    if draw(st.booleans()) or not msgs:
        msgs.append({"role": "user", "content": draw(paragraph)})
    return msgs


@dataclass
class Case:
    layers: list[ContextLayer]
    budget: Budget
    seed: str | None
    band_index: int | None


@st.composite
def cases(draw: st.DrawFn) -> Case:
    msgs = draw(histories())
    tools = []
    if draw(st.booleans()):
        tools = [{"type": "function", "function": {"name": "list_tasks", "description": draw(sentence)}}]
    layers = conversation_layers(msgs, tools)
    for i in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(KINDS))
        layers.append(
            ContextLayer(
                f"{kind}-{i}",
                kind,
                draw(paragraph),
                priority=draw(st.none() | st.integers(1, 12)),
                guaranteed=draw(st.none() | st.booleans()),
                truncatable=draw(st.none() | st.booleans()),
                summary=draw(st.none() | sentence),
            )
        )
    allocations: dict[str, int | float] = {}
    if draw(st.booleans()):
        for kind in draw(st.sets(st.sampled_from([*KINDS, "history"]), max_size=3)):
            allocations[kind] = draw(st.integers(0, 600) | st.sampled_from([0.1, 0.2, 0.3]))
    window = draw(st.integers(20, 6000))
    reserve = draw(st.integers(0, window // 4))
    budget = Budget(
        window=window,
        reserve=reserve,
        allocations=allocations,
        min_fragment_tokens=draw(st.sampled_from([100, 20, 1])),
        spill=draw(st.booleans()),
    )
    seed = draw(st.none() | st.text(max_size=5))
    band_index = draw(st.none() | st.integers(0, len(BANDS) - 1))
    return Case(layers, budget, seed, band_index)


def run(case: Case, counter: TokenCounter = COUNTER) -> Pack:
    band = BANDS[case.band_index] if case.band_index is not None else None
    return Packer(counter).pack(case.layers, case.budget, seed=case.seed, band=band)


def _newest_user(case: Case) -> dict[str, Any] | None:
    for layer in case.layers:
        if layer.kind == "input" and not isinstance(layer.content, str):
            return dict(layer.content[0])
    return None


@given(cases())
def test_every_packer_rule_holds(case: Case) -> None:
    try:
        result = run(case)
    except BudgetError as err:
        # The guaranteed layers really do not fit, and the reported shortfall is exact enough:
        assert err.over_by > 0
        assert err.largest_layer in {layer.id for layer in case.layers if layer.guaranteed}
        roomier = Budget(
            window=case.budget.window + err.over_by,
            reserve=case.budget.reserve,
            allocations=case.budget.allocations,
            min_fragment_tokens=case.budget.min_fragment_tokens,
            spill=case.budget.spill,
        )
        run(Case(case.layers, roomier, case.seed, case.band_index))
        return
    report = result.report
    note(json.dumps(report.to_dict(), indent=1))

    # 1. never over budget, and the reported total is the exact recount
    recount = COUNTER.count_messages(result.messages) + COUNTER.count_tools(result.tools)
    assert recount == report.total_tokens <= case.budget.available

    # 2. guaranteed layers are present
    by_id = {r.id: r for r in report.layers}
    for layer in case.layers:
        if layer.guaranteed:
            assert by_id[layer.id].status != "dropped", layer.id

    # 3. the newest user message is kept, verbatim
    newest = _newest_user(case)
    if newest is not None:
        assert newest in result.messages

    # 4. tool calls and results stay paired and adjacent
    msgs = result.messages
    i = 0
    while i < len(msgs):
        m = msgs[i]
        assert m["role"] != "tool", "a tool result without the call before it"
        if m.get("tool_calls"):
            wanted = [c["id"] for c in m["tool_calls"]]
            got = [x.get("tool_call_id") for x in msgs[i + 1 : i + 1 + len(wanted)]]
            assert sorted(got) == sorted(wanted), "a call without all of its results"
            i += 1 + len(wanted)
        else:
            i += 1

    # 5. priorities mean what they say
    for dropped in report.layers:
        if dropped.status != "dropped" or (dropped.reason or "").startswith("pruning band"):
            continue
        for other in report.layers:
            if other.priority > dropped.priority and not other.guaranteed:
                assert other.status != "kept", f"{other.id} kept whole after {dropped.id} was dropped"

    # 6. the report accounts for every layer, with reasons
    assert sorted(by_id) == sorted(layer.id for layer in case.layers)
    for r in report.layers:
        assert r.status == "kept" or r.reason, r
        assert r.tokens >= 0
        if r.status == "dropped":
            assert r.tokens == 0
    assert report.tokens_saved == max(0, report.tokens_all_layers - report.total_tokens)

    # 7. nothing invented: besides the composed text messages (system, head, tail), messages come
    #    from the input in order; the tail message stands just before the newest user message
    sources = [
        dict(m)
        for layer in case.layers
        if not isinstance(layer.content, str) and layer.kind != "tools"
        for m in layer.content
    ]
    composed = [
        i
        for i, m in enumerate(msgs)
        if m not in sources and (m["role"] == "system" or str(m.get("content")).startswith(TAIL_LEAD))
    ]
    tails = [i for i in composed if str(msgs[i].get("content")).startswith(TAIL_LEAD)]
    assert len(tails) <= 1
    if tails and newest is not None:
        assert msgs[tails[0] + 1] == newest
    rest = [m for i, m in enumerate(msgs) if i not in composed]
    pos = 0
    for m in rest:
        while pos < len(sources) and sources[pos] != m:
            pos += 1
        assert pos < len(sources), f"message not from the input: {m}"
        pos += 1


@given(cases())
def test_same_inputs_and_seed_give_the_same_bytes(case: Case) -> None:
    try:
        first = run(case)
    except BudgetError:
        return
    second = run(case, TokenCounter())  # a cold cache must not change anything
    assert json.dumps(first.to_dict(), sort_keys=True) == json.dumps(second.to_dict(), sort_keys=True)
    assert first.checksum == hashlib.sha256(canonical_json(first.messages, first.tools)).hexdigest()
