"""A model behind OpenAI's Responses API (``POST /responses``), streamed through the official SDK.

:class:`ResponsesProvider` encodes a :class:`~tierwise.providers.base.ModelRequest` (chat-format
messages, as tierwise stores a conversation) into a Responses body, and decodes the event stream
into :mod:`tierwise.providers.base` events. The request, inverse of
:mod:`tierwise.server.responses_input`:

- the leading system messages → ``instructions`` (joined by a blank line). That is where a
  Responses client puts its system prompt (the gateway decodes it into the leading system
  message), so its request goes upstream as it came; a later system message stays an input message
  where it was. ``developer`` messages stay ``message`` items, leading or not: that is where a
  Responses client such as Codex puts its own (its several developer items are not merged into
  ``instructions`` it never sent);
- user, developer (and later system) messages → ``message`` items (text → ``input_text``, ``image_url`` →
  ``input_image``, ``file`` → ``input_file``; other parts as sent);
- an assistant message → the items it carries (``response_items``: ``reasoning`` with its
  ``encrypted_content``…) first, as they are, then a ``message`` item of its text
  (``output_text``, a ``refusal``), then a ``function_call`` per call (``custom_tool_call`` for a
  ``custom`` one; a call of another type as sent);
- ``tool`` messages → ``function_call_output`` (``custom_tool_call_output`` for a custom call);
- tools: the chat-shaped ``function`` / ``custom`` tools flattened; when the client spoke the
  Responses API too (:attr:`ModelRequest.native`), its hosted and namespace tools (``web_search``…)
  with them, all in the client's order (tools only the pack has after);
  ``tool_choice`` translated (a Responses client's own when it names a hosted tool);
- the other fields: the client's as sent when it spoke the Responses API, else ``params``
  renamed (``max_completion_tokens`` → ``max_output_tokens``, ``response_format`` →
  ``text.format``, ``reasoning_effort`` → ``reasoning.effort``, ``verbosity`` → ``text.verbosity``),
  the ones the Responses API has under the same name as they are, the rest (``n``, ``stop``,
  ``seed``, ``logprobs``…) left out.

``store``: the client's when it sent one; otherwise ``False`` for a request that did not come on
the Responses wire. tierwise keeps the conversation and sends the whole of it each time, so the
upstream keeping a copy serves nothing (and would keep, under the upstream's retention rules, what
the client never asked it to). Without storage the upstream can only read back a reasoning item
that carries its ``encrypted_content``: with ``reasoning_effort`` set it is asked for
(``include``), and a reasoning item without it is left out when ``store`` is off (the upstream
would refuse the request: it cannot find the item by id).

The answer: text deltas, function calls by their own index (id and name first, then argument
fragments) and whole at the end, a ``custom_tool_call`` as a ``custom`` call
(:class:`~tierwise.providers.base.ChoiceDelta` ``tool_calls``, as the OpenAI-compatible provider
relays one), every other output item (``reasoning``, a hosted tool's call…) whole as
``ChoiceDelta(0, {"response_items": [item]})`` so it is stored on the answer and sent back next
turn, unchanged; the usage in Chat Completions' names (``input_tokens_details`` →
``prompt_tokens_details``, ``output_tokens_details`` → ``completion_tokens_details``: what the
gateway relays to either kind of client); ``Done`` with ``finish_reason`` ``tool_calls``,
``stop``, ``length`` (incomplete: ``max_output_tokens``) or ``content_filter``. ``response.failed``
and ``error`` events, and a stream that ends without ``response.completed``, are
each a :class:`~tierwise.providers.errors.ProviderError`; retries and fallbacks are
:class:`~tierwise.providers.http.HTTPProvider`'s.

Example:
    >>> provider = ResponsesProvider(base_url="http://127.0.0.1:9/v1", model="gpt-5-mini")
    >>> body = provider.body(ModelRequest([{"role": "system", "content": "Be brief."},
    ...     {"role": "user", "content": "Hi"}]), "gpt-5-mini")
    >>> body["instructions"], body["input"], body["store"]
    ('Be brief.', [{'type': 'message', 'role': 'user', 'content': 'Hi'}], False)
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import openai

from tierwise.providers.base import (
    ChoiceDelta,
    Done,
    Event,
    ModelRequest,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
)
from tierwise.providers.errors import ProviderError
from tierwise.providers.http import HTTPProvider, sse_events
from tierwise.providers.openai_compat import provider_error
from tierwise.providers.settings import ProviderSettings

__all__ = ["ResponsesProvider", "responses_input", "responses_tool", "responses_tool_choice"]

log = logging.getLogger(__name__)

_CARRIED = "response_items"  # the assistant message's field of the items chat format has no place for
# (tierwise.server.responses_input.CARRIED: the server is above the providers, not imported here)

_NO_KEY = "not-needed"
_CALL_TOOLS = frozenset({"function", "custom"})  # the tools a chat-format conversation calls

# Chat Completions' request fields the Responses API has under the same name.
_SAME = frozenset(
    {
        "top_p",
        "parallel_tool_calls",
        "metadata",
        "prompt_cache_key",
        "safety_identifier",
        "user",
        "service_tier",
        "store",
        "prompt_cache_retention",
        "truncation",
        "include",
        "background",
    }
)
_OWN = frozenset(
    {"model", "messages", "input", "instructions", "stream", "stream_options", "tools", "tool_choice"}
)


# A Responses client's fields that are not sent as they came: the tools are the pack's, the rest rebuilt.
_NOT_NATIVE = frozenset(
    {"tools", "tool_choice", "model", "input", "instructions", "stream", "previous_response_id"}
)


# -- the request -------------------------------------------------------------------------------


def _text_of(content: Any) -> str | None:
    """A message's content as one text, or ``None`` when it holds parts other than text."""
    if content is None or isinstance(content, str):
        return content or ""
    if isinstance(content, list) and all(isinstance(p, Mapping) and p.get("type") == "text" for p in content):
        return "".join(str(p.get("text", "")) for p in content)
    return None


