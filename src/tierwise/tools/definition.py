"""Tools from typed Python functions: name, description and JSON schema read from the function.

A :class:`Tool` is built by the :func:`tool` decorator (or :meth:`Tool.from_function`). Its
arguments model is a pydantic model made with :func:`pydantic.create_model` from the signature and
type hints, so the schema the model sees and the validation the executor runs cannot disagree:

- ``Annotated[int, Field(ge=1, le=50, description=…)]`` → ``minimum`` / ``maximum`` / ``description``;
- the docstring's google-style ``Args:`` entries describe parameters that have no ``Field`` description;
- defaults make a parameter optional; ``Literal[…]`` → ``enum``; ``X | None`` → ``anyOf`` with null;
- a parameter typed :class:`ToolContext` is not in the schema: the executor passes the call's context;
- unknown keys are refused (``additionalProperties: false``), since they are always model inventions.

Each tool belongs to one tier of seed 000 §4.1 (``list``, ``detail``, ``action``, ``calendar``), which
gives its average result size in tokens unless ``result_tokens`` says otherwise.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import re
import sys
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Annotated, Any, Literal, get_args, get_origin

import orjson
from pydantic import BaseModel, ConfigDict, Field, PydanticUserError, create_model
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from tierwise.errors import UserError
from tierwise.tools._docstrings import parse_docstring

if TYPE_CHECKING:
    from tierwise.memory.blobs import BlobStore
    from tierwise.memory.engine import Memory
    from tierwise.store import Store

__all__ = ["TIERS", "TIER_RESULT_TOKENS", "Tier", "Tool", "ToolContext", "ToolDefinitionError", "tool"]

Tier = Literal["list", "detail", "action", "calendar"]
"""Seed 000 §4.1 tool categories: abbreviated lists, full details, actions, calendar calls."""

TIERS: tuple[Tier, ...] = ("list", "detail", "action", "calendar")

TIER_RESULT_TOKENS: Mapping[Tier, int] = types.MappingProxyType(
    {"list": 200, "detail": 800, "action": 150, "calendar": 300}
)
"""Average result size per tier in tokens (seed 000 §4.1 ``averageResponseTokens``)."""

_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
# Keys whose value is one JSON schema, or a list of them; everything else (enum, default, …) is data.
_SCHEMA_KEYS = frozenset({"items", "additionalProperties", "not", "if", "then", "else", "contains"})
_SCHEMA_LISTS = frozenset({"anyOf", "allOf", "oneOf", "prefixItems"})
_SCHEMA_MAPS = frozenset({"properties", "$defs", "definitions", "patternProperties"})


class ToolDefinitionError(UserError):
    """A function cannot become a tool (no type hint, ``*args``, a bad name or tier …)."""


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What a tool may need beyond its arguments; declare a parameter of this type to receive it.

    It is never part of the schema the model sees. Subclass it to hand tools typed extras, and pass
    an instance to :meth:`~tierwise.tools.ToolExecutor.execute`.

    Attributes:
        user_id: the user the call acts for (every store call is scoped by it).
        chat_id: the chat the call was made in.
        message_id: the stored assistant message that made the call, if known.
        call_id: the model's id of this tool call.
        store: the store, if the executor has one.
        memory: the chat's memory engine, if the executor has one.
        blobs: where large results are kept, if the executor has a blob store.
        extras: anything else the application wants to hand its tools.
    """

    user_id: str | None = None
    chat_id: str | None = None
    message_id: str | None = None
    call_id: str | None = None
    store: Store | None = None
    memory: Memory | None = None
    blobs: BlobStore | None = None
    extras: Mapping[str, Any] = field(default_factory=dict)


def _is_context(annotation: Any) -> bool:
    """True for ``ToolContext`` (or a subclass), ``Annotated[…]`` of it and ``ToolContext | None``."""
    if get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    if get_origin(annotation) in (typing.Union, types.UnionType):
        members = [a for a in get_args(annotation) if a is not type(None)]
        annotation = members[0] if len(members) == 1 else None
    return isinstance(annotation, type) and issubclass(annotation, ToolContext)


def _has_description(annotation: Any, default: Any) -> bool:
    infos = [m for m in get_args(annotation)[1:] if isinstance(m, FieldInfo)]
    if get_origin(annotation) is Annotated and any(i.description for i in infos):
        return True
    return isinstance(default, FieldInfo) and bool(default.description)


def _clean_schema(node: Any) -> Any:
    """Drop pydantic's generated ``title`` keys and close every object schema that lists properties."""
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title" and isinstance(value, str):
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: _clean_schema(sub) for name, sub in value.items()}
        elif key in _SCHEMA_KEYS:
            out[key] = _clean_schema(value)
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [_clean_schema(sub) for sub in value]
        else:
            out[key] = value
    if out.get("type") == "object" and "properties" in out:
        out.setdefault("additionalProperties", False)
    return out


@dataclass(frozen=True, slots=True)
class _Param:
    name: str  # the Python parameter name (and the JSON property name)
    field: str  # the pydantic field name (p0, p1 …: no clash with BaseModel attributes)
    positional_only: bool


