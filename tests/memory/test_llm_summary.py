"""Summaries by a model (issue 15): guarded, incremental, off the request path, configured.

Every model here is one of the package's fakes (ScriptedModel, FunctionModel) behind SyncCompletion.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from tierwise import TokenCounter
from tierwise.budget import Budget
from tierwise.chat.engine import ChatEngine
from tierwise.chat.events import DoneEvent
from tierwise.chat.memories import default_memory, summarizing_memory
from tierwise.chat.summaries import model_summarizer
from tierwise.memory.blobs import InMemoryBlobStore
from tierwise.memory.engine import Memory
from tierwise.providers import ProviderSettings, SyncCompletion
from tierwise.providers.base import ModelRequest, ModelResponse
from tierwise.providers.errors import ProviderError
from tierwise.providers.testing import FunctionModel, ScriptedModel
from tierwise.replay import replay
from tierwise.server import create_app
from tierwise.store import Store
from tierwise.summarize import (
    ExtractiveSummarizer,
    LLMSummarizer,
    OnRequestPath,
    SummaryRejected,
    check_faithful,
    fit_input,
    off_request_path,
)
from tierwise.summarize.llm import MERGE_PROMPT, PROMPT

pytestmark = pytest.mark.anyio

COUNTER = TokenCounter()
RUNNER = CliRunner()
TEXT = (
    "Maya: Can we move the launch review? I decided to push it to Friday.\n"
    "Assistant: Done, it is now Friday at 10:00. The pricing page is still blocked on legal.\n"
    "Maya: What about the FAQ? Priya needs it before Thursday; the draft is in docs/faq.md."
)
GOOD = "Maya moved the launch review to Friday at 10; Priya needs the FAQ (docs/faq.md) before Thursday."


def summarizer(*replies: Any, **options: Any) -> tuple[LLMSummarizer, ScriptedModel]:
    model = ScriptedModel(*replies)
    return LLMSummarizer(SyncCompletion(model), model="small", counter=COUNTER, **options), model


def kind(request: ModelRequest) -> str:
    """What a request to a fake asks for: a summary, a narrative merge, or a chat answer."""
    system = request.messages[0]["content"] if request.messages[0]["role"] == "system" else ""
    if system.startswith(PROMPT[:40]):
        return "summary"
    if system.startswith(MERGE_PROMPT[:40]):
        return "merge"
    return "chat"


# -- the guards ----------------------------------------------------------------------------------


def test_a_good_model_summary_is_used_and_the_request_is_the_summary_models() -> None:
    s, model = summarizer(GOOD, max_tokens=99)
    assert s.summarize(TEXT, max_tokens=60) == GOOD
    (request,) = model.requests
    assert request.model == "small" and request.max_tokens == 99
    assert request.messages[1]["content"] == TEXT
    assert (s.calls, s.fallbacks, s.rejections) == (1, 0, [])
    assert s.prompt_tokens > 0 and s.completion_tokens > 0  # the fake's usage, counted


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("", "the summary is empty"),
        ("   \n", "the summary is empty"),
        (
            ModelResponse(text="Maya moved the launch review to Friday.", finish_reason="length"),
            "the summary was cut off: the model stopped at its max_tokens (400)",
        ),
        ("Maya moved the launch review to Friday and the", "the summary stops mid-sentence"),
        ("Maya moved the review. " * 30, "over its cap of 60"),
        ("Maya moved the launch review to Friday at 11.", 'the number "11", which is not in the source'),
        ("The review moved to Friday; Rahul approved it.", 'the name "Rahul", which is not in the source'),
        ("The FAQ draft is in docs/help/faq.md.", 'the path "docs/help/faq.md", which is not in the source'),
        ("The review moved to Monday.", 'the weekday "Monday", which is not in the source'),
        ("The review moved to 12 May 2026.", 'the date "12 May 2026", which is not in the source'),
        (ProviderError("overloaded", status=529, retryable=False), "the provider failed: ProviderError"),
    ],
)
def test_a_rejected_summary_falls_back_to_extractive_and_says_why(
    reply: Any, reason: str, caplog: pytest.LogCaptureFixture
) -> None:
    s, _ = summarizer(reply)
    with caplog.at_level(logging.WARNING, logger="tierwise.summarize.llm"):
        out = s.summarize(TEXT, max_tokens=60)
    assert out == ExtractiveSummarizer(COUNTER).summarize(TEXT, max_tokens=60)
    assert s.fallbacks == 1 and reason in s.rejections[-1]
    (record,) = caplog.records
    assert record.levelno == logging.WARNING
    assert "small" in record.getMessage() and reason in record.getMessage()
    assert "using the extractive summary" in record.getMessage()


def test_the_record_of_rejections_is_bounded() -> None:
    s, _ = summarizer(*[""] * 25)
    for i in range(25):
        s.summarize(f"{TEXT} ({i})", max_tokens=60)
    assert s.fallbacks == 25 and len(s.rejections) == 20


def test_faithfulness_reads_other_forms_of_the_same_thing() -> None:
    source = (
        "Maya: ship v0.4.0 on 2026-01-09 for forty people; the budget is $1,200 at 3.50 a head.\n"
        "Assistant: noted, see https://example.org/plan/ and ./src/app.py. Meet at 10:00."
    )
    check_faithful(
        "Maya ships 0.4.0 on Friday, 9 January 2026, for 40 people: 1200 dollars, 3.5 a head, "
        "meeting at 10 (https://example.org/plan, src/app.py).",
        source,
    )
    # Sentence openers and stopwords are not names; "May" without a number is the verb.
    check_faithful("Budget: Ship it. Notes may follow. The Maya plan holds.", source)
    for summary, item in (
        ("Maya ships 0.4.1 on Friday.", "0.4.1"),
        ("Maya ships 0.4 on Friday.", "0.4"),
        ("Maya ships on 10 January 2026.", "10 January 2026"),
        ("Maya ships in March.", "March"),
        ("Maya pays 1,300 in total.", "1,300"),
        ("It is in src/web.py now.", "src/web.py"),
        ("See https://example.org/other.", "https://example.org/other"),
        ("The plan is for Lisbon.", "Lisbon"),
        ("It runs on AWS.", "AWS"),
    ):
        with pytest.raises(SummaryRejected, match=f'"{item}"'):
            check_faithful(summary, source)


# -- the input budget ----------------------------------------------------------------------------


def test_text_over_the_input_budget_is_cut_in_the_middle_whole_turns_kept() -> None:
    turns = [
        f"{'Maya' if i % 2 == 0 else 'Assistant'}: step {i} of the launch checklist is done."
        for i in range(60)
    ]
    turns[30] = "Maya: Rahul joins the launch team next week."
    text = "\n".join(turns)
    s, model = summarizer("Maya worked through the launch checklist.", "The launch team welcomes Rahul.")
    s.input_tokens = 150
    s.summarize(text, max_tokens=60)
    sent = model.requests[0].messages[1]["content"]
    assert COUNTER.count(sent) <= 150 < COUNTER.count(text)
    lines = sent.splitlines()
    assert lines[0] == turns[0] and lines[-1] == turns[-1]  # the start and the end, whole
    assert all(line in turns for line in lines if not line.startswith("[…"))
    (marker,) = [line for line in lines if line.startswith("[…")]
    assert "turns" in marker and "left out here" in marker
    # Faithfulness is checked against what was sent: the cut-out middle does not count.
    assert "Rahul" not in sent
    s.summarize(text + "\nMaya: thanks.", max_tokens=60)
    assert 'the name "Rahul"' in s.rejections[-1]


def test_a_turn_too_long_for_the_budget_is_cut_itself() -> None:
    text = "Maya: " + "the launch plan needs review " * 400 + "\nAssistant: agreed, Friday."
    cut = fit_input(text, 200, COUNTER)
    assert COUNTER.count(cut) <= 200
    assert cut.startswith("Maya: the launch plan") and cut.endswith("Assistant: agreed, Friday.")


# -- the narrative ---------------------------------------------------------------------------------

PREVIOUS = (
    "Maya and Priya are planning the product launch. The launch review moved to Friday at 10. "
    "Legal still blocks the pricing page; Priya owns the FAQ draft in docs/faq.md."
)
ADDITION = "S4 12 Jan 2026 · catering: Maya booked catering for forty people at 1,200 euros."


def test_merge_narrative_merges_what_is_new_into_the_previous_narrative() -> None:
    merged = PREVIOUS + " Maya booked catering for 40 people at 1,200 euros."
    s, model = summarizer(merged)
    assert s.merge_narrative(PREVIOUS, ADDITION, max_tokens=300) == merged
    (request,) = model.requests
    system, user = (m["content"] for m in request.messages)
    assert "keep everything in it that still holds" in system and "do not start over" in system
    assert user == f"Narrative so far:\n{PREVIOUS}\n\nWhat is new:\n{ADDITION}"


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (PREVIOUS + " Maya booked catering for 45 people.", 'the number "45"'),
        (PREVIOUS + " Tom booked catering.", 'the name "Tom"'),
        ("Maya booked catering for forty people.", "rewritten, not merged"),
        ("", "empty"),
    ],
)
def test_an_unfaithful_or_rewritten_merge_is_rejected(
    reply: str, reason: str, caplog: pytest.LogCaptureFixture
) -> None:
    s, _ = summarizer(reply)
    with pytest.raises(SummaryRejected, match=reason):
        s.merge_narrative(PREVIOUS, ADDITION, max_tokens=300)
    assert reason in s.rejections[-1] and s.fallbacks == 1
    assert "narrative merge by small rejected" in caplog.text


def test_merge_with_nothing_new_asks_nothing() -> None:
    s, model = summarizer()
    assert s.merge_narrative(PREVIOUS, "  ", max_tokens=300) == PREVIOUS
    assert model.requests == []


# -- off the request path --------------------------------------------------------------------------


def test_a_background_only_summarizer_asks_its_model_only_off_the_request_path() -> None:
    s, model = summarizer(GOOD, background_only=True)
    extractive = ExtractiveSummarizer(COUNTER).summarize(TEXT, max_tokens=60)
    assert s.summarize(TEXT, max_tokens=60) == extractive  # a request's path: no model
    with pytest.raises(OnRequestPath):
        s.merge_narrative(PREVIOUS, ADDITION, max_tokens=300)
    assert model.requests == [] and s.deferred == 2 and s.rejections == []
    with off_request_path():
        assert s.summarize(TEXT, max_tokens=60) == GOOD
    # Made off the path, it is ready on the path too: no second request.
    assert s.has_summary(TEXT, max_tokens=60)
    assert s.summarize(TEXT, max_tokens=60) == GOOD
    assert len(model.requests) == 1


def chat_lines(memory: Memory) -> None:
    """Six turns about the launch, then a new topic: segment S1 closes."""
    for i in range(3):
        memory.add({"role": "user", "content": f"Maya moved the launch review to Friday, note {i}."})
        memory.add({"role": "assistant", "content": f"Noted: the launch review is on Friday ({i})."})
    memory.add({"role": "user", "content": "Recommend vegetarian restaurants near Lisbon harbour tonight."})


LAUNCH = "Maya moved the launch review to Friday."


def body(summary: str) -> str:
    """A segment summary without the day it opens with (``24 Nov 2026: ``)."""
    return re.sub(r"^\d{1,2} [A-Z][a-z]+ \d{4}: ", "", summary)


def fake(request: ModelRequest) -> str:
    """A summary model that summarises faithfully, merges by appending, and answers chats."""
    asked = kind(request)
    if asked == "summary":
        return LAUNCH if "launch" in request.messages[1]["content"] else "Maya asked about restaurants."
    if asked == "merge":
        user = request.messages[1]["content"]
        previous = user.split("Narrative so far:\n", 1)[1].split("\n\nWhat is new:", 1)[0]
        return f"{previous} {LAUNCH}"
    return "Noted."


def test_a_good_model_summary_is_the_segments_summary() -> None:
    model = FunctionModel(fake)
    memory = Memory(summarizer=LLMSummarizer(SyncCompletion(model), model="small"))
    chat_lines(memory)
    first = memory.segments[0]
    assert first.closed and body(first.summary) == LAUNCH
    assert [kind(r) for r in model.requests][:1] == ["summary"]


def test_deferred_summaries_are_made_by_the_model_in_maintain_only() -> None:
    model = FunctionModel(fake)
    s = LLMSummarizer(SyncCompletion(model), model="small", background_only=True)
    memory = default_memory(InMemoryBlobStore(), summarizer=s)
    chat_lines(memory)
    assert not memory.settled(memory.segments[0]) and model.requests == []
    with off_request_path():
        memory.maintain()
    assert body(memory.segments[0].summary) == LAUNCH
    assert "summary" in [kind(r) for r in model.requests]


# -- through the chat engine -----------------------------------------------------------------------

TOPIC = [
    "We need to plan the launch review with Maya and Priya.",
    "Maya moved the launch review to Friday, can you note it?",
    "Priya wants the launch review agenda before Friday.",
    "Recommend vegetarian restaurants near Lisbon harbour tonight.",
]


async def test_the_chat_engine_summarises_by_model_after_done_never_while_packing(store: Store) -> None:
    release = threading.Event()
    threads: list[str] = []

    def answer(request: ModelRequest) -> str:
        if kind(request) == "summary":
            threads.append(threading.current_thread().name)
            release.wait(10)  # held until the test has seen the turn's done
        return fake(request)

    model = FunctionModel(answer, model="chat-model")
    s = model_summarizer(model, model="small", settings=ProviderSettings())
    assert s is not None and s.background_only and s.model == "small"
    engine = ChatEngine(
        store, model, budget=Budget(window=16_000, reserve=500), memory_factory=summarizing_memory(s)
    )
    user = store.create_user("ada")
    chat = store.create_chat(user.id)
    for text in TOPIC[:3]:
        result = await engine.run(user.id, chat.id, text)
        assert result.done.reason == "answer"
    assert [kind(r) for r in model.requests] == ["chat"] * 3  # no segment closed yet
    held = engine.memories.held(user.id, chat.id)
    assert held is not None
    done = None
    async for event in engine.turn(user.id, chat.id, TOPIC[3]):
        if isinstance(event, DoneEvent):
            done = event
            # The answer is out; S1 closed with the question but its summary is not made yet.
            first = held.memory.segments[0]
            assert first.closed and first.summary == ""
            release.set()
    assert done is not None and done.reason == "answer"
    kinds = [kind(r) for r in model.requests]
    assert kinds[:4] == ["chat"] * 4  # the turn's pack and answer came before any summary
    assert kinds[4] == "summary" and kinds.count("summary") == 1
    assert threads and threads[0] != threading.main_thread().name  # a worker thread, after done
    assert body(held.memory.segments[0].summary) == LAUNCH
    assert [body(seg.summary) for seg in store.list_segments(user.id, chat.id)][:1] == [LAUNCH]
    summary_request = model.requests[4]
    assert summary_request.model == "small" and summary_request.max_tokens == 400


# -- through the OpenAI-compatible endpoint --------------------------------------------------------


def endpoint(store: Store, answer: Any) -> tuple[Any, LLMSummarizer, FunctionModel]:
    model = FunctionModel(answer, model="upstream")
    s = model_summarizer(model, model="small", settings=ProviderSettings())
    assert s is not None
    engine = ChatEngine(
        store, model, budget=Budget(window=16_000, reserve=500), memory_factory=summarizing_memory(s)
    )
    return create_app(store, engine), s, model


async def ask_all(app: Any, after: Any = None) -> list[httpx.Response]:
    history: list[dict[str, Any]] = []
    responses = []
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as http:
        for text in TOPIC:
            history.append({"role": "user", "content": text})
            response = await http.post(
                "/v1/chat/completions", json={"messages": history}, headers={"X-Tierwise-Session": "s"}
            )
            assert response.status_code == 200, response.text
            responses.append(response)
            history.append(
                {"role": "assistant", "content": response.json()["choices"][0]["message"]["content"]}
            )
            if after is not None:
                await after(len(responses))
            await app.state.openai_sessions.drain()
    return responses


async def test_the_endpoint_has_the_upstream_summarise_while_it_answers(store: Store) -> None:
    threads: list[str] = []

    async def answer(request: ModelRequest) -> str:
        if kind(request) == "summary":
            threads.append(threading.current_thread().name)
        elif kind(request) == "chat" and "Lisbon" in str(request.messages[-1]["content"]):
            # The upstream answers slowly: the summary, made meanwhile, is ready before the answer.
            for _ in range(1000):
                if s.calls and not s.asking:
                    break
                await asyncio.sleep(0.01)
        return fake(request)

    app, s, model = endpoint(store, answer)
    await ask_all(app)
    kinds = [kind(r) for r in model.requests]
    assert kinds.count("summary") == 1 and kinds.index("summary") > kinds.index("chat")
    assert threads and threads[0] != threading.main_thread().name  # off the event loop
    (chat,) = store.list_chats(app.state.user_of(None), context_type="api")
    segments = store.list_segments(chat.user_id, chat.id)
    assert segments and body(segments[0].summary) == LAUNCH
    assert "merge" not in kinds  # the narrative's merge: never on the upkeep's path (next request's)


async def test_an_answer_never_waits_for_a_summary(store: Store) -> None:
    started, release, finished = threading.Event(), threading.Event(), threading.Event()

    async def answer(request: ModelRequest) -> str:
        if kind(request) == "summary":
            started.set()
            release.wait(10)  # the summary model hangs; the client must not notice
            finished.set()
        return fake(request)

    app, _, model = endpoint(store, answer)
    hanging: list[bool] = []

    async def after(answered: int) -> None:
        hanging.append(not release.is_set())
        if answered == len(TOPIC):  # the summary asked after the last answer hangs until now
            for _ in range(500):
                if started.is_set():
                    break
                await asyncio.sleep(0.01)
            assert started.is_set(), "the topic shift was never summarised"
            assert not finished.is_set(), "the answer waited for the summary model"
            release.set()

    await ask_all(app, after=after)
    assert hanging == [True] * len(TOPIC)
    (chat,) = store.list_chats(app.state.user_of(None), context_type="api")
    first = store.list_segments(chat.user_id, chat.id)[0]
    assert first.summary and first.summary != LAUNCH  # the answer overtook it: extractive
    assert [kind(r) for r in model.requests].count("summary") == 1  # asked once, never awaited


# -- replay ------------------------------------------------------------------------------------------


def test_replay_summarises_by_the_model_it_is_given() -> None:
    model = FunctionModel(fake)
    s = LLMSummarizer(SyncCompletion(model), model="small")
    messages: list[dict[str, Any]] = []
    for text in TOPIC:
        messages += [{"role": "user", "content": text}, {"role": "assistant", "content": "Noted."}]
    report = replay(messages, [None] * len(messages), Budget(window=4_000), counter=COUNTER, summarizer=s)
    assert report.lost == 0
    assert report.summaries is not None and report.summaries["model"] == "small"
    assert report.summaries["calls"] >= 1 and "summary" in [kind(r) for r in model.requests]
    assert report.to_dict()["summaries"] == report.summaries


async def test_the_endpoint_merges_the_narrative_off_the_path_at_the_next_request(store: Store) -> None:
    threads: list[str] = []

    def answer(request: ModelRequest) -> str:
        if kind(request) == "merge":
            threads.append(threading.current_thread().name)
        return fake(request)

    app, _, model = endpoint(store, answer)
    history: list[dict[str, Any]] = []
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as http:
        for text in [*TOPIC, "And which of them is open on Sundays?"]:
            history.append({"role": "user", "content": text})
            response = await http.post(
                "/v1/chat/completions", json={"messages": history}, headers={"X-Tierwise-Session": "m"}
            )
            assert response.status_code == 200, response.text
            history.append(
                {"role": "assistant", "content": response.json()["choices"][0]["message"]["content"]}
            )
            await app.state.openai_sessions.drain()
    kinds = [kind(r) for r in model.requests]
    assert kinds.count("merge") == 1 and kinds.index("merge") > kinds.index("summary")
    assert threads and threads[0] != threading.main_thread().name  # a worker thread
    (chat,) = store.list_chats(app.state.user_of(None), context_type="api")
    narrative = store.get_chat(chat.user_id, chat.id).narrative
    assert LAUNCH in narrative.get("prose", "")  # the model's narrative, merged with what is new


def test_a_summary_wanted_on_the_request_path_is_provisional_then_the_models() -> None:
    """A compaction step needs a summary inside a pack: extractive now, the model's at the next upkeep."""
    from tierwise.memory.assemble import pack_turn
    from tierwise.memory.engine import MemoryPolicy

    model = FunctionModel(fake)
    s = LLMSummarizer(SyncCompletion(model), model="small", counter=COUNTER, background_only=True)
    memory = Memory(summarizer=s, policy=MemoryPolicy(defer_summaries=True))
    for i in range(40):
        memory.add({"role": "user" if i % 2 == 0 else "assistant", "content": f"{TOPIC[i % 3]} Note {i}."})
    memory.add({"role": "user", "content": "Recommend vegetarian restaurants near Lisbon harbour tonight."})
    for i in range(12):
        memory.add({"role": "assistant" if i % 2 == 0 else "user", "content": f"Lisbon option {i}: a cafe."})
    pack_turn(memory, Budget(window=700), [{"role": "user", "content": "And on Sundays?"}])  # a step
    assert not any(kind(r) in ("summary", "merge") for r in model.requests)  # never on the path
    provisional = list(memory.upkeep.provisional)
    assert provisional and all(seg.summary for seg in provisional)  # extractive, for the pack
    assert memory.upkeep.unmerged and not memory.narrative.prose
    with off_request_path():
        memory.maintain()
    assert not memory.upkeep.provisional and not memory.upkeep.unmerged
    assert body(provisional[0].summary) == LAUNCH  # the model's, once it could be asked
    assert LAUNCH in memory.narrative.prose and memory.narrative.render() == memory.narrative.prose
    kinds = [kind(r) for r in model.requests]
    assert "summary" in kinds and kinds.count("merge") == 1  # every segment waiting, in one merge


