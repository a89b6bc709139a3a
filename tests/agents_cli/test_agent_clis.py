"""Real coding-agent CLIs through tierwise, offline: Codex CLI on ``/v1/responses``, Claude Code on
``/v1/messages``.

Opt-in — each run starts a real CLI (a native binary from npm), a few seconds each::

    npm install --prefix ~/agent-clis @openai/codex @anthropic-ai/claude-code
    TIERWISE_AGENT_CLIS=1 TIERWISE_AGENT_CLIS_PREFIX=~/agent-clis pytest tests/agents_cli -q -rP

The CLIs are looked up in ``$TIERWISE_AGENT_CLIS_PREFIX/node_modules/.bin``, then on ``PATH``; a CLI
found in neither is skipped with the command that installs it. Each test serves tierwise in a thread on
127.0.0.1 (as ``tierwise serve`` does, with its default 16,000-token budget) in front of
:class:`tests.fake_openai.FakeOpenAI`, a scripted Chat Completions upstream on loopback: its first
answer calls the CLI's own shell tool with a command that writes a file in the run's working
directory, its second is the final text. The CLI runs with a temporary home holding only the
configuration that points it at tierwise, its updates, telemetry and other traffic turned off; nothing
it is given reaches beyond loopback. Both CLIs stream (Codex's Responses client always, Claude Code's
``-p`` by default), so the runs exercise tierwise's streamed answers on both wires.

Each test checks: the CLI exits 0 and prints the final answer; the command ran (its file exists); the
upstream's second request carries the command's output as the result of the call it made, and no
request carries a field Chat Completions refuses; tierwise stored one chat for the run. A second run
continuing the first (``codex exec resume --last``, ``claude -p --continue``) must continue that chat,
not start another. ``-rP`` prints each run's record: the CLI's version, its exit code and the requests
it made to tierwise.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fake_openai import FakeOpenAI, FakeReply
from tierwise.budget import Budget
from tierwise.chat.engine import ChatEngine
from tierwise.providers import OpenAICompatProvider
from tierwise.server import create_app
from tierwise.server.threaded import serve_in_thread
from tierwise.store import Store

ENABLED = os.environ.get("TIERWISE_AGENT_CLIS") == "1"
PREFIX = os.environ.get("TIERWISE_AGENT_CLIS_PREFIX", "")
"""Read when the module is collected: the suite's autouse fixture clears ``TIERWISE_*`` for each test."""
HOW = (
    "opt-in, runs the real Codex CLI and Claude Code: set TIERWISE_AGENT_CLIS=1 and "
    "TIERWISE_AGENT_CLIS_PREFIX=<dir> after `npm install --prefix <dir> @openai/codex "
    "@anthropic-ai/claude-code` (or put codex and claude on PATH)"
)

pytestmark = pytest.mark.skipif(not ENABLED, reason=HOW)

MODEL = "gpt-4o-mini"
"""The upstream model tierwise sends (a 128k window it knows)."""
BUDGET, RESERVE = 16_000, 1_000
"""``tierwise serve``'s defaults."""
TIMEOUT_S = 120
ANSWER = "Done: made.txt now holds the marker."
MARKER = "made-through-tierwise"
COMMAND = f"echo {MARKER} > made.txt && cat made.txt"
"""What the scripted upstream asks the CLI's shell tool to run, in the run's working directory."""
CALL_ID, SECOND_CALL_ID = "call_cli_1", "call_cli_2"
# fmt: off
CHAT_COMPLETIONS_FIELDS = frozenset({
    "model", "messages", "stream", "stream_options", "tools", "tool_choice", "parallel_tool_calls",
    "temperature", "top_p", "n", "stop", "max_tokens", "max_completion_tokens", "presence_penalty",
    "frequency_penalty", "logit_bias", "logprobs", "top_logprobs", "user", "seed", "response_format",
    "metadata", "store", "service_tier", "reasoning_effort", "verbosity", "prompt_cache_key",
    "prompt_cache_retention", "safety_identifier", "modalities", "audio", "prediction", "web_search_options",
})
# fmt: on
"""The request fields api.openai.com's Chat Completions takes: it answers any other with a 400
("Unrecognized request argument supplied"), so a field only the CLI's own wire knows (Codex's
``client_metadata``, Claude Code's ``thinking``) must not reach the upstream."""


# -- the CLIs -----------------------------------------------------------------------------------------


def find_cli(name: str) -> str | None:
    """``name`` in ``$TIERWISE_AGENT_CLIS_PREFIX/node_modules/.bin``, else on ``PATH``."""
    if PREFIX:
        path = Path(PREFIX).expanduser() / "node_modules" / ".bin" / name
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
    return shutil.which(name)


