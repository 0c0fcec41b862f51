"""pyperf JSON files (``python -m pyperf ... -o bench.json``, also ``.json.gz``).

Layout (pyperf JSON format "1.0"; older version 6 is read the same way):
``{"version": "1.0", "metadata": {...suite-wide...}, "benchmarks": [{"metadata":
{"name": ..., "unit": ...}, "runs": [{"metadata": {...}, "warmups": [[loops, value],
...], "values": [...]}, ...]}, ...]}``. Metadata is inherited suite -> benchmark -> run,
so ``name`` and ``unit`` may sit at any level. Each run is one worker process; its
``values`` are already normalised per loop iteration by pyperf. Warm-up values are stored
separately by pyperf and are *excluded* here (pyperf excludes them too); runs with no
values are calibration runs and are skipped. A file with one benchmark and a suite with
several are the same format.

The process is the unit (docs/imported-data.md): the dataset records how many values each
run contributed, so ``benchrun compare`` and ``benchrun analyze`` take the mean of each
run as one observation (n = the number of runs), as pyperf's worker processes are
independent of each other while the values of one process are not.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from benchrun.runner.errors import UserError
from benchrun.runner.importers.dataset import Dataset, GroupKey, json_type, parse_number
from benchrun.runner.jsonread import MISSING, JsonFields

#: pyperf unit names -> benchrun unit strings
PYPERF_UNITS: dict[str, str] = {"second": "s", "byte": "B", "integer": ""}


def _benchmarks(doc: object) -> list[object]:
    """The ``benchmarks`` array of a parsed document ([] without one)."""
    benchmarks = doc.get("benchmarks") if isinstance(doc, Mapping) else None
    return benchmarks if isinstance(benchmarks, list) else []


def looks_like_pyperf(doc: object) -> bool:
    """True when ``doc`` has pyperf's ``benchmarks[].runs`` shape."""
    benchmarks = _benchmarks(doc)
    return len(benchmarks) > 0 and all(_runs(b) is not None for b in benchmarks)


def _runs(bench: object) -> list[object] | None:
    """The ``runs`` array of a benchmark (None without one)."""
    runs = bench.get("runs") if isinstance(bench, Mapping) else None
    return runs if isinstance(runs, list) else None


def _metadata(obj: object) -> dict[str, object]:
    """The ``metadata`` object of a suite, benchmark or run ({} without one): pyperf's
    free-form key/value pairs, of which benchrun reads ``name`` and ``unit``."""
    meta = obj.get("metadata") if isinstance(obj, Mapping) else None
    return {str(k): v for k, v in meta.items()} if isinstance(meta, Mapping) else {}


def _array(v: object, where: str) -> list[object]:
    """An array of a run (its values or warm-ups); [] when absent, null or empty."""
    items = [] if v is MISSING or not v else v
    if not isinstance(items, list):
        raise UserError(f"{where}: expected an array, got {json_type(items)}")
    return items


@dataclass(frozen=True)
class PyperfRun:
    """One run (one worker process) of a pyperf benchmark, checked: its ``metadata``
    (those of its benchmark and suite under its own), its ``values`` (``samples`` in old
    files; empty for a calibration run) and how many warm-up values it has."""

    metadata: dict[str, object]
    values: tuple[float, ...]
    warmups: int

    @classmethod
    def from_json(cls, run: object, where: str, inherited: Mapping[str, object]) -> PyperfRun:
        """The run ``run`` at ``where`` (``FILE: benchmarks[0].runs[3]``); ``inherited``:
        the metadata of its benchmark and suite. A UserError naming the field when the
        run is no object, its unit no text, its values or warm-ups no array of numbers."""
        if not isinstance(run, Mapping):
            raise UserError(f"{where} is not an object")
        meta = {**inherited, **_metadata(run)}
        unit = meta.setdefault("unit", "second")
        if not isinstance(unit, str):
            raise UserError(f"{where}: metadata unit must be text, got {json_type(unit)}")
        f = JsonFields(run, where)
        key = "samples" if f.has("samples") and not f.has("values") else "values"  # old pyperf
        values = f.check(key, _array)
        warmups = f.check("warmups", _array)
        parsed = tuple(parse_number(v, f"{where}.{key}[{i}]") for i, v in enumerate(values))
        return cls(meta, parsed, len(warmups))

    @property
    def unit(self) -> str:
        """pyperf's unit of the values (``second``, ``byte``, ``integer``)."""
        return str(self.metadata["unit"])


def read_pyperf(doc: Mapping[str, object], source: str) -> Dataset:
    """Turn a parsed pyperf JSON document into a :class:`Dataset`.

    Readings of a benchmark are the ``values`` of its runs concatenated in run order
    (time order within the file); ``processes`` holds the number of values of each run. The unit is the pyperf unit mapped through
    :data:`PYPERF_UNITS` (``second`` -> ``s``); all benchmarks must share it.
    """
    suite_meta = _metadata(doc)
    groups: dict[GroupKey, np.ndarray] = {}
    processes: dict[GroupKey, tuple[int, ...]] = {}
    units: dict[str, str] = {}
    warmups = 0
    calibration = 0
    for b_index, bench in enumerate(_benchmarks(doc)):
        runs = _runs(bench)
        if runs is None:  # looks_like_pyperf refused it
            raise UserError(f"{source}: benchmarks[{b_index}] has no array of runs")
        bench_meta = {**suite_meta, **_metadata(bench)}
        name = bench_meta.get("name")
        values: list[float] = []
        sizes: list[int] = []
        for r_index, raw in enumerate(runs):
            run = PyperfRun.from_json(
                raw, f"{source}: benchmarks[{b_index}].runs[{r_index}]", bench_meta
            )
            name = name or run.metadata.get("name")
            units.setdefault(run.unit, f"benchmarks[{b_index}]")
            warmups += run.warmups
            if not run.values:
                calibration += 1
                continue
            values.extend(run.values)
            sizes.append(len(run.values))
        if not name:
            raise UserError(f"{source}: benchmarks[{b_index}] has no 'name' in its metadata")
        if not isinstance(name, str):
            raise UserError(
                f"{source}: benchmarks[{b_index}]: metadata name must be text, got "
                f"{json_type(name)}"
            )
        if not values:
            raise UserError(f"{source}: benchmark {name!r} has no values (only calibration runs)")
        key: GroupKey = (None, str(name), None)
        if key in groups:
            raise UserError(f"{source}: benchmark {name!r} appears twice")
        groups[key] = np.asarray(values, dtype=float)
        processes[key] = tuple(sizes)
    if len(units) > 1:
        raise UserError(
            f"{source}: benchmarks use different units ({', '.join(sorted(units))}); "
            "analyse them separately"
        )
    pyperf_unit = next(iter(units))
    unit = PYPERF_UNITS.get(pyperf_unit, pyperf_unit)
    notes: list[str] = []
    if warmups:
        notes.append(f"{warmups} pyperf warm-up values excluded (stored apart by pyperf)")
    if calibration:
        notes.append(f"{calibration} pyperf calibration runs (no values) skipped")
    return Dataset(
        groups=groups,
        unit=unit,
        source_format="pyperf",
        direction="lower_is_better",
        source=source,
        notes=tuple(notes),
        processes=processes,
    )
