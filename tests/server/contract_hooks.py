"""Schemathesis hooks: the rules of a ``/v1/chat/completions`` body that JSON Schema cannot state.

The published schema says everything about one value at a time; these three rules relate values to
each other, and OpenAI answers each with a 400 as tierwise does:

1. a named ``tool_choice`` (``{"type": "function", …}``) names one of the body's function ``tools``;
2. tool calls and results pair up as OpenAI requires: an assistant message's ``tool_calls`` are each
   answered by a ``tool`` message before any other message, and a ``tool`` message answers a call of
   the assistant message before it (``tierwise.server.openai_pairs``);
3. the prompt and the answer fit the window: ``max_completion_tokens`` (else ``max_tokens``, else the
   1,000 tokens ``tierwise serve`` keeps) plus the prompt's tokens stay within the window (the
   schema's ``max_tokens`` maximum + 1). The prompt is counted high, from its JSON's length (a
   token is at least a byte; tools twice, framing generously), so a body this rule lets through
   always fits, and one it drops may have just fitted.

A request that breaks one is refused with a 400 however well each value fits the schema, so a
generated *valid* body that breaks one is not one the server must accept: :func:`filter_case`
drops it (negative cases are left alone). ``/v1/messages`` bodies have the same three rules in
Anthropic's shape (:func:`broken_anthropic_rule`). Used as::

    SCHEMATHESIS_HOOKS=tests/server/contract_hooks.py st run http://127.0.0.1:8731/openapi.json --checks all

``tests/server/test_contract.py`` checks that the server refuses exactly what these rules name.
"""

from __future__ import annotations

import json
from typing import Any

RESERVE = 1_000  # what `tierwise serve` keeps for the answer when the body asks for no more
_MARGIN = 200  # the pack's framing and what tierwise adds for a new session, generously
_PER_MESSAGE = 10


def broken_rule(body: Any, window: int) -> str | None:
    """Which of the three rules ``body`` breaks (its number and what is wrong), or ``None``."""
    if not isinstance(body, dict):
        return None
    messages = body.get("messages")
    messages = messages if isinstance(messages, list) else []
    tools = body.get("tools") if isinstance(body.get("tools"), list) else []
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and choice.get("type", "function") == "function":
        named = (choice.get("function") or {}).get("name")
        names = {(t.get("function") or {}).get("name") for t in tools if isinstance(t, dict)}
        if named not in names:
            return f"1: tool_choice names {named!r}, not among the tools"
    waiting: list[Any] = []
    answering = False
    for message in messages:
        if not isinstance(message, dict):
            continue
        if message.get("role") == "tool":
            if not answering or message.get("tool_call_id") not in waiting:
                return (
                    f"2: tool_call_id {message.get('tool_call_id')!r} answers no call of the message before"
                )
            waiting.remove(message.get("tool_call_id"))
            continue
        if waiting:
            return f"2: tool calls {waiting} are not answered before the next message"
        calls = message.get("tool_calls") if message.get("role") == "assistant" else None
        answering = bool(calls)
        waiting = [c.get("id") for c in calls or () if isinstance(c, dict)]
    if waiting:
        return f"2: tool calls {waiting} are not answered"
    answer = body.get("max_completion_tokens") or body.get("max_tokens") or 0
    answer = max(answer, RESERVE) if isinstance(answer, int | float) else RESERVE
    prompt = len(json.dumps(messages)) + 2 * len(json.dumps(tools)) + _PER_MESSAGE * len(messages) + _MARGIN
    if answer + prompt > window:
        return f"3: {answer:,} answer and up to {prompt:,} prompt tokens exceed the {window:,}-token window"
    return None


