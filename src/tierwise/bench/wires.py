"""One conversation in each client wire tierwise serves, for the benchmarks that replay through them.

A benchmark's conversation is OpenAI chat-format messages (system first, assistant ``tool_calls``,
``tool`` results). :func:`encode` writes the request a client of each wire would send for it:

- ``chat`` — ``POST /v1/chat/completions``: the messages and tools as they are;
- ``responses`` — ``POST /v1/responses``: the leading system messages as ``instructions``, then
  ``input`` items: ``message`` items (an assistant's text as ``output_text``), each tool call a
  ``function_call`` item after its message's text, each result a ``function_call_output``; flat
  ``function`` tools; ``max_output_tokens``;
- ``anthropic`` — ``POST /v1/messages``: the leading system messages as ``system``, an assistant's
  text and ``tool_use`` blocks in one message, a step's ``tool_result`` blocks in one user message
  (a user message right after them joins it, as Anthropic's roles alternate); tools with
  ``input_schema``; ``max_tokens`` (required).

:func:`stream_done` and :func:`stream_text` read each wire's server-sent events (the last one of an
answer, and a text delta).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["API", "PATHS", "WIRES", "encode", "parse_wires", "stream_done", "stream_text"]

Message = dict[str, Any]

WIRES = ("chat", "responses", "anthropic")
"""The client wires tierwise serves, the reference (Chat Completions) first."""

PATHS = {
    "chat": "/v1/chat/completions",
    "responses": "/v1/responses",
    "anthropic": "/v1/messages",
    "api": "/api/chats/{chat}/messages",
}
"""Each wire's endpoint; ``api`` is the web chat's turn (its server keeps the history, by chat id)."""

API = "api"
"""The web chat's API, measured beside the wires by the load benchmark (not a wire a client replays)."""


def parse_wires(value: str, extra: Sequence[str] = ()) -> tuple[str, ...]:
    """``chat``, ``responses``, ``anthropic``, ``all``, or a comma-separated list, as wires in order.

    ``extra``: further names accepted after them (``all`` does not include them), e.g. :data:`API`.

    Raises:
        ValueError: a name that is none of them.

    Example:
        >>> parse_wires("all"), parse_wires("anthropic,chat")
        (('chat', 'responses', 'anthropic'), ('chat', 'anthropic'))
    """
    names = {n.strip() for n in value.split(",") if n.strip()}
    known = (*WIRES, *extra)
    unknown = sorted(names - {*known, "all"})
    if unknown or not names:
        raise ValueError(f"unknown wire {', '.join(unknown) or value!r}; use {', '.join(known)} or all")
    return tuple(w for w in known if w in names or ("all" in names and w in WIRES))


def _leading_system(messages: Sequence[Mapping[str, Any]]) -> int:
    n = 0
    while n < len(messages) and messages[n].get("role") in ("system", "developer"):
        n += 1
    return n


