"""benchrun's own export (``benchrun export``, docs/export-format.md) as a :class:`Dataset`.

:func:`check_export` checks the format, the version and every field a reader uses (a
damaged file is one UserError naming the field); :func:`analysed_readings` gives the
readings a later analysis uses (flag ``""`` or ``outlier``). Each exported workload becomes
one group (``workload`` = its name) holding the readings the campaign's analysis used, in
launch order: warm-up rounds, within-round warm-up, failed rounds and contended rounds
the campaign left out (reading flag ``contended``, docs/contention.md) are left out, Tukey
outliers stay (docs/methods.md §1-2). The dataset says which readings form each round
(``Dataset.rounds``), so ``analyze`` and ``compare`` estimate each workload as the
campaign did (the collector over its rounds). A dataset has one unit: workloads in another
unit than the first are left out, and a note says which.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from benchrun.runner.errors import UserError
from benchrun.runner.importers.dataset import Dataset, GroupKey, json_type, parse_number
from benchrun.runner.importers.jsontext import parse_json
from benchrun.runner.importers.readfile import read_import_text

FORMAT = "benchrun-export"
VERSION = 1
#: reading flags that are part of the analysed data
ANALYSED = ("", "outlier")
#: the values of a workload's ``direction``
DIRECTIONS = ("lower_is_better", "higher_is_better")


def looks_like_export(doc: Any) -> bool:
    """True for a parsed benchrun export document (any version)."""
    return isinstance(doc, dict) and doc.get("format") == FORMAT


def check_export(doc: Any, source: str) -> dict[str, Any]:
    """``doc`` if it is a benchrun export this version can read, else a UserError.

    Besides the format and version, every field a reader uses is checked (each workload's
    name, unit, direction, ``per_work``, ``result`` and every round's ``readings``,
    ``reading_flags`` and ``work``), so that a damaged or hand-edited file is refused with
    one line naming the field, e.g. ``run.json: workloads[0].rounds[3].readings[1]:
    expected a number, got None``.
    """
    if not looks_like_export(doc):
        raise UserError(f'{source}: not a benchrun export (no "format": "{FORMAT}")')
    version = doc.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise UserError(f"{source}: benchrun export without a valid version field")
    if version > VERSION:
        raise UserError(
            f"{source}: benchrun export version {version} is newer than this benchrun reads "
            f"({VERSION}); upgrade benchrun"
        )
    if not isinstance(doc.get("workloads"), list):
        raise UserError(f"{source}: benchrun export without a workloads list")
    if not isinstance(doc.get("campaign", {}), dict):
        raise UserError(f"{source}: campaign: expected an object, got {_kind(doc['campaign'])}")
    names: set[str] = set()
    for i, w in enumerate(doc["workloads"]):
        _check_workload(w, f"{source}: workloads[{i}]", names)
    return doc


def _kind(value: Any) -> str:
    """A parsed JSON value as an error message shows it: short text and numbers as they
    are, anything else by its kind ("null", "an array"...)."""
    if isinstance(value, str) and len(value) <= 20:
        return repr(value)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return repr(value) if abs(value) < 1e100 else "a huge number"
    return json_type(value)


def _check_workload(w: Any, where: str, names: set[str]) -> None:
    if not isinstance(w, dict):
        raise UserError(f"{where}: expected a workload object, got {_kind(w)}")
    name = w.get("name")
    if not isinstance(name, str) or not name:
        raise UserError(f"{where}.name: expected the workload's name (text), got {_kind(name)}")
    if name in names:
        raise UserError(f"{where}.name: workload {name!r} appears twice")
    names.add(name)
    if not isinstance(w.get("unit", ""), str):
        raise UserError(f"{where}.unit: expected text, got {_kind(w['unit'])}")
    direction = w.get("direction", "lower_is_better")
    if direction not in DIRECTIONS:
        raise UserError(
            f"{where}.direction: expected {' or '.join(DIRECTIONS)}, got {_kind(direction)}"
        )
    if not isinstance(w.get("per_work", False), bool | None):
        raise UserError(f"{where}.per_work: expected true or false, got {_kind(w['per_work'])}")
    result = w.get("result")
    if result is not None:
        _check_result(result, f"{where}.result")
    rounds = w.get("rounds")
    if rounds is None:
        return
    if not isinstance(rounds, list):
        raise UserError(f"{where}.rounds: expected an array of rounds, got {_kind(rounds)}")
    for j, r in enumerate(rounds):
        _check_round(r, f"{where}.rounds[{j}]")


def _check_result(r: Any, where: str) -> None:
    if not isinstance(r, dict):
        raise UserError(f"{where}: expected an object, got {_kind(r)}")
    for key in ("mean", "variance", "ci_low", "ci_high"):
        if r.get(key) is not None:
            parse_number(r[key], f"{where}.{key}")
    if r.get("variance") is not None and float(r["variance"]) < 0:
        raise UserError(f"{where}.variance: a variance cannot be negative ({r['variance']})")
    for key in ("n_q", "q"):
        v = r.get(key)
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 0):
            raise UserError(f"{where}.{key}: expected a whole number >= 0, got {_kind(v)}")


def _check_round(r: Any, where: str) -> None:
    if not isinstance(r, dict):
        raise UserError(f"{where}: expected a round object, got {_kind(r)}")
    readings = r.get("readings")
    if not isinstance(readings, list):
        raise UserError(f"{where}.readings: expected an array of numbers, got {_kind(readings)}")
    for k, v in enumerate(readings):
        parse_number(v, f"{where}.readings[{k}]")
    flags = r.get("reading_flags")
    if flags is not None:
        if not isinstance(flags, list) or not all(isinstance(f, str) for f in flags):
            raise UserError(f"{where}.reading_flags: expected an array of text flags")
        if len(flags) != len(readings):
            raise UserError(
                f"{where}.reading_flags: {len(flags)} flags for {len(readings)} readings"
            )
    wait = r.get("wait_ns")
    if wait is not None and (not isinstance(wait, int) or isinstance(wait, bool) or wait < 0):
        raise UserError(f"{where}.wait_ns: expected a whole number of ns >= 0, got {_kind(wait)}")
    if not isinstance(r.get("wait_source"), str | None):
        raise UserError(f"{where}.wait_source: expected text, got {_kind(r['wait_source'])}")
    if not isinstance(r.get("flags", ""), str):
        raise UserError(f"{where}.flags: expected comma-separated text, got {_kind(r['flags'])}")
    work = r.get("work")
    if work is not None and parse_number(work, f"{where}.work") <= 0:
        raise UserError(f"{where}.work: the amount of work must be positive, got {work!r}")


def read_export(path: str | Path) -> dict[str, Any]:
    """Read and check a benchrun export file (JSON)."""
    p = Path(path)
    return check_export(parse_json(read_import_text(p, "an export"), str(p)), str(p))


def analysed_rounds(workload: dict[str, Any]) -> list[np.ndarray]:
    """The readings of one exported workload that the analysis used, round by round in
    launch order (flag ``""`` or ``outlier``; per unit of work when the workload was
    ``per_work``); rounds without such a reading are left out."""
    out: list[np.ndarray] = []
    for r in workload.get("rounds") or []:
        scale = float(r["work"]) if workload.get("per_work") and r.get("work") else 1.0
        flags = r.get("reading_flags") or [""] * len(r.get("readings") or [])
        kept = [
            float(v) / scale
            for v, f in zip(r.get("readings") or [], flags, strict=False)
            if f.split(",")[0] in ANALYSED
        ]
        if kept:
            out.append(np.asarray(kept, dtype=float))
    return out


def contended_rounds(workload: dict[str, Any]) -> tuple[int, int]:
    """How many of an exported workload's ok, non-warm-up rounds are flagged ``contended``
    (they waited for a CPU, docs/contention.md), and how many of those the campaign's
    analysis left out (their readings flagged ``contended``; the others it kept)."""
    flagged = left_out = 0
    for r in workload.get("rounds") or []:
        marks = str(r.get("flags") or "").split(",")
        if r.get("status", "ok") != "ok" or r.get("warmup") or "contended" not in marks:
            continue
        flagged += 1
        flags = r.get("reading_flags") or []
        if flags and all(f.split(",")[0] == "contended" for f in flags):
            left_out += 1
    return flagged, left_out


def analysed_readings(workload: dict[str, Any]) -> np.ndarray:
    """The readings of one exported workload that the analysis used, in launch order
    (:func:`analysed_rounds` joined)."""
    rounds = analysed_rounds(workload)
    return np.concatenate(rounds) if rounds else np.zeros(0)


def looks_like_benchrun(doc: Any) -> bool:
    """True when ``doc`` (parsed JSON) is a benchrun export document."""
    return looks_like_export(doc)


def read_benchrun(doc: dict[str, Any], source: str) -> Dataset:
    """Turn a parsed benchrun export into a :class:`Dataset` (the first workload's unit)."""
    doc = check_export(doc, source)
    groups: dict[GroupKey, Any] = {}
    rounds: dict[GroupKey, tuple[int, ...]] = {}
    notes: list[str] = []
    unit = direction = None
    for w in doc["workloads"]:
        if "rounds" not in w:
            raise UserError(
                f"{source}: this export holds results only (no readings); "
                "export with `benchrun export --what all`"
            )
        by_round = analysed_rounds(w)
        flagged, left_out = contended_rounds(w)
        if flagged:
            notes.append(
                f"{w['name']}: {flagged} rounds were contended (waited for a CPU); "
                + (
                    f"{left_out} left out as the campaign's analysis did"
                    if left_out
                    else "kept, as the campaign's analysis did (contended: keep)"
                )
            )
        if not by_round:
            notes.append(f"{w['name']}: no analysed readings, left out")
            continue
        if unit is None:
            unit, direction = w.get("unit", ""), w.get("direction", "lower_is_better")
        elif w.get("unit", "") != unit or w.get("direction") != direction:
            notes.append(f"{w['name']}: unit {w.get('unit')!r} differs from {unit!r}, left out")
            continue
        key: GroupKey = (None, None, str(w["name"]))
        groups[key] = np.concatenate(by_round)
        rounds[key] = tuple(r.size for r in by_round)
    if not groups:
        raise UserError(f"{source}: no workload with analysed readings in this export")
    return Dataset(
        groups=groups,
        unit=unit or "",
        source_format="benchrun",
        direction=direction or "lower_is_better",
        source=source,
        notes=tuple(notes),
        rounds=rounds,
    )
