"""Which found secrets are documented samples rather than secrets, for :mod:`tierwise.memory.scrub`.

A rule finds a value shaped like a secret; :func:`sample` then says whether it is a documented
sample or no secret at all, to be kept (ARCHITECTURE decision 76, issue 32). Only checks a generated
key cannot fail are here: the peers' own true positives are written by hand too (``12345678-ABCD-…``,
``AGE-SECRET-KEY-1QQQ…``, ``sk-ant-api03-abc123xyz…``), so "counts through the alphabet" or "low
entropy" would cost recall the peers measure, and is left out.

- a **placeholder** (:func:`tierwise.memory.scrub_detectors.placeholder`: ``ghp_xxxx…``,
  ``PUT_YOUR_TOKEN_HERE``), and AWS's documented ``AKIA…EXAMPLE`` / ``…EXAMPLEKEY`` (gitleaks'
  allowlist); Stripe's publishable ``pk_live_…`` keys, public by design (gitleaks has no rule);
- **words**: a key's or token's value (letters, digits, ``_ - .``, spaces) made of words
  (``hf_requiredTypesForDisplay``, ``glpat-hello-world_testing``, ``xoxb-my-bot-token``): a BPE
  tokenizer takes 3.3+ of its distinct letters a token, random letters ~2;
- **cut short**: a value right before an ellipsis (``ops_eyJz...``), the way a key is shown, not
  given;
- per rule: a JWT's header must decode to JSON (bc-detect-secrets' ``is_formally_valid``); a PEM
  block needs 64+ base64 characters of body (gitleaks' rule: ``BEGIN PRIVATE KEY … anything``
  is none); a high-entropy run (no name, no prefix) that base64-decodes to printable text with a
  space, or to a JSON object, is encoded text (``c3VwZXIgc2VjcmV0IHZhbHVl``, a JWT's header alone).
"""

from __future__ import annotations

import base64
import binascii
import re

from detect_secrets.plugins.jwt import JwtTokenDetector

from tierwise.memory.scrub_detectors import placeholder
from tierwise.tokens import load_encoding

__all__ = ["sample", "wordy"]

_GENERATED = frozenset(("api-key", "token"))  # kinds a machine makes; a password a person chooses


# AWS's documented key id and secret (``AKIAIOSFODNN7EXAMPLE``, ``…EXAMPLEKEY``), as gitleaks allows them.
_AWS_EXAMPLE = re.compile(r"\A(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{0,12}EXAMPLE\Z|EXAMPLEKEY")
# Letters in words; a run counting through the alphabet (``abcd``, ``ABCDEF``) is no word.
_LETTERS = re.compile(r"[a-z]++")
_WORD_LETTERS, _LETTERS_PER_TOKEN = 10, 3.3


def _words(body: str) -> list[str]:
    """The letter runs of ``body``, lower-cased, less stretches of 3+ counting or repeating a letter."""
    words = []
    for piece in _LETTERS.findall(body.lower()):
        counting = [False] * len(piece)
        for step in (1, 0):  # ``abcd`` counts on, ``qqqq`` stays
            start = 0
            for i in range(1, len(piece) + 1):
                if i == len(piece) or ord(piece[i]) != ord(piece[i - 1]) + step:
                    if i - start >= 3:
                        counting[start:i] = [True] * (i - start)
                    start = i
        kept = "".join(" " if gone else c for c, gone in zip(piece, counting, strict=True))
        words.extend(kept.split())
    return words


