"""Anthropic's Messages request decoded into tierwise's conversation (pure functions, no routes).

The conversation inside tierwise is OpenAI's chat shape (decision 69: the client's dicts, carried),
so decoding maps Anthropic's blocks onto it; the answer is encoded back by
:mod:`tierwise.server.wire_anthropic`, the routes are :mod:`tierwise.server.anthropic_messages`.

- ``system`` (a string, or text blocks with ``cache_control``) → one leading system message (the
  blocks as text parts, as sent); ``metadata.user_id`` → the end user that scopes sessions.
- ``messages``: a string content stays a string; ``text`` blocks are text parts (as sent:
  ``cache_control``, ``citations`` kept); ``image`` blocks (base64 or url) are ``image_url`` parts;
  a ``tool_use`` block is an entry of the assistant message's ``tool_calls`` (its id kept, its
  ``input`` as JSON ``arguments``); a ``tool_result`` block is a ``role: "tool"`` message before the
  rest of its user message (its content as a string or parts, ``is_error`` and ``cache_control``
  kept on it); ``thinking`` / ``redacted_thinking`` blocks ride on the assistant message as
  ``thinking_blocks``, unchanged with their ``signature``. Blocks of other types are carried as
  sent, as content parts.
- ``tools`` (``name``, ``description``, ``input_schema``) → function tools (``cache_control``
  kept); Anthropic's own (``web_search_…``, ``bash_…``) are kept aside (``Decoded.server_tools``).
  ``tool_choice`` ``auto``/``any``/``tool``/``none`` → ``"auto"``/``"required"``/a named
  function (one of the request's tools, else a 400)/``"none"``; ``disable_parallel_tool_use`` (a
  boolean) → ``parallel_tool_calls: false``;
  ``stop_sequences`` → ``stop``; ``top_p``, ``temperature``, ``max_tokens`` as they are.
- What is admitted is what the OpenAPI document states (:mod:`tierwise.server.anthropic_schema`):
  a block's ``type`` is a non-empty string, ``max_tokens`` an integer (``5.0`` is one, as JSON
  Schema says).
- What a Chat Completions upstream cannot take (``thinking_blocks``, ``is_error``; the request's
  ``thinking``, ``top_k``, ``service_tier``…) is kept — stored with the messages, ``Decoded.extra``
  — and left out of what it is sent (:func:`for_chat_completions`, which also moves a tool result's
  images to a user message after the step's results).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ANTHROPIC_ONLY",
    "MAPPED_FIELDS",
    "Decoded",
    "InvalidRequest",
    "anthropic_headers",
    "decode_request",
    "for_chat_completions",
    "key_message",
    "native_fields",
]

ANTHROPIC_ONLY = ("thinking_blocks", "server_blocks", "is_error", "cache_control")
"""Fields of a decoded message that only an Anthropic upstream takes (left out for a Chat Completions one)."""

MAPPED_FIELDS = frozenset(
    {"model", "messages", "system", "max_tokens", "stream", "tools", "tool_choice", "temperature"}
    | {"top_p", "stop_sequences", "metadata"}
)
"""The request fields the decoder maps; the others are ``Decoded.extra`` (kept, not sent upstream)."""

_ROLES = ("user", "assistant", "system")
"""A message's roles: ``system`` in the conversation too (the ``mid-conversation-system`` beta, which
Claude Code sends on every request: a message listing its agents and skills after the prompt)."""


class InvalidRequest(Exception):
    """A request Anthropic's API would refuse with 400 ``invalid_request_error``; the message names where."""


def native_fields(decoded: Decoded) -> dict[str, Any]:
    """The request's fields an Anthropic upstream gets as sent (:class:`~tierwise.providers.base.Native`).

    Those the decoder keeps aside (``thinking``, ``top_k``, ``service_tier``…), ``metadata``, and
    Anthropic's own tools as ``tools`` (the client's function tools come from the pack's tools).
    """
    fields = dict(decoded.extra)
    if decoded.metadata is not None:
        fields["metadata"] = decoded.metadata
    if decoded.server_tools:
        fields["tools"] = list(decoded.server_tools)
    return fields


