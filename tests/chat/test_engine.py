"""Whole turns through the chat engine, driven by scripted models, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tierwise import Budget, InputError
from tierwise.chat.costguard import CostGuard, Limits, MemoryLedger
from tierwise.chat.engine import DEFAULT_SYSTEM, ChatEngine
from tierwise.chat.events import (
    DoneEvent,
    ErrorEvent,
    Notice,
    TextEvent,
    ToolCallComplete,
    ToolCallStart,
    UsageEvent,
)
from tierwise.chat.housekeeping import RETRIEVAL_GUIDE
from tierwise.memory.persist import ChatMemory
from tierwise.providers import ModelResponse, ProviderError, TextDelta, with_fallback
from tierwise.providers.base import Event, ModelRequest
from tierwise.providers.testing import Script, ScriptedModel, tool_call
from tierwise.store import NotFoundError, Store
from tierwise.tools import ToolContext, tool

pytestmark = pytest.mark.anyio

BUDGET = Budget(window=6000, reserve=500)


@tool(tier="list")
def list_tasks(project: str, limit: int = 5) -> list[str]:
    """List a project's open tasks, abbreviated.

    Args:
        project: the project's name.
        limit: at most this many tasks.
    """
    return [f"{project} task {i}" for i in range(limit)]


@tool(tier="action")
def send_invoice(customer: str) -> str:
    """Send an invoice (always fails: the mail server is down)."""
    raise ConnectionError("mail server unreachable")


@tool(tier="action")
async def slow_export(ctx: ToolContext) -> str:
    """Export everything (takes a long time)."""
    await asyncio.sleep(30)
    return "exported"


def setup(store: Store, model: Any, **options: Any) -> tuple[ChatEngine, str, str]:
    user = store.create_user("maya")
    chat = store.create_chat(user.id)
    options.setdefault("budget", BUDGET)
    engine = ChatEngine(store, model, tools=[list_tasks, send_invoice, slow_export], **options)
    return engine, user.id, chat.id


def roles(store: Store, user: str, chat: str) -> list[str]:
    return [m.message["role"] for m in store.list_messages(user, chat)]


def sent(request: ModelRequest) -> list[tuple[str, str | None]]:
    return [(m["role"], m.get("content")) for m in request.messages]


async def test_multi_step_tool_use_sends_exactly_the_turn_so_far(store: Store) -> None:
    first, second = tool_call("list_tasks", project="Launch", limit=2), tool_call("list_tasks", project="Ops")
    model = ScriptedModel([first, second], "Launch has 2 open tasks; Ops has 5.")
    engine, user, chat = setup(store, model)

    result = await engine.run(user, chat, "What is open in Launch and Ops?")

    assert result.done.reason == "answer" and result.text == "Launch has 2 open tasks; Ops has 5."
    kinds = [e.type for e in result.events]
    assert kinds[:4] == ["tool_call_start", "tool_call_start", "tool_call_complete", "tool_call_complete"]
    assert kinds[-2:] == ["usage", "done"] and "text" in kinds
    assert roles(store, user, chat) == ["user", "assistant", "tool", "tool", "assistant"]
    assert result.done.message_seqs == [0, 1, 2, 3, 4]

    # The exact packs: the system prompt, the user's message, then the turn so far, nothing twice.
    one, two = model.requests
    assert sent(one) == [("system", DEFAULT_SYSTEM), ("user", "What is open in Launch and Ops?")]
    assert [t["function"]["name"] for t in one.tools] == [  # nothing to recall yet: no retrieval tools
        "list_tasks",
        "record_decision",
        "send_invoice",
        "slow_export",
        "update_narrative",
    ]
    stored = [m.message for m in store.list_messages(user, chat)]
    assert two.messages == [{"role": "system", "content": DEFAULT_SYSTEM}, *stored[:4]]
    assert stored[2]["content"] == '["Launch task 0","Launch task 1"]'
    assert two.max_tokens == 500 and two.tool_choice is None

    calls = store.list_tool_calls(user, chat)
    assert sorted(c.tool_name for c in calls) == ["list_tasks", "list_tasks"]
    assert all(c.success and c.duration_ms is not None for c in calls)
    assert {c.message_id for c in calls} == {store.list_messages(user, chat)[1].id}


async def test_a_failing_tool_becomes_a_result_the_model_reads(store: Store) -> None:
    model = ScriptedModel(tool_call("send_invoice", customer="ACME"), "The mail server is down; try later.")
    engine, user, chat = setup(store, model)

    result = await engine.run(user, chat, "Invoice ACME")

    complete = next(e for e in result.events if isinstance(e, ToolCallComplete))
    assert not complete.success and "mail server unreachable" in (complete.error or "")
    assert result.done.reason == "answer"
    tool_message = model.requests[1].messages[-1]
    assert tool_message["role"] == "tool" and "mail server unreachable" in tool_message["content"]
    (logged,) = store.list_tool_calls(user, chat)
    assert not logged.success and "mail server unreachable" in (logged.error or "")


async def test_invented_tools_and_arguments_get_error_results_not_exceptions(store: Store) -> None:
    model = ScriptedModel(
        [
            tool_call("list_tasks", project=3, limit="many", colour="red"),
            tool_call("delete_everything"),
        ],
        "Sorry, let me ask differently.",
    )
    engine, user, chat = setup(store, model)

    result = await engine.run(user, chat, "Tasks?")

    results = [e for e in result.events if isinstance(e, ToolCallComplete)]
    assert [r.success for r in results] == [False, False]
    by_name = {r.name: r.content for r in results}
    assert "colour: not a parameter of list_tasks" in by_name["list_tasks"]
    assert "limit" in by_name["list_tasks"] and "project" in by_name["list_tasks"]
    assert (
        "delete_everything" in by_name["delete_everything"] and "list_tasks" in by_name["delete_everything"]
    )
    assert result.done.reason == "answer"
    assert roles(store, user, chat) == ["user", "assistant", "tool", "tool", "assistant"]


async def test_stop_mid_stream_keeps_and_marks_the_partial_answer(store: Store) -> None:
    slow = Script(TextDelta("The venue "), TextDelta("is booked "), TextDelta("for Friday."), delay=5)
    model = ScriptedModel(slow, "Yes, Friday.")
    engine, user, chat = setup(store, model)
    stop = asyncio.Event()

    events = []
    async with asyncio.timeout(3):  # stopping is prompt: far less than the stream's 10 s
        async for event in engine.turn(user, chat, "Is the venue booked?", stop=stop):
            events.append(event)
            if isinstance(event, TextEvent):
                stop.set()

    done = events[-1]
    assert isinstance(done, DoneEvent) and done.reason == "stopped" and done.text == "The venue "
    stored = store.list_messages(user, chat)
    assert [m.message for m in stored] == [
        {"role": "user", "content": "Is the venue booked?"},
        {"role": "assistant", "content": "The venue "},
    ]
    assert stored[1].metadata["stopped"] is True and stored[1].metadata["partial"] is True
    assert not engine.pending(user, chat)

    # The next turn resumes cleanly and sees what was said.
    again = await engine.run(user, chat, "Well?")
    assert again.text == "Yes, Friday." and again.done.reason == "answer"
    contents = [m.get("content") for m in model.requests[-1].messages]
    assert "The venue " in "\n".join(str(c) for c in contents)


async def test_stop_while_a_tool_runs_stores_a_result_for_every_call(store: Store) -> None:
    model = ScriptedModel([tool_call("slow_export"), tool_call("list_tasks", project="Ops", limit=1)])
    engine, user, chat = setup(store, model)
    stop = asyncio.Event()

    events = []
    async with asyncio.timeout(3):
        async for event in engine.turn(user, chat, "Export all", stop=stop):
            events.append(event)
            if isinstance(event, ToolCallComplete):  # list_tasks finished; slow_export still runs
                stop.set()

    assert events[-1].type == "done" and events[-1].reason == "stopped"
    messages = [m.message for m in store.list_messages(user, chat)]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "tool"]
    assert "stopped by the user before slow_export finished" in messages[2]["content"]
    assert messages[3]["content"] == '["Ops task 0"]'
    assert engine.pending(user, chat)  # the results were never read by the model: resume answers them
    model.enqueue("Ops has one task; the export was stopped.")
    resumed = await engine.resume(user, chat)
    assert resumed.text == "Ops has one task; the export was stopped."
    assert [m["role"] for m in model.requests[-1].messages][-4:] == ["user", "assistant", "tool", "tool"]


async def test_closing_the_stream_stops_the_turn_and_keeps_what_was_said(store: Store) -> None:
    model = ScriptedModel(Script(TextDelta("Working on "), TextDelta("it"), delay=5))
    engine, user, chat = setup(store, model)
    stream = engine.turn(user, chat, "Plan my week")
    async with asyncio.timeout(3):
        first = await anext(stream)
        assert first == TextEvent("Working on ")
        await stream.aclose()
    assert [m.message["content"] for m in store.list_messages(user, chat)] == ["Plan my week", "Working on "]
    assert not engine.is_running(user, chat)


async def test_fallback_after_a_500(store: Store) -> None:
    failing = ScriptedModel(ProviderError("server error", status=500, retryable=True), model="primary")
    backup = ScriptedModel("From the backup model.", model="backup")
    engine, user, chat = setup(store, with_fallback(failing, backup))

    result = await engine.run(user, chat, "Hello?")

    assert result.text == "From the backup model." and result.done.reason == "answer"
    notices = [e for e in result.events if isinstance(e, Notice)]
    assert [n.kind for n in notices] == ["fallback"] and "backup" in notices[0].message
    assert sent(failing.requests[0]) == sent(backup.requests[0])  # the same pack, to the next model
    assert store.list_messages(user, chat)[-1].metadata["model"] == "backup"
    (turn,) = store.list_audit(user, event="turn")
    names = [s["name"] for s in turn.details["trace"]]
    assert {"context.build", "model.call", "model.fallback", "turn"} <= set(names)


async def test_a_model_failure_is_an_error_event_and_the_message_is_kept(store: Store) -> None:
    model = ScriptedModel(ProviderError("bad gateway", status=502, retryable=True))
    engine, user, chat = setup(store, model)

    result = await engine.run(user, chat, "Summarise my notes")

    assert result.done.reason == "error"
    assert result.error is not None and "bad gateway" in result.error.message and result.error.retryable
    assert roles(store, user, chat) == ["user"] and engine.pending(user, chat)
    model.enqueue("Here is the summary.")
    assert (await engine.resume(user, chat)).text == "Here is the summary."
    assert roles(store, user, chat) == ["user", "assistant"]


async def test_a_crash_after_the_user_message_is_stored_loses_nothing(store: Store) -> None:
    user = store.create_user("maya")
    chat = store.create_chat(user.id)
    # A previous process stored the user's message, then died before the model answered.
    ChatMemory(store, user.id, chat.id).add({"role": "user", "content": "Book the venue for the offsite"})

    model = ScriptedModel("Booked for Friday.")
    engine = ChatEngine(store, model, budget=BUDGET)  # a fresh process: nothing in memory
    assert engine.pending(user.id, chat.id)
    result = await engine.resume(user.id, chat.id)

    assert result.text == "Booked for Friday."
    assert sent(model.requests[0]) == [("system", DEFAULT_SYSTEM), ("user", "Book the venue for the offsite")]
    assert roles(store, user.id, chat.id) == ["user", "assistant"]
    with pytest.raises(InputError, match="nothing to resume"):
        await engine.resume(user.id, chat.id)


async def test_later_turns_carry_memory_and_a_growing_history(store: Store) -> None:
    model = ScriptedModel("Noted.", "Still noted.")
    engine, user, chat = setup(store, model)
    await engine.run(user, chat, "The offsite is in Lisbon.")
    await engine.run(user, chat, "Where is the offsite?")

    second = model.requests[1]
    assert second.messages[-1] == {"role": "user", "content": "Where is the offsite?"}
    text = "\n".join(str(m.get("content")) for m in second.messages)
    assert "Lisbon" in text and text.count("Where is the offsite?") == 1


async def test_step_limit_ends_with_an_answer_and_no_more_tools(store: Store) -> None:
    loop = [tool_call("list_tasks", project="Ops", limit=1) for _ in range(3)]
    model = ScriptedModel(
        loop[0], loop[1], ModelResponse(text="I keep looking; here is what I have.", tool_calls=[loop[2]])
    )
    engine, user, chat = setup(store, model, max_steps=2)

    result = await engine.run(user, chat, "Dig into Ops")

    assert len(model.requests) == 2
    assert model.requests[0].tool_choice is None and model.requests[1].tool_choice == "none"
    first, last = model.requests[0].messages, model.requests[1].messages
    assert last[0] == first[0]  # the system prompt is not rewritten for the last step
    assert any("last step of this turn" in str(m.get("content")) for m in last[1:])
    assert result.done.reason == "step_limit" and result.done.steps == 2
    last = store.list_messages(user, chat)[-1].message
    assert last["role"] == "assistant" and "tool_calls" not in last  # calls on the last step never run


async def test_title_after_the_first_exchange(store: Store) -> None:
    model = ScriptedModel("Sure.", "Done.")
    engine, user, chat = setup(store, model)
    first = await engine.run(user, chat, "Can you help me plan the Q4 launch timeline?")
    assert first.done.title == "Plan the Q4 launch timeline"
    record = store.get_chat(user, chat)
    assert record.title == "Plan the Q4 launch timeline" and record.title_generated
    second = await engine.run(user, chat, "Also the budget")
    assert second.done.title is None and store.get_chat(user, chat).title == "Plan the Q4 launch timeline"


async def test_title_from_a_model_when_one_is_configured(store: Store) -> None:
    titler = ScriptedModel("Q4 launch plan")
    engine, user, chat = setup(store, ScriptedModel("Sure."), title_provider=titler)
    result = await engine.run(user, chat, "Can you help me plan the Q4 launch timeline?")
    assert result.done.title == "Q4 launch plan"
    assert "Q4 launch timeline" in titler.requests[0].messages[0]["content"]


async def test_a_name_the_user_gives_while_the_title_is_made_is_kept(store: Store) -> None:
    class RenamedMeanwhile(ScriptedModel):
        """A title model during whose answer the user renames the chat."""

        async def stream(self, request: ModelRequest) -> AsyncIterator[Event]:
            store.rename_chat(user, chat, "My launch notes")
            async for event in super().stream(request):
                yield event

    titler = RenamedMeanwhile("Q4 launch plan")
    engine, user, chat = setup(store, ScriptedModel("Sure."), title_provider=titler)
    result = await engine.run(user, chat, "Can you help me plan the Q4 launch timeline?")
    assert titler.requests  # the title was asked for
    assert result.done.title is None
    record = store.get_chat(user, chat)
    assert record.title == "My launch notes" and not record.title_generated


async def test_usage_report_cost_and_guard(store: Store) -> None:
    ledger = MemoryLedger()
    guard = CostGuard(Limits(session_tokens=100_000), ledger)
    model = ScriptedModel(tool_call("list_tasks", project="Ops"), "Five tasks.", model="gpt-4o-mini")
    engine, user, chat = setup(store, model, guard=guard)

    result = await engine.run(user, chat, "Ops tasks?")

    usage = result.usage
    assert usage is not None
    report = usage.report
    assert set(report) >= {"context", "conversation", "tools", "response", "summary"}
    assert [c["name"] for c in report["tools"]["calls"]] == ["list_tasks"]
    assert report["summary"]["limit"] == BUDGET.available
    assert usage.prompt_tokens > 0 and usage.completion_tokens > 0
    assert usage.price_known and usage.dollars > 0
    spent = guard.spend(user, chat)
    assert spent.session_tokens == usage.prompt_tokens + usage.completion_tokens
    assert usage.health == pytest.approx(1 - spent.session_tokens / 100_000, abs=1e-6)
    assert store.get_chat(user, chat).total_tokens_used == spent.session_tokens
    (turn,) = store.list_audit(user, event="turn")
    assert turn.details["usage"]["report"] == report and turn.details["reason"] == "answer"
    assert turn.details["message_seqs"] == result.done.message_seqs


async def test_over_the_hard_limit_a_turn_is_refused_and_nothing_is_sent(store: Store) -> None:
    guard = CostGuard(Limits(session_tokens=1_000), MemoryLedger())
    model = ScriptedModel("never sent")
    engine, user, chat = setup(store, model, guard=guard)
    guard.record(user, chat, tokens=1_000, dollars=0.0)

    result = await engine.run(user, chat, "One more question")

    assert result.done.reason == "refused" and not model.requests
    assert result.error is not None and result.error.kind == "budget"
    assert "TIERWISE_SESSION_TOKEN_LIMIT" in result.error.message
    assert roles(store, user, chat) == []


async def test_low_budget_health_prunes_harder(store: Store) -> None:
    guard = CostGuard(Limits(session_tokens=10_000), MemoryLedger())
    model = ScriptedModel("ok")
    engine, user, chat = setup(store, model, guard=guard)
    guard.record(user, chat, tokens=9_600, dollars=0.0)  # 4 % left: the critical band
    await engine.run(user, chat, "hi")
    (snapshot,) = store.list_snapshots(user, chat)
    assert snapshot.pruning_strategy["band"] == "critical"


async def test_housekeeping_tools_update_narrative_and_decisions(store: Store) -> None:
    model = ScriptedModel(
        [
            tool_call("update_narrative", objective="Plan the Lisbon offsite", next_steps=["book venue"]),
            tool_call("record_decision", decision="The offsite is in Lisbon in May"),
        ],
        "Noted.",
        "Next: book the venue.",
    )
    engine, user, chat = setup(store, model)
    await engine.run(user, chat, "We decided: Lisbon, in May.")
    record = store.get_chat(user, chat)
    assert record.key_decisions == ["The offsite is in Lisbon in May"]
    assert record.narrative is not None and record.narrative["objective"] == "Plan the Lisbon offsite"

    await engine.run(user, chat, "What's next?")
    # The whole chat fits: it is sent as it is, the housekeeping calls in it; memory adds nothing.
    sent = json.dumps(model.requests[-1].messages)
    assert "Plan the Lisbon offsite" in sent and "Story so far" not in sent
    # Once memory compacts, the narrative and the decision lead the head.
    chat_memory = engine.chat_memory(user, chat)
    for i in range(4):
        chat_memory.add(
            {"role": "user" if i % 2 == 0 else "assistant", "content": "More on the venue. " * 60}
        )
    pack = chat_memory.pack(Budget(window=1000), [{"role": "user", "content": "And then?"}], record=False)
    head = pack.messages[0]["content"]
    assert "Objective: Plan the Lisbon offsite" in head
    assert "Decided: The offsite is in Lisbon in May" in head


async def test_what_the_model_writes_to_memory_is_scrubbed(store: Store) -> None:
    key = "sk-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKL"
    model = ScriptedModel(
        [
            tool_call("update_narrative", objective=f"Rotate the key {key}", entities=["maya@example.com"]),
            tool_call("record_decision", decision=f"Mail maya@example.com the new key {key}"),
        ],
        "Noted.",
    )
    engine, user, chat = setup(store, model)
    await engine.run(user, chat, "Rotate it and tell Maya.")
    record = store.get_chat(user, chat)
    stored = json.dumps([record.narrative, record.key_decisions])
    assert key not in stored and "maya@example.com" not in stored
    assert "[api-key]" in stored and "Rotate the key" in stored


async def test_recall_segments_through_the_engine(store: Store) -> None:
    model = ScriptedModel()
    engine, user, chat = setup(store, model)
    memory = engine.chat_memory(user, chat)
    for i in range(40):
        memory.add({"role": "user", "content": f"Note {i}: the supplier for part {i} is Vendor{i}."})
        memory.add({"role": "assistant", "content": f"Saved note {i}."})
    first = memory.memory.segments[0].id
    model.enqueue(tool_call("recall_segments", ids=first, form="full"), "Vendor0.")
    result = await engine.run(user, chat, "Who supplies part 0?")
    recalled = next(e for e in result.events if isinstance(e, ToolCallComplete))
    assert recalled.success and "Vendor0" in recalled.content


async def test_a_second_turn_in_the_same_chat_is_refused_while_one_runs(store: Store) -> None:
    model = ScriptedModel(Script(TextDelta("a"), TextDelta("b"), delay=0.3), "x")
    engine, user, chat = setup(store, model)
    first = asyncio.create_task(engine.run(user, chat, "first"))
    await asyncio.sleep(0.05)
    assert engine.is_running(user, chat)
    second = await engine.run(user, chat, "second")
    assert second.done.reason == "refused" and second.error is not None and second.error.kind == "busy"
    assert (await first).text == "ab"
    assert [m.message["content"] for m in store.list_messages(user, chat)] == ["first", "ab"]


async def test_bad_input_is_refused_before_anything_is_stored(store: Store) -> None:
    engine, user, chat = setup(store, ScriptedModel("x"))
    with pytest.raises(InputError, match="empty"):
        await engine.run(user, chat, "   ")
    other = store.create_user("eve")
    with pytest.raises(NotFoundError):
        await engine.run(other.id, chat, "let me in")
    with pytest.raises(NotFoundError):
        await engine.run(user, "no-such-chat", "hello")
    assert roles(store, user, chat) == []
    with pytest.raises(InputError, match="max_steps"):
        ChatEngine(store, ScriptedModel(), max_steps=0)


async def test_every_turn_ends_with_exactly_one_done(store: Store) -> None:
    model = ScriptedModel(
        "one", ProviderError("boom", status=500), tool_call("list_tasks", project="A"), "two"
    )
    engine, user, chat = setup(store, model)
    for text in ("a", "b", "c"):
        result = await engine.run(user, chat, text)
        assert [type(e) for e in result.events].count(DoneEvent) == 1
        assert isinstance(result.events[-1], DoneEvent)
        errors = [e for e in result.events if isinstance(e, ErrorEvent)]
        assert len(errors) <= 1
        usages = [e for e in result.events if isinstance(e, UsageEvent)]
        assert len(usages) <= 1
    starts = [e for e in result.events if isinstance(e, ToolCallStart)]
    assert [s.name for s in starts] == ["list_tasks"]


async def test_usage_counts_the_model_calls_its_prompt_tokens_add_up(store: Store) -> None:
    model = ScriptedModel(tool_call("list_tasks", project="Ops"), "Done.", "Plain.")
    engine, user, chat = setup(store, model)
    stepped = await engine.run(user, chat, "Ops?")
    plain = await engine.run(user, chat, "And?")
    assert stepped.usage is not None and stepped.usage.model_calls == 2
    assert plain.usage is not None and plain.usage.model_calls == 1
    assert stepped.usage.to_dict()["model_calls"] == 2


async def test_traces_are_stored_and_exported_as_jsonl(store: Store, tmp_path: Any) -> None:
    import json

    from tierwise.chat.trace import export_traces

    path = tmp_path / "traces.jsonl"
    model = ScriptedModel(tool_call("list_tasks", project="Ops"), "Done.", "Again.")
    engine, user, chat = setup(store, model, trace_path=path)
    first = await engine.run(user, chat, "Ops?")
    await engine.run(user, chat, "And again?")

    spans = [json.loads(line) for line in export_traces(store, user, chat).splitlines()]
    assert spans[0]["trace_id"] == first.done.trace_id and spans[-1]["name"] == "turn.done"
    names = [s["name"] for s in spans if s["trace_id"] == first.done.trace_id]
    assert names.count("context.build") == 2 and names.count("model.call") == 2
    assert "tool.call" in names and "title" in names and "turn" in names
    tool_span = next(s for s in spans if s["name"] == "tool.call")
    assert tool_span["attributes"]["tool"] == "list_tasks" and tool_span["status"] == "ok"
    assert path.read_text(encoding="utf-8").count("\n") == len(spans)


async def test_context_sources_and_tool_extras_reach_the_pack_and_the_tools(store: Store) -> None:
    from tierwise import ContextLayer
    from tierwise.store import Chat

    seen: list[tuple[str, str]] = []

    def sources(user_id: str, chat: Chat) -> list[ContextLayer]:
        seen.append((user_id, chat.context_type))
        return [
            ContextLayer("profile", "profile", "Prefers short bullet lists."),
            ContextLayer(
                "project:offsite", "location", "## Current Project: Lisbon offsite\n- Status: active"
            ),
        ]

    @tool(tier="list")
    def whoami(ctx: ToolContext) -> str:
        """Say what the clock says."""
        return str(ctx.extras["now"])

    model = ScriptedModel(tool_call("whoami"), "ok")
    user = store.create_user("maya").id
    chat = store.create_chat(user, context_type="project").id
    engine = ChatEngine(
        store, model, tools=[whoami], budget=BUDGET, context=sources, tool_extras={"now": "2026-11-23T09:00"}
    )
    result = await engine.run(user, chat, "What's next for the offsite?")

    assert seen == [(user, "project")]  # once per turn, not per step
    for request in model.requests:
        system = "\n".join(m["content"] for m in request.messages if m["role"] == "system")
        assert "Prefers short bullet lists." in system and "Current Project: Lisbon offsite" in system
    complete = next(e for e in result.events if isinstance(e, ToolCallComplete))
    assert complete.content == "2026-11-23T09:00"
    report = store.list_snapshots(user, chat)[0].tier_breakdown
    assert report["profile"]["tokens"] > 0 and report["location"]["tokens"] > 0


def _offered(request: ModelRequest) -> list[str]:
    return [d["function"]["name"] for d in request.tools]


async def test_a_big_tool_result_is_stored_as_a_blob_and_sent_whole_while_the_chat_fits(store: Store) -> None:
    @tool(tier="detail")
    def export_report() -> str:
        """The full quarterly report."""
        return "\n".join(f"Line {i}: revenue for region {i} grew by {i % 7} percent." for i in range(60))

    model = ScriptedModel(tool_call("export_report"), "Summarised.", "Here it is again.")
    user = store.create_user("maya").id
    chat = store.create_chat(user).id
    engine = ChatEngine(store, model, tools=[export_report], budget=BUDGET)
    await engine.run(user, chat, "Export the report")
    await engine.run(user, chat, "And again?")

    in_turn = model.requests[1].messages[-1]["content"]
    assert in_turn.startswith("Line 0:") and "Line 59:" in in_turn  # whole, in the turn that asked
    stored = store.list_messages(user, chat)[2]
    assert stored.message["role"] == "tool" and "sha256:" in (stored.content or "")
    digest = (stored.content or "").split("sha256:")[1][:64]
    assert store.get_blob(user, digest).decode().startswith("Line 0:")
    later, earlier = model.requests[2].messages, model.requests[1].messages
    assert later[: len(earlier)] == earlier  # as sent: cached from the start
    # nothing in the prompt points at the blob yet (the result is sent whole): no open_blob, no guide
    assert RETRIEVAL_GUIDE not in later[0]["content"]
    assert "open_blob" not in _offered(model.requests[2]) and "open_blob" not in _offered(model.requests[1])
    assert "Line 59:" in "\n".join(str(m.get("content")) for m in later) and digest not in str(later)
