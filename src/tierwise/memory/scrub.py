"""PII and secret scrubbing for text memory keeps (summaries, narratives, compressed tool results).

:class:`Scrubber` finds personal data and credentials and replaces each with a typed placeholder;
:class:`ScrubResult` carries the redacted text and one :class:`Finding` (kind, span, rule) per
redaction — never the secret itself, so findings can go to an audit log; a scrubber also totals
its redactions per kind (:attr:`Scrubber.counts`, drained by :meth:`Scrubber.take_counts`).

What is caught (placeholder in brackets):

- ``[email]`` addresses ``local@domain.tld`` (also a punycode ``xn--…`` top-level domain).
- ``[phone]`` international numbers (``+44 20 7946 0958``, ``+1 (555) 123-4567``, 7–15 digits) and
  common national formats: North American ``555-123-4567`` / ``(555) 123-4567`` / ``1-800-555-0199``,
  trunk-prefixed ``020 7946 0958`` / ``030 12345678``, French ``01 23 45 67 89``; written without
  separators (``5551234567``, ``15551234567``, ``07700900123``) only right after a phone word
  (``call me at``, ``my number is``, ``tel:``, ``"phone": "``), not a date-like ``20YYMMDDhh``.
- ``[card]`` payment cards passing the Luhn check and starting with 2–6 (the major networks):
  13–19 digits grouped by one kind of separator (space or dash, first group of four, groups of 3+),
  or 15–16 digits written plain (longer and shorter plain runs are mostly ids and seeds), and two
  short forms: Diners Club's 14 digits (``30[0-5]``, ``36``, ``38``, ``39``) and UATP's 15 starting
  with 1 right after a card's word (``my credit card: 1220…``).
- ``[iban]`` IBANs, compact or in groups of four, upper- or lower-case (not mixed), for countries
  with a known IBAN length, passing the ISO 7064 mod-97 check.
- ``[api-key]`` OpenAI ``sk-…`` / ``sk-proj-…``, Anthropic ``sk-ant-…``, AWS ``AKIA…`` / ``ASIA…`` and
  the value of ``aws_secret_access_key = …``, Google ``AIza…``, Stripe ``sk_live_`` / ``rk_live_``
  (and ``_test_``), SendGrid ``SG.<16–32>.<16–64>``, the value of ``api_key = …``.
- ``[token]`` GitHub ``ghp_ gho_ ghu_ ghs_ ghr_ github_pat_``, Slack ``xoxa- xoxb- xoxp- xoxr- xoxs-``,
  Hugging Face ``hf_`` / ``api_org_`` (30+ characters), GitLab ``glpat- gldt- glrt- glptt- glft-``
  (20+), both with mixed case or digits (``glpat-xxxxxxxxxxxxxxxxxxxx`` is a sample), the token after
  ``Bearer``, the value of ``access_token = …`` / ``auth_token: …``.
- ``[jwt]`` JSON web tokens (``eyJ…`` header, three base64url parts).
- ``[private-key]`` PEM private keys (RSA, EC, OPENSSH, ENCRYPTED, PGP …), from ``BEGIN`` to ``END``;
  a key cut off before its ``END`` line is redacted to the end of its base64 body.
- ``[password]`` the value (only), whole whatever symbols it holds and however long, of
  ``password=``, ``passwd:``, ``pwd=``, ``secret=``, ``passphrase:`` assignments, also with
  prefixes and suffixes (``DB_PASSWORD``, ``client_secret``, JSON ``"password": "…"``), the password
  in a URL (``https://user:pw@host``), of ``curl -u user:pw``, ``mysql -pPW``, ``--password x``.
  Values that are code rather than secrets are kept: ``self.x``, ``snake_case`` names, calls,
  ``$ENV`` references, types and plain words (``password: str``, ``api_key=api_key``,
  ``secret = getpass()``). In prose, the secret only: ``my password is hunter2``, ``pw is …``; an
  unquoted value after ``is`` must not read as a word. And the password of a ``user / password``
  pair with lower case and two of upper case, digits, symbols (``admin / P@ss``).
- Beyond these, the detectors of :mod:`tierwise.memory.scrub_detectors` (ARCHITECTURE decision 76):
  bc-detect-secrets' vendor plugins, ~140 vendor token prefixes (modelled on gitleaks' rules),
  any name holding a keyword of detect-secrets' list (``stripeToken = …``, ``export TOKEN=…``,
  ``<apiKey>…</apiKey>``, ``var x string = …``, ``X_TOKEN ?= …``, ``setProperty("X_TOKEN", "…")``),
  ``Authorization: Basic …`` / ``Api-Token …``, webhook URLs, Azure AD client secrets, Facebook
  app and Telegram bot tokens, and high-entropy unquoted runs. A value reading as a documented
  sample is kept (``ghp_xxxx…``, ``PUT_YOUR_TOKEN_HERE``, ``curl -u user:pass``).
  Recall per rule on our own test set: ``tierwise bench scrub`` (``bench/results/scrub.md``).

What is not caught: names, postal addresses, dates of birth, national id numbers, IP addresses;
phone numbers written without separators and without a phone word before them (``order
5551234567``), or as 7-digit local numbers (``555-0199``); cards starting with 0, 1 (but UATP after
a card's word) or 7–9, failing Luhn, or plain 13/17–19-digit runs; mixed-case IBANs; a random value
with no vendor prefix, no keyword name and too little entropy; passwords that read as a word in
prose (``my password is swordfish``, unless quoted) or paired compactly (``admin/x``).

Kept on purpose (false positives avoided): dates and times (``2026-10-13``, ``10:30``,
``2026-10-13T10:30:00Z``), versions (``v1.2.3``), prices (``$1,850``), standard numbers
(``ISO 8601``), IP addresses, UUIDs, epoch timestamps (``ts=1700000000``), decimals (``+35236450.6``,
``1.602 176 6208``), citations (``(1982) 171-184``), ARNs (``…:secret:name``), digit runs that fail
the checks.

An *allowlist* keeps exact strings wherever they occur, findings a regex matches in full, and emails
of given domains — with anything found inside them. Overlapping findings resolve to the longest
(then the earliest, then the rule listed first). Every pattern is linear-time: no nested unbounded
quantifiers, possessive quantifiers where a pattern could backtrack, and each pattern anchors on a
non-word boundary so a long run of characters is tried once, not at every offset.

Example:
    >>> Scrubber().scrub_text("Mail jane.doe@acme.io, key sk-proj-AbC123dEf456GhI789jKl012")
    'Mail [email], key [api-key]'
"""

