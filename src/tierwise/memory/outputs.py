"""Tool output cut by what it is: the lines a reader needs from a log, a test run or a file view.

Seed 003's tool-result bloat is mostly text: a test run, a build log, a ``cat`` or ``grep`` of a file.
A sentence summary says little about those, and a blob reference alone sends the model to read it
all again. :func:`excerpt` keeps, within a token cap and in their order, the lines that carry the
output's meaning:

* **failures**: error and exception lines, tracebacks' ``File …, line N`` lines, pytest's ``E`` and
  ``FAILED`` lines, assertion messages — the newest first, since a traceback ends with its cause;
* **the tail**: the last lines (a test run's verdict, a command's last words);
* **the head**: the first lines (a return code, a header, the command's first output);
* **the outline**: in a file view, the ``def`` / ``class`` lines with their line numbers.

Gaps are marked ``… N lines …`` so the reader knows what was left out; the whole output stays in
its blob. :func:`head_tail` cuts one text to a token count keeping its start and end, for a result
or task too large for its share of a pack. Both are deterministic.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from tierwise.tokens import TokenCounter

__all__ = ["excerpt", "head_tail"]

_FAILURE = re.compile(
    r"(?i)(\b(error|exception|traceback|failed|failures?|fatal|panic|segmentation fault|"
    r"assert(ion)?(error)?|not found|no such file|cannot|could not|undefined|invalid)\b)|"
    r"^E\s|^FAILED\b|^ERROR\b|File \"[^\"]+\", line \d+|<returncode>[1-9]"
)
_OUTLINE = re.compile(r"^\s*(\d+[\s:|-]+)?\s*(async\s+def|def|class|function|func|fn|interface|struct)\s+\w")
_LINE_CHARS = 240
_HEAD, _TAIL = 3, 6


def _clip(line: str) -> str:
    line = line.rstrip()
    return line if len(line) <= _LINE_CHARS else line[: _LINE_CHARS - 1] + "…"


def excerpt(content: str, counter: TokenCounter, max_tokens: int) -> str:
    r"""The lines of ``content`` that matter most, in order, within ``max_tokens`` (gaps marked).

    Example:
        >>> from tierwise.tokens import get_counter
        >>> passed = [f"test_{i} PASSED" for i in range(40)]
        >>> log = "\n".join(["collected 40 items", *passed, "E   AssertionError: 3 != 4",
        ...                  "FAILED test_x.py::test_sum", "1 failed, 40 passed"])
        >>> print(excerpt(log, get_counter(), 60))
        collected 40 items
        … 37 lines …
        test_37 PASSED
        test_38 PASSED
        test_39 PASSED
        E   AssertionError: 3 != 4
        FAILED test_x.py::test_sum
        1 failed, 40 passed
    """
    lines = content.splitlines()
    if not lines:
        return ""
    n = len(lines)
    failures = [i for i, line in enumerate(lines) if _FAILURE.search(line)]
    outline = [i for i, line in enumerate(lines) if _OUTLINE.match(line)]
    # Order of preference: the last lines, the newest failures, the first lines, the outline.
    wanted: list[int] = []
    wanted += list(range(max(0, n - _TAIL), n))[::-1]
    wanted += failures[::-1]
    wanted += list(range(min(_HEAD, n)))
    wanted += outline
    wanted += [i for i in range(_HEAD, n - _TAIL)]  # then the rest, from the top
    chosen: set[int] = set()
    used = 0
    for i in _unique(wanted):
        if not lines[i].strip():
            continue
        cost = counter.count(_clip(lines[i])) + 1
        gap = 6  # a "… N lines …" marker this line may add
        if used + cost + gap > max_tokens:
            continue
        chosen.add(i)
        used += cost
    if len(chosen) == n:
        return content
    out: list[str] = []
    previous = -1
    for i in sorted(chosen):
        if i > previous + 1:
            out.append(f"… {i - previous - 1} lines …")
        out.append(_clip(lines[i]))
        previous = i
    if previous < n - 1:
        out.append(f"… {n - 1 - previous} lines …")
    return "\n".join(out)


def _unique(items: Iterable[int]) -> Iterable[int]:
    seen: set[int] = set()
    for item in items:
        if item not in seen:
            seen.add(item)
            yield item


def head_tail(text: str, counter: TokenCounter, max_tokens: int, pointer: str) -> str:
    r"""``text`` cut to about ``max_tokens``: its first and last parts, ``pointer`` between them.

    Cut at line ends where there are lines, else between tokens; two thirds of the room go to the
    head. ``pointer`` says what was left out and how to read it.

    Example:
        >>> from tierwise.tokens import get_counter
        >>> text = "\n".join(f"line {i}" for i in range(100))
        >>> cut = head_tail(text, get_counter(), 40, "[… lines elided]")
        >>> cut.splitlines()[0], "[… lines elided]" in cut, cut.splitlines()[-1]
        ('line 0', True, 'line 99')
    """
    total = counter.count(text)
    if total <= max_tokens:
        return text
    room = max(0, max_tokens - counter.count(pointer) - 2)
    head_room, tail_room = room * 2 // 3, room - room * 2 // 3
    lines = text.splitlines(keepends=True)
    if len(lines) >= 4:
        head: list[str] = []
        used = 0
        for line in lines:
            cost = counter.count(line)
            if used + cost > head_room:
                break
            head.append(line)
            used += cost
        tail: list[str] = []
        used = 0
        for line in reversed(lines[len(head) :]):
            cost = counter.count(line)
            if used + cost > tail_room:
                break
            tail.append(line)
            used += cost
        tail.reverse()
        if head or tail:
            return "".join(head).rstrip("\n") + f"\n{pointer}\n" + "".join(tail).lstrip("\n")
    tokens = counter.encode(text)
    decode = counter.encoding.decode
    return decode(tokens[:head_room]) + f"\n{pointer}\n" + decode(tokens[len(tokens) - tail_room :])
