from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field, ValidationError

from tierwise.tools import TIER_RESULT_TOKENS, Tool, ToolContext, ToolDefinitionError, tool
from tierwise.tools._docstrings import parse_docstring


class Window(BaseModel):
    start: str
    end: str


@tool(tier="list")
def list_tasks(
    project_id: str,
    priority: list[Literal["low", "medium", "high"]] | None = None,
    limit: Annotated[int, Field(ge=1, le=50, description="How many to return (1-50).")] = 20,
    sort_by: Literal["start_date", "priority"] = "start_date",
    tags: list[str] = Field(default_factory=list, max_length=5),  # noqa: B008 - what tools write
    window: Window | None = None,
    context: ToolContext | None = None,
) -> dict[str, Any]:
    """List the user's tasks, abbreviated.

    Each task carries a 100-character preview; call get_task_details for one in full.

    Args:
        project_id: The project, e.g. proj_q4_launch.
        priority: Only tasks of these priorities.
        limit: Not used: the Field description wins.
        tags (list[str]): Tags the tasks must all carry,
            matched exactly.

    Returns:
        The tasks and a message for the model.

    Raises:
        LookupError: no such project.
    """
    return {"project": project_id, "user": context.user_id if context else None}


def params(t: Tool) -> dict[str, Any]:
    return t.to_openai()["function"]["parameters"]


def test_openai_definition_shape() -> None:
    definition = list_tasks.to_openai()
    assert definition["type"] == "function"
    assert set(definition["function"]) == {"name", "description", "parameters"}
    assert definition["function"]["name"] == "list_tasks"
    schema = definition["function"]["parameters"]
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["project_id"]


def test_description_is_summary_and_body_before_sections() -> None:
    assert list_tasks.description == (
        "List the user's tasks, abbreviated.\n\n"
        "Each task carries a 100-character preview; call get_task_details for one in full."
    )
    assert "Returns" not in list_tasks.description and "LookupError" not in list_tasks.description


def test_rich_signature_schema() -> None:
    props = params(list_tasks)["properties"]
    assert list(props) == ["project_id", "priority", "limit", "sort_by", "tags", "window"]
    assert props["project_id"] == {"description": "The project, e.g. proj_q4_launch.", "type": "string"}
    # Optional list of Literal: anyOf array-of-enum / null, default null, docstring description
    assert props["priority"]["default"] is None
    assert props["priority"]["description"] == "Only tasks of these priorities."
    array, null = props["priority"]["anyOf"]
    assert array == {"items": {"enum": ["low", "medium", "high"], "type": "string"}, "type": "array"}
    assert null == {"type": "null"}
    # Annotated Field constraints and description (which wins over the docstring's)
    assert props["limit"] == {
        "default": 20,
        "description": "How many to return (1-50).",
        "maximum": 50,
        "minimum": 1,
        "type": "integer",
    }
    assert props["sort_by"] == {"default": "start_date", "enum": ["start_date", "priority"], "type": "string"}
    # a Field default with a factory: optional, constrained, continuation lines joined
    assert props["tags"]["description"] == "Tags the tasks must all carry, matched exactly."
    assert props["tags"]["maxItems"] == 5 and props["tags"]["items"] == {"type": "string"}
    # a nested model goes to $defs, closed and without generated titles
    window = params(list_tasks)["$defs"]["Window"]
    assert window["additionalProperties"] is False and "title" not in window
    assert all("title" not in p for p in props.values())


def test_tool_context_is_not_in_the_schema() -> None:
    assert "context" not in params(list_tasks)["properties"]
    assert list_tasks.context_parameter == "context"
    assert "context" not in list_tasks.parameter_names


def test_a_parameter_called_title_keeps_its_name() -> None:
    @tool(tier="action")
    def create_task(title: str, description: str = "") -> str:
        """Create a task."""
        return title

    assert list(params(create_task)["properties"]) == ["title", "description"]


def test_tier_result_tokens() -> None:
    assert dict(TIER_RESULT_TOKENS) == {"list": 200, "detail": 800, "action": 150, "calendar": 300}
    assert list_tasks.tier == "list" and list_tasks.result_tokens == 200

    @tool(tier="calendar", result_tokens=999, name="calendar-events")
    async def events() -> list[str]:
        """Events."""
        return []

    assert events.name == "calendar-events" and events.result_tokens == 999 and events.is_async


