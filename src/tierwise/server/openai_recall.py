"""tierwise's retrieval tools on ``/v1``: offered once a pack points at what it left out, answered here.

Once a long conversation compacts, its pack carries pointers the model is meant to follow: the
headers of earlier segments (``S1 …``: ``recall_segments`` brings one back) and compressed tool
results (``… blob sha256:… (open with open_blob)]``, or a step result cut to fit that says
``open_blob(sha256="…") reads all of it``). An OpenAI client never offered those tools, so
tierwise adds them and answers the model's calls to them itself; the client sees neither.

- **When they are added** (:meth:`Retrieval.pack`): once the session's memory has a past
  (``live_from > 0``: a compaction step archived turns), its pack's text holds a blob pointer, or
  its pack cut the step being answered (``memory.pointed``: built without ``open_blob``, the cut's
  pointer names no hash, so the cut itself must count) — and from then on for that session's
  memory (decision 54's rule: the tool list, the front of every prompt, changes once per session,
  so the prompt cache keeps it; the guide joins the system text at the same request). A request
  that first gets a past while packed (a compaction step in its own pack) is packed again with the
  tools, so its pointers are never sent without them.
- **The definitions** are the chat engine's (``housekeeping.memory_tools()``, compacted), appended
  after the client's tools; the guide (``RETRIEVAL_GUIDE``, as ``housekeeping.guided`` gives it) is
  a system message of its own right after the client's system messages, which stay first byte for
  byte (decision 9: the client's are never rewritten). A client tool named ``recall_segments`` or
  ``open_blob`` is the client's: ours is not added under that name (its calls are the client's to
  answer), and the guide, which names both, is left out.
- **Never a tool nobody answers** (:func:`not_offered`): nothing is added when ``tool_choice`` is
  ``"none"`` (no tool may be called), ``"required"`` or a named tool (the client wants a call of
  *its* tools; ours would satisfy ``required`` vacuously and a named choice forbids them), ``n``
  > 1 (which choice's calls would be run and asked again?), legacy ``functions`` /
  ``function_call``, ``prediction`` (predicted outputs take no tools), or audio output (``audio``,
  ``modalities``: a second round would be a second clip).
- **Rounds** (:meth:`Retrieval.answer`): an answer that calls only tierwise's tools is answered —
  the tools run against the session's memory and store, under the session's lock, through a
  :class:`~tierwise.tools.ToolExecutor` (the tools' own validation and error texts: a bad hash gets
  ``error: …`` back, never a 500) — and the upstream is asked again with the assistant message and
  the results appended (each result cut, head and tail, to what the budget leaves). At most
  :data:`MAX_ROUNDS` requests: the last is sent with ``tool_choice: "none"`` when the client has no
  tools of its own (the tool list stays, and with it the cached prefix), else with only the client's
  tools; retrieval calls made anyway then are dropped, not run.
- **Mixed calls**: an answer that calls the client's tools *and* ours (a call of another type, such
  as ``custom``, is the client's) goes to the client with the client's calls only, ours dropped
  unrun. Parallel calls are independent by contract: the client's calls were made without the
  blob's text and stand as made, the client's tools start at once (no extra round before them), and
  the model can ask for the blob again at the next request, where its pointer still is.
- **What the client sees** is one answer: text deltas as they come (a blank line between rounds'
  texts), the client's tool calls re-indexed from 0, never a retrieval call or result; one
  ``finish_reason`` (``"stop"`` when only dropped retrieval calls were left), usage summed over the
  rounds (a round without reported usage counted). Nothing of the rounds is stored as a message —
  the store mirrors what the client holds; the turn's audit entry counts the upstream requests
  (``steps``) and lists the retrieval calls (``retrieval``: name, ok, ms). They are not in
  ``chat_tool_calls``: a row there belongs to a stored assistant message, and this one is not.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

import anyio

from tierwise.chat.housekeeping import RETRIEVAL_GUIDE, RETRIEVAL_TOOL_NAMES, guided, memory_tools
from tierwise.memory.assemble import pack_text
from tierwise.memory.outputs import head_tail
from tierwise.providers.base import (
    Done,
    Event,
    ModelRequest,
    ModelResponse,
    Provider,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
    aclose,
    collect,
)
from tierwise.tools.definition import ToolContext
from tierwise.tools.executor import ToolExecutor
from tierwise.tools.registry import ToolRegistry
from tierwise.tools.results import ToolResult

if TYPE_CHECKING:
    import threading

    from tierwise.budget import Budget
    from tierwise.memory.engine import Memory
    from tierwise.memory.persist import ChatMemory
    from tierwise.packing.report import Pack
    from tierwise.server.openai_params import ChatCompletionRequest
    from tierwise.server.openai_sessions import Packed
    from tierwise.tokens import TokenCounter

__all__ = ["MAX_ROUNDS", "Retrieval", "not_offered"]

MAX_ROUNDS = 4
"""Upstream requests for one client request at most: up to three rounds of retrieval, then an answer."""

_TOOLS = tuple(t for t in memory_tools() if t.name in RETRIEVAL_TOOL_NAMES)  # the engine's, compacted
_POINTER = re.compile(
    r"blob sha256:[0-9a-f]{64} \(open with open_blob\)\]|open_blob\(sha256=\"[0-9a-f]{64}\"\)"
)
_OFFERED: WeakKeyDictionary[Memory, bool] = WeakKeyDictionary()  # once offered, offered for good
_NO_ROOM = "error: no room is left in the context for this result; answer from what the conversation shows"
_MIN_SHARE = 48  # tokens: a cut result smaller than this says only that there was no room


def not_offered(body: ChatCompletionRequest, data: Mapping[str, Any]) -> str | None:
    """The request field that keeps tierwise's tools out of this request, or ``None``.

    Example:
        >>> from tierwise.server.openai_params import ChatCompletionRequest
        >>> body = {"messages": [{"role": "user", "content": "hi"}], "n": 2}
        >>> not_offered(ChatCompletionRequest.model_validate(body), body)
        'n'
    """
    if body.tool_choice is not None and body.tool_choice != "auto":
        return "tool_choice"  # "none": no tool may be called; "required", a name: the client's tools
    if (body.n or 1) > 1:
        return "n"
    for key in ("functions", "function_call", "prediction", "audio"):
        if data.get(key) is not None:
            return key
    modalities = data.get("modalities")
    if isinstance(modalities, list) and "audio" in modalities:
        return "modalities"
    return None


def _name(definition: Mapping[str, Any]) -> Any:
    """A tool's name: its function's, or (a tool of another type) its type's object's."""
    inner = definition.get("function", definition.get(str(definition.get("type"))))
    return inner.get("name") if isinstance(inner, Mapping) else None


def _other_calls(response: ModelResponse) -> bool:
    """Whether the answer calls tools of another type (``custom``): the client's, relayed as sent."""
    return any(e.index == 0 and e.delta.get("tool_calls") for e in response.extras)


