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
from typing import Any, Literal

import numpy as np

from benchrun.runner.errors import UserError
from benchrun.runner.importers.dataset import Dataset, GroupKey, json_type, parse_number

#: seconds per unit of Google Benchmark's ``time_unit``
TIME_UNITS: dict[str, float] = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
_AGGREGATE_SUFFIXES = ("_mean", "_median", "_stddev", "_cv", "_BigO", "_RMS")

TimeField = Literal["real_time", "cpu_time"]


def looks_like_gbench(doc: Any) -> bool:
    """True when ``doc`` has Google Benchmark's ``benchmarks[].name/real_time`` shape."""
    if not isinstance(doc, Mapping):
        return False
    benchmarks = doc.get("benchmarks")
    return (
        isinstance(benchmarks, list)
        and len(benchmarks) > 0
        and all(isinstance(b, Mapping) and "name" in b for b in benchmarks)
        and any("real_time" in b or "cpu_time" in b for b in benchmarks)
    )


def _is_aggregate(entry: Mapping[str, Any], names: set[str]) -> bool:
    run_type = entry.get("run_type")
    if run_type is not None:
        return run_type != "iteration"
    if "aggregate_name" in entry:
        return True
    name = entry.get("name")
    if not isinstance(name, str):
        return False
    return any(name.endswith(s) and name[: -len(s)] in names for s in _AGGREGATE_SUFFIXES)


def read_gbench(
    doc: Mapping[str, Any], source: str, time_field: TimeField = "real_time"
) -> Dataset:
    """Turn a parsed Google Benchmark JSON document into a :class:`Dataset`.

    ``time_field`` picks ``real_time`` (wall clock, the default) or ``cpu_time``.
    """
    entries = doc["benchmarks"]
    names = {e["name"] for e in entries if isinstance(e, Mapping) and isinstance(e["name"], str)}
    raw: dict[GroupKey, list[tuple[float, str]]] = {}
    aggregates = errors = 0
    for index, entry in enumerate(entries):
        where = f"{source}: benchmarks[{index}]"
        if not isinstance(entry, Mapping):
            raise UserError(f"{where} is not an object")
        if _is_aggregate(entry, names):
            aggregates += 1
            continue
        if entry.get("error_occurred") or entry.get("skipped"):
            errors += 1
            continue
        name = entry.get("run_name") or entry["name"]
        if not isinstance(name, str) or not name:
            raise UserError(f"{where}: name must be text, got {json_type(name)}")
        if time_field not in entry:
            raise UserError(f"{where} ({name}): no {time_field!r}")
        unit = entry.get("time_unit", "ns")
        if not isinstance(unit, str) or unit not in TIME_UNITS:
            shown = repr(unit) if isinstance(unit, str) else json_type(unit)
            raise UserError(f"{where} ({name}): unknown time_unit {shown}")
        value = parse_number(entry[time_field], f"{where} ({name}) {time_field}")
        raw.setdefault((None, name, None), []).append((value, unit))
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
    context = doc.get("context")
    if isinstance(context, Mapping):
        if context.get("library_build_type") == "debug":
            notes.append("the benchmark library was built in debug mode (timings may be off)")
        if context.get("cpu_scaling_enabled"):
            notes.append("CPU frequency scaling was enabled during the run (adds noise)")
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
