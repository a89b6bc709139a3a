"""The number checks of the scrubber (:mod:`tierwise.memory.scrub`): payment cards and IBANs.

A run of digits is a card only if it passes the Luhn check, an IBAN only if it has its country's
length and passes ISO 7064 mod-97; other runs are ids, amounts and seeds, and stay.
"""

from __future__ import annotations

import re

__all__ = ["card", "card_short", "iban"]

Span = tuple[int, int]


def _luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


_SEPARATOR = re.compile(r"[ -]")


def card(text: str, match: re.Match[str]) -> Span | None:
    """Longest prefix of whole digit groups that is a plausible card number passing Luhn."""
    raw = match.group()
    separators = set(_SEPARATOR.findall(raw))
    if len(separators) > 1:
        return None
    groups = _SEPARATOR.split(raw)
    for k in range(len(groups), 0, -1):
        digits = "".join(groups[:k])
        if not (13 <= len(digits) <= 19 if k > 1 else 15 <= len(digits) <= 16):
            continue
        if k > 1 and (len(groups[0]) != 4 or min(len(g) for g in groups[:k]) < 3):
            continue
        if len(set(digits)) > 1 and _luhn(digits):
            return (match.start(), match.start() + len(" ".join(groups[:k])))
    return None


# A card's word just before a 15-digit number starting with 1 (UATP): ``my credit card: 1220…``.
_CARD_CUE = re.compile(r"(?i:\b(?:card|credit|debit|visa|amex|mastercard|uatp)\b)[^\r\n\d]{0,24}+\Z")


def card_short(text: str, match: re.Match[str]) -> Span | None:
    """A plain 14-digit Diners Club number (30[0-5], 36, 38, 39), or a UATP ``1…`` (15) after a card word."""
    digits = match.group()
    if len(set(digits)) == 1 or not _luhn(digits):
        return None
    if digits[0] == "1" and not _CARD_CUE.search(text, max(0, match.start() - 40), match.start()):
        return None
    return match.span()


# fmt: off
_IBAN_LENGTHS = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22, "BI": 27,
    "BR": 29, "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DJ": 27, "DK": 18, "DO": 28,
    "EE": 20, "EG": 29, "ES": 24, "FI": 18, "FK": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23,
    "GL": 18, "GR": 27, "GT": 28, "HR": 21, "HU": 28, "IE": 22, "IL": 23, "IQ": 23, "IS": 26, "IT": 27,
    "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LC": 32, "LI": 21, "LT": 20, "LU": 20, "LV": 21, "LY": 25,
    "MC": 27, "MD": 24, "ME": 22, "MK": 19, "MN": 20, "MR": 27, "MT": 31, "MU": 30, "NI": 28, "NL": 18,
    "NO": 15, "OM": 23, "PK": 24, "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "RU": 33,
    "SA": 24, "SC": 31, "SD": 18, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "SO": 23, "ST": 25, "SV": 28,
    "TL": 23, "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20, "YE": 30,
}
# fmt: on


def iban(text: str, match: re.Match[str]) -> Span | None:
    """The country's IBAN length of characters (grouped by four, or compact) passing mod-97."""
    raw = match.group()
    length = _IBAN_LENGTHS.get(raw[:2].upper())
    if length is None:
        return None
    grouped = len(raw) > 4 and raw[4] == " "
    chars: list[str] = []
    end = 0
    for i, ch in enumerate(raw):
        if ch == " ":
            if not grouped or len(chars) % 4:
                return None
            continue
        chars.append(ch)
        if len(chars) == length:
            end = i + 1
            break
    if len(chars) < length or (end < len(raw) and raw[end] != " "):
        return None
    compact = "".join(chars).upper()
    number = "".join(str(int(c, 36)) for c in compact[4:] + compact[:4])
    return (match.start(), match.start() + end) if int(number) % 97 == 1 else None