class Retrieval:
    """One request's retrieval tools: which of them it may get, and whether its pack got them.

    Args:
        client_tools: the client's tool definitions (ours are never added under one of their names).
    """

    def __init__(self, client_tools: Sequence[Mapping[str, Any]]) -> None:
        taken = {_name(t) for t in client_tools}
        # A client's tool named recall_segments or open_blob is the client's: the model's calls to it
        # go to the client, and ours is not added under that name (a second tool of the same name
        # is refused by OpenAI, and the model could not tell them apart).
        self.registry = ToolRegistry([t for t in _TOOLS if t.name not in taken])
        self.names = frozenset(self.registry.names())
        self.definitions = self.registry.definitions()
        # The guide names both tools: with one of them the client's, it would point at the wrong one.
        self.guide = RETRIEVAL_GUIDE if len(self.names) == len(_TOOLS) else None
        self.client_tools = [dict(t) for t in client_tools]
        self.offered = False  # the pack carries them (set by pack())
        self.system: list[dict[str, Any]] | None = None  # the system messages sent, guide included

    @classmethod
    def of(
        cls, body: ChatCompletionRequest, data: Mapping[str, Any], client_tools: Sequence[Mapping[str, Any]]
    ) -> Retrieval | None:
        """The request's retrieval tools, or ``None`` if none may be added (:func:`not_offered`)."""
        if not_offered(body, data) is not None:
            return None
        retrieval = cls(client_tools)
        return retrieval if retrieval.names else None

    # -- packing -----------------------------------------------------------------------------------

    def pack(
        self,
        chat: ChatMemory,
        build: Callable[..., Pack],
        system: Sequence[Mapping[str, Any]] | None,
        tools: list[dict[str, Any]],
    ) -> Pack:
        """``build(system=…, tools=…)``, with the retrieval tools and guide once the session has a past.

        Called under the session's lock. A pack that finds the past while being built (its own
        compaction step, a cut step's pointer) is built again with them: a few milliseconds, once
        per session.
        """
        memory = chat.memory
        if not (_OFFERED.get(memory) or memory.live_from > 0):
            pack = build(system=system, tools=tools)
            if not (memory.live_from > 0 or memory.pointed or _POINTER.search(pack_text(pack))):
                return pack
        _OFFERED[memory] = True
        self.offered = True
        self.system = self._guided(system)
        return build(system=self.system, tools=[*tools, *self.definitions])

    def _guided(self, system: Sequence[Mapping[str, Any]] | None) -> list[dict[str, Any]] | None:
        """The client's system messages as sent (byte for byte: decision 9), then the guide's own."""
        messages = [dict(m) for m in system or ()]
        text = guided("", self.definitions, self.guide)  # (the guide, as the chat engine joins it)
        return [*messages, {"role": "system", "content": text}] if text else (messages or None)

    # -- answering ---------------------------------------------------------------------------------

    async def answer(
        self, provider: Provider, first: ModelRequest, packed: Packed, budget: Budget
    ) -> AsyncIterator[Event]:
        """The upstream's answer to ``first`` as one stream, tierwise's tool calls answered and withheld.

        Events are relayed as they come, except retrieval calls (and their deltas), each round's
        usage and its ``Done``: one summed :class:`Usage` and one ``Done`` end the stream.
        """
        prepared = packed.handle
        chat = prepared.memory
        counter = chat.memory.counter
        executor = ToolExecutor(
            self.registry, memory=chat.memory, user_id=chat.user_id, chat_id=chat.chat_id, counter=counter
        )
        context = ToolContext(user_id=chat.user_id, chat_id=chat.chat_id, memory=chat.memory)
        chat.memory.begin_turn()  # the full-text quota of recall_segments is per client request
        request, used = first, packed.tokens
        usages: list[Usage] = []
        relay = _Relay(self.names)
        for step in range(1, MAX_ROUNDS + 1):
            if step == MAX_ROUNDS:
                request = self._last(request)
            relay.begin()
            events: list[Event] = []
            stream = provider.stream(request)
            try:
                async for event in stream:
                    events.append(event)
                    for out in relay.relay(event):
                        yield out
            finally:
                await aclose(stream)
            for out in relay.end():
                yield out
            response = await collect(_replay(events))
            usages.append(response.usage or _counted(counter, request, response))
            ours = [c for c in response.tool_calls if c.name in self.names]
            theirs = len(ours) < len(response.tool_calls) or _other_calls(response)
            if not ours or theirs or step == MAX_ROUNDS:
                prepared.steps = step
                if step > 1:
                    yield sum(usages[1:], usages[0])
                elif response.usage is not None:
                    yield response.usage
                finish = response.finish_reason
                if ours and not theirs:  # retrieval calls left unanswered: nothing for the client to run
                    finish = "stop"
                yield Done(finish, response.model, response.fields)
                return
            calls = [call.to_openai() for call in ours]
            message: dict[str, Any] = {
                "role": "assistant",
                "content": response.text or None,
                "tool_calls": calls,
            }
            used += counter.count_message(message)
            results = await self._run(executor, ours, context, prepared.lock)
            prepared.retrieval += [
                {"name": r.name, "ok": r.success and not r.content.startswith("error:"), "ms": r.duration_ms}
                for r in results
            ]
            replies = _fitted(results, counter, budget.available - used)
            used += sum(counter.count_message(r) for r in replies)
            request = replace(request, messages=[*request.messages, message, *replies])

    def _last(self, request: ModelRequest) -> ModelRequest:
        """The last round: tierwise's tools forbidden (``"none"``), or left out beside the client's."""
        if not self.client_tools:  # the same tools (the cached prefix stays), no call allowed
            return replace(request, tool_choice="none")
        return replace(request, tools=[t for t in request.tools if _name(t) not in self.names])

    @staticmethod
    async def _run(
        executor: ToolExecutor, calls: Sequence[ToolCall], context: ToolContext, lock: threading.Lock
    ) -> list[ToolResult]:
        """Run the calls under the session's lock (memory upkeep may be running in a worker thread).

        The lock is waited for in a worker thread, so the event loop never blocks on it.
        """
        held: list[bool] = []

        def take() -> None:
            lock.acquire()
            held.append(True)

        if lock.acquire(blocking=False):
            held.append(True)
        try:
            if not held:
                await anyio.to_thread.run_sync(take)
            pairs = [(c.id, c.name, c.arguments) for c in calls]
            return [await executor.execute(i, n, a, context=context) for i, n, a in pairs]
        finally:
            if held:
                lock.release()


