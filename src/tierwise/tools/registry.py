"""The tools a chat may call, by name: registered once, looked up by the executor.

Definitions come out sorted by name, so the same tools give the same pack (and the same checksum)
whatever order they were registered in.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from tierwise.errors import InputError
from tierwise.tools.definition import Tier, Tool, ToolDefinitionError

__all__ = ["ToolRegistry", "UnknownToolError"]


class UnknownToolError(InputError, LookupError):
    """No tool of this name is registered; the message lists those that are."""


class ToolRegistry:
    """Tools by name.

    Example:
        >>> from tierwise.tools import tool
        >>> @tool(tier="list")
        ... def list_tasks(limit: int = 20) -> list[str]:
        ...     '''List tasks.'''
        ...     return []
        >>> registry = ToolRegistry([list_tasks])
        >>> "list_tasks" in registry, registry.names()
        (True, ['list_tasks'])
        >>> registry["get_task"]
        Traceback (most recent call last):
        ...
        tierwise.tools.registry.UnknownToolError: unknown tool 'get_task'; available: list_tasks
    """

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for item in tools:
            self.register(item)

    def register(self, tool: Tool, *, replace: bool = False) -> Tool:
        """Add ``tool``; returns it, so ``register`` also works as a decorator on a :class:`Tool`.

        Raises:
            ToolDefinitionError: not a :class:`Tool` (decorate the function with ``@tool`` first), or
                another tool already has its name and ``replace`` is false.
        """
        if not isinstance(tool, Tool):
            raise ToolDefinitionError(
                f"register() takes a Tool, got {type(tool).__name__}; decorate the function with "
                "@tool(tier=...) or build one with Tool.from_function"
            )
        if tool.name in self._tools and not replace and self._tools[tool.name] is not tool:
            raise ToolDefinitionError(
                f"a tool named {tool.name!r} is already registered; pass replace=True to replace it"
            )
        self._tools[tool.name] = tool
        return tool

    def unregister(self, name: str) -> None:
        """Remove the tool called ``name`` (nothing happens if there is none)."""
        self._tools.pop(name, None)

    def get(self, name: str) -> Tool | None:
        """The tool called ``name``, or ``None``."""
        return self._tools.get(name)

    def __getitem__(self, name: str) -> Tool:
        """The tool called ``name``.

        Raises:
            UnknownToolError: none is registered; the message lists the available tools.
        """
        found = self._tools.get(name)
        if found is None:
            raise UnknownToolError(self.unknown(name))
        return found

    def unknown(self, name: str) -> str:
        """The message for a call to an unregistered tool: ``unknown tool 'x'; available: a, b``."""
        available = ", ".join(self.names()) or "none"
        return f"unknown tool {name[:80]!r}; available: {available}"

    def names(self) -> list[str]:
        """The registered names, sorted."""
        return sorted(self._tools)

    def tools(self, *, tier: Tier | None = None) -> list[Tool]:
        """The registered tools sorted by name (only those of ``tier``, if given)."""
        return [self._tools[n] for n in self.names() if tier is None or self._tools[n].tier == tier]

    def definitions(self) -> list[dict[str, Any]]:
        """OpenAI tool definitions of every tool, sorted by name (a deterministic pack)."""
        return [t.to_openai() for t in self.tools()]

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(self.tools())

    def __len__(self) -> int:
        return len(self._tools)

    def __repr__(self) -> str:
        return f"ToolRegistry({self.names()!r})"
