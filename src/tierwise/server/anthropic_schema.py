"""The Anthropic Messages bodies as the OpenAPI document shows them (documentation and schemathesis only).

The routes (:mod:`tierwise.server.anthropic_messages`) read the raw body with
:func:`tierwise.server.anthropic_input.decode_request`; these models say what that decoder admits, no
more and no less, so a body the schema admits is answered and one it does not is a 400
(``tests/server/test_anthropic_schema.py`` holds the two together on sample bodies):

- ``model`` a non-empty string; ``max_tokens`` an integer ≥ 1 (required by ``/v1/messages``, not by
  ``count_tokens``); ``messages`` a non-empty list; ``temperature`` and ``top_p`` from 0 to 1;
  ``stream`` a boolean; ``stop_sequences`` strings; ``metadata.user_id`` a string. Other fields are
  taken (and kept for an Anthropic upstream).
- A message's ``role`` picks its blocks: a user message's ``tool_result``, an assistant message's
  ``tool_use`` (each refused in the other role); ``text`` and ``image`` blocks are checked in all,
  and a block of any other ``type`` is carried as sent. A system message (in the conversation) and
  a tool result's content take text, images and other blocks.
- ``system``: a string or ``text`` blocks. ``tools``: the client's (``name``, ``input_schema``;
  ``type`` absent or ``custom``) or Anthropic's own (any other ``type``, as sent). ``tool_choice``:
  ``auto``, ``any``, ``tool`` (with ``name``) or ``none``.

A "block of another type" is stated as a string ``type`` outside the checked ones (:class:`_Other`),
so the unions are exact: each body matches one branch at most.

What one value cannot say — a tool result answers a ``tool_use`` of the assistant message before it,
``tool_choice`` names an offered tool, the prompt fits — is in ``tests/server/contract_hooks.py``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Discriminator, Field, Strict, WithJsonSchema

__all__ = [
    "COUNT_TOKENS_BODY",
    "COUNT_TOKENS_RESPONSES",
    "MESSAGES_BODY",
    "MESSAGES_RESPONSES",
    "SCHEMA_MODELS",
    "AnthropicError",
    "AnthropicMessage",
    "CountTokensRequest",
    "InputTokens",
    "MessagesRequest",
]

_NAME = Annotated[str, Field(min_length=1)]
_UNIT = Annotated[float | None, Strict(), Field(ge=0, le=1)]


class _Open(BaseModel):
    """An object that takes fields besides the ones it names (carried as sent)."""

    model_config = ConfigDict(extra="allow")


class _Other:
    """A block whose ``type`` is a string other than ``checked`` (carried as sent, not checked).

    Metadata of ``Annotated[dict[str, Any], …]``: its check and its JSON Schema.
    """

    def __init__(self, checked: tuple[str, ...], what: str) -> None:
        self.checked, self.what = checked, what

    def check(self, value: dict[str, Any]) -> dict[str, Any]:
        """``value`` if its ``type`` is a string outside ``checked``; else a ``ValueError``."""
        if not isinstance(value.get("type"), str) or value["type"] in ("", *self.checked):
            raise ValueError(f"a {self.what} has a string 'type' other than {', '.join(self.checked)}")
        return value

    def schema(self) -> WithJsonSchema:
        """The JSON Schema: an object whose ``type`` is a string not among ``checked``."""
        return WithJsonSchema(
            {
                "type": "object",
                "description": f"Another {self.what}, carried as sent",
                "required": ["type"],
                "properties": {
                    "type": {"type": "string", "minLength": 1, "not": {"enum": list(self.checked)}}
                },
            }
        )


def _other(checked: tuple[str, ...], what: str) -> tuple[AfterValidator, WithJsonSchema]:
    other = _Other(checked, what)
    return AfterValidator(other.check), other.schema()


# -- content blocks ----------------------------------------------------------------------------


class AnthropicText(_Open):
    """A ``text`` block (``cache_control``, ``citations`` kept)."""

    type: Literal["text"]
    text: str


class AnthropicBase64Source(_Open):
    """An image given inline: its media type and base64 data."""

    type: Literal["base64"]
    media_type: str
    data: str


class AnthropicUrlSource(_Open):
    """An image given by its URL."""

    type: Literal["url"]
    url: str


def _other_source(value: dict[str, Any]) -> dict[str, Any]:
    if value.get("type") in ("base64", "url"):
        raise ValueError("a base64 or url source is checked as such")
    return value


_OtherSource = Annotated[
    dict[str, Any],
    AfterValidator(_other_source),
    WithJsonSchema(
        {
            "type": "object",
            "description": "Another source (a file id…), carried as sent",
            "properties": {"type": {"not": {"enum": ["base64", "url"]}}},
        }
    ),
]


class AnthropicImage(_Open):
    """An ``image`` block: base64, a URL, or another source carried as sent."""

    type: Literal["image"]
    source: AnthropicBase64Source | AnthropicUrlSource | _OtherSource


_OtherPart = Annotated[dict[str, Any], *_other(("text", "image"), "content block (a document…)")]
_Part = Annotated[
    AnthropicText | AnthropicImage | _OtherPart,
    Field(union_mode="left_to_right"),
]
"""A block of a system message or of a tool result's content."""


