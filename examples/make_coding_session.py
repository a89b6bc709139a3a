"""Write ``examples/coding_session.json``: one working day between a developer and a coding assistant.

The session is an OpenAI-style request body (``{"messages": [...], "tools": [...]}``): Ana Ribeiro,
lead developer of ``ledgerline`` (a FastAPI service for projects and tasks), works through five
distinct stretches with an assistant that reads and writes files, runs tests and shell commands
and searches the code:

1. a JWT expiry bug in ``app/auth/jwt.py`` (tokens born expired on a host at UTC+2);
2. cursor pagination for ``GET /api/projects`` (offset pagination dropped);
3. the move of the database layer to SQLAlchemy 2 async sessions on asyncpg (a leaked connection);
4. a multi-stage Docker image on ``python:3.12-slim`` (1.2 GB → 380 MB);
5. cutting release v0.4.0, with one question left open (a backport to 0.3.x).

Tool results are what the tools print (file listings, pytest runs, tracebacks, ``git`` output),
as plain text. The dialogue and the files are in ``coding_session_data.py``; this file has the
tools, the system prompt and the message builder. Everything is fixed text, so the output is
byte-for-byte the same on every run. Run it from anywhere (stdlib only, no network)::

    python examples/make_coding_session.py
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import coding_session_data as data  # the sibling module (run as a script: its folder is on the path)

OUT = Path(__file__).with_name("coding_session.json")

SYSTEM_PROMPT = """\
You are a coding assistant working in the `ledgerline` repository with Ana Ribeiro, its lead \
developer. Ledgerline is a FastAPI service for project and task tracking (Python 3.12, PostgreSQL, \
SQLAlchemy, Alembic), deployed as a Docker image and published on PyPI as `ledgerline`. The last \
release is 0.3.2.

Current date: Thursday 2026-10-15. Working directory: /home/ana/ledgerline (branch `main`).

## Tools

- read_file and search_code: look before you change anything; read only the lines you need.
- write_file: write a whole file, or replace a range of lines (start_line/end_line).
- run_tests: pytest, optionally for one path or expression, with extra environment variables.
- run_command: any shell command in the repository (git, docker, alembic, build and release tools).

## Working rules

- Reproduce a bug (ideally with a failing test) before fixing it.
- Run the relevant tests after each change and the full suite before a commit.
- Keep changes minimal and in the style of the surrounding code; no drive-by refactors.
- Never push, tag or upload a release without Ana's explicit go-ahead.
- When a decision is made (a name, a limit, a trade-off), restate it in one line.

## Style

