"""What a coding agent did, read from its tool calls and their results (seed 003's code context).

Seed 003 is written for code assistants: its layer 4 is the code being worked on, its
``CurrentContextSummary`` names the task, the files changed and how, what is failing and what is
next, and its ``CodeChange`` records an edit. A coding agent's steps say all of that in their calls
and outputs; :func:`read_action` reads one step as an :class:`Action` — viewed, edited, searched or
ran, which files, the command, and its outcome (exit code, the test summary, the error line) — for
the agents people use:

* a shell tool (mini-swe-agent's commands, Codex's ``shell``, OpenHands' ``execute_bash``, Claude
  Code's ``Bash``): the command line says it (``sed -i``, ``cat > f``, ``nl``/``cat``/``sed -n``,
  ``grep``/``find``/``ls``, anything else runs);
* file tools (Claude Code's ``Read``/``Edit``/``Write``/``Grep``/``Glob``, ``str_replace_editor``,
  Codex's ``apply_patch``): the tool's name and its ``path``/``file_path``/patch headers say it.

Segments of steps get a header and summary from their actions (:func:`header`, :func:`summary`), and
the narrative of an agent loop is its :func:`work_summary`. Extractive and deterministic.
"""

from __future__ import annotations

import functools
import json
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["Action", "actions_of", "header", "read_action", "summary", "work_summary"]

Kind = Literal["view", "edit", "search", "run"]

_VIEW = {"cat", "nl", "head", "tail", "less", "more", "bat", "read", "view", "open"}
_SEARCH = {"grep", "rg", "ag", "find", "ls", "tree", "glob", "fd", "locate", "git grep"}
_EDIT_TOOLS = {"edit", "write", "multiedit", "apply_patch", "create", "str_replace", "insert", "notebookedit"}
_PATH = re.compile(
    r"(?<![\w:/.-])((?:\.{0,2}/)?[\w.-]+(?:/[\w.-]+)*\.[A-Za-z]{1,6}|(?:[\w.-]+/)+[\w.-]+)(?![\w/])"
)
_RETURNCODE = re.compile(
    r"<returncode>(-?\d+)</returncode>|(?:exit code|exit status|exited with code)[: ]+(-?\d+)", re.I
)
_TESTS = re.compile(
    r"=+ ((?:\d+ \w+(?:, )?)+)(?: in [\d.]+s)?.*=+"
    r"|^((?:\d+ (?:passed|failed|errors?|skipped|xfailed)(?:, )?)+)",
    re.M,
)
_ERROR = re.compile(
    r"^\s*(?:E\s+)?((?:[A-Z]\w*(?:Error|Exception|Exit)|error|fatal|FAILED)\b[: ].{0,160})", re.M
)
_QUOTED = re.compile(r"'[^'\n]*'|\"[^\"\n]*\"")
_HEREDOC = re.compile(r"<<-?\s*['\"]?(\w+)['\"]?")
_EXTENSIONS = frozenset(
    re.findall(
        r"\w+",
        "py pyi js mjs cjs ts tsx jsx go rs java kt scala c h cc cpp hpp cs rb php swift m sh bash zsh sql "
        "md rst txt json jsonl yaml yml toml ini cfg conf lock xml html css scss vue svelte ipynb csv tsv "
        "env gradle mk cmake proto graphql tf dockerfile patch diff log out",
    )
)
_SCAN = 20_000  # an output's outcome is read from its start and its last characters
_PATCH_FILE = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (.+)$|^\+\+\+ (?:b/)?(\S+)", re.M)


@dataclass(frozen=True)
class Action:
    """One step of a coding agent, as read from its call and output.

    Attributes:
        kind: ``view``, ``edit``, ``search`` or ``run``.
        paths: the files (or directories) it names, in order.
        command: the call, shortly (a command line's first line, or ``tool path``).
        outcome: what came of it: ``exit 1``, ``3 failed, 40 passed``, the error line; ``""`` if
            nothing says.
        failed: whether the outcome is a failure (non-zero exit, failed tests, an error line).
    """

    kind: Kind
    paths: tuple[str, ...]
    command: str
    outcome: str = ""
    failed: bool = False


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _arguments(raw: object) -> dict[str, Any]:
    if isinstance(raw, Mapping):
        return dict(raw)
    try:
        value = json.loads(str(raw or "{}"))
    except ValueError:
        return {"command": str(raw)}
    return value if isinstance(value, dict) else {"command": value}


def _without_heredocs(command: str) -> str:
    """A command line without the bodies of its here-documents (a file's new text is not its name)."""
    out: list[str] = []
    ending: str | None = None
    for line in command.splitlines():
        if ending is not None:
            if line.strip() == ending:
                ending = None
            continue
        out.append(line)
        found = _HEREDOC.search(line)
        if found:
            ending = found.group(1)
    return "\n".join(out)


