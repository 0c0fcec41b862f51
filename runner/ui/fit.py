"""Tables that fit the terminal: columns dropped by priority, never a cell cut short.

Rich shrinks a table that is wider than the console by wrapping every cell and cutting
words with an ellipsis ("work…", "stea…"), which at 80 columns turned a results row into
a dozen lines. :func:`fit_table` instead leaves out whole columns, least important first,
until the table's natural width fits; only when even the essential columns are too wide
do the columns marked ``fold`` wrap (at spaces, or inside a long name), never with an
ellipsis. The caller says which columns were left out (:func:`dropped_note`).

The width of output that is not a terminal (a pipe, a file, a CI log) is
:func:`output_width`: ``COLUMNS`` when set, else the width of the terminal that stderr
goes to (``benchrun show DIR | less``), else :data:`PIPE_WIDTH`.
"""

from __future__ import annotations

import os
import shutil
import sys
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from rich.console import Console, RenderableType
from rich.measure import Measurement
from rich.table import Table

from benchrun.runner.format import printable

#: columns of output that goes to a pipe or a file when neither ``COLUMNS`` nor a terminal
#: on stderr says otherwise (wide enough for every column of the results table)
PIPE_WIDTH = 160

#: a width no table reaches, offered when measuring one's natural width
UNBOUNDED = 100_000

Justify = Literal["left", "right", "center"]


@dataclass(frozen=True)
class Col:
    """One column of a fitted table.

    Attributes
    ----------
    header : str
        The header text (plain, no markup).
    justify : {"left", "right", "center"}
        Alignment of the cells.
    drop : int
        0: never left out; otherwise the column is left out before every column of a
        lower ``drop`` (the highest first) when the table is too wide.
    fold : bool
        The column may wrap its cells when the essential columns alone are too wide
        (names); the others never wrap.
    """

    header: str
    justify: Justify = "left"
    drop: int = 0
    fold: bool = False


def output_width(environ: Mapping[str, str] | None = None) -> int:
    """Columns for output that does not go to a terminal (module docstring): ``COLUMNS``
    when it is a positive integer, else the width of a terminal on stderr, else
    :data:`PIPE_WIDTH`."""
    env = os.environ if environ is None else environ
    columns = env.get("COLUMNS", "").strip()
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        if sys.stderr is not None and sys.stderr.isatty():
            return shutil.get_terminal_size((PIPE_WIDTH, 24)).columns
    except (AttributeError, ValueError, OSError):
        pass
    return PIPE_WIDTH


def _build(
    columns: Sequence[Col],
    rows: Sequence[Sequence[RenderableType]],
    keep: Sequence[int],
    title: str | None,
    wrap: bool,
) -> Table:
    table = Table(title=None if title is None else printable(title), header_style="bold")
    for i in keep:
        c = columns[i]
        # wrap: the essential columns alone are too wide; every cell may wrap (the fold
        # columns first: rich narrows the widest wrappable columns), none is cut short
        table.add_column(c.header, justify=c.justify, no_wrap=not wrap, overflow="fold")
    for row in rows:
        # names escaped before rich measures them (runner/ui/terminal.py escapes whatever
        # else reaches the terminal, but after the columns were sized)
        table.add_row(*(_printable_cell(row[i]) for i in keep))
    return table


def _printable_cell(cell: RenderableType) -> RenderableType:
    """A text cell with unprintable characters escaped (runner/format.py); others as given."""
    return printable(cell, "\n") if isinstance(cell, str) else cell


def natural_width(console: Console, renderable: RenderableType) -> int:
    """The width ``renderable`` takes with nothing wrapped (measured with room to spare:
    rich clips a measurement to the width it is offered)."""
    options = console.options.update_width(UNBOUNDED)
    return Measurement.get(console, options, renderable).maximum


def fit_table(
    console: Console,
    width: int,
    columns: Sequence[Col],
    rows: Sequence[Sequence[RenderableType]],
    title: str | None = None,
) -> tuple[Table, list[str]]:
    """A table of ``rows`` that is at most ``width`` columns wide, and the headers of the
    columns left out to get there (in table order).

    Columns are left out highest ``drop`` first until the table's natural width (every
    cell on one line) fits; if the columns with ``drop == 0`` alone are too wide, the
    cells wrap instead (``fold`` columns are given no minimum width, so they give way
    first). A cell is never shortened with an ellipsis.
    """
    keep = list(range(len(columns)))
    while True:
        table = _build(columns, rows, keep, title, wrap=False)
        if natural_width(console, table) <= width:
            return table, [columns[i].header for i in range(len(columns)) if i not in keep]
        droppable = [i for i in keep if columns[i].drop > 0]
        if not droppable:
            break
        keep.remove(max(droppable, key=lambda i: (columns[i].drop, i)))
    table = _build(columns, rows, keep, title, wrap=True)
    return table, [columns[i].header for i in range(len(columns)) if i not in keep]


def dropped_note(dropped: Sequence[str], width: int, more: str) -> str | None:
    """The line saying which columns a table of ``width`` columns left out and where they
    are (``more``, e.g. "--json shows them"); None when none was."""
    if not dropped:
        return None
    return f"({', '.join(dropped)}: not shown at {width} columns; {more})"


#: a space that :func:`wrap_lines` never breaks at (between the digit groups of a number)
KEEP = "\u00a0"


def wrap_lines(text: str, width: int, indent: int = 2) -> list[str]:
    """``text`` as lines of at most ``width`` columns, the second and later indented by
    ``indent`` spaces (a note under a table); never broken at :data:`KEEP` (which
    becomes a plain space)."""
    lines = textwrap.wrap(
        text,
        width=max(indent + 8, width),
        subsequent_indent=" " * indent,
        break_on_hyphens=False,
    )
    return [line.replace(KEEP, " ") for line in lines] or [""]
