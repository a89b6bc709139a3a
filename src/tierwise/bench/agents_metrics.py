"""What ``tierwise bench agents`` measures of each request: evidence, pointers, cost, pairing.

A *request* is what a contender would send before one assistant message of an agent trajectory
(:mod:`tierwise.bench.agents`). Per request:

* **action evidence** (:func:`evidence_items`, :func:`kept_items`): the pieces of the action taken
  next (the tool call's string arguments — for these trajectories the shell command) that the agent
  could only have read in an earlier tool result: each line, each quoted string and each side of a
  ``sed s/A/B/`` of at least 20 characters and 3 words, and each file path or dotted name of at least
  12 characters and 3 segments. An item counts only if an earlier tool result holds it verbatim and
  neither the system prompt nor the task does.
* **recall** (:func:`score_request`): the share of those items the request's text holds verbatim;
  *+ pointer* also counts an item whose source result the request points to through a tool it
  offers — the result's blob ``sha256`` with ``open_blob``, or the id of the segment holding it with
  ``recall_segments`` (the retrieval guide's "(S1, S2, …)" names no segment). *Named* counts the
  pointer whatever tools are offered (a reference the model could not follow).
* **effective input** (:func:`effective`): tokens billed when the prefix a request shares with the
  contender's previous request is cached at 10%.
* **pairing** (:func:`unpaired`): a tool result without its call, or a call without its result.

Then per budget and contender (:func:`summarize`): means over trajectories, printed as one table a
budget and written as JSON with a markdown table beside it (:func:`write_results`).
"""

from __future__ import annotations

import hashlib
import json
import re
import statistics
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from tierwise.chat.housekeeping import RETRIEVAL_GUIDE
from tierwise.memory.assemble import messages_text
from tierwise.packing.prefix import shared_prefix
from tierwise.store.checks import clean_text
from tierwise.tables import print_table
from tierwise.tokens import TokenCounter

__all__ = [
    "Request",
    "Score",
    "effective",
    "evidence_items",
    "kept_items",
    "markdown",
    "print_summary",
    "request_text",
    "score_request",
    "summarize",
    "unpaired",
    "write_results",
]

Message = Mapping[str, Any]

CACHED_RATE = 0.10

_TEXT_CHARS, _TEXT_WORDS = 20, 3
_NAME_CHARS, _NAME_WORDS = 12, 3
_QUOTED = re.compile(r"'([^']*)'|\"((?:[^\"\\]|\\.)*)\"")
_SED = re.compile(r"(?<![\w-])s([^\w\s\\])((?:\\.|(?!\1).)*)\1((?:\\.|(?!\1).)*)\1", re.DOTALL)
_NAME = re.compile(r"[\w./-]+")
_NAME_PARTS = re.compile(r"[/._-]+")
_NAMES_SOMETHING = re.compile(r"\w[./]\w")


@dataclass
class Request:
    """One request a contender built: what it sends, and what tierwise's memory held when it did.

    ``segments`` maps a trajectory message's index to the id of the memory segment holding it (the
    tierwise contenders only); ``ms`` is the time tierwise took to build the pack, if measured.
    """

    step: int
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] = field(default_factory=list)
    segments: dict[int, str] = field(default_factory=dict)
    ms: float | None = None


def _words(text: str) -> int:
    return len(text.split())


def _text_item(text: str) -> bool:
    return len(text) >= _TEXT_CHARS and _words(text) >= _TEXT_WORDS


def _names(text: str) -> Iterable[str]:
    for match in _NAME.finditer(text):
        name = match.group().strip("./-")
        if (
            len(name) >= _NAME_CHARS
            and _NAMES_SOMETHING.search(name)
            and len([p for p in _NAME_PARTS.split(name) if p]) >= _NAME_WORDS
        ):
            yield name


def argument_strings(message: Message) -> list[str]:
    """The string values of an assistant message's tool-call arguments (JSON decoded, nested too)."""
    out: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, Mapping):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    for call in message.get("tool_calls") or ():
        raw = (call.get("function") or {}).get("arguments") or ""
        try:
            walk(json.loads(raw))
        except (json.JSONDecodeError, TypeError):
            walk(raw)
    return out


