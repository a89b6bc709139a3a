"""Tool calls and their results on ``/v1``: paired as OpenAI requires, else its 400 — or repaired, if asked.

OpenAI refuses a conversation whose tool calls and results do not pair up (400): an assistant
message with ``tool_calls`` must be followed by one ``tool`` message for each call before any other
message, and a ``tool`` message must answer a call of the assistant message right before it (tool
messages between them aside). Packing cannot send such a pair: it would leave the unanswered call
or the stray result out, and the model, not seeing its result, would run the tool again. So
:func:`check_pairs` refuses the request first, with the error the upstream gives (OpenAI's message,
``param: "messages"``), and the client sees the mistake in its own history.

Asked to repair (:func:`repair_history_from_env`: ``TIERWISE_REPAIR_HISTORY=1``, or
``create_app(repair_history=True)``), tierwise does what it did before: only a result that answers
no earlier call at all is refused (:func:`check_tool_results`), and packing leaves an unanswered call
or a misplaced result out (the pack's report says so).

Either way a ``tool`` message without ``tool_call_id`` is refused, naming the field.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from tierwise.errors import UserError
from tierwise.server.openai_params import BadRequest

__all__ = [
    "UNANSWERED",
    "UNKNOWN_CALL",
    "UNPRECEDED",
    "check_pairs",
    "check_tool_results",
    "repair_history_from_env",
]

UNANSWERED = (
    "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
    "'tool_call_id'. The following tool_call_ids did not have response messages: {ids}"
)
"""OpenAI's message for calls left unanswered (``ids`` joined by ``", "``)."""
UNPRECEDED = (
    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with "
    "'tool_calls'."
)
"""OpenAI's message for a tool message that follows no assistant message with calls (its spelling)."""
UNKNOWN_CALL = "Invalid parameter: 'tool_call_id' of '{id}' not found in 'tool_calls' of previous message."
"""OpenAI's message for a tool message that answers none of the previous assistant message's calls."""

_YES = frozenset({"1", "true", "yes", "on"})
_NO = frozenset({"", "0", "false", "no", "off"})


def repair_history_from_env() -> bool:
    """``TIERWISE_REPAIR_HISTORY``: whether ``/v1`` repairs tool calls and results that do not pair up.

    ``1``, ``true``, ``yes``, ``on``: repaired (packing leaves the strays out); ``0``, ``false``,
    ``no``, ``off`` or unset: refused with the upstream's 400 (the default).

    Raises:
        UserError: another value, naming the ones that work.
    """
    raw = os.environ.get("TIERWISE_REPAIR_HISTORY", "")
    value = raw.strip().lower()
    if value in _YES or value in _NO:
        return value in _YES
    raise UserError(
        f"TIERWISE_REPAIR_HISTORY={raw!r} is not on or off; set it to 1 (or true) to repair a history whose "
        "tool calls and results do not pair up, 0 (or false) or unset to refuse it as OpenAI does"
    )


def _refused(message: str) -> BadRequest:
    return BadRequest(400, message, None, "messages")  # OpenAI's code is null


def _without_id(index: int) -> BadRequest:
    return BadRequest(
        400,
        f"messages[{index}] is a tool message without tool_call_id; give the id of the assistant tool "
        "call it answers",
        "invalid_value",
        f"messages.{index}.tool_call_id",
    )


def check_pairs(messages: Sequence[Mapping[str, Any]]) -> None:
    """Refuse tool calls and results that do not pair up, as OpenAI does (see the module).

    Example:
        >>> call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        >>> history = [{"role": "user", "content": "Hi"}, {"role": "assistant", "tool_calls": [call]}]
        >>> try:
        ...     check_pairs([*history, {"role": "user", "content": "Well?"}])
        ... except BadRequest as exc:
        ...     print(exc.param, str(exc).rsplit(". ", 1)[1])
        messages The following tool_call_ids did not have response messages: c1

    Raises:
        BadRequest: 400, OpenAI's message, ``param`` ``"messages"``.
    """
    waiting: list[Any] = []  # the calls of the assistant message being answered, not answered yet
    calls: set[Any] = set()  # all its calls
    answering = False  # the messages since that assistant message are all tool messages
    for index, message in enumerate(messages):
        role = message.get("role")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id is None:
                raise _without_id(index)
            if not answering or (call_id in calls and call_id not in waiting):  # (answered twice)
                raise _refused(UNPRECEDED)
            if call_id not in waiting:
                raise _refused(UNKNOWN_CALL.format(id=call_id))
            waiting.remove(call_id)
            continue
        if waiting:
            raise _refused(UNANSWERED.format(ids=", ".join(map(str, waiting))))
        made = message.get("tool_calls") if role == "assistant" else None
        answering = bool(made)
        if made:
            waiting = [call.get("id") for call in made if isinstance(call, Mapping)]
            calls = set(waiting)
            if len(calls) < len(waiting):  # packing could not tell their results apart
                raise BadRequest(
                    400,
                    f"messages[{index}] has two tool calls with one id; give each call its own id",
                    "invalid_value",
                    f"messages.{index}.tool_calls",
                )
    if waiting:
        raise _refused(UNANSWERED.format(ids=", ".join(map(str, waiting))))


def check_tool_results(messages: Sequence[Mapping[str, Any]]) -> None:
    """Refuse a tool message that answers no earlier assistant tool call (the check when repairing).

    Raises:
        BadRequest: the message's index and ``tool_call_id`` named.
    """
    calls: set[Any] = set()
    for index, message in enumerate(messages):
        role = message.get("role")
        if role == "assistant":
            made = message.get("tool_calls") or ()
            calls.update(call.get("id") for call in made if isinstance(call, Mapping))
        elif role == "tool":
            call_id = message.get("tool_call_id")
            if call_id is None:
                raise _without_id(index)
            if call_id not in calls:
                raise BadRequest(
                    400,
                    f"messages[{index}]: tool_call_id {call_id!r} answers no tool call of an earlier "
                    "assistant message; send the assistant message with that call before it",
                    "invalid_value",
                    f"messages.{index}.tool_call_id",
                )