def _input_part(part: Any) -> Any:
    """A chat content part as a Responses input part; one it has no equivalent for, as sent."""
    if not isinstance(part, Mapping):
        return part
    kind = part.get("type")
    if kind in ("text", "input_text"):
        return {"type": "input_text", "text": part.get("text", "")}
    if kind == "image_url":
        image = part.get("image_url")
        image = image if isinstance(image, Mapping) else {"url": image}
        return {"type": "input_image", "image_url": image.get("url"), "detail": image.get("detail") or "auto"}
    if kind == "file":
        inner = part.get("file")
        return {"type": "input_file", **(dict(inner) if isinstance(inner, Mapping) else {})}
    return dict(part)


def _input_content(content: Any) -> Any:
    if isinstance(content, list):
        return [_input_part(p) for p in content]
    return content if content is not None else ""


def _assistant_items(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The assistant message's carried items, then its text as a ``message`` item, then its calls."""
    items: list[dict[str, Any]] = [dict(i) for i in message.get(_CARRIED) or () if isinstance(i, Mapping)]
    content = message.get("content")
    parts: list[dict[str, Any]] = []
    if isinstance(content, str) and content:
        parts.append({"type": "output_text", "text": content, "annotations": []})
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, Mapping) and part.get("type") in ("text", "output_text"):
                parts.append({"type": "output_text", "text": part.get("text", ""), "annotations": []})
            elif isinstance(part, Mapping) and part.get("type") == "refusal":
                parts.append(dict(part))
            else:
                parts.append(_input_part(part))
    if message.get("refusal"):
        parts.append({"type": "refusal", "refusal": message["refusal"]})
    if parts:
        items.append({"type": "message", "role": "assistant", "content": parts})
    for call in message.get("tool_calls") or ():
        items.append(_call_item(call))
    return items


def _call_item(call: Any) -> dict[str, Any]:
    if not isinstance(call, Mapping):
        return call  # type: ignore[no-any-return]
    kind = call.get("type", "function")
    if kind == "function" or "function" in call:
        function = call.get("function") or {}
        arguments = function.get("arguments")
        return {
            "type": "function_call",
            "call_id": call.get("id"),
            "name": function.get("name"),
            "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments or {}),
        }
    if kind == "custom":
        custom = call.get("custom") or {}
        return {
            "type": "custom_tool_call",
            "call_id": call.get("id"),
            "name": custom.get("name"),
            "input": custom.get("input", ""),
        }
    return dict(call)


