"""The exceptions tierwise raises, in one tree.

::

    TierwiseError                 every error tierwise raises on purpose
    ├── UserError                 the caller asked for something that cannot work; the message names the fix
    │   ├── InputError            a conversation, file or argument is malformed
    │   └── BudgetError           what must be sent cannot fit the budget
    └── VocabularyError           the installed tokenizer data is missing or corrupted

Catch ``UserError`` at a boundary (CLI, HTTP) and show its message; anything else is a bug or an
environment problem.
"""

from __future__ import annotations

__all__ = ["BudgetError", "InputError", "TierwiseError", "UserError", "VocabularyError"]


class TierwiseError(Exception):
    """Base class of every error tierwise raises on purpose."""


class UserError(TierwiseError):
    """A usage mistake; the message says what to change."""


class InputError(UserError):
    """Malformed input: a conversation, a file or an argument."""


class BudgetError(UserError):
    """The guaranteed part of a pack does not fit the budget.

    Attributes:
        over_by: tokens by which the guaranteed layers exceed the budget.
        largest_layer: id of the largest guaranteed layer (the first thing to shrink).
    """

    def __init__(self, message: str, *, over_by: int, largest_layer: str) -> None:
        super().__init__(message)
        self.over_by = over_by
        self.largest_layer = largest_layer


class VocabularyError(TierwiseError):
    """The tokenizer vocabulary could not be loaded or failed its checksum."""