def _paths(text: str) -> tuple[str, ...]:
    text = _QUOTED.sub(" ", text)  # a sed script or a message, not a file's name
    out: list[str] = []
    for match in _PATH.finditer(text):
        path = match.group(1).rstrip(".")
        if "://" in text[max(0, match.start() - 3) : match.start() + 3] or path.startswith("-"):
            continue
        if path in out or ("/" not in path and path.rsplit(".", 1)[-1].lower() not in _EXTENSIONS):
            continue  # a dotted name (sys.exit), not a file
        out.append(path)
    return tuple(out[:6])


def _shell_kind(command: str) -> Kind:
    line = command.strip()
    if re.search(r"\bsed\s+(-\w*\s+)*-i", line) or re.search(r"(?<![<>\d&])>{1,2}\s*[\w./-]+\.\w+", line):
        return "edit"
    if re.search(r"\b(tee|patch|git apply|apply_patch)\b", line):
        return "edit"
    first = line.split("|")[0].split("&&")[-1].strip().split(" ")[0] if line else ""
    first = first.rsplit("/", 1)[-1]
    if first == "sed" or first in _VIEW:
        return "view"
    if first in _SEARCH or line.startswith("git grep"):
        return "search"
    return "run"


def _outcome(output: str) -> tuple[str, bool]:
    output = output if len(output) <= _SCAN else output[:2_000] + "\n" + output[-_SCAN:]
    tests = _TESTS.search(output)
    code = _RETURNCODE.search(output)
    exit_code = int(next(g for g in code.groups() if g is not None)) if code else None
    errors = [m.group(1).strip() for m in _ERROR.finditer(output)]
    parts: list[str] = []
    failed = bool(exit_code)
    if tests:
        counts = (tests.group(1) or tests.group(2) or "").strip().rstrip(",")
        parts.append(counts)
        failed = failed or bool(re.search(r"\d+ (failed|errors?)\b", counts))
    elif exit_code:
        parts.append(f"exit {exit_code}")
    if errors and (failed or not tests):
        parts.append(_clip(errors[-1], 120))
        failed = True
    return "; ".join(parts), failed


def read_action(name: str, arguments: object, output: str) -> Action | None:
    """A step as an :class:`Action`, or ``None`` if it is not a coding agent's (a workspace tool, say).

    Read once per call and output (a step is read again at every compaction step and for its trio).

    Example:
        >>> edit = read_action("sed", {"command": "sed -i 's/a/b/' a/utils.py"}, "<returncode>0</returncode>")
        >>> edit.kind, edit.paths, edit.failed
        ('edit', ('a/utils.py',), False)
        >>> run = read_action("Bash", {"command": "pytest tests"}, "===== 1 failed, 4 passed in 0.2s =====")
        >>> run.kind, run.outcome, run.failed
        ('run', '1 failed, 4 passed', True)
    """
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, sort_keys=True, default=str)
    return _read_cached(name, arguments, output)


@functools.lru_cache(maxsize=8_192)
def _read_cached(name: str, arguments: str, output: str) -> Action | None:
    return _read_action(name, arguments, output)


def _read_action(name: str, arguments: object, output: str) -> Action | None:
    """:func:`read_action`, uncached."""
    args = _arguments(arguments)
    tool = name.lower()
    command = args.get("command") or args.get("cmd")
    if isinstance(command, list):  # Codex's shell: ["bash", "-lc", "…"]
        command = (
            command[-1] if command and command[0] in ("bash", "sh", "zsh") else shlex.join(map(str, command))
        )
    path = args.get("path") or args.get("file_path") or args.get("notebook_path")
    patch = args.get("input") or args.get("patch") if tool == "apply_patch" else None
    outcome, failed = _outcome(output)
    if isinstance(patch, str):
        files = tuple(a or b for a, b in _PATCH_FILE.findall(patch))[:6]
        return Action("edit", files, f"apply_patch {' '.join(files)}"[:160], outcome, failed)
    if isinstance(command, str) and tool not in ("str_replace_editor", "str_replace_based_edit_tool"):
        line = _without_heredocs(command)
        first_line = command.strip().splitlines()[0] if command.strip() else ""
        return Action(_shell_kind(line), _paths(line), _clip(first_line, 160), outcome, failed)
    if isinstance(path, str):
        sub = str(args.get("command") or "")
        if tool in _EDIT_TOOLS or sub in _EDIT_TOOLS:
            kind: Kind = "edit"
        elif tool in ("grep", "glob"):
            kind = "search"
        else:
            kind = "view"
        return Action(kind, (path,), _clip(f"{name} {sub} {path}".replace("  ", " "), 160), outcome, failed)
    if tool in ("grep", "glob") and isinstance(args.get("pattern"), str):
        return Action("search", (), _clip(f"{name} {args['pattern']}", 160), outcome, failed)
    return None


