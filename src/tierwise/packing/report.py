"""What a pack is and what its report says.

The report answers, for every layer: how big it was, what it took, and if it was cut or left out,
why. Totals say how full the budget is and how many tokens packing saved against sending every
layer whole.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any, Literal

__all__ = ["LayerReport", "Pack", "PackReport"]

LayerStatus = Literal["kept", "truncated", "dropped"]


@dataclass(slots=True)
class LayerReport:
    """One layer's fate in a pack.

    ``tokens_full`` is the layer sent whole; ``tokens`` what it took in the pack (0 if dropped).
    For message layers, ``messages_full`` and ``messages`` count messages the same way.
    """

    id: str
    kind: str
    priority: int
    guaranteed: bool
    truncatable: bool
    tokens_full: int
    tokens: int
    status: LayerStatus
    reason: str | None = None
    notes: tuple[str, ...] = ()
    messages_full: int = 0
    messages: int = 0


@dataclass(slots=True)
class PackReport:
    """Totals and per-layer accounting of one pack.

    ``layers`` are listed in fill order; the drop order is its reverse.

    Attributes:
        budget: tokens the prompt may use (``window - reserve``).
        total_tokens: exact count of the pack's messages and tools, reply priming included.
        tokens_all_layers: what sending every layer whole would have cost.
        checksum: sha256 of the canonical pack (same inputs and seed → same checksum).
        prefix_tokens: tokens at the front of the pack that repeat the previous pack of the same
            chat (:func:`~tierwise.packing.prefix.shared_prefix`): what a provider's prompt cache
            can serve, the expected cache hit. ``None`` when there is no previous pack to compare
            with (a chat's first pack, a pack made outside a chat, or the first after a restart).
    """

    policy: str
    encoding: str
    window: int
    reserve: int
    budget: int
    total_tokens: int
    tokens_all_layers: int
    seed: str | None = None
    band: str | None = None
    health: float | None = None
    layers: tuple[LayerReport, ...] = field(default_factory=tuple)
    canonical: Callable[[], bytes] | None = field(default=None, repr=False, compare=False)
    prefix_tokens: int | None = None
    _memo: dict[str, str] = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def checksum(self) -> str:
        """sha256 of the canonical pack, computed on first use (hashing a big pack is not free)."""
        digest = self._memo.get("checksum")
        if digest is None:
            body = self.canonical() if self.canonical is not None else b""
            digest = self._memo["checksum"] = hashlib.sha256(body).hexdigest()
        return digest

    @property
    def utilisation(self) -> float:
        """Share of the budget the pack uses (0.0–1.0)."""
        return self.total_tokens / self.budget if self.budget else 0.0

    @property
    def tokens_saved(self) -> int:
        """Tokens not sent compared with sending every layer whole."""
        return max(0, self.tokens_all_layers - self.total_tokens)

    @property
    def prefix_share(self) -> float | None:
        """Share of the pack that repeats the previous one (``None`` without a previous pack)."""
        if self.prefix_tokens is None:
            return None
        return min(1.0, self.prefix_tokens / self.total_tokens) if self.total_tokens else 0.0

    @property
    def dropped(self) -> list[str]:
        """Ids of the layers left out."""
        return [r.id for r in self.layers if r.status == "dropped"]

    @property
    def truncated(self) -> list[str]:
        """Ids of the layers that went in cut."""
        return [r.id for r in self.layers if r.status == "truncated"]

    def layer(self, layer_id: str) -> LayerReport:
        """The report of the layer with ``layer_id``."""
        for r in self.layers:
            if r.id == layer_id:
                return r
        raise KeyError(layer_id)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict, derived totals included."""
        out: dict[str, Any] = {
            f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("canonical", "_memo")
        }
        out["checksum"] = self.checksum
        out["layers"] = [
            {f.name: getattr(r, f.name) for f in fields(r)} | {"notes": list(r.notes)} for r in self.layers
        ]
        out["utilisation"] = round(self.utilisation, 4)
        out["tokens_saved"] = self.tokens_saved
        share = self.prefix_share
        out["prefix_share"] = round(share, 4) if share is not None else None
        out["dropped"] = self.dropped
        out["truncated"] = self.truncated
        return out


@dataclass(slots=True)
class Pack:
    """The messages and tools to send, and the report on how they were chosen."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    report: PackReport

    @property
    def checksum(self) -> str:
        """sha256 over the canonical pack."""
        return self.report.checksum

    def to_dict(self) -> dict[str, Any]:
        """``{"messages", "tools", "report"}`` ready for JSON (``tools`` only if any)."""
        out: dict[str, Any] = {"messages": self.messages}
        if self.tools:
            out["tools"] = self.tools
        out["report"] = self.report.to_dict()
        return out
