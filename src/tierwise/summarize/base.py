r"""The Summarizer interface and the checks every summary must pass.

A summary that comes back empty, over its cap or cut mid-sentence is rejected, never stored: the
caller keeps what it had (seed 003's "summary drift" risk; STYLE.md: summaries must not silently
come back empty or truncated and overwrite the previous one).

A model's summary must also be faithful (:func:`check_faithful`): every number, date, name, file
path and URL it mentions must be in what it summarised. What counts as "the same":

* **numbers** by value where the form may vary: ``1,200`` = ``1200``, ``3.50`` = ``3.5``, ``05`` =
  ``5``, ``10:00`` = ``10``; a number the source writes as a word counts (``forty`` → ``40``,
  ``forty-two``, ``a dozen``). Versions (two dots or more: ``0.4.0``) and times (``10:30``) must
  match as written;
* **dates** by day: ``2023-05-07``, ``7 May 2023``, ``May 7th, 2023`` and ``7 May`` are one day; a
  year the source does not give is not allowed on a date it gives without one. A **month or
  weekday name** is allowed if the source names it (``Fri`` = ``Friday``) or has a full date that
  falls on it; ``May`` counts only beside a number (it is also a verb);
* **names** (capitalised words) case-insensitively, ``Maya's`` = ``Maya``; a capitalised word
  opening a sentence (or following ``:``) is taken for a common word unless it looks like a name
  anyway (``GitHub``, ``AWS``, ``Q4``); stopwords never count as names;
* **paths and URLs** case-insensitively, as substrings of the source (``src/app.py`` in
  ``./src/app.py``), ``\`` read as ``/``; a trailing ``/`` or full stop does not matter. A path is
  what has a path's shape: a leading ``/``, ``~/``, ``./``, two slashes or more, or a file name
  with a known extension (``engine.py``) — ``and/or`` and ``24/7`` are not paths.
"""

from __future__ import annotations

import calendar
import re
from datetime import date
from typing import Protocol, runtime_checkable

from bm25s.stopwords import STOPWORDS_EN_PLUS

from tierwise.errors import TierwiseError
from tierwise.tokens import TokenCounter

__all__ = ["Summarizer", "SummaryRejected", "check_faithful", "check_summary"]

_SENTENCE_END = re.compile(r"[.!?。！？…)\]\"']\s*$")


