"""The body of ``POST /v1/chat/completions``: read, checked, and what of it goes upstream unchanged.

Everything that can fail is checked here, before the upstream model is called (and billed): the
body's size (413 over ``TIERWISE_MAX_BODY_BYTES``), JSON nested deeper than :data:`MAX_DEPTH`,
values out of OpenAI's ranges or of another JSON type (booleans and numbers are never coerced:
``0`` is not ``false``, ``"5"`` not ``5``), a ``user`` longer than :data:`MAX_USER_CHARS` (all 400,
naming the fix); tool calls and results that do not pair up: :mod:`tierwise.server.openai_pairs`.

What tierwise does not understand it carries (decision 69): a message's other fields
(``reasoning_content``, ``refusal``, ``audio``, ``prefix``, ``cache_control``…), content parts of
other types (``input_audio``, ``file``…), tools and tool calls of other types (``custom``) and
other ``tool_choice`` objects (``allowed_tools``) are accepted and forwarded as sent; only the
parts tierwise reads (text, images, function tools and calls) are checked field by field.
What the client sent beyond the conversation is forwarded as sent (:func:`forwarded`):
``response_format``, ``n``, ``stop``, ``seed``, ``top_p``, penalties, ``logprobs``, ``tool_choice``,
``max_tokens`` (only if sent), ``user``, ``metadata``, unknown fields… — tierwise adds nothing.
:func:`extra_choices` puts back together what the upstream answered beyond the text and function
calls (log probabilities, a refusal, reasoning, calls of other types, the further choices when
``n`` > 1); :func:`answer_message` is the answer as the client gets it, and as it is stored.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

from fastapi import Request
from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    PlainValidator,
    Strict,
    Tag,
    TypeAdapter,
    model_validator,
)

from tierwise.providers.base import ChoiceDelta, ModelResponse

__all__ = [
    "MAX_DEPTH",
    "MAX_USER_CHARS",
    "NAMED_CHOICE_NEEDS_TOOLS",
    "BadRequest",
    "ChatCompletionRequest",
    "answer_message",
    "as_sent",
    "extra_choices",
    "forwarded",
    "parse_body",
    "read_body",
]

MAX_DEPTH = 64  # JSON nesting levels (OpenAI's structured outputs allow 5 in a schema)
MAX_USER_CHARS = 512
_CONTAINERS = (dict, list)  # what json.loads nests
# Fields tierwise itself decides, or sends in the pack's place; the rest is forwarded as sent.
_OWN = frozenset({"messages", "model", "stream", "stream_options", "tools", "tool_choice", "temperature"})
# Booleans and numbers are taken only as JSON booleans and numbers (OpenAI refuses ``0`` for
# ``parallel_tool_calls`` and ``"5"`` for ``max_tokens``), not coerced from other types.
_STRICT = Strict()
_INTEGERS = ("max_tokens", "max_completion_tokens", "n", "seed", "top_logprobs")
_CONVERSATION = {"required": ["role"], "properties": {"role": {"enum": ["user", "assistant", "tool"]}}}


class BadRequest(Exception):
    """A request refused before anything was sent upstream: its status, OpenAI error code and parameter."""

    def __init__(self, status: int, message: str, code: str | None, param: str | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.param = status, code, param


# -- the model ---------------------------------------------------------------------------------


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore")


class FunctionCall(_Lenient):
    """A tool call's function: its name and JSON arguments."""

    name: str
    arguments: str = "{}"


class ToolCallIn(BaseModel):
    """A tool call in an assistant message of the history: a function's, or of another type as sent."""

    model_config = ConfigDict(extra="allow")

    id: str
    type: str = "function"
    function: FunctionCall | None = None

    @model_validator(mode="after")
    def _function_named(self) -> ToolCallIn:
        if self.type == "function" and self.function is None:
            raise ValueError("a function tool call needs its 'function' (name and arguments)")
        return self


class TextPart(BaseModel):
    """A content part of text (other keys, such as ``cache_control``, are kept as sent)."""

    model_config = ConfigDict(extra="allow")

    type: Literal["text"]
    text: str


