"""Google Benchmark ``--benchmark_format=json`` / ``--benchmark_out=FILE`` files.

Layout: ``{"context": {...}, "benchmarks": [{"name", "run_name", "run_type":
"iteration"|"aggregate", "aggregate_name", "repetitions", "repetition_index",
"iterations", "real_time", "cpu_time", "time_unit", ...}, ...]}``. One entry with
``run_type == "iteration"`` is one reading: the time per iteration of one repetition
(already divided by ``iterations`` by the library). ``--benchmark_repetitions=N`` gives N
readings per benchmark. Aggregates (mean, median, stddev, cv, BigO, RMS) are computed by
the library from those readings and are *excluded*; benchrun recomputes them. Files from
library versions without ``run_type`` are recognised by ``aggregate_name`` or by the
``_mean``/``_median``/``_stddev``/``_cv`` name suffix. Entries that reported an error or
were skipped are left out and counted in the notes.

Times are converted to one unit: the file's ``time_unit`` when every entry shares it,
otherwise the finest unit present.

The repetition is the unit (docs/imported-data.md): each iteration entry is the mean
time of one repetition (many iterations timed together), so it is one observation and
n = the number of repetitions; the library's aggregates never count as data.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np

from benchrun.runner.errors import UserError
from benchrun.runner.importers.dataset import Dataset, GroupKey, json_type, parse_number
from benchrun.runner.jsonread import JsonFields

#: seconds per unit of Google Benchmark's ``time_unit``
TIME_UNITS: dict[str, float] = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
_AGGREGATE_SUFFIXES = ("_mean", "_median", "_stddev", "_cv", "_BigO", "_RMS")

TimeField = Literal["real_time", "cpu_time"]


def _benchmarks(doc: object) -> list[object]:
    """The ``benchmarks`` array of a parsed document ([] without one)."""
    benchmarks = doc.get("benchmarks") if isinstance(doc, Mapping) else None
    return benchmarks if isinstance(benchmarks, list) else []


def looks_like_gbench(doc: object) -> bool:
    """True when ``doc`` has Google Benchmark's ``benchmarks[].name/real_time`` shape."""
    benchmarks = _benchmarks(doc)
    return (
        len(benchmarks) > 0
        and all(isinstance(b, Mapping) and "name" in b for b in benchmarks)
        and any(
            isinstance(b, Mapping) and ("real_time" in b or "cpu_time" in b) for b in benchmarks
        )
    )


@dataclass(frozen=True)
class EntryKind:
    """What says whether an entry of ``benchmarks[]`` is a reading, read without refusing
    anything (an aggregate or a failed entry is left out before its fields are checked):
    ``run_type`` (``iteration``/``aggregate``; None in files of library versions without
    it, or when it is not text), ``aggregate_name`` present, ``name`` (None when not
    text), whether it reported an error or was skipped."""

    run_type: str | None
    aggregate_name: bool
    name: str | None
    error_occurred: bool
    skipped: bool

    @classmethod
    def from_json(cls, entry: Mapping[str, object], where: str) -> EntryKind:
        f = JsonFields(entry, where)
        return cls(
            run_type=f.loose("run_type", str),
            aggregate_name=f.has("aggregate_name"),
            name=f.loose("name", str),
            error_occurred=bool(f.value("error_occurred")),
            skipped=bool(f.value("skipped")),
        )

    def aggregate(self, names: set[str]) -> bool:
        """An aggregate the library computed (mean, median, stddev, cv, BigO, RMS): by
        ``run_type``, else by ``aggregate_name``, else by a name that is another entry's
        name with an aggregate's suffix (``names``: every entry's name)."""
        if self.run_type is not None:
            return self.run_type != "iteration"
        if self.aggregate_name:
            return True
        name = self.name
        if name is None:
            return False
        return any(name.endswith(s) and name[: -len(s)] in names for s in _AGGREGATE_SUFFIXES)