def actions_of(
    messages: Iterable[Mapping[str, Any]], *, calls: Iterable[Mapping[str, Any]] = ()
) -> list[Action]:
    """The coding actions among ``messages`` (each call paired with its result), in order.

    ``calls``: messages before them whose calls a result among ``messages`` may answer.
    """
    pending: dict[str, tuple[str, object]] = {}
    for message in calls:
        for call in message.get("tool_calls") or ():
            if isinstance(call, Mapping):
                function = call.get("function") or {}
                pending[str(call.get("id"))] = (str(function.get("name") or ""), function.get("arguments"))
    out: list[Action] = []
    for message in messages:
        for call in message.get("tool_calls") or ():
            if isinstance(call, Mapping):
                function = call.get("function") or {}
                pending[str(call.get("id"))] = (str(function.get("name") or ""), function.get("arguments"))
        if message.get("role") == "tool":
            found = pending.pop(str(message.get("tool_call_id")), None)
            content = message.get("content")
            if found is not None:
                action = read_action(found[0], found[1], content if isinstance(content, str) else "")
                if action is not None:
                    out.append(action)
    return out


_VERBS = {"edit": "edited", "view": "viewed", "search": "searched", "run": "ran"}


def _names(paths: Iterable[str], limit: int = 3) -> str:
    seen: list[str] = []
    for path in paths:
        short = path.rstrip("/").rsplit("/", 1)[-1] or path
        if short not in seen:
            seen.append(short)
    more = f" +{len(seen) - limit}" if len(seen) > limit else ""
    return ", ".join(seen[:limit]) + more


def header(actions: Sequence[Action]) -> str:
    """A segment's header from its actions: what was edited (else viewed), and the last run's outcome.

    Example:
        >>> header([Action("view", ("a/utils.py",), "cat a/utils.py"),
        ...         Action("edit", ("a/utils.py",), "sed -i … a/utils.py"),
        ...         Action("run", (), "pytest", "1 failed, 4 passed", True)])
        'edited utils.py · pytest: 1 failed, 4 passed'
    """
    edited = [p for a in actions if a.kind == "edit" for p in a.paths]
    viewed = [p for a in actions if a.kind in ("view", "search") for p in a.paths]
    parts = []
    if edited:
        parts.append(f"edited {_names(edited, 2)}")
    elif viewed:
        parts.append(f"read {_names(viewed, 2)}")
    runs = [a for a in actions if a.kind == "run"]
    if runs:
        last = runs[-1]
        word = last.command.split(" ")[0].rsplit("/", 1)[-1][:24]
        parts.append(f"{word}: {_clip(last.outcome, 40)}" if last.outcome else f"ran {word}")
    return " · ".join(parts) or _clip(actions[-1].command, 60)


def summary(actions: Sequence[Action], limit: int = 6) -> str:
    """A segment's summary from its actions: the last ``limit`` of them, each with its outcome."""
    lines = [
        f"{_VERBS[a.kind]} `{_clip(a.command, 90)}`" + (f" → {a.outcome}" if a.outcome else "")
        for a in actions
    ]
    skipped = f"({len(lines) - limit} earlier steps) " if len(lines) > limit else ""
    return skipped + "; ".join(lines[-limit:]) + "."


def work_summary(task: str, actions: Sequence[Action], next_step: str = "") -> str:
    """An agent loop's narrative: the task, the files changed and how, what is failing, what is next."""
    out = [f"Task: {_clip(task, 240)}"] if task.strip() else []
    changed: dict[str, str] = {}
    for action in actions:
        if action.kind == "edit":
            for path in action.paths or ("(a file)",):
                changed[path] = action.command
    if changed:
        files = list(changed.items())[-6:]
        out.append("Changed: " + "; ".join(f"{path} (last: `{_clip(cmd, 70)}`)" for path, cmd in files))
    viewed = [p for a in actions if a.kind in ("view", "search") for p in a.paths]
    if viewed:
        out.append(f"Read: {_names(reversed(viewed), 8)}")
    runs: dict[str, Action] = {}
    for action in actions:
        if action.kind == "run" and action.outcome:
            runs[action.command] = action
    failing = [a for a in runs.values() if a.failed][-3:]
    if failing:
        out.append("Failing: " + "; ".join(f"`{_clip(a.command, 60)}` → {a.outcome}" for a in failing))
    passing = [a for a in runs.values() if not a.failed][-2:]
    if passing:
        out.append("Passing: " + "; ".join(f"`{_clip(a.command, 60)}` → {a.outcome}" for a in passing))
    if actions:
        last = actions[-1]
        out.append(
            f"Last step: {_VERBS[last.kind]} `{_clip(last.command, 90)}`"
            + (f" → {last.outcome}" if last.outcome else "")
        )
    if next_step.strip():
        out.append(f"Next (the agent's words): {_clip(next_step, 200)}")
    return "\n".join(out)
