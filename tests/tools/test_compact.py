"""Compact schemas: fewer tokens on every call, the same validation (issue 17)."""

from __future__ import annotations

import asyncio
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from tierwise.tokens import get_counter
from tierwise.tools import ToolExecutor, ToolRegistry, tool
from tierwise.tools.compact import compact, compact_schema


class Window(BaseModel):
    """A window."""

    start: str | None = None


@tool(tier="list")
def list_things(
    query: Annotated[str | None, Field(description="Words")] = None,
    done: bool = False,
    flagged: bool = True,
    offset: int = 0,
    limit: Annotated[int, Field(le=50)] = 20,
    tags: list[str] = [],  # noqa: B006
    kind: Literal["a", "b"] = "a",
    window: Window | None = None,
) -> dict[str, object]:
    """List things."""
    return {"query": query, "done": done, "offset": offset, "window": window}


def test_silent_defaults_and_nulls_go_informative_ones_stay() -> None:
    props = compact(list_things).parameters["properties"]
    assert props["query"] == {"description": "Words", "type": "string"}  # no anyOf null, no default null
    assert props["done"] == {"type": "boolean"} and props["offset"] == {"type": "integer"}
    assert props["tags"] == {"items": {"type": "string"}, "type": "array"}
    assert props["flagged"]["default"] is True and props["limit"]["default"] == 20
    assert props["limit"]["maximum"] == 50 and props["kind"]["default"] == "a"
    assert props["window"]["properties"] == {"start": {"type": "string"}}  # $ref inlined
    assert "$defs" not in compact(list_things).parameters


def test_compact_costs_fewer_tokens() -> None:
    counter = get_counter()
    before = counter.count_tools([list_things.to_openai()])
    after = counter.count_tools([compact(list_things).to_openai()])
    assert after < before


def test_validation_is_unchanged() -> None:
    executor = ToolExecutor(ToolRegistry([compact(list_things)]))
    ok = asyncio.run(executor.execute("c1", "list_things", '{"query": null, "window": {"start": "x"}}'))
    assert ok.success and '"query":null' in ok.content
    bad = asyncio.run(executor.execute("c2", "list_things", '{"nonsense": 1}'))
    assert not bad.success and "nonsense" in bad.content


def test_compact_schema_leaves_its_input_alone() -> None:
    schema = list_things.parameters
    before = repr(schema)
    compact_schema(schema)
    assert repr(schema) == before
