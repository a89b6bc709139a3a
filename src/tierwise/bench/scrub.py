"""``tierwise bench scrub``: secret and PII recall per kind, false positives and cost per message.

Runs, in one process on the same texts, the scrubber as it is (:class:`tierwise.memory.scrub.Scrubber`),
the scrubber as it was at a git revision (``--before``, loaded from ``git show``), and the peer
detector alone (bc-detect-secrets' ad-hoc ``scan_line`` with every plugin, no verification):

- **recall per rule** on our test set (:mod:`tierwise.bench.scrub_corpus`): a sample counts as caught
  when every character of its secret lies inside a redaction (for the peer: inside a value it
  reports) — a secret half masked is not caught;
- **PII recall** per kind we claim (email, phone, card, IBAN);
- **false positives** on the peers'-style clean texts and on LoCoMo turns (a turn with any finding);
- **cost per message**: mean microseconds to scrub one LoCoMo turn (a fresh scrubber, no cache).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from tierwise.bench.scrub_corpus import FALSE_POSITIVES, Sample, pii_samples, secret_samples
from tierwise.memory.scrub import Scrubber

__all__ = ["locomo_turns", "report", "run"]

Caught = Callable[[Sample], bool]


def locomo_turns(path: Path, limit: int = 2000) -> list[str]:
    """The first ``limit`` dialogue turns of a LoCoMo JSON file, in order."""
    data = json.loads(path.read_text())
    turns: list[str] = []
    for sample in data:
        conversation = sample["conversation"]
        for key in sorted((k for k in conversation if k.startswith("session_") and k[8:].isdigit()),
                          key=lambda k: int(k[8:])):  # fmt: skip
            turns.extend(turn["text"] for turn in conversation[key] if turn.get("text"))
    return turns[:limit]


def _scrubber_caught(scrubber: Any) -> tuple[Caught, Callable[[str], bool]]:
    def caught(sample: Sample) -> bool:
        start = sample.text.find(sample.secret)
        end = start + len(sample.secret)
        covered = sorted(f.span for f in scrubber.scrub(sample.text).findings)
        at = start
        for s, e in covered:
            if s <= at < e:
                at = e
        return at >= end

    return caught, lambda text: bool(scrubber.scrub(text).findings)


def _before(revision: str) -> Any | None:
    """The scrub module as it was at ``revision`` (None outside a git checkout).

    Its helper modules (``scrub_detectors``, ``scrub_numbers``) are loaded from the same revision
    where they exist there, so the column is the scrubber of that revision, not a mix with today's.
    """
    source = _show(revision, "src/tierwise/memory/scrub.py")
    if source is None:
        return None
    for helper in ("scrub_numbers", "scrub_detectors"):
        helper_source = _show(revision, f"src/tierwise/memory/{helper}.py")
        if helper_source is not None:
            name = f"tierwise_before_{helper}"
            _module(name, helper_source, f"{revision}:{helper}.py")
            source = source.replace(f"tierwise.memory.{helper}", name)
    return _module("tierwise_scrub_before", source, f"{revision}:scrub.py")


def _show(revision: str, path: str) -> str | None:
    try:
        return subprocess.run(
            ["git", "show", f"{revision}:{path}"], capture_output=True, text=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None


def _module(name: str, source: str, label: str) -> Any:
    spec = importlib.util.spec_from_loader(name, loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    exec(compile(source, label, "exec"), module.__dict__)
    return module


def _peer() -> tuple[Caught, Callable[[str], bool]]:
    from detect_secrets.core.scan import scan_line
    from detect_secrets.settings import default_settings

    def values(text: str) -> list[str]:
        with default_settings() as settings:
            settings.disable_filters("detect_secrets.filters.common.is_ignored_due_to_verification_policies")
            return [str(s.secret_value) for line in text.splitlines() for s in scan_line(line)]

    return (lambda sample: any(sample.secret in v for v in values(sample.text))), (lambda t: bool(values(t)))


def _recall(samples: Iterable[Sample], caught: Caught) -> dict[str, list[int]]:
    per: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for sample in samples:
        per[sample.rule][1] += 1
        per[sample.rule][0] += caught(sample)
    return dict(per)


def _cost(scrub: Callable[[str], Any], turns: list[str]) -> float:
    start = time.perf_counter()
    for turn in turns:
        scrub(turn)
    return (time.perf_counter() - start) / max(1, len(turns)) * 1e6


def run(locomo: Path | None, before: str = "ee459e7", peer: bool = True) -> dict[str, Any]:
    """Measure every detector; the result is what :func:`report` prints and ``--json`` writes."""
    secrets = list(secret_samples())
    pii = list(pii_samples())
    turns = locomo_turns(locomo) if locomo is not None and locomo.exists() else []
    detectors: dict[str, tuple[Caught, Callable[[str], bool], Callable[[str], Any]]] = {}
    now = Scrubber()
    detectors["tierwise"] = (*_scrubber_caught(now), lambda t: Scrubber().scrub(t))
    old = _before(before)
    if old is not None:
        detectors[f"before ({before})"] = (
            *_scrubber_caught(old.Scrubber()),
            lambda t: old.Scrubber().scrub(t),
        )
    if peer:
        caught, flags = _peer()
        detectors["bc-detect-secrets"] = (caught, flags, flags)
    result: dict[str, Any] = {"samples": len(secrets), "rules": len({s.rule for s in secrets}),
                              "locomo_turns": len(turns), "detectors": {}}  # fmt: skip
    for name, (caught, flags, scrub) in detectors.items():
        rules = _recall(secrets, caught)
        kinds = _recall(pii, caught)
        fp_peers = sum(flags(t) for t in FALSE_POSITIVES)
        fp_locomo = [t for t in turns if flags(t)]
        result["detectors"][name] = {
            "secret_recall": sum(c for c, _ in rules.values()) / len(secrets),
            "rules_at_95": sum(c / n >= 0.95 for c, n in rules.values()),
            "families": {
                family: _share(rules, {s.rule for s in secrets if s.family == family})
                for family in ("unique", "keyword", "password")
            },
            "rules": {rule: c / n for rule, (c, n) in sorted(rules.items())},
            "pii": {kind: c / n for kind, (c, n) in sorted(kinds.items())},
            "fp_peers": fp_peers / len(FALSE_POSITIVES),
            "fp_locomo": len(fp_locomo),
            "fp_locomo_examples": fp_locomo[:5],
            "us_per_turn": _cost(scrub, turns[:500]) if turns else None,
        }
    return result


def _share(rules: dict[str, list[int]], names: set[str]) -> float:
    caught = sum(rules[r][0] for r in names if r in rules)
    total = sum(rules[r][1] for r in names if r in rules)
    return caught / total if total else 0.0


def report(result: dict[str, Any]) -> str:
    """Markdown: a summary per detector, then recall per rule side by side."""
    names = list(result["detectors"])
    lines = [
        f"{result['samples']} secret samples over {result['rules']} rules; "
        f"{result['locomo_turns']} LoCoMo turns.",
        "",
        "| | " + " | ".join(names) + " |",
        "|---|" + "---:|" * len(names),
    ]

    def row(label: str, fmt: Callable[[dict[str, Any]], str]) -> None:
        lines.append(f"| {label} | " + " | ".join(fmt(result["detectors"][n]) for n in names) + " |")

    row("secret recall", lambda d: f"{d['secret_recall']:.1%}")
    row("rules with recall ≥ 95%", lambda d: f"{d['rules_at_95']} / {result['rules']}")
    for family in ("unique", "keyword", "password"):
        row(f"  {family} rules", lambda d, f=family: f"{d['families'][f]:.1%}")  # type: ignore[misc]
    for kind in ("email", "phone", "card", "iban"):
        row(f"PII {kind}", lambda d, k=kind: f"{d['pii'].get(k, 0):.0%}")  # type: ignore[misc]
    row("false positives, clean texts", lambda d: f"{d['fp_peers']:.1%}")
    row("false positives, LoCoMo turns", lambda d: str(d["fp_locomo"]))
    row("µs per LoCoMo turn", lambda d: "-" if d["us_per_turn"] is None else f"{d['us_per_turn']:.0f}")
    lines += ["", "| rule | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]
    for rule in result["detectors"][names[0]]["rules"]:
        lines.append(
            f"| {rule} | " + " | ".join(f"{result['detectors'][n]['rules'][rule]:.0%}" for n in names) + " |"
        )
    return "\n".join(lines)
