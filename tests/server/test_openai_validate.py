"""A long /v1 conversation is validated in slices, with the same result and errors as in one go."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import ValidationError

from tierwise.server.openai_errors import validation_error
from tierwise.server.openai_params import ChatCompletionRequest
from tierwise.server.openai_validate import SLICE, MessagesInvalid, validate_request


def _body(n: int) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"note {i}"} for i in range(n)
    ]
    return {"model": "any", "messages": messages, "temperature": 0.5}


def test_a_long_conversation_validates_to_the_same_request() -> None:
    body = _body(3 * SLICE + 7)
    assert asyncio.run(validate_request(body)) == ChatCompletionRequest.model_validate(body)


def test_other_work_runs_between_slices() -> None:
    async def both() -> int:
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0)

        task = asyncio.create_task(ticker())
        await asyncio.sleep(0)
        start = ticks
        await validate_request(_body(5 * SLICE))
        task.cancel()
        return ticks - start

    assert asyncio.run(both()) >= 4  # before: one model_validate, the loop held throughout


@pytest.mark.parametrize("index", [3, SLICE + 1, 2 * SLICE + 500])
def test_an_invalid_message_is_named_at_its_index_in_the_whole_conversation(index: int) -> None:
    body = _body(3 * SLICE)
    body["messages"][index] = {"role": "narrator", "content": "x"}
    with pytest.raises((ValidationError, MessagesInvalid)) as caught:
        asyncio.run(validate_request(body))
    with pytest.raises(ValidationError) as whole:
        ChatCompletionRequest.model_validate(body)
    assert caught.value.errors(include_url=False) == whole.value.errors(include_url=False)
    response = validation_error(caught.value)
    assert response.status_code == 400
    assert f"messages.{index}.role".encode() in bytes(response.body)
