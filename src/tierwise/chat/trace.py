"""Traces (seed 004's Harness Trace): spans and events, exportable as JSONL.

Context builds, model calls (with fallbacks), tool calls and compaction are recorded per turn.

A :class:`Tracer` records spans (name, start, duration, attributes, status) and point events, each
with the turn's trace id. If OpenTelemetry is installed and ``TIERWISE_OTEL`` is set, every finished
span is also emitted through the configured OpenTelemetry tracer provider.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tierwise.store import Store

__all__ = ["Span", "Tracer", "export_traces"]


@dataclass
class Span:
    """One timed operation (or a point event, with ``duration_ms == 0`` and ``kind == "event"``)."""

    trace_id: str
    name: str
    kind: str = "span"
    started_at: str = ""
    duration_ms: float = 0.0
    status: str = "ok"
    attributes: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the fields, the attributes copied one level (``asdict`` copies every level)."""
        return {
            "trace_id": self.trace_id,
            "name": self.name,
            "kind": self.kind,
            "started_at": self.started_at,
            "duration_ms": self.duration_ms,
            "status": self.status,
            "attributes": dict(self.attributes),
        }


class Tracer:
    """Collects the spans and events of one turn (or more)."""

    def __init__(self, trace_id: str | None = None) -> None:
        self.trace_id = trace_id or uuid.uuid4().hex
        self.spans: list[Span] = []
        self._otel: Any = _otel_tracer()

    @contextmanager
    def span(self, name: str, **attributes: Any) -> Iterator[Span]:
        """Time a block; exceptions mark the span as an error (and propagate)."""
        span = Span(
            self.trace_id, name, started_at=datetime.now(UTC).isoformat(), attributes=dict(attributes)
        )
        start = time.perf_counter()
        try:
            yield span
        except BaseException as exc:
            span.status = "error" if not isinstance(exc, GeneratorExit) else "cancelled"
            span.attributes.setdefault("error", f"{type(exc).__name__}: {exc}")
            raise
        finally:
            span.duration_ms = round((time.perf_counter() - start) * 1000, 3)
            self.spans.append(span)
            self._export(span)

    def event(self, name: str, **attributes: Any) -> None:
        """Record a point event."""
        span = Span(self.trace_id, name, "event", datetime.now(UTC).isoformat(), attributes=dict(attributes))
        self.spans.append(span)
        self._export(span)

    def to_jsonl(self) -> str:
        """One JSON object per line."""
        return "".join(json.dumps(s.to_dict(), default=str) + "\n" for s in self.spans)

    def write(self, path: Path) -> None:
        """Append the spans to a JSONL file."""
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as out:
            out.write(self.to_jsonl())

    def _export(self, span: Span) -> None:
        if self._otel is None:
            return
        with self._otel.start_as_current_span(span.name) as otel_span:  # pragma: no cover - optional
            for key, value in span.attributes.items():
                otel_span.set_attribute(
                    f"tierwise.{key}", value if isinstance(value, str | int | float | bool) else str(value)
                )
            otel_span.set_attribute("tierwise.duration_ms", span.duration_ms)


def _otel_tracer() -> Any:
    if not os.environ.get("TIERWISE_OTEL"):
        return None
    try:  # pragma: no cover - optional dependency
        from opentelemetry import trace  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return None
    return trace.get_tracer("tierwise")  # type: ignore[attr-defined,unused-ignore]  # pragma: no cover


def export_traces(store: Store, user_id: str, chat_id: str | None = None) -> str:
    """Every stored turn trace of a user (or one chat) as JSONL, oldest turn first.

    The chat engine stores each turn's spans in the audit log (event ``turn``); this writes them one
    span per line, the same shape as :meth:`Tracer.to_jsonl`, with the chat's id added.
    """
    lines = []
    for record in reversed(store.list_audit(user_id, chat_id=chat_id, event="turn")):
        for span in record.details.get("trace") or []:
            lines.append(json.dumps({**span, "chat_id": record.chat_id}, default=str) + "\n")
    return "".join(lines)
