"""The cost guard's check with a long spending history, against the full scan it replaced.

A store (a SQLite file, or the PostgreSQL database given) gets one user with ``rows`` turns' worth
of spending, recorded as the chat engine and the endpoint record it: per turn a ``usage`` entry
(:meth:`~tierwise.store.Store.record_usage`: the audit entry and its indexed row) beside the
``turn`` and ``pack`` audit entries every turn leaves (and a neighbour has as many). Half the turns
are in the session's chat, the rest spread over 50 others; three quarters fall in the current
month. Then, interleaved in the
same run, each contender answers "may this turn go ahead?" ``repeat`` times:

- **tierwise**: :meth:`CostGuard.check` with session and monthly limits set — one SQL aggregate
  over the chat's and the month's rows (:meth:`~tierwise.store.Store.usage_totals`);
- **full scan** (the peer): the same check on the ledger it replaced, which read every ``usage``
  audit entry the user ever made and summed them in Python.

Both must give the same spend (checked before timing). Results: ``bench/results/costguard.md``.
"""

from __future__ import annotations

import gc
import json
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from tierwise.chat.costguard import CostGuard, Limits, Spend, StoreLedger
from tierwise.store import Store
from tierwise.store.engine import normalize_url
from tierwise.store.models import AuditEntry, UsageEntry, new_id

__all__ = ["TARGET_MS", "FullScanLedger", "main", "run"]

TARGET_MS = 5.0
_AUDIT: sa.Table = AuditEntry.__table__  # type: ignore[assignment]
_USAGE: sa.Table = UsageEntry.__table__  # type: ignore[assignment]
_LIMITS = Limits(session_tokens=10**12, session_dollars=1e9, month_tokens=10**12, month_dollars=1e9)


class FullScanLedger(StoreLedger):
    """The ledger before issue 16: every ``usage`` audit entry of the user, summed in Python."""

    def spend(self, user_id: str, chat_id: str, month_start: datetime) -> Spend:
        """Sum the session's and the user's month from the whole audit log."""
        st = mt = 0
        sd = md = 0.0
        for event in self.store.list_audit(user_id, event="usage"):
            tokens = int(event.details.get("tokens", 0))
            dollars = float(event.details.get("dollars", 0.0))
            if event.chat_id == chat_id:
                st, sd = st + tokens, sd + dollars
            if event.created_at >= month_start:
                mt, md = mt + tokens, md + dollars
        return Spend(st, sd, mt, md)


def _fill(store: Store, rows: int, now: datetime) -> tuple[str, str]:
    """A user with ``rows`` turns of spending (usage rows and the turns' other audit entries).

    A neighbour with as many is stored too, so the database must find the user's rows.
    """
    month = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    usage: list[dict[str, Any]] = []
    audit: list[dict[str, Any]] = []
    for name in ("neighbour", "bench"):
        user = store.create_user(name).id
        chat = store.create_chat(user, title="long-running").id
        _turns(user, chat, rows, month, usage, audit)
    with store.engine.begin() as connection:  # as record_usage() writes them, in bulk
        connection.execute(sa.insert(_AUDIT), audit)
        connection.execute(sa.insert(_USAGE), usage)
    # What a live database's autovacuum (PostgreSQL) or `PRAGMA optimize` (SQLite) has done by then.
    postgres = store.engine.dialect.name == "postgresql"
    with store.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        connection.exec_driver_sql("VACUUM ANALYZE" if postgres else "ANALYZE")
    return user, chat