def test_validate_fills_defaults_and_refuses_inventions() -> None:
    values = list_tasks.validate({"project_id": "p1", "limit": "5"})
    assert values == {
        "project_id": "p1",
        "priority": None,
        "limit": 5,
        "sort_by": "start_date",
        "tags": [],
        "window": None,
    }
    with pytest.raises(ValidationError):
        list_tasks.validate({"project_id": "p1", "due": "tomorrow"})
    with pytest.raises(ValidationError):
        list_tasks.validate({"project_id": "p1", "limit": 51})


def test_parameter_names_that_clash_with_pydantic() -> None:
    @tool(tier="detail")
    def inspect_schema(schema: str, model_name: str, validate: bool = False, copy: int = 1) -> str:
        """Check a schema."""
        return f"{schema}{model_name}{validate}{copy}"

    assert list(params(inspect_schema)["properties"]) == ["schema", "model_name", "validate", "copy"]
    values = inspect_schema.validate({"schema": "s", "model_name": "m"})
    assert asyncio.run(inspect_schema.invoke(values)) == "smFalse1"


def test_invoke_passes_context_and_positional_only() -> None:
    @tool(tier="action")
    def scale(x: int, /, factor: int = 2, *, ctx: ToolContext) -> str:
        """Scale."""
        return f"{x * factor}:{ctx.user_id}"

    values = scale.validate({"x": 3})
    assert asyncio.run(scale.invoke(values, ToolContext(user_id="u1"))) == "6:u1"
    assert scale(4, ctx=ToolContext()) == "8:None"  # the tool is still callable directly


def test_dataclass_and_bare_function_without_docstring() -> None:
    @dataclass
    class Slot:
        start: str

    @tool(tier="calendar")
    def book(slot: Slot) -> str:
        return slot.start

    assert book.description == ""
    assert "description" not in book.to_openai()["function"]
    assert book.validate({"slot": {"start": "9:00"}})["slot"] == Slot("9:00")


def test_to_openai_returns_a_copy() -> None:
    definition = list_tasks.to_openai()
    definition["function"]["parameters"]["properties"].clear()
    assert params(list_tasks)["properties"]


class Plain:
    pass


def takes_a_plain_object(thing: Plain) -> None:
    """Not describable."""


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: Tool.from_function(lambda x: x, tier="list", name="f"), "no type hint"),
        (lambda: Tool.from_function(lambda: 1, tier="list"), "not valid"),  # '<lambda>'
        (lambda: Tool.from_function(print, tier="nope", name="p"), "unknown tier"),  # type: ignore[arg-type]
        (lambda: Tool.from_function(lambda *a: 1, tier="list", name="f"), "*a"),
        (lambda: Tool.from_function(lambda: 1, tier="list", name="f", result_tokens=0), "result_tokens"),
        (lambda: Tool.from_function(takes_a_plain_object, tier="list"), "cannot be described in JSON schema"),
    ],
)
def test_definition_errors_name_the_fix(build: Any, message: str) -> None:
    with pytest.raises(ToolDefinitionError, match=message.replace("*", r"\*")):
        build()


def test_docstring_parser_sections() -> None:
    parsed = parse_docstring(
        """Summary.

        Body line one
        body line two.

        Arguments:
            a: first.
            b (int, optional): second,
                continued.

        Example:
            >>> f(a=1)
        """
    )
    assert parsed.description == "Summary.\n\nBody line one\nbody line two."
    assert parsed.params == {"a": "first.", "b": "second, continued."}
    assert parse_docstring(None).description == ""


def test_tools_are_hashable_by_identity() -> None:
    assert len({list_tasks, list_tasks}) == 1


def test_a_tool_context_subclass_is_recognised() -> None:
    @dataclass(frozen=True)
    class AppContext(ToolContext):
        workspace: str = "default"

    @tool(tier="detail")
    def where(ctx: AppContext) -> str:
        """Which workspace."""
        return ctx.workspace

    assert where.context_parameter == "ctx" and params(where)["properties"] == {}
    assert asyncio.run(where.invoke({}, AppContext(workspace="acme"))) == "acme"