class _Relay:
    """What of a round's events the client gets: text as it comes, the client's calls re-indexed."""

    def __init__(self, ours: frozenset[str]) -> None:
        self.ours = ours
        self.texted = ""  # the end of the text relayed so far (for the blank line between rounds)
        self.begin()

    def begin(self) -> None:
        """A new round."""
        self.names: dict[int, str] = {}
        self.index: dict[int, int] = {}  # the upstream's call index → the client's
        self.waiting: dict[int, list[ToolCallDelta]] = {}  # pieces of a call whose name is not known yet
        self.round_text = False

    def relay(self, event: Event) -> list[Event]:
        """What the client gets of ``event`` now."""
        if isinstance(event, TextDelta):
            out: list[Event] = []
            if event.text and not self.round_text:
                self.round_text = True
                if self.texted and not self.texted[-1].isspace():  # a new round's text: a new paragraph
                    out.append(TextDelta("\n\n"))
            if event.text:
                self.texted = event.text
            return [*out, event]
        if isinstance(event, ToolCallDelta):
            if event.name:
                self.names.setdefault(event.index, event.name)
            name = self.names.get(event.index)
            if name is None:
                self.waiting.setdefault(event.index, []).append(event)
                return []
            pieces = [*self.waiting.pop(event.index, []), event]
            return [] if name in self.ours else [self._theirs(p) for p in pieces]
        if isinstance(event, ToolCall):
            return [] if event.name in self.ours else [event]
        if isinstance(event, Usage | Done):
            return []  # one summed usage and one Done end the answer
        return [event]  # ChoiceDelta (logprobs, a refusal), Retry and Fallback notices

    def end(self) -> list[Event]:
        """Pieces of calls that never got a name: the client's (as the upstream sent them)."""
        waiting, self.waiting = self.waiting, {}
        return [self._theirs(p) for index in sorted(waiting) for p in waiting[index]]

    def _theirs(self, piece: ToolCallDelta) -> ToolCallDelta:
        index = self.index.setdefault(piece.index, len(self.index))
        return piece if index == piece.index else replace(piece, index=index)