class SummaryRejected(TierwiseError):
    """A summary failed validation; ``reason`` says why (empty, over cap, cut mid-sentence)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@runtime_checkable
class Summarizer(Protocol):
    """Turns text into a summary of at most ``max_tokens`` tokens.

    ``focus`` names what to keep (e.g. "decisions, changes, open questions"). Implementations must
    return text that passes :func:`check_summary`, or raise :class:`SummaryRejected`.
    """

    name: str

    def summarize(self, text: str, *, max_tokens: int, focus: str | None = None) -> str:
        """Summarise ``text`` within ``max_tokens``."""
        ...


def check_summary(summary: str, max_tokens: int, counter: TokenCounter) -> str:
    """Return ``summary`` stripped if it is non-empty, within ``max_tokens`` and ends a sentence.

    Raises:
        SummaryRejected: with the reason.
    """
    text = summary.strip()
    if not text:
        raise SummaryRejected("the summary is empty")
    tokens = counter.count(text)
    if tokens > max_tokens:
        raise SummaryRejected(f"the summary has {tokens} tokens, over its cap of {max_tokens}")
    if not _SENTENCE_END.search(text):
        raise SummaryRejected("the summary stops mid-sentence")
    return text


# -- faithfulness ----------------------------------------------------------------------------------

_EXTENSIONS = (
    "py|pyi|ipynb|js|mjs|cjs|jsx|ts|tsx|vue|md|rst|txt|json|jsonl|ya?ml|toml|ini|cfg|conf|env|lock|"
    "csv|tsv|xml|html?|css|scss|sh|bash|zsh|ps1|bat|rs|go|java|kt|scala|rb|php|pl|lua|r|c|h|cc|cpp|"
    "hpp|cs|swift|m|sql|db|sqlite|log|pdf|docx?|xlsx?|pptx?|png|jpe?g|gif|svg|webp|zip|tar|gz|tgz|whl"
)
_URL = re.compile(r"\b(?:https?|ftp)://[^\s<>\"'`]+", re.IGNORECASE)
_PATH = re.compile(
    r"(?<![\w/\\.@-])(?:"
    r"[A-Za-z]:\\[\w.\-\\]+"  # C:\Users\me\notes.txt
    r"|(?:~|\.{1,2})?/?[\w.\-]+(?:/[\w.\-]+)+/?"  # a/b, ./a/b.py, /etc/hosts, ~/x/
    r"|/[\w.\-]+"  # /etc
    rf"|[\w\-]+(?:\.[\w\-]+)*\.(?:{_EXTENSIONS})\b"  # engine.py, README.md
    r")",
    re.IGNORECASE,
)
_FILE = re.compile(rf"\.(?:{_EXTENSIONS})$", re.IGNORECASE)
_MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
_MONTHS |= {name.lower(): i for i, name in enumerate(calendar.month_abbr) if name}
_MONTHS["sept"] = 9
_WEEKDAYS = {name.lower(): i for i, name in enumerate(calendar.day_name)}
_WEEKDAYS |= {name.lower(): i for i, name in enumerate(calendar.day_abbr)}
_WEEKDAYS |= {"tues": 1, "weds": 2, "thur": 3, "thurs": 3}
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_ORD = r"(?:st|nd|rd|th)?"
_DATES = (
    # 2023-05-07
    re.compile(r"\b(?P<y>\d{4})-(?P<m>\d{1,2})-(?P<d>\d{1,2})\b"),
    # 7 May 2023, 7th of May, 7 May
    re.compile(
        rf"\b(?P<d>\d{{1,2}}){_ORD}(?:\s+of)?\s+(?P<mn>{_MONTH})\b\.?(?:,?\s+(?P<y>\d{{4}})\b)?", re.I
    ),
    # May 7, 2023, May 7th
    re.compile(rf"\b(?P<mn>{_MONTH})\b\.?\s+(?P<d>\d{{1,2}}){_ORD}\b(?:,?\s+(?P<y>\d{{4}})\b)?", re.I),
    # 7/5/2023 or 5/7/23: day and month order unknown, both are taken
    re.compile(r"(?<![\w/])(?P<a>\d{1,2})[/.](?P<b>\d{1,2})[/.](?P<y>\d{4}|\d{2})(?![\w/])"),
)
_NUMBER = re.compile(r"(?<![\w.,])v?(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:[.:]\d+)*)")
_UNITS = (
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
)
_NUMBER_WORDS = {w: i for i, w in enumerate(_UNITS)} | {
    "dozen": 12,
    "hundred": 100,
    "thousand": 1000,
    "million": 1_000_000,
}
_TENS = {
    w: 10 * i
    for i, w in enumerate(("twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"), 2)
}
_SPELLED = re.compile(
    rf"\b(?P<tens>{'|'.join(_TENS)})(?:[-\s](?P<unit>{'|'.join(list(_NUMBER_WORDS)[1:10])}))?\b"
    rf"|\b(?P<word>{'|'.join(_NUMBER_WORDS)})\b",
    re.IGNORECASE,
)
_WORD = re.compile(r"[^\W\d_][\w'’\-]*")
_MARKUP = re.compile(r"\*\*|__|`|^\s*(?:[-*•>#]+|\d+[.)])\s+", re.MULTILINE)
_OPENERS = "\"'“‘([{*_-–—•#> \t"
_NOT_NAMES = frozenset(STOPWORDS_EN_PLUS) | {"i'm", "i'll", "i've", "i'd", "ok", "okay"}


def check_faithful(summary: str, source: str) -> None:
    """Reject ``summary`` if it mentions a number, date, name, path or URL that ``source`` does not.

    See the module docstring for what counts as the same item in another form.

    Raises:
        SummaryRejected: naming the first item not found, e.g. ``the summary mentions the number
            "42", which is not in the source``.

    Example:
        >>> check_faithful("Maya moved the review to Friday at 10.", "Maya: move the review to Friday 10:00")
        >>> try:
        ...     check_faithful("Maya moved it to Monday.", "Maya: move the review to Friday")
        ... except SummaryRejected as exc:
        ...     print(exc.reason)
        the summary mentions the weekday "Monday", which is not in the source
    """
    problem = _unfaithful(_MARKUP.sub(" ", summary), source)
    if problem is not None:
        kind, item = problem
        raise SummaryRejected(f'the summary mentions the {kind} "{item}", which is not in the source')


def _unfaithful(summary: str, source: str) -> tuple[str, str] | None:
    """The first ``(kind, item)`` of ``summary`` that ``source`` lacks, or ``None``."""
    lowered = source.lower()
    plain = lowered.replace("\\", "/")
    rest = summary
    for match in _URL.finditer(summary):
        url = _trim(match.group(0))
        if url.lower().rstrip("/") not in lowered:
            return "URL", url
        rest = rest.replace(match.group(0), " ")
    for match in _PATH.finditer(rest):
        path = _trim(match.group(0))
        if not _is_path(path):
            continue
        wanted = path.lower().replace("\\", "/").removeprefix("./").rstrip("/")
        if wanted not in plain:
            return "path", path
        rest = rest.replace(match.group(0), " ", 1)
    known, said, numbers = _Dates(source), _Dates(rest), _numbers(source)
    for (year, month, day), text in said.days.items():
        if not known.has_day(year, month, day, numbers):
            return "date", text
    for span in said.spans:
        rest = rest[: span[0]] + " " * (span[1] - span[0]) + rest[span[1] :]
    for match in _NUMBER.finditer(rest):
        if _normal(match.group(1)) not in numbers:
            return "number", match.group(1)
    words = set(_WORD.findall(lowered))
    for match in _WORD.finditer(rest):
        word = match.group(0).rstrip("'’-")
        word = re.sub(r"['’]s$", "", word)
        low = word.lower()
        if not word or not word[0].isupper():
            continue
        if low in _WEEKDAYS:
            if _WEEKDAYS[low] not in known.weekdays:
                return "weekday", word
            continue
        if low in _MONTHS:
            if low == "may" and not _beside_number(rest, match.start(), match.end()):
                continue  # the verb
            if _MONTHS[low] not in known.months:
                return "month", word
            continue
        if low in _NOT_NAMES:
            continue
        name_like = sum(c.isupper() for c in word) > 1 or any(c.isdigit() for c in word)
        if _opens_sentence(rest, match.start()) and not name_like:
            continue
        if low in words or low in lowered:
            continue
        parts = [p for p in re.split(r"[-'’]", low) if p]
        if parts and all(p in words for p in parts):
            continue
        return "name", word
    return None


def _trim(item: str) -> str:
    return item.rstrip(".,;:!?)]}'\"")


def _is_path(item: str) -> bool:
    """Whether ``item`` (a :data:`_PATH` match) has a path's shape (not ``and/or``, ``24/7``)."""
    if re.fullmatch(r"[\d/.\-]+", item):
        return False  # a date or a fraction
    if re.match(r"[A-Za-z]:\\", item) or item.startswith(("/", "~/", "./", "../")):
        return True
    return item.count("/") >= 2 or bool(_FILE.search(item))


