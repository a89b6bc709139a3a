"""The upstreams the agent CLIs run against through tierwise: one small adapter per wire.

Each adapter starts its loopback fake (:class:`tests.fake_openai.FakeOpenAI`,
:class:`tests.fake_responses.FakeResponses`, :class:`tests.fake_anthropic.FakeAnthropic`), builds the
tierwise provider that speaks its wire, scripts the same two answers — a call of the CLI's shell tool
with a given command, then the final text — and reads back, in its wire's shape, what a test checks:
the tools offered, the tool results a request carries (call id and output text), whether it streamed,
and the request fields that wire's real API takes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from tests.fake_anthropic import AnthropicReply, FakeAnthropic
from tests.fake_openai import FakeOpenAI, FakeReply
from tests.fake_responses import FakeResponses, ResponsesReply
from tests.fake_upstream import FakeUpstream
from tierwise.providers import OpenAICompatProvider
from tierwise.providers.anthropic_api import AnthropicProvider
from tierwise.providers.http import HTTPProvider
from tierwise.providers.responses_api import ResponsesProvider

__all__ = ["KINDS", "AnthropicUpstream", "ChatUpstream", "ResponsesUpstream", "Upstream", "text_of"]

# fmt: off
CHAT_COMPLETIONS_FIELDS = frozenset({
    "model", "messages", "stream", "stream_options", "tools", "tool_choice", "parallel_tool_calls",
    "temperature", "top_p", "n", "stop", "max_tokens", "max_completion_tokens", "presence_penalty",
    "frequency_penalty", "logit_bias", "logprobs", "top_logprobs", "user", "seed", "response_format",
    "metadata", "store", "service_tier", "reasoning_effort", "verbosity", "prompt_cache_key",
    "prompt_cache_retention", "safety_identifier", "modalities", "audio", "prediction", "web_search_options",
})
"""The request fields api.openai.com's Chat Completions takes: it answers any other with a 400
("Unrecognized request argument supplied"), so a field only the CLI's own wire knows (Codex's
``client_metadata``, Claude Code's ``thinking``) must not reach the upstream."""
RESPONSES_FIELDS = frozenset({
    "model", "input", "instructions", "stream", "stream_options", "tools", "tool_choice",
    "parallel_tool_calls", "max_output_tokens", "max_tool_calls", "temperature", "top_p", "top_logprobs",
    "reasoning", "text", "include", "store", "metadata", "previous_response_id", "conversation",
    "prompt", "prompt_cache_key", "prompt_cache_retention", "safety_identifier", "service_tier",
    "truncation", "background", "user", "context_management",
})
"""The Responses API's request fields (``openai`` 2.x ``ResponseCreateParams``)."""
ANTHROPIC_FIELDS = frozenset({
    "model", "messages", "max_tokens", "system", "stream", "tools", "tool_choice", "temperature",
    "top_p", "top_k", "stop_sequences", "metadata", "thinking", "service_tier", "container",
    "context_management", "mcp_servers", "output_config", "output_format", "cache_control",
})
"""The Messages API's request fields (``anthropic`` ``MessageCreateParams`` and its betas')."""
# fmt: on


def text_of(content: Any) -> str:
    """A message's or a tool result's content as one text (a string, or the texts of its parts)."""
    if isinstance(content, list):
        return " ".join(
            str(part.get("text", part.get("content", ""))) for part in content if isinstance(part, dict)
        )
    return str(content or "")


@dataclass
class Upstream:
    """One upstream kind: its fake, its provider, its two scripted answers, its requests read back."""

    kind: ClassVar[str]
    model: ClassVar[str]
    fields: ClassVar[frozenset[str]]
    fake: FakeUpstream[Any] = field(init=False)

    def __post_init__(self) -> None:
        self.fake = self.make_fake().start()

    def make_fake(self) -> FakeUpstream[Any]:
        raise NotImplementedError(f"{type(self).__name__}.make_fake")

    def provider(self) -> HTTPProvider[Any]:
        """tierwise's provider for this upstream."""
        raise NotImplementedError(f"{type(self).__name__}.provider")

    def script_round(self, tool: str, arguments: Mapping[str, Any], call_id: str, answer: str) -> None:
        """A call of ``tool`` with ``arguments``, then the text ``answer``."""
        raise NotImplementedError(f"{type(self).__name__}.script_round")

    def offered(self, body: Mapping[str, Any]) -> list[str]:
        """The names of the tools ``body`` offers."""
        return [str(t.get("name")) for t in body.get("tools") or () if isinstance(t, Mapping)]

    def results(self, body: Mapping[str, Any]) -> list[tuple[str, str]]:
        """The tool results ``body`` carries: ``(call id, output text)``, in order."""
        raise NotImplementedError(f"{type(self).__name__}.results")

    @property
    def requests(self) -> list[dict[str, Any]]:
        """The request bodies the upstream received."""
        return list(self.fake.requests)

    @property
    def headers(self) -> list[dict[str, str]]:
        """Each request's headers (lowercase names)."""
        return list(self.fake.headers)

    def stop(self) -> None:
        self.fake.stop()


