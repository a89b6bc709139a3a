"""The gateway translates a request only when client and upstream speak different wires (issue 31).

The upstream here is a scripted model that says which wire it speaks (``Provider.wire``): what it is
handed is what a real provider of that wire would encode. The same client request reaches an
upstream of its own wire with every field it sent (``ModelRequest.native``, the carried items on
the messages) and an upstream of another wire without what that one cannot read.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.server.test_anthropic_messages import Service as AnthropicService
from tests.server.test_openai_compat import service, store
from tierwise.errors import InputError
from tierwise.providers.settings import ProviderSettings
from tierwise.providers.testing import ScriptedModel
from tierwise.providers.upstream import upstream_provider
from tierwise.store import Store

__all__ = ["store"]

pytestmark = pytest.mark.anyio

REASONING = {
    "type": "reasoning",
    "id": "rs_1",
    "summary": [{"type": "summary_text", "text": "Thinking about it."}],
    "encrypted_content": "gAAAAB-opaque-blob==",
}
THINKING = {"type": "thinking", "thinking": "Maya said her name.", "signature": "EqQBCkYIARgCIkB+sig=="}


def _speaking(wire: str, *replies: str) -> ScriptedModel:
    model = ScriptedModel(*replies)
    model.wire = wire
    return model


@pytest.mark.parametrize(("wire", "kept"), [("responses", True), ("chat", False), ("anthropic", False)])
async def test_a_responses_client_s_reasoning_reaches_only_a_responses_upstream(
    store: Store, wire: str, kept: bool
) -> None:
    model = _speaking(wire, "Second.")
    svc = service(store, model)
    items: list[Any] = [
        {"role": "user", "content": "One?"},
        REASONING,
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "First."}]},
        {"role": "user", "content": "Two?"},
    ]
    async with svc.client() as client:
        await client.responses.create(
            model="m", input=items, reasoning={"effort": "low"}, include=["reasoning.encrypted_content"]
        )
    (request,) = model.requests
    answer = request.messages[-2]
    assert answer["content"] == "First."
    assert ("response_items" in answer) is kept
    if kept:
        assert answer["response_items"] == [REASONING]  # unchanged, encrypted_content and all
    native = request.native
    assert native is not None and native.wire == "responses"  # the provider decides what it reads
    assert native.fields["reasoning"] == {"effort": "low"}
    assert native.fields["include"] == ["reasoning.encrypted_content"]
    assert "input" not in native.fields and "model" not in native.fields


@pytest.mark.parametrize(("wire", "kept"), [("anthropic", True), ("chat", False), ("responses", False)])
async def test_an_anthropic_client_s_thinking_reaches_only_an_anthropic_upstream(
    store: Store, wire: str, kept: bool
) -> None:
    model = _speaking(wire, "Hello again.")
    svc = AnthropicService(store, model)
    async with svc.client() as client:
        await client.messages.create(
            model="c",
            max_tokens=64,
            messages=[
                {"role": "user", "content": "Hi, I'm Maya."},
                {"role": "assistant", "content": [THINKING, {"type": "text", "text": "Hello Maya."}]},  # type: ignore[list-item]
                {"role": "user", "content": "Again?"},
            ],
            thinking={"type": "enabled", "budget_tokens": 1024},
            extra_body={"top_k": 5},
            metadata={"user_id": "maya"},
            extra_headers={"anthropic-beta": "interleaved-thinking-2025-05-14"},
        )
    (request,) = model.requests
    answer = next(m for m in request.messages if m.get("role") == "assistant")
    assert ("thinking_blocks" in answer) is kept
    if kept:
        assert answer["thinking_blocks"] == [THINKING]  # the signature unchanged
    native = request.native
    assert native is not None and native.wire == "anthropic"
    assert native.fields["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    assert native.fields["top_k"] == 5 and native.fields["metadata"] == {"user_id": "maya"}
    assert native.headers["anthropic-beta"] == "interleaved-thinking-2025-05-14"
    assert "x-api-key" not in native.headers  # the client's key is never passed on


async def test_a_chat_completions_client_has_no_native_request(store: Store) -> None:
    model = _speaking("anthropic", "Hi.")
    svc = service(store, model)
    async with svc.client() as client:
        await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "Hi"}], seed=3)
    (request,) = model.requests
    assert request.native is None and request.params["seed"] == 3  # its fields are the params


def test_the_upstream_api_setting_picks_the_wire_and_names_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = ProviderSettings(base_url="http://127.0.0.1:9/v1", model="m", upstream_api=" ")
    assert settings.upstream_api == "chat" and upstream_provider(settings).wire == "chat"
    monkeypatch.setenv("TIERWISE_UPSTREAM_API", "graphql")
    with pytest.raises(InputError, match=r"TIERWISE_UPSTREAM_API.*chat, responses or anthropic"):
        ProviderSettings.load()


@pytest.mark.parametrize(("wire", "kept"), [("anthropic", True), ("chat", False)])
async def test_a_claude_client_s_cache_breakpoints_reach_only_an_anthropic_upstream(
    store: Store, wire: str, kept: bool
) -> None:
    # Found running Claude Code: its markers reached a Chat Completions upstream, on text parts and
    # on a tool message, where they mark nothing (the pack moved them) and a strict server refuses them.
    model = _speaking(wire, "Done.")
    svc = AnthropicService(store, model)
    mark = {"type": "ephemeral"}
    async with svc.client() as client:
        await client.messages.create(
            model="c",
            max_tokens=64,
            system=[{"type": "text", "text": "Be brief.", "cache_control": mark}],
            messages=[
                {"role": "user", "content": [{"type": "text", "text": "Run ls", "cache_control": mark}]},
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "t1", "name": "sh", "input": {}}],
                },
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": "t1",
                            "content": "a.txt",
                            "cache_control": mark,
                        }
                    ],
                },
            ],
            tools=[{"name": "sh", "input_schema": {"type": "object"}}],
        )
    (request,) = model.requests
    assert ("cache_control" in json.dumps(request.messages)) is kept
    assert [m["role"] for m in request.messages] == ["system", "user", "assistant", "tool"]