class AnthropicToolUse(_Open):
    """A ``tool_use`` block of an assistant message: the call's id, the tool's name, its input."""

    type: Literal["tool_use"]
    id: _NAME
    name: _NAME
    input: dict[str, Any] = Field(default_factory=dict)


class AnthropicToolResult(_Open):
    """A ``tool_result`` block of a user message (``is_error``, ``cache_control`` kept)."""

    type: Literal["tool_result"]
    tool_use_id: _NAME
    content: str | list[_Part] | None = ""


class AnthropicThinking(_Open):
    """A ``thinking`` or ``redacted_thinking`` block of an assistant message, kept unchanged."""

    type: Literal["thinking", "redacted_thinking"]


_CHECKED = ("text", "image", "tool_use", "tool_result")
_OtherUserBlock = Annotated[dict[str, Any], *_other(_CHECKED, "user content block")]
_OtherAssistantBlock = Annotated[
    dict[str, Any], *_other((*_CHECKED, "thinking", "redacted_thinking"), "assistant content block")
]
_UserBlock = Annotated[
    AnthropicText | AnthropicImage | AnthropicToolResult | _OtherUserBlock,
    Field(union_mode="left_to_right"),
]
_AssistantBlock = Annotated[
    AnthropicText | AnthropicImage | AnthropicToolUse | AnthropicThinking | _OtherAssistantBlock,
    Field(union_mode="left_to_right"),
]


# -- messages ----------------------------------------------------------------------------------


class AnthropicUserMessage(_Open):
    """A user message: text, or blocks (its ``tool_result`` blocks answer the calls before it)."""

    role: Literal["user"]
    content: str | list[_UserBlock]


class AnthropicAssistantMessage(_Open):
    """An assistant message: text, or blocks (``tool_use`` calls, thinking)."""

    role: Literal["assistant"]
    content: str | list[_AssistantBlock]


class AnthropicSystemMessage(_Open):
    """A system message in the conversation (the ``mid-conversation-system`` beta)."""

    role: Literal["system"]
    content: str | list[_Part]


_Message = Annotated[
    AnthropicUserMessage | AnthropicAssistantMessage | AnthropicSystemMessage, Discriminator("role")
]


# -- tools -------------------------------------------------------------------------------------


class AnthropicTool(_Open):
    """A client tool: its name, what it does and its input's JSON Schema."""

    type: Literal["custom"] | None = None
    name: _NAME
    description: str | None = None
    input_schema: dict[str, Any]


_ServerTool = Annotated[dict[str, Any], *_other(("custom",), "tool (Anthropic's own: web_search_…, bash_…)")]
_Tool = Annotated[
    AnthropicTool | _ServerTool,
    Field(union_mode="left_to_right"),
]


class AnthropicToolChoiceAuto(_Open):
    """The model decides whether to call a tool."""

    type: Literal["auto"]
    disable_parallel_tool_use: Annotated[bool | None, Strict()] = None


class AnthropicToolChoiceAny(_Open):
    """The model calls one of the tools."""

    type: Literal["any"]
    disable_parallel_tool_use: Annotated[bool | None, Strict()] = None


class AnthropicToolChoiceTool(_Open):
    """The model calls the tool named."""

    type: Literal["tool"]
    name: _NAME
    disable_parallel_tool_use: Annotated[bool | None, Strict()] = None


class AnthropicToolChoiceNone(_Open):
    """The model calls no tool."""

    type: Literal["none"]
    disable_parallel_tool_use: Annotated[bool | None, Strict()] = None


_ToolChoice = Annotated[
    AnthropicToolChoiceAuto | AnthropicToolChoiceAny | AnthropicToolChoiceTool | AnthropicToolChoiceNone,
    Discriminator("type"),
]


