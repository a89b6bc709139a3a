"""Compact tool schemas: the same validation, fewer tokens on every model call.

Tool definitions travel at the front of every prompt, so each token in them is paid on every model
call of every turn (issue 17: the sixteen tools were 1,540 tokens of a 2,694-token first prompt).
:func:`compact` rewrites what the model *sees* and leaves the tool's validation untouched:

- ``$ref`` to ``$defs`` is inlined (a nested model reads as one object);
- ``X | None`` shows as ``X``: an optional parameter may simply be left out (``null`` is still
  accepted, as "not given");
- defaults that say nothing are dropped: ``null``, ``false``, ``0``, ``[]`` — what an absent value
  means anyway; informative ones (``"medium"``, ``20``, ``true``) stay.

Bounds, formats and ``additionalProperties`` stay: a model's rendering of the schema (see
:func:`tierwise.tokens.render_tools`) does not spend tokens on them, and they keep the model right.

Example:
    >>> from tierwise.tools import tool
    >>> @tool(tier="list")
    ... def list_tasks(query: str | None = None, offset: int = 0, limit: int = 20) -> list[str]:
    ...     '''List tasks.'''
    ...     return []
    >>> compact(list_tasks).parameters["properties"]
    {'query': {'type': 'string'}, 'offset': {'type': 'integer'}, 'limit': {'default': 20, 'type': 'integer'}}
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from tierwise.tools.definition import Tool

__all__ = ["compact", "compact_schema"]

_SILENT_DEFAULTS: tuple[Any, ...] = (None, False, 0, [])


def _silent(value: Any) -> bool:
    return any(value == d and type(value) is type(d) for d in _SILENT_DEFAULTS if d is not None) or (
        value is None
    )


def _unsaid(key: str, value: Any) -> bool:
    return key == "$defs" or (key == "default" and _silent(value))


def compact_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with ``$ref`` inlined, ``null`` dropped from optionals and silent defaults removed."""
    defs = schema.get("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(n) for n in node]
        if not isinstance(node, dict):
            return node
        options = node.get("anyOf")
        if isinstance(options, list) and len(options) == 2 and {"type": "null"} in options:
            kept = next(o for o in options if o != {"type": "null"})
            node = {**{k: v for k, v in node.items() if k != "anyOf"}, **kept}
        if "$ref" in node:
            target = copy.deepcopy(defs[node["$ref"].rsplit("/", 1)[-1]])
            node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        return {k: walk(v) for k, v in node.items() if not _unsaid(k, v)}

    return walk(schema)  # type: ignore[no-any-return]


def compact(tool_: Tool) -> Tool:
    """``tool_`` with a :func:`compact_schema` (the validation is the tool's own, unchanged)."""
    return dataclasses.replace(tool_, parameters=compact_schema(tool_.parameters))
