"""Which tool schemas each model call is offered: progressive disclosure applied to the tools themselves.

Tool definitions travel at the front of every prompt. Sending all of them on every call costs their
whole size each time (issue 17: ~1,100 tokens × 65 calls, a third of what progressive disclosure sent).
A :class:`ToolOffering` picks, per model call, the names to offer from what that call can see
(:class:`OfferView`: the step of the turn, the user's message, this turn's calls and results, the
text of the prompt's context and history). :func:`offered` applies it, with two guarantees that do
not depend on the policy:

- a tool asked for with the escape earlier in the turn stays offered for the rest of it, and so does
  one whose call failed (to be called again as the error asks);
- while anything is withheld, the cheap escape ``more_tools`` is offered, its description naming every
  withheld tool in one line, so a model is never stuck without the tool it needs: it asks for them by
  name and they are offered from its next step (the result gives each one's description now).

The executor still runs a withheld tool the model calls by name (only the offer is held back), and
from then on it is offered. Without an offering (``None``) every tool is offered on every call.

**A chat's toolbox only grows** (:class:`Toolbox`, the default with an offering). Tool definitions
lead the prompt, so a call whose tools differ from the previous call's shares no prompt-cache prefix
with it: offered afresh per call, the tools cost fewer tokens but every call is billed whole (issue
17: 70.8% fewer tokens than the full peer, but only 22.0% less money with cached tokens at 10%). A
toolbox offers every tool a chat was offered before, first and in the same order, and appends a new
one at the end when the offering first picks it: the prompt's front changes only when a tool joins,
a few times a chat.

Example:
    >>> from tierwise.tools import tool
    >>> @tool(tier="list")
    ... def list_items() -> list[str]:
    ...     "Items."
    ...     return []
    >>> @tool(tier="detail")
    ... def get_item(item_id: str) -> str:
    ...     "One item."
    ...     return item_id
    >>> registry = ToolRegistry([list_items, get_item, more_tools])
    >>> view = OfferView(step=1, message="show items")
    >>> [d["function"]["name"] for d in offered(registry, lambda v: {"list_items"}, view)]
    ['list_items', 'more_tools']
    >>> offered(registry, lambda v: {"list_items"}, view)[1]["function"]["description"]
    'More tools, offered next step: get_item.'
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Hashable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from tierwise.tools.definition import Tool, ToolContext, tool
from tierwise.tools.registry import ToolRegistry

__all__ = [
    "MORE_TOOLS",
    "OfferView",
    "ToolOffering",
    "Toolbox",
    "asked_for",
    "escape_tool",
    "more_tools",
    "offered",
]

MORE_TOOLS = "more_tools"
"""The escape's name: always offered while a tool is withheld."""

_ESCAPE = "More tools, offered next step: {names}."


@dataclass(frozen=True)
class OfferView:
    """What a model call can see, for deciding which tools it is offered.

    Attributes:
        step: the model call of the turn, from 1 (the first answers the user's message).
        message: the user's message of this turn.
        turn: this turn's messages after the user's (assistant tool calls, tool results), as sent.
        seen: the rest of the prompt's text the model reads — the context layers and the history —
            where ids a tool can take may show (a policy searches it, e.g. for ``task_…`` ids).
        location: the chat's context type and entity id (``("project", "proj_…")``), if any.
        segments: earlier segments of the chat show in the prompt (ids ``recall_segments`` takes).
    """

    step: int
    message: str = ""
    turn: Sequence[Mapping[str, Any]] = ()
    seen: str = ""
    location: tuple[str, str | None] = ("global", None)
    segments: bool = False

    def results(self) -> list[tuple[str, str]]:
        """This turn's tool results as ``(tool name, content)``, oldest first."""
        return [
            (str(m.get("name") or ""), str(m.get("content") or ""))
            for m in self.turn
            if m.get("role") == "tool"
        ]

    def last_results(self) -> list[tuple[str, str]]:
        """The results of the turn's last round of calls (what the next step follows on from)."""
        out: list[tuple[str, str]] = []
        for message in reversed(self.turn):
            if message.get("role") == "tool":
                out.append((str(message.get("name") or ""), str(message.get("content") or "")))
            elif out:
                break
        return out[::-1]


ToolOffering = Callable[[OfferView], Collection[str]]
"""A policy: the names of the tools one model call is offered (unknown names are ignored)."""


@tool(tier="detail", result_tokens=120)
def more_tools(
    names: list[str],
    ctx: ToolContext,
) -> str:
    """Offer more tools at your next step, by name."""
    registry = ctx.extras.get("registry")
    wanted = [n.strip() for n in names if n.strip() and n.strip() != MORE_TOOLS]
    if not isinstance(registry, ToolRegistry):
        return "Offered from your next step: " + ", ".join(wanted) if wanted else "error: give tool names"
    found = [n for n in wanted if n in registry]
    unknown = [n for n in wanted if n not in registry]
    if not found:
        listed = ", ".join(n for n in registry.names() if n != MORE_TOOLS) or "none"
        return f"error: no tool named {', '.join(unknown) or '(none given)'}; the tools are: {listed}"
    lines = [f"- {n}: {registry[n].description}" for n in found]
    tail = f"\nUnknown, ignored: {', '.join(unknown)}." if unknown else ""
    return "Offered from your next step:\n" + "\n".join(lines) + tail