def cli_or_skip(name: str, package: str) -> str:
    """The CLI's path, or skip naming how to install it."""
    found = find_cli(name)
    if found is None:
        where = f"{PREFIX}/node_modules/.bin nor on PATH" if PREFIX else "on PATH"
        pytest.skip(
            f"{name} is not {where}: npm install --prefix <dir> {package}, "
            "then TIERWISE_AGENT_CLIS_PREFIX=<dir>"
        )
    return found


@dataclass
class Run:
    """One CLI run: what it printed and how it ended."""

    argv: list[str]
    code: int | None
    stdout: str
    stderr: str
    seconds: float

    def explain(self, served: Served, upstream: FakeOpenAI) -> str:
        """Everything needed to see why a run failed."""
        return (
            f"argv: {self.argv}\nexit code: {self.code} after {self.seconds:.1f} s\n"
            f"tierwise answered: {served.from_cli}\nupstream got {len(upstream.requests)} request(s)\n"
            f"stdout (tail):\n{self.stdout[-3000:]}\nstderr (tail):\n{self.stderr[-3000:]}"
        )


def run_cli(argv: list[str], env: Mapping[str, str], cwd: Path) -> Run:
    """Run a CLI in its own process group with no stdin; kill the group after ``TIMEOUT_S``."""
    started = time.monotonic()
    process = subprocess.Popen(
        argv,
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=TIMEOUT_S)
        code: int | None = process.returncode
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        code = None
    return Run(argv, code, stdout, stderr, time.monotonic() - started)


def version(binary: str, env: Mapping[str, str]) -> str:
    """What ``binary --version`` prints."""
    done = subprocess.run(
        [binary, "--version"], env=dict(env), capture_output=True, text=True, timeout=60, check=False
    )
    return (done.stdout or done.stderr).strip()


def base_env(home: Path) -> dict[str, str]:
    """A CLI's environment: ``PATH`` (node, bash) and a temporary ``HOME``; nothing else inherited."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "NO_COLOR": "1",
    }


# -- tierwise and the upstream --------------------------------------------------------------------------


@dataclass
class _Log:
    """An ASGI wrapper noting every request's method, path and answer status."""

    app: Any
    seen: list[str] = field(default_factory=list)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def sending(message: Any) -> None:
            if message["type"] == "http.response.start":
                self.seen.append(f"{scope['method']} {scope['path']} {message['status']}")
            await send(message)

        await self.app(scope, receive, sending)


@dataclass
class Served:
    """tierwise on loopback: ``base`` (no ``/v1``), ``seen`` (each request it answered)."""

    base: str
    seen: list[str]

    @property
    def from_cli(self) -> list[str]:
        """The requests the CLI made (those of the test's own checks, on ``/api``, left out)."""
        return [s for s in self.seen if " /api/" not in s]

    def chats(self, *, messages: int, timeout: float = 15.0) -> list[dict[str, Any]]:
        """``GET /api/chats`` with earlier branches, once ``messages`` are stored (or the time is up)."""
        deadline = time.monotonic() + timeout
        with httpx.Client(base_url=self.base, timeout=10) as http:
            while True:
                listed = http.get("/api/chats", params={"include_superseded": "true"})
                listed.raise_for_status()
                chats: list[dict[str, Any]] = listed.json()["chats"]
                if sum(c["message_count"] for c in chats) >= messages or time.monotonic() > deadline:
                    return chats
                time.sleep(0.1)


@pytest.fixture
def upstream() -> Iterator[FakeOpenAI]:
    """The scripted Chat Completions upstream on 127.0.0.1."""
    server = FakeOpenAI().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def tierwise(upstream: FakeOpenAI, tmp_path: Path) -> Iterator[Served]:
    """tierwise's app served in a thread over ``upstream``, on a store of its own."""
    store = Store.open(f"sqlite:///{tmp_path / 'tierwise.db'}")
    provider = OpenAICompatProvider(base_url=upstream.url, api_key="k", model=MODEL)
    engine = ChatEngine(store, provider, budget=Budget(window=BUDGET, reserve=RESERVE))
    log = _Log(create_app(store, engine))
    try:
        with serve_in_thread(log) as base:
            yield Served(base, log.seen)
    finally:
        store.close()


def script_shell_round(
    upstream: FakeOpenAI, tool: str, arguments: Mapping[str, Any], *, call_id: str = CALL_ID
) -> None:
    """A call of the CLI's shell tool, then the final answer."""
    upstream.script(
        FakeReply(tool_calls=[{"id": call_id, "name": tool, "arguments": dict(arguments)}]),
        FakeReply(text=ANSWER),
    )


def _text(content: Any) -> str:
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content or "")


