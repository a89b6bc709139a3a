"""A :class:`~tierwise.providers.base.ModelRequest` as OpenAI's Responses request body.

The inverse of :mod:`tierwise.server.responses_input`, for any client: the conversation tierwise
keeps is OpenAI's chat shape, whichever wire it came on. :func:`responses_body` is what
:class:`~tierwise.providers.responses_api.ResponsesProvider` sends (its stream decoded there):

- the leading system messages → ``instructions`` (joined by a blank line). That is where a
  Responses client puts its system prompt (the gateway decodes it into the leading system
  message), so its request goes upstream as it came; a later system message stays an input message
  where it was. ``developer`` messages stay ``message`` items, leading or not: that is where a
  Responses client such as Codex puts its own (its several developer items are not merged into
  ``instructions`` it never sent);
- user, developer (and later system) messages → ``message`` items (text → ``input_text``, ``image_url`` →
  ``input_image``, ``file`` → ``input_file``; other parts as sent);
- an assistant message → the items it carries (``response_items``: ``reasoning`` with its
  ``encrypted_content``…) first, as they are, then a ``message`` item of its text
  (``output_text``, a ``refusal``), then a ``function_call`` per call (``custom_tool_call`` for a
  ``custom`` one; a call of another type as sent);
- ``tool`` messages → ``function_call_output`` (``custom_tool_call_output`` for a custom call);
- tools: the chat-shaped ``function`` / ``custom`` tools flattened; when the client spoke the
  Responses API too (:attr:`ModelRequest.native`), its hosted and namespace tools (``web_search``…)
  with them, all in the client's order (tools only the pack has after);
  ``tool_choice`` translated (a Responses client's own when it names a hosted tool);
- the other fields: the client's as sent when it spoke the Responses API, else ``params``
  renamed (``max_completion_tokens`` → ``max_output_tokens``, ``response_format`` →
  ``text.format``, ``reasoning_effort`` → ``reasoning.effort``, ``verbosity`` → ``text.verbosity``),
  the ones the Responses API has under the same name as they are, the rest (``n``, ``stop``,
  ``seed``, ``logprobs``…) left out.

``store``: the client's when it sent one; otherwise ``False`` for a request that did not come on
the Responses wire. tierwise keeps the conversation and sends the whole of it each time, so the
upstream keeping a copy serves nothing (and would keep, under the upstream's retention rules, what
the client never asked it to). Without storage the upstream can only read back a reasoning item
that carries its ``encrypted_content``: with ``reasoning_effort`` set it is asked for
(``include``), and a reasoning item without it is left out when ``store`` is off (the upstream
would refuse the request: it cannot find the item by id).

Example:
    >>> body = responses_body(ModelRequest([{"role": "system", "content": "Be brief."},
    ...     {"role": "user", "content": "Hi"}]), "gpt-5-mini")
    >>> body["instructions"], body["input"], body["store"]
    ('Be brief.', [{'type': 'message', 'role': 'user', 'content': 'Hi'}], False)
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from tierwise.providers.base import ModelRequest

__all__ = ["CARRIED", "responses_body", "responses_input", "responses_tool", "responses_tool_choice"]

log = logging.getLogger(__name__)

WIRE = "responses"

CARRIED = "response_items"
"""The assistant message's field of the items chat format has no place for.

(``tierwise.server.responses_input.CARRIED``: the server is above the providers, not imported here.)"""

_CALL_TOOLS = frozenset({"function", "custom"})  # the tools a chat-format conversation calls

# Chat Completions' request fields the Responses API has under the same name.
_SAME = frozenset(
    {
        "top_p",
        "parallel_tool_calls",
        "metadata",
        "prompt_cache_key",
        "safety_identifier",
        "user",
        "service_tier",
        "store",
        "prompt_cache_retention",
        "truncation",
        "include",
        "background",
    }
)
_OWN = frozenset(
    {"model", "messages", "input", "instructions", "stream", "stream_options", "tools", "tool_choice"}
)


# A Responses client's fields that are not sent as they came: the tools are the pack's, the rest rebuilt.
_NOT_NATIVE = frozenset(
    {"tools", "tool_choice", "model", "input", "instructions", "stream", "previous_response_id"}
)


def _text_of(content: Any) -> str | None:
    """A message's content as one text, or ``None`` when it holds parts other than text."""
    if content is None or isinstance(content, str):
        return content or ""
    if isinstance(content, list) and all(isinstance(p, Mapping) and p.get("type") == "text" for p in content):
        return "".join(str(p.get("text", "")) for p in content)
    return None


