"""A Responses API request (``POST /v1/responses``) as the Chat Completions body the gateway reads.

The engine's conversation is OpenAI chat-format messages, so a Responses body is decoded into one
(:func:`chat_body`), then checked and packed as ``/v1/chat/completions`` would be:

- ``instructions`` → a leading system message; ``input`` as a string → one user message.
- ``message`` items → messages (``input_text`` / ``output_text`` → text parts, an assistant's texts
  joined, ``input_image`` → ``image_url``, ``input_file`` → ``file``, ``refusal`` → the message's
  ``refusal``; other parts as sent).
- ``function_call`` / ``custom_tool_call`` items → the assistant message's ``tool_calls`` (joined
  to the message before them, as one Chat Completions answer holds text and calls);
  ``function_call_output`` / ``custom_tool_call_output`` → ``tool`` messages.
- Items Chat Completions has no place for — ``reasoning`` (with its ``encrypted_content``),
  ``item_reference``, hosted tools' calls… — are carried as sent, in order, on the next assistant
  message's ``response_items`` field (:data:`CARRIED`): stored with it, unchanged, for a Responses
  upstream to get back; left out of what a Chat Completions upstream gets
  (:func:`for_chat_completions`: an OpenAI model cannot read an encrypted reasoning item, and a
  strict server refuses a field it does not know).
- ``tools``: a ``function`` tool's flat shape → ``{"type": "function", "function": {...}}``,
  ``custom`` likewise; ``tool_choice`` likewise. The tools only the Responses API runs, or calls in
  item types of its own (``web_search``, ``file_search``, ``mcp``, ``local_shell``…), are not offered
  to the Chat Completions upstream: nobody would answer their calls (they stay in the response's
  ``tools``).
- ``max_output_tokens`` → ``max_completion_tokens``, ``text.format`` → ``response_format``,
  ``text.verbosity`` → ``verbosity``, ``reasoning.effort`` → ``reasoning_effort``; what only the
  Responses API means (``store``, ``include``, ``previous_response_id``, ``truncation``,
  ``client_metadata``…) is not forwarded; anything else is, as sent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    Strict,
    WithJsonSchema,
    create_model,
    model_validator,
)

from tierwise.server.openai_params import NAMED_CHOICE_NEEDS_TOOLS, BadRequest, ChatCompletionRequest

__all__ = [
    "CARRIED",
    "ResponsesRequest",
    "chat_body",
    "chat_tool",
    "chat_tool_choice",
    "for_chat_completions",
    "input_messages",
    "native_fields",
]

CARRIED = "response_items"
"""The assistant message's field holding the Responses items Chat Completions has no place for."""

# Read here, or meaningful only to the Responses API: never forwarded upstream as they are.
_OWN = frozenset(
    {
        "input",
        "instructions",
        "previous_response_id",
        "store",
        "include",
        "truncation",
        "background",
        "conversation",
        "stream_options",
        "prompt",
        "max_tool_calls",
        "text",
        "reasoning",
        "tools",
        "tool_choice",
        "max_output_tokens",
        "top_logprobs",
        "client_metadata",  # Codex CLI's (0.171): a strict Chat Completions server refuses it
    }
)