def evidence_items(text: str) -> set[str]:
    """The candidate evidence items of one argument string (before the earlier-result check).

    Names are looked for with each ``sed`` expression read as its two sides.

    Example:
        >>> sorted(evidence_items("grep -n 'def _parse_value(self)' astropy/io/fits/card.py"))
        ['astropy/io/fits/card.py', "grep -n 'def _parse_value(self)' astropy/io/fits/card.py"]
        >>> sorted(evidence_items("sed -i 's/return self.value/return self._value or None/' a.py"))[:2]
        ['return self._value or None', 's/return self.value/return self._value or None/']
    """
    items: set[str] = set()
    for line in text.splitlines():
        line = line.strip()
        if _text_item(line):
            items.add(line)
    for match in _QUOTED.finditer(text):
        quoted = match.group(1) if match.group(1) is not None else match.group(2)
        if _text_item(quoted):
            items.add(quoted)
    for match in _SED.finditer(text):
        for side in (match.group(2), match.group(3)):
            if _text_item(side):
                items.add(side)
    items.update(_names(_SED.sub(lambda m: f" {m.group(2)} {m.group(3)} ", text)))
    return items


def kept_items(messages: Sequence[Message], i: int) -> dict[str, list[int]]:
    """The evidence items of the action at message ``i``, each with the earlier tool results holding it.

    Items the system prompt or the task (the first user message) holds are left out: the agent did
    not need a tool result for them.
    """
    message = messages[i]
    if message.get("role") != "assistant" or not message.get("tool_calls"):
        return {}
    candidates: set[str] = set()
    for text in argument_strings(message):
        candidates |= evidence_items(text)
    if not candidates:
        return {}
    given = [str(m.get("content") or "") for m in messages[:i] if m.get("role") == "system"]
    task = next((m for m in messages[:i] if m.get("role") == "user"), None)
    if task is not None:
        given.append(str(task.get("content") or ""))
    results = [
        (j, str(m.get("content") or "")) for j, m in enumerate(messages[:i]) if m.get("role") == "tool"
    ]
    kept: dict[str, list[int]] = {}
    for item in sorted(candidates):
        if any(item in text for text in given):
            continue
        sources = [j for j, text in results if item in text]
        if sources:
            kept[item] = sources
    return kept


def request_text(messages: Sequence[Message]) -> str:
    """Everything a request's messages say: contents; each tool call's name, arguments and their strings."""
    parts = [messages_text(messages)]
    for message in messages:
        parts.extend(argument_strings(message))
    return "\n".join(parts)


def blob_hashes(content: str) -> set[str]:
    """The sha256 a tool result is stored under as a blob (as given, and as the store cleans it)."""
    return {
        hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()
        for text in {content, clean_text(content)}
    }


def _tool_names(tools: Sequence[Mapping[str, Any]]) -> set[str]:
    return {str((t.get("function") or {}).get("name") or t.get("name") or "") for t in tools}


@dataclass
class Score:
    """Evidence items of one trajectory's actions, pooled: found verbatim, via an offered pointer, named."""

    items: int = 0
    verbatim: int = 0
    pointer: int = 0
    named: int = 0

    def add(self, other: Score) -> None:
        """Pool ``other`` into this score."""
        self.items += other.items
        self.verbatim += other.verbatim
        self.pointer += other.pointer
        self.named += other.named