def asked_for(turn: Sequence[Mapping[str, Any]]) -> set[str]:
    """The tools the turn keeps offered: those ``more_tools`` was asked for, and any whose call failed.

    A failed call's tool stays so the model can call it again with the arguments the error asks for.
    """
    names: set[str] = set()
    calls: dict[str, str] = {}
    for message in turn:
        if message.get("role") == "tool":
            if str(message.get("content") or "").startswith("error") and message.get("tool_call_id") in calls:
                names.add(calls[str(message.get("tool_call_id"))])
            continue
        if message.get("role") != "assistant":
            continue
        for call in message.get("tool_calls") or ():
            function = call.get("function") if isinstance(call, Mapping) else None
            if not isinstance(function, Mapping):
                continue
            name = str(function.get("name") or "")
            calls[str(call.get("id"))] = name
            if name == MORE_TOOLS:
                names.update(_names_asked(function.get("arguments")))
    names.discard(MORE_TOOLS)
    return names


def _names_asked(arguments: Any) -> list[str]:
    try:
        value = json.loads(arguments or "{}")
    except (TypeError, ValueError):
        return []
    wanted = value.get("names") if isinstance(value, dict) else None
    if isinstance(wanted, str):
        wanted = wanted.replace(";", ",").split(",")
    return [str(n).strip() for n in wanted] if isinstance(wanted, list) else []


def offered(
    registry: ToolRegistry,
    offering: ToolOffering | None,
    view: OfferView,
    definitions: Sequence[dict[str, Any]] | None = None,
    *,
    keep: Sequence[str] = (),
) -> list[dict[str, Any]]:
    """The tool definitions one model call is sent: the offering's, plus the turn's, plus the escape.

    ``definitions``: the candidates (default: the registry's, sorted by name); the order is kept.
    Without an offering, every candidate but the escape is sent. ``keep``: tools offered before (the
    chat's toolbox, :class:`Toolbox`), offered again, first and in that order, so a prompt's tool
    list only grows at its end and a provider's prompt cache keeps what came before. The escape
    comes last, so the offered tools' order does not depend on what is withheld.
    """
    # Each candidate's definition is made only if it is sent (a registry's are copies: ~25 µs each).
    made: dict[str, Callable[[], dict[str, Any]]]
    if definitions is None:
        made = {t.name: t.to_openai for t in registry.tools()}
    else:
        made = {_name(d): partial(_same, d) for d in definitions}
    if offering is None:
        return [make() for name, make in made.items() if name != MORE_TOOLS]
    chosen = set(offering(view)) | asked_for(view.turn) | set(keep)
    chosen.discard(MORE_TOOLS)
    order = [n for n in dict.fromkeys(keep) if n in made and n != MORE_TOOLS]
    order += [n for n in made if n in chosen and n not in order]
    out = [made[n]() for n in order]
    withheld = [n for n in made if n not in chosen and n != MORE_TOOLS]
    escape = registry.get(MORE_TOOLS)
    if withheld and escape is not None:
        definition = escape.to_openai()
        definition["function"]["description"] = _ESCAPE.format(names=", ".join(withheld))
        out.append(definition)
    return out


class Toolbox:
    """The tools each chat was offered so far, in the order they joined: an offering that only grows.

    Held in the process for the :data:`capacity` most recent chats; a chat forgotten (or the process
    restarted) starts again from what its next call is offered — its first call then misses the
    cache once, as it would after a provider's cache expired.

    Example:
        >>> from tierwise.tools import tool
        >>> @tool(tier="list")
        ... def list_items() -> list[str]:
        ...     "Items."
        ...     return []
        >>> @tool(tier="detail")
        ... def get_item(item_id: str) -> str:
        ...     "One item."
        ...     return item_id
        >>> registry, box = ToolRegistry([get_item, list_items, more_tools]), Toolbox()
        >>> names = lambda ds: [d["function"]["name"] for d in ds]
        >>> names(box.offered("chat", registry, lambda v: {"list_items"}, OfferView(step=1)))
        ['list_items', 'more_tools']
        >>> names(box.offered("chat", registry, lambda v: {"get_item"}, OfferView(step=2)))
        ['list_items', 'get_item']
    """

    capacity = 10_000

    def __init__(self) -> None:
        self._lists: OrderedDict[Hashable, tuple[str, ...]] = OrderedDict()
        self._lock = threading.Lock()

    def offered(
        self,
        key: Hashable,
        registry: ToolRegistry,
        offering: ToolOffering,
        view: OfferView,
        definitions: Sequence[dict[str, Any]] | None = None,
    ) -> list[dict[str, Any]]:
        """:func:`offered` for chat ``key``, its earlier tools kept first; the new list remembered."""
        out = offered(registry, offering, view, definitions, keep=self.tools(key))
        with self._lock:
            self._lists[key] = tuple(_name(d) for d in out if _name(d) != MORE_TOOLS)
            self._lists.move_to_end(key)
            while len(self._lists) > self.capacity:
                self._lists.popitem(last=False)
        return out

    def tools(self, key: Hashable) -> tuple[str, ...]:
        """The names chat ``key`` was offered so far, in the order they joined."""
        with self._lock:
            return self._lists.get(key, ())


def _same(definition: dict[str, Any]) -> dict[str, Any]:
    return definition


def _name(definition: Mapping[str, Any]) -> str:
    function = definition.get("function")
    return str(function.get("name")) if isinstance(function, Mapping) else ""


def escape_tool() -> Tool:
    """The escape, ready to register (compact schema)."""
    from tierwise.tools.compact import compact

    return compact(more_tools)
