"""Google Benchmark and pyperf files read through their records (runner/importers/gbench.py
``EntryKind``/``Reading``, runner/importers/pyperf.py ``PyperfRun``): which entries are
readings, and the one line a damaged field gives. Documents written by hand; the expected
readings are the numbers written in them."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from benchrun.runner.errors import UserError
from benchrun.runner.importers.detect import from_document


def _gbench(*entries: dict[str, Any], context: object = None) -> dict[str, Any]:
    return {"context": context, "benchmarks": list(entries)}


def test_gbench_aggregates_and_failed_entries_are_left_out_before_any_check() -> None:
    doc = _gbench(
        {"name": "f", "run_type": "iteration", "real_time": 2.0, "time_unit": "us"},
        {"name": "f", "run_type": "iteration", "real_time": 4.0, "time_unit": "us"},
        # an aggregate's unit is never looked at
        {"name": "f_mean", "run_type": "aggregate", "real_time": 3.0, "time_unit": "parsec"},
        # legacy layout: another entry's name with an aggregate's suffix
        {"name": "f_stddev", "real_time": 1.0},
        {"name": "g", "error_occurred": True, "real_time": None},
        {"name": "h", "skipped": 1},
        context={"library_build_type": "debug", "cpu_scaling_enabled": True},
    )
    ds = from_document(doc, "g.json")
    assert ds.unit == "us" and np.array_equal(ds.groups[(None, "f", None)], [2.0, 4.0])
    assert ds.notes == (
        "2 aggregate entries (mean/median/stddev...) excluded",
        "2 entries that reported an error or were skipped left out",
        "the benchmark library was built in debug mode (timings may be off)",
        "CPU frequency scaling was enabled during the run (adds noise)",
    )


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"name": "f", "real_time": 1.0, "time_unit": "parsec"},
         "g.json: benchmarks[0] (f): unknown time_unit 'parsec'"),
        ({"name": "f", "real_time": 1.0, "time_unit": 3},
         "g.json: benchmarks[0] (f): unknown time_unit a number"),
        ({"name": "f", "run_name": 7, "real_time": 1.0},
         "g.json: benchmarks[0]: name must be text, got a number"),
        ({"name": "f", "cpu_time": 1.0}, "g.json: benchmarks[0] (f): no 'real_time'"),
        ({"name": "f", "real_time": "fast"},
         "g.json: benchmarks[0] (f) real_time: value 'fast' is not a number"),
    ],
)  # fmt: skip
def test_gbench_a_damaged_reading_is_one_line(entry: dict[str, Any], message: str) -> None:
    with pytest.raises(UserError) as err:
        from_document(_gbench(entry, {"name": "z", "real_time": 1.0}), "g.json", "gbench")
    assert str(err.value) == message


def _pyperf(*runs: object, meta: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"benchmarks": [{"metadata": meta or {"name": "b"}, "runs": list(runs)}]}


def test_pyperf_runs_with_samples_warmups_and_calibration() -> None:
    doc = _pyperf(
        {"metadata": {"calibrate_loops": 4}, "warmups": [[1, 0.5]]},  # calibration only
        {"values": [1.0, 2.0], "warmups": [[1, 9.0]]},
        {"samples": [3.0]},  # files of old pyperf versions
        meta={"name": "b", "unit": "byte"},
    )
    ds = from_document(doc, "p.json")
    assert ds.unit == "B" and np.array_equal(ds.groups[(None, "b", None)], [1.0, 2.0, 3.0])
    assert ds.processes[(None, "b", None)] == (2, 1)
    assert ds.notes == (
        "2 pyperf warm-up values excluded (stored apart by pyperf)",
        "1 pyperf calibration runs (no values) skipped",
    )


@pytest.mark.parametrize(
    ("run", "message"),
    [
        ("x", "p.json: benchmarks[0].runs[0] is not an object"),
        ({"metadata": {"unit": None}, "values": [1.0]},
         "p.json: benchmarks[0].runs[0]: metadata unit must be text, got null"),
        ({"values": "1.0"}, "p.json: benchmarks[0].runs[0].values: expected an array, got text"),
        ({"samples": {"a": 1}},
         "p.json: benchmarks[0].runs[0].values: expected an array, got an object"),
        ({"values": [1.0], "warmups": 2},
         "p.json: benchmarks[0].runs[0].warmups: expected an array, got a number"),
        ({"values": [1.0, None]},
         "p.json: benchmarks[0].runs[0].values[1]: expected a number, got null"),
    ],
)  # fmt: skip
def test_pyperf_a_damaged_run_is_one_line(run: object, message: str) -> None:
    with pytest.raises(UserError) as err:
        from_document(_pyperf(run), "p.json", "pyperf")
    assert str(err.value) == message
