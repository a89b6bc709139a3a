"""A :class:`~tierwise.providers.base.ModelRequest` as Anthropic's Messages request body.

The inverse of :mod:`tierwise.server.anthropic_input` (Anthropic's request → chat-format messages),
for any client: the conversation tierwise keeps is OpenAI's chat shape, whichever wire it came on.

- The leading ``system`` / ``developer`` messages are the ``system`` blocks (a string as one text
  block, text parts as they are, ``cache_control`` kept). A system message later in the
  conversation stays a ``system`` message where it is when the client itself sent Anthropic's
  ``mid-conversation-system`` beta header (:data:`MID_CONVERSATION_BETA`); otherwise Anthropic's API
  has no place for it, and its text becomes a user text block there (joined to the user turn around it).
- An assistant message's ``thinking_blocks`` come first in its content, unchanged (signature and
  all), then its ``server_blocks`` (the blocks of Anthropic's own tools an Anthropic upstream
  answered with: :mod:`tierwise.providers.anthropic_api`), its text, its other blocks as sent, and
  its ``tool_calls`` as ``tool_use`` blocks (the
  arguments' JSON as ``input``; text that is not a JSON object is sent as ``{}`` and logged).
- ``tool`` messages are ``tool_result`` blocks (``is_error`` kept); a run of them is one user
  message, and the user message after them is joined to it: Anthropic requires user and assistant
  turns to alternate, and a turn's results first. Image parts (``image_url``) are ``image`` blocks —
  a data URL as a base64 source, another URL as a url source. Parts only OpenAI has
  (``input_audio``, ``file``, ``refusal``) are left out and logged; other parts go as sent.
- Prompt caching: Anthropic caches only up to a ``cache_control`` marker, at most four per request
  (tools, system and messages together), so markers are always placed (this is how Anthropic caches
  at all, not a hint that ``TIERWISE_CACHE_HINTS`` turns on): see :func:`place_cache_marks`.
- Parameters: ``max_tokens`` (required: the request's, else ``max_tokens`` / ``max_completion_tokens``
  in ``params``, else the model's output limit from :mod:`~tierwise.providers.windows`, else 4,096);
  ``temperature`` (at most 1: Anthropic's range); ``top_p``; ``stop`` → ``stop_sequences``;
  ``user`` → ``metadata.user_id``; ``tool_choice`` and ``parallel_tool_calls: false`` → Anthropic's
  ``tool_choice`` (with ``disable_parallel_tool_use``). Other OpenAI parameters have no Anthropic
  name and are not sent. A request native to this wire (:class:`~tierwise.providers.base.Native`)
  also gets the client's own fields as sent (``thinking``, ``top_k``, ``metadata``,
  ``service_tier``…; its server tools after the function tools) and its ``anthropic-*`` headers.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tierwise.providers.base import ModelRequest
from tierwise.providers.cache_hints import CACHE_CONTROL, MAX_BREAKPOINTS
from tierwise.providers.windows import lookup_limits

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "MID_CONVERSATION_BETA",
    "Encoded",
    "encode_request",
    "place_cache_marks",
]

log = logging.getLogger(__name__)

DEFAULT_MAX_TOKENS = 4096
"""``max_tokens`` when neither the request nor the model table gives one."""

MID_CONVERSATION_BETA = "mid-conversation-system"
"""The ``anthropic-beta`` (by prefix) under which a system message may sit inside ``messages``."""

_SYSTEM_ROLES = frozenset({"system", "developer"})
_OPENAI_ONLY_PARTS = frozenset({"input_audio", "file", "refusal"})
_UNMARKABLE = frozenset({"thinking", "redacted_thinking"})


@dataclass
class Encoded:
    """An encoded request: the JSON ``body`` (without ``stream``) and the ``headers`` to send with it."""

    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class _Turn:
    role: str
    blocks: list[dict[str, Any]]


# -- content -----------------------------------------------------------------------------------


def _image(url: str) -> dict[str, Any]:
    """An image URL as an ``image`` block: a data URL as a base64 source, any other as a url source."""
    if url.startswith("data:") and ";base64," in url:
        media, data = url[5:].split(";base64,", 1)
        return {"type": "image", "source": {"type": "base64", "media_type": media, "data": data}}
    return {"type": "image", "source": {"type": "url", "url": url}}


def _blocks(content: Any, where: str) -> list[dict[str, Any]]:
    """A chat message's content as Anthropic blocks (client ``cache_control`` markers kept for now)."""
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    blocks: list[dict[str, Any]] = []
    for part in content if isinstance(content, list) else ():
        if isinstance(part, str):
            part = {"type": "text", "text": part}
        if not isinstance(part, Mapping):
            continue
        kind = part.get("type")
        if kind == "text":
            if part.get("text"):  # Anthropic refuses empty text blocks
                blocks.append(dict(part))
        elif kind == "image_url":
            image = part.get("image_url")
            url = image.get("url") if isinstance(image, Mapping) else image
            if isinstance(url, str) and url:
                block = _image(url)
                if "cache_control" in part:
                    block["cache_control"] = part["cache_control"]
                blocks.append(block)
        elif kind in _OPENAI_ONLY_PARTS:
            log.warning("a %r part of a %s message has no Anthropic block; not sent", kind, where)
        else:  # Anthropic's own blocks (document, search_result, server_tool_use…), carried as sent
            blocks.append(dict(part))
    return blocks