from __future__ import annotations

import bisect
import re
import threading
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from tierwise.memory.scrub_rules import KINDS, NEEDLES, RULES, Span
from tierwise.memory.scrub_samples import sample

__all__ = ["KINDS", "Finding", "ScrubResult", "Scrubber", "scrub_text"]

_RULES, _NEEDLES = RULES, NEEDLES  # (tests read them here)


@dataclass(frozen=True, slots=True)
class Finding:
    """One redaction: what kind of data was found and where (offsets into the original text).

    Attributes:
        kind: one of :data:`KINDS` (``"email"``, ``"api-key"`` …); the placeholder is ``[kind]``.
        start: offset of the first redacted character in the original text.
        end: offset just past the last redacted character.
        rule: the rule that found it (``"openai"``, ``"phone-intl"`` …), for audit logs.
    """

    kind: str
    start: int
    end: int
    rule: str

    @property
    def span(self) -> Span:
        """``(start, end)``, as in :meth:`re.Match.span`."""
        return (self.start, self.end)


@dataclass(frozen=True, slots=True)
class ScrubResult:
    """The redacted text and what was redacted.

    Attributes:
        text: the text with every finding replaced by its ``[kind]`` placeholder.
        findings: the redactions in text order; spans refer to the original text.
    """

    text: str
    findings: tuple[Finding, ...]

    def counts(self) -> dict[str, int]:
        """Number of findings per kind, e.g. ``{"email": 2}``."""
        return dict(Counter(f.kind for f in self.findings))


_SECRET_KINDS = frozenset(("private-key", "jwt", "api-key", "token", "password"))  # samples kept
_CLEAN_LENGTH, _CLEAN_TEXTS = 256, 16_384  # the clean texts a scrubber remembers (Scrubber.scrub_text)


