"""The coding session's tools: building tool calls and printing their output as the tools would.

Part of ``make_coding_session.py`` (stdlib only). Each public function adds one stretch of the day
to a ``Session`` (``user``, ``say``, ``call``, ``calls``); the helpers below build the tool calls
and print their output the way the tools would (numbered file lines, pytest runs, exit codes).
The repository is ``ledgerline`` at /home/ana/ledgerline; the test suite starts at 187 tests.
"""

from __future__ import annotations

from typing import Any, Protocol

__all__ = [
    "AFTER_JWT",
    "AFTER_PAGINATION",
    "Session",
    "Spec",
    "grep",
    "pytest_run",
    "read",
    "sh",
    "suite",
    "tests",
    "write",
]

Spec = tuple[str, dict[str, Any], str]


class Session(Protocol):
    """What the script needs from ``make_coding_session.Session``."""

    def user(self, text: str) -> None:
        """A user message."""

    def say(self, text: str) -> None:
        """An assistant message without tool calls."""

    def call(self, name: str, args: dict[str, Any], output: str, text: str | None = None) -> None:
        """An assistant message with one tool call, then its result."""

    def calls(self, *specs: Spec, text: str | None = None) -> None:
        """An assistant message with several tool calls at once, then their results."""


# ---------------------------------------------------------------------------------------------
# Tool calls and their output.
# ---------------------------------------------------------------------------------------------


def _lines(n: int) -> str:
    return f"{n} line" if n == 1 else f"{n} lines"


def read(path: str, text: str, start: int | None = None, total: int | None = None) -> Spec:
    """read_file of a whole file, or of the excerpt ``text`` that begins at line ``start`` (of ``total``)."""
    lines = text.rstrip("\n").split("\n")
    args: dict[str, Any] = {"path": path}
    if start is not None:
        args |= {"start_line": start, "end_line": start + len(lines) - 1}
    first = start or 1
    out = "\n".join(f"{first + i:>4}  {line}".rstrip() for i, line in enumerate(lines))
    return "read_file", args, out + (f"\n[{path}: {total} lines]" if total else "")


def write(path: str, content: str, start: int | None = None, end: int | None = None) -> Spec:
    """write_file of a whole file, or of lines ``start``-``end`` (``end = start - 1`` inserts)."""
    n = content.count("\n") + (not content.endswith("\n"))
    args: dict[str, Any] = {"path": path, "content": content}
    if start is None or end is None:
        return "write_file", args, f"Wrote {_lines(n)} to {path}"
    args |= {"start_line": start, "end_line": end}
    if end < start:
        return "write_file", args, f"Inserted {_lines(n)} before line {start} of {path}"
    return "write_file", args, f"Replaced lines {start}-{end} of {path} with {_lines(n)}"


def sh(command: str, output: str, code: int = 0, timeout: int | None = None) -> Spec:
    """run_command: the command's output, then its exit code."""
    args: dict[str, Any] = {"command": command} | ({"timeout": timeout} if timeout else {})
    return "run_command", args, f"{output.strip(chr(10))}\n[exit code {code}]".lstrip("\n")


def grep(query: str, output: str, path: str | None = None, regex: bool = False) -> Spec:
    """search_code: ripgrep-style ``path:line:text`` hits."""
    args: dict[str, Any] = (
        {"query": query} | ({"regex": True} if regex else {}) | ({"path": path} if path else {})
    )
    return "search_code", args, output.strip()


def tests(output: str, path: str | None = None, env: dict[str, str] | None = None) -> Spec:
    """run_tests: one pytest run."""
    args: dict[str, Any] = ({"path": path} if path else {}) | ({"env": env} if env else {})
    return "run_tests", args, output


def _bar(text: str, char: str = "=") -> str:
    return f" {text} ".center(80, char) if text else char * 80


def pytest_run(
    files: list[tuple[str, str]], secs: float, failures: str = "", errors: str = "", warnings: str = ""
) -> str:
    """Print a pytest run; ``files`` are (path, marks) with marks among ``.``, ``F``, ``s`` and ``E``.

    An ``E`` is an error at teardown: its test has its own mark, so it adds no test to the count.
    """
    marks = "".join(m for _, m in files)
    total = len(marks) - marks.count("E")
    out = [
        _bar("test session starts"),
        "platform linux -- Python 3.12.7, pytest-8.3.3, pluggy-1.5.0",
        "rootdir: /home/ana/ledgerline",
        "configfile: pyproject.toml",
        "plugins: anyio-4.6.2, cov-5.0.0",
        f"collected {total} items",
        "",
    ]
    done = 0
    for path, m in files:
        done += len(m) - m.count("E")
        pct = f"[{100 * done // total:3d}%]"
        out.append(f"{path} {m}".ljust(80 - len(pct)) + pct)
    out.append("")
    for title, text in (("ERRORS", errors), ("FAILURES", failures)):
        if text:  # "____ name ____" headers re-centred; "#" lines go to the short summary only
            body = [line for line in text.strip("\n").split("\n") if not line.startswith("#")]
            out += [_bar(title), *(_bar(ln.strip("_ "), "_") if ln.startswith("___") else ln for ln in body)]
    if warnings:
        out += [
            _bar("warnings summary"),
            warnings.strip("\n"),
            "",
            "-- Docs: https://docs.pytest.org/en/stable/how-to/capture-warnings.html",
        ]
    counts = [(marks.count("F"), "failed"), (marks.count("."), "passed"), (marks.count("s"), "skipped")]
    n_warn = sum(line.startswith("tests/") for line in warnings.split("\n"))
    counts.append((n_warn, "warning" if n_warn == 1 else "warnings"))
    counts.append((marks.count("E"), "error" if marks.count("E") == 1 else "errors"))
    if "F" in marks or "E" in marks:
        out.append(_bar("short test summary info"))
        out += [line for line in (failures + "\n" + errors).split("\n") if line.startswith("#")]
    summary = ", ".join(f"{n} {word}" for n, word in counts if n)
    out.append(_bar(f"{summary} in {secs:.2f}s"))
    return "\n".join(line.removeprefix("#") for line in out)


_SUITE = {
    "audit": "." * 9,
    "auth": "." * 42,
    "billing": "." * 12 + "s" + "." * 7 + "s" + "." * 6,
    "health": "...",
    "members": "." * 21,
    "projects": "." * 16,
    "search": "." * 12,
    "tasks": "." * 38,
    "webhooks": "." * 19,
}
AFTER_JWT = {"auth": "." * 46}
AFTER_PAGINATION = AFTER_JWT | {"projects": "." * 14, "projects_pagination": "." * 5}


def suite(**marks: str) -> list[tuple[str, str]]:
    """The whole test suite's files and marks, with some files' marks replaced."""
    files = _SUITE | marks
    return [(f"tests/test_{name}.py", files[name]) for name in sorted(files, key=lambda n: f"test_{n}.py")]