def score_request(
    kept: Mapping[str, Sequence[int]],
    request: Request | None,
    messages: Sequence[Message],
    hashes: Mapping[int, set[str]],
) -> Score:
    """How many of ``kept`` (item → source results) ``request`` carries; none without a request."""
    score = Score(items=len(kept))
    if request is None or not kept:
        return score
    text = request_text(request.messages)
    named = text.replace(RETRIEVAL_GUIDE, "")  # the guide's "(S1, S2, …)" names no segment
    offered = _tool_names(request.tools)
    for item, sources in kept.items():
        if item in text:
            score.verbatim += 1
            score.pointer += 1
            score.named += 1
            continue
        blob = any(h in text for j in sources for h in hashes.get(j, ()))
        seg_ids = {request.segments[j] for j in sources if j in request.segments}
        segment = any(re.search(rf"\b{re.escape(s)}\b", named) for s in seg_ids)
        if (blob and "open_blob" in offered) or (segment and "recall_segments" in offered):
            score.pointer += 1
        if blob or segment:
            score.named += 1
    return score


def tokens(request: Request, counter: TokenCounter) -> int:
    """A request's tokens (messages and tool definitions, the reply's priming included)."""
    return counter.count_messages(request.messages) + counter.count_tools(request.tools)


def effective(requests: Iterable[Request | None], counter: TokenCounter) -> tuple[int, float]:
    """Tokens sent, and tokens billed with each request's prefix shared with the previous one at 10%.

    Steps without a request contribute nothing (and are skipped as the previous request).
    """
    sent, billed = 0, 0.0
    previous: tuple[list[dict[str, Any]], list[dict[str, Any]]] | None = None
    for request in requests:
        if request is None:
            continue
        total = tokens(request, counter)
        shared = min(shared_prefix(previous, request.messages, request.tools, counter), total)
        sent += total
        billed += total - shared + CACHED_RATE * shared
        previous = (request.messages, request.tools)
    return sent, billed


def unpaired(messages: Sequence[Message]) -> bool:
    """Whether a tool result lacks its call, or a call its result, in ``messages``."""
    calls: set[str] = set()
    answered: set[str] = set()
    for message in messages:
        if message.get("role") == "assistant":
            calls.update(str(c.get("id")) for c in message.get("tool_calls") or ())
        elif message.get("role") == "tool":
            call = str(message.get("tool_call_id"))
            if call not in calls:
                return True
            answered.add(call)
    return calls != answered


# -- reporting ----------------------------------------------------------------------------------------


