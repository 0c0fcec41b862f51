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


def test_gbench_a_run_type_that_is_no_text_reads_as_missing() -> None:
    doc = _gbench(
        {"name": "f", "run_type": 7, "real_time": 2.0},  # a reading, by its name
        {"name": "f", "real_time": 4.0},
        {"name": "f_mean", "run_type": ["aggregate"], "real_time": 3.0},  # by its suffix
    )
    ds = from_document(doc, "g.json")
    assert np.array_equal(ds.groups[(None, "f", None)], [2.0, 4.0])
    assert ds.notes[0] == "1 aggregate entries (mean/median/stddev...) excluded"


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
         "p.json: benchmarks[0].runs[0].samples: expected an array, got an object"),
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


def _hyperfine(*results: object) -> dict[str, Any]:
    return {"results": list(results)}


def test_hyperfine_results_with_parameters_and_failed_runs() -> None:
    doc = _hyperfine(
        {"command": "sleep 1", "times": [1.0, 1.5], "parameters": {"n": 1, "mode": "fast"},
         "exit_codes": [0, 2]},
        {"command": "sleep 1", "times": ["2.0"], "parameters": {"n": 2}, "exit_codes": None},
    )  # fmt: skip
    ds = from_document(doc, "h.json")
    assert np.array_equal(ds.groups[(None, "sleep 1", "n=1,mode=fast")], [1.0, 1.5])
    assert np.array_equal(ds.groups[(None, "sleep 1", "n=2")], [2.0])
    assert ds.notes == (
        "sleep 1: 1 of 2 runs exited non-zero (hyperfine -i); their times are included",
    )


@pytest.mark.parametrize(
    ("result", "message"),
    [
        ({"command": 3, "times": [1.0]},
         "h.json: results[0].command: expected the command (text), got a number"),
        ({"command": "x", "mean": 1.0},
         "h.json: results[0] (x): no 'times' array (hyperfine older than 1.7 exports only "
         "summaries); re-run with a newer hyperfine"),
        ({"command": "x", "times": []}, "h.json: results[0] (x): 'times' is empty or not an array"),
        ({"command": "x", "times": [1.0, True]},
         "h.json: results[0] (x) times[1]: expected a number, got true"),
        ({"command": "x", "times": [1.0], "parameters": {"n": [1]}},
         "h.json: results[0] (x): 'parameters' must map names to values (text or numbers)"),
        ({"command": "x", "times": [1.0], "exit_codes": 0.5},
         "h.json: results[0] (x): 'exit_codes' must be an array, got a number"),
    ],
)  # fmt: skip
def test_hyperfine_a_damaged_result_is_one_line(result: dict[str, Any], message: str) -> None:
    with pytest.raises(UserError) as err:
        from_document(_hyperfine(result), "h.json", "hyperfine")
    assert str(err.value) == message


def test_hyperfine_the_same_command_twice_is_refused() -> None:
    twice = _hyperfine({"command": "x", "times": [1.0]}, {"command": "x", "times": [2.0]})
    with pytest.raises(UserError) as err:
        from_document(twice, "h.json")
    assert str(err.value) == "h.json: results[1] (x): the same command appears twice in the export"