def _output(content: Any) -> Any:
    """A tool result's content: a text as it is, parts as Responses input parts."""
    if isinstance(content, list):
        return [_input_part(p) for p in content]
    return content if content is not None else ""


def responses_input(
    messages: Sequence[Mapping[str, Any]], *, stored: bool = True
) -> tuple[str | None, list[dict[str, Any]]]:
    """Chat-format ``messages`` as the Responses API's ``instructions`` and ``input`` items.

    ``stored``: whether the upstream keeps responses (``store``); when it does not, a ``reasoning``
    item without ``encrypted_content`` is left out (the upstream could not find it by its id).

    Example:
        >>> call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        >>> _, items = responses_input([{"role": "user", "content": "Hi"},
        ...     {"role": "assistant", "content": None, "tool_calls": [call]},
        ...     {"role": "tool", "tool_call_id": "c1", "content": "ok"}])
        >>> [item["type"] for item in items]
        ['message', 'function_call', 'function_call_output']
    """
    lead: list[str] = []
    start = 0
    for message in messages:
        text = _text_of(message.get("content"))
        if message.get("role") != "system" or text is None:
            break
        lead.append(text)
        start += 1
    items: list[dict[str, Any]] = []
    custom: set[Any] = set()  # the ids of custom calls: their results are custom outputs
    for message in messages[start:]:
        role = message.get("role")
        if role == "assistant":
            for item in _assistant_items(message):
                if item.get("type") == "custom_tool_call":
                    custom.add(item.get("call_id"))
                if not stored and item.get("type") == "reasoning" and not item.get("encrypted_content"):
                    log.debug(
                        "reasoning item %s left out: no encrypted_content and store off", item.get("id")
                    )
                    continue
                items.append(item)
        elif role == "tool":
            call_id = message.get("tool_call_id")
            kind = "custom_tool_call_output" if call_id in custom else "function_call_output"
            items.append({"type": kind, "call_id": call_id, "output": _output(message.get("content"))})
        else:
            items.append({"type": "message", "role": role, "content": _input_content(message.get("content"))})
    instructions = "\n\n".join(t for t in lead if t) or None
    return instructions, items


def _in_client_order(packed: list[Any], given: Sequence[Any]) -> list[Any]:
    """The pack's tools with a Responses client's others, in the order the client ``given`` them.

    The client's ``function`` / ``custom`` tools are the pack's (what tierwise offers this call: one
    it withheld is not sent); its other tools (hosted, ``namespace``) as it sent them; tools only
    the pack has (tierwise's own) after.
    """
    by_name = {t.get("name"): t for t in packed if isinstance(t, Mapping) and t.get("type") in _CALL_TOOLS}
    ordered: list[Any] = []
    for tool in given:
        if not isinstance(tool, Mapping):
            continue
        if tool.get("type") not in _CALL_TOOLS:
            ordered.append(dict(tool))
        elif (mine := by_name.pop(tool.get("name"), None)) is not None:
            ordered.append(mine)
    placed = {id(t) for t in ordered}
    return ordered + [t for t in packed if id(t) not in placed]


def responses_tool(tool: Any) -> Any:
    """A chat-shaped tool in the Responses API's flat shape (``function``, ``custom``); another as sent."""
    if not isinstance(tool, Mapping):
        return tool
    kind = tool.get("type")
    if kind in _CALL_TOOLS and isinstance(tool.get(kind), Mapping):
        return {"type": kind, **tool[kind]}
    return dict(tool)


def responses_tool_choice(choice: Any) -> Any:
    """A Chat Completions ``tool_choice`` in the Responses API's shape; one already flat, as sent."""
    if not isinstance(choice, Mapping):
        return choice
    kind = choice.get("type")
    if kind in _CALL_TOOLS and isinstance(choice.get(kind), Mapping):
        return {"type": kind, "name": choice[kind].get("name")}
    if kind == "allowed_tools" and isinstance(choice.get("allowed_tools"), Mapping):
        allowed = choice["allowed_tools"]
        tools = [responses_tool_choice(t) for t in allowed.get("tools") or ()]
        return {"type": "allowed_tools", "mode": allowed.get("mode", "auto"), "tools": tools}
    return dict(choice)