def _text(content: Any) -> str:
    """A message's content as one text (text parts joined)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))


def _arguments(call: Mapping[str, Any]) -> str:
    return str(call.get("function", {}).get("arguments") or "{}")


def encode(
    wire: str,
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]] = (),
    *,
    model: str = "bench",
    max_tokens: int | None = None,
    stream: bool = False,
) -> dict[str, Any]:
    """The request body a ``wire`` client sends for ``messages`` and ``tools`` (chat-format).

    Example:
        >>> body = encode("anthropic", [{"role": "system", "content": "Be brief."},
        ...     {"role": "user", "content": "Hi"}], max_tokens=64)
        >>> body["system"], body["messages"], body["max_tokens"]
        ('Be brief.', [{'role': 'user', 'content': 'Hi'}], 64)
    """
    if wire == "chat":
        body: dict[str, Any] = {"model": model, "messages": [dict(m) for m in messages], "stream": stream}
        if tools:
            body["tools"] = [dict(t) for t in tools]
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        return body
    first = _leading_system(messages)
    system = "\n\n".join(_text(m.get("content")) for m in messages[:first])
    if wire == "responses":
        body = {"model": model, "input": _responses_items(messages[first:]), "stream": stream}
        if system:
            body["instructions"] = system
        if tools:
            body["tools"] = [_responses_tool(t) for t in tools]
        if max_tokens is not None:
            body["max_output_tokens"] = max_tokens
        return body
    if wire == "anthropic":
        body = {
            "model": model,
            "max_tokens": max_tokens or 1024,
            "messages": _anthropic_messages(messages[first:]),
            "stream": stream,
        }
        if system:
            body["system"] = system
        if tools:
            body["tools"] = [_anthropic_tool(t) for t in tools]
        return body
    raise ValueError(f"unknown wire {wire!r}; use {', '.join(WIRES)}")


def _responses_items(messages: Sequence[Mapping[str, Any]]) -> list[Message]:
    items: list[Message] = []
    for m in messages:
        role = m.get("role")
        if role == "tool":
            output = _text(m.get("content"))
            items.append({"type": "function_call_output", "call_id": m.get("tool_call_id"), "output": output})
        elif role == "assistant":
            text = _text(m.get("content"))
            if text or not m.get("tool_calls"):
                part = {"type": "output_text", "text": text, "annotations": []}
                items.append({"type": "message", "role": "assistant", "content": [part]})
            for call in m.get("tool_calls") or ():
                name = call.get("function", {}).get("name")
                item = {"type": "function_call", "call_id": call.get("id"), "name": name}
                items.append({**item, "arguments": _arguments(call)})
        else:
            items.append({"type": "message", "role": role, "content": _text(m.get("content"))})
    return items


def _responses_tool(tool: Mapping[str, Any]) -> Message:
    function = tool.get("function", {})
    return {"type": "function", **{k: v for k, v in function.items() if k != "strict"}}


def _anthropic_messages(messages: Sequence[Mapping[str, Any]]) -> list[Message]:
    out: list[Message] = []
    for m in messages:
        role = m.get("role")
        if role == "tool":
            block = {"type": "tool_result", "tool_use_id": m.get("tool_call_id")}
            block["content"] = _text(m.get("content"))
            if out and out[-1]["role"] == "user" and isinstance(out[-1]["content"], list):
                out[-1]["content"].append(block)  # a step's results in one user message
            else:
                out.append({"role": "user", "content": [block]})
        elif role == "assistant":
            text = _text(m.get("content"))
            calls = m.get("tool_calls") or ()
            if not calls:
                out.append({"role": "assistant", "content": text})
                continue
            blocks: list[Message] = [{"type": "text", "text": text}] if text else []
            for call in calls:
                name = call.get("function", {}).get("name")
                arguments = json.loads(_arguments(call))
                blocks.append({"type": "tool_use", "id": call.get("id"), "name": name, "input": arguments})
            out.append({"role": "assistant", "content": blocks})
        else:
            text = _text(m.get("content"))
            if out and out[-1]["role"] == "user" and isinstance(out[-1]["content"], list):
                out[-1]["content"].append({"type": "text", "text": text})  # after a step's results
            else:
                out.append({"role": str(role), "content": text})
    return out


def _anthropic_tool(tool: Mapping[str, Any]) -> Message:
    function = tool.get("function", {})
    schema = function.get("parameters") or {"type": "object", "properties": {}}
    described = {"description": function["description"]} if function.get("description") else {}
    return {"name": function.get("name"), **described, "input_schema": schema}


_LAST = frozenset({"response.completed", "response.incomplete", "response.failed", "message_stop", "error"})


def stream_done(wire: str, payload: str) -> bool:
    """Whether ``payload`` (an event's ``data``) is the last event of a ``wire`` answer.

    Example:
        >>> stream_done("chat", "[DONE]"), stream_done("anthropic", '{"type": "message_stop"}')
        (True, True)
    """
    if wire == "chat":
        return payload == "[DONE]"
    try:
        kind = json.loads(payload).get("type")
    except (ValueError, AttributeError):
        return False
    return kind == "done" if wire == API else kind in _LAST


def stream_text(wire: str, payload: str) -> str:
    """The answer's text in one event's ``data`` of a ``wire`` stream ("" when it carries none)."""
    if wire == "chat":
        if payload == "[DONE]":
            return ""
        choices = json.loads(payload).get("choices", [])
        return "".join(c.get("delta", {}).get("content") or "" for c in choices)
    event = json.loads(payload)
    if wire == API and event.get("type") == "text":
        return str(event.get("text", ""))
    if wire == "responses" and event.get("type") == "response.output_text.delta":
        return str(event.get("delta", ""))
    if wire == "anthropic" and event.get("type") == "content_block_delta":
        delta = event.get("delta", {})
        return str(delta.get("text", "")) if delta.get("type") == "text_delta" else ""
    return ""
