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

The file is parsed once, at this boundary, into :class:`ExportDocument` (its
:class:`ExportWorkload` entries with their :class:`ExportResult` and :class:`ExportRound`
records): every field a reader uses is checked there, each field through its check
(:meth:`runner.jsonread.JsonFields.check`), the record built with typed keywords.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchrun.runner.errors import UserError
from benchrun.runner.importers.dataset import (
    Dataset,
    Direction,
    GroupKey,
    json_type,
    parse_number,
)
from benchrun.runner.importers.jsontext import parse_json
from benchrun.runner.importers.readfile import read_import_text
from benchrun.runner.jsonread import MISSING, JsonFields

FORMAT = "benchrun-export"
VERSION = 1
#: reading flags that are part of the analysed data
ANALYSED = ("", "outlier")
#: the values of a workload's ``direction``
DIRECTIONS = ("lower_is_better", "higher_is_better")


def _kind(value: object) -> str:
    """A parsed JSON value as an error message shows it: short text and numbers as they
    are, anything else by its kind ("null", "an array"...)."""
    if isinstance(value, str) and len(value) <= 20:
        return repr(value)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return repr(value) if abs(value) < 1e100 else "a huge number"
    return json_type(value)


def _whole(v: object, where: str) -> int | None:
    """A whole number >= 0, or None when absent or null."""
    if v is MISSING or v is None:
        return None
    if not isinstance(v, int) or isinstance(v, bool) or v < 0:
        raise UserError(f"{where}: expected a whole number >= 0, got {_kind(v)}")
    return v


def _number(v: object, where: str) -> float | None:
    """A number (:func:`parse_number`), or None when absent or null."""
    return None if v is MISSING or v is None else parse_number(v, where)


@dataclass(frozen=True)
class ExportResult:
    """The checked figures of a workload's ``result`` object (the estimate as the report
    states it, docs/export-format.md): mean, variance (unit²), CI bounds in the workload's
    unit; ``n_q`` subsession means of ``q`` readings. None: not in the file."""

    mean: float | None
    variance: float | None
    ci_low: float | None
    ci_high: float | None
    n_q: int | None
    q: int | None

    @classmethod
    def from_json(cls, raw: object, where: str) -> ExportResult:
        """The result of the ``result`` object ``raw``; a UserError naming the field
        (``where.variance``...) when one is not what it should be."""
        if not isinstance(raw, Mapping):
            raise UserError(f"{where}: expected an object, got {_kind(raw)}")
        f = JsonFields(raw, where)
        result = cls(
            mean=f.check("mean", _number),
            variance=f.check("variance", _number),
            ci_low=f.check("ci_low", _number),
            ci_high=f.check("ci_high", _number),
            n_q=f.check("n_q", _whole),
            q=f.check("q", _whole),
        )
        if result.variance is not None and result.variance < 0:
            raise UserError(f"{where}.variance: a variance cannot be negative ({raw['variance']})")
        return result


def _readings(v: object, where: str) -> tuple[float, ...]:
    if not isinstance(v, list):
        raise UserError(f"{where}: expected an array of numbers, got {_kind(v)}")
    return tuple(parse_number(x, f"{where}[{k}]") for k, x in enumerate(v))


def _reading_flags(v: object, where: str) -> tuple[str, ...] | None:
    if v is MISSING or v is None:
        return None
    if not isinstance(v, list) or not all(isinstance(f, str) for f in v):
        raise UserError(f"{where}: expected an array of text flags")
    return tuple(v)


def _wait_ns(v: object, where: str) -> int | None:
    if v is MISSING or v is None:
        return None
    if not isinstance(v, int) or isinstance(v, bool) or v < 0:
        raise UserError(f"{where}: expected a whole number of ns >= 0, got {_kind(v)}")
    return v


def _wait_source(v: object, where: str) -> str | None:
    if v is MISSING or v is None:
        return None
    if not isinstance(v, str):
        raise UserError(f"{where}: expected text, got {_kind(v)}")
    return v


def _round_flags(v: object, where: str) -> str:
    if v is MISSING:
        return ""
    if not isinstance(v, str):
        raise UserError(f"{where}: expected comma-separated text, got {_kind(v)}")
    return v


def _work(v: object, where: str) -> float | None:
    work = _number(v, where)
    if work is not None and work <= 0:
        raise UserError(f"{where}: the amount of work must be positive, got {v!r}")
    return work


