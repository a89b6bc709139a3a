"""The terminal chat: the prompt loop with scripted input and models, and ``tierwise chat`` itself."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
import textwrap
import time
from collections.abc import AsyncIterator, Callable, Iterable
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from tierwise.chat import terminal
from tierwise.chat.engine import ChatEngine
from tierwise.chat.events import (
    DoneEvent,
    ErrorEvent,
    Notice,
    TextEvent,
    ToolCallComplete,
    ToolCallStart,
    TurnEvent,
    UsageEvent,
)
from tierwise.chat.terminal import LOCAL_USER, chat_loop, local_user, make_provider, render_turn
from tierwise.cli import app
from tierwise.providers import ModelRequest, ProviderError, ProviderNotConfigured, TextDelta
from tierwise.providers.testing import FunctionModel, Reply, Script, ScriptedModel, tool_call
from tierwise.store import Store
from tierwise.tools import tool

RUNNER = CliRunner()
SIGINT_WORKS = sys.platform != "win32" and hasattr(signal, "SIGINT")


@tool(tier="list")
def list_tasks(project: str, limit: int = 5) -> list[str]:
    """List a project's open tasks.

    Args:
        project: the project's name.
        limit: at most this many tasks.
    """
    return [f"{project} task {i}" for i in range(limit)]


@tool(tier="action")
def send_invoice(customer: str) -> str:
    """Send an invoice (always fails: the mail server is down)."""
    raise ConnectionError("mail server unreachable")


def lines(*given: str | None) -> Callable[[], str | None]:
    """A ``read_line`` that returns the given lines, then ends the input."""
    queue = list(given)

    def read() -> str | None:
        if not queue:
            raise EOFError
        return queue.pop(0)

    return read


def console() -> Console:
    return Console(record=True, width=100)


def setup(store: Store, model: ScriptedModel) -> tuple[ChatEngine, str]:
    engine = ChatEngine(store, model, tools=[list_tasks, send_invoice])
    return engine, local_user(store)


def text_of(screen: Console) -> str:
    return screen.export_text()


pytestmark = pytest.mark.anyio


# -- the loop -------------------------------------------------------------------------------------


async def test_an_answer_with_a_tool_call_usage_and_title(store: Store) -> None:
    model = ScriptedModel(
        tool_call("list_tasks", project="Launch", limit=2), "Launch has **two** open tasks."
    )
    engine, user = setup(store, model)
    screen = console()

    chat = await chat_loop(
        engine, user, None, screen, lines("", "What is open in Launch?", "/title", "/exit")
    )

    out = text_of(screen)
    assert chat is not None
    assert '→ list_tasks(project="Launch", limit=2)' in out
    assert re.search(r"✓ list_tasks · \d+ ms", out)
    assert "Launch has two open tasks." in out  # rendered as markdown: no asterisks
    assert "**" not in out
    assert re.search(
        r"[\d,]+ prompt \+ \d+ completion tokens · price unknown · context [\d.]+% of 15,000", out
    )
    assert out.count("title: What is open in Launch") == 2  # when made, and on /title
    assert out.rstrip().endswith(f"tierwise chat --session {chat}")
    # the tool line comes before the answer, the usage line after it
    assert out.index("→ list_tasks") < out.index("Launch has two") < out.index("completion tokens")
    roles = [m.message["role"] for m in store.list_messages(user, chat)]
    assert roles == ["user", "assistant", "tool", "assistant"]  # the empty line was ignored


async def test_a_failing_tool_and_a_failing_model_are_shown(store: Store) -> None:
    model = ScriptedModel(
        tool_call("send_invoice", customer="ACME"),
        "The mail server is down.",
        ProviderError("HTTP 500: overloaded", status=500),
    )
    engine, user = setup(store, model)
    screen = console()

    await chat_loop(engine, user, None, screen, lines("Invoice ACME", "Try again"))

    out = text_of(screen)
    assert '→ send_invoice(customer="ACME")' in out
    assert "✗ send_invoice: " in out and "mail server unreachable" in out
    assert "The mail server is down." in out
    assert "error: the model failed: HTTP 500: overloaded" in out


async def test_commands_and_new_chats(store: Store) -> None:
    model = ScriptedModel("First answer.", "Second answer.")
    engine, user = setup(store, model)
    screen = console()

    last = await chat_loop(
        engine, user, None, screen, lines("/title", "/help", "/nope", "One", "/new", "Two", None)
    )

    out = text_of(screen)
    assert "no title yet" in out
    assert "/new starts a new chat" in out
    assert "unknown command /nope; /help lists the commands" in out
    chats = store.list_chats(user)
    assert len(chats) == 2 and last is not None
    first = next(c.id for c in chats if c.id != last)
    assert f"new chat (to return to the last one: tierwise chat --session {first})" in out
    assert [m.content for m in store.list_messages(user, first)] == ["One", "First answer."]
    assert [m.content for m in store.list_messages(user, last)] == ["Two", "Second answer."]
    assert out.rstrip().endswith(f"tierwise chat --session {last}")


async def test_leaving_before_saying_anything_creates_no_chat(store: Store) -> None:
    engine, user = setup(store, ScriptedModel())
    screen = console()

    def interrupted() -> str:
        raise KeyboardInterrupt

    assert await chat_loop(engine, user, None, screen, interrupted) is None
    assert store.list_chats(user) == []
    assert text_of(screen).rstrip().endswith("bye")


@pytest.mark.skipif(not SIGINT_WORKS, reason="needs POSIX signals")
async def test_ctrl_c_stops_the_turn_then_ctrl_c_at_the_prompt_leaves(store: Store) -> None:
    slow = Script(TextDelta("The venue "), TextDelta("is booked "), TextDelta("for Friday."), delay=5)
    replies: list[Reply] = [slow, "Yes, Friday."]
    loop = asyncio.get_running_loop()

    def answer(request: ModelRequest) -> Reply:
        if replies[0] is slow:  # Ctrl-C while this answer streams (the turn is under way)
            loop.call_later(0.2, os.kill, os.getpid(), signal.SIGINT)
        return replies.pop(0)

    engine = ChatEngine(store, FunctionModel(answer))
    user = local_user(store)
    screen = console()
    script = ["Is the venue booked?", "Well?"]
    leaked: list[str] = []

    def read() -> str:
        if script:
            return script.pop(0)
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C at the prompt: KeyboardInterrupt right here
        time.sleep(2)
        leaked.append("the prompt's Ctrl-C was not delivered")
        return "/exit"

    before = signal.getsignal(signal.SIGINT)
    async with asyncio.timeout(4):  # far less than the slow stream's 10 s
        chat = await chat_loop(engine, user, None, screen, read)

    assert signal.getsignal(signal.SIGINT) is before and not leaked
    out = text_of(screen)
    assert "The venue" in out and "for Friday" not in out
    assert "stopped; what was said so far is kept" in out
    assert "Yes, Friday." in out
    assert out.rstrip().endswith(f"tierwise chat --session {chat}")
    assert chat is not None
    stored = store.list_messages(user, chat)
    assert [m.content for m in stored] == ["Is the venue booked?", "The venue ", "Well?", "Yes, Friday."]
    assert stored[1].metadata["stopped"] is True


async def test_session_shows_the_last_messages_and_answers_a_pending_one(store: Store) -> None:
    engine, user = setup(store, ScriptedModel("Friday at 10."))
    chat = store.create_chat(user, title="Review planning").id
    long = "When is the review? " + "More detail. " * 30
    for message in (
        {"role": "user", "content": "Plan the review"},
        {"role": "assistant", "content": "Sure: who attends?"},
        {"role": "user", "content": long},  # stored, then the process died: never answered
    ):
        store.add_message(user, chat, message, token_count=5)
    assert engine.pending(user, chat)
    screen = console()

    await chat_loop(engine, user, chat, screen, lines("/exit"), resumed=True)

    out = text_of(screen)
    assert "resuming “Review planning” · 3 messages" in out
    assert "you › Plan the review" in out and "assistant › Sure: who attends?" in out
    assert "you › When is the review? More detail." in out and "…" in out  # abbreviated
    assert "never answered; answering it now" in out
    assert out.index("answering it now") < out.index("Friday at 10.")
    assert not engine.pending(user, chat)
    assert [m.message["role"] for m in store.list_messages(user, chat)][-2:] == ["user", "assistant"]


async def test_render_turn_shows_notices_errors_and_the_band() -> None:
    async def events() -> AsyncIterator[TurnEvent]:
        for event in [
            Notice("retry", "m: HTTP 429; retrying in 0.5 s"),
            TextEvent("Partly "),
            TextEvent("there"),
            ToolCallStart("c1", "list_tasks", "not json", 1),
            ToolCallComplete("c1", "list_tasks", "[]", True, 7),
            UsageEvent(
                {"summary": {"utilizationPercent": 61.2, "limit": 7000}},
                4300,
                20,
                0.0123,
                True,
                0.5,
                "warning",
            ),
            ErrorEvent("the model failed: boom"),
            DoneEvent("c", "step_limit", "Partly there", title="A title"),
        ]:
            yield event

    screen = console()
    done = await render_turn(events(), screen)

    assert done is not None and done.reason == "step_limit"
    out = text_of(screen)
    expected: Iterable[str] = [
        "m: HTTP 429; retrying in 0.5 s",
        "Partly there",
        "→ list_tasks(not json)",
        "✓ list_tasks · 7 ms",
        "4,300 prompt + 20 completion tokens · $0.012 · context 61.2% of 7,000",
        "band warning (health 50%)",
        "error: the model failed: boom",
        "the turn reached its step limit",
        "title: A title",
    ]
    positions = [out.index(piece) for piece in expected]
    assert positions == sorted(positions)


# -- the command ----------------------------------------------------------------------------------


def test_make_provider_takes_the_model_option(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIERWISE_BASE_URL", "http://localhost:11434/v1")
    monkeypatch.setenv("TIERWISE_MODEL", "llama3.1:8b")
    assert make_provider().model == "llama3.1:8b"
    assert make_provider("qwen2.5:7b").model == "qwen2.5:7b"
    monkeypatch.delenv("TIERWISE_BASE_URL")
    with pytest.raises(ProviderNotConfigured, match="TIERWISE_BASE_URL"):
        make_provider("qwen2.5:7b")


def test_chat_with_half_a_provider_says_what_to_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIERWISE_BASE_URL", "http://localhost:11434/v1")
    result = RUNNER.invoke(app, ["chat"], input="hello\n")

    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: no model provider is configured")
    for needle in ("TIERWISE_MODEL", "TIERWISE_API_KEY", "OpenAI:", "Ollama:"):
        assert needle in result.output
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_chat_without_a_provider_runs_the_offline_assistant(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'chat.db'}"
    result = RUNNER.invoke(
        app,
        ["chat", "--db", db],
        input=(
            "What are my high priority tasks for the Q4 launch?\n"
            "Tell me more about the API documentation task\n"
            "Show me my active projects\n"
            "I want to work on the Q4 launch project\n"
        ),
    )

    assert result.exit_code == 0, result.output
    assert "offline assistant" in result.output and "TIERWISE_BASE_URL" in result.output
    assert "loaded the sample workspace" in result.output
    assert "search_projects" in result.output and "list_tasks" in result.output
    assert "get_task_details" in result.output
    assert "Design API documentation portal" in result.output
    assert "Website Redesign · active" in result.output  # active projects, on a page cut to its tokens
    assert "get_project_details" in result.output and "Q4 Product Launch · active" in result.output
    assert "Traceback" not in result.output
    again = RUNNER.invoke(app, ["chat", "--db", db], input="hi\n")
    assert "loaded the sample workspace" not in again.output  # only on first use


def test_chat_with_an_unknown_session_says_how_to_start_one() -> None:
    result = RUNNER.invoke(app, ["chat", "--session", "nope"])

    assert result.exit_code == 2, result.output
    assert result.output.splitlines() == [
        "error: no stored chat 'nope'; run `tierwise chat` without --session to start a new one"
    ]


def test_chat_with_a_budget_below_the_reserve_fails_cleanly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(terminal, "make_provider", lambda model=None, **_: ScriptedModel())
    result = RUNNER.invoke(app, ["chat", "--budget", "500"])

    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: ") and "Traceback" not in result.output


def test_chat_then_resume_it_with_session(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    model = ScriptedModel("Friday at 10.", "Review time", "At the office.")
    monkeypatch.setattr(terminal, "make_provider", lambda model_name=None, **_: model)
    db = f"sqlite:///{tmp_path / 'chat.db'}"

    first = RUNNER.invoke(app, ["chat", "--db", db], input="When is the review?\n")

    assert first.exit_code == 0, first.output
    assert "Friday at 10." in first.output and "title: Review time" in first.output
    found = re.search(r"tierwise chat --session (\S+)", first.output)
    assert found is not None
    chat = found.group(1)

    again = RUNNER.invoke(app, ["chat", "-s", chat, "--db", db], input="Where?\n/exit\n")

    assert again.exit_code == 0, again.output
    assert "resuming “Review time” · 2 messages" in again.output
    assert "you › When is the review?" in again.output and "assistant › Friday at 10." in again.output
    assert "At the office." in again.output
    with Store.open(db) as store:
        assert store.get_user(LOCAL_USER).id == LOCAL_USER
        assert [m.content for m in store.list_messages(LOCAL_USER, chat)] == [
            "When is the review?",
            "Friday at 10.",
            "Where?",
            "At the office.",
        ]


@pytest.mark.skipif(not SIGINT_WORKS, reason="needs a POSIX terminal")
def test_ctrl_c_on_a_real_terminal(tmp_path: Path) -> None:
    pexpect = pytest.importorskip("pexpect")
    script = tmp_path / "fake_chat.py"
    script.write_text(
        textwrap.dedent(
            """
            import sys
            from tierwise.chat import terminal
            from tierwise.cli import app
            from tierwise.providers import TextDelta
            from tierwise.providers.testing import Script, ScriptedModel

            slow = Script(TextDelta("The venue "), TextDelta("is booked."), delay=30)
            model = ScriptedModel(slow, "Friday.", "Venue")
            terminal.make_provider = lambda name=None, **_: model
            sys.argv = ["tierwise", "chat", "--db", sys.argv[1]]
            app()
            """
        ),
        encoding="utf-8",
    )
    child = pexpect.spawn(
        sys.executable,
        [str(script), f"sqlite:///{tmp_path / 'chat.db'}"],
        encoding="utf-8",
        timeout=60,  # each expect returns when its text shows; a busy machine only makes it later
        dimensions=(40, 100),
    )
    try:
        child.expect("you ›")
        child.sendline("Is the venue booked?")
        child.expect("The venue")
        child.sendintr()  # stops the answer, not the program
        child.expect("stopped; what was said so far is kept")
        child.expect("you ›")
        child.sendline("And now?")
        child.expect("Friday.")
        child.expect("you ›")
        child.sendintr()  # at the prompt: leaves, saying how to come back
        child.expect(r"tierwise chat --session \S+")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0


def test_housekeeping_calls_are_named_for_what_they_did_never_by_hash() -> None:
    from tierwise.chat.terminal import housekeeping_label, tool_start_line

    sha = "7462eddc93a59a26459cf782c2e260adec58130b926fa99ebc068bd276aaf59a"
    opened = tool_start_line(ToolCallStart("c1", "open_blob", f'{{"sha256": "{sha}", "start": 6000}}', 1))
    assert opened == "→ read a stored tool result in full (bytes 6,000–end)"
    assert sha[:8] not in opened
    recalled = ToolCallStart("c2", "recall_segments", '{"ids": ["S12", "S3"], "form": "full"}', 1)
    assert tool_start_line(recalled) == "→ recalled S12, S3 (full)"
    assert housekeeping_label("recall_segments", '{"ids": "S4; S5"}') == "recalled S4, S5 (summary)"
    decided = housekeeping_label("record_decision", {"decision": "Venue: Lisbon"})
    assert decided == "noted a decision: Venue: Lisbon"
    assert housekeeping_label("update_narrative", "not json") == "updated the conversation's narrative"
    assert housekeeping_label("list_tasks", "{}") is None


def test_engine_tools_read_as_words_in_live_lines_never_as_their_names() -> None:
    from tierwise.chat.terminal import tool_complete_line, tool_start_line

    asked = ToolCallStart("c1", "more_tools", '{"names": ["create_event", "find_free_time"]}', 1)
    assert tool_start_line(asked) == "→ asked for more tools: create_event, find_free_time"
    for name in ("more_tools", "open_blob", "recall_segments", "update_narrative", "record_decision"):
        line = tool_complete_line(ToolCallComplete("c1", name, "ok", True, 2))
        assert name not in line and line.endswith("· 2 ms")
    assert tool_complete_line(ToolCallComplete("c2", "list_tasks", "[]", True, 5)) == "✓ list_tasks · 5 ms"


def test_the_usage_line_says_when_prompt_tokens_add_up_several_model_calls() -> None:
    from tierwise.chat.terminal import usage_line

    report = {"summary": {"utilizationPercent": 9.0, "limit": 15000}}
    assert usage_line(UsageEvent(report, 5400, 60, 0.0, True, model_calls=3)).startswith(
        "3 model calls: 5,400 prompt + 60 completion tokens"
    )
    assert usage_line(UsageEvent(report, 1800, 20, 0.0, True)).startswith("1,800 prompt + 20")
