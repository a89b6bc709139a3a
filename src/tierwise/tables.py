"""Rich tables that stay readable in the terminal they are printed to (issue 33).

Rich fits a table to the terminal by cutting what does not fit to "…": at 120 columns headers read
"open-do…" and cells "stepped wind…". Every table the command line prints goes through
:func:`print_table` instead, which

- lets every column wrap between words and fold a word too long for it (:func:`readable`):
  nothing is ever replaced by "…";
- shares the columns out over as many tables as it takes when they cannot all show their longest
  word side by side (:func:`fitted`), each table repeating the first ``keep`` columns (what a row is
  about), so a header is never cut through a word;
- when a table is wider than the terminal, sets its columns' widths itself: each its longest word,
  the room left shared in proportion to what each would take on one line. (Rich narrows the widest
  columns first, below their longest word: "open-domai/n".)

Example:
    >>> from rich.console import Console
    >>> table = Table(title="packs")
    >>> for header in ("packer", "multi-hop", "open-domain", "adversarial"):
    ...     table.add_column(header)
    >>> table.add_row("tierwise", "0.512", "0.433", "0.871")
    >>> [len(t.columns) for t in fitted(table, Console(width=30))]
    [2, 2, 2]
"""

from __future__ import annotations

from dataclasses import replace

from rich.console import Console
from rich.measure import Measurement
from rich.table import Column, Table

__all__ = ["fitted", "print_table", "readable"]

_UNBOUNDED = 100_000


def readable(table: Table) -> Table:
    """``table`` with every column wrapping between words and folding an over-long word (never "…")."""
    for column in table.columns:
        column.no_wrap = False
        column.overflow = "fold"
    return table


def _least_width(console: Console, table: Table) -> int:
    """The narrowest ``table`` can be with no word of a header or cell broken."""
    return Measurement.get(console, console.options.update_width(_UNBOUNDED), table).minimum


def _content(console: Console, column: Column) -> tuple[int, int]:
    """The column's narrowest width without breaking a word, and its width on one line (no padding)."""
    options = console.options.update_width(_UNBOUNDED)
    sizes = [Measurement.get(console, options, cell) for cell in (column.header, *column.cells)]
    return max(m.minimum for m in sizes), max(m.maximum for m in sizes)


def _settle(table: Table, console: Console) -> Table:
    """Fix the column widths of a table wider than ``console``: longest words first, then the rest shared."""
    least = _least_width(console, table)
    widest = Measurement.get(console, console.options.update_width(_UNBOUNDED), table).maximum
    if widest <= console.width or least > console.width:
        return table
    sizes = [_content(console, column) for column in table.columns]
    frame = least - sum(low for low, _ in sizes)  # borders and padding
    widths = [low for low, _ in sizes]
    room = console.width - frame - sum(widths)
    wants = [high - low for low, high in sizes]
    total = sum(wants) or 1
    for i, want in enumerate(wants):
        give = min(want, room * want // total)
        widths[i] += give
    left = console.width - frame - sum(widths)
    for i in sorted(range(len(wants)), key=lambda i: wants[i] - (widths[i] - sizes[i][0]), reverse=True):
        if left <= 0:
            break
        give = min(left, sizes[i][1] - widths[i])
        widths[i] += give
        left -= give
    for column, width in zip(table.columns, widths, strict=True):
        column.width = width
    return table


def _part(table: Table, columns: list[Column], *, first: bool, last: bool) -> Table:
    """Some of ``table``'s columns with its rows; the title on the first part, the caption on the last."""
    part = Table(
        title=table.title if first else ("(continued)" if table.title else None),
        caption=table.caption if last else None,
        title_justify=table.title_justify,
        caption_justify=table.caption_justify,
        box=table.box,
        show_header=table.show_header,
        show_lines=table.show_lines,
        header_style=table.header_style,
        title_style=table.title_style,
        caption_style=table.caption_style,
        padding=table.padding,
        collapse_padding=table.collapse_padding,
        pad_edge=table.pad_edge,
        show_edge=table.show_edge,
    )
    part.columns = [replace(column, _index=i) for i, column in enumerate(columns)]
    part.rows = list(table.rows)
    return part


def _fits(table: Table, columns: list[Column], console: Console) -> bool:
    return _least_width(console, _part(table, columns, first=True, last=True)) <= console.width


def fitted(table: Table, console: Console, keep: int = 1) -> list[Table]:
    """``table`` as one or more tables, each as narrow as ``console`` (when its words allow).

    Columns are taken in order; each table starts with the first ``keep`` columns and takes as many
    more as fit whole words in the console's width (at least one).
    """
    readable(table)
    width = console.width
    if _least_width(console, table) <= width or len(table.columns) <= keep + 1:
        return [_settle(table, console)]
    key, rest = table.columns[:keep], table.columns[keep:]
    groups: list[list[Column]] = [[]]
    for column in rest:  # as few tables as it takes …
        if groups[-1] and not _fits(table, [*key, *groups[-1], column], console):
            groups.append([])
        groups[-1].append(column)
    size = -(-len(rest) // len(groups))  # … then as even as they fit
    even = [rest[i : i + size] for i in range(0, len(rest), size)]
    if len(even) == len(groups) and all(_fits(table, [*key, *group], console) for group in even):
        groups = even
    last = len(groups) - 1
    parts = [_part(table, [*key, *group], first=i == 0, last=i == last) for i, group in enumerate(groups)]
    return [_settle(part, console) for part in parts]


def print_table(console: Console, table: Table, keep: int = 1) -> None:
    """Print ``table`` on ``console``, readable at its width (:func:`fitted`)."""
    for part in fitted(table, console, keep):
        console.print(part)