def _input_part(part: Any) -> Any:
    """A chat content part as a Responses input part; one it has no equivalent for, as sent."""
    if not isinstance(part, Mapping):
        return part
    kind = part.get("type")
    if kind in ("text", "input_text"):
        return {"type": "input_text", "text": part.get("text", "")}
    if kind == "image_url":
        image = part.get("image_url")
        image = image if isinstance(image, Mapping) else {"url": image}
        return {"type": "input_image", "image_url": image.get("url"), "detail": image.get("detail") or "auto"}
    if kind == "file":
        inner = part.get("file")
        return {"type": "input_file", **(dict(inner) if isinstance(inner, Mapping) else {})}
    return dict(part)


def _input_content(content: Any) -> Any:
    """A message's or a tool result's content: a text as it is, parts as Responses input parts."""
    if isinstance(content, list):
        return [_input_part(p) for p in content]
    return content if content is not None else ""


def _assistant_items(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The assistant message's carried items, then its text as a ``message`` item, then its calls."""
    items: list[dict[str, Any]] = [dict(i) for i in message.get(CARRIED) or () if isinstance(i, Mapping)]
    content = message.get("content")
    parts: list[dict[str, Any]] = []
    if isinstance(content, str) and content:
        parts.append({"type": "output_text", "text": content, "annotations": []})
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, Mapping) and part.get("type") in ("text", "output_text"):
                parts.append({"type": "output_text", "text": part.get("text", ""), "annotations": []})
            elif isinstance(part, Mapping) and part.get("type") == "refusal":
                parts.append(dict(part))
            else:
                parts.append(_input_part(part))
    if message.get("refusal"):
        parts.append({"type": "refusal", "refusal": message["refusal"]})
    if parts:
        items.append({"type": "message", "role": "assistant", "content": parts})
    for call in message.get("tool_calls") or ():
        items.append(_call_item(call))
    return items


def _call_item(call: Any) -> dict[str, Any]:
    if not isinstance(call, Mapping):
        return call  # type: ignore[no-any-return]
    kind = call.get("type", "function")
    if kind == "function" or "function" in call:
        function = call.get("function") or {}
        arguments = function.get("arguments")
        return {
            "type": "function_call",
            "call_id": call.get("id"),
            "name": function.get("name"),
            "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments or {}),
        }
    if kind == "custom":
        custom = call.get("custom") or {}
        return {
            "type": "custom_tool_call",
            "call_id": call.get("id"),
            "name": custom.get("name"),
            "input": custom.get("input", ""),
        }
    return dict(call)


def responses_input(
    messages: Sequence[Mapping[str, Any]], *, stored: bool = True
) -> tuple[str | None, list[dict[str, Any]]]:
    """Chat-format ``messages`` as the Responses API's ``instructions`` and ``input`` items.

    ``stored``: whether the upstream keeps responses (``store``); when it does not, a ``reasoning``
    item without ``encrypted_content`` is left out (the upstream could not find it by its id).

    Example:
        >>> call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        >>> _, items = responses_input([{"role": "user", "content": "Hi"},
        ...     {"role": "assistant", "content": None, "tool_calls": [call]},
        ...     {"role": "tool", "tool_call_id": "c1", "content": "ok"}])
        >>> [item["type"] for item in items]
        ['message', 'function_call', 'function_call_output']
    """
    lead: list[str] = []
    start = 0
    for message in messages:
        text = _text_of(message.get("content"))
        if message.get("role") != "system" or text is None:
            break
        lead.append(text)
        start += 1
    items: list[dict[str, Any]] = []
    custom: set[Any] = set()  # the ids of custom calls: their results are custom outputs
    for message in messages[start:]:
        role = message.get("role")
        if role == "assistant":
            for item in _assistant_items(message):
                if item.get("type") == "custom_tool_call":
                    custom.add(item.get("call_id"))
                if not stored and item.get("type") == "reasoning" and not item.get("encrypted_content"):
                    log.debug(
                        "reasoning item %s left out: no encrypted_content and store off", item.get("id")
                    )
                    continue
                items.append(item)
        elif role == "tool":
            call_id = message.get("tool_call_id")
            kind = "custom_tool_call_output" if call_id in custom else "function_call_output"
            items.append({"type": kind, "call_id": call_id, "output": _input_content(message.get("content"))})
        else:
            items.append({"type": "message", "role": role, "content": _input_content(message.get("content"))})
    instructions = "\n\n".join(t for t in lead if t) or None
    return instructions, items


