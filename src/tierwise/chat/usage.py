"""Per-turn token accounting in seed 000's TokenUsageReport shape.

Context by layer kind, the conversation (history + current message), tool calls (input/output
tokens each), the response, and totals with the tokens the pack saved against sending everything.
Beyond the seed: ``summary.prefixTokens``, the tokens the turn's packs repeated of the pack before
each (the expected prompt-cache hit), and ``model_usage.cached_tokens``, what the model reported as
served from its cache.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from tierwise.packing.report import PackReport

__all__ = ["TokenUsageReport", "ToolUsage", "usage_report"]

_CONTEXT_KINDS = {
    "system": "system",
    "tools": "system",
    "profile": "user",
    "location": "location",
    "related": "related",
    "narrative": "memory",
    "headers": "memory",
    "summaries": "memory",
    "retrieved": "memory",
    "tool_results": "memory",
}


@dataclass(frozen=True)
class ToolUsage:
    """One tool call's tokens: arguments in, result out."""

    name: str
    input_tokens: int
    output_tokens: int


@dataclass(frozen=True)
class TokenUsageReport:
    """Seed 000 §6.3, with the model's own counts where it reported them."""

    context: dict[str, int]
    conversation: dict[str, int]
    tools: dict[str, Any]
    response: dict[str, int]
    summary: dict[str, float | int]
    model_usage: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return asdict(self)


def usage_report(
    packs: Sequence[PackReport],
    *,
    tool_calls: Sequence[ToolUsage] = (),
    response_tokens: int = 0,
    prompt_tokens_reported: int | None = None,
    completion_tokens_reported: int | None = None,
    cached_tokens_reported: int | None = None,
) -> TokenUsageReport:
    """The usage of one turn, from the packs sent in it (one per model call) and what came back.

    Context and conversation figures describe the turn's last pack (what the final answer saw);
    ``totalUsed`` adds every pack of the turn (a turn with two tool rounds sends three prompts).
    """
    if not packs:
        raise ValueError("a turn's usage needs at least one pack")
    last = packs[-1]
    context: dict[str, int] = {"system": 0, "user": 0, "location": 0, "related": 0, "memory": 0}
    history = current = 0
    for layer in last.layers:
        if layer.kind in _CONTEXT_KINDS:
            context[_CONTEXT_KINDS[layer.kind]] += layer.tokens
        elif layer.kind in ("history", "task"):
            history += layer.tokens
        elif layer.kind == "input":
            current += layer.tokens
        else:
            context["related"] += layer.tokens
    context["total"] = sum(context.values())
    tool_total = sum(t.input_tokens + t.output_tokens for t in tool_calls)
    prompt_total = sum(p.total_tokens for p in packs)
    saved = sum(p.tokens_saved for p in packs)
    prefix = sum(p.prefix_tokens or 0 for p in packs)
    return TokenUsageReport(
        context=context,
        conversation={"history": history, "currentMessage": current, "total": history + current},
        tools={"calls": [asdict(t) for t in tool_calls], "total": tool_total},
        response={"text": response_tokens, "total": response_tokens},
        summary={
            "totalUsed": prompt_total + response_tokens,
            "limit": last.budget,
            "utilizationPercent": round(100 * last.total_tokens / last.budget, 1) if last.budget else 0.0,
            "efficiencySaved": saved,
            "prefixTokens": prefix,
        },
        model_usage={
            k: v
            for k, v in (
                ("prompt_tokens", prompt_tokens_reported),
                ("completion_tokens", completion_tokens_reported),
                ("cached_tokens", cached_tokens_reported),
            )
            if v is not None
        },
    )
