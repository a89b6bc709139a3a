"""Claude Code (``claude -p``) on ``/v1/messages`` through tierwise, over each kind of upstream.

Opt-in, as :mod:`tests.agents_cli.harness` says: ``TIERWISE_AGENT_CLIS=1`` and the CLI from
``TIERWISE_AGENT_CLIS_PREFIX`` or ``PATH``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.agents_cli.harness import (
    ANSWER,
    CLAUDE_MODEL,
    COMMAND,
    ENABLED,
    HOW,
    SECOND_CALL_ID,
    Run,
    Served,
    as_sent_pairs,
    base_env,
    cache_marks,
    check_round,
    check_second_round,
    cli_or_skip,
    report,
    run_cli,
    script_shell_round,
    version,
    without_keys,
)
from tests.agents_cli.upstreams import Upstream

pytestmark = pytest.mark.skipif(not ENABLED, reason=HOW)

ANTHROPIC_REBUILT = frozenset({"model", "messages", "system", "tools", "max_tokens", "stream"})
"""What an Anthropic upstream gets from tierwise's pack and configuration, not from the client's body."""
CACHE_CONTROL = frozenset({"cache_control"})


def _blocks(content: Any) -> Any:
    """Anthropic content (or ``system``) as blocks: a string is one text block."""
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


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
        assert without_keys(_blocks(body.get("system")), CACHE_CONTROL) == without_keys(
            _blocks(own.get("system")), CACHE_CONTROL
        )
        assert without_keys(body.get("tools"), CACHE_CONTROL) == without_keys(own.get("tools"), CACHE_CONTROL)
        messages = [{**m, "content": _blocks(m["content"])} for m in own["messages"]]
        assert without_keys(body["messages"], CACHE_CONTROL) == without_keys(messages, CACHE_CONTROL)
        assert cache_marks(body) <= 4, cache_marks(body)


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