async def test_a_message_sent_while_the_summary_is_made_waits_instead_of_being_refused(store: Store) -> None:
    release = threading.Event()

    def answer(request: ModelRequest) -> str:
        if kind(request) == "summary":
            release.wait(10)  # a slow summary model, after the turn's done
        return fake(request)

    model = FunctionModel(answer, model="chat-model")
    s = model_summarizer(model, model="small", settings=ProviderSettings())
    engine = ChatEngine(
        store, model, budget=Budget(window=16_000, reserve=500), memory_factory=summarizing_memory(s)
    )
    user = store.create_user("ada")
    chat = store.create_chat(user.id)
    for text in TOPIC[:3]:
        await engine.run(user.id, chat.id, text)
    first = asyncio.create_task(engine.run(user.id, chat.id, TOPIC[3]))  # closes S1: a summary after done
    for _ in range(500):
        if s.asking:
            break
        await asyncio.sleep(0.01)
    assert s.asking and not engine.is_running(user.id, chat.id)  # the turn is over; upkeep is not
    second = asyncio.create_task(engine.run(user.id, chat.id, "And which of them is open on Sundays?"))
    await asyncio.sleep(0.05)
    release.set()
    results = await asyncio.gather(first, second)
    assert [r.done.reason for r in results] == ["answer", "answer"]  # waited, not refused