def _opens_sentence(text: str, start: int) -> bool:
    before = text[:start].rstrip(_OPENERS)
    gap = text[len(before) : start]
    return not before or before[-1] in ".!?:…\n" or "\n" in gap


def _beside_number(text: str, start: int, end: int) -> bool:
    return bool(re.search(r"\d\S*\s*$", text[max(0, start - 12) : start])) or bool(
        re.match(r"\.?\s*\d", text[end : end + 4])
    )


def _normal(number: str) -> str:
    """A number's comparable form (see the module docstring)."""
    if re.fullmatch(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?", number):
        number = number.replace(",", "")
    if re.fullmatch(r"\d+:00", number):
        number = number[:-3]
    if re.fullmatch(r"\d+\.\d+", number):
        whole, fraction = number.split(".")
        whole, fraction = whole.lstrip("0") or "0", fraction.rstrip("0")
        return f"{whole}.{fraction}" if fraction else whole
    if number.isdigit():
        return number.lstrip("0") or "0"
    return number


def _numbers(text: str) -> set[str]:
    """Every number of ``text`` in its comparable form; an ``H:MM`` time also gives its hour."""
    found = {_normal(m.group(1)) for m in _NUMBER.finditer(text)}
    found |= {str(int(m.group(1))) for m in re.finditer(r"(?<!\d)(\d{1,2}):\d\d\b", text)}
    for match in _SPELLED.finditer(text):
        if match.group("word"):
            found.add(str(_NUMBER_WORDS[match.group("word").lower()]))
        else:
            unit = match.group("unit")
            value = _TENS[match.group("tens").lower()] + (_NUMBER_WORDS[unit.lower()] if unit else 0)
            found.add(str(value))
    return found


class _Dates:
    """The days, months and weekdays a text names (a full date gives its month and weekday too)."""

    def __init__(self, text: str) -> None:
        self.days: dict[tuple[int | None, int, int], str] = {}
        self.spans: list[tuple[int, int]] = []
        taken: list[tuple[int, int]] = []
        for pattern in _DATES:
            for match in pattern.finditer(text):
                if any(a < match.end() and match.start() < b for a, b in taken):
                    continue
                for key in _days(match.groupdict()):
                    self.days.setdefault(key, match.group(0))
                taken.append(match.span())
        self.spans = taken
        lowered = [w.lower().rstrip(".") for w in _WORD.findall(text)]
        self.months = {_MONTHS[w] for w in lowered if w in _MONTHS} | {m for _, m, _ in self.days}
        self.weekdays = {_WEEKDAYS[w] for w in lowered if w in _WEEKDAYS}
        for year, month, day in self.days:
            if year is not None:
                self.weekdays.add(date(year, month, day).weekday())

    def has_day(self, year: int | None, month: int, day: int, numbers: set[str]) -> bool:
        """Whether the text names this day (a date without a year matches any year)."""
        if (year, month, day) in self.days or (
            year is None and any(m == month and d == day for _, m, d in self.days)
        ):
            return True
        return (None, month, day) in self.days and str(year) in numbers


def _days(groups: dict[str, str | None]) -> list[tuple[int | None, int, int]]:
    """The valid days a date match may mean (two for ``7/5/2023``: the order is unknown)."""
    given = {key: value for key, value in groups.items() if value}
    year = int(given["y"]) if "y" in given else None
    if year is not None and year < 100:
        year += 2000
    if "a" in given:
        a, b = int(given["a"]), int(given.get("b", 0))
        candidates = [(a, b), (b, a)]
    else:
        month = int(given["m"]) if "m" in given else _MONTHS[given.get("mn", "").lower().rstrip(".")]
        candidates = [(month, int(given.get("d", 0)))]
    out: list[tuple[int | None, int, int]] = []
    for month, day in candidates:
        try:
            date(year or 2000, month, day)  # 2000: a leap year, so 29 February is a day
        except ValueError:
            continue
        out.append((year, month, day))
    return out
