from __future__ import annotations

import hashlib
import json

import pytest

from tierwise import (
    BANDS,
    Budget,
    BudgetError,
    ContextLayer,
    InputError,
    Packer,
    TokenCounter,
    band_for_health,
    conversation_layers,
    pack,
)
from tierwise.packing import canonical_json, truncate_text
from tierwise.packing.layers import TRUNCATION_MARKER
from tierwise.packing.packer import TAIL_LEAD

COUNTER = TokenCounter()
LOREM = (
    "The launch plan has three tracks. Engineering ships the webhook system first. "
    "Marketing prepares the demo videos in parallel! Does support need training before launch? "
    "Yes, two sessions are planned for the last week of October. "
)


def words(n: int, seed: int = 0) -> str:
    vocab = ["task", "project", "calendar", "note", "launch", "review", "draft", "ship", "plan", "call"]
    return " ".join(vocab[(i * 7 + seed) % len(vocab)] for i in range(n)) + "."


def user(text: str) -> dict[str, object]:
    return {"role": "user", "content": text}


def assistant(text: str) -> dict[str, object]:
    return {"role": "assistant", "content": text}


def call_group(call_id: str, result: str) -> list[dict[str, object]]:
    return [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": call_id, "type": "function", "function": {"name": "list_tasks", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": call_id, "content": result},
    ]


def conversation(turns: int) -> list[dict[str, object]]:
    msgs: list[dict[str, object]] = [{"role": "system", "content": "You are a calm assistant."}]
    for i in range(turns):
        msgs.append(user(f"Question {i}: " + words(20, i)))
        if i % 3 == 0:
            msgs.extend(call_group(f"call_{i}", words(60, i)))
        msgs.append(assistant(f"Answer {i}: " + words(40, i)))
    msgs.append(user("What should I do next?"))
    return msgs


def total(p_messages: list[dict[str, object]], tools: list[dict[str, object]]) -> int:
    return COUNTER.count_messages(p_messages) + COUNTER.count_tools(tools)


# -- truncation --------------------------------------------------------------------------------


def test_truncation_cuts_at_a_sentence_and_marks_it() -> None:
    text = LOREM * 20
    cut = truncate_text(text, 120, COUNTER, min_tokens=20)
    assert cut is not None
    assert cut.endswith(TRUNCATION_MARKER)
    body = cut.removesuffix(TRUNCATION_MARKER)
    assert body[-1] in ".!?"
    assert text.startswith(body)
    assert COUNTER.count(cut) <= 120


def test_truncation_falls_back_to_words() -> None:
    text = " ".join(["word"] * 2000)  # no sentence ends at all
    cut = truncate_text(text, 150, COUNTER, min_tokens=100)
    assert cut is not None
    body = cut.removesuffix(TRUNCATION_MARKER)
    assert body.endswith("word")
    assert text.startswith(body)
    assert COUNTER.count(body) >= 100 and COUNTER.count(cut) <= 150


def test_truncation_of_unspaced_text_cuts_between_tokens() -> None:
    text = "这是一个没有空格的很长的句子" * 100
    cut = truncate_text(text, 120, COUNTER, min_tokens=50)
    assert cut is not None and COUNTER.count(cut) <= 120
    assert text.startswith(cut.removesuffix(TRUNCATION_MARKER))


def test_truncation_refuses_fragments_below_the_minimum() -> None:
    assert truncate_text(LOREM * 20, 80, COUNTER, min_tokens=100) is None
    assert truncate_text("short", 80, COUNTER, min_tokens=100) == "short"


# -- budget and bands --------------------------------------------------------------------------


def test_budget_is_window_minus_reserve() -> None:
    assert Budget(window=10_000, reserve=2_000).available == 8_000