async def _replay(events: Sequence[Event]) -> AsyncIterator[Event]:
    for event in events:
        yield event


def _counted(counter: TokenCounter, request: ModelRequest, response: ModelResponse) -> Usage:
    """A round's usage when the upstream reported none: its prompt and answer counted."""
    prompt = counter.count_messages(request.messages) + counter.count_tools(request.tools)
    completion = counter.count(response.text) + sum(
        counter.count(c.name) + counter.count(c.arguments) for c in response.tool_calls
    )
    return Usage(prompt, completion, prompt + completion)


def _fitted(results: Sequence[ToolResult], counter: TokenCounter, room: int) -> list[dict[str, Any]]:
    """The results as tool messages, each cut (head and tail) to its share of ``room`` tokens."""
    messages = [{"role": "tool", "tool_call_id": r.call_id, "content": r.content} for r in results]
    share = max(0, room) // max(1, len(messages)) - 8  # (a tool message's framing)
    for message in messages:
        if counter.count_message(message) <= share:
            continue
        text = message["content"]
        if share < _MIN_SHARE:
            message["content"] = _NO_ROOM
            continue
        total = counter.count(text)
        pointer = (
            f"[… the middle left out to fit the context ({total:,} tokens in all); "
            "ask for less: open_blob's start and end, fewer segments or form='summary']"
        )
        message["content"] = head_tail(text, counter, share, pointer)
    return messages
