"""Codex CLI (``codex exec``) on ``/v1/responses`` through tierwise, over each kind of upstream.

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
    COMMAND,
    ENABLED,
    HOW,
    MARKER,
    MODEL,
    SECOND_CALL_ID,
    Run,
    Served,
    as_sent_pairs,
    base_env,
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
        assert without_keys(body["input"], item_ids) == without_keys(own["input"], item_ids)


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
