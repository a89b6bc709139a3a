"""OpenAI-format conversations: validation, tool-call groups, and their layers.

A conversation is ``{"messages": [...], "tools": [...]}`` as an OpenAI client would send it.
:func:`parse_conversation` validates one (pydantic) and turns mistakes into an
:class:`~tierwise.errors.InputError` whose one-line message names the fix.

:func:`group_messages` splits messages into the units a pack keeps or drops whole: an assistant
message that calls tools together with every result it received, or any other single message. A
tool result with no call before it, or a call missing a result, is an orphan: providers reject
both, so the packer never sends them and says so in its report.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from tierwise.errors import InputError
from tierwise.packing.layers import ContextLayer

__all__ = ["Conversation", "conversation_layers", "parse_conversation"]

Message = Mapping[str, Any]
ROLES = ("system", "developer", "user", "assistant", "tool")


class _FunctionCall(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str = Field(min_length=1)
    arguments: str = ""

    @field_validator("arguments", mode="before")
    @classmethod
    def _arguments_as_json(cls, value: Any) -> Any:
        # Some clients send the arguments as an object; OpenAI's wire format is a JSON string.
        if isinstance(value, dict):
            return json.dumps(value, ensure_ascii=False)
        return value


class _ToolCall(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: str = Field(min_length=1)
    type: Literal["function"] = "function"
    function: _FunctionCall


class _Message(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: str
    content: str | list[dict[str, Any]] | None = None
    name: str | None = None
    tool_calls: list[_ToolCall] | None = None
    tool_call_id: str | None = None

    @field_validator("role")
    @classmethod
    def _known_role(cls, value: str) -> str:
        if value not in ROLES:
            raise ValueError(f"unknown role {value!r}; use one of {', '.join(ROLES)}")
        return value

    @model_validator(mode="after")
    def _shape(self) -> _Message:
        if self.role == "tool" and not self.tool_call_id:
            raise ValueError("a tool message needs the tool_call_id of the call it answers")
        if self.role in ("system", "developer", "user") and self.content is None:
            raise ValueError(f"a {self.role} message needs content")
        if self.tool_calls and self.role != "assistant":
            raise ValueError("only assistant messages may carry tool_calls")
        return self


class _FunctionDef(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str = Field(min_length=1)
    description: str | None = None
    parameters: dict[str, Any] | None = None


class _Tool(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: Literal["function"] = "function"
    function: _FunctionDef


class Conversation(BaseModel):
    """A validated OpenAI-style request body: messages and optional tools."""

    model_config = ConfigDict(extra="allow")
    messages: list[_Message] = Field(min_length=1)
    tools: list[_Tool] = Field(default_factory=list)

    def message_dicts(self) -> list[dict[str, Any]]:
        """The messages as plain dicts, without unset fields."""
        return [m.model_dump(exclude_none=True) for m in self.messages]

    def tool_dicts(self) -> list[dict[str, Any]]:
        """The tool definitions as plain dicts, without unset fields."""
        return [t.model_dump(exclude_none=True) for t in self.tools]


def _where(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def parse_conversation(data: Any) -> Conversation:
    """Validate an OpenAI-style ``{"messages": [...], "tools": [...]}`` object.

    Raises:
        InputError: with the first problem's location and the fix, on one line.
    """
    if not isinstance(data, Mapping):
        raise InputError(
            'the input must be a JSON object like {"messages": [...], "tools": [...]}, '
            f"not a {type(data).__name__}"
        )
    try:
        return Conversation.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        msg = str(err["msg"]).removeprefix("Value error, ")
        if err["type"] == "missing" and err["loc"] == ("messages",):
            msg = 'missing "messages"; give a list of {"role": ..., "content": ...} objects'
        elif err["type"] == "too_short" and err["loc"] == ("messages",):
            msg = '"messages" is empty; give at least one message'
        where = _where(tuple(err["loc"]))
        more = f" (and {len(exc.errors()) - 1} more problems)" if len(exc.errors()) > 1 else ""
        raise InputError(f"{where}: {msg}{more}" if where else f"{msg}{more}") from None


def conversation_layers(
    messages: Sequence[Message], tools: Sequence[Mapping[str, Any]] = ()
) -> list[ContextLayer]:
    """Layers for a plain conversation: system prompt, tools, history and input.

    The leading system (or developer) messages become the guaranteed ``system`` layer, sent as
    given; the newest
    user message and everything after it (a turn in progress, with its tool calls) become the
    guaranteed ``input`` layer; everything between is ``history``, dropped oldest group first.
    """
    start = 0
    while start < len(messages) and messages[start].get("role") in ("system", "developer"):
        start += 1
    layers: list[ContextLayer] = []
    if start:  # sent first and as given
        layers.append(ContextLayer("system", "system", messages[:start]))
    if tools:
        layers.append(ContextLayer("tools", "tools", tools))
    rest = messages[start:]
    last_user = next((i for i in range(len(rest) - 1, -1, -1) if rest[i].get("role") == "user"), None)
    history: Sequence[Message]
    current: Sequence[Message]
    if last_user is None:
        history, current = rest, []
    else:
        history, current = rest[:last_user], rest[last_user:]
    if history:
        layers.append(ContextLayer("history", "history", history))
    if current:
        layers.append(ContextLayer("input", "input", current))
    return layers
