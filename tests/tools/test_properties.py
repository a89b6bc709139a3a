from __future__ import annotations

import asyncio
import json
from typing import Annotated, Any, Literal

from hypothesis import given
from hypothesis import strategies as st
from pydantic import Field

from tierwise.tools import ToolExecutor, ToolRegistry, ToolResult, tool


@tool(tier="list")
def list_tasks(
    project_id: str,
    status: list[Literal["backlog", "done"]] | None = None,
    limit: Annotated[int, Field(ge=1, le=50)] = 20,
) -> dict[str, Any]:
    """List tasks."""
    return {"project": project_id, "status": status, "limit": limit}


@tool(tier="action")
async def set_flag(on: bool) -> str:
    """Set a flag."""
    return "on" if on else "off"


EXECUTOR = ToolExecutor(ToolRegistry([list_tasks, set_flag]), timeout_s=5)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=12,
)
keys = st.sampled_from(["project_id", "status", "limit", "on", "extra"]) | st.text(max_size=8)
argument_objects = st.dictionaries(keys, json_values, max_size=5).map(json.dumps)
edge_cases = st.sampled_from(
    ['{"project_id": "\\ud800"}', "[" * 5000, '{"limit": 1e999}', '{"limit": NaN}', "", "  ", '{"a": 1}{}']
)
argument_strings = st.text(max_size=80) | argument_objects | json_values.map(json.dumps) | edge_cases


def run(name: str, arguments: str) -> ToolResult:
    return asyncio.run(EXECUTOR.execute("call", name, arguments))


@given(name=st.sampled_from(["list_tasks", "set_flag", "unknown"]), arguments=argument_strings)
def test_any_argument_string_gives_a_result_never_an_exception(name: str, arguments: str) -> None:
    result = run(name, arguments)
    assert result.call_id == "call" and result.name == name
    assert isinstance(result.content, str) and result.content
    if result.success:
        assert result.error is None and result.attempts == 1
    else:
        assert result.error and result.content.startswith("error: ")
        problems = [line for line in result.content.splitlines() if line.startswith("- ")]
        assert len(problems) <= 6  # at most five, then "… and N more"


@given(project=st.text(max_size=30), limit=st.integers(min_value=1, max_value=50))
def test_valid_arguments_always_succeed(project: str, limit: int) -> None:
    result = run("list_tasks", json.dumps({"project_id": project, "limit": limit}))
    assert result.success and json.loads(result.content) == {
        "project": project,
        "status": None,
        "limit": limit,
    }
