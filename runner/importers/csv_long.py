"""CSV in long form: one reading per row, rows in time order.

Columns (header names are case-insensitive): ``value`` (required, one number per row),
and optionally ``system``, ``benchmark``, ``workload`` (grouping: a group is one distinct
combination) and ``unit`` (one unit for the whole file). Other columns are ignored.
The delimiter is ``,`` unless the header is clearly ``;`` or tab separated.

Every mistake is a :class:`~runner.errors.UserError` naming the file and the row (the
header is row 1, as a spreadsheet would number it): a missing ``value`` column, a value
that is not a finite number, an empty grouping cell, mixed units, a file with no readings.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from typing import Any

import numpy as np

from benchrun.runner.errors import UserError
from benchrun.runner.importers.dataset import (
    Dataset,
    GroupKey,
    direction_for_unit,
    parse_number,
)

GROUP_COLUMNS: tuple[str, ...] = ("system", "benchmark", "workload")


def _delimiter(header_line: str) -> str:
    counts = {sep: header_line.count(sep) for sep in (",", ";", "\t")}
    best = max(counts, key=lambda sep: counts[sep])
    return best if counts[best] > 0 else ","


class _Rows:
    """A ``csv.reader`` whose parse errors (a field over the size limit, a NUL byte) are a
    :class:`UserError` naming the file and line."""

    def __init__(self, reader: Any, source: str) -> None:
        self.reader = reader
        self.source = source

    @property
    def line_num(self) -> int:
        return int(self.reader.line_num)

    def __iter__(self) -> Iterator[list[str]]:
        while True:
            try:
                row = next(self.reader)
            except StopIteration:
                return
            except csv.Error as exc:
                raise UserError(
                    f"{self.source}: line {self.reader.line_num}: not readable as CSV ({exc})"
                ) from None
            yield row


def read_csv(text: str, source: str) -> Dataset:
    """Parse long-form CSV ``text`` (already decoded) read from ``source``.

    Returns a :class:`Dataset` with ``source_format="csv"``; the direction is guessed from
    the unit (:func:`~runner.importers.dataset.direction_for_unit`).
    """
    if not text.strip():
        raise UserError(f"{source}: empty file")
    first_line = text.lstrip("\r\n").splitlines()[0]
    reader = _Rows(
        csv.reader(io.StringIO(text, newline=""), delimiter=_delimiter(first_line)), source
    )
    header: list[str] | None = None
    for row in reader:
        if any(cell.strip() for cell in row):
            header = [cell.strip().lower() for cell in row]
            break
    if header is None:  # pragma: no cover - text.strip() above guarantees a header
        raise UserError(f"{source}: empty file")
    if "value" not in header:
        raise UserError(
            f"{source}: no 'value' column (columns: {', '.join(header)}); benchrun expects "
            "one reading per row in a column named 'value'"
        )
    dupes = sorted({name for name in header if name and header.count(name) > 1})
    if dupes:
        raise UserError(f"{source}: column(s) named twice in the header: {', '.join(dupes)}")
    value_at = header.index("value")
    group_at = {name: header.index(name) for name in GROUP_COLUMNS if name in header}
    unit_at = header.index("unit") if "unit" in header else None

    readings: dict[GroupKey, list[float]] = {}
    unit: str | None = None
    for row in reader:
        line = reader.line_num
        if not any(cell.strip() for cell in row):
            continue
        where = f"{source}: row {line}"
        if len(row) <= value_at:
            raise UserError(f"{where}: only {len(row)} field(s), no value")
        value = parse_number(row[value_at], where)
        parts: list[str | None] = []
        for name in GROUP_COLUMNS:
            if name not in group_at:
                parts.append(None)
                continue
            at = group_at[name]
            cell = row[at].strip() if at < len(row) else ""
            if not cell:
                raise UserError(f"{where}: empty {name!r} cell (every reading needs its group)")
            parts.append(cell)
        if unit_at is not None:
            cell = row[unit_at].strip() if unit_at < len(row) else ""
            if cell:
                if unit is None:
                    unit = cell
                elif cell != unit:
                    raise UserError(
                        f"{where}: unit {cell!r} differs from {unit!r} used above; "
                        "one file must use one unit"
                    )
        key: GroupKey = (parts[0], parts[1], parts[2])
        readings.setdefault(key, []).append(value)

    if not readings:
        raise UserError(f"{source}: no readings (the file has a header but no data rows)")
    unit = unit or ""
    return Dataset(
        groups={key: np.asarray(values, dtype=float) for key, values in readings.items()},
        unit=unit,
        source_format="csv",
        direction=direction_for_unit(unit),
        source=source,
    )