def _anthropic_steps(messages: list[Any]) -> list[tuple[str, Any]]:
    """A Messages conversation as the steps the pairing rule reads, in order.

    A user message's ``tool_result`` blocks come first (``("result", id)`` each), then the rest of it
    (``("message", [])``) unless it held only results; any other message is ``("message", ids)`` with
    the ids of its ``tool_use`` blocks (an assistant message's).
    """
    steps: list[tuple[str, Any]] = []
    for message in messages:
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
        if message.get("role") == "user":
            results = [b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"]
            steps += [("result", r) for r in results]
            if not results or len(results) < len(blocks) or not isinstance(content, list):
                steps.append(("message", []))
        elif message.get("role") == "assistant":
            steps.append(("message", [b.get("id") for b in blocks if b.get("type") == "tool_use"]))
        else:
            steps.append(("message", []))
    return steps


def broken_count_rule(body: Any, window: int) -> str | None:
    """The rule a ``/v1/messages/count_tokens`` body can break: a named ``tool_choice`` names one of its
    tools (Anthropic's own too). Nothing is packed or sent, so unpaired calls and a long prompt are
    counted, not refused."""
    if not isinstance(body, dict):
        return None
    tools = body.get("tools") if isinstance(body.get("tools"), list) else []
    choice = body.get("tool_choice")
    if not isinstance(choice, dict) or choice.get("type") != "tool":
        return None
    if choice.get("name") not in {t.get("name") for t in tools if isinstance(t, dict)}:
        return f"1: tool_choice names {choice.get('name')!r}, not among the tools"
    return None


def broken_anthropic_rule(body: Any, window: int) -> str | None:
    """Which of the three rules a ``/v1/messages`` body breaks, in Anthropic's shape, or ``None``.

    1. ``tool_choice`` ``{"type": "tool", "name": …}`` names one of the body's tools;
    2. a ``tool_result`` answers a ``tool_use`` of the assistant message just before (its user
       message's other blocks after the results), and every ``tool_use`` is answered before the next
       message; one assistant message's calls have distinct ids;
    3. the prompt fits the window with the answer's reserve (``max_tokens`` is lowered to the model's
       output limit, never refused, and ``tierwise serve``'s offline model plans with the reserve).
    """
    if not isinstance(body, dict):
        return None
    messages = body.get("messages") if isinstance(body.get("messages"), list) else []
    tools = body.get("tools") if isinstance(body.get("tools"), list) else []
    unnamed = broken_count_rule(body, window)
    if unnamed is not None:
        return unnamed
    waiting: list[Any] = []
    answering = False
    for kind, value in _anthropic_steps(messages):
        if kind == "result":
            if not answering or value not in waiting:
                return f"2: tool_result {value!r} answers no tool_use of the message before"
            waiting.remove(value)
            continue
        if waiting:
            return f"2: tool_use {waiting} not answered in the next user message"
        if len(set(value)) < len(value):
            return f"2: two tool_use blocks with one id in {value}"
        answering, waiting = bool(value), list(value)
    if waiting:
        return f"2: tool_use {waiting} not answered"
    system = body.get("system")
    prompt = len(json.dumps([system, messages])) + 2 * len(json.dumps(tools))
    prompt += _PER_MESSAGE * len(messages) + _MARGIN
    if RESERVE + prompt > window:
        return f"3: up to {prompt:,} prompt tokens and the {RESERVE:,} reserve exceed the {window:,} window"
    return None


def window_of(raw_schema: dict[str, Any]) -> int | None:
    """The window the schema documents: ``max_tokens``'s maximum + 1 (``None`` if it states none)."""
    body = raw_schema.get("components", {}).get("schemas", {}).get("ChatCompletionRequest", {})
    field = body.get("properties", {}).get("max_tokens", {})
    for branch in field.get("anyOf", [field]):
        if isinstance(branch, dict) and isinstance(branch.get("maximum"), int):
            return int(branch["maximum"]) + 1
    return None


def broken_responses_rule(body: Any, window: int) -> str | None:
    """Which rule a ``/v1/responses`` body breaks: the Chat Completions body it decodes to is checked
    (tool call and output pairs, a named tool choice, ``max_output_tokens`` and the prompt within
    the window). A body that does not decode is left to the server to refuse."""
    from tierwise.server.responses_input import chat_body

    if not isinstance(body, dict):
        return None
    try:
        chat = chat_body(body)
    except Exception:  # (a body the server refuses itself: a negative case)
        return None
    return broken_rule(chat, window)


_RULES = {
    "/v1/chat/completions": broken_rule,
    "/v1/responses": broken_responses_rule,
    "/v1/messages": broken_anthropic_rule,
    "/v1/messages/count_tokens": broken_count_rule,
}
"""The operations whose bodies have rules, and what checks them."""

try:
    import schemathesis
except ImportError:  # pytest imports this file for its doctests, without schemathesis installed
    schemathesis = None

if schemathesis is not None:

    @schemathesis.hook
    def filter_case(context: Any, case: Any) -> bool:
        """Drop a generated valid ``/v1/chat/completions`` or ``/v1/messages`` body that breaks a rule."""
        meta = case.meta
        rule = _RULES.get(case.operation.path)
        if rule is None or meta is None or not meta.generation.mode.is_positive:
            return True
        window = window_of(case.operation.schema.raw_schema)
        return window is None or rule(case.body, window) is None