@pytest.mark.parametrize(
    ("kwargs", "fix"),
    [
        ({"window": 0}, "positive"),
        ({"window": 100, "reserve": 100}, "smaller than the budget"),
        ({"window": 100, "reserve": -1}, "0 or more"),
        ({"window": 100, "allocations": {"history": 1.5}}, "in \\(0, 1\\]"),
        ({"window": 100, "allocations": {"a": 0.6, "b": 0.6}}, "must not exceed 1.0"),
    ],
)
def test_bad_budgets_name_the_fix(kwargs: dict[str, object], fix: str) -> None:
    with pytest.raises(InputError, match=fix):
        Budget(**kwargs)  # type: ignore[arg-type]


def test_seed_splits_are_expressible() -> None:
    progressive = Budget.progressive()
    assert progressive.available == 8_000
    assert progressive.ceiling("history") == 3_500 and progressive.ceiling("location") == 1_000
    hierarchical = Budget.hierarchical(window=20_000)
    assert [
        hierarchical.ceiling(k) for k in ("narrative", "history", "headers", "summaries", "retrieved")
    ] == [
        3_000,
        5_000,
        2_000,
        7_000,
        3_000,
    ]


def test_bands_get_stricter_as_budget_is_spent() -> None:
    from tierwise import budget_health

    names = [
        band_for_health(budget_health(session_used=u, session_limit=100)).name for u in (0, 30, 50, 70, 100)
    ]  # type: ignore[arg-type]
    assert names == ["healthy", "caution", "warning", "critical", "critical"]
    history = [b.history_messages for b in BANDS]
    assert history == sorted(history, reverse=True)  # type: ignore[type-var]
    assert budget_health() is None
    assert budget_health(session_used=10, session_limit=100, month_used=90, month_limit=100) == pytest.approx(
        0.1
    )


# -- packer rules ------------------------------------------------------------------------------


def test_small_conversation_fits_whole() -> None:
    msgs = conversation(3)
    result = pack(conversation_layers(msgs), Budget(window=100_000))
    assert result.messages == msgs
    assert result.report.dropped == [] and result.report.truncated == []
    assert result.report.tokens_saved == 0
    assert result.report.total_tokens == total(result.messages, result.tools)


def test_history_is_cut_oldest_first_and_pack_fits() -> None:
    msgs = conversation(40)
    result = pack(conversation_layers(msgs), Budget(window=1500, reserve=300))
    assert result.report.total_tokens <= 1200
    assert result.report.total_tokens == total(result.messages, result.tools)
    assert result.messages[-1] == msgs[-1]  # newest user message kept
    assert result.messages[0] == msgs[0]  # system prompt kept
    kept = result.messages[1:]
    start = msgs.index(kept[0])
    assert msgs[start:] == kept  # a contiguous newest suffix
    assert kept[0]["role"] == "user"  # the cut history starts on a user turn
    history = result.report.layer("history")
    assert history.status == "truncated" and history.reason
    assert result.report.tokens_saved > 0


def test_tool_call_and_result_are_never_split() -> None:
    msgs = [user("start"), *call_group("a", words(300)), assistant("done"), user("next?")]
    for window in range(40, 600, 7):
        try:
            result = pack(conversation_layers(msgs), Budget(window=window))
        except BudgetError:
            continue
        roles = [m["role"] for m in result.messages]
        if "tool" in roles:
            i = roles.index("tool")
            assert roles[i - 1] == "assistant" and result.messages[i - 1].get("tool_calls")
        for m in result.messages:
            if m.get("tool_calls"):
                assert "tool" in roles


def test_orphans_are_left_out_and_reported() -> None:
    msgs = [
        user("hi"),
        {"role": "tool", "tool_call_id": "ghost", "content": "stray"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "x", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
        },
        assistant("no result came"),
        user("now?"),
    ]
    result = pack(conversation_layers(msgs), Budget(window=10_000))
    assert all(m.get("role") != "tool" and not m.get("tool_calls") for m in result.messages)
    assert "unpaired" in result.report.layer("history").notes[0]


def test_guaranteed_overflow_raises_budget_error_naming_largest() -> None:
    layers = [
        ContextLayer("system", "system", words(400)),
        ContextLayer("input", "input", [user(words(50))]),
    ]
    with pytest.raises(BudgetError) as info:
        pack(layers, Budget(window=300))
    err = info.value
    assert err.largest_layer == "system"
    assert err.over_by > 0
    assert f"over by {err.over_by}" in str(err) and "'system'" in str(err)
    # exactly the reported shortfall more is enough
    pack(layers, Budget(window=300 + err.over_by))


