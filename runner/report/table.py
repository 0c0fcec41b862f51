"""A titled table of strings, the form every report table takes before a renderer lays it
out (HTML, Markdown); the report's tables are built in runner/report/tables.py, the
history page's in runner/report/history.py."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Table:
    """A titled table of strings; ``caption`` says what the columns mean."""

    title: str
    headers: tuple[str, ...]
    rows: Sequence[tuple[str, ...]]
    caption: str = ""