def _percentile(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def summarize(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per budget and contender: means over trajectories (recall: of per-trajectory pooled recall)."""
    groups: dict[tuple[int, str], list[Mapping[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row["budget"], row["contender"]), []).append(row)
    out = []
    order = {c: k for k, c in enumerate(dict.fromkeys(r["contender"] for r in rows))}
    for (budget, contender), items in sorted(groups.items(), key=lambda kv: (kv[0][0], order[kv[0][1]])):
        scored = [r for r in items if r["items"]]
        ms = [m for r in items for m in r["pack_ms"]]
        chats = [r["chats"] for r in items if r["chats"] is not None]
        errors = [r["first_error"] for r in items if r["first_error"]]
        out.append(
            {
                "budget": budget,
                "contender": contender,
                "trajectories": len(items),
                "steps": sum(r["steps"] for r in items),
                "requests": sum(r["requests"] for r in items),
                "request_share_mean": statistics.fmean(r["request_share"] for r in items),
                "request_share_worst": min(r["request_share"] for r in items),
                "items": sum(r["items"] for r in items),
                "recall_verbatim": _mean(r["verbatim"] / r["items"] for r in scored),
                "recall_pointer": _mean(r["pointer"] / r["items"] for r in scored),
                "recall_named": _mean(r["named"] / r["items"] for r in scored),
                "vs_full": statistics.fmean(r["vs_full"] for r in items),
                "tokens_sent": sum(r["tokens_sent"] for r in items),
                "max_request": max(r["max_request"] for r in items),
                "unpaired_requests": sum(r["unpaired_requests"] for r in items),
                "pack_ms_p50": _percentile(ms, 0.50),
                "pack_ms_p95": _percentile(ms, 0.95),
                "chats_mean": statistics.fmean(chats) if chats else None,
                "chats_max": max(chats) if chats else None,
                "failed_steps": sum(r["errors"] for r in items),
                "an_error": errors[0] if errors else None,
            }
        )
    return out


def _mean(values: Iterator[float] | Sequence[float]) -> float | None:
    values = list(values)
    return statistics.fmean(values) if values else None


_COLUMNS = (
    ("budget", "right"),
    ("contender", "left"),
    ("steps that get a request (mean, worst)", "right"),
    ("recall verbatim / + pointer (named)", "right"),
    ("effective input vs full history", "right"),
    ("pack p50 / p95 ms", "right"),
    ("chats per trajectory", "right"),
    ("unpaired requests", "right"),
)


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value:.1%}"


def _cells(s: Mapping[str, Any]) -> list[str]:
    ms = (
        f"{s['pack_ms_p50']:.1f} / {s['pack_ms_p95']:.1f}"
        if s["pack_ms_p50"] is not None and s["pack_ms_p95"] is not None
        else "–"
    )
    chats = "–" if s["chats_mean"] is None else f"{s['chats_mean']:.2f} (max {s['chats_max']})"
    return [
        f"{s['budget']:,}",
        s["contender"],
        f"{s['request_share_mean']:.1%} ({s['request_share_worst']:.1%})",
        f"{_pct(s['recall_verbatim'])} / {_pct(s['recall_pointer'])} ({_pct(s['recall_named'])})",
        f"{s['vs_full']:.2f}×",
        ms,
        chats,
        str(s["unpaired_requests"]),
    ]


def print_summary(summary: Sequence[Mapping[str, Any]], console: Console) -> None:
    """The summary as rich tables, one per budget."""
    for budget in sorted({s["budget"] for s in summary}):
        table = Table(title=f"agent trajectories at {budget:,} tokens", title_justify="left")
        for col, justify in _COLUMNS:
            table.add_column(col, justify=justify)  # type: ignore[arg-type]
        for s in summary:
            if s["budget"] == budget:
                table.add_row(*_cells(s))
        print_table(console, table, keep=2)


def markdown(summary: Sequence[Mapping[str, Any]]) -> str:
    """The summary as one markdown table (tierwise's rows in bold)."""
    lines = ["| " + " | ".join(col for col, _ in _COLUMNS) + " |"]
    lines.append("|" + "|".join("---" if j == "left" else "---:" for _, j in _COLUMNS) + "|")
    for s in summary:
        cells = [c.replace("|", "\\|") for c in _cells(s)]  # "(human|ai)" is not a column
        if s["contender"].startswith("tierwise"):
            cells = [f"**{c}**" for c in cells]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _timings(row: Mapping[str, Any]) -> dict[str, Any]:
    """A row with its build times as their count, p50 and p95 (the summary pools the times)."""
    if "pack_ms" not in row:
        return dict(row)
    times = row["pack_ms"]
    out = {k: v for k, v in row.items() if k != "pack_ms"}
    out.update(
        packs_timed=len(times), pack_ms_p50=_percentile(times, 0.5), pack_ms_p95=_percentile(times, 0.95)
    )
    return out


def write_results(result: Mapping[str, Any], out: Path) -> None:
    """``out`` as JSON (each row's build times as p50 / p95) and the summary as markdown beside it."""
    out.parent.mkdir(parents=True, exist_ok=True)
    rows = [_timings(row) for row in result["rows"]]
    out.write_text(json.dumps({**result, "rows": rows}, indent=2) + "\n", encoding="utf-8")
    errors = [(s["budget"], s["contender"], s["an_error"]) for s in result["summary"] if s["an_error"]]
    notes = "".join(f"- {b:,} · {c}: “{e}”\n" for b, c, e in errors)
    out.with_suffix(".md").write_text(
        "# Agent trajectories: what each contender sends per model call\n\n"
        f"`tierwise bench agents --out {out}` ({result['generated']}, {result['encoding']}, "
        f"{len(result['trajectories'])} trajectories, {result['seconds']} s); what the columns mean: "
        "bench/README.md (“`tierwise bench agents`”).\n\n"
        + markdown(result["summary"])
        + ("\nOne refusal per budget and contender, as tierwise gave it:\n\n" + notes if notes else ""),
        encoding="utf-8",
    )