@dataclass(frozen=True, eq=False)
class Tool:
    """A function the model can call, with its definition and argument validation.

    Build one with :func:`tool` or :meth:`from_function`; calling the tool calls the function.

    Attributes:
        name: the name the model calls it by (``[A-Za-z0-9_-]{1,64}``).
        description: what it does, for the model.
        tier: its seed 000 category.
        result_tokens: the average size of its result in tokens (a budgeting hint).
        function: the wrapped function (sync or async).
        arguments_model: the pydantic model that validates the model's arguments.
        parameters: the JSON schema of the arguments (``additionalProperties: false``).
        context_parameter: the name of the :class:`ToolContext` parameter, if any.
        is_async: whether ``function`` is a coroutine function.
        recap: what a result of this tool is re-sent as once the turn that asked for it is over —
            its abbreviated form, keeping the ids the model needs to ask again (``None``: kept as it
            came). Given the result's text, it returns the recap's text, or ``None`` to keep it.

    Example:
        >>> @tool(tier="detail")
        ... def get_task_details(task_id: str, include_subtasks: bool = False) -> dict[str, str]:
        ...     '''Everything about one task.
        ...
        ...     Args:
        ...         task_id: the task's id, e.g. task_001.
        ...         include_subtasks: also return its subtasks.
        ...     '''
        ...     return {"id": task_id}
        >>> get_task_details.result_tokens, get_task_details.parameters["required"]
        (800, ['task_id'])
        >>> get_task_details.parameters["properties"]["task_id"]
        {'description': "the task's id, e.g. task_001.", 'type': 'string'}
        >>> get_task_details("task_001")
        {'id': 'task_001'}
    """

    name: str
    description: str
    tier: Tier
    result_tokens: int
    function: Callable[..., Any]
    arguments_model: type[BaseModel]
    parameters: dict[str, Any]
    context_parameter: str | None
    is_async: bool
    _params: tuple[_Param, ...] = field(repr=False, compare=False)
    recap: Callable[[str], str | None] | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_function(
        cls,
        fn: Callable[..., Any],
        *,
        tier: Tier,
        name: str | None = None,
        description: str | None = None,
        result_tokens: int | None = None,
        localns: Mapping[str, Any] | None = None,
    ) -> Tool:
        """Build a tool from a typed function.

        Args:
            fn: the function (sync or async); every parameter but a :class:`ToolContext` one needs a
                type hint.
            tier: ``"list"``, ``"detail"``, ``"action"`` or ``"calendar"``.
            name: the tool's name (default: the function's name).
            description: what it does (default: the docstring before its first section).
            result_tokens: average result size in tokens (default: the tier's, seed 000 §4.1).
            localns: names for resolving string hints (default: the caller's local names, so types
                defined in the function that builds the tool resolve too).

        Raises:
            ToolDefinitionError: an unknown tier, an invalid name, a parameter without a type hint,
                ``*args`` / ``**kwargs``, or hints that do not resolve.
        """
        if tier not in TIERS:
            raise ToolDefinitionError(f"unknown tier {tier!r}; use one of {', '.join(TIERS)}")
        tool_name = name if name is not None else getattr(fn, "__name__", None)
        if not isinstance(tool_name, str) or not _NAME.fullmatch(tool_name):
            raise ToolDefinitionError(
                f"tool name {tool_name!r} is not valid: use 1-64 letters, digits, '_' or '-' (pass name=…)"
            )
        if result_tokens is not None and (isinstance(result_tokens, bool) or result_tokens <= 0):
            raise ToolDefinitionError(f"result_tokens must be a positive integer, got {result_tokens!r}")
        target = fn.func if isinstance(fn, functools.partial) else fn
        try:
            if localns is None:
                localns = sys._getframe(1).f_locals
            hints = typing.get_type_hints(target, localns=dict(localns), include_extras=True)
            signature = inspect.signature(fn)
        except (NameError, TypeError, ValueError) as exc:
            raise ToolDefinitionError(
                f"cannot read the type hints of {tool_name}: {exc} "
                "(define or import every hinted name where the function is defined)"
            ) from exc
        doc = parse_docstring(inspect.getdoc(target))
        fields: dict[str, Any] = {}
        params: list[_Param] = []
        context: str | None = None
        for index, param in enumerate(signature.parameters.values()):
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise ToolDefinitionError(
                    f"{tool_name}: *{param.name} / **{param.name} cannot be described to a model; "
                    "declare each parameter by name"
                )
            annotation = hints.get(param.name, param.annotation)
            if annotation is inspect.Parameter.empty:
                raise ToolDefinitionError(
                    f"{tool_name}: parameter {param.name!r} has no type hint; "
                    f"annotate it (e.g. {param.name}: str)"
                )
            if _is_context(annotation):
                context = param.name
                continue
            default = param.default
            if not _has_description(annotation, default) and param.name in doc.params:
                annotation = Annotated[annotation, Field(description=doc.params[param.name])]
            factory: Callable[..., Any] | None = None
            if isinstance(default, FieldInfo):  # ``x: int = Field(3, ge=1)``
                annotation = Annotated[annotation, default]
                factory, default = default.default_factory, default.default
            required = factory is None and (
                default is inspect.Parameter.empty or default is PydanticUndefined
            )
            internal = f"p{index}"
            if factory is not None:
                spec = Field(default_factory=factory, alias=param.name)
            else:
                spec = Field(... if required else default, alias=param.name)
            fields[internal] = (annotation, spec)
            params.append(_Param(param.name, internal, param.kind is param.POSITIONAL_ONLY))
        try:
            model: type[BaseModel] = create_model(
                f"{tool_name}_arguments", __config__=ConfigDict(extra="forbid"), **fields
            )
            schema = _clean_schema(model.model_json_schema())
        except PydanticUserError as exc:  # a type with no JSON form (a plain class, a callable …)
            why = exc.message.splitlines()[0]
            raise ToolDefinitionError(
                f"{tool_name}: a parameter type cannot be described in JSON schema ({why}); "
                "use str, numbers, bool, Literal, lists, dicts, pydantic models or dataclasses"
            ) from exc
        schema.setdefault("properties", {})
        schema.setdefault("additionalProperties", False)
        call = getattr(fn, "__call__", None)  # noqa: B004 - an object with an async __call__
        is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(call)
        return cls(
            name=tool_name,
            description=description if description is not None else doc.description,
            tier=tier,
            result_tokens=result_tokens if result_tokens is not None else TIER_RESULT_TOKENS[tier],
            function=fn,
            arguments_model=model,
            parameters=schema,
            context_parameter=context,
            is_async=is_async,
            _params=tuple(params),
        )

    @property
    def parameter_names(self) -> tuple[str, ...]:
        """The names of the parameters the model may pass, in signature order."""
        return tuple(p.name for p in self._params)

    def to_openai(self) -> dict[str, Any]:
        """The OpenAI tool definition: ``{"type": "function", "function": {name, description, parameters}}``.

        The result is a fresh copy; changing it does not change the tool.
        """
        definition: dict[str, Any] = orjson.loads(self._openai_json)  # a copy, ~20x faster than deepcopy
        return definition

    @cached_property
    def _openai_json(self) -> bytes:
        """:meth:`to_openai`'s definition as JSON, made once (a tool's definition does not change)."""
        function: dict[str, Any] = {"name": self.name}
        if self.description:
            function["description"] = self.description
        function["parameters"] = self.parameters
        return orjson.dumps({"type": "function", "function": function})

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Validate the model's arguments and return them as keyword values, defaults filled in.

        Raises:
            pydantic.ValidationError: a missing, unknown or mistyped argument.
        """
        instance = self.arguments_model.model_validate(dict(arguments))
        return {p.name: getattr(instance, p.field) for p in self._params}

    def _split(
        self, values: Mapping[str, Any], context: ToolContext | None
    ) -> tuple[list[Any], dict[str, Any]]:
        args = [values[p.name] for p in self._params if p.positional_only]
        kwargs = {p.name: values[p.name] for p in self._params if not p.positional_only}
        if self.context_parameter is not None:
            kwargs[self.context_parameter] = context if context is not None else ToolContext()
        return args, kwargs

    async def invoke(self, values: Mapping[str, Any], context: ToolContext | None = None) -> Any:
        """Run the function with validated ``values`` (from :meth:`validate`) and the context.

        A sync function runs in a worker thread (:func:`asyncio.to_thread`), so a slow one does not
        block the event loop; an awaitable it returns is awaited.
        """
        args, kwargs = self._split(values, context)
        if self.is_async:
            result = await self.function(*args, **kwargs)
        else:
            result = await asyncio.to_thread(self.function, *args, **kwargs)
        if inspect.isawaitable(result):
            result = await result
        return result

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the wrapped function directly (no validation, no context injection)."""
        return self.function(*args, **kwargs)


def tool(
    *,
    tier: Tier,
    name: str | None = None,
    description: str | None = None,
    result_tokens: int | None = None,
) -> Callable[[Callable[..., Any]], Tool]:
    """Decorator: turn a typed function into a :class:`Tool` (see :meth:`Tool.from_function`).

    Args:
        tier: ``"list"``, ``"detail"``, ``"action"`` or ``"calendar"`` (seed 000 §4.1).
        name: the tool's name (default: the function's name).
        description: what it does (default: the docstring before its first section).
        result_tokens: average result size in tokens (default: the tier's).

    Example:
        >>> @tool(tier="list", result_tokens=250)
        ... async def list_tasks(limit: int = 20) -> list[str]:
        ...     '''List the user's tasks, abbreviated.'''
        ...     return []
        >>> list_tasks.to_openai()["function"]["parameters"]["properties"]
        {'limit': {'default': 20, 'type': 'integer'}}
    """

    def wrap(fn: Callable[..., Any]) -> Tool:
        return Tool.from_function(
            fn,
            tier=tier,
            name=name,
            description=description,
            result_tokens=result_tokens,
            localns=sys._getframe(1).f_locals,
        )

    return wrap