class ChatUpstream(Upstream):
    """A Chat Completions upstream (:class:`OpenAICompatProvider`)."""

    kind = "chat"
    model = "gpt-4o-mini"
    fields = CHAT_COMPLETIONS_FIELDS

    def make_fake(self) -> FakeOpenAI:
        return FakeOpenAI()

    def provider(self) -> HTTPProvider[Any]:
        return OpenAICompatProvider(base_url=self.fake.url, api_key="k", model=self.model)

    def script_round(self, tool: str, arguments: Mapping[str, Any], call_id: str, answer: str) -> None:
        call = {"id": call_id, "name": tool, "arguments": dict(arguments)}
        self.fake.script(FakeReply(tool_calls=[call]), FakeReply(text=answer))

    def offered(self, body: Mapping[str, Any]) -> list[str]:
        return [str(t.get("function", {}).get("name")) for t in body.get("tools") or ()]

    def results(self, body: Mapping[str, Any]) -> list[tuple[str, str]]:
        messages: Sequence[Mapping[str, Any]] = body.get("messages") or ()
        return [
            (str(m.get("tool_call_id")), text_of(m.get("content")))
            for m in messages
            if m.get("role") == "tool"
        ]


class ResponsesUpstream(Upstream):
    """An OpenAI Responses upstream (:class:`ResponsesProvider`)."""

    kind = "responses"
    model = "gpt-4o-mini"
    fields = RESPONSES_FIELDS

    def make_fake(self) -> FakeResponses:
        return FakeResponses()

    def provider(self) -> HTTPProvider[Any]:
        return ResponsesProvider(base_url=self.fake.url, api_key="k", model=self.model)

    def script_round(self, tool: str, arguments: Mapping[str, Any], call_id: str, answer: str) -> None:
        call = {"id": call_id, "name": tool, "arguments": dict(arguments)}
        self.fake.script(ResponsesReply(tool_calls=[call]), ResponsesReply(text=answer))

    def results(self, body: Mapping[str, Any]) -> list[tuple[str, str]]:
        items = body.get("input")
        outputs = ("function_call_output", "custom_tool_call_output")
        return [
            (str(i.get("call_id")), text_of(i.get("output")))
            for i in (items if isinstance(items, list) else ())
            if isinstance(i, Mapping) and i.get("type") in outputs
        ]


class AnthropicUpstream(Upstream):
    """An Anthropic Messages upstream (:class:`AnthropicProvider`)."""

    kind = "anthropic"
    model = "claude-opus-4-8"
    """Claude Code 2.1's default: it sends its whole set of betas for it (``mid-conversation-system``…);
    tierwise's model table reads it as the ``claude-opus-4`` family (a 32,000-token output limit)."""
    fields = ANTHROPIC_FIELDS

    def make_fake(self) -> FakeAnthropic:
        return FakeAnthropic()

    def provider(self) -> HTTPProvider[Any]:
        return AnthropicProvider(base_url=self.fake.url, api_key="k", model=self.model)

    def script_round(self, tool: str, arguments: Mapping[str, Any], call_id: str, answer: str) -> None:
        call = {"id": call_id, "name": tool, "input": dict(arguments)}
        self.fake.script(AnthropicReply(tool_calls=[call]), AnthropicReply(text=answer))

    def results(self, body: Mapping[str, Any]) -> list[tuple[str, str]]:
        messages: Sequence[Mapping[str, Any]] = body.get("messages") or ()
        return [
            (str(b.get("tool_use_id")), text_of(b.get("content")))
            for m in messages
            if m.get("role") == "user" and isinstance(m.get("content"), list)
            for b in m["content"]
            if isinstance(b, Mapping) and b.get("type") == "tool_result"
        ]


KINDS: dict[str, type[Upstream]] = {u.kind: u for u in (ChatUpstream, ResponsesUpstream, AnthropicUpstream)}
"""The upstream kinds by name, as ``TIERWISE_UPSTREAM_API`` names them."""