def _turns(
    user: str, chat: str, rows: int, month: datetime, usage: list[dict[str, Any]], audit: list[dict[str, Any]]
) -> None:
    for i in range(rows):
        at = month + timedelta(seconds=i) if i % 4 else month - timedelta(minutes=i + 1)
        in_chat = chat if i % 2 else new_id() if i % 100 == 0 else f"other-{i % 50}"
        tokens, dollars = 800 + i % 400, round((800 + i % 400) * 2.5e-6, 6)
        usage_id = new_id()
        usage.append(
            {"id": usage_id, "user_id": user, "chat_id": in_chat, "tokens": tokens, "dollars": dollars}
            | {"cached_tokens": 0, "created_at": at}
        )
        details = {"tokens": tokens, "dollars": dollars, "cached_tokens": 0}
        for event, what in (("usage", details), ("pack", {"total_tokens": tokens}), ("turn", {"steps": 1})):
            audit.append(
                {"id": usage_id if event == "usage" else new_id(), "user_id": user, "chat_id": in_chat}
                | {"event": event, "checksum": None, "details": what, "created_at": at}
            )


def _stats(samples: Sequence[float]) -> dict[str, float]:
    ordered = sorted(samples)

    def rank(q: float) -> float:  # the nearest rank
        return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]

    return {
        "p50_ms": round(statistics.median(ordered), 3),
        "p95_ms": round(rank(0.95), 3),
        "p99_ms": round(rank(0.99), 3),
        "mean_ms": round(statistics.fmean(ordered), 3),
    }


def _time(check: Callable[[], None]) -> float:
    start = time.perf_counter_ns()
    check()
    return (time.perf_counter_ns() - start) / 1e6


