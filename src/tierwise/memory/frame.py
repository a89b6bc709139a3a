"""The frame: the front of a chat's packs between two compaction steps, held for the prompt cache."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tierwise.memory.segments import Segment
from tierwise.packing.layers import ContextLayer
from tierwise.tokens import TokenCounter

__all__ = ["Frame", "layers_cost", "summaries_text", "updated"]


@dataclass(frozen=True)
class Frame:
    """The front of a chat's packs between two compaction steps: what a provider's cache can serve.

    A pack is laid out by how often its parts change: the caller's system prompt and tools; the
    head (the caller's profile and location as they were at the step, the narrative, segment headers
    and summaries); working memory, appended turn by turn; then, per turn, the tail (retrieved turns,
    requested segments, caller layers that changed since the step) and the newest user message.
    Everything up to the tail stays byte-identical from pack to pack until a step makes it anew.

    Args:
        available: the budget it was made for (another budget makes a new frame).
        stepped: whether memory has compacted yet; until then the pack is the conversation as given.
        layers: memory's head layers as made at the step.
        caller: the caller's head layers as they were at the step, by id.
        window: tokens working memory may grow to before the next step.
    """

    available: int
    stepped: bool
    layers: tuple[ContextLayer, ...]
    caller: dict[str, ContextLayer]
    window: int


def layers_cost(layers: Iterable[ContextLayer], counter: TokenCounter) -> int:
    """Tokens of text layers as sections (each + 2 for the separator between sections)."""
    return sum(layer.tokens(counter) + 2 for layer in layers)


def updated(layer: ContextLayer) -> ContextLayer:
    """A caller's head layer that changed since the step, as it is now, for the tail."""
    title = f"{layer.title or layer.kind.replace('_', ' ').capitalize()} (updated)"
    if layer.heading:
        title = f"{layer.heading[3:].strip()} (updated)"
    return ContextLayer(
        f"{layer.id}:updated",
        layer.kind,
        layer.content,
        priority=layer.priority,
        guaranteed=False,
        truncatable=layer.truncatable,
        title=title,
        summary=layer.summary,
        placement="tail",
    )


def summaries_text(segments: Sequence[Segment], budget: int, counter: TokenCounter) -> str:
    """The summaries layer: the newest of ``segments`` (oldest first) whose lines fit ``budget``."""
    chosen: list[str] = []
    used = 0
    for seg in reversed(segments):
        line = f"{seg.id} {seg.header}: {seg.summary}"
        cost = counter.count(line) + 1
        if used + cost > budget:
            break
        chosen.append(line)
        used += cost
    return "\n".join(reversed(chosen))


def headers_text(
    segments: Sequence[Segment], hidden: int, lines: Sequence[str], budget: int, counter: TokenCounter
) -> str:
    """The headers layer: ``lines`` (one per segment, after the ``hidden`` oldest), oldest collapsed.

    The oldest headers collapse into one range line ("S1–S12: 12 earlier segments (recall by id)")
    until the rest fit ``budget``. If not even one header fits, the range line alone is returned
    whatever its size: headers never vanish silently — if the pack cannot take that line either,
    the packer drops the layer and its report says so, with the reason.
    """
    lines = list(lines)
    costs = [counter.count(line) + 1 for line in lines]  # +1: the newline
    total = sum(costs)
    collapsed = hidden
    while lines:  # line costs add up; the joined text is counted exactly once at the end
        head = _range(segments, collapsed)
        if total + (counter.count(head) + 1 if head else 0) <= budget:
            text = "\n".join([head, *lines] if head else lines)
            if counter.count(text) <= budget:
                return text
        total -= costs.pop(0)
        lines.pop(0)
        collapsed += 1
    return _range(segments, collapsed)


def _range(segments: Sequence[Segment], collapsed: int) -> str:
    if not collapsed:
        return ""
    return f"{segments[0].id}–{segments[collapsed - 1].id}: {collapsed} earlier segments (recall by id)"