class Scrubber:
    """Finds PII and secrets in text and replaces them with typed placeholders.

    Args:
        allow: what is never redacted, e.g. a public support address or a documented test key.
            An exact string is kept wherever it occurs, with anything found inside it; a compiled
            regex keeps a finding it matches in full (and anything found inside that finding).
        allow_email_domains: email domains kept as they are, with their subdomains
            (``"example.com"`` keeps ``a@example.com`` and ``b@mail.example.com``).
        kinds: only redact these kinds (default: all of :data:`KINDS`).

    Raises:
        ValueError: ``kinds`` names a kind that does not exist.

    Example:
        >>> s = Scrubber(allow_email_domains=["example.com"])
        >>> s.scrub_text("Write to help@example.com or bob@corp.io, +1 (555) 123-4567, DB_PASSWORD=hunter2")
        'Write to help@example.com or [email], [phone], DB_PASSWORD=[password]'
        >>> [(f.kind, f.span) for f in s.scrub("call 020 7946 0958").findings]
        [('phone', (5, 18))]
    """

    def __init__(
        self,
        allow: Iterable[str | re.Pattern[str]] = (),
        *,
        allow_email_domains: Iterable[str] = (),
        kinds: Iterable[str] | None = None,
    ) -> None:
        allowed = list(allow)
        self._allow_exact = tuple(sorted({a for a in allowed if isinstance(a, str) and a}))
        self._allow_patterns = tuple(a for a in allowed if isinstance(a, re.Pattern))
        self._allow_domains = tuple(d.lower().lstrip("@.") for d in allow_email_domains)
        wanted = set(KINDS if kinds is None else kinds)
        unknown = wanted - set(KINDS)
        if unknown:
            raise ValueError(f"unknown kinds {sorted(unknown)}; choose from {', '.join(KINDS)}")
        self._rules = tuple(rule for rule in _RULES if rule.kind in wanted)
        self._needles = tuple(_NEEDLES.get(rule.name, ()) for rule in self._rules)
        self._counts: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._clean: dict[str, None] = {}  # short texts scrub_text found nothing in

    @property
    def counts(self) -> dict[str, int]:
        """Redactions per kind made by this scrubber so far (or since :meth:`take_counts`)."""
        with self._lock:
            return dict(self._counts)

    def take_counts(self) -> dict[str, int]:
        """Redactions per kind since the last call (``{"phone": 1}``), for an audit entry; resets them."""
        with self._lock:
            taken, self._counts = dict(self._counts), Counter()
        return taken

    def _allowed(self, kind: str, value: str) -> bool:
        if value in self._allow_exact or any(p.fullmatch(value) for p in self._allow_patterns):
            return True
        if kind == "email" and self._allow_domains:
            domain = value.rpartition("@")[2].lower()
            return any(domain == d or domain.endswith("." + d) for d in self._allow_domains)
        return False

    def scrub(self, text: str) -> ScrubResult:
        """Redact ``text``: every finding becomes ``[kind]``; the result lists what was found where.

        Args:
            text: any text; the same text always gives the same result.

        Returns:
            The redacted text and its findings (kind, span in ``text``, rule), in text order.
        """
        candidates: list[tuple[int, int, int]] = []  # (start, end, rule index)
        protected: list[Span] = [
            (m.start(), m.end()) for a in self._allow_exact for m in re.finditer(re.escape(a), text)
        ]
        lowered = text.lower() if text.isascii() else None  # beyond ASCII, every rule runs
        present: dict[tuple[str, ...], bool] = {}
        for index, rule in enumerate(self._rules):
            needles = self._needles[index]
            if lowered is not None and needles:
                found = present.get(needles)
                if found is None:
                    found = present[needles] = any(needle in lowered for needle in needles)
                if not found:
                    continue  # nothing this rule matches can be in the text
            for start, end in rule.scan(text):
                if rule.kind in _SECRET_KINDS and sample(text, start, end, rule.kind, rule.name):
                    continue  # ``ghp_xxxx…``, ``AKIA…EXAMPLE``, ``sk-ant-abc123…``: a sample, no secret
                if self._allowed(rule.kind, text[start:end]):
                    protected.append((start, end))
                else:
                    candidates.append((start, end, index))
        if protected:
            candidates = _outside(candidates, protected)
        # Longest first, then earliest, then the rule listed first; keep what does not overlap.
        candidates.sort(key=lambda c: (c[0] - c[1], c[0], c[2]))
        starts: list[int] = []
        kept: list[tuple[int, int, int]] = []
        for start, end, index in candidates:
            at = bisect.bisect_right(starts, start)
            if (at and kept[at - 1][1] > start) or (at < len(kept) and kept[at][0] < end):
                continue
            starts.insert(at, start)
            kept.insert(at, (start, end, index))
        findings = tuple(Finding(self._rules[i].kind, s, e, self._rules[i].name) for s, e, i in kept)
        if findings:
            with self._lock:
                self._counts.update(f.kind for f in findings)
        parts: list[str] = []
        last = 0
        for finding in findings:
            parts.append(text[last : finding.start])
            parts.append(f"[{finding.kind}]")
            last = finding.end
        parts.append(text[last:])
        return ScrubResult("".join(parts), findings)

    def scrub_text(self, text: str) -> str:
        """Only the redacted text of :meth:`scrub`.

        A short text found clean is remembered and not scanned again: memory scrubs the same
        header, name or phrase many times as it makes its layers (nothing found, nothing counted).
        """
        if text in self._clean:
            return text
        result = self.scrub(text)
        if not result.findings and len(text) <= _CLEAN_LENGTH:
            if len(self._clean) >= _CLEAN_TEXTS:
                self._clean.clear()
            self._clean[text] = None
        return result.text


def _outside(candidates: list[tuple[int, int, int]], protected: list[Span]) -> list[tuple[int, int, int]]:
    """Candidates not lying wholly inside an allowed span."""
    merged: list[list[int]] = []
    for start, end in sorted(protected):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    starts = [m[0] for m in merged]
    kept = []
    for candidate in candidates:
        at = bisect.bisect_right(starts, candidate[0]) - 1
        if at < 0 or merged[at][1] < candidate[1]:
            kept.append(candidate)
    return kept


_DEFAULT = Scrubber()


def scrub_text(text: str) -> str:
    """``text`` with every finding of the default :class:`Scrubber` replaced by its placeholder.

    Example:
        >>> scrub_text("token ghp_0123456789abcdefghijABCDEFGHIJ012345 for ops@corp.example")
        'token [token] for [email]'
    """
    return _DEFAULT.scrub_text(text)
