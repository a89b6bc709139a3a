"""Tool calls in, tool results out: the values the executor takes and returns.

:class:`ToolCall` is one call as a model made it (OpenAI's ``tool_calls`` entries convert with
:meth:`ToolCall.from_openai`); :class:`ToolResult` is what came of it, with the text that goes back to
the model as the ``tool`` message. :func:`serialize_result` turns whatever a tool returned into that
text: strings as they are, everything else (pydantic models, dataclasses, dicts, lists, dates …) as
compact JSON, unknown objects by ``str``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic_core import to_json, to_jsonable_python

from tierwise.tools.strategies import Fallback

__all__ = ["ToolCall", "ToolResult", "serialize_result"]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call as the model made it.

    Attributes:
        call_id: the model's id for the call (echoed as ``tool_call_id``).
        name: the tool's name.
        arguments: the arguments as the model sent them: JSON text, or an already parsed object.
    """

    call_id: str
    name: str
    arguments: str | Mapping[str, Any] = "{}"

    @classmethod
    def from_openai(cls, call: Mapping[str, Any]) -> ToolCall:
        """Read an OpenAI ``tool_calls`` entry: ``{"id", "type": "function", "function": {name, arguments}}``.

        Missing or mistyped parts become empty strings, so the executor answers them with an error
        result instead of this method raising.

        Example:
            >>> ToolCall.from_openai({"id": "c1", "function": {"name": "list_tasks", "arguments": "{}"}})
            ToolCall(call_id='c1', name='list_tasks', arguments='{}')
        """
        function = call.get("function")
        function = function if isinstance(function, Mapping) else {}
        call_id, name = call.get("id"), function.get("name")
        arguments = function.get("arguments", "{}")
        if not isinstance(arguments, str | Mapping):
            arguments = str(arguments)
        return cls(
            call_id if isinstance(call_id, str) else "",
            name if isinstance(name, str) else "",
            arguments,
        )


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What came of one tool call.

    Attributes:
        call_id: the call's id.
        name: the tool the model called (also when an alternative tool produced the content).
        content: the text that goes back to the model as the ``tool`` message.
        success: whether the model got a usable result (an alternative tool's counts).
        error: what went wrong (``"ExceptionType: message"``, a timeout, invalid arguments …), or
            ``None``; set together with ``success`` when an alternative tool stepped in.
        duration_ms: wall time of the whole call, retries and alternative included.
        blob_sha256: the blob holding the full result, when it was too large to send.
        attempts: how many runs it took, retries and an alternative tool included (0: nothing ran,
            the tool is unknown or the arguments invalid).
        strategy_used: the failure strategy applied, if any.
        data: the JSON-able result (``None`` when the call failed).
    """

    call_id: str
    name: str
    content: str
    success: bool
    error: str | None = None
    duration_ms: int = 0
    blob_sha256: str | None = None
    attempts: int = 0
    strategy_used: Fallback | None = None
    data: Any = None

    def to_message(self) -> dict[str, Any]:
        """The OpenAI ``tool`` message answering the call.

        Example:
            >>> ToolResult("c1", "list_tasks", "[]", True).to_message()
            {'role': 'tool', 'tool_call_id': 'c1', 'content': '[]'}
        """
        return {"role": "tool", "tool_call_id": self.call_id, "content": self.content}


def serialize_result(value: Any) -> tuple[str, Any]:
    """The text for the model and the JSON-able data of a tool's return value.

    Strings are returned as they are; anything else becomes compact JSON (non-ASCII kept, NaN and
    infinities as ``null``, unknown objects by ``str``).

    Raises:
        ValueError: the value cannot be serialised (a circular reference).

    Example:
        >>> from datetime import date
        >>> serialize_result({"due": date(2026, 1, 5), "tags": ("a", "b")})
        ('{"due":"2026-01-05","tags":["a","b"]}', {'due': '2026-01-05', 'tags': ['a', 'b']})
        >>> serialize_result("Done.")
        ('Done.', 'Done.')
    """
    if isinstance(value, str):
        return value, value
    data = to_jsonable_python(value, fallback=str, inf_nan_mode="null")
    return to_json(data, inf_nan_mode="null").decode("utf-8"), data