def anthropic_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The request's ``anthropic-*`` headers (``anthropic-version``, ``anthropic-beta``…), passed on.

    Example:
        >>> anthropic_headers({"anthropic-beta": "x", "x-api-key": "k", "content-type": "a"})
        {'anthropic-beta': 'x'}
    """
    return {k.lower(): v for k, v in headers.items() if k.lower().startswith("anthropic-")}


# -- decoding ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Decoded:
    """An Anthropic Messages request as tierwise's conversation.

    Attributes:
        model: the model the client asked for.
        system: the leading system message(s), OpenAI-shaped (empty without ``system``).
        messages: the conversation, OpenAI-shaped: each message as the decoder made it, stored as such.
        tools: the client's tools as OpenAI function tools.
        server_tools: Anthropic's own tools (``web_search_…``, ``bash_…``, ``text_editor_…``), as sent:
            kept for an Anthropic upstream, not offered to a Chat Completions one, which could not
            run or even name them.
        tool_choice: OpenAI's ``tool_choice``, or ``None`` when not sent.
        max_tokens: the answer's limit (``None``: not sent, as for ``count_tokens``).
        temperature: as sent, or ``None``.
        stream: whether the client asked for server-sent events.
        user: ``metadata.user_id``, the end user (it scopes sessions, as OpenAI's ``user`` does).
        metadata: ``metadata`` as sent (an Anthropic upstream gets it).
        params: OpenAI parameters the upstream gets as they are (``top_p``, ``stop``,
            ``parallel_tool_calls``).
        extra: the request's other fields, as sent (``thinking``, ``top_k``, ``service_tier``…).
    """

    model: str
    system: list[dict[str, Any]]
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] = field(default_factory=list)
    server_tools: list[dict[str, Any]] = field(default_factory=list)
    tool_choice: str | dict[str, Any] | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    stream: bool = False
    user: str | None = None
    metadata: dict[str, Any] | None = None
    params: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def decode_request(data: Mapping[str, Any], *, needs_max_tokens: bool = True) -> Decoded:
    """Decode an Anthropic Messages request body (a parsed JSON object) into tierwise's conversation.

    ``needs_max_tokens``: ``max_tokens`` is required (``/v1/messages``; not ``count_tokens``).

    Raises:
        InvalidRequest: a field is missing, of the wrong type or out of range (Anthropic's 400).

    Example:
        >>> body = {"model": "m", "max_tokens": 64, "system": "Be brief.",
        ...         "messages": [{"role": "user", "content": "Hi"}]}
        >>> decoded = decode_request(body)
        >>> decoded.system, decoded.messages
        ([{'role': 'system', 'content': 'Be brief.'}], [{'role': 'user', 'content': 'Hi'}])
    """
    model = data.get("model")
    if not isinstance(model, str) or not model:
        raise InvalidRequest("model: Field required (a model name, as a string)")
    max_tokens = data.get("max_tokens")
    if isinstance(max_tokens, float) and max_tokens.is_integer():  # 5.0 is an integer, as JSON Schema says
        max_tokens = int(max_tokens)
    if max_tokens is None and needs_max_tokens:
        raise InvalidRequest("max_tokens: Field required")
    if max_tokens is not None and (not isinstance(max_tokens, int) or isinstance(max_tokens, bool)):
        raise InvalidRequest("max_tokens: Input should be a valid integer")
    if max_tokens is not None and max_tokens < 1:
        raise InvalidRequest("max_tokens: Input should be greater than or equal to 1")
    raw = data.get("messages")
    if not isinstance(raw, list) or not raw:
        raise InvalidRequest("messages: Field required (a non-empty list of messages)")
    messages: list[dict[str, Any]] = []
    for index, message in enumerate(raw):
        messages += _message(message, f"messages.{index}")
    temperature = data.get("temperature")
    if temperature is not None and (not _number(temperature) or not 0 <= temperature <= 1):
        raise InvalidRequest("temperature: Input should be a number from 0 to 1")
    stream = data.get("stream", False)
    if stream is not None and not isinstance(stream, bool):
        raise InvalidRequest("stream: Input should be a valid boolean")
    metadata = data.get("metadata")
    if metadata is not None and not isinstance(metadata, Mapping):
        raise InvalidRequest("metadata: Input should be an object")
    user = (metadata or {}).get("user_id")
    if user is not None and not isinstance(user, str):
        raise InvalidRequest("metadata.user_id: Input should be a valid string")
    choice, parallel = _tool_choice(data.get("tool_choice"))
    params: dict[str, Any] = {}
    top_p = data.get("top_p")
    if top_p is not None:
        if not _number(top_p) or not 0 <= top_p <= 1:
            raise InvalidRequest("top_p: Input should be a number from 0 to 1")
        params["top_p"] = top_p
    stops = data.get("stop_sequences")
    if stops is not None:
        if not isinstance(stops, list) or not all(isinstance(s, str) for s in stops):
            raise InvalidRequest("stop_sequences: Input should be a list of strings")
        if stops:
            params["stop"] = list(stops)
    if parallel is not None:
        params["parallel_tool_calls"] = parallel
    tools, server_tools = _tools(data.get("tools"))
    if isinstance(choice, dict):  # a named tool: one of the request's (Anthropic: 400)
        named = choice["function"]["name"]
        offered = {t["function"]["name"] for t in tools} | {t.get("name") for t in server_tools}
        if named not in offered:
            raise InvalidRequest(
                f"tool_choice.name: {named!r} is not among the request's tools; name one of them in "
                "'tools', or use {'type': 'auto'}"
            )
    return Decoded(
        model=model,
        system=_system(data.get("system")),
        messages=messages,
        tools=tools,
        server_tools=server_tools,
        tool_choice=choice,
        max_tokens=max_tokens,
        temperature=temperature,
        stream=bool(stream),
        user=user,
        metadata=dict(metadata) if metadata is not None else None,
        params=params,
        extra={k: v for k, v in data.items() if k not in MAPPED_FIELDS},
    )


def _system(system: Any) -> list[dict[str, Any]]:
    """``system`` as the leading system message: a string as it is, text blocks as text parts."""
    if system is None or system == "" or system == []:
        return []
    if isinstance(system, str):
        return [{"role": "system", "content": system}]
    if not isinstance(system, list):
        raise InvalidRequest("system: Input should be a string or a list of text blocks")
    for index, block in enumerate(system):
        if (
            not isinstance(block, Mapping)
            or block.get("type") != "text"
            or not isinstance(block.get("text"), str)
        ):
            raise InvalidRequest(
                f"system.{index}: Input should be a text block ({{'type': 'text', 'text': …}})"
            )
    return [{"role": "system", "content": [dict(b) for b in system]}]


def _block(block: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(block, Mapping) or not isinstance(block.get("type"), str) or not block["type"]:
        raise InvalidRequest(f"{where}: Input should be a content block with a 'type' ('text', 'image', …)")
    return block


def _text(block: Mapping[str, Any], where: str) -> dict[str, Any]:
    if not isinstance(block.get("text"), str):
        raise InvalidRequest(f"{where}.text: Field required")
    return dict(block)  # Anthropic's text block is OpenAI's text part; cache_control, citations kept


def _image(block: Mapping[str, Any], where: str) -> dict[str, Any]:
    """An ``image`` block as an ``image_url`` part (base64 as a data URL); another source as sent."""
    source = block.get("source")
    if not isinstance(source, Mapping):
        raise InvalidRequest(f"{where}.source: Field required")
    kind = source.get("type")
    if kind == "base64":
        media, data = source.get("media_type"), source.get("data")
        if not isinstance(media, str) or not isinstance(data, str):
            raise InvalidRequest(f"{where}.source: a base64 image needs 'media_type' and 'data'")
        url = f"data:{media};base64,{data}"
    elif kind == "url":
        if not isinstance(source.get("url"), str):
            raise InvalidRequest(f"{where}.source.url: Field required")
        url = source["url"]
    else:  # (a file id…): carried as sent
        return dict(block)
    part: dict[str, Any] = {"type": "image_url", "image_url": {"url": url}}
    if "cache_control" in block:
        part["cache_control"] = block["cache_control"]
    return part


def _parts(blocks: Sequence[Any], where: str) -> list[dict[str, Any]]:
    """Content blocks (text, images, others as sent) as OpenAI content parts."""
    parts: list[dict[str, Any]] = []
    for index, raw in enumerate(blocks):
        block = _block(raw, f"{where}.{index}")
        kind = block["type"]
        if kind == "text":
            parts.append(_text(block, f"{where}.{index}"))
        elif kind == "image":
            parts.append(_image(block, f"{where}.{index}"))
        else:
            parts.append(dict(block))
    return parts


def _tool_result(block: Mapping[str, Any], where: str) -> dict[str, Any]:
    call_id = block.get("tool_use_id")
    if not isinstance(call_id, str) or not call_id:
        raise InvalidRequest(f"{where}.tool_use_id: Field required")
    content = block.get("content", "")
    if content is None:
        content = ""
    if isinstance(content, list):
        content = _parts(content, f"{where}.content")
    elif not isinstance(content, str):
        raise InvalidRequest(f"{where}.content: Input should be a string or a list of content blocks")
    message: dict[str, Any] = {"role": "tool", "tool_call_id": call_id, "content": content}
    for key in ("is_error", "cache_control"):
        if key in block:
            message[key] = block[key]
    return message


def _tool_use(block: Mapping[str, Any], where: str) -> dict[str, Any]:
    call_id, name, arguments = block.get("id"), block.get("name"), block.get("input", {})
    if not isinstance(call_id, str) or not call_id:
        raise InvalidRequest(f"{where}.id: Field required")
    if not isinstance(name, str) or not name:
        raise InvalidRequest(f"{where}.name: Field required")
    if not isinstance(arguments, Mapping):
        raise InvalidRequest(f"{where}.input: Input should be an object")
    text = json.dumps(arguments, ensure_ascii=False)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": text}}


def _message(message: Any, where: str) -> list[dict[str, Any]]:
    """One Anthropic message as one or more OpenAI-shaped messages (tool results first, each its own)."""
    if not isinstance(message, Mapping):
        raise InvalidRequest(f"{where}: Input should be an object with 'role' and 'content'")
    role = message.get("role")
    if role not in _ROLES:
        raise InvalidRequest(
            f"{where}.role: Input should be 'user', 'assistant' or 'system' (got {role!r}); the Messages "
            "API takes the system prompt as the top-level 'system' parameter"
        )
    content = message.get("content")
    if isinstance(content, str):
        return [{"role": role, "content": content}]
    if not isinstance(content, list):
        raise InvalidRequest(f"{where}.content: Input should be a string or a list of content blocks")
    if role == "system":  # kept where the client put it, as /v1/chat/completions keeps one (decision 69)
        return [{"role": "system", "content": _parts(content, f"{where}.content")}]
    if role == "assistant":
        return [_assistant(content, f"{where}.content")]
    results: list[dict[str, Any]] = []
    rest: list[Any] = []
    for index, raw in enumerate(content):
        block = _block(raw, f"{where}.content.{index}")
        if block["type"] == "tool_result":
            results.append(_tool_result(block, f"{where}.content.{index}"))
        elif block["type"] == "tool_use":
            raise InvalidRequest(
                f"{where}.content.{index}: a 'tool_use' block belongs to an assistant message"
            )
        else:
            rest.append(block)
    if rest or not results:
        results.append({"role": "user", "content": _parts(rest, f"{where}.content")})
    return results


def _assistant(blocks: Sequence[Any], where: str) -> dict[str, Any]:
    """An assistant's blocks: text → content, ``tool_use`` → ``tool_calls``, thinking kept aside."""
    parts: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    thinking: list[dict[str, Any]] = []
    for index, raw in enumerate(blocks):
        block = _block(raw, f"{where}.{index}")
        kind = block["type"]
        if kind == "tool_use":
            calls.append(_tool_use(block, f"{where}.{index}"))
        elif kind in ("thinking", "redacted_thinking"):
            thinking.append(dict(block))  # unchanged, signature and all
        elif kind == "tool_result":
            raise InvalidRequest(f"{where}.{index}: a 'tool_result' block belongs to a user message")
        else:
            parts += _parts([block], where)
    # One plain text block is a string, as tierwise stores an answer; anything more stays as parts.
    content: Any = parts or None
    if len(parts) == 1 and set(parts[0]) == {"type", "text"} and parts[0]["type"] == "text":
        content = parts[0]["text"]
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = calls
    if thinking:
        message["thinking_blocks"] = thinking
    return message


def _tools(tools: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The client's tools as function tools, and Anthropic's own (server and versioned tools) as sent."""
    if tools is None:
        return [], []
    if not isinstance(tools, list):
        raise InvalidRequest("tools: Input should be a list of tools")
    out: list[dict[str, Any]] = []
    own: list[dict[str, Any]] = []
    for index, tool in enumerate(tools):
        if not isinstance(tool, Mapping):
            raise InvalidRequest(f"tools.{index}: Input should be an object")
        kind = tool.get("type")
        if kind is not None and (not isinstance(kind, str) or not kind):
            raise InvalidRequest(f"tools.{index}.type: Input should be a non-empty string ('custom', …)")
        if kind not in (None, "custom"):  # Anthropic's own tools (web_search_…, bash_…): as sent
            own.append(dict(tool))
            continue
        name, schema = tool.get("name"), tool.get("input_schema")
        if not isinstance(name, str) or not name:
            raise InvalidRequest(f"tools.{index}.name: Field required")
        if not isinstance(schema, Mapping):
            raise InvalidRequest(f"tools.{index}.input_schema: Field required")
        description = tool.get("description")
        if description is not None and not isinstance(description, str):
            raise InvalidRequest(f"tools.{index}.description: Input should be a valid string")
        function: dict[str, Any] = {"name": name}
        if description is not None:
            function["description"] = description
        function["parameters"] = dict(schema)
        converted: dict[str, Any] = {"type": "function", "function": function}
        if "cache_control" in tool:
            converted["cache_control"] = tool["cache_control"]
        out.append(converted)
    return out, own


def _tool_choice(choice: Any) -> tuple[str | dict[str, Any] | None, bool | None]:
    """Anthropic's ``tool_choice`` as OpenAI's, and ``parallel_tool_calls`` if it said."""
    if choice is None:
        return None, None
    if not isinstance(choice, Mapping):
        raise InvalidRequest("tool_choice: Input should be an object with a 'type'")
    kind = choice.get("type")
    disable = choice.get("disable_parallel_tool_use")
    if disable is not None and not isinstance(disable, bool):
        raise InvalidRequest("tool_choice.disable_parallel_tool_use: Input should be a valid boolean")
    parallel = (not disable) if isinstance(disable, bool) else None
    if kind == "auto":
        return "auto", parallel
    if kind == "any":
        return "required", parallel
    if kind == "none":
        return "none", None
    if kind == "tool":
        name = choice.get("name")
        if not isinstance(name, str) or not name:
            raise InvalidRequest("tool_choice.name: Field required")
        return {"type": "function", "function": {"name": name}}, parallel
    raise InvalidRequest(f"tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none' (got {kind!r})")


def key_message(message: Mapping[str, Any]) -> dict[str, Any]:
    """A message as the session key reads it: role and content, ``cache_control`` markers left out.

    Clients move their cache breakpoints to the newest message (Claude Code marks the last block of
    the conversation), so the opening message carries one on the first request and none later.

    Example:
        >>> key_message({"role": "user", "content": [{"type": "text", "text": "Hi", "cache_control": {}}]})
        {'role': 'user', 'content': [{'type': 'text', 'text': 'Hi'}]}
    """
    content = message.get("content")
    if isinstance(content, list):
        content = [
            {k: v for k, v in p.items() if k != "cache_control"} if isinstance(p, Mapping) else p
            for p in content
        ]
    return {"role": message.get("role"), "content": content}


def _unmarked(part: Any) -> Any:
    if isinstance(part, Mapping) and "cache_control" in part:
        return {k: v for k, v in part.items() if k != "cache_control"}
    return part


def for_chat_completions(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` as a Chat Completions upstream takes them; the stored ones are not changed.

    :data:`ANTHROPIC_ONLY` fields are left out: thinking blocks (with their signatures) and a
    result's ``is_error`` stay stored, but an OpenAI model cannot read them back. So are the
    client's ``cache_control`` breakpoints (on a message or its parts): tierwise re-packed the
    conversation, so they no longer mark where its stable prefix ends, and a strict server refuses
    the field (``TIERWISE_CACHE_HINTS`` marks the pack's own, decision 41). A tool result's
    images (Claude Code's Read of a screenshot) cannot be in a tool message there: they follow the
    results of that step in a user message of their own. A message needing neither is passed as it
    is (not copied).

    Example:
        >>> image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}}
        >>> result = {"role": "tool", "tool_call_id": "t1", "content": [image], "is_error": False}
        >>> sent, after = for_chat_completions([result])
        >>> sent, after["role"], after["content"] == [image]
        ({'role': 'tool', 'tool_call_id': 't1', 'content': ''}, 'user', True)
    """
    out: list[dict[str, Any]] = []
    images: list[dict[str, Any]] = []  # of the current run of tool results
    for message in messages:
        if images and message.get("role") != "tool":
            out.append({"role": "user", "content": images})
            images = []
        if any(k in message for k in ANTHROPIC_ONLY):
            message = {k: v for k, v in message.items() if k not in ANTHROPIC_ONLY}
        content = message.get("content")
        if isinstance(content, list) and any(_unmarked(p) is not p for p in content):
            content = [_unmarked(p) for p in content]  # the client's breakpoints: the pack moved them
            message = {**message, "content": content}
        if message.get("role") == "tool" and isinstance(content, list):
            texts = [p for p in content if isinstance(p, Mapping) and p.get("type") == "text"]
            if len(texts) < len(content):  # images (or other parts) go in the user message after
                images += [p for p in content if not (isinstance(p, Mapping) and p.get("type") == "text")]
                message = {**message, "content": texts or ""}
        out.append(message)
    if images:
        out.append({"role": "user", "content": images})
    return out
