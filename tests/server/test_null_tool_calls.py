"""``/v1/chat/completions`` with an assistant message's ``"tool_calls": null`` (schemathesis, issue 32).

The schema admits it (OpenAI sends it back so in some SDK versions); packing the history took
``len(None)`` and answered 500.
"""

from __future__ import annotations

import asyncio

import httpx

from tierwise.budget import Budget
from tierwise.chat.engine import ChatEngine
from tierwise.providers.testing import ScriptedModel
from tierwise.server import create_app
from tierwise.store import Store


def test_an_assistant_message_with_null_tool_calls_is_answered() -> None:
    store = Store.open("sqlite://")
    engine = ChatEngine(store, ScriptedModel("Noted."), budget=Budget(window=8_000, reserve=500))
    app = create_app(store, engine)
    body = {
        "messages": [
            {"role": "user", "content": "Hello"},
            {"role": "assistant", "content": "Hi.", "tool_calls": None},
            {"role": "user", "content": "Plan my week."},
        ]
    }

    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
            return await c.post("/v1/chat/completions", json=body)

    try:
        answer = asyncio.run(go())
    finally:
        store.close()
    assert answer.status_code == 200, answer.text
    assert answer.json()["choices"][0]["message"]["content"] == "Noted."