@dataclass(frozen=True)
class ExportRound:
    """One exported round, checked: its ``readings`` (the workload's unit, per round as
    measured), their ``reading_flags`` (one per reading; None: not exported), its CPU wait
    ``wait_ns`` and where it was read, its ``flags`` (comma-separated), its amount of
    ``work`` (None: none), its ``status`` and whether it was a ``warmup`` round."""

    readings: tuple[float, ...]
    reading_flags: tuple[str, ...] | None
    wait_ns: int | None
    wait_source: str | None
    flags: str
    work: float | None
    status: str
    warmup: bool

    @classmethod
    def from_json(cls, raw: object, where: str) -> ExportRound:
        """The round of one object of a workload's ``rounds`` array; a UserError naming
        the field when one is not what it should be."""
        if not isinstance(raw, Mapping):
            raise UserError(f"{where}: expected a round object, got {_kind(raw)}")
        f = JsonFields(raw, where)
        r = cls(
            readings=f.check("readings", _readings),
            reading_flags=f.check("reading_flags", _reading_flags),
            wait_ns=f.check("wait_ns", _wait_ns),
            wait_source=f.check("wait_source", _wait_source),
            flags=f.check("flags", _round_flags),
            work=f.check("work", _work),
            # not checked (as before): what analysed_rounds and contended_rounds need of them
            status=str(f.value("status")) if f.has("status") else "ok",
            warmup=bool(f.value("warmup")),
        )
        if r.reading_flags is not None and len(r.reading_flags) != len(r.readings):
            raise UserError(
                f"{where}.reading_flags: {len(r.reading_flags)} flags for "
                f"{len(r.readings)} readings"
            )
        return r

    @property
    def marks(self) -> list[str]:
        """The round's flags, one by one (``contended``...)."""
        return self.flags.split(",")


def _name(v: object, where: str) -> str:
    if not isinstance(v, str) or not v:
        raise UserError(f"{where}: expected the workload's name (text), got {_kind(v)}")
    return v


def _unit(v: object, where: str) -> str:
    if v is MISSING:
        return ""
    if not isinstance(v, str):
        raise UserError(f"{where}: expected text, got {_kind(v)}")
    return v


def _direction(v: object, where: str) -> Direction:
    if v == "higher_is_better":
        return "higher_is_better"
    if v is MISSING or v == "lower_is_better":
        return "lower_is_better"
    raise UserError(f"{where}: expected {' or '.join(DIRECTIONS)}, got {_kind(v)}")


def _per_work(v: object, where: str) -> bool:
    if v is MISSING or v is None:
        return False
    if not isinstance(v, bool):
        raise UserError(f"{where}: expected true or false, got {_kind(v)}")
    return v


def _result(v: object, where: str) -> ExportResult | None:
    return None if v is MISSING or v is None else ExportResult.from_json(v, where)


def _rounds(v: object, where: str) -> tuple[ExportRound, ...] | None:
    if v is MISSING:
        return None
    if v is None:
        return ()
    if not isinstance(v, list):
        raise UserError(f"{where}: expected an array of rounds, got {_kind(v)}")
    return tuple(ExportRound.from_json(r, f"{where}[{j}]") for j, r in enumerate(v))


@dataclass(frozen=True)
class ExportWorkload:
    """One exported workload, checked: ``name``, ``unit``, ``direction``, whether its
    readings are ``per_work`` (divided by each round's work), its ``result`` (None: not
    exported) and its ``rounds`` (None: an export of results only)."""

    name: str
    unit: str
    direction: Direction
    per_work: bool
    result: ExportResult | None
    rounds: tuple[ExportRound, ...] | None

    @classmethod
    def from_json(cls, raw: object, where: str) -> ExportWorkload:
        """The workload of one object of the ``workloads`` array; a UserError naming the
        field when one is not what it should be."""
        if not isinstance(raw, Mapping):
            raise UserError(f"{where}: expected a workload object, got {_kind(raw)}")
        f = JsonFields(raw, where)
        return cls(
            name=f.check("name", _name),
            unit=f.check("unit", _unit),
            direction=f.check("direction", _direction),
            per_work=f.check("per_work", _per_work),
            result=f.check("result", _result),
            rounds=f.check("rounds", _rounds),
        )


def _version(v: object, source: str) -> int:
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        raise UserError(f"{source}: benchrun export without a valid version field")
    if v > VERSION:
        raise UserError(
            f"{source}: benchrun export version {v} is newer than this benchrun "
            f"reads ({VERSION}); upgrade benchrun"
        )
    return v


def _campaign(v: object, source: str) -> Mapping[str, object]:
    if v is MISSING:
        return {}
    if not isinstance(v, Mapping):
        raise UserError(f"{source}: campaign: expected an object, got {_kind(v)}")
    return v


def _workloads(v: object, source: str) -> tuple[ExportWorkload, ...]:
    """The workloads of the ``workloads`` array, whose names must differ."""
    if not isinstance(v, list):
        raise UserError(f"{source}: benchrun export without a workloads list")
    names: set[str] = set()
    parsed = []
    for i, raw in enumerate(v):
        w = ExportWorkload.from_json(raw, f"{source}: workloads[{i}]")
        if w.name in names:
            raise UserError(f"{source}: workloads[{i}].name: workload {w.name!r} appears twice")
        names.add(w.name)
        parsed.append(w)
    return tuple(parsed)