def check_round(run: Run, served: Served, upstream: FakeOpenAI, work: Path, tool: str) -> None:
    """The command ran, the upstream got its output as the call's result, and one chat was stored."""
    why = run.explain(served, upstream)
    assert run.code == 0, why
    assert (work / "made.txt").read_text().strip() == MARKER, why
    assert len(upstream.requests) == 2, why
    first, second = upstream.requests
    offered = [t.get("function", {}).get("name") for t in first.get("tools") or ()]
    assert tool in offered, f"{tool} not among the tools offered: {offered}"
    results = [m for m in second["messages"] if m.get("role") == "tool"]
    assert [m.get("tool_call_id") for m in results] == [CALL_ID], second["messages"][-3:]
    assert MARKER in _text(results[0].get("content")), results
    assert first.get("stream") is True and second.get("stream") is True
    for body in upstream.requests:
        assert set(body) <= CHAT_COMPLETIONS_FIELDS, sorted(set(body) - CHAT_COMPLETIONS_FIELDS)
    chats = served.chats(messages=4)
    assert len(chats) == 1, chats
    assert chats[0]["message_count"] >= 4, chats  # the task, the call, its result, the answer


def check_second_round(run: Run, served: Served, upstream: FakeOpenAI) -> None:
    """A second run continuing the first: the upstream got the first run's tool round again before the
    second's, and tierwise kept one chat."""
    why = run.explain(served, upstream)
    assert run.code == 0, why
    assert len(upstream.requests) == 4, why
    third, fourth = upstream.requests[2:]
    assert [m.get("tool_call_id") for m in third["messages"] if m.get("role") == "tool"] == [CALL_ID], why
    results = [m for m in fourth["messages"] if m.get("role") == "tool"]
    assert [m.get("tool_call_id") for m in results] == [CALL_ID, SECOND_CALL_ID], fourth["messages"][-3:]
    assert MARKER in _text(results[1].get("content")), results
    for body in upstream.requests:
        assert set(body) <= CHAT_COMPLETIONS_FIELDS, sorted(set(body) - CHAT_COMPLETIONS_FIELDS)
    chats = served.chats(messages=8)
    assert len(chats) == 1, chats
    assert chats[0]["message_count"] >= 8, chats  # two rounds of task, call, result, answer


def report(name: str, cli_version: str, run: Run, served: Served, upstream: FakeOpenAI) -> None:
    """The run's record, printed (``pytest -rP`` shows it)."""
    streamed = [r.get("stream") for r in upstream.requests]
    print(
        f"{name} {cli_version}: exit {run.code} in {run.seconds:.1f} s; tierwise answered {served.from_cli}; "
        f"upstream got {len(upstream.requests)} request(s), stream={streamed}"
    )


# -- Codex CLI → /v1/responses -------------------------------------------------------------------------

CODEX_CONFIG = """\
model = "{model}"
model_provider = "tierwise"
check_for_update_on_startup = false

[model_providers.tierwise]
name = "tierwise"
base_url = "{url}"
env_key = "TIERWISE_CODEX_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false

[otel]
exporter = "none"

[features]
plugins = false
remote_plugin = false
apps = false
plugin_sharing = false
in_app_updates = false
"""
"""A temporary ``CODEX_HOME``'s ``config.toml``: tierwise as a custom provider on the Responses wire."""


