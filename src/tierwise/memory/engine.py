"""Memory: everything said, kept as turns, segments and a narrative, turned into layers for a pack.

Per pack (seed 003's policy, configurable in :class:`MemoryPolicy`):

* **narrative** (layer 0, guaranteed), **headers** (guaranteed; one line per segment, the oldest
  collapsed into a range), **summaries** (the newest segments out of working memory);
* **history**: working memory, the newest turns in full as chat messages (tool calls with results);
* **retrieved**: older turns relevant to the current input (BM25, neighbours, entities, recency:
  :mod:`tierwise.memory.retrieval`), verbatim, in order;
* **requested**: segments the model asked for by id, as header, summary or full text.

The layers are laid out for the provider's prompt cache (:class:`Frame`): narrative, headers and
summaries are made at a compaction step (:mod:`tierwise.memory.compaction`) and held until the next;
working memory is appended to turn by turn; retrieved turns and requested segments are chosen per
turn and go last, before the newest user message. While the whole conversation fits, memory adds nothing.
"""

from __future__ import annotations

import logging
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from tierwise.budget import Budget
from tierwise.collector import breathe
from tierwise.memory import steps
from tierwise.memory.analysis import Analysis, analyse, searchable
from tierwise.memory.blobs import BlobStore, CompressedToolResult, compress_tool_result, compressed_sha256
from tierwise.memory.compaction import CompactionEvent, compaction_step, first_interval
from tierwise.memory.frame import Frame
from tierwise.memory.frame import layers_cost as _cost
from tierwise.memory.frame import updated as _updated
from tierwise.memory.gate import PastGate
from tierwise.memory.keyphrases import Vocabulary
from tierwise.memory.lines import LineIndex
from tierwise.memory.narrative import Narrative, day_label
from tierwise.memory.policy import MemoryPolicy
from tierwise.memory.recall import Form, recall_segments, segment_headers
from tierwise.memory.resend import resent_hook, resent_turn
from tierwise.memory.retrieval import TurnRetriever
from tierwise.memory.scrub import Scrubber
from tierwise.memory.segments import Segment, Segmenter, make_trio, spoken
from tierwise.memory.turns import Turn, excerpt, turn_from_message
from tierwise.memory.upkeep import ModelUpkeep
from tierwise.packing.groups import MessageGroups
from tierwise.packing.layers import ContextLayer
from tierwise.packing.packer import tail_opening
from tierwise.summarize.base import Summarizer
from tierwise.tokens import TokenCounter, get_counter

__all__ = ["Form", "Frame", "Memory", "MemoryPolicy"]

log = logging.getLogger(__name__)


_RETRIEVED_HEADING = ContextLayer("retrieved", "retrieved", "").heading