def _tool_use(call: Mapping[str, Any]) -> dict[str, Any] | None:
    function = call.get("function")
    if not isinstance(function, Mapping):  # a call of another type (custom): Anthropic has none
        log.warning("a tool call of type %r has no Anthropic block; not sent", call.get("type"))
        return None
    arguments = function.get("arguments") or "{}"
    try:
        parsed = json.loads(arguments) if isinstance(arguments, str) else arguments
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        log.warning("tool call %s: arguments are not a JSON object; sent as {}", call.get("id"))
        parsed = {}
    return {
        "type": "tool_use",
        "id": call.get("id") or "",
        "name": function.get("name") or "",
        "input": parsed,
    }


def _tool_result(message: Mapping[str, Any]) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": message.get("tool_call_id") or ""}
    content = message.get("content")
    if isinstance(content, list):
        parts = _blocks(content, "tool")
        if parts:
            block["content"] = parts
    elif isinstance(content, str) and content:
        block["content"] = content
    if "is_error" in message:
        block["is_error"] = message["is_error"]
    if "cache_control" in message:
        block["cache_control"] = message["cache_control"]
    return block


def _assistant(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    carried = [*(message.get("thinking_blocks") or ()), *(message.get("server_blocks") or ())]
    blocks = [dict(b) for b in carried if isinstance(b, Mapping)]
    blocks += _blocks(message.get("content"), "assistant")
    for call in message.get("tool_calls") or ():
        if isinstance(call, Mapping) and (block := _tool_use(call)) is not None:
            blocks.append(block)
    return blocks


# -- the conversation --------------------------------------------------------------------------


def _conversation(
    messages: Sequence[Mapping[str, Any]], *, keep_system: bool
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[int, dict[str, Any]]]:
    """``(system blocks, messages, {chat index: its last block})`` for ``messages`` (chat format)."""
    system: list[dict[str, Any]] = []
    first = 0
    while first < len(messages) and messages[first].get("role") in _SYSTEM_ROLES:
        system += _blocks(messages[first].get("content"), "system")
        first += 1
    last_block: dict[int, dict[str, Any]] = {}
    if system:
        for index in range(first):
            last_block[index] = system[-1]
    turns: list[_Turn] = []
    for index in range(first, len(messages)):
        message = messages[index]
        role = message.get("role")
        if role == "assistant":
            turn = _Turn("assistant", _assistant(message))
        elif role == "tool":
            turn = _Turn("user", [_tool_result(message)])
        elif role in _SYSTEM_ROLES:
            turn = _Turn("system" if keep_system else "user", _blocks(message.get("content"), "system"))
        else:
            turn = _Turn("user", _blocks(message.get("content"), "user"))
        if not turn.blocks:
            continue
        last_block[index] = turn.blocks[-1]
        if turns and turns[-1].role == turn.role and turn.role != "system":
            turns[-1].blocks += turn.blocks  # alternation: one user turn, one assistant turn
        else:
            turns.append(turn)
    out = []
    for turn in turns:
        blocks = turn.blocks
        if turn.role == "user":  # a turn's results first, as Anthropic requires
            results = [b for b in blocks if b.get("type") == "tool_result"]
            blocks = results + [b for b in blocks if b.get("type") != "tool_result"]
        out.append({"role": turn.role, "content": blocks})
    return system, out, last_block


# -- cache markers -----------------------------------------------------------------------------


def _marked(block: Mapping[str, Any]) -> bool:
    return "cache_control" in block


def _ttl(block: Mapping[str, Any]) -> str:
    control = block.get("cache_control")
    return str(control.get("ttl") or "5m") if isinstance(control, Mapping) else "5m"


def place_cache_marks(
    tools: list[dict[str, Any]],
    system: list[dict[str, Any]],
    messages: list[dict[str, Any]],
    breakpoints: Sequence[dict[str, Any]],
    *,
    limit: int = MAX_BREAKPOINTS,
) -> None:
    """Place Anthropic's ``cache_control`` markers in an encoded request, in place; at most ``limit``.

    The client's markers on its tools and system are honoured and count towards the limit; its
    markers inside the conversation are dropped — tierwise re-packs the history, so where they sat
    says nothing now — unless they fall on a block marked here anyway (their ``ttl`` is kept).
    While there is room, markers go, in this order of worth: the end of the system (else, without
    one, the last tool: the tools come first in Anthropic's cache order), the last message (the
    next turn reads it back), ``breakpoints`` — the last blocks of the messages ending tierwise's
    stable prefix, latest first — and then the last tool. Thinking blocks cannot be marked: a
    message's last other block is. A ``{"type": "ephemeral"}`` marker placed before a client's
    ``ttl: "1h"`` one becomes ``1h`` too: Anthropic wants the longer-lived entries first.
    """
    conversation = [b for m in messages for b in m["content"] if isinstance(b, dict)]
    client = {id(b): b["cache_control"] for b in conversation if _marked(b)}
    for block in conversation:
        block.pop("cache_control", None)
    for block in conversation:  # (parts inside a tool result too)
        for inner in block.get("content") or () if block.get("type") == "tool_result" else ():
            if isinstance(inner, dict):
                inner.pop("cache_control", None)
    room = limit - sum(map(_marked, tools)) - sum(map(_marked, system))
    ours: set[int] = set()

    def mark(block: dict[str, Any] | None) -> None:
        nonlocal room
        if block is None or room <= 0 or _marked(block):
            return
        block["cache_control"] = client.get(id(block), dict(CACHE_CONTROL))
        ours.add(id(block))
        room -= 1

    def markable(blocks: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
        return next((b for b in reversed(blocks) if b.get("type") not in _UNMARKABLE), None)

    last_tool = tools[-1] if tools else None
    mark(system[-1] if system else last_tool)
    mark(markable(messages[-1]["content"]) if messages else None)
    order = {id(b): i for i, b in enumerate(conversation)}
    for block in sorted(breakpoints, key=lambda b: order.get(id(b), -1), reverse=True):
        if id(block) in order and block.get("type") in _UNMARKABLE:
            continue
        mark(block if id(block) in order or any(block is s for s in system) else None)
    mark(last_tool)
    longer_later = False  # a 1h marker comes later in the prefix: ours before it become 1h
    for block in reversed([*tools, *system, *conversation]):
        if not _marked(block):
            continue
        if _ttl(block) == "1h":
            longer_later = True
        elif longer_later and id(block) in ours:
            block["cache_control"] = {**block["cache_control"], "ttl": "1h"}


# -- parameters --------------------------------------------------------------------------------


def _tools(tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for tool in tools:
        function = tool.get("function")
        if tool.get("type", "function") != "function" or not isinstance(function, Mapping):
            log.warning("a tool of type %r has no Anthropic definition; not sent", tool.get("type"))
            continue
        schema = function.get("parameters") or {"type": "object", "properties": {}}
        converted: dict[str, Any] = {"name": function.get("name") or ""}
        if function.get("description"):
            converted["description"] = function["description"]
        converted["input_schema"] = dict(schema)
        if "cache_control" in tool:
            converted["cache_control"] = tool["cache_control"]
        out.append(converted)
    return out


def _tool_choice(choice: Any, parallel: Any) -> dict[str, Any] | None:
    """OpenAI's ``tool_choice`` and ``parallel_tool_calls`` as Anthropic's ``tool_choice``."""
    out: dict[str, Any] | None
    if choice == "none":
        return {"type": "none"}
    if choice == "required":
        out = {"type": "any"}
    elif choice == "auto":
        out = {"type": "auto"}
    elif isinstance(choice, Mapping):
        function = choice.get("function")
        name = function.get("name") if isinstance(function, Mapping) else choice.get("name")
        out = {"type": "tool", "name": name} if name else None
    else:
        out = None
    if parallel is False:
        out = {**(out or {"type": "auto"}), "disable_parallel_tool_use": True}
    return out


def _max_tokens(request: ModelRequest, model: str) -> int:
    for value in (
        request.max_tokens,
        request.params.get("max_tokens"),
        request.params.get("max_completion_tokens"),
    ):
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    limits = lookup_limits(model)
    return limits.max_output if limits is not None and limits.max_output else DEFAULT_MAX_TOKENS


def _keeps_system(native_headers: Mapping[str, str]) -> bool:
    betas = native_headers.get("anthropic-beta", "")
    return any(b.strip().startswith(MID_CONVERSATION_BETA) for b in betas.split(","))


def encode_request(request: ModelRequest, model: str) -> Encoded:
    """``request`` as Anthropic's Messages body for ``model``, and the headers to send.

    Example:
        >>> encoded = encode_request(ModelRequest([{"role": "system", "content": "Be brief."},
        ...                                        {"role": "user", "content": "Hi"}], max_tokens=64), "m")
        >>> encoded.body["system"]
        [{'type': 'text', 'text': 'Be brief.', 'cache_control': {'type': 'ephemeral'}}]
        >>> encoded.body["messages"][0]["content"]
        [{'type': 'text', 'text': 'Hi', 'cache_control': {'type': 'ephemeral'}}]
    """
    native = request.native if request.native is not None and request.native.wire == "anthropic" else None
    headers = dict(native.headers) if native is not None else {}
    system, messages, last_block = _conversation(request.messages, keep_system=_keeps_system(headers))
    tools = _tools(request.tools)
    native_fields = dict(native.fields) if native is not None else {}
    tools += [dict(t) for t in native_fields.pop("tools", None) or () if isinstance(t, Mapping)]
    breakpoints = [last_block[i] for i in request.cache_breakpoints if i in last_block]
    place_cache_marks(tools, system, messages, breakpoints)
    body: dict[str, Any] = {"model": model, "max_tokens": _max_tokens(request, model), "messages": messages}
    if system:
        body["system"] = system
    params = request.params
    if tools:
        body["tools"] = tools
        choice = _tool_choice(request.tool_choice, params.get("parallel_tool_calls"))
        if choice is not None:
            body["tool_choice"] = choice
    if request.temperature is not None:
        body["temperature"] = min(request.temperature, 1.0)  # Anthropic's range is 0 to 1
    if params.get("top_p") is not None:
        body["top_p"] = params["top_p"]
    stop = params.get("stop")
    if stop:
        body["stop_sequences"] = [stop] if isinstance(stop, str) else list(stop)
    if isinstance(params.get("user"), str) and native is None:
        body["metadata"] = {"user_id": params["user"]}
    body.update({k: v for k, v in native_fields.items() if k not in ("model", "messages", "stream")})
    return Encoded(body, headers)
