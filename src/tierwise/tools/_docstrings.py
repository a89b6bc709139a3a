"""Google-style docstrings → a tool's description and its parameters' descriptions.

Only what a tool definition needs is read: the text before the first section (summary and body)
becomes the description, and the ``Args:`` section (``Arguments:`` and ``Parameters:`` too) gives
one description per parameter, continuation lines joined. Other sections (``Returns:``,
``Raises:``, ``Example:`` …) are left out: they are written for programmers, not for the model.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field

__all__ = ["ParsedDocstring", "parse_docstring"]

_SECTIONS = frozenset(
    {
        "args",
        "arguments",
        "parameters",
        "params",
        "keyword args",
        "keyword arguments",
        "other parameters",
        "returns",
        "return",
        "yields",
        "yield",
        "raises",
        "raise",
        "example",
        "examples",
        "note",
        "notes",
        "see also",
        "warning",
        "warnings",
        "attributes",
        "todo",
        "references",
    }
)
_ARG_SECTIONS = frozenset({"args", "arguments", "parameters", "params", "keyword args", "keyword arguments"})
_HEADER = re.compile(r"^\s*([A-Za-z][A-Za-z ]*):\s*$")
_ENTRY = re.compile(r"^\*{0,2}(?P<name>[A-Za-z_]\w*)\s*(?:\([^)]*\))?\s*:\s*(?P<text>.*)$")


@dataclass(frozen=True, slots=True)
class ParsedDocstring:
    """What a docstring says about a tool.

    Attributes:
        description: the summary line and the body before the first section, trimmed.
        params: parameter name → its description from the ``Args:`` section.
    """

    description: str = ""
    params: dict[str, str] = field(default_factory=dict)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _section(line: str) -> str | None:
    match = _HEADER.match(line)
    if match is None:
        return None
    name = match.group(1).strip().lower()
    return name if name in _SECTIONS else None


def _parse_args(lines: list[str], header_indent: int) -> tuple[dict[str, str], int]:
    """Entries of an ``Args:`` block starting at ``lines[0]``; returns them and the lines consumed."""
    params: dict[str, str] = {}
    current: str | None = None
    entry_indent: int | None = None
    used = 0
    for line in lines:
        if line.strip() and _indent(line) <= header_indent:
            break
        used += 1
        if not line.strip():
            continue
        if entry_indent is None:
            entry_indent = _indent(line)
        match = _ENTRY.match(line.strip()) if _indent(line) <= entry_indent else None
        if match is not None:
            current = match.group("name")
            params[current] = match.group("text").strip()
        elif current is not None:
            params[current] = f"{params[current]} {line.strip()}".strip()
    return params, used


def parse_docstring(doc: str | None) -> ParsedDocstring:
    r"""Split a google-style docstring into the tool description and per-parameter descriptions.

    Args:
        doc: the raw docstring (``None`` for none).

    Example:
        >>> parsed = parse_docstring('''List tasks.
        ...
        ...     Abbreviated; use get_task_details for one in full.
        ...
        ...     Args:
        ...         limit (int): how many to return,
        ...             newest first.
        ...         status: only these statuses.
        ...
        ...     Returns:
        ...         The tasks.
        ...     ''')
        >>> parsed.description
        'List tasks.\n\nAbbreviated; use get_task_details for one in full.'
        >>> parsed.params
        {'limit': 'how many to return, newest first.', 'status': 'only these statuses.'}
    """
    if not doc:
        return ParsedDocstring()
    lines = inspect.cleandoc(doc).splitlines()
    description: list[str] = []
    params: dict[str, str] = {}
    in_description = True
    i = 0
    while i < len(lines):
        line = lines[i]
        section = _section(line)
        if section is None:
            if in_description:
                description.append(line.rstrip())
            i += 1
            continue
        in_description = False
        if section in _ARG_SECTIONS:
            found, used = _parse_args(lines[i + 1 :], _indent(line))
            params.update(found)
            i += 1 + used
        else:
            i += 1
    return ParsedDocstring("\n".join(description).strip(), params)