def test_lower_priority_never_whole_when_higher_dropped() -> None:
    layers = [
        ContextLayer("input", "input", [user("hi")]),
        ContextLayer("big", "related", words(500), priority=3, truncatable=False),
        ContextLayer("small", "related", "tiny note", priority=4),
    ]
    result = pack(layers, Budget(window=200))
    assert result.report.layer("big").status == "dropped"
    assert result.report.layer("small").status == "dropped"
    assert "'big'" in (result.report.layer("small").reason or "")


def test_truncatable_layers_are_cut_not_dropped() -> None:
    layers = [
        ContextLayer("input", "input", [user("hi")]),
        ContextLayer("loc", "location", LOREM * 30),
    ]
    result = pack(layers, Budget(window=400))
    loc = result.report.layer("loc")
    assert loc.status == "truncated" and loc.tokens <= 400
    assert TRUNCATION_MARKER in result.messages[0]["content"]
    assert result.messages[0]["content"].startswith("## Current context\n")


def test_fragment_below_minimum_is_dropped_not_sent() -> None:
    layers = [
        ContextLayer("input", "input", [user("hi")]),
        ContextLayer("loc", "location", LOREM * 30),
    ]
    result = pack(layers, Budget(window=90))
    assert result.report.layer("loc").status == "dropped"
    assert len(result.messages) == 1


def test_allocations_shape_and_spill() -> None:
    layers = [
        ContextLayer("input", "input", [user("hi")]),
        ContextLayer("loc", "location", LOREM * 40),
        ContextLayer("rel", "related", LOREM * 40),
    ]
    strict = Budget(window=3000, allocations={"location": 300, "related": 300}, spill=False)
    result = pack(layers, strict)
    assert result.report.layer("loc").tokens <= 300 + 5
    assert result.report.layer("rel").tokens <= 300 + 5
    spill = Budget(window=3000, allocations={"location": 300, "related": 300})
    spilled = pack(layers, spill)
    assert spilled.report.layer("loc").tokens > 300  # leftover went back, in priority order
    assert spilled.report.total_tokens <= 3000
    assert spilled.report.total_tokens > result.report.total_tokens


def test_pack_is_ordered_by_how_often_its_parts_change() -> None:
    history = [user("Plan the launch."), assistant("Three tracks.")]
    layers = [
        ContextLayer("input", "input", [user("hi")]),
        ContextLayer("history", "history", history),
        ContextLayer("ref", "retrieved", "Dana booked the venue."),
        ContextLayer("narr", "narrative", "We are planning the Q4 launch."),
        ContextLayer("sys", "system", "You are calm."),
        ContextLayer("prof", "profile", "Prefers mornings."),
    ]
    result = pack(layers, Budget(window=1000))
    assert result.messages == [
        {"role": "system", "content": "You are calm."},  # the system prompt, as given
        {  # what changes only when memory is compacted
            "role": "system",
            "content": (
                "## User profile\nPrefers mornings.\n\n## Story so far\nWe are planning the Q4 launch."
            ),
        },
        *history,  # appended turn by turn
        {  # chosen for this turn, just before the newest user message
            "role": "user",
            "content": f"{TAIL_LEAD}\n\n## Retrieved from earlier\nDana booked the venue.",
        },
        user("hi"),
    ]
    assert COUNTER.count_messages(result.messages) == result.report.total_tokens
    as_system = Packer(COUNTER, tail_role="system").pack(layers, Budget(window=1000))
    assert as_system.messages[-2] == {
        "role": "system",
        "content": "## Retrieved from earlier\nDana booked the venue.",
    }
    assert COUNTER.count_messages(as_system.messages) == as_system.report.total_tokens


