"""Sentences: pySBD's rule-based segmenter, with lines and URLs kept whole.

pySBD (Sadvilkar & Neumann, 2020) implements the Golden Rules of sentence boundaries: decimals
(``3.5 GB``), versions (``v0.4.0``), abbreviations (``Dr.``, ``e.g.``, ``St. Louis``), file names
(``app/auth/jwt.py``) and ellipses stay inside their sentence. It is pure Python and needs no data
download. Two things are added around it:

* a line break always ends a sentence (chat messages are full of lists and one-line answers), and
  fenced code blocks are left out of the sentences altogether (code is not summary material);
* URLs are masked before segmenting and restored after, because pySBD splits at a ``?`` inside one.

The regex splitter this replaces cut "release 0.4.0" into "release 0. 0." (issue 15).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

import pysbd  # type: ignore[import-untyped]
from pysbd.utils import TextSpan  # type: ignore[import-untyped]

__all__ = ["split_sentences"]

_URL = re.compile(r"\b(?:https?|ftp)://[^\s<>\"'`]+[^\s<>\"'`.,;:!?)\]]")
_FENCE = re.compile(r"^\s*(```|~~~)")
_MASK = "\ue000{}\ue001"  # private-use characters: never in real text, never a boundary for pySBD
_MASKED = re.compile("\ue000(\\d+)\ue001")
_SPACES = re.compile(r"\s*")
_LONG_LINE = 20_000  # characters; a longer line (minified data) is cut into pieces first


class _Segmenter(pysbd.Segmenter):  # type: ignore[misc]
    """pySBD's segmenter, its sentences found in the text by ``str.find`` instead of a regex each.

    pySBD locates every sentence it made in the original text with ``re.finditer`` on that
    sentence, escaped: a new pattern per sentence, which also pushed pySBD's own patterns out of
    ``re``'s cache (512 entries) — about a fifth of a long replay's time went to compiling
    regexes. This is the same search (the first occurrence, with the whitespace after it, that
    ends past the previous sentence; occurrences do not overlap), with ``str.find``;
    ``tests/test_summarize.py`` holds it equal to pySBD's on LoCoMo's turns and on generated text.
    """

    def sentences_with_char_spans(self, sentences: list[str]) -> list[Any]:
        text: str = self.original_text
        spans = []
        prior_end = 0
        for sent in sentences:
            if not sent:  # (not made in practice) pySBD's pattern is then ``\s*``: matched as it is
                match = next((m for m in _SPACES.finditer(text) if m.end() > prior_end), None)
                if match is not None:
                    spans.append(TextSpan(match.group(), match.start(), match.end()))
                    prior_end = match.end()
                continue
            pos = 0
            while (start := text.find(sent, pos)) != -1:
                end = start + len(sent)
                while end < len(text) and text[end].isspace():
                    end += 1
                if end > prior_end:
                    spans.append(TextSpan(text[start:end], start, end))
                    prior_end = end
                    break
                pos = end
        return spans


@lru_cache(maxsize=1)
def _segmenter() -> pysbd.Segmenter:
    return _Segmenter(language="en", clean=False)


def split_sentences(text: str) -> list[str]:
    r"""The sentences of ``text`` in order, stripped; lines are never joined, code fences skipped.

    Example:
        >>> split_sentences("Let's cut release v0.4.0 today. It needs 3.5 GB.\nSee app/auth/jwt.py")
        ["Let's cut release v0.4.0 today.", 'It needs 3.5 GB.', 'See app/auth/jwt.py']
    """
    out: list[str] = []
    fenced = False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if fenced or not line.strip():
            continue
        for piece in _pieces(line.strip()):
            out += _split_line(piece)
    return out


def _pieces(line: str) -> list[str]:
    if len(line) <= _LONG_LINE:
        return [line]
    return [line[i : i + _LONG_LINE] for i in range(0, len(line), _LONG_LINE)]


# A dot that may not end a sentence: in a number (3.5), before a letter (e.g, app.py, v0.4),
# after a short capitalised word or a single letter (Dr. Smith, J. Doe), in an ellipsis or a URL.
# Lines without one are split at every mark followed by a space (what pySBD does for them, checked
# on the LoCoMo turns); the others go to pySBD.
_AMBIGUOUS = re.compile(r"\d[.,:]\d|\.[A-Za-z0-9]|\b(?:[A-Z][a-z]{0,3}|[A-Za-z])\.|\.\.|…|://|www\.")
_PLAIN_BOUNDARY = re.compile(r"(?<=[.!?])\s+|(?<=[.!?][\"')\]])\s+")
_INSIDE = re.compile(r"[.!?…](?=.*\S)")  # a boundary mark with text after it: more than one sentence


@lru_cache(maxsize=8192)
def _split_line(line: str) -> tuple[str, ...]:
    """One line's sentences; cached, since a turn is read by several layers (and turns repeat)."""
    if not _INSIDE.search(line):  # one sentence at most: pySBD has nothing to decide
        return (line,)
    if not _AMBIGUOUS.search(line):  # every mark ends a sentence: nothing for pySBD to decide either
        return tuple(p for p in _PLAIN_BOUNDARY.split(line) if p)
    return tuple(_segment(line))


def _segment(line: str) -> list[str]:
    urls: list[str] = []

    def mask(match: re.Match[str]) -> str:
        urls.append(match.group(0))
        return _MASK.format(len(urls) - 1)

    masked = _URL.sub(mask, line)
    sentences = [s.strip() for s in _segmenter().segment(masked) if s.strip()]
    if urls:
        sentences = [_MASKED.sub(lambda m: urls[int(m.group(1))], s) for s in sentences]
    return sentences