class ImageURL(BaseModel):
    """Where an image part's image is, and at which detail."""

    model_config = ConfigDict(extra="allow")

    url: str
    detail: Literal["auto", "low", "high"] = "auto"


class ImagePart(BaseModel):
    """A content part holding an image."""

    model_config = ConfigDict(extra="allow")

    type: Literal["image_url"]
    image_url: ImageURL


class OtherPart(BaseModel):
    """A content part of another type (``input_audio``, ``file``…): forwarded as sent, counted by its JSON."""

    model_config = ConfigDict(
        extra="allow", json_schema_extra={"not": {"properties": {"type": {"enum": ["text", "image_url"]}}}}
    )

    type: Annotated[str, Field(min_length=1)]


def _kind(value: Any, read: tuple[str, ...]) -> str | None:
    """A union member's tag: its ``type`` when tierwise reads that type, else ``"other"``."""
    if isinstance(value, BaseModel):  # (a model already validated: serialising)
        kind = getattr(value, "type", None)
    elif isinstance(value, Mapping):
        kind = value.get("type")
    else:
        return None
    return kind if kind in read else "other"


def _part_kind(value: Any) -> str | None:
    """``"text"`` or ``"image_url"`` for the parts tierwise reads, else ``"other"``."""
    return _kind(value, ("text", "image_url"))


# Text and image parts are read (and counted exactly); a part of another type is carried as sent.
ContentPart = Annotated[
    Annotated[TextPart, Tag("text")]
    | Annotated[ImagePart, Tag("image_url")]
    | Annotated[OtherPart, Tag("other")],
    Discriminator(_part_kind),
]
_PARTS: TypeAdapter[Any] = TypeAdapter(list[ContentPart])


def _content_as_sent(value: Any) -> Any:
    """A message's content checked (a text, or a list of parts), and kept exactly as sent."""
    if isinstance(value, list):
        _PARTS.validate_python(value)
    elif value is not None and not isinstance(value, str):
        raise ValueError("content must be a string or a list of content parts")
    return value


class MessageIn(_Lenient):
    """One message of the conversation: OpenAI's fields checked; the message is forwarded as sent.

    Fields tierwise does not read (``reasoning_content``, ``refusal``, ``audio``, ``prefix``,
    ``cache_control``…) are not checked here, and are kept: the endpoint stores and forwards the
    client's own dict (:func:`as_sent`), not this model.
    """

    # A tool message answers a call: the schema says so, as the 400 for one without its id does.
    model_config = ConfigDict(
        json_schema_extra={
            "if": {"properties": {"role": {"const": "tool"}}, "required": ["role"]},
            "then": {"required": ["tool_call_id"], "properties": {"tool_call_id": {"type": "string"}}},
        }
    )

    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: Annotated[
        str | list[dict[str, Any]] | None,
        PlainValidator(_content_as_sent, json_schema_input_type=str | list[ContentPart] | None),
    ] = None
    name: str | None = None
    tool_calls: list[ToolCallIn] | None = None
    tool_call_id: str | None = None


def as_sent(message: Mapping[str, Any]) -> dict[str, Any]:
    """The client's message as kept and forwarded: every field as sent, nothing added (a copy).

    Example:
        >>> as_sent({"role": "assistant", "tool_calls": [], "reasoning_content": "Paris, so…"})
        {'role': 'assistant', 'tool_calls': [], 'reasoning_content': 'Paris, so…'}
    """
    return dict(message)


class FunctionDef(BaseModel):
    """A tool's function definition (kept as sent, unknown keys included)."""

    model_config = ConfigDict(extra="allow")

    name: Annotated[str, Field(min_length=1, max_length=64)]


class ToolIn(BaseModel):
    """A function tool the client offers (forwarded as sent, unknown keys included)."""

    model_config = ConfigDict(extra="allow")

    type: Literal["function"] = "function"
    function: FunctionDef


