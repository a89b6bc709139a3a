"""Validating a ``/v1/chat/completions`` body without holding the event loop.

pydantic validates in Rust and keeps the interpreter lock for the whole call: a 100,001-message
conversation took 0.43 s in one ``model_validate``, and every other client's stream stopped for it
(issue 16). A long conversation is validated instead in slices of :data:`SLICE` messages, the
event loop running other work between them (a slice takes ~5 ms). The result is the same
:class:`~tierwise.server.openai_params.ChatCompletionRequest`, and an invalid message is reported
at its index in the whole conversation, as a single validation would report it.
"""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import TypeAdapter, ValidationError
from pydantic_core import ErrorDetails

from tierwise.server.openai_params import ChatCompletionRequest, MessageIn

__all__ = ["SLICE", "MessagesInvalid", "validate_request"]

SLICE = 1_000
"""Messages validated per step of the event loop."""

_MESSAGES: TypeAdapter[list[MessageIn]] = TypeAdapter(list[MessageIn])


class MessagesInvalid(Exception):
    """A slice's :class:`ValidationError`, its message indexes counted in the whole conversation."""

    def __init__(self, exc: ValidationError, offset: int) -> None:
        super().__init__(str(exc))
        self._errors = [
            {**error, "loc": ("messages", int(error["loc"][0]) + offset, *error["loc"][1:])}
            if error["loc"]
            else {**error, "loc": ("messages",)}
            for error in exc.errors(include_url=False)
        ]

    def errors(self, include_url: bool = False) -> list[ErrorDetails]:
        """The errors, as :meth:`ValidationError.errors` gives them."""
        return self._errors  # type: ignore[return-value]


async def validate_request(data: dict[str, Any]) -> ChatCompletionRequest:
    """``ChatCompletionRequest.model_validate(data)``, a long conversation a slice at a time.

    Raises:
        ValidationError: a field, or one of the first :data:`SLICE` messages, is invalid.
        MessagesInvalid: a later message is invalid.
    """
    messages = data.get("messages")
    if not isinstance(messages, list) or len(messages) <= SLICE:
        return ChatCompletionRequest.model_validate(data)
    request = ChatCompletionRequest.model_validate({**data, "messages": messages[:SLICE]})
    checked = list(request.messages)
    for start in range(SLICE, len(messages), SLICE):
        await asyncio.sleep(0)  # let other requests run
        try:
            checked += _MESSAGES.validate_python(messages[start : start + SLICE])
        except ValidationError as exc:
            raise MessagesInvalid(exc, start) from None
    request.messages = checked
    return request
