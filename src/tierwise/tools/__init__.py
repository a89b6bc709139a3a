"""Tools the model can call: typed functions in, validated and recorded executions out.

::

    @tool(tier=…) / Tool.from_function ─► Tool (name, description, JSON schema, validation)
                                            │
    ToolRegistry (by name; definitions sorted) ◄┘
        │
    ToolExecutor.execute / execute_many ─► ToolResult (content for the model, success, error,
        validate · run with timeout · failure strategies · blobs for large results · store log)

Example:
    >>> import asyncio
    >>> from typing import Literal
    >>> @tool(tier="list")
    ... def list_tasks(priority: Literal["low", "high"] = "high", limit: int = 20) -> list[str]:
    ...     '''List the user's tasks, abbreviated.'''
    ...     return [f"{priority} task {i}" for i in range(min(limit, 2))]
    >>> executor = ToolExecutor(ToolRegistry([list_tasks]))
    >>> asyncio.run(executor.execute("call_1", "list_tasks", '{"limit": 2}')).content
    '["high task 0","high task 1"]'
"""

from __future__ import annotations

from tierwise.tools.definition import (
    TIER_RESULT_TOKENS,
    TIERS,
    Tier,
    Tool,
    ToolContext,
    ToolDefinitionError,
    tool,
)
from tierwise.tools.executor import ToolExecutor
from tierwise.tools.registry import ToolRegistry, UnknownToolError
from tierwise.tools.results import ToolCall, ToolResult, serialize_result
from tierwise.tools.strategies import DEFAULT_STRATEGIES, FALLBACKS, FailureStrategy, Fallback

__all__ = [
    "DEFAULT_STRATEGIES",
    "FALLBACKS",
    "TIERS",
    "TIER_RESULT_TOKENS",
    "FailureStrategy",
    "Fallback",
    "Tier",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolDefinitionError",
    "ToolExecutor",
    "ToolRegistry",
    "ToolResult",
    "UnknownToolError",
    "serialize_result",
    "tool",
]