def wordy(body: str) -> bool:
    """Whether a token's body is made of words: its 10+ letters, lower-cased, take 3.3+ per BPE token.

    The tokenizer (``cl100k_base``, :func:`tierwise.tokens.load_encoding`) learnt words: English
    takes ~4–6 letters a token, random letters ~1.5–2.4 (3.3 or more: about 1 in 5,000 random
    12-letter bodies, none of 24+).

    Example:
        >>> wordy("requiredCharacteristicTypesForDisplayMetadata"), wordy("hello-world_testing_it")
        (True, True)
        >>> wordy("wWPw5k4aXcaT4fNP0UcnZwJUVFk6LO0pINUx"), wordy("zv1me3vmxyutjcdyob1jdgwrcqtull")
        (False, False)
    """
    pieces = _words(body.partition("\\n")[0])  # a JSON-escaped line break ends the value
    if sum(len(p) for p in pieces) < _WORD_LETTERS:
        return False
    encoding = load_encoding()
    tokens = {t for p in pieces for t in encoding.encode_ordinary(p)}  # a word said again counts once
    distinct = sum(len(encoding.decode_single_token_bytes(t)) for t in tokens)
    return distinct >= _WORD_LETTERS and distinct >= _LETTERS_PER_TOKEN * len(tokens)


# What a body of words is written with (``correct horse 42!`` is a passphrase, not words).
_WORD_CHARACTERS = re.compile(r"[\w .-]++")
# A token's prefix, taken off before its body is read for words (``glpat-``, ``xoxb-``, ``hf_``).
_TOKEN_PREFIX = re.compile(r"\A(?:[A-Za-z]{1,8}\d?[_-](?:[a-z]{2,6}[_-])?|[A-Za-z]{2,8}\d{2,9}(?=[A-Z]))")


def _encoded_text(value: str) -> bool:
    """A base64 run that decodes to printable text with a space, or to a JSON object."""
    raw = value.rstrip("=").replace("-", "+").replace("_", "/")
    raw = raw[: len(raw) - len(raw) % 4] if len(raw) % 4 == 1 else raw
    try:
        decoded = base64.b64decode(raw + "=" * (-len(raw) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    text = decoded.decode("ascii", "replace")
    printable = sum(c.isprintable() for c in text)
    return printable >= 0.95 * len(text) and (" " in text.strip() or text.startswith('{"'))


_BASE64 = re.compile(r"[A-Za-z0-9+/=\s\\n-]*+")


def _short_pem(value: str) -> bool:
    """A PEM block with fewer than 64 base64 characters between its lines: no key in it."""
    lines = value.replace("\\n", "\n").split("-----")
    body = "".join(part for i, part in enumerate(lines) if i % 2 == 0)
    return sum(c.isalnum() or c in "+/=" for c in body) < 64


def sample(text: str, start: int, end: int, kind: str, rule: str) -> bool:
    """Whether the secret a rule found at ``text[start:end]`` is a documented sample, to be kept.

    Args:
        text: the text scanned.
        start: where the finding starts.
        end: where it ends.
        kind: the finding's kind (``"token"``, ``"password"`` …).
        rule: the rule that found it (``"jwt"``, ``"high-entropy"`` …).

    Example:
        >>> sample("AKIAIOSFODNN7EXAMPLE", 0, 20, "api-key", "aws-key-id")
        True
        >>> sample("ntn_4fX9a0Qc8B1d7E2a6F4b5C3d9E8f7A6b5C4d3E2f1", 0, 45, "token", "token-prefix")
        False
    """
    value = text[start:end]
    if rule == "pem":
        return _short_pem(value)
    if placeholder(value) or _AWS_EXAMPLE.search(value) or value.startswith(("pk_live_", "pk_test_")):
        return True  # AWS's documented ``AKIA…EXAMPLE`` and ``…EXAMPLEKEY`` (gitleaks' allowlist too)
    if rule in ("jwt", "ds-jwttoken"):  # a JWT's header is JSON (its payload may be opaque)
        return not JwtTokenDetector.is_formally_valid(value.partition(".")[0])
    if text.startswith(("...", "…"), end):
        return True  # shown cut short, as a key is shown, not given
    if rule == "high-entropy" and _encoded_text(value):
        return True
    if kind in _GENERATED and _WORD_CHARACTERS.fullmatch(value):
        prefix = _TOKEN_PREFIX.match(value)
        return wordy(value[prefix.end() :] if prefix else value)
    return False
