"""The frame: the front of a chat's packs between two compaction steps, held for the prompt cache."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tierwise.memory.segments import Segment
from tierwise.packing.layers import ContextLayer
from tierwise.tokens import TokenCounter

__all__ = ["Frame", "changed_lines", "layers_cost", "summaries_text", "updated"]


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


def updated(layer: ContextLayer, held: ContextLayer | None = None) -> ContextLayer:
    """A caller's head layer that changed since the step, as it is now, for the tail.

    With ``held`` (the layer as the head still shows it): only what changed (:func:`changed_lines`),
    unless that is not clearly shorter than the whole. A location's context changes a line at a
    time — the clock's "Now:", one project's progress after a write — and re-sending all of it on
    every turn after the step cost ~480 tokens a call (issue 17).
    """
    title = f"{layer.title or layer.kind.replace('_', ' ').capitalize()} (updated)"
    if layer.heading:
        title = f"{layer.heading[3:].strip()} (updated)"
    content = layer.content
    if held is not None and isinstance(content, str) and isinstance(held.content, str):
        changed = changed_lines(held.content, content)
        if changed is not None and len(changed) * 2 < len(content):
            content = changed
    return ContextLayer(
        f"{layer.id}:updated",
        layer.kind,
        content,
        priority=layer.priority,
        guaranteed=False,
        truncatable=layer.truncatable,
        title=title,
        summary=layer.summary,
        placement="tail",
    )


_CHANGED = "Changed since it was shown above (the rest is as there):"


def changed_lines(before: str, after: str) -> str | None:
    r"""What ``after`` changed of ``before``, line by line (``None``: nothing).

    New and changed lines under their headings, then "No longer:" and the lines gone.

    Example:
        >>> print(changed_lines("## Now\n10:30\n## Projects: 3\n- Q4 · 21%\n- Hiring\n- Tax",
        ...                     "## Now\n11:00\n## Projects: 2\n- Q4 · 24%\n- Tax"))
        Changed since it was shown above (the rest is as there):
        ## Now
        11:00
        ## Projects: 2
        - Q4 · 24%
        No longer:
        - Hiring
    """
    old, new = before.splitlines(), after.splitlines()
    fresh: set[int] = set()
    gone: list[str] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag in ("replace", "insert"):
            fresh.update(range(j1, j2))
        if tag == "delete" or (tag == "replace" and i2 - i1 > j2 - j1):  # more went than came
            gone += old[i1 + (j2 - j1 if tag == "replace" else 0) : i2]
    out: list[str] = []
    heading = shown = None
    for index, line in enumerate(new):
        if line.startswith("#"):
            heading = line
            if index in fresh:  # a heading that changed (a count in it, say) is shown as it is now
                out.append(line)
                shown = line
        elif index in fresh and line.strip():
            if heading is not None and heading != shown:
                out.append(heading)
                shown = heading
            out.append(line)
    gone = [line for line in gone if line.strip() and not line.startswith("#")]
    if not out and not gone:
        return None
    return "\n".join([_CHANGED, *out, *(["No longer:", *gone] if gone else [])])


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
