"""benchrun's own export (``benchrun export``, docs/export-format.md) as a :class:`Dataset`.

:func:`read_export` checks the format and version; :func:`analysed_readings` gives the
readings a later analysis uses (flag ``""`` or ``outlier``). Each exported workload becomes one group (``workload`` = its name) holding the readings
the campaign's analysis used, in launch order: warm-up rounds, within-round warm-up and
failed rounds are left out, Tukey outliers stay (docs/methods.md §1-2). A dataset has one
unit: workloads in another unit than the first are left out, and a note says which.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from benchrun.runner.errors import UserError
from benchrun.runner.importers.dataset import Dataset, GroupKey

FORMAT = "benchrun-export"
VERSION = 1
#: reading flags that are part of the analysed data
ANALYSED = ("", "outlier")


def looks_like_export(doc: Any) -> bool:
    """True for a parsed benchrun export document (any version)."""
    return isinstance(doc, dict) and doc.get("format") == FORMAT


def check_export(doc: Any, source: str) -> dict[str, Any]:
    """``doc`` if it is a benchrun export this version can read, else a UserError."""
    if not looks_like_export(doc):
        raise UserError(f'{source}: not a benchrun export (no "format": "{FORMAT}")')
    version = doc.get("version")
    if not isinstance(version, int) or version < 1:
        raise UserError(f"{source}: benchrun export without a valid version field")
    if version > VERSION:
        raise UserError(
            f"{source}: benchrun export version {version} is newer than this benchrun reads "
            f"({VERSION}); upgrade benchrun"
        )
    if not isinstance(doc.get("workloads"), list):
        raise UserError(f"{source}: benchrun export without a workloads list")
    return doc


def read_export(path: str | Path) -> dict[str, Any]:
    """Read and check a benchrun export file (JSON)."""
    p = Path(path)
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"{p}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{p}: cannot read ({exc})") from None
    except json.JSONDecodeError as exc:
        raise UserError(f"{p}: invalid JSON at line {exc.lineno}: {exc.msg}") from None
    return check_export(doc, str(p))


def analysed_readings(workload: dict[str, Any]) -> np.ndarray:
    """The readings of one exported workload that the analysis used, in launch order
    (flag ``""`` or ``outlier``; per unit of work when the workload was ``per_work``)."""
    values: list[float] = []
    for r in workload.get("rounds") or []:
        scale = float(r["work"]) if workload.get("per_work") and r.get("work") else 1.0
        flags = r.get("reading_flags") or [""] * len(r.get("readings") or [])
        for v, f in zip(r.get("readings") or [], flags, strict=False):
            if f.split(",")[0] in ANALYSED:
                values.append(float(v) / scale)
    return np.asarray(values, dtype=float)


def looks_like_benchrun(doc: Any) -> bool:
    """True when ``doc`` (parsed JSON) is a benchrun export document."""
    return looks_like_export(doc)


def read_benchrun(doc: dict[str, Any], source: str) -> Dataset:
    """Turn a parsed benchrun export into a :class:`Dataset` (the first workload's unit)."""
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
