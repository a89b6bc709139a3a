"""``tierwise bench cache --wire``: the same chat replayed through each of tierwise's endpoints.

Each wire's client sends, before every model call ``i`` (:func:`tierwise.bench.cache.model_calls`),
the whole conversation so far — ``messages[:i]`` and the chat's tools — encoded as that wire's
client would (:func:`tierwise.bench.wires.encode`: Chat Completions messages; Responses
``instructions`` and ``input`` items with ``function_call`` / ``function_call_output``; Anthropic
``system``, content blocks, ``tool_use`` / ``tool_result``, ``max_tokens``) to the real endpoint
(``/v1/chat/completions``, ``/v1/responses``, ``/v1/messages``) of :func:`tierwise.server.create_app`
in-process, a fresh SQLite store per wire. The scripted upstream records what it receives — the
pack tierwise sends, in Chat Completions' shape whatever the client's wire — and answers with the
chat's own ``messages[i]`` (text and tool calls), so the next request's history continues the
session. Prefix reuse is measured on what the upstream received, as for the other contenders
(:func:`tierwise.bench.cache.measure`), and each wire is set beside ``chat`` in points.

Every wire gets the same budget: the engine's ``Budget(window, reserve=RESERVE)`` and every request
asks ``RESERVE`` answer tokens (``max_tokens`` / ``max_output_tokens``), so the prompt budget is
``window - RESERVE`` on each.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tierwise.bench.cache import Chat, ContenderResult, measure, model_calls
from tierwise.bench.wires import PATHS, WIRES, encode
from tierwise.budget import Budget
from tierwise.tokens import TokenCounter

__all__ = ["RESERVE", "WireReplay", "replay_wire", "wire_rows", "wire_summary"]

RESERVE = 256
"""Answer tokens every wire's request asks for (and the engine's reserve): the same budget on each."""

Message = dict[str, Any]


@dataclass
class WireReplay:
    """One wire's replay of one chat: the requests the upstream received, the calls that failed."""

    wire: str
    packs: list[tuple[int, list[Message], list[Message]]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    chats: int = 0  # the chats the endpoint made (1 when every request continued the session)


def _answer(message: Mapping[str, Any] | None) -> Any:
    """The chat's assistant message as the scripted upstream's answer (a short one past the end)."""
    from tierwise.providers.base import ModelResponse, ToolCall

    if message is None:
        return ModelResponse(text="Noted.", finish_reason="stop")
    calls = [
        ToolCall(str(c["id"]), str(c["function"]["name"]), str(c["function"].get("arguments") or "{}"))
        for c in message.get("tool_calls") or ()
    ]
    text = message.get("content")
    return ModelResponse(text=text if isinstance(text, str) else "", tool_calls=calls, finish_reason="stop")


def replay_wire(chat: Chat, window: int, counter: TokenCounter, wire: str) -> WireReplay:
    """Replay ``chat`` through ``wire``'s endpoint under a ``window``-token budget."""
    with tempfile.TemporaryDirectory(prefix="tierwise-cache-wire-") as tmp:
        return asyncio.run(_replay(chat, window, counter, wire, Path(tmp)))


async def _replay(chat: Chat, window: int, counter: TokenCounter, wire: str, workdir: Path) -> WireReplay:
    import httpx

    from tierwise.chat.engine import ChatEngine
    from tierwise.providers.base import ModelRequest
    from tierwise.providers.testing import FunctionModel
    from tierwise.server import create_app
    from tierwise.store import Store

    messages = chat.messages
    step = [0]
    received: dict[int, ModelRequest] = {}

    def upstream(request: ModelRequest) -> Any:
        received.setdefault(step[0], request)  # the first request of the call: the pack
        return _answer(messages[step[0]] if step[0] < len(messages) else None)

    out = WireReplay(wire)
    store = Store.open(f"sqlite:///{workdir / 'wire.db'}")
    try:
        provider = FunctionModel(upstream, model="bench", counter=counter)
        engine = ChatEngine(store, provider, budget=Budget(window=window, reserve=RESERVE))
        app = create_app(store, engine, shared=False)
        user = app.state.user_of(None)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://bench", timeout=600) as http:
            for i in model_calls(chat):
                step[0] = i
                body = encode(wire, messages[:i], chat.tools, max_tokens=RESERVE)
                response = await http.post(PATHS[wire], json=body)
                if response.status_code != 200 or i not in received:
                    out.errors.append(f"call {i}: {response.status_code} {response.text[:300]}")
                    continue
                sent = received[i]
                out.packs.append((i, [dict(m) for m in sent.messages], [dict(t) for t in sent.tools or ()]))
        sessions = getattr(app.state, "openai_sessions", None)
        if sessions is not None:
            await sessions.drain()
        out.chats = sum(len(store.list_chats(user, context_type=k)) for k in ("api", "api-superseded"))
        return out
    finally:
        store.close()


def wire_rows(
    chat: Chat, budget_label: str, window: int, counter: TokenCounter, wires: Sequence[str]
) -> list[dict[str, Any]]:
    """One row per wire (``chat`` always, as the reference): prefix reuse and its difference in points.

    Raises:
        RuntimeError: a wire's endpoint refused a call (its status and message), so its reuse would
            be measured on other calls than the reference's.
    """
    rows: list[dict[str, Any]] = []
    reference: ContenderResult | None = None
    for wire in (w for w in WIRES if w == "chat" or w in wires):
        replayed = replay_wire(chat, window, counter, wire)
        if replayed.errors:
            raise RuntimeError(
                f"{PATHS[wire]} refused {len(replayed.errors)} of {len(model_calls(chat))} calls on "
                f"{chat.name}; first: {replayed.errors[0]}"
            )
        result = measure(iter(replayed.packs), counter)
        reference = reference or result
        reuse = result.shared / result.sent if result.sent else 0.0
        ref = reference.shared / reference.sent if reference.sent else 0.0
        row = {"chat": chat.name, "budget": budget_label, "window": window, "wire": wire}
        row.update(result.to_dict())
        row["endpoint_chats"] = replayed.chats
        row["vs_chat_points"] = round((reuse - ref) * 100, 2)
        rows.append(row)
    return rows


def wire_summary(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Prefix reuse per chat group, budget and wire (means over chats), and each wire's points vs chat."""
    groups: dict[tuple[str, str, str], list[Mapping[str, Any]]] = {}
    for row in rows:
        group = "productivity" if str(row["chat"]).startswith("productivity") else "locomo"
        groups.setdefault((group, row["budget"], row["wire"]), []).append(row)
    out = []
    for (group, budget, wire), items in groups.items():
        reuse = sum(r["prefix_reuse"] for r in items) / len(items)
        points = sum(r["vs_chat_points"] for r in items) / len(items)
        out.append(
            {
                "chats": group,
                "budget": budget,
                "wire": wire,
                "n": len(items),
                "prefix_reuse": round(reuse, 4),
                "vs_chat_points": round(points, 2),
                "tokens_sent": sum(r["tokens_sent"] for r in items),
                "endpoint_chats": max(r["endpoint_chats"] for r in items),
            }
        )
    return out


def wire_markdown(summary: Sequence[Mapping[str, Any]]) -> str:
    """The per-wire summary as a markdown table."""
    lines = [
        "| chats | budget | wire | prefix reuse | vs chat (points) | tokens sent | chats made |",
        "|---|---:|---|---:|---:|---:|---:|",
    ]
    for s in summary:
        lines.append(
            f"| {s['chats']} ({s['n']}) | {s['budget']} | {PATHS[s['wire']]} | {s['prefix_reuse']:.1%} | "
            f"{s['vs_chat_points']:+.2f} | {s['tokens_sent']:,} | {s['endpoint_chats']} |"
        )
    return "\n".join(lines) + "\n"
