"""benchrun's own export (``benchrun export``, docs/export-format.md) as a :class:`Dataset`.

Each exported workload becomes one group (``workload`` = its name) holding the readings
the campaign's analysis used, in launch order: warm-up rounds, within-round warm-up and
failed rounds are left out, Tukey outliers stay (docs/methods.md §1-2). A dataset has one
unit: workloads in another unit than the first are left out, and a note says which.
"""

from __future__ import annotations

from typing import Any

from runner.errors import UserError
from runner.importers.dataset import Dataset, GroupKey


def looks_like_benchrun(doc: Any) -> bool:
    """True when ``doc`` (parsed JSON) is a benchrun export document."""
    from runner.exchange import looks_like_export

    return looks_like_export(doc)


def read_benchrun(doc: dict[str, Any], source: str) -> Dataset:
    """Turn a parsed benchrun export into a :class:`Dataset` (the first workload's unit)."""
    from runner.exchange import analysed_readings, check_export

    doc = check_export(doc, source)
    groups: dict[GroupKey, Any] = {}
    notes: list[str] = []
    unit = direction = None
    for w in doc["workloads"]:
        if "rounds" not in w:
            raise UserError(
                f"{source}: this export holds results only (no readings); "
                "export with `benchrun export --what all`"
            )
        values = analysed_readings(w)
        if values.size == 0:
            notes.append(f"{w['name']}: no analysed readings, left out")
            continue
        if unit is None:
            unit, direction = w.get("unit", ""), w.get("direction", "lower_is_better")
        elif w.get("unit", "") != unit or w.get("direction") != direction:
            notes.append(f"{w['name']}: unit {w.get('unit')!r} differs from {unit!r}, left out")
            continue
        groups[(None, None, str(w["name"]))] = values
    if not groups:
        raise UserError(f"{source}: no workload with analysed readings in this export")
    return Dataset(
        groups=groups,
        unit=unit or "",
        source_format="benchrun",
        direction=direction or "lower_is_better",
        source=source,
        notes=tuple(notes),
    )