class AnthropicMetadata(_Open):
    """The request's metadata: ``user_id`` is the end user, who scopes sessions."""

    user_id: str | None = None


# -- the bodies --------------------------------------------------------------------------------


class CountTokensRequest(_Open):
    """The ``POST /v1/messages/count_tokens`` body (a Messages body; ``max_tokens`` not needed)."""

    model: _NAME
    messages: Annotated[list[_Message], Field(min_length=1)]
    max_tokens: Annotated[int | None, Strict(), Field(ge=1)] = None
    system: str | list[AnthropicText] | None = None
    tools: list[_Tool] | None = None
    tool_choice: _ToolChoice | None = None
    temperature: _UNIT = None
    top_p: _UNIT = None
    stop_sequences: list[str] | None = None
    stream: Annotated[bool | None, Strict()] = False
    metadata: AnthropicMetadata | None = None


class MessagesRequest(CountTokensRequest):
    """The ``POST /v1/messages`` body, as :func:`~tierwise.server.anthropic_input.decode_request` takes it."""

    max_tokens: Annotated[int, Strict(), Field(ge=1)]


SCHEMA_MODELS: tuple[type[BaseModel], ...] = (MessagesRequest, CountTokensRequest)
"""The request models the routes' ``openapi_extra`` refer to (added to the document's components)."""


def _body(model: type[BaseModel]) -> dict[str, Any]:
    ref = {"$ref": f"#/components/schemas/{model.__name__}"}
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": ref}}}}


MESSAGES_BODY = _body(MessagesRequest)
"""``openapi_extra`` of ``POST /v1/messages``: its request body."""

COUNT_TOKENS_BODY = _body(CountTokensRequest)
"""``openapi_extra`` of ``POST /v1/messages/count_tokens``: its request body."""


# -- the answers -------------------------------------------------------------------------------


class AnthropicUsage(_Open):
    """An answer's tokens: input besides the cache's, output, read from and written to the cache."""

    input_tokens: int
    output_tokens: int
    cache_read_input_tokens: int | None = None
    cache_creation_input_tokens: int | None = None


class AnthropicMessage(_Open):
    """Anthropic's ``message`` object: the answer's blocks (text, ``tool_use``, thinking) and usage."""

    id: str
    type: Literal["message"]
    role: Literal["assistant"]
    model: str
    content: list[dict[str, Any]]
    stop_reason: str | None
    stop_sequence: str | None
    usage: AnthropicUsage


class InputTokens(BaseModel):
    """``count_tokens``'s answer: the prompt's tokens by tierwise's tokenizer."""

    input_tokens: int


class AnthropicErrorDetail(BaseModel):
    """What went wrong: Anthropic's error type (``invalid_request_error``…) and a message naming the fix."""

    type: str
    message: str


class AnthropicError(BaseModel):
    """An error as Anthropic's API answers it."""

    type: Literal["error"]
    error: AnthropicErrorDetail


_ERRORS = {
    400: "invalid_request_error: not JSON, a missing or invalid field, unpaired tool calls, or a prompt "
    "too long for the window ('prompt is too long')",
    401: "authentication_error: missing, unknown or revoked key (x-api-key or Bearer; only with "
    "--require-key)",
    413: "request_too_large: the body is over TIERWISE_MAX_BODY_BYTES",
    429: "rate_limit_error: a rate limit (retry-after), the upstream's, or the spending limit "
    "(x-should-retry: false)",
    500: "api_error: internal error; nothing already stored was lost",
    502: "api_error: the upstream model failed",
    504: "api_error: the upstream model did not answer in time",
}
_ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": AnthropicError, "description": text} for status, text in _ERRORS.items()
}

MESSAGES_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "model": AnthropicMessage,
        "description": "A message; with stream: true, Anthropic's server-sent events instead (message_start, "
        "content_block_start/delta/stop, message_delta, message_stop; an error event if it breaks)",
        "content": {
            "text/event-stream": {
                "schema": {
                    "type": "object",
                    "description": "One server-sent event: its name and JSON data",
                    "properties": {"event": {"type": "string"}, "data": {"type": "string"}},
                    "required": ["data"],
                }
            }
        },
    },
    **_ERROR_RESPONSES,
}
"""The responses of ``POST /v1/messages``, for its decorator."""

COUNT_TOKENS_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {"model": InputTokens, "description": "The prompt's tokens"},
    **{s: r for s, r in _ERROR_RESPONSES.items() if s in (400, 401, 413, 429, 500)},
}
"""The responses of ``POST /v1/messages/count_tokens``, for its decorator."""