_NOT_FUNCTION: dict[str, Any] = {"not": {"properties": {"type": {"const": "function"}}}}
"""Another type than ``function`` (its own member of the union): so a function tool or a named choice
matches exactly one ``oneOf`` branch of the schema, as the discriminator reads it."""


class OtherTool(BaseModel):
    """A tool of another type (``custom``…): forwarded as sent, counted by its JSON."""

    model_config = ConfigDict(extra="allow", json_schema_extra=_NOT_FUNCTION)

    type: Annotated[str, Field(min_length=1)]


def _tool_kind(value: Any) -> str | None:
    """``"function"`` for a function tool or choice (the type may be left out), else ``"other"``."""
    return _kind({"type": "function", **value} if isinstance(value, Mapping) else value, ("function",))


Tool = Annotated[
    Annotated[ToolIn, Tag("function")] | Annotated[OtherTool, Tag("other")],
    Discriminator(_tool_kind),
]


class NamedFunction(_Lenient):
    """The function a named ``tool_choice`` forces."""

    name: Annotated[str, Field(min_length=1)]


class NamedToolChoice(_Lenient):
    """``{"type": "function", "function": {"name": …}}``: the model must call this tool."""

    type: Literal["function"] = "function"
    function: NamedFunction


class OtherToolChoice(BaseModel):
    """A ``tool_choice`` object of another type (``allowed_tools``, ``custom``…), forwarded as sent."""

    model_config = ConfigDict(extra="allow", json_schema_extra=_NOT_FUNCTION)

    type: Annotated[str, Field(min_length=1)]


ToolChoice = Annotated[
    Annotated[NamedToolChoice, Tag("function")] | Annotated[OtherToolChoice, Tag("other")],
    Discriminator(_tool_kind),
]


class ResponseFormat(BaseModel):
    """``response_format``: ``text``, ``json_object`` or ``json_schema`` (kept as sent)."""

    model_config = ConfigDict(extra="allow")

    type: str


class StreamOptions(_Lenient):
    """``stream_options``."""

    include_usage: Annotated[bool, _STRICT] = False


NAMED_CHOICE_NEEDS_TOOLS: dict[str, Any] = {
    "if": {
        "required": ["tool_choice"],
        "properties": {"tool_choice": {"type": "object", "properties": {"type": {"const": "function"}}}},
    },
    "then": {"required": ["tools"], "properties": {"tools": {"type": "array", "minItems": 1}}},
}
"""A named ``tool_choice`` (type ``function`` or left out) comes with ``tools`` (OpenAI: 400 without):
the part of :func:`check_tool_choice` JSON Schema can state; that the name is among them it cannot."""


class ChatCompletionRequest(BaseModel):
    """The body of ``POST /v1/chat/completions``; fields not listed are forwarded upstream as sent."""

    model_config = ConfigDict(extra="allow", json_schema_extra=NAMED_CHOICE_NEEDS_TOOLS)

    # At least one message that is not a system or developer message: there is nothing to answer else.
    messages: Annotated[list[MessageIn], Field(min_length=1, json_schema_extra={"contains": _CONVERSATION})]
    model: str | None = None
    stream: Annotated[bool | None, _STRICT] = False
    stream_options: StreamOptions | None = None
    max_tokens: Annotated[int | None, Field(ge=1, strict=True)] = None
    max_completion_tokens: Annotated[int | None, Field(ge=1, strict=True)] = None
    temperature: Annotated[float | None, Field(ge=0, le=2, strict=True)] = None
    top_p: Annotated[float | None, Field(ge=0, le=1, strict=True)] = None
    n: Annotated[int | None, Field(ge=1, le=128, strict=True)] = None
    stop: str | Annotated[list[str], Field(max_length=4)] | None = None
    seed: Annotated[int | None, _STRICT] = None
    frequency_penalty: Annotated[float | None, Field(ge=-2, le=2, strict=True)] = None
    presence_penalty: Annotated[float | None, Field(ge=-2, le=2, strict=True)] = None
    logprobs: Annotated[bool | None, _STRICT] = None
    top_logprobs: Annotated[int | None, Field(ge=0, le=20, strict=True)] = None
    logit_bias: dict[str, Annotated[float, _STRICT]] | None = None
    response_format: ResponseFormat | None = None
    tools: list[Tool] | None = None
    tool_choice: Literal["none", "auto", "required"] | ToolChoice | None = None
    parallel_tool_calls: Annotated[bool | None, _STRICT] = None
    user: Annotated[str | None, Field(max_length=MAX_USER_CHARS)] = None
    metadata: dict[str, str] | None = None
    reasoning_effort: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _json_integers(cls, data: Any) -> Any:
        """A JSON number without a fraction (``5.0``) is an integer, as JSON Schema says; strings are not."""
        if not isinstance(data, dict):
            return data
        whole = {
            name: int(value)
            for name in _INTEGERS
            if isinstance(value := data.get(name), float) and value.is_integer()
        }
        return {**data, **whole} if whole else data