- Lead with the result, then the detail. Short bullets; code, paths and commands in backticks.
- Quote only the relevant lines of test output, diffs and tracebacks.
- If you are unsure, say what you checked and what is missing."""

_TOOL_SPECS: list[tuple[str, str, dict[str, Any], list[str]]] = [
    (
        "read_file",
        "Read a text file from the repository. Returns the lines with their numbers. Use start_line "
        "and end_line to read part of a large file.",
        {
            "path": {"type": "string", "description": "Path relative to the repository root"},
            "start_line": {"type": "integer", "minimum": 1, "description": "First line to return"},
            "end_line": {"type": "integer", "minimum": 1, "description": "Last line to return"},
        },
        ["path"],
    ),
    (
        "write_file",
        "Write a text file in the repository. Without start_line the content replaces the whole "
        "file (creating it if needed); with start_line and end_line it replaces that range of lines "
        "(end_line = start_line - 1 inserts before start_line).",
        {
            "path": {"type": "string", "description": "Path relative to the repository root"},
            "content": {"type": "string", "description": "New text (whole file or the replaced lines)"},
            "start_line": {"type": "integer", "minimum": 1},
            "end_line": {"type": "integer", "minimum": 0},
        },
        ["path", "content"],
    ),
    (
        "run_tests",
        "Run the test suite with pytest and return its output (last 200 lines).",
        {
            "path": {"type": "string", "description": "Test file, directory or node id; default: all"},
            "keyword": {"type": "string", "description": "Only tests matching this -k expression"},
            "env": {
                "type": "object",
                "additionalProperties": {"type": "string"},
                "description": 'Extra environment variables, e.g. {"TZ": "Europe/Berlin"}',
            },
        },
        [],
    ),
    (
        "run_command",
        "Run a shell command (bash) in the repository root and return exit code, stdout and stderr. "
        "Long outputs are cut to the last 200 lines.",
        {
            "command": {"type": "string", "description": "The command line to run"},
            "timeout": {"type": "integer", "default": 120, "maximum": 900, "description": "Seconds"},
        },
        ["command"],
    ),
    (
        "search_code",
        "Search the repository (ripgrep). Returns matching lines as path:line:text, at most "
        "max_results of them.",
        {
            "query": {"type": "string", "description": "Literal text, or a regular expression"},
            "regex": {"type": "boolean", "default": False},
            "path": {"type": "string", "description": "Limit the search to this file or folder"},
            "max_results": {"type": "integer", "default": 50, "maximum": 200},
        },
        ["query"],
    ),
]


def tool_definitions() -> list[dict[str, Any]]:
    """Return the five tools in OpenAI's format."""
    return [
        {
            "type": "function",
            "function": {
                "name": name,
                "description": description,
                "parameters": {"type": "object", "properties": props, "required": required},
            },
        }
        for name, description, props, required in _TOOL_SPECS
    ]


class Session:
    """Accumulates messages; tool calls get deterministic ids and are followed by their results."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT}]
        self._calls = 0

    def user(self, text: str) -> None:
        """Add a user message."""
        self.messages.append({"role": "user", "content": text})

    def say(self, text: str) -> None:
        """Add an assistant answer (no tool calls)."""
        self.messages.append({"role": "assistant", "content": text})

    def calls(self, *specs: tuple[str, dict[str, Any], str], text: str | None = None) -> None:
        """Add one assistant message calling every ``(name, arguments, output)``, then each output."""
        tool_calls, results = [], []
        for name, args, output in specs:
            self._calls += 1
            digest = hashlib.sha256(f"tierwise-coding-example:{self._calls}:{name}".encode()).hexdigest()
            call_id = f"call_{digest[:24]}"
            arguments = json.dumps(args, ensure_ascii=False)
            function = {"name": name, "arguments": arguments}
            tool_calls.append({"id": call_id, "type": "function", "function": function})
            results.append({"role": "tool", "tool_call_id": call_id, "content": output})
        self.messages.append({"role": "assistant", "content": text, "tool_calls": tool_calls})
        self.messages.extend(results)

    def call(self, name: str, args: dict[str, Any], output: str, text: str | None = None) -> None:
        """Add one assistant message with a single tool call, then its output."""
        self.calls((name, args, output), text=text)


def check(messages: list[dict[str, Any]]) -> None:
    """Fail loudly if a tool call lacks its result, a result its call, or the last turn is not the user's."""
    pending: list[str] = []
    for m in messages:
        if m["role"] == "tool":
            assert pending and m["tool_call_id"] == pending.pop(0), m
        else:
            assert not pending, f"unanswered tool calls {pending}"
            pending = [c["id"] for c in m.get("tool_calls", [])]
    assert not pending and messages[-1]["role"] == "user"


def build() -> dict[str, Any]:
    """Return the whole request body: messages (last one from the user) and tools."""
    s = Session()
    data.jwt_fix(s)
    data.cursor_pagination(s)
    data.async_db(s)
    data.docker_image(s)
    data.release(s)
    check(s.messages)
    return {"messages": s.messages, "tools": tool_definitions()}


def main() -> None:
    """Write the session to ``examples/coding_session.json`` (indent 2, trailing newline)."""
    body = build()
    OUT.write_text(json.dumps(body, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {OUT} ({len(body['messages'])} messages, {len(body['tools'])} tools)")


if __name__ == "__main__":
    main()