def codex_run(tierwise: Served, tmp_path: Path) -> tuple[list[str], dict[str, str], Path]:
    """``codex exec``'s argv (before the prompt), its environment and working directory, for a run
    with a temporary ``HOME`` and ``CODEX_HOME``."""
    codex = cli_or_skip("codex", "@openai/codex")
    home, codex_home, work = (tmp_path / d for d in ("home", "codex_home", "work"))
    for directory in (home, codex_home, work):
        directory.mkdir()
    (codex_home / "config.toml").write_text(CODEX_CONFIG.format(model=MODEL, url=f"{tierwise.base}/v1"))
    env = {**base_env(home), "CODEX_HOME": str(codex_home), "TIERWISE_CODEX_KEY": "any", "RUST_LOG": "warn"}
    argv = [codex, "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "--json"]
    return argv, env, work


def codex_items(run: Run) -> list[dict[str, Any]]:
    """The items ``codex exec --json`` reported completed."""
    events = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    assert "turn.completed" in {e.get("type") for e in events}, events
    return [e["item"] for e in events if e.get("type") == "item.completed"]


def test_codex_exec_runs_a_shell_command_through_tierwise(
    tierwise: Served, upstream: FakeOpenAI, tmp_path: Path
) -> None:
    """``codex exec`` → ``/v1/responses`` (streamed): its ``exec_command`` runs, then it answers."""
    argv, env, work = codex_run(tierwise, tmp_path)
    script_shell_round(upstream, "exec_command", {"cmd": COMMAND})

    run = run_cli([*argv, "Write the marker to made.txt with the shell."], env, work)

    check_round(run, tierwise, upstream, work, "exec_command")
    items = codex_items(run)
    commands = [i for i in items if i.get("type") == "command_execution"]
    assert [c.get("exit_code") for c in commands] == [0], run.explain(tierwise, upstream)
    assert MARKER in commands[0].get("aggregated_output", "")
    assert [i.get("text") for i in items if i.get("type") == "agent_message"] == [ANSWER]
    assert tierwise.from_cli == ["POST /v1/responses 200"] * 2, tierwise.seen
    report("codex", version(argv[0], env), run, tierwise, upstream)


def test_codex_exec_resume_continues_the_chat(tierwise: Served, upstream: FakeOpenAI, tmp_path: Path) -> None:
    """``codex exec resume --last`` sends the first run's conversation again: tierwise continues the
    same chat (Codex names it in ``prompt_cache_key``), it does not start another."""
    argv, env, work = codex_run(tierwise, tmp_path)
    script_shell_round(upstream, "exec_command", {"cmd": COMMAND})
    first = run_cli([*argv, "Write the marker to made.txt with the shell."], env, work)
    check_round(first, tierwise, upstream, work, "exec_command")
    script_shell_round(upstream, "exec_command", {"cmd": "cat made.txt"}, call_id=SECOND_CALL_ID)

    run = run_cli([*argv, "resume", "--last", "Show made.txt again."], env, work)

    check_second_round(run, tierwise, upstream)
    assert [i.get("text") for i in codex_items(run) if i.get("type") == "agent_message"] == [ANSWER]
    assert tierwise.from_cli == ["POST /v1/responses 200"] * 4, tierwise.seen
    report("codex resume", version(argv[0], env), run, tierwise, upstream)


# -- Claude Code → /v1/messages --------------------------------------------------------------------------


def claude_run(
    tierwise: Served, tmp_path: Path, key: str = "ANTHROPIC_API_KEY"
) -> tuple[list[str], dict[str, str], Path]:
    """``claude -p``'s argv (before the prompt), its environment and working directory, for a run
    with a temporary ``HOME`` and no traffic but to tierwise; ``key`` names the variable holding the
    key (``ANTHROPIC_API_KEY``: sent as ``x-api-key``; ``ANTHROPIC_AUTH_TOKEN``: as a bearer token)."""
    claude = cli_or_skip("claude", "@anthropic-ai/claude-code")
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    env = {
        **base_env(home),
        "ANTHROPIC_BASE_URL": tierwise.base,
        key: "any",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
    }
    argv = [claude, "--allowedTools", "Bash", "--output-format", "json", "-p"]
    return argv, env, work


def claude_result(run: Run) -> str:
    """The final answer ``claude -p --output-format json`` printed (it must not be an error)."""
    result = json.loads(run.stdout)
    assert result.get("is_error") is False, result
    return str(result.get("result")).strip()


@pytest.mark.parametrize("key", ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"])
def test_claude_p_runs_bash_through_tierwise(
    tierwise: Served, upstream: FakeOpenAI, tmp_path: Path, key: str
) -> None:
    """``claude -p`` → ``/v1/messages`` (streamed): its ``Bash`` tool runs, then it answers."""
    argv, env, work = claude_run(tierwise, tmp_path, key)
    script_shell_round(upstream, "Bash", {"command": COMMAND, "description": "Write the marker"})

    run = run_cli([*argv, "Write the marker to made.txt with bash."], env, work)

    check_round(run, tierwise, upstream, work, "Bash")
    assert claude_result(run) == ANSWER
    posts = [s for s in tierwise.from_cli if s.startswith("POST")]
    assert posts == ["POST /v1/messages 200"] * 2, tierwise.seen
    report(f"claude ({key})", version(argv[0], env), run, tierwise, upstream)


def test_claude_continue_continues_the_chat(tierwise: Served, upstream: FakeOpenAI, tmp_path: Path) -> None:
    """``claude -p --continue`` sends the first run's conversation again: tierwise continues the same
    chat, it does not start another."""
    argv, env, work = claude_run(tierwise, tmp_path)
    script_shell_round(upstream, "Bash", {"command": COMMAND, "description": "Write the marker"})
    first = run_cli([*argv, "Write the marker to made.txt with bash."], env, work)
    check_round(first, tierwise, upstream, work, "Bash")
    script_shell_round(
        upstream, "Bash", {"command": "cat made.txt", "description": "Show"}, call_id=SECOND_CALL_ID
    )

    run = run_cli([*argv, "--continue", "Show made.txt again."], env, work)

    check_second_round(run, tierwise, upstream)
    assert claude_result(run) == ANSWER
    posts = [s for s in tierwise.from_cli if s.startswith("POST")]
    assert posts == ["POST /v1/messages 200"] * 4, tierwise.seen
    report("claude --continue", version(argv[0], env), run, tierwise, upstream)