class Memory:
    """One conversation's memory.

    Example:
        >>> from tierwise import Budget
        >>> memory = Memory()
        >>> _ = memory.add({"role": "user", "content": "Book the venue for the offsite."})
        >>> [layer.kind for layer in memory.layers("venue?", Budget(window=2000))]
        ['history']
    """

    def __init__(
        self,
        *,
        counter: TokenCounter | None = None,
        policy: MemoryPolicy | None = None,
        summarizer: Summarizer | None = None,
        scrubber: Scrubber | None = None,
        blobs: BlobStore | None = None,
        retriever: TurnRetriever | None = None,
    ) -> None:
        self.counter = counter or get_counter()
        self.policy = policy or MemoryPolicy()
        self.summarizer = summarizer
        self.scrubber = scrubber if scrubber is not None else Scrubber()
        self.blobs = blobs
        self.retriever = retriever if retriever is not None else TurnRetriever()
        self.turns: list[Turn] = []
        self.messages: list[Mapping[str, Any]] = []
        self.costs: list[int] = []  # tokens of each turn as a chat message
        self.segmenter = Segmenter(self.policy.segments)
        self.narrative = Narrative()
        self.live_from = 0  # first turn of working memory
        self.archived_upto = 0  # turns before this index are archived (never deleted)
        self.events: list[CompactionEvent] = []
        self._fulls: OrderedDict[str, str] = OrderedDict()
        self._fulls_this_turn = 0
        self._groups: MessageGroups | None = None
        self._groups_given: MessageGroups | None = None
        self._given: dict[int, tuple[Mapping[str, Any], int]] = {}  # compressed turn → as given, tokens
        self._unsettled: list[Segment] = []  # closed, summary deferred (policy.defer_summaries)
        self.upkeep = ModelUpkeep()  # what waits for a summary model (memory/upkeep.py)
        self._unnarrated: list[Segment] = []  # summarised by maintain_step, narrative next step
        self._headed: dict[str, int] = {}  # segment id → its last turn when its header was made
        self._segment_firsts: list[int] = []  # each segment's first turn (Memory._excerpt_label)
        self.gate = PastGate(
            question_share=self.policy.past_share, statement_share=self.policy.statement_share
        )
        self.frame: Frame | None = None  # the packs' front until the next compaction step
        self.first_user: int | None = None  # the conversation's first user message (pinned in steps)
        self.step_turn: int | None = None  # the turn packed step by step (memory/assemble.py)
        self.agent_loop = False  # a turn of many steps was: the conversation is an agent loop
        self.pointed = False  # a step was cut to fit, its rest left in a blob (assemble.fit_step)
        self._call_names: dict[str, str] = {}  # tool call id → the tool's name (for its result)
        self.lines = LineIndex()  # tool outputs' lines by the names in them (retrieval for steps)
        self._notes: dict[int, tuple[str, int]] = {}  # a step's retrieved lines, by its last message
        self.whole_from = 0  # from here on, packs send messages as given (a large result whole) …
        self.whole_cap: int | None = None  # … unless it is over this many tokens (set at a step)
        self.last_step = (0, 0)  # turns and working-memory tokens after the last compaction step
        self._window: tuple[tuple[int, int | None, int, int, int], MessageGroups] | None = None
        self._superseded: dict[int, tuple[Mapping[str, Any], int]] = {}  # stubs (memory/steps.py)
        self._line_sets: dict[int, frozenset[str]] = {}  # a result's lines, for supersede
        self._actions: tuple[int, list[Any]] = (0, [])  # a coding agent's steps read so far (steps.py)
        self._pinned: tuple[tuple[Any, ...], ContextLayer | None] | None = None
        self._resuming = False  # the next step keeps working memory if it fits (Memory.resume)
        self.backlog = False  # the head was made while a backlog of trios waited (Memory._settle)
        self._resent: dict[int, tuple[Turn, Turn]] = {}  # a turn as re-sent: scrubbed (memory/resend.py)
        if self.policy.scrub_resent:  # retrieved turns are shown, and costed, scrubbed
            self.retriever.shown = resent_hook(self)

    # -- writing -----------------------------------------------------------------------------

    @property
    def segments(self) -> list[Segment]:
        """All segments, oldest first (the last one is open)."""
        return self.segmenter.segments

    @property
    def vocabulary(self) -> Vocabulary:
        """How many segments use each word (what makes a header distinctive)."""
        return self.segmenter.vocabulary

    def add(
        self,
        message: Mapping[str, Any],
        *,
        at: datetime | None = None,
        id: str | None = None,
        speaker: str | None = None,
        extra: str = "",
        boundary: bool = False,
        given: Mapping[str, Any] | None = None,
        tokens: int | None = None,
        analysis: Analysis | None = None,
    ) -> Turn:
        """Remember one OpenAI-format message; returns its turn.

        Tool results over the blob threshold are stored as blobs (with a blob store) and remembered
        as their compressed form: summary, entities and reference. The message as given is kept
        too and sent while the whole conversation fits (pass ``given`` if ``message`` is already
        compressed). ``tokens``: the message's count, if known (a stored message's), so it is not
        counted again; ignored if memory changes the message. ``analysis``: likewise, its stored one.
        """
        if given is None:  # a caller that compressed it passes it as given: never compressed twice
            given, message, original = message, self.compress(message), message
        else:
            original = message
        tokens, analysis = (tokens, analysis) if message is original else (None, None)
        base = turn_from_message(message, len(self.turns), at=at)
        turn = Turn(
            id=id or base.id,
            index=base.index,
            role=base.role,
            text=base.text,
            speaker=speaker or base.speaker,
            at=at,
            extra=" ".join(x for x in (base.extra, extra) if x),
            message=message,
            analysis=analysis if not extra else None,
        )
        added = self.add_turn(turn, boundary=boundary, tokens=tokens)
        if given != message:
            self._given[turn.index] = (given, self.counter.count_message(given))
            self._groups_given = None
        if (
            self.policy.step_retrieval_share > 0
            and given.get("role") == "tool"
            and isinstance(given.get("content"), str)
        ):
            self.lines.add(turn.index, str(given["content"]))
        return added

    def add_turn(self, turn: Turn, *, boundary: bool = False, tokens: int | None = None) -> Turn:
        """Remember a prepared turn (its ``index`` must be the next position; ``tokens``: see :meth:`add`)."""
        if turn.index != len(self.turns):
            raise ValueError(f"turn {turn.id!r} has index {turn.index}, expected {len(self.turns)}")
        message = turn.message or {"role": turn.role, "content": turn.text}
        if turn.speaker and "name" not in message and turn.role in ("user", "assistant"):
            message, tokens = {**message, "name": _name(turn.speaker)}, None
        if turn.analysis is None:  # made once: the segmenter, the gate and the index read it
            turn = replace(turn, analysis=analyse(searchable(turn.text, turn.extra)))
        if self.first_user is None and turn.role == "user":
            self.first_user = turn.index
        for call in message.get("tool_calls") or ():  # what a result's tool is called, by call id
            if isinstance(call, Mapping) and isinstance(call.get("function"), Mapping):
                self._call_names[str(call.get("id"))] = str(call["function"].get("name") or "")[:60]
        self.turns.append(turn)
        self.messages.append(message)
        self.costs.append(self.counter.count_message(message) if tokens is None else tokens)
        self._groups = self._groups_given = None
        _, closed = self.segmenter.add(turn, self.costs[-1], boundary=boundary)
        if closed is not None:
            if self.policy.defer_summaries:
                self._unsettled.append(closed)
            else:
                self._close(closed)
        return turn

    def resume(self, live_from: int) -> None:
        """Go on with a conversation whose working memory began at turn ``live_from`` (e.g. stored).

        The next pack makes the head anew (one prompt-cache miss) but keeps working memory as it
        was, shrinking it only if it no longer fits: a reload is not a compaction step.
        """
        self.live_from = self.archived_upto = max(0, min(live_from, len(self.turns)))
        self.frame = None
        self._resuming = self.live_from > 0  # before any step, the first one is as usual

    def settled(self, segment: Segment) -> bool:
        """Whether a segment is open, or closed with its summary made (not waiting for :meth:`maintain`)."""
        return all(s is not segment for s in (*self._unsettled, *self._unnarrated))  # eq is slow

    def waiting(self) -> set[int]:
        """The ``id()`` of every segment not :meth:`settled` (one set for many questions)."""
        return {id(s) for s in (*self._unsettled, *self._unnarrated)}

    def restore(
        self,
        segment: Segment,
        header: str,
        summary: str,
        entities: Sequence[str],
        topic: str | None = None,
        outcome: str | None = None,
    ) -> None:
        """Settle a deferred segment with a trio made before (e.g. stored), without summarising again.

        The narrative is not updated: it was saved with the trio and is restored beside it.
        """
        segment.header, segment.summary, segment.entities = header, summary, tuple(str(e) for e in entities)
        segment.topic = topic or segment.topic
        segment.outcome = outcome or segment.outcome
        self._unsettled = [s for s in self._unsettled if s is not segment]

    def _settle(self, older_than: int | None = None) -> None:
        """Summarise closed segments still waiting (only those ending before ``older_than``, if given).

        More than ``backlog_trios`` waiting before ``older_than`` (a chat stored without its trios)
        is a backlog: only the summaries the head shows are made (not narrated: the narrative takes
        segments in order); :meth:`maintain` makes the rest, then the next pack makes the head anew.
        """
        while self._unnarrated:  # half-closed by maintain_step: in order, before any later segment
            self._narrate(self._unnarrated.pop(0))
        waiting = [seg for seg in self._unsettled if older_than is not None and seg.last < older_than]
        self.backlog = len(waiting) > self.policy.backlog_trios
        for seg in waiting[-self.policy.summary_segments :] if self.backlog else ():
            self._summarize(seg)
        if self.backlog:
            return
        keep: list[Segment] = []
        for seg in self._unsettled:
            if older_than is None or seg.last < older_than:
                self._close(seg)
            else:
                keep.append(seg)
        self._unsettled = keep

    def index(self, upto: int | None = None, *, force: bool = True) -> None:
        """Make turns before ``upto`` (default: all) searchable by retrieval.

        Rebuilding the search index costs time in proportion to the conversation, so between
        packs turns are indexed in batches (``force=False``): once the turns waiting are at least an
        eighth of those indexed. The few waiting are the newest of the old turns, which the
        summaries of recent segments cover meanwhile.
        """
        end = len(self.turns) if upto is None else min(upto, len(self.turns))
        done = len(self.retriever)
        if end - done <= 0 or (not force and not self._index_due(end)):
            return
        self.retriever.add(self.turns[done:end], self.gate.terms(done, end))  # tokenised once
        self.retriever.prepare()

    def _index_due(self, end: int | None = None) -> bool:
        """Whether the turns before ``end`` waiting for the index make a batch (see :meth:`index`)."""
        done = len(self.retriever)
        return (len(self.turns) if end is None else end) - done >= max(16, done // 8)

    def maintain(self) -> None:
        """Upkeep that can wait until an answer is delivered (the chat engine calls it after ``done``).

        Index rebuilds; with ``MemoryPolicy.defer_summaries``, summaries of segments that closed in
        the turn; a summary model's work that waited for it (:mod:`tierwise.memory.upkeep`).
        """
        while self.maintain_step():
            breathe()  # a long backlog (a long history's first upkeep): the event loop gets the lock

    def maintain_step(self) -> bool:
        """One piece of :meth:`maintain` (a trio, a narrative update, a model's work, the index).

        Whether more is left. The pieces run in :meth:`maintain`'s order, so the result is the same.
        """
        if self._unnarrated:
            self._narrate(self._unnarrated.pop(0))
            return True
        if self._unsettled:
            segment = self._unsettled.pop(0)
            self._summarize(segment)
            self._unnarrated.append(segment)
            return True
        if self.upkeep.redo(self, self._summarize):  # a model summary wanted on a request's path
            return True
        if self.upkeep.unmerged and self.upkeep.may_ask(self.summarizer):
            self.upkeep.merge(self)
        self.index(force=False)
        if self.backlog:  # the head was provisional: the next pack makes it anew, as after a reload
            self.backlog, self.frame, self._resuming = False, None, self.live_from > 0
        return False

    def points_back(self, mark: str) -> bool:
        """Whether a pack may point at what it left out.

        Archived turns, a stored result it sends compressed (one whose text has ``mark`` and no form
        as given to send instead), or a step cut to fit (:func:`~tierwise.memory.assemble.fit_step`).
        """
        if self.live_from > 0 or self.pointed:
            return True
        return any(t.role == "tool" and t.index not in self._given and mark in t.text for t in self.turns)

    @property
    def unsummarized(self) -> bool:
        """Whether closed segments wait for their trio or narrative update (:meth:`summarize_step`)."""
        return bool(self._unsettled or self._unnarrated)

    def summarize_step(self) -> bool:
        """One summary or narrative update :meth:`maintain` would make (in its order); whether more wait.

        What can run while a model answers, mid-turn: an agent loop closes many segments in one
        turn, and the next compaction step would otherwise make all their trios on the request path.
        """
        if self._unnarrated:
            self._narrate(self._unnarrated.pop(0))
        elif self._unsettled:
            segment = self._unsettled.pop(0)
            self._summarize(segment)
            self._unnarrated.append(segment)
        return bool(self._unnarrated or self._unsettled)

    def compress(self, message: Mapping[str, Any]) -> Mapping[str, Any]:
        """A tool message over the blob threshold as its compressed form (stored as a blob), else as given."""
        content = message.get("content")
        if self.blobs is None or message.get("role") != "tool" or not isinstance(content, str):
            return message
        if compressed_sha256(content) is not None:  # compressed already (a stored message, say)
            return message
        name = message.get("name") or self._call_names.get(str(message.get("tool_call_id")))
        result = compress_tool_result(
            str(name or "tool"),
            content,
            self.blobs,
            self.counter,
            threshold_tokens=self.policy.blob_threshold_tokens,
            scrubber=self.scrubber,
        )
        if isinstance(result, CompressedToolResult):
            return {**message, "content": result.render()}
        return message

    def _close(self, segment: Segment) -> None:
        self._summarize(segment)
        self._narrate(segment)

    def _summarize(self, segment: Segment) -> None:
        if not segment.summary:  # recall may have made it already
            before = getattr(self.summarizer, "deferred", 0)
            turns = self.turns[segment.first : segment.last + 1]
            make_trio(segment, turns, self.counter, self.summarizer, self.scrubber, **self._context(segment))
            self.upkeep.summarized(segment, self.summarizer, before)  # made on a request's path?

    def _context(self, segment: Segment) -> dict[str, Any]:
        """What a segment's trio is made against: the conversation's words and the segment before.

        And whether a summary model is sent the turns scrubbed (``policy.scrub_resent``).
        """
        previous = self.segments[segment.seq - 2] if segment.seq >= 2 else None
        context = {"vocabulary": self.vocabulary, "previous": previous, "embedder": self.retriever.embedder}
        return {**context, "scrub_input": self.policy.scrub_resent}

    def _narrate(self, segment: Segment) -> None:
        turns = self.turns[segment.first : segment.last + 1]
        self.narrative = self.narrative.update_from_segment(
            summary=segment.summary,
            header=segment.header,
            entities=segment.entities,
            texts=[(t.role, spoken(t.text)) for t in turns],
            counter=self.counter,
            scrubber=self.scrubber,
            at=segment.ended_at,
            topic=segment.topic,
            when=day_label(segment.started_at) or segment.id,
            speakers=[t.speaker for t in turns if t.speaker],
        )
        if self.upkeep.narrated(segment, self.summarizer):  # a summary model: merged into its prose
            self.upkeep.merge(self)

    # -- reading ---------------------------------------------------------------------------------

    def begin_turn(self) -> None:
        """Start a new model turn: the per-turn quota of full segments resets."""
        self._fulls_this_turn = 0

    def recall(self, ids: Sequence[str], form: Form = "summary") -> str:
        """Segments by id as header, summary or full text (what the ``recall_segments`` tool returns).

        At most ``fulls_per_turn`` full segments per turn; beyond that, summaries are returned with a
        note. Unknown ids get a message that lists the known range (:mod:`tierwise.memory.recall`).
        """
        return recall_segments(self, ids, form)

    def groups(self, as_given: bool = False) -> MessageGroups:
        """Tool-call groups over every remembered message (``as_given``: large tool results whole)."""
        if as_given and self._given:
            if self._groups_given is None:
                messages, costs = list(self.messages), list(self.costs)
                for i, (message, cost) in self._given.items():
                    messages[i], costs[i] = message, cost
                self._groups_given = MessageGroups(messages, costs)
            return self._groups_given
        if self._groups is None:
            self._groups = MessageGroups(self.messages, self.costs)
        return self._groups

    def message_ids(self, start: int, end: int) -> set[int]:
        """The ``id()`` of messages ``[start, end)``, in memory's form and as given."""
        return steps.message_ids(self, start, end)

    def window_groups(self) -> MessageGroups:
        """Messages as packs send them (:func:`tierwise.memory.steps.window_groups`).

        As given from :attr:`whole_from` on (within :attr:`whole_cap`), compressed before, superseded
        results as stubs, with their steps' notes. Before the first compaction step ``whole_from``
        is 0 and there is no cap: the conversation as given.
        """
        return steps.window_groups(self)

    def layers(
        self,
        query: str | None,
        budget: Budget,
        *,
        reserved: int = 0,
        requested: Sequence[tuple[str, Form]] = (),
        upto: int | None = None,
        caller: Sequence[ContextLayer] = (),
        max_messages: int | None = None,
        task: int | None = None,
    ) -> list[ContextLayer]:
        """Memory's layers for one pack, sized to fit ``budget`` minus ``reserved`` tokens.

        The layers are laid out for the provider's prompt cache (see :class:`Frame`): the head
        (narrative, headers, summaries) and working memory change only at a compaction step; what
        is chosen for this turn (retrieved turns, requested segments) goes in the tail. While the
        whole conversation fits, memory adds nothing: working memory is the conversation as given.

        Args:
            query: the current input (the newest user message) that retrieval ranks against.
            budget: the pack's budget.
            reserved: tokens the caller's fixed layers take (system prompt, tools, input).
            requested: ``(segment id, form)`` pairs the model asked for.
            upto: consider only turns before this index (the turn in progress, already remembered,
                travels in the caller's input layer instead).
            caller: the caller's other layers (profile, location, related). Those placed in the
                head are held as they were at the last step; a changed one is also sent, as it is
                now, in the tail. They are returned among memory's layers.
            max_messages: most messages working memory may hold (a pruning band's limit).
            task: a step of a turn in progress is packed (an agent loop's model call): the index of
                the turn's user message. Its completed steps are memory's turns like any other
                (``upto`` is the step being answered); working memory need not start on a user
                message, and the turn's and the conversation's first user messages are sent even
                when working memory has moved past them (the ``task`` layer).
        """
        counter, policy = self.counter, self.policy
        room = max(0, budget.available - reserved - 8)  # 8: the head message's framing
        n = len(self.turns) if upto is None else max(0, min(upto, len(self.turns)))
        heads = [layer for layer in caller if layer.form == "text" and layer.placement == "head"]
        others = [layer for layer in caller if layer not in heads]
        frame = self.frame
        groups = self.window_groups()
        window = groups.cost_between(self.live_from, n) if n else 0
        pin = steps.task_layer(self, task, budget.available)
        pinned = pin.tokens(counter) if pin is not None else 0
        if (
            frame is None
            or frame.available != budget.available
            or n < self.live_from
            or (max_messages is not None and n - self.live_from > max_messages)
            or (frame.stepped and window > frame.window)
            or window + pinned + _cost(frame.layers, counter) + _cost(frame.caller.values(), counter) > room
            or (not frame.stepped and window + _cost(heads, counter) > room)
            or (not frame.stepped and task is not None and self._past_first(room, heads, n, window))
        ):
            frame = self._step(room, heads, n, window, budget.available, max_messages, task)
            groups = self.window_groups()
            window = groups.cost_between(self.live_from, n) if n else 0
            pin = steps.task_layer(self, task, budget.available)
        out: list[ContextLayer] = list(frame.layers)
        for layer in heads:  # held as at the step; a changed one is also sent now, in the tail
            held = frame.caller.get(layer.id)
            if held is None or held.content != layer.content:
                out.append(_updated(layer, held))
        out.extend(frame.caller.values())
        out.extend(others)
        used = _cost(out, counter)
        for seg_id, form in requested:
            text = self.recall([seg_id], form)
            layer = ContextLayer(f"requested:{seg_id}", "retrieved", text, priority=4)
            out.append(layer)
            used += layer.tokens(counter) + 1
        start = self.live_from
        if query and start > 0 and task is None:
            tail_open = any(layer.form == "text" and layer.placement == "tail" for layer in out)
            framing = counter.count("\n\n") if tail_open else tail_opening(counter)
            leftover = room - used - window - framing - counter.count(_RETRIEVED_HEADING)
            opens = self.gate.opens(query, self.turns, start, n)
            allowance = leftover if opens else int(room * policy.retrieval_share)
            allowance = min(allowance, leftover)
            if allowance > 0:
                self.index(start, force=False)
                shown = {t.id for t in self.turns[start:]}
                label = self._excerpt_label
                picked = self.retriever.select(query, allowance, counter, exclude=shown, label=label)
                picked = [t for t in picked if t.index < start]
                if picked:
                    rendered = excerpt([resent_turn(self, t) for t in picked], label)
                    layer = ContextLayer("retrieved", "retrieved", "\n".join(rendered))
                    rendered[0] = layer.heading + rendered[0]
                    counter.count_joined(rendered, "\n")  # the turns' lines are counted already: cheap
                    out.append(layer)
        if pin is not None:
            out.append(pin)
        if start < n:
            out.append(ContextLayer("history", "history", groups.kept(start, n)))
        return out

    def _past_first(self, room: int, heads: Sequence[ContextLayer], n: int, window: int) -> bool:
        """Whether an agent loop's working memory has grown past its first step's interval."""
        interval = first_interval(self, room, _cost(heads, self.counter), n, window)
        return interval is not None and window > interval

    def _step(
        self,
        room: int,
        heads: Sequence[ContextLayer],
        n: int,
        window: int,
        available: int,
        max_messages: int | None,
        task: int | None = None,
    ) -> Frame:
        """A compaction step (:func:`tierwise.memory.compaction.compaction_step`)."""
        return compaction_step(self, room, heads, n, window, available, max_messages, task)

    @property
    def notes(self) -> dict[int, str]:
        """The notes of steps (:meth:`step_note`), by the message they end."""
        return {i: note for i, (note, _) in self._notes.items()}

    def step_note(self, step: str, at: int, budget: int) -> str:
        """Lines of earlier output a step's names find, kept with it (:func:`.steps.step_note`)."""
        return steps.step_note(self, step, at, budget)

    def _excerpt_label(self, turn: Turn) -> str:
        """The heading retrieved turns are shown under: their segment's id and their day."""
        firsts = self._segment_firsts
        if len(firsts) != len(self.segments):
            firsts[:] = [s.first for s in self.segments]
        seg = self.segments[max(0, bisect_right(firsts, turn.index) - 1)] if firsts else None
        parts = [p for p in (seg.id if seg else "", turn.at.date().isoformat() if turn.at else "") if p]
        return f"[{' · '.join(parts)}]" if parts else "[earlier]"

    def _headers(self, budget: int, before: int | None = None) -> str:
        """One line per segment (those begun before turn ``before``, if given), oldest collapsed."""
        return segment_headers(self, budget, before)


def _name(speaker: str) -> str:
    """An OpenAI ``name`` field: letters, digits, ``_`` and ``-`` only."""
    return "".join(c if c.isalnum() or c in "_-" else "_" for c in speaker)[:64]
