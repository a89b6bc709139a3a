"""Real coding-agent CLIs through tierwise, offline: Codex CLI on ``/v1/responses``, Claude Code on
``/v1/messages``, each in front of each kind of upstream tierwise speaks (Chat Completions, Responses,
Anthropic Messages).

Opt-in — each run starts a real CLI (a native binary from npm), a few seconds each::

    npm install --prefix ~/agent-clis @openai/codex @anthropic-ai/claude-code
    TIERWISE_AGENT_CLIS=1 TIERWISE_AGENT_CLIS_PREFIX=~/agent-clis pytest tests/agents_cli -q -rP

The CLIs are looked up in ``$TIERWISE_AGENT_CLIS_PREFIX/node_modules/.bin``, then on ``PATH``; a CLI
found in neither is skipped with the command that installs it. Each test serves tierwise in a thread on
127.0.0.1 (as ``tierwise serve`` does, with its default 16,000-token budget) in front of a scripted
upstream on loopback, once per kind (:mod:`tests.agents_cli.upstreams`: one small adapter per wire over
:class:`tests.fake_openai.FakeOpenAI`, :class:`tests.fake_responses.FakeResponses`,
:class:`tests.fake_anthropic.FakeAnthropic`): its first answer calls the CLI's own shell tool with a
command that writes a file in the run's working directory, its second is the final text. The CLI runs
with a temporary home holding only the configuration that points it at tierwise, its updates,
telemetry and other traffic turned off; nothing it is given reaches beyond loopback. Both CLIs stream
(Codex's Responses client always, Claude Code's ``-p`` by default), so the runs exercise tierwise's
streamed answers on both wires, and every upstream is asked to stream.

Each test checks: the CLI exits 0 and prints the final answer; the command ran (its file exists); the
upstream's second request carries the command's output as the result of the call it made, in its
wire's shape; no request carries a field the upstream's API refuses (nor Anthropic's headers, but to
an Anthropic upstream); tierwise stored one chat for the run. When the CLI and the upstream speak the
same wire (Codex → Responses, Claude Code → Anthropic), what tierwise does not touch must reach the
upstream as the CLI sent it (:func:`check_codex_as_sent`, :func:`check_claude_as_sent`). A second run
continuing the first (``codex exec resume --last``, ``claude -p --continue``) must continue that chat,
not start another. ``-rP`` prints each run's record: the CLI's version, its exit code, the requests it
made to tierwise and what reached the upstream; ``TIERWISE_AGENT_CLIS_DUMP=<dir>`` writes both sides of
every request to ``<dir>`` (:func:`dump`).
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

from tests.agents_cli.upstreams import KINDS, AnthropicUpstream, Upstream
from tierwise.budget import Budget
from tierwise.chat.engine import ChatEngine
from tierwise.server import create_app
from tierwise.server.threaded import serve_in_thread
from tierwise.store import Store

ENABLED = os.environ.get("TIERWISE_AGENT_CLIS") == "1"
PREFIX = os.environ.get("TIERWISE_AGENT_CLIS_PREFIX", "")
"""Read when the module is collected: the suite's autouse fixture clears ``TIERWISE_*`` for each test."""
DUMP = os.environ.get("TIERWISE_AGENT_CLIS_DUMP", "")
"""A directory to write each run's requests to (:func:`dump`); read at collection, as ``PREFIX``."""
HOW = (
    "opt-in, runs the real Codex CLI and Claude Code: set TIERWISE_AGENT_CLIS=1 and "
    "TIERWISE_AGENT_CLIS_PREFIX=<dir> after `npm install --prefix <dir> @openai/codex "
    "@anthropic-ai/claude-code` (or put codex and claude on PATH)"
)

pytestmark = pytest.mark.skipif(not ENABLED, reason=HOW)

