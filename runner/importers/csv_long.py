"""CSV in long form: one reading per row, rows in time order.

Columns (header names are case-insensitive): ``value`` (required, one number per row),
and optionally ``system``, ``benchmark``, ``workload`` (grouping: a group is one distinct
combination) and ``unit`` (one unit for the whole file). Other columns are ignored.
The delimiter is ``,`` unless the header is clearly ``;`` or tab separated.

A column ``analysed`` (0 or 1) marks rows that are not part of the data: rows with 0 are
left out (benchrun's own export flags warm-up rounds, within-round warm-up and failed
rounds so). A file with the columns of ``benchrun export --format csv`` (``workload``,
``seq``, ``analysed``) is read as benchrun analysed it: the rows of one ``seq`` are one
round (``Dataset.rounds``), readings of ``per_work`` workloads are divided by ``work``,
and workloads in another unit than the first are left out with a note, as from the JSON
export (runner/importers/benchrun_export.py); ``param_*`` columns are ignored.

Every mistake is a :class:`~runner.errors.UserError` naming the file and the row (the
header is row 1, as a spreadsheet would number it): a missing ``value`` column, a value
that is not a finite number, an empty grouping cell, mixed units, a file with no readings.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from dataclasses import dataclass
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
#: the columns that mark a file as benchrun's readings export (``benchrun export --format csv``)
BENCHRUN_COLUMNS: tuple[str, ...] = ("workload", "seq", "analysed")


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


@dataclass(frozen=True)
class _Columns:
    """Where each known column is in a long-form CSV header (None: absent); ``benchrun``:
    the header is ``benchrun export``'s (its seq, work and per_work columns are read)."""

    value_at: int
    group_at: dict[str, int]
    unit_at: int | None
    analysed_at: int | None
    benchrun: bool
    seq_at: int | None
    work_at: int | None
    per_work_at: int | None


def _columns(header: list[str], source: str) -> _Columns:
    """The columns of ``header`` (lower-cased names); :class:`UserError` without a
    ``value`` column or with a name given twice."""
    if "value" not in header:
        raise UserError(
            f"{source}: no 'value' column (columns: {', '.join(header)}); benchrun expects "
            "one reading per row in a column named 'value'"
        )
    dupes = sorted({name for name in header if name and header.count(name) > 1})
    if dupes:
        raise UserError(f"{source}: column(s) named twice in the header: {', '.join(dupes)}")
    benchrun = all(name in header for name in BENCHRUN_COLUMNS)
    return _Columns(
        value_at=header.index("value"),
        group_at={name: header.index(name) for name in GROUP_COLUMNS if name in header},
        unit_at=header.index("unit") if "unit" in header else None,
        analysed_at=header.index("analysed") if "analysed" in header else None,
        benchrun=benchrun,
        seq_at=header.index("seq") if benchrun else None,
        work_at=header.index("work") if benchrun and "work" in header else None,
        per_work_at=header.index("per_work") if benchrun and "per_work" in header else None,
    )


def _field(row: list[str], at: int | None) -> str:
    """The stripped cell at ``at`` ("" when the column is absent or the row short)."""
    return row[at].strip() if at is not None and at < len(row) else ""


def _group_key(row: list[str], group_at: dict[str, int], where: str) -> GroupKey:
    """The group of a row: its cell of each group column present (None for an absent
    column); :class:`UserError` for an empty cell."""
    parts: list[str | None] = []
    for name in GROUP_COLUMNS:
        if name not in group_at:
            parts.append(None)
            continue
        cell = _field(row, group_at[name])
        if not cell:
            raise UserError(f"{where}: empty {name!r} cell (every reading needs its group)")
        parts.append(cell)
    return (parts[0], parts[1], parts[2])


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
    cols = _columns(header, source)
    value_at, group_at, benchrun = cols.value_at, cols.group_at, cols.benchrun
    unit_at, analysed_at, seq_at = cols.unit_at, cols.analysed_at, cols.seq_at
    work_at, per_work_at = cols.work_at, cols.per_work_at

    readings: dict[GroupKey, list[float]] = {}
    rounds: dict[GroupKey, list[int]] = {}
    last_seq: dict[GroupKey, str] = {}
    units: dict[GroupKey, str] = {}
    unit: str | None = None
    left_out = 0
    for row in reader:
        line = reader.line_num
        if not any(cell.strip() for cell in row):
            continue
        where = f"{source}: row {line}"
        if len(row) <= value_at:
            raise UserError(f"{where}: only {len(row)} field(s), no value")
        if analysed_at is not None and _field(row, analysed_at) == "0":
            left_out += 1
            continue
        value = parse_number(row[value_at], where)
        if per_work_at is not None and _field(row, per_work_at) == "1" and _field(row, work_at):
            work = parse_number(_field(row, work_at), f"{where}: work")
            if work <= 0:
                raise UserError(f"{where}: the amount of work must be positive, got {work:g}")
            value /= work
        key = _group_key(row, group_at, where)
        unit_cell = _field(row, unit_at)
        if benchrun:
            units.setdefault(key, unit_cell)
            seq = _field(row, seq_at)
            if last_seq.get(key) != seq:
                rounds.setdefault(key, []).append(0)
                last_seq[key] = seq
            rounds[key][-1] += 1
        elif unit_cell:
            if unit is None:
                unit = unit_cell
            elif unit_cell != unit:
                raise UserError(
                    f"{where}: unit {unit_cell!r} differs from {unit!r} used above; "
                    "one file must use one unit"
                )
        readings.setdefault(key, []).append(value)

    if not readings:
        more = f" ({left_out} rows marked analysed = 0)" if left_out else ""
        raise UserError(f"{source}: no readings (the file has a header but no data rows){more}")
    notes: list[str] = []
    if left_out:
        notes.append(f"{left_out} rows with analysed = 0 left out (warm-up, failed rounds)")
    if benchrun:
        unit = next(iter(units.values()))
        for key in [k for k, u in units.items() if u != unit]:
            notes.append(f"{key[2]}: unit {units[key]!r} differs from {unit!r}, left out")
            del readings[key], rounds[key]
    unit = unit or ""
    return Dataset(
        groups={key: np.asarray(values, dtype=float) for key, values in readings.items()},
        unit=unit,
        source_format="benchrun-csv" if benchrun else "csv",
        direction=direction_for_unit(unit),
        source=source,
        notes=tuple(notes),
        rounds={key: tuple(counts) for key, counts in rounds.items()},
    )