def _renamed(params: Mapping[str, Any]) -> dict[str, Any]:
    """Chat Completions ``params`` under the Responses API's names; those it lacks left out."""
    body: dict[str, Any] = {}
    text: dict[str, Any] = {}
    for key, value in params.items():
        if value is None or key in _OWN:
            continue
        if key in ("max_completion_tokens", "max_tokens"):
            body.setdefault("max_output_tokens", value)
        elif key == "response_format":
            text["format"] = _text_format(value)
        elif key == "verbosity":
            text["verbosity"] = value
        elif key == "reasoning_effort":
            body["reasoning"] = {**body.get("reasoning", {}), "effort": value}
        elif key == "temperature":
            body["temperature"] = value
        elif key in _SAME:
            body[key] = value
        else:
            log.debug("%s has no Responses API equivalent: not sent", key)
    if text:
        body["text"] = text
    return body


def _text_format(fmt: Any) -> Any:
    """``response_format`` as ``text.format`` (a JSON schema's fields flat)."""
    if (
        isinstance(fmt, Mapping)
        and fmt.get("type") == "json_schema"
        and isinstance(fmt.get("json_schema"), Mapping)
    ):
        return {"type": "json_schema", **fmt["json_schema"]}
    return fmt


# -- the answer --------------------------------------------------------------------------------

_COUNTS = frozenset({"input_tokens", "output_tokens", "total_tokens"})
_RENAMED_USAGE = {
    "input_tokens_details": "prompt_tokens_details",
    "output_tokens_details": "completion_tokens_details",
}
_INCOMPLETE = {"max_output_tokens": "length", "content_filter": "content_filter"}
_RETRYABLE_CODES = frozenset({"server_error", "rate_limit_exceeded"})


def _usage(usage: Any) -> Usage | None:
    """The response's usage in Chat Completions' names (what the gateway relays to either client)."""
    if not isinstance(usage, Mapping):
        return None
    details = {
        _RENAMED_USAGE.get(str(k), str(k)): v for k, v in usage.items() if k not in _COUNTS and v is not None
    }
    prompt = int(usage.get("input_tokens") or 0)
    completion = int(usage.get("output_tokens") or 0)
    cached = (usage.get("input_tokens_details") or {}).get("cached_tokens") or 0
    total = int(usage.get("total_tokens") or prompt + completion)
    return Usage(prompt, completion, total, int(cached), details)


def _failure(error: Any, model: str, what: str) -> ProviderError:
    """A ``response.failed`` or ``error`` event's error as a :class:`ProviderError`."""
    detail = dict(error) if isinstance(error, Mapping) else {"message": str(error)}
    code = detail.get("code")
    return ProviderError(
        f"{model}: {what}: {detail.get('message') or code or 'unknown error'}",
        body=json.dumps(detail),
        retryable=code in _RETRYABLE_CODES,
        model=model,
        detail=detail,
    )