# -- reading and checking ----------------------------------------------------------------------


async def read_body(request: Request, limit: int) -> bytes:
    """The request's body, refused with 413 past ``limit`` bytes (before reading it all, if it says so)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise _too_large(limit)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _too_large(limit)
        chunks.append(chunk)
    return b"".join(chunks)


def _too_large(limit: int) -> BadRequest:
    return BadRequest(
        413,
        f"the request body is over {limit:,} bytes; send a shorter conversation (the limit is "
        "TIERWISE_MAX_BODY_BYTES)",
        "request_too_large",
    )


def parse_body(raw: bytes) -> dict[str, Any]:
    """The body as a JSON object, at most :data:`MAX_DEPTH` levels deep.

    Raises:
        BadRequest: 400, not JSON, not an object, or nested too deep.
    """
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise BadRequest(400, "the body is not valid JSON; send a JSON object", "invalid_json") from None
    except RecursionError:
        raise _too_deep() from None
    if not isinstance(data, dict):
        raise BadRequest(400, "the body must be a JSON object", "invalid_json")
    if _deeper_than(data, MAX_DEPTH):
        raise _too_deep()
    return data


def _too_deep() -> BadRequest:
    return BadRequest(
        400, f"the body is nested more than {MAX_DEPTH} levels deep; flatten it", "invalid_json"
    )


def _deeper_than(data: Any, limit: int) -> bool:
    """Whether ``data`` nests containers more than ``limit`` deep (iteratively: no recursion)."""
    level: list[Any] = [data]
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            return True
        below: list[Any] = []
        add = below.append
        for item in level:
            for value in item.values() if type(item) is dict else item:
                if type(value) in _CONTAINERS and value:  # (strings, most of a body, are skipped)
                    add(value)
        level = below
    return False


def check_tool_choice(body: ChatCompletionRequest) -> None:
    """A named ``tool_choice`` must name one of the request's tools (OpenAI: 400)."""
    choice = body.tool_choice
    if isinstance(choice, NamedToolChoice) and not body.tools:  # OpenAI's words for it
        raise BadRequest(
            400,
            "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified "
            f"(it names {choice.function.name!r}); send tools with it or leave tool_choice out",
            "invalid_value",
            "tool_choice",
        )
    if isinstance(choice, NamedToolChoice):
        names = {tool.function.name for tool in body.tools or () if isinstance(tool, ToolIn)}
        if choice.function.name not in names:
            raise BadRequest(
                400,
                f"tool_choice names {choice.function.name!r}, which is not among the request's tools; "
                "add it to tools or name another",
                "invalid_value",
                "tool_choice",
            )


def forwarded(data: Mapping[str, Any]) -> dict[str, Any]:
    """What the upstream gets of the client's fields, as sent: all but the ones tierwise decides.

    A ``null`` is left out (to OpenAI the same as not sending the field; some servers refuse it).
    """
    return {k: v for k, v in data.items() if k not in _OWN and v is not None}


# -- the answer's other parts ------------------------------------------------------------------