def _measure(url: str, rows: int, repeat: int, peer_repeat: int) -> dict[str, Any]:
    now = datetime.now(UTC)
    with Store.open(url) as store:
        user, chat = _fill(store, rows, now)
        guard = CostGuard(_LIMITS, StoreLedger(store))
        peer = CostGuard(_LIMITS, FullScanLedger(store))
        ours, theirs = guard.spend(user, chat, now), peer.spend(user, chat, now)
        same = (ours.session_tokens, ours.month_tokens) == (theirs.session_tokens, theirs.month_tokens)
        if not same or abs(ours.month_dollars - theirs.month_dollars) > 1e-6:
            raise AssertionError(f"the contenders disagree: {ours} vs {theirs}")
        guard.check(user, chat)  # warm both (statement caches, pages)
        peer.check(user, chat)
        tierwise: list[float] = []
        full: list[float] = []
        for i in range(repeat):  # interleaved: the peer every (repeat // peer_repeat)-th round
            tierwise.append(_time(lambda: guard.check(user, chat)))
            if len(full) < peer_repeat and i % max(1, repeat // peer_repeat) == 0:
                full.append(_time(lambda: peer.check(user, chat)))
                gc.collect()  # the peer's 10,000 records are not left for the next check to collect
        backend = store.engine.dialect.name
    return {
        "backend": backend,
        "usage_rows": rows,
        "session_rows": sum(1 for i in range(rows) if i % 2),
        "month_rows": sum(1 for i in range(rows) if i % 4),
        "tierwise": {"runs": len(tierwise), **_stats(tierwise)},
        "full_scan": {"runs": len(full), **_stats(full)},
        "spend": {"session_tokens": ours.session_tokens, "month_tokens": ours.month_tokens},
    }


def _markdown(results: list[dict[str, Any]], machine: str) -> str:
    lines = [
        "| backend | usage rows | contender | runs | p50 ms | p95 ms | p99 ms | mean ms |",
        "| :--- | ---: | :--- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in results:
        for name in ("tierwise", "full_scan"):
            s = r[name]
            label = "tierwise (one SQL aggregate)" if name == "tierwise" else "full scan (before)"
            lines.append(
                f"| {r['backend']} | {r['usage_rows']:,} | {label} | {s['runs']} | {s['p50_ms']:.3f} | "
                f"{s['p95_ms']:.3f} | {s['p99_ms']:.3f} | {s['mean_ms']:.3f} |"
            )
    verdicts = [
        f"{r['backend']}, {r['usage_rows']:,} rows: p95 {r['tierwise']['p95_ms']:.2f} ms "
        f"({'met' if r['tierwise']['p95_ms'] < TARGET_MS else 'missed'}; full scan p50 "
        f"{r['full_scan']['p50_ms']:.1f} ms, "
        f"{r['full_scan']['p50_ms'] / max(r['tierwise']['p50_ms'], 1e-9):,.0f}× slower)"
        for r in results
    ]
    note = (
        "A cost-guard check (`CostGuard.check`, session and monthly limits set) for a user whose "
        "usage rows are all in the store, with each turn's `turn` and `pack` audit entries beside them "
        "(and another user with as many); "
        "half the rows in the checked chat, three quarters in the current month. Contenders interleaved "
        "in one run (garbage collected after each full scan, untimed); both computed the same spend first; "
        "the tables analysed (and on PostgreSQL vacuumed, as autovacuum would) after the bulk insert."
    )
    return (
        f"{machine}\n\n" + "\n".join(lines) + f"\n\n{note}\n\nTarget: a check with 10,000 usage rows "
        f"< {TARGET_MS:g} ms — " + "; ".join(verdicts) + ".\n"
    )


def run(
    *,
    rows: int = 10_000,
    repeat: int = 500,
    peer_repeat: int = 20,
    database_url: str | None = None,
    out: Path | None = None,
) -> dict[str, Any]:
    """Time the cost guard's check beside the full scan, on SQLite (and PostgreSQL if a URL is given).

    Args:
        rows: usage rows (turns) the user has.
        repeat: timed checks of tierwise's guard.
        peer_repeat: timed checks of the full scan (slow: fewer), interleaved.
        database_url: also run on this (empty, disposable) PostgreSQL database.
        out: write the results as JSON there and a markdown table beside it (``.md``).
    """
    if rows < 1 or repeat < 1 or peer_repeat < 1:
        raise ValueError("rows, repeat and peer_repeat must each be 1 or more")
    if database_url is not None:
        normalize_url(database_url)  # a URL tierwise cannot use fails before anything runs
    machine = (
        f"python {platform.python_version()} · {platform.platform()} · {os.cpu_count()} CPUs · "
        f"SQLAlchemy {sa.__version__}"
    )
    print(machine)
    results = []
    with tempfile.TemporaryDirectory(prefix="tierwise-bench-costguard-") as tmp:
        urls = [f"sqlite:///{Path(tmp) / 'bench.db'}"] + ([database_url] if database_url else [])
        for url in urls:
            result = _measure(url, rows, repeat, peer_repeat)
            print(json.dumps(result))
            results.append(result)
    body: dict[str, Any] = {
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine,
    }
    body |= {"target_ms": TARGET_MS, "results": results}
    markdown = _markdown(results, machine)
    print(markdown)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(body, indent=2) + "\n", encoding="utf-8")
        out.with_suffix(".md").write_text(markdown, encoding="utf-8")
    return body


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m tierwise.bench.costguard [--rows N] [--repeat N] [--database-url URL] [--out FILE]``."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m tierwise.bench.costguard", description="The cost guard's check with a long history."
    )
    parser.add_argument("--rows", type=int, default=10_000, help="usage rows (turns) of the user")
    parser.add_argument("--repeat", type=int, default=500, help="timed checks of tierwise's guard")
    parser.add_argument("--peer-repeat", type=int, default=20, help="timed checks of the full scan")
    parser.add_argument("--database-url", default=None, help="also run on this empty PostgreSQL database")
    parser.add_argument("--out", type=Path, default=None, help="write JSON here and markdown beside it")
    args = parser.parse_args(argv)
    try:
        run(
            rows=args.rows,
            repeat=args.repeat,
            peer_repeat=args.peer_repeat,
            database_url=args.database_url,
            out=args.out,
        )
    except ValueError as exc:
        parser.error(str(exc))


if __name__ == "__main__":  # pragma: no cover
    main()
