"""Short, typed ids for workspace rows: ``task_4k7d2x9q1m3a``, ``proj_…``, ``note_…``.

The model reads and repeats these ids in every list → detail exchange, so their length is paid in
tokens on every call: a UUID costs about 22 tokens, one of these about 8. Twelve characters of
Crockford base32 carry 60 random bits, unique enough for any one database; the prefix says what the
id names, so an id passed to the wrong tool is easy to explain.
"""

from __future__ import annotations

import os
import random

__all__ = ["PREFIXES", "new_workspace_id"]

_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"  # Crockford base32, lower case: no i, l, o, u

PREFIXES = {
    "project": "proj",
    "phase": "phase",
    "task": "task",
    "note": "note",
    "brain_dump": "dump",
    "event": "evt",
}


def new_workspace_id(kind: str, rng: random.Random | None = None) -> str:
    """A new id for a row of ``kind`` (a key of :data:`PREFIXES`); ``rng`` makes it reproducible.

    Example:
        >>> new_workspace_id("task", random.Random(7))
        'task_yakmvs9edd1r'
        >>> len(new_workspace_id("project"))
        17
    """
    bits = rng.getrandbits(60) if rng is not None else int.from_bytes(os.urandom(8)) >> 4
    chars = [_ALPHABET[(bits >> shift) & 31] for shift in range(55, -1, -5)]
    return f"{PREFIXES[kind]}_{''.join(chars)}"
