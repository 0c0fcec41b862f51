"""Benchmark weights for the Speedup-Test's overall speedup (docs/methods.md §6.2, TOUATI §4).

A CSV file with two columns, ``benchmark`` and ``weight`` (header optional), one row per
benchmark; weights are finite numbers > 0 (for example the share of a real workload each
benchmark stands for).
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from benchrun.runner.errors import UserError
from benchrun.runner.format import printable
from benchrun.runner.importers.dataset import parse_number
from benchrun.runner.importers.readfile import read_import_text


def read_weights(path: str | Path) -> dict[str, float]:
    """Benchmark name -> weight, read from a ``benchmark,weight`` CSV file."""
    path = Path(path)
    text = read_import_text(path, "a weights file")
    reader = csv.reader(io.StringIO(text, newline=""))
    weights: dict[str, float] = {}
    for row in reader:
        line = reader.line_num
        cells = [cell.strip() for cell in row]
        if not any(cells):
            continue
        if line == 1 and [c.lower() for c in cells[:2]] == ["benchmark", "weight"]:
            continue
        where = f"{path}: row {line}"
        if len(cells) < 2 or not cells[0]:
            raise UserError(f"{where}: expected 'benchmark,weight'")
        weight = parse_number(cells[1], where)
        if weight <= 0:
            raise UserError(f"{where}: weight {cells[1]} must be > 0")
        name = printable(cells[0])  # as the dataset's names are (runner/importers/dataset.py)
        if name in weights:
            raise UserError(f"{where}: benchmark {name!r} has two weights")
        weights[name] = weight
    if not weights:
        raise UserError(f"{path}: no weights (expected rows 'benchmark,weight')")
    return weights