def _in_client_order(packed: list[Any], given: Sequence[Any]) -> list[Any]:
    """The pack's tools with a Responses client's others, in the order the client ``given`` them.

    The client's ``function`` / ``custom`` tools are the pack's (what tierwise offers this call: one
    it withheld is not sent); its other tools (hosted, ``namespace``) as it sent them; tools only
    the pack has (tierwise's own) after.
    """
    by_name = {t.get("name"): t for t in packed if isinstance(t, Mapping) and t.get("type") in _CALL_TOOLS}
    ordered: list[Any] = []
    for tool in given:
        if not isinstance(tool, Mapping):
            continue
        if tool.get("type") not in _CALL_TOOLS:
            ordered.append(dict(tool))
        elif (mine := by_name.pop(tool.get("name"), None)) is not None:
            ordered.append(mine)
    placed = {id(t) for t in ordered}
    return ordered + [t for t in packed if id(t) not in placed]


def responses_tool(tool: Any) -> Any:
    """A chat-shaped tool in the Responses API's flat shape (``function``, ``custom``); another as sent."""
    if not isinstance(tool, Mapping):
        return tool
    kind = tool.get("type")
    if kind in _CALL_TOOLS and isinstance(tool.get(kind), Mapping):
        return {"type": kind, **tool[kind]}
    return dict(tool)


def responses_tool_choice(choice: Any) -> Any:
    """A Chat Completions ``tool_choice`` in the Responses API's shape; one already flat, as sent."""
    if not isinstance(choice, Mapping):
        return choice
    kind = choice.get("type")
    if kind in _CALL_TOOLS and isinstance(choice.get(kind), Mapping):
        return {"type": kind, "name": choice[kind].get("name")}
    if kind == "allowed_tools" and isinstance(choice.get("allowed_tools"), Mapping):
        allowed = choice["allowed_tools"]
        tools = [responses_tool_choice(t) for t in allowed.get("tools") or ()]
        return {"type": "allowed_tools", "mode": allowed.get("mode", "auto"), "tools": tools}
    return dict(choice)


def _renamed(params: Mapping[str, Any]) -> dict[str, Any]:
    """Chat Completions ``params`` under the Responses API's names; those it lacks left out."""
    body: dict[str, Any] = {}
    text: dict[str, Any] = {}
    for key, value in params.items():
        if value is None or key in _OWN:
            continue
        if key in ("max_completion_tokens", "max_tokens"):
            body.setdefault("max_output_tokens", value)
        elif key == "response_format":
            text["format"] = _text_format(value)
        elif key == "verbosity":
            text["verbosity"] = value
        elif key == "reasoning_effort":
            body["reasoning"] = {**body.get("reasoning", {}), "effort": value}
        elif key == "temperature":
            body["temperature"] = value
        elif key in _SAME:
            body[key] = value
        else:
            log.debug("%s has no Responses API equivalent: not sent", key)
    if text:
        body["text"] = text
    return body


def _text_format(fmt: Any) -> Any:
    """``response_format`` as ``text.format`` (a JSON schema's fields flat)."""
    if (
        isinstance(fmt, Mapping)
        and fmt.get("type") == "json_schema"
        and isinstance(fmt.get("json_schema"), Mapping)
    ):
        return {"type": "json_schema", **fmt["json_schema"]}
    return fmt


def responses_body(request: ModelRequest, model: str) -> dict[str, Any]:
    """The Responses body of ``request`` for ``model`` (``stream: true``; the module docstring says how)."""
    native = request.native if request.native is not None and request.native.wire == WIRE else None
    if native is not None:
        body = {k: v for k, v in native.fields.items() if k not in _NOT_NATIVE}
    else:
        body = _renamed(request.params)
        body.setdefault("store", False)  # tierwise keeps the conversation (module docstring)
    if request.max_tokens is not None:
        body["max_output_tokens"] = request.max_tokens
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if native is None and "reasoning" in body and not body["store"]:  # read back without storage
        body["include"] = [*body.get("include", ()), "reasoning.encrypted_content"]
    instructions, items = responses_input(request.messages, stored=body.get("store", True) is not False)
    tools = [responses_tool(t) for t in request.tools]
    if native is not None:  # the tools only the Responses API runs, which only it answers
        tools = _in_client_order(tools, native.fields.get("tools") or ())
    if tools:
        body["tools"] = tools
        # The request's (what the gateway decided: tierwise's last retrieval round says "none"),
        # else a Responses client's own: one naming a hosted tool has no chat shape to come in.
        choice = responses_tool_choice(request.tool_choice) if request.tool_choice is not None else None
        if choice is None and native is not None:
            choice = native.fields.get("tool_choice")
        if choice is not None:
            body["tool_choice"] = choice
    if instructions is not None:
        body["instructions"] = instructions
    return {"model": model, "input": items, **body, "stream": True}