MODEL = "gpt-4o-mini"
"""The model Codex is configured with (tierwise sends the upstream adapter's own)."""
CLAUDE_MODEL = AnthropicUpstream.model
"""The model Claude Code asks for: the one the Anthropic upstream serves, as a deployment would set
it. Claude Code's ``--continue`` takes up the model named in the answers it got (tierwise names the
upstream's) and shapes its request for that model (its betas, where its system reminders go), so a
CLI asking for another model than the upstream's resends its conversation reshaped (see
``test_claude_continue_continues_the_chat``)."""
BUDGET, RESERVE = 16_000, 1_000
"""``tierwise serve``'s defaults."""
TIMEOUT_S = 120
ANSWER = "Done: made.txt now holds the marker."
MARKER = "made-through-tierwise"
COMMAND = f"echo {MARKER} > made.txt && cat made.txt"
"""What the scripted upstream asks the CLI's shell tool to run, in the run's working directory."""
CALL_ID, SECOND_CALL_ID = "call_cli_1", "call_cli_2"

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

    def explain(self, served: Served, upstream: Upstream) -> str:
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


@dataclass(frozen=True)
class Sent:
    """A request the CLI sent to tierwise: its path, headers (lowercase names) and JSON body."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class _Log:
    """An ASGI wrapper noting every request's method, path and answer status, and each POST's body."""

    app: Any
    seen: list[str] = field(default_factory=list)
    sent: list[Sent] = field(default_factory=list)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []

        async def receiving() -> Any:
            message = await receive()
            if message["type"] == "http.request" and scope["method"] == "POST":
                chunks.append(message.get("body", b""))
                if not message.get("more_body"):
                    headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
                    try:
                        body = json.loads(b"".join(chunks) or b"{}")
                    except ValueError:  # not JSON: tierwise answers it; nothing to compare
                        body = {}
                    self.sent.append(Sent(scope["path"], headers, body if isinstance(body, dict) else {}))
            return message

        async def sending(message: Any) -> None:
            if message["type"] == "http.response.start":
                self.seen.append(f"{scope['method']} {scope['path']} {message['status']}")
            await send(message)

        await self.app(scope, receiving, sending)


@dataclass
class Served:
    """tierwise on loopback: ``base`` (no ``/v1``), ``seen`` (each request it answered), ``sent`` (the
    CLI's requests, bodies and headers, in order)."""

    base: str
    seen: list[str]
    sent: list[Sent]

    @property
    def posts(self) -> list[Sent]:
        """The CLI's model requests (``/v1/...`` POSTs)."""
        return [s for s in self.sent if s.path.startswith("/v1/")]

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


@pytest.fixture(params=sorted(KINDS))
def upstream(request: pytest.FixtureRequest) -> Iterator[Upstream]:
    """The scripted upstream on 127.0.0.1, of each kind in turn (chat, responses, anthropic)."""
    server = KINDS[request.param]()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def tierwise(upstream: Upstream, tmp_path: Path) -> Iterator[Served]:
    """tierwise's app served in a thread over ``upstream``, on a store of its own."""
    store = Store.open(f"sqlite:///{tmp_path / 'tierwise.db'}")
    engine = ChatEngine(store, upstream.provider(), budget=Budget(window=BUDGET, reserve=RESERVE))
    log = _Log(create_app(store, engine))
    try:
        with serve_in_thread(log) as base:
            yield Served(base, log.seen, log.sent)
    finally:
        store.close()


def script_shell_round(
    upstream: Upstream, tool: str, arguments: Mapping[str, Any], *, call_id: str = CALL_ID
) -> None:
    """A call of the CLI's shell tool, then the final answer."""
    upstream.script_round(tool, arguments, call_id, ANSWER)


def check_fields(served: Served, upstream: Upstream, wire: str) -> None:
    """Every upstream request has only fields its wire's API takes; when the CLI spoke the upstream's
    wire (``wire``), the CLI's own fields count as such (it sends them to that API itself). Anthropic's
    headers reach only an Anthropic upstream."""
    own = {k for s in served.posts for k in s.body} if wire == upstream.kind else set()
    for body, headers in zip(upstream.requests, upstream.headers, strict=True):
        assert set(body) <= upstream.fields | own, sorted(set(body) - upstream.fields - own)
        if upstream.kind != "anthropic":
            assert not [h for h in headers if h.startswith("anthropic-")], headers


def as_sent_pairs(served: Served, upstream: Upstream) -> list[tuple[Sent, dict[str, Any], dict[str, str]]]:
    """Each CLI request with the upstream request tierwise made of it (and that request's headers)."""
    assert len(served.posts) == len(upstream.requests), (served.seen, len(upstream.requests))
    return list(zip(served.posts, upstream.requests, upstream.headers, strict=True))


def _without(value: Any, keys: frozenset[str]) -> Any:
    """``value`` with ``keys`` left out of every object in it, at any depth."""
    if isinstance(value, dict):
        return {k: _without(v, keys) for k, v in value.items() if k not in keys}
    if isinstance(value, list):
        return [_without(v, keys) for v in value]
    return value


RESPONSES_REBUILT = frozenset({"model", "input", "instructions", "tools", "stream"})
"""What a Responses upstream gets from tierwise's pack and configuration, not from the client's body."""


def check_codex_as_sent(served: Served, upstream: Upstream) -> None:
    """Codex → a Responses upstream (the same wire): every field of Codex's request reaches the
    upstream as Codex sent it (``reasoning``, ``include``, ``store``, ``prompt_cache_key``,
    ``client_metadata``…), and so do its tools (function, ``namespace``, hosted ``web_search``: same
    order, same definitions), its input items (developer messages where they were: Codex sends no
    ``instructions``), and its lack of ``instructions``. Only ``model`` is tierwise's (the upstream's).
    Aside: the items' ``id`` and ``status``, which an upstream reads back only what it stored
    (``store: false`` here), and an answer's ``logprobs: []`` (tierwise sends its stored answers
    again as their text and annotations)."""
    item_ids = frozenset({"id", "status", "logprobs"})
    for sent, body, _ in as_sent_pairs(served, upstream):
        own = sent.body
        assert body["model"] == upstream.model and body["stream"] is True
        kept = {k: v for k, v in own.items() if k not in RESPONSES_REBUILT}
        assert {k: body.get(k) for k in kept} == kept, sorted(k for k in kept if body.get(k) != kept[k])
        assert set(body) - RESPONSES_REBUILT == set(kept), sorted(set(body) ^ set(own))
        assert body.get("instructions") == own.get("instructions")
        assert body.get("tools") == own.get("tools"), (
            [(t.get("type"), t.get("name")) for t in own.get("tools") or ()],
            [(t.get("type"), t.get("name")) for t in body.get("tools") or ()],
        )
        assert _without(body["input"], item_ids) == _without(own["input"], item_ids)


ANTHROPIC_REBUILT = frozenset({"model", "messages", "system", "tools", "max_tokens", "stream"})
"""What an Anthropic upstream gets from tierwise's pack and configuration, not from the client's body."""
CACHE_CONTROL = frozenset({"cache_control"})


def _blocks(content: Any) -> Any:
    """Anthropic content (or ``system``) as blocks: a string is one text block."""
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


def _marks(value: Any) -> int:
    """How many ``cache_control`` markers ``value`` holds, at any depth."""
    if isinstance(value, dict):
        return ("cache_control" in value) + sum(_marks(v) for v in value.values())
    if isinstance(value, list):
        return sum(_marks(v) for v in value)
    return 0


def check_claude_as_sent(served: Served, upstream: Upstream) -> None:
    """Claude Code → an Anthropic upstream (the same wire): its ``anthropic-version`` and
    ``anthropic-beta`` headers, and every field of its request (``thinking``, ``metadata``,
    ``context_management``, ``output_config``…), reach the upstream as sent; its system blocks,
    tools and messages too — the mid-conversation system message where it was (Claude Code sends
    the ``mid-conversation-system`` beta) — ``cache_control`` markers aside: tierwise places them, at
    most 4. ``model`` is the upstream's, ``max_tokens`` at most what Claude Code asked."""
    for sent, body, headers in as_sent_pairs(served, upstream):
        own = sent.body
        for name in ("anthropic-version", "anthropic-beta"):
            assert headers.get(name) == sent.headers.get(name), (name, headers.get(name))
        assert body["model"] == upstream.model and body["stream"] is True
        assert 0 < body["max_tokens"] <= own["max_tokens"]
        kept = {k: v for k, v in own.items() if k not in ANTHROPIC_REBUILT}
        assert {k: body.get(k) for k in kept} == kept, sorted(k for k in kept if body.get(k) != kept[k])
        assert set(body) - ANTHROPIC_REBUILT == set(kept), sorted(set(body) ^ set(own))
        assert _without(_blocks(body.get("system")), CACHE_CONTROL) == _without(
            _blocks(own.get("system")), CACHE_CONTROL
        )
        assert _without(body.get("tools"), CACHE_CONTROL) == _without(own.get("tools"), CACHE_CONTROL)
        messages = [{**m, "content": _blocks(m["content"])} for m in own["messages"]]
        assert _without(body["messages"], CACHE_CONTROL) == _without(messages, CACHE_CONTROL)
        assert _marks(body) <= 4, _marks(body)


def dump(served: Served, upstream: Upstream) -> None:
    """With ``TIERWISE_AGENT_CLIS_DUMP=<dir>``: the CLI's requests and the upstream's, side by side, in
    ``<dir>/<test id>.json`` (written before a test's checks, so a failing one's too)."""
    if not DUMP:
        return
    test = os.environ.get("PYTEST_CURRENT_TEST", "run").split(" ")[0].split("::")[-1]
    sent = [{"path": s.path, "headers": s.headers, "body": s.body} for s in served.posts]
    got = [{"headers": h, "body": b} for h, b in zip(upstream.headers, upstream.requests, strict=True)]
    path = Path(DUMP) / f"{test.replace('/', '_')}.json"
    path.write_text(json.dumps({"cli": sent, "upstream": got}, indent=1))


def check_round(run: Run, served: Served, upstream: Upstream, work: Path, tool: str, wire: str) -> None:
    """The command ran, the upstream got its output as the call's result, and one chat was stored."""
    dump(served, upstream)
    why = run.explain(served, upstream)
    assert run.code == 0, why
    assert (work / "made.txt").read_text().strip() == MARKER, why
    assert len(upstream.requests) == 2, why
    first, second = upstream.requests
    offered = upstream.offered(first)
    assert tool in offered, f"{tool} not among the tools offered: {offered}"
    results = upstream.results(second)
    assert [call_id for call_id, _ in results] == [CALL_ID], why
    assert MARKER in results[0][1], results
    assert first.get("stream") is True and second.get("stream") is True
    check_fields(served, upstream, wire)
    chats = served.chats(messages=4)
    assert len(chats) == 1, chats
    assert chats[0]["message_count"] >= 4, chats  # the task, the call, its result, the answer


def check_second_round(run: Run, served: Served, upstream: Upstream, wire: str) -> None:
    """A second run continuing the first: the upstream got the first run's tool round again before the
    second's, and tierwise kept one chat."""
    dump(served, upstream)
    why = run.explain(served, upstream)
    assert run.code == 0, why
    assert len(upstream.requests) == 4, why
    third, fourth = upstream.requests[2:]
    assert [call_id for call_id, _ in upstream.results(third)] == [CALL_ID], why
    results = upstream.results(fourth)
    assert [call_id for call_id, _ in results] == [CALL_ID, SECOND_CALL_ID], why
    assert MARKER in results[1][1], results
    check_fields(served, upstream, wire)
    chats = served.chats(messages=8)
    assert len(chats) == 1, chats
    assert chats[0]["message_count"] >= 8, chats  # two rounds of task, call, result, answer


def report(name: str, cli_version: str, run: Run, served: Served, upstream: Upstream) -> None:
    """The run's record, printed (``pytest -rP`` shows it)."""
    streamed = [r.get("stream") for r in upstream.requests]
    fields = sorted({k for r in upstream.requests for k in r})
    wire_headers = sorted({h for hs in upstream.headers for h in hs if h.startswith("anthropic-")})
    tools = sorted(
        {f"{t.get('type')}:{t.get('name')}" for r in upstream.requests for t in r.get("tools") or ()}
    )
    print(
        f"{name} {cli_version} -> {upstream.kind} upstream: exit {run.code} in {run.seconds:.1f} s; "
        f"tierwise answered {served.from_cli}; upstream got {len(upstream.requests)} request(s), "
        f"stream={streamed}, fields {fields}, anthropic headers {wire_headers}, tools {tools}, "
        f"cache_control marks {[_marks(r) for r in upstream.requests]}"
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
    tierwise: Served, upstream: Upstream, tmp_path: Path
) -> None:
    """``codex exec`` → ``/v1/responses`` (streamed): its ``exec_command`` runs, then it answers."""
    argv, env, work = codex_run(tierwise, tmp_path)
    script_shell_round(upstream, "exec_command", {"cmd": COMMAND})

    run = run_cli([*argv, "Write the marker to made.txt with the shell."], env, work)

    check_round(run, tierwise, upstream, work, "exec_command", "responses")
    items = codex_items(run)
    commands = [i for i in items if i.get("type") == "command_execution"]
    assert [c.get("exit_code") for c in commands] == [0], run.explain(tierwise, upstream)
    assert MARKER in commands[0].get("aggregated_output", "")
    assert [i.get("text") for i in items if i.get("type") == "agent_message"] == [ANSWER]
    assert tierwise.from_cli == ["POST /v1/responses 200"] * 2, tierwise.seen
    if upstream.kind == "responses":
        check_codex_as_sent(tierwise, upstream)
    report("codex", version(argv[0], env), run, tierwise, upstream)


def test_codex_exec_resume_continues_the_chat(tierwise: Served, upstream: Upstream, tmp_path: Path) -> None:
    """``codex exec resume --last`` sends the first run's conversation again: tierwise continues the
    same chat (Codex names it in ``prompt_cache_key``), it does not start another."""
    argv, env, work = codex_run(tierwise, tmp_path)
    script_shell_round(upstream, "exec_command", {"cmd": COMMAND})
    first = run_cli([*argv, "Write the marker to made.txt with the shell."], env, work)
    check_round(first, tierwise, upstream, work, "exec_command", "responses")
    script_shell_round(upstream, "exec_command", {"cmd": "cat made.txt"}, call_id=SECOND_CALL_ID)

    run = run_cli([*argv, "resume", "--last", "Show made.txt again."], env, work)

    check_second_round(run, tierwise, upstream, "responses")
    assert [i.get("text") for i in codex_items(run) if i.get("type") == "agent_message"] == [ANSWER]
    assert tierwise.from_cli == ["POST /v1/responses 200"] * 4, tierwise.seen
    if upstream.kind == "responses":
        check_codex_as_sent(tierwise, upstream)
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
    argv = [claude, "--model", CLAUDE_MODEL, "--allowedTools", "Bash", "--output-format", "json", "-p"]
    return argv, env, work


def claude_result(run: Run) -> str:
    """The final answer ``claude -p --output-format json`` printed (it must not be an error)."""
    result = json.loads(run.stdout)
    assert result.get("is_error") is False, result
    return str(result.get("result")).strip()


@pytest.mark.parametrize("key", ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"])
def test_claude_p_runs_bash_through_tierwise(
    tierwise: Served, upstream: Upstream, tmp_path: Path, key: str
) -> None:
    """``claude -p`` → ``/v1/messages`` (streamed): its ``Bash`` tool runs, then it answers."""
    argv, env, work = claude_run(tierwise, tmp_path, key)
    script_shell_round(upstream, "Bash", {"command": COMMAND, "description": "Write the marker"})

    run = run_cli([*argv, "Write the marker to made.txt with bash."], env, work)

    check_round(run, tierwise, upstream, work, "Bash", "anthropic")
    assert claude_result(run) == ANSWER
    posts = [s for s in tierwise.from_cli if s.startswith("POST")]
    assert posts == ["POST /v1/messages 200"] * 2, tierwise.seen
    if upstream.kind == "anthropic":
        check_claude_as_sent(tierwise, upstream)
    report(f"claude ({key})", version(argv[0], env), run, tierwise, upstream)


def test_claude_continue_continues_the_chat(tierwise: Served, upstream: Upstream, tmp_path: Path) -> None:
    """``claude -p --continue`` sends the first run's conversation again: tierwise continues the same
    chat, it does not start another."""
    argv, env, work = claude_run(tierwise, tmp_path)
    script_shell_round(upstream, "Bash", {"command": COMMAND, "description": "Write the marker"})
    first = run_cli([*argv, "Write the marker to made.txt with bash."], env, work)
    check_round(first, tierwise, upstream, work, "Bash", "anthropic")
    script_shell_round(
        upstream, "Bash", {"command": "cat made.txt", "description": "Show"}, call_id=SECOND_CALL_ID
    )

    run = run_cli([*argv, "--continue", "Show made.txt again."], env, work)

    check_second_round(run, tierwise, upstream, "anthropic")
    assert claude_result(run) == ANSWER
    posts = [s for s in tierwise.from_cli if s.startswith("POST")]
    assert posts == ["POST /v1/messages 200"] * 4, tierwise.seen
    if upstream.kind == "anthropic":
        check_claude_as_sent(tierwise, upstream)
    report("claude --continue", version(argv[0], env), run, tierwise, upstream)