@dataclass(frozen=True)
class Reading:
    """One repetition of a benchmark, checked: its name (``run_name``, else ``name``), its
    time per iteration and that time's unit (``time_unit``, default ``ns``)."""

    name: str
    value: float
    unit: str

    @classmethod
    def from_json(cls, entry: Mapping[str, object], where: str, time_field: TimeField) -> Reading:
        """The reading of an iteration entry; a UserError naming the entry when its name,
        its time or the time's unit is missing or not what it should be."""
        name = entry.get("run_name") or entry["name"]  # every entry has one (looks_like_gbench)
        if not isinstance(name, str) or not name:
            raise UserError(f"{where}: name must be text, got {json_type(name)}")
        if time_field not in entry:
            raise UserError(f"{where} ({name}): no {time_field!r}")
        unit = entry.get("time_unit", "ns")
        if not isinstance(unit, str) or unit not in TIME_UNITS:
            shown = repr(unit) if isinstance(unit, str) else json_type(unit)
            raise UserError(f"{where} ({name}): unknown time_unit {shown}")
        value = parse_number(entry[time_field], f"{where} ({name}) {time_field}")
        return cls(name, value, unit)


def _context_notes(context: object) -> list[str]:
    """What the file's ``context`` says that makes its timings doubtful: a debug build of
    the library, CPU frequency scaling enabled."""
    if not isinstance(context, Mapping):
        return []
    checks = {
        "library_build_type": (
            lambda v: v == "debug",
            "the benchmark library was built in debug mode (timings may be off)",
        ),
        "cpu_scaling_enabled": (
            bool,
            "CPU frequency scaling was enabled during the run (adds noise)",
        ),
    }
    return [note for key, (bad, note) in checks.items() if bad(context.get(key))]


def read_gbench(
    doc: Mapping[str, object], source: str, time_field: TimeField = "real_time"
) -> Dataset:
    """Turn a parsed Google Benchmark JSON document into a :class:`Dataset`.

    ``time_field`` picks ``real_time`` (wall clock, the default) or ``cpu_time``.
    """
    entries = _benchmarks(doc)
    kinds = [
        EntryKind.from_json(e, f"{source}: benchmarks[{i}]") if isinstance(e, Mapping) else None
        for i, e in enumerate(entries)
    ]
    names = {k.name for k in kinds if k is not None and k.name is not None}
    raw: dict[GroupKey, list[tuple[float, str]]] = {}
    aggregates = errors = 0
    for index, (entry, kind) in enumerate(zip(entries, kinds, strict=True)):
        where = f"{source}: benchmarks[{index}]"
        if kind is None or not isinstance(entry, Mapping):
            raise UserError(f"{where} is not an object")
        if kind.aggregate(names):
            aggregates += 1
            continue
        if kind.error_occurred or kind.skipped:
            errors += 1
            continue
        r = Reading.from_json(entry, where, time_field)
        raw.setdefault((None, r.name, None), []).append((r.value, r.unit))
    if not raw:
        if aggregates:
            raise UserError(
                f"{source}: only aggregate entries (mean/median/stddev); re-run without "
                "--benchmark_report_aggregates_only so the individual repetitions are kept"
            )
        raise UserError(f"{source}: no benchmark entries with a time")
    units = {u for readings in raw.values() for _, u in readings}
    target = next(iter(units)) if len(units) == 1 else min(units, key=TIME_UNITS.__getitem__)
    groups = {
        key: np.array([v * TIME_UNITS[u] / TIME_UNITS[target] for v, u in readings])
        for key, readings in raw.items()
    }
    notes: list[str] = []
    if aggregates:
        notes.append(f"{aggregates} aggregate entries (mean/median/stddev...) excluded")
    if errors:
        notes.append(f"{errors} entries that reported an error or were skipped left out")
    single = [key[1] for key, values in groups.items() if len(values) < 2]
    if single:
        notes.append(
            f"{len(single)} benchmark(s) have a single reading; "
            "run with --benchmark_repetitions=N for several"
        )
    notes += _context_notes(doc.get("context"))
    return Dataset(
        groups=groups,
        unit=target,
        source_format="gbench",
        direction="lower_is_better",
        source=source,
        notes=tuple(notes),
        processes={key: (1,) * values.size for key, values in groups.items()},
        process_word="repetition",
    )
