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
upstream as the CLI sent it (``check_codex_as_sent`` in ``test_codex.py``, ``check_claude_as_sent`` in
``test_claude.py``). A second run continuing the first (``codex exec resume --last``, ``claude -p
--continue``) must continue that chat, not start another. ``-rP`` prints each run's record: the CLI's
version, its exit code, the requests it made to tierwise and what reached the upstream;
``TIERWISE_AGENT_CLIS_DUMP=<dir>`` writes both sides of every request to ``<dir>`` (:func:`dump`).

This module holds what both CLIs' tests share (running a CLI, tierwise served and logged, the checks of
a round); ``conftest.py`` the ``upstream`` and ``tierwise`` fixtures; ``test_codex.py`` and
``test_claude.py`` each CLI's configuration, runs and tests.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.agents_cli.upstreams import AnthropicUpstream, Upstream

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
class RequestLog:
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


def without_keys(value: Any, keys: frozenset[str]) -> Any:
    """``value`` with ``keys`` left out of every object in it, at any depth."""
    if isinstance(value, dict):
        return {k: without_keys(v, keys) for k, v in value.items() if k not in keys}
    if isinstance(value, list):
        return [without_keys(v, keys) for v in value]
    return value


def cache_marks(value: Any) -> int:
    """How many ``cache_control`` markers ``value`` holds, at any depth."""
    if isinstance(value, dict):
        return ("cache_control" in value) + sum(cache_marks(v) for v in value.values())
    if isinstance(value, list):
        return sum(cache_marks(v) for v in value)
    return 0


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
        f"cache_control marks {[cache_marks(r) for r in upstream.requests]}"
    )