def _typed(choice: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(choice.get("type"), str):
        raise ValueError("a tool choice object needs a 'type' (a string)")
    return choice


_ToolChoice = Annotated[
    dict[str, Any],
    AfterValidator(_typed),
    WithJsonSchema({"type": "object", "required": ["type"], "properties": {"type": {"type": "string"}}}),
]
"""A named tool choice (``{"type": "function", "name": …}``, ``allowed_tools``, a hosted tool's type)."""


class _ResponsesBody(BaseModel):
    """The Responses API's own fields of a ``POST /v1/responses`` body (:data:`ResponsesRequest`)."""

    model_config = ConfigDict(extra="allow", json_schema_extra=NAMED_CHOICE_NEEDS_TOOLS)

    input: str | Annotated[list[dict[str, Any]], Field(min_length=1)]
    model: str | None = None
    instructions: str | None = None
    previous_response_id: str | None = None
    stream: Annotated[bool | None, Strict()] = False
    tools: list[dict[str, Any]] | None = None
    tool_choice: Literal["none", "auto", "required"] | _ToolChoice | None = None
    max_output_tokens: Annotated[int | None, Strict(), Field(ge=1)] = None
    temperature: Annotated[float | None, Strict(), Field(ge=0, le=2)] = None
    top_p: Annotated[float | None, Strict(), Field(ge=0, le=1)] = None
    metadata: dict[str, str] | None = None
    user: str | None = None
    prompt_cache_key: str | None = None
    store: Annotated[bool | None, Strict()] = True

    @model_validator(mode="before")
    @classmethod
    def _json_integers(cls, data: Any) -> Any:
        """A JSON number without a fraction (``5.0``) is an integer, as JSON Schema says; strings are not."""
        if not isinstance(data, dict):
            return data
        whole = {
            name: int(value)
            for name in ("max_output_tokens", "max_tokens", "max_completion_tokens", "n", "seed")
            if isinstance(value := data.get(name), float) and value.is_integer()
        }
        return {**data, **whole} if whole else data


_CHAT_FIELDS = (
    "max_tokens",
    "max_completion_tokens",
    "n",
    "stop",
    "seed",
    "frequency_penalty",
    "presence_penalty",
    "logprobs",
    "logit_bias",
    "response_format",
    "parallel_tool_calls",
    "reasoning_effort",
)
"""Chat Completions parameters a Responses body may carry on (forwarded as sent, so checked as there)."""

_chat_fields: dict[str, Any] = {
    name: (ChatCompletionRequest.model_fields[name].annotation, ChatCompletionRequest.model_fields[name])
    for name in _CHAT_FIELDS
}
ResponsesRequest = create_model(
    "ResponsesRequest",
    __base__=_ResponsesBody,
    __doc__=(
        "The ``POST /v1/responses`` body, as the OpenAPI document shows it, checked by :func:`chat_body`.\n\n"
        "Other fields are accepted and, unless only the Responses API means them, forwarded as sent; "
        "the Chat Completions parameters among them (:data:`_CHAT_FIELDS`: ``n``, ``seed``, ``stop``…) "
        "are typed as there, since they are checked as there (schemathesis: ``n: false`` was admitted by "
        "the document and refused). Booleans and numbers are taken only as JSON booleans and numbers, "
        "and a ``tool_choice`` naming a function comes with ``tools``, as on Chat Completions."
    ),
    **_chat_fields,
)


# The tool types (and tool choices) a Chat Completions upstream has: the others are the Responses API's own.
_CHAT_TOOLS = frozenset({"function", "custom", "allowed_tools"})


def _bad(message: str, param: str) -> BadRequest:
    return BadRequest(400, message, "invalid_value", param)


def _part(part: Any) -> Any:
    """A content part in Chat Completions' shape; one it has no equivalent for, as sent."""
    if not isinstance(part, Mapping):
        return part
    kind = part.get("type")
    if kind in ("input_text", "output_text", "text"):
        return {"type": "text", "text": part.get("text", "")}
    if kind == "input_image" and isinstance(part.get("image_url"), str):
        image = {"url": part["image_url"]}
        if part.get("detail") is not None:
            image["detail"] = part["detail"]
        return {"type": "image_url", "image_url": image}
    if kind == "input_file":
        fields = ("file_id", "file_data", "filename")
        return {"type": "file", "file": {k: part[k] for k in fields if part.get(k) is not None}}
    return dict(part)


def _content(content: Any) -> Any:
    if isinstance(content, list):
        return [_part(p) for p in content]
    return content


def _assistant(item: Mapping[str, Any]) -> dict[str, Any]:
    """An assistant ``message`` item: its texts joined (as tierwise stores an answer), a refusal apart."""
    content = item.get("content")
    message: dict[str, Any] = {"role": "assistant"}
    if not isinstance(content, list):
        message["content"] = content
        return message
    texts = [p for p in content if isinstance(p, Mapping) and p.get("type") in ("output_text", "text")]
    refusals = [p for p in content if isinstance(p, Mapping) and p.get("type") == "refusal"]
    others = [p for p in content if p not in texts and p not in refusals]
    if others:  # parts a string cannot hold: all of them, in Chat Completions' shape
        message["content"] = [_part(p) for p in content if p not in refusals]
    else:
        message["content"] = "".join(str(p.get("text", "")) for p in texts) if texts else None
    if refusals:
        message["refusal"] = "".join(str(p.get("refusal", "")) for p in refusals)
    return message


def _call(item: Mapping[str, Any]) -> dict[str, Any]:
    if item.get("type") == "custom_tool_call":
        custom = {"name": item.get("name"), "input": item.get("input", "")}
        return {"id": item.get("call_id"), "type": "custom", "custom": custom}
    function = {"name": item.get("name"), "arguments": item.get("arguments", "")}
    return {"id": item.get("call_id"), "type": "function", "function": function}


def _output(output: Any) -> Any:
    if isinstance(output, list):
        return [_part(p) for p in output]
    return output


def input_messages(items: Any) -> list[dict[str, Any]]:
    """The ``input`` (a string or a list of items) as chat-format messages.

    Example:
        >>> input_messages([{"role": "user", "content": "Hi"}, {"type": "function_call",
        ...     "call_id": "c1", "name": "f", "arguments": "{}"}])[1]["tool_calls"][0]["id"]
        'c1'
    """
    if isinstance(items, str):
        return [{"role": "user", "content": items}]
    if not isinstance(items, list):
        raise _bad("input must be a string or a list of items", "input")
    out: list[dict[str, Any]] = []
    carried: list[Any] = []  # items waiting for the next assistant message

    def assistant(message: dict[str, Any] | None) -> dict[str, Any]:
        """``message`` added (``None``: the last message if the assistant's), the carried items on it."""
        last = out[-1] if out else None
        if message is None and last is not None and last.get("role") == "assistant":
            message = last
        elif message is None:
            message = {"role": "assistant", "content": ""}
        if message is not last:
            out.append(message)
        if carried:
            message.setdefault(CARRIED, []).extend(carried)
            carried.clear()
        return message

    def settle() -> None:
        """Carried items no assistant message came after: on the last one (else on an empty one)."""
        last = next((m for m in reversed(out) if m.get("role") == "assistant"), None)
        if last is None:
            assistant(None)
        else:
            last.setdefault(CARRIED, []).extend(carried)
            carried.clear()

    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise _bad(f"input[{index}] must be an object", f"input[{index}]")
        kind = item.get("type") or ("message" if "role" in item else None)
        if kind == "message":
            role = item.get("role")
            if role == "assistant":
                assistant(_assistant(item))
            else:
                if carried:
                    settle()
                message = {"role": role, "content": _content(item.get("content"))}
                out.append(message)
        elif kind in ("function_call", "custom_tool_call"):
            message = assistant(None)
            if message.get("content") == "" and "tool_calls" not in message:
                message["content"] = None  # calls alone: as Chat Completions answers them, and stores them
            message.setdefault("tool_calls", []).append(_call(item))
        elif kind in ("function_call_output", "custom_tool_call_output"):
            out.append(
                {"role": "tool", "tool_call_id": item.get("call_id"), "content": _output(item.get("output"))}
            )
        else:  # reasoning, item_reference, hosted tools' calls…: carried as sent
            carried.append(dict(item))
    if carried:
        settle()
    return out


def _hosted(tool: Any) -> bool:
    """Whether ``tool`` (or a ``tool_choice``) is the Responses API's own, not offered upstream.

    Only the Responses API runs these, or calls them in item types of its own (``web_search``,
    ``file_search``, ``mcp``, ``local_shell``…): nobody would answer them through Chat Completions.
    """
    return isinstance(tool, Mapping) and tool.get("type") not in _CHAT_TOOLS


def chat_tool(tool: Any) -> Any:
    """A Responses tool in Chat Completions' shape (``function``, ``custom``); another type as sent."""
    if not isinstance(tool, Mapping):
        return tool
    kind = tool.get("type")
    if kind == "function" and "function" not in tool:
        inner = {k: v for k, v in tool.items() if k != "type" and v is not None}
        return {"type": "function", "function": inner}
    if kind == "custom" and "custom" not in tool:
        return {"type": "custom", "custom": {k: v for k, v in tool.items() if k != "type" and v is not None}}
    return dict(tool)


def chat_tool_choice(choice: Any) -> Any:
    """A Responses ``tool_choice`` in Chat Completions' shape; one it has no equivalent for, as sent."""
    if not isinstance(choice, Mapping):
        return choice
    kind = choice.get("type")
    if kind in ("function", "custom") and "name" in choice and kind not in choice:
        return {"type": kind, kind: {"name": choice["name"]}}
    if kind == "allowed_tools" and "tools" in choice:
        allowed = {
            "mode": choice.get("mode", "auto"),
            "tools": [chat_tool_choice(t) for t in choice["tools"]],
        }
        return {"type": "allowed_tools", "allowed_tools": allowed}
    return dict(choice)


def _response_format(fmt: Any) -> Any:
    if isinstance(fmt, Mapping) and fmt.get("type") == "json_schema" and "json_schema" not in fmt:
        return {"type": "json_schema", "json_schema": {k: v for k, v in fmt.items() if k != "type"}}
    return fmt


def chat_body(
    data: Mapping[str, Any],
    before: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """The Chat Completions body of a Responses request; ``before``: the conversation it continues.

    Raises:
        BadRequest: no ``input``, or one that is not a string or a list of objects.
        pydantic.ValidationError: a declared field of the wrong type or out of range.
    """
    if "input" not in data or data["input"] is None:
        raise BadRequest(400, "Missing required parameter: 'input'.", "missing_required_parameter", "input")
    items = data["input"]
    if not isinstance(items, str | list):
        raise _bad("input must be a string or a list of items", "input")
    # The declared fields' types (the items are checked as messages below, a slice at a time).
    ResponsesRequest.model_validate({**data, "input": items[:1] if isinstance(items, list) else items})
    instructions = data.get("instructions")
    messages: list[dict[str, Any]] = []
    if isinstance(instructions, str) and instructions:
        messages.append({"role": "system", "content": instructions})
    elif instructions is not None and not isinstance(instructions, str):
        raise _bad("instructions must be a string", "instructions")
    body: dict[str, Any] = {k: v for k, v in data.items() if k not in _OWN and v is not None}
    body["messages"] = [*messages, *(dict(m) for m in before), *input_messages(data["input"])]
    tools = [chat_tool(t) for t in data.get("tools") or () if not _hosted(t)]
    if tools:
        body["tools"] = tools
    if data.get("tool_choice") is not None and not _hosted(data["tool_choice"]):
        body["tool_choice"] = chat_tool_choice(data["tool_choice"])
    if data.get("max_output_tokens") is not None:
        body["max_completion_tokens"] = data["max_output_tokens"]
    if data.get("top_logprobs") is not None:
        body["logprobs"], body["top_logprobs"] = True, data["top_logprobs"]
    text = data.get("text")
    if isinstance(text, Mapping):
        if text.get("format") is not None and text["format"].get("type") != "text":
            body["response_format"] = _response_format(text["format"])
        if text.get("verbosity") is not None:
            body["verbosity"] = text["verbosity"]
    reasoning = data.get("reasoning")
    if isinstance(reasoning, Mapping) and reasoning.get("effort") is not None:
        body["reasoning_effort"] = reasoning["effort"]
    return body


_REBUILT = frozenset({"input", "instructions", "previous_response_id", "conversation", "stream", "model"})
"""What a Responses upstream gets from the pack, not from the body: the conversation, the model, streaming."""


def native_fields(data: Mapping[str, Any]) -> dict[str, Any]:
    """The body's fields a Responses upstream gets as sent (:class:`~tierwise.providers.base.Native`).

    All but the conversation (``input``, ``instructions``, ``previous_response_id``, ``conversation``:
    the pack replaces them), ``model`` and ``stream``. ``tools`` and ``tool_choice`` are among them,
    for the tools only the Responses API runs (``web_search``…), which only such an upstream answers.

    Example:
        >>> native_fields({"input": "Hi", "model": "m", "reasoning": {"effort": "low"}, "store": False})
        {'reasoning': {'effort': 'low'}, 'store': False}
    """
    return {k: v for k, v in data.items() if k not in _REBUILT}


def for_chat_completions(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` as a Chat Completions upstream takes them: :data:`CARRIED` left out (still stored).

    A message without it is passed as it is (not copied).

    Example:
        >>> for_chat_completions([{"role": "assistant", "content": "Hi", CARRIED: [{"type": "reasoning"}]}])
        [{'role': 'assistant', 'content': 'Hi'}]
    """
    return [{k: v for k, v in m.items() if k != CARRIED} if CARRIED in m else m for m in messages]
