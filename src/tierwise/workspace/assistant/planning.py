"""The offline assistant's planning steps: tool calls one at a time, and the items a request names.

:class:`PlannerBase` is what every plan of :class:`~tierwise.workspace.assistant.model.OfflineAssistant`
shares: :meth:`~PlannerBase.call` (the next tool call; the plan stops with :class:`Next` until its
result is in), :meth:`~PlannerBase.done` (a result of this turn), and :meth:`~PlannerBase.pick` — the
item a request names, resolved against what the user last *saw*: "the second one" is the second
item of the last list an answer showed (in its order, never a tool result the answer did not show),
"it" / "that task" the one item the answers were last about.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from tierwise.providers.base import ToolCall
from tierwise.tools.offering import MORE_TOOLS
from tierwise.workspace.assistant.answers import render, render_error
from tierwise.workspace.assistant.intents import Intent, keywords
from tierwise.workspace.assistant.reading import (
    Item,
    RequestView,
    Shown,
    Step,
    match_score,
    parse_result,
    result_items,
)

__all__ = ["DETAIL_TOOL", "ID_ARG", "OFFLINE_HINT", "SEARCH_TOOL", "Next", "NoTools", "PlannerBase", "Stop"]

OFFLINE_HINT = (
    "_I'm the offline assistant: local rules, not an AI model. For a real model set `TIERWISE_BASE_URL` "
    "and `TIERWISE_MODEL` (plus `TIERWISE_API_KEY` if it needs one)._"
)
"""The line every fallback answer ends with."""

SEARCH_TOOL = {"task": "list_tasks", "project": "search_projects", "note": "search_notes"}
DETAIL_TOOL = {"task": "get_task_details", "project": "get_project_details", "note": "get_note_details"}
ID_ARG = {"task": "task_id", "project": "project_id", "note": "note_id"}
_CHUNK = 6_000  # bytes of a stored result read per open_blob call (well under a turn's whole-result limit)
_MAX_CHUNKS = 5


class Next(Exception):
    """The plan needs this call before it can go on."""

    def __init__(self, call: ToolCall) -> None:
        super().__init__(call.name)
        self.call = call


class Stop(Exception):
    """The plan cannot go on (a tool is unavailable, a call would repeat): answer with what there is."""


class NoTools(Exception):
    """The request offers no tools at all (an OpenAI client on ``/v1`` that sends none)."""


class PlannerBase:
    """One request's plan: the view of the request, the recognised intent, and the shared steps."""

    def __init__(self, view: RequestView, intent: Intent) -> None:
        self.view = view
        self.intent = intent

    def call(self, name: str, **arguments: Any) -> ToolCall:
        """The tool call ``name(arguments)`` (a withheld tool asked for first; a repeat stops the plan)."""
        args = {k: v for k, v in arguments.items() if v is not None and v != [] and v != ""}
        if self.view.text_only:
            raise Stop("tools are not available for this step")
        if name not in self.view.tools:
            if not self.view.tools:
                raise NoTools(name)
            asked = [s for s in self.view.steps if s.name == MORE_TOOLS and name in str(s.arguments)]
            if MORE_TOOLS not in self.view.tools or asked:
                raise Stop(f"the {name} tool is not available here")
            name, args = MORE_TOOLS, {"names": [name]}  # withheld: ask for it (offered next step)
        if any(s.name == name and s.arguments == args for s in self.view.steps):
            raise Stop(f"{name} gave nothing I could use")
        text = json.dumps(args, ensure_ascii=False)
        digest = hashlib.sha256(f"{self.view.digest}:{name}:{text}".encode()).hexdigest()[:12]
        return ToolCall(f"call_{digest}", name, text)

    def done(self, name: str, **match: Any) -> Step | None:
        """This turn's latest ``name`` step whose arguments include ``match``, its result read whole."""
        for step in reversed(self.view.steps):
            if step.name == name and all(step.arguments.get(k) == v for k, v in match.items()):
                return self.whole(step)
        return None

    def whole(self, step: Step) -> Step:
        """``step`` with its result read whole: a result too large for this turn is reopened first."""
        if step.blob is None or step.name == "open_blob":
            return step
        data, error = self.read_blob(step.blob)
        return Step(step.name, step.arguments, data, error)

    def read_blob(self, sha: str) -> tuple[dict[str, Any] | None, str | None]:
        """A stored result, read with ``open_blob`` in chunks small enough to be read whole."""
        text, offset = "", 0
        for _ in range(_MAX_CHUNKS):
            step = next(
                (
                    s
                    for s in self.view.steps
                    if s.name == "open_blob"
                    and s.arguments.get("sha256") == sha
                    and s.arguments.get("start") == offset
                ),
                None,
            )
            if step is None:
                raise Next(self.call("open_blob", sha256=sha, start=offset, end=offset + _CHUNK))
            if step.blob or (step.text.startswith("error") and not text):
                return None, step.error or "the stored result is too large to read here"
            if step.text.startswith("error"):
                break  # read past the end: the previous chunk was the last
            text += step.text
            if len(step.text.encode()) < _CHUNK - 8:  # a short chunk is the last (U+FFFD may add bytes)
                break
            offset += _CHUNK
        return parse_result(text)

    def partial(self, reason: str) -> str:
        """The answer when the plan cannot finish: why, and the last result it has."""
        shown = next((s for s in reversed(self.view.steps) if s.data is not None), None)
        body = render(shown, self.view.now) if shown else ""
        return f"I couldn't finish that ({reason}).\n\n" + (f"{body}\n\n" if body else "") + OFFLINE_HINT

    def pick(self, kinds: tuple[str, ...]) -> Item | str | ToolCall:
        """The item the request names: by ordinal, pronoun, earlier mention, location, or a search."""
        intent, view = self.intent, self.view
        what = " or ".join(kinds)
        if intent.ordinal is not None and view.events:  # the last answer listed calendar events
            n = intent.ordinal
            if n == 0 or n > len(view.events) or n < -1:
                return f"The last list I showed had {len(view.events)} events; which one do you mean?"
            return (
                f"That one is a calendar event, not a {what}: {view.events[n - 1 if n > 0 else -1]}. Ask "
                "“find a free hour” around it, or name a task to work on."
            )
        if intent.ordinal is not None:  # the list on screen: the last one an answer showed
            if not view.shown:
                return (
                    "Which list do you mean? I haven't listed anything in this chat yet: ask me for your "
                    "tasks, projects or notes first (“what's overdue?”), then pick one by its place."
                )
            n, count = intent.ordinal, len(view.shown)
            if n == 0 or n > count or n < -1:
                items = f"{count} item{'s' if count != 1 else ''}"
                return f"The last list I showed had {items}; which one do you mean?"
            return self.resolve(view.shown[n - 1 if n > 0 else -1], kinds)
        if intent.pronoun or not intent.subject:
            if view.focus_list:  # the last answer listed several: "it" could be any of them
                example = f"the {kinds[0]} about …" if len(kinds) == 1 else "its name"
                return (
                    f"Which {what} do you mean? My last answer listed {view.focus_list}: say “the second "
                    f"one”, or name it ({example})."
                )
            focus = view.focus
            if focus is not None and (isinstance(focus, Item) or focus[0] in (None, *kinds)):
                found = self.resolve(focus, kinds)
                if not isinstance(found, str):
                    return found
            located = next((view.current[k] for k in kinds if k in view.current), None)
            if located is not None:
                return located
            return f"Which {what} do you mean? Name it (e.g. “the API docs {kinds[0]}”)."
        words = keywords(intent.subject)
        shown = view.context_items + view.earlier + list(view.current.values())  # later ones win ties
        candidates = [i for i in shown if i.kind in kinds]
        best = max(reversed(candidates), key=lambda i: match_score(words, i.title), default=None)
        if best is not None and match_score(words, best.title)[0] >= 0.5:
            return best
        return self.search(kinds, words)

    def resolve(self, shown: Shown, kinds: tuple[str, ...]) -> Item | str | ToolCall:
        """An item an answer showed, as the tool gave it: found in its stored result, or searched for."""
        if isinstance(shown, Item):
            if shown.kind in kinds:
                return shown
            return f"“{shown.title}” is a {shown.kind}; which {' or '.join(kinds)} do you mean?"
        kind, title = shown
        if kind is not None and kind not in kinds:
            return f"“{title}” is a {kind}; which {' or '.join(kinds)} do you mean?"
        blob = self.view.shown_blob
        if blob is not None and "open_blob" in self.view.tools and not self.view.text_only:
            data, _ = self.read_blob(blob)  # memory compressed the list's result: read it again
            listed, one = result_items(data or {})
            match = next((i for i in [*listed, *([one] if one else [])] if i.title == title), None)
            if match is not None and match.kind in kinds:
                return match
        return self.named(shown, kinds)

    def named(self, said: tuple[str | None, str], kinds: tuple[str, ...]) -> Item | str | ToolCall:
        """The item an earlier answer named (by title only: memory dropped its result), found again."""
        kind, title = said
        words = keywords(title)
        known = [i for i in self.view.earlier if i.kind in ((kind,) if kind else kinds)]
        exact = next((i for i in reversed(known) if i.title == title), None)
        return exact or self.search((kind,) if kind else kinds, words, title)

    def search(self, kinds: tuple[str, ...], words: list[str], label: str = "") -> Item | str | ToolCall:
        """The best match of ``words`` among the kinds' search results (searched first), or why none."""
        queries = [" ".join(words[:5])] if words else []
        if len(words) > 1:
            queries.append(max(words, key=len))
        for kind in kinds:
            tool = SEARCH_TOOL[kind]
            for query in queries if kind == kinds[0] else queries[:1]:
                step = self.done(tool, query=query)
                if step is None:
                    return self.call(tool, query=query, limit=10)
                if step.error:
                    return render_error(step, f"search for “{query}”")
                listed = [i for i in result_items(step.data or {})[0] if i.kind == kind]
                if listed:
                    return max(reversed(listed), key=lambda i: match_score(words, i.title))
        what = " or ".join(kinds)
        return (
            f"I couldn't find a {what} matching “{label or self.intent.subject}”. Try other words, or ask "
            f"me to list your {kinds[0]}s."
        )

    def project(self) -> Item | str | ToolCall | None:
        """The project ``intent.project`` names (else the chat's, else ``None``), an answer, or a call."""
        if not self.intent.project:
            current = self.view.current.get("project")
            return current
        saved = self.intent
        self.intent = Intent("details", subject=saved.project, target="project")
        try:
            found = self.pick(("project",))
        finally:
            self.intent = saved
        return found

    # -- intents -------------------------------------------------------------------------------------