def test_system_messages_given_as_messages_are_sent_as_given() -> None:
    system = [{"role": "system", "content": "Be brief."}, {"role": "developer", "content": "JSON only."}]
    layers = [
        ContextLayer("system", "system", system),
        ContextLayer("prof", "profile", "Prefers mornings."),
        ContextLayer("input", "input", [user("hi")]),
    ]
    result = pack(layers, Budget(window=1000))
    assert result.messages[:2] == system
    assert result.messages[2]["content"].startswith("## User profile")
    assert COUNTER.count_messages(result.messages) == result.report.total_tokens


def test_tools_layer_goes_to_tools_and_is_counted() -> None:
    tool = {"type": "function", "function": {"name": "list_tasks", "description": "List tasks."}}
    layers = conversation_layers([user("hi")], [tool])
    result = pack(layers, Budget(window=1000))
    assert result.tools == [tool]
    assert result.report.layer("tools").tokens == COUNTER.count_tools([tool])
    assert result.report.total_tokens == total(result.messages, result.tools)


def test_same_inputs_same_bytes_and_checksum() -> None:
    msgs = conversation(30)
    a = pack(conversation_layers(msgs), Budget(window=2000), seed="s1")
    b = Packer(TokenCounter()).pack(conversation_layers(msgs), Budget(window=2000), seed="s1")
    assert json.dumps(a.to_dict(), sort_keys=True) == json.dumps(b.to_dict(), sort_keys=True)
    assert a.checksum == hashlib.sha256(canonical_json(a.messages, a.tools)).hexdigest()


def test_seed_breaks_ties_deterministically() -> None:
    layers = [ContextLayer(f"r{i}", "related", words(40, i), truncatable=False) for i in range(6)]
    layers.append(ContextLayer("input", "input", [user("hi")]))
    orders = set()
    for seed in ("a", "b", "c", "d"):
        first = pack(layers, Budget(window=200), seed=seed)
        again = pack(layers, Budget(window=200), seed=seed)
        assert first.checksum == again.checksum
        orders.add(tuple(first.report.dropped))
    assert len(orders) > 1  # different seeds may choose differently among equals


def test_band_limits_history_related_and_references() -> None:
    msgs = conversation(20)
    layers = [
        *conversation_layers(msgs),
        *[ContextLayer(f"rel{i}", "related", words(10, i)) for i in range(5)],
        ContextLayer("ref", "retrieved", LOREM * 20, summary="Launch plan: three tracks."),
    ]
    warning = band_for_health(0.5)
    result = pack(layers, Budget(window=100_000), band=warning, health=0.5)
    report = result.report
    assert report.band == "warning"
    assert report.layer("history").messages <= 2
    assert sum(1 for i in range(5) if report.layer(f"rel{i}").status != "dropped") == 3
    assert "Launch plan: three tracks." in result.messages[-2]["content"]  # the tail
    assert report.layer("ref").status == "truncated"
    critical = pack(layers, Budget(window=100_000), band=band_for_health(0.1))
    assert critical.report.layer("history").status == "dropped"
    assert critical.report.layer("ref").status == "dropped"
    assert critical.messages[-1] == msgs[-1]


def test_duplicate_layer_ids_are_refused() -> None:
    layers = [ContextLayer("a", "related", "x"), ContextLayer("a", "profile", "y")]
    with pytest.raises(InputError, match="share the id"):
        pack(layers, Budget(window=100))


def test_report_lists_every_layer_with_reasons() -> None:
    msgs = conversation(30)
    layers = [*conversation_layers(msgs), ContextLayer("prof", "profile", words(100))]
    result = pack(layers, Budget(window=900))
    ids = [r.id for r in result.report.layers]
    assert sorted(ids) == sorted(layer.id for layer in layers)
    for r in result.report.layers:
        if r.status != "kept":
            assert r.reason
    d = result.to_dict()["report"]
    for key in (
        "total_tokens",
        "budget",
        "checksum",
        "layers",
        "dropped",
        "truncated",
        "utilisation",
        "tokens_saved",
    ):
        assert key in d
    assert d["tokens_saved"] == d["tokens_all_layers"] - d["total_tokens"]