@dataclass(frozen=True)
class ExportDocument:
    """A benchrun export this version reads, checked (:func:`check_export`): its
    ``version``, its ``campaign`` object (parsed JSON, walked by readers that need it)
    and its workloads, whose names differ."""

    version: int
    campaign: Mapping[str, object]
    workloads: tuple[ExportWorkload, ...]

    @classmethod
    def from_json(cls, doc: object, source: str) -> ExportDocument:
        """The export ``doc`` (parsed JSON read from ``source``), or a UserError naming
        ``source`` and the field (module docstring)."""
        if not isinstance(doc, Mapping) or not looks_like_export(doc):
            raise UserError(f'{source}: not a benchrun export (no "format": "{FORMAT}")')
        # checked in this order; the messages name the file, ``source``
        f = JsonFields(doc, source)
        return cls(
            version=f.check("version", _version, place=False),
            campaign=f.check("campaign", _campaign, place=False),
            workloads=f.check("workloads", _workloads, place=False),
        )


def looks_like_export(doc: object) -> bool:
    """True for a parsed benchrun export document (any version)."""
    return isinstance(doc, Mapping) and doc.get("format") == FORMAT


def check_export(doc: Any, source: str) -> dict[str, Any]:
    """``doc`` if it is a benchrun export this version can read, else a UserError.

    Besides the format and version, every field a reader uses is checked (each workload's
    name, unit, direction, ``per_work``, ``result`` and every round's ``readings``,
    ``reading_flags`` and ``work``), so that a damaged or hand-edited file is refused with
    one line naming the field, e.g. ``run.json: workloads[0].rounds[3].readings[1]:
    expected a number, got None``. Readers of the parsed document as it is (the report's
    compare) call this; :meth:`ExportDocument.from_json` gives the typed records.
    """
    ExportDocument.from_json(doc, source)
    return doc


def read_export(path: str | Path) -> ExportDocument:
    """Read and check a benchrun export file (JSON)."""
    p = Path(path)
    return ExportDocument.from_json(parse_json(read_import_text(p, "an export"), str(p)), str(p))


def _workload(workload: ExportWorkload | Mapping[str, object]) -> ExportWorkload:
    """The typed workload of a checked export's workload object (kept for readers of the
    parsed document, e.g. the report's compare)."""
    if isinstance(workload, ExportWorkload):
        return workload
    return ExportWorkload.from_json(workload, "export")


def analysed_rounds(workload: ExportWorkload | Mapping[str, object]) -> list[np.ndarray]:
    """The readings of one exported workload that the analysis used, round by round in
    launch order (flag ``""`` or ``outlier``; per unit of work when the workload was
    ``per_work``); rounds without such a reading are left out."""
    w = _workload(workload)
    out: list[np.ndarray] = []
    for r in w.rounds or ():
        scale = r.work if w.per_work and r.work else 1.0
        flags = r.reading_flags or ("",) * len(r.readings)
        kept = [
            v / scale
            for v, f in zip(r.readings, flags, strict=False)
            if f.split(",")[0] in ANALYSED
        ]
        if kept:
            out.append(np.asarray(kept, dtype=float))
    return out


def contended_rounds(workload: ExportWorkload | Mapping[str, object]) -> tuple[int, int]:
    """How many of an exported workload's ok, non-warm-up rounds are flagged ``contended``
    (they waited for a CPU, docs/contention.md), and how many of those the campaign's
    analysis left out (their readings flagged ``contended``; the others it kept)."""
    flagged = left_out = 0
    for r in _workload(workload).rounds or ():
        if r.status != "ok" or r.warmup or "contended" not in r.marks:
            continue
        flagged += 1
        flags = r.reading_flags or ()
        if flags and all(f.split(",")[0] == "contended" for f in flags):
            left_out += 1
    return flagged, left_out


def analysed_readings(workload: ExportWorkload | Mapping[str, object]) -> np.ndarray:
    """The readings of one exported workload that the analysis used, in launch order
    (:func:`analysed_rounds` joined)."""
    rounds = analysed_rounds(workload)
    return np.concatenate(rounds) if rounds else np.zeros(0)


def looks_like_benchrun(doc: object) -> bool:
    """True when ``doc`` (parsed JSON) is a benchrun export document."""
    return looks_like_export(doc)


def read_benchrun(doc: object, source: str) -> Dataset:
    """Turn a parsed benchrun export into a :class:`Dataset` (the first workload's unit)."""
    export = ExportDocument.from_json(doc, source)
    groups: dict[GroupKey, np.ndarray] = {}
    rounds: dict[GroupKey, tuple[int, ...]] = {}
    notes: list[str] = []
    unit: str | None = None
    direction: Direction | None = None
    for w in export.workloads:
        if w.rounds is None:
            raise UserError(
                f"{source}: this export holds results only (no readings); "
                "export with `benchrun export --what all`"
            )
        by_round = analysed_rounds(w)
        flagged, left_out = contended_rounds(w)
        if flagged:
            notes.append(
                f"{w.name}: {flagged} rounds were contended (waited for a CPU); "
                + (
                    f"{left_out} left out as the campaign's analysis did"
                    if left_out
                    else "kept, as the campaign's analysis did (contended: keep)"
                )
            )
        if not by_round:
            notes.append(f"{w.name}: no analysed readings, left out")
            continue
        if unit is None:
            unit, direction = w.unit, w.direction
        elif w.unit != unit or w.direction != direction:
            notes.append(f"{w.name}: unit {w.unit!r} differs from {unit!r}, left out")
            continue
        key: GroupKey = (None, None, w.name)
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