def extra_choices(extras: Sequence[ChoiceDelta]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The first choice's other fields (``refusal``, ``logprobs``…) and the further choices, whole.

    Returns:
        the fields to add to choice 0 (``message`` fields under ``"message"``, and ``logprobs``),
        and the choices with index 1 and up in OpenAI's non-streamed format.
    """
    by_index: dict[int, list[ChoiceDelta]] = {}
    for extra in extras:
        by_index.setdefault(extra.index, []).append(extra)
    first = _assemble(by_index.pop(0, []), whole=False)
    return first, [_assemble(pieces, whole=True) | {"index": i} for i, pieces in sorted(by_index.items())]


def _assemble(pieces: Sequence[ChoiceDelta], *, whole: bool) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": None} if whole else {}
    calls: dict[int, dict[str, Any]] = {}
    logprobs: dict[str, Any] | None = None
    finish: str | None = None
    for piece in pieces:
        for key, value in piece.delta.items():
            if key == "role":
                continue
            if key == "tool_calls" and isinstance(value, list):
                _add_calls(calls, value)
            elif isinstance(value, str) and isinstance(message.get(key), str):
                message[key] += value
            elif isinstance(value, list) and isinstance(message.get(key), list):  # carried items
                message[key] = [*message[key], *value]
            else:
                message[key] = value
        if piece.logprobs is not None:
            logprobs = _merge_logprobs(logprobs, piece.logprobs)
        finish = piece.finish_reason or finish
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    if not whole:
        return {"message": message, "logprobs": logprobs}
    return {"message": message, "logprobs": logprobs, "finish_reason": finish or "stop"}


_APPENDED = frozenset({"arguments", "input"})  # a call's text that streams in pieces (a custom call's input)


def _add_calls(calls: dict[int, dict[str, Any]], pieces: list[Any]) -> None:
    for position, piece in enumerate(pieces):
        if not isinstance(piece, Mapping):
            continue
        call = calls.setdefault(piece.get("index", position), {})
        _merge_piece(call, {k: v for k, v in piece.items() if k != "index"})
        if "function" in call:  # a function call has OpenAI's shape whatever its pieces left out
            call.setdefault("id", "")
            call.setdefault("type", "function")
            call["function"].setdefault("name", "")
            call["function"].setdefault("arguments", "")


def _merge_piece(call: dict[str, Any], piece: Mapping[str, Any]) -> None:
    """A streamed piece of a call merged in: its text appended (arguments, input), the rest set once."""
    for key, value in piece.items():
        have = call.get(key)
        if isinstance(value, Mapping):
            if not isinstance(have, dict):
                have = call[key] = {}
            _merge_piece(have, value)
        elif key in _APPENDED and isinstance(value, str) and isinstance(have, str):
            call[key] = have + value
        elif have is None or have == "":
            call[key] = value


def answer_message(response: ModelResponse) -> dict[str, Any]:
    """The answer as the client gets it (choice 0's ``message``), and as the endpoint stores it.

    Its text and function calls, then what else the upstream sent for it, as sent: ``refusal``,
    ``reasoning_content``, ``audio``, ``annotations``, calls of other types (``custom``) after the
    function calls.

    Example:
        >>> from tierwise.providers.base import ModelResponse
        >>> answer = ModelResponse("Paris.", extras=[ChoiceDelta(0, {"reasoning_content": "France…"})])
        >>> answer_message(answer)
        {'role': 'assistant', 'content': 'Paris.', 'reasoning_content': 'France…'}
    """
    message = response.message()
    more = _assemble([e for e in response.extras if e.index == 0], whole=False)["message"]
    others = more.pop("tool_calls", None)
    message.update(more)
    if others:
        message["tool_calls"] = [*message.get("tool_calls", ()), *others]
    return message


def _merge_logprobs(into: dict[str, Any] | None, more: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(into or {})
    for key, value in more.items():
        if isinstance(value, list) and isinstance(merged.get(key), list):
            merged[key] = merged[key] + value
        elif value is not None or key not in merged:
            merged[key] = value
    return merged