class _Decoder:
    """One answer's stream events (as dicts) → :mod:`tierwise.providers.base` events."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.calls: dict[int, dict[str, Any]] = {}  # output_index → the function call, as streamed
        self.order: dict[int, int] = {}  # output_index → the call's index among the answer's calls
        self.texts: set[str] = set()  # the message items whose text was streamed
        self.customs = 0
        self.done: Done | None = None
        self.usage: Usage | None = None

    def _index(self, output_index: int) -> int:
        return self.order.setdefault(output_index, len(self.order))

    def feed(self, event: Mapping[str, Any]) -> list[Event]:
        """The events ``event`` makes."""
        kind = event.get("type")
        if kind == "response.output_text.delta":
            if event.get("item_id"):
                self.texts.add(str(event["item_id"]))
            return [TextDelta(str(event.get("delta") or ""))] if event.get("delta") else []
        if kind == "response.refusal.delta" and event.get("delta"):
            return [ChoiceDelta(0, {"refusal": str(event["delta"])})]
        if kind == "response.function_call_arguments.delta":
            call = self.calls.get(int(event.get("output_index", -1)))
            if call is None or not event.get("delta"):
                return []
            call["arguments"] += event["delta"]
            return [ToolCallDelta(call["index"], arguments_delta=str(event["delta"]))]
        if kind == "response.output_item.added":
            item = event.get("item") or {}
            if item.get("type") != "function_call":
                return []
            position = int(event.get("output_index", len(self.order)))
            call = {"index": self._index(position), "id": item.get("call_id"), "name": item.get("name")}
            call["arguments"] = str(item.get("arguments") or "")
            self.calls[position] = call
            return [ToolCallDelta(call["index"], call["id"], call["name"], call["arguments"])]
        if kind == "response.output_item.done":
            return self._item_done(int(event.get("output_index", -1)), event.get("item") or {})
        if kind in ("response.completed", "response.incomplete"):
            return self._completed(event.get("response") or {})
        if kind == "response.failed":
            failed = event.get("response") or {}
            raise _failure(
                failed.get("error") or {"message": "the response failed"}, self.model, "response failed"
            )
        if kind == "error":
            raise _failure(
                {k: v for k, v in event.items() if k not in ("type", "sequence_number")}, self.model, "error"
            )
        return []

    def _item_done(self, position: int, item: Mapping[str, Any]) -> list[Event]:
        kind = item.get("type")
        if kind == "message":
            if str(item.get("id")) in self.texts:
                return []
            parts = [p for p in item.get("content") or () if isinstance(p, Mapping)]
            text = "".join(str(p.get("text", "")) for p in parts if p.get("type") == "output_text")
            return [TextDelta(text)] if text else []  # (a server that sent the text only whole)
        if kind == "function_call":
            call = self.calls.get(position)
            if call is None:  # never announced: the whole call now
                call = {"index": self._index(position), "id": item.get("call_id"), "name": item.get("name")}
                call["arguments"] = ""
                self.calls[position] = call
                out: list[Event] = [ToolCallDelta(call["index"], call["id"], call["name"])]
            else:
                out = []
            call["id"] = call["id"] or item.get("call_id")
            call["name"] = call["name"] or item.get("name")
            whole = str(item.get("arguments") or "")
            if not call["arguments"] and whole:
                call["arguments"] = whole
                out.append(ToolCallDelta(call["index"], arguments_delta=whole))
            return out
        if kind == "custom_tool_call":
            custom = {"name": item.get("name"), "input": item.get("input", "")}
            piece = {
                "index": self._index(position),
                "id": item.get("call_id"),
                "type": "custom",
                "custom": custom,
            }
            self.customs += 1
            return [ChoiceDelta(0, {"tool_calls": [piece]})]
        return [ChoiceDelta(0, {_CARRIED: [dict(item)]})]  # reasoning, a hosted tool's call…: as sent

    def _completed(self, response: Mapping[str, Any]) -> list[Event]:
        out: list[Event] = []
        for position in sorted(self.calls):
            call = self.calls[position]
            out.append(
                ToolCall(call["id"] or f"call_{call['index']}", call["name"] or "", call["arguments"] or "{}")
            )
        self.usage = _usage(response.get("usage"))
        if self.usage is not None:
            out.append(self.usage)
        reason = (response.get("incomplete_details") or {}).get("reason")
        if response.get("status") == "incomplete" and reason in _INCOMPLETE:
            finish = _INCOMPLETE[reason]
        else:
            finish = "tool_calls" if self.calls or self.customs else "stop"
        # Only what a Chat Completions answer has too: Done.fields reach its chunks as they are.
        fields = {k: response[k] for k in ("service_tier",) if response.get(k) is not None}
        self.done = Done(finish, str(response.get("model") or self.model), fields)
        out.append(self.done)
        return out


class ResponsesProvider(HTTPProvider[openai.AsyncOpenAI]):
    """A model behind OpenAI's Responses API (``POST {base_url}/responses``), streamed.

    Settings come from ``settings`` (default: the ``TIERWISE_*`` environment, read now); keyword
    arguments override them (:class:`~tierwise.providers.http.HTTPProvider`). The module docstring
    says how a request is encoded and its answer decoded.

    Args:
        settings: the provider settings; ``None`` reads the environment.
        client: an ``openai.AsyncOpenAI`` to use instead of building one (its retries are turned off).
        cache_hints: accepted for the shared constructor; the Responses API caches by prefix on its
            own and has no breakpoints to mark.
        **options: ``base_url``, ``api_key``, ``model``, ``fallback_models``, ``timeout``,
            ``max_retries``, ``retry_policy``.

    Raises:
        ProviderNotConfigured: no base URL or no model.
        InputError: a ``TIERWISE_*`` variable has a bad value.

    Example:
        >>> ResponsesProvider(base_url="https://api.openai.com/v1", model="gpt-5-mini").wire
        'responses'
    """

    name = "responses"
    wire = "responses"

    def __init__(
        self,
        settings: ProviderSettings | None = None,
        *,
        client: openai.AsyncOpenAI | None = None,
        cache_hints: bool | None = None,
        **options: Any,
    ) -> None:
        super().__init__(settings, client=client, cache_hints=cache_hints, **options)

    def _new_client(self) -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(
            base_url=self.base_url,
            api_key=self._api_key or _NO_KEY,
            timeout=openai.Timeout(**self._http_timeouts()),
            max_retries=0,
        )

    def _without_retries(self, client: openai.AsyncOpenAI) -> openai.AsyncOpenAI:
        return client.with_options(max_retries=0)

    async def _close_client(self, client: openai.AsyncOpenAI) -> None:
        await client.close()

    def body(self, request: ModelRequest, model: str) -> dict[str, Any]:
        """The Responses body of ``request`` for ``model`` (``stream: true``)."""
        native = request.native if request.native is not None and request.native.wire == self.wire else None
        if native is not None:
            body = {k: v for k, v in native.fields.items() if k not in _NOT_NATIVE}
            if request.max_tokens is not None:
                body["max_output_tokens"] = request.max_tokens
            if request.temperature is not None:
                body["temperature"] = request.temperature
        else:
            body = _renamed(request.params)
            body.setdefault("store", False)  # tierwise keeps the conversation (module docstring)
            if request.max_tokens is not None:
                body["max_output_tokens"] = request.max_tokens
            if request.temperature is not None:
                body["temperature"] = request.temperature
            if "reasoning" in body and not body["store"]:  # reasoning read back without storage
                body["include"] = [*body.get("include", ()), "reasoning.encrypted_content"]
        instructions, items = responses_input(request.messages, stored=body.get("store", True) is not False)
        tools = [responses_tool(t) for t in request.tools]
        if native is not None:  # the tools only the Responses API runs, which only it answers
            tools = _in_client_order(tools, native.fields.get("tools") or ())
        if tools:
            body["tools"] = tools
            # The request's (what the gateway decided: tierwise's last retrieval round says "none"),
            # else a Responses client's own: one naming a hosted tool has no chat shape to come in.
            choice = responses_tool_choice(request.tool_choice) if request.tool_choice is not None else None
            if choice is None and native is not None:
                choice = native.fields.get("tool_choice")
            if choice is not None:
                body["tool_choice"] = choice
        if instructions is not None:
            body["instructions"] = instructions
        return {"model": model, "input": items, **body, "stream": True}

    async def _once(self, request: ModelRequest, model: str) -> AsyncIterator[Event]:
        """One attempt: send the request and translate its events."""
        client = self._client()
        body = self.body(request, model)
        extra = {k: v for k, v in body.items() if k not in ("model", "input", "stream")}
        try:
            opened = client.responses.with_streaming_response.create(
                model=model, input=body["input"], stream=True, extra_body=extra
            )
            response = await self._first_byte(opened.__aenter__(), model)
        except openai.OpenAIError as exc:
            raise provider_error(exc, model) from exc
        decoder = _Decoder(model)
        try:  # the events read as JSON, not through the SDK's event types (see sse_events)
            async for _, data in sse_events(response.iter_lines()):
                if not data or data == "[DONE]":
                    continue
                event = json.loads(data)
                if not isinstance(event, dict):
                    raise ValueError(f"an event that is not a JSON object: {data[:200]}")
                for out in decoder.feed(event):
                    yield out
                if decoder.done is not None:
                    break
        except openai.OpenAIError as exc:
            raise provider_error(exc, model, answering=True) from exc
        except ValueError as exc:  # an event that is not JSON
            raise ProviderError(f"{model}: malformed stream: {exc}", model=model) from exc
        finally:
            await opened.__aexit__(None, None, None)
        if decoder.done is None:
            raise ProviderError(
                f"{model}: the stream ended before the response completed", retryable=True, model=model
            )
