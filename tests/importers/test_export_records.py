"""runner/importers/benchrun_export.py: a benchrun export parsed once into typed records.

The documents are written here by hand; the expected values are the ones written in them
(a per-work workload's readings divided by hand), and every damaged field is refused with
the one line the format's reader gave before the records existed (docs/export-format.md).
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest

from benchrun.runner.errors import UserError
from benchrun.runner.importers.benchrun_export import (
    ExportDocument,
    analysed_readings,
    check_export,
    contended_rounds,
    read_benchrun,
)


def _doc() -> dict[str, Any]:
    return {
        "format": "benchrun-export",
        "version": 1,
        "campaign": {"name": "c", "status": "done"},
        "workloads": [
            {
                "name": "a",
                "unit": "s",
                "per_work": True,
                "result": {"mean": 0.5, "variance": 0.01, "n_q": 4, "q": 2},
                "rounds": [
                    {"readings": [2.0, 4.0], "reading_flags": ["", "outlier"], "work": 4},
                    {"readings": [3.0], "reading_flags": ["warmup"], "work": 2},
                    {
                        "readings": [6.0],
                        "work": 2,
                        "flags": "contended",
                        "reading_flags": ["contended"],
                    },  # fmt: skip
                ],
            },
            {
                "name": "b",
                "unit": "s",
                "rounds": [{"readings": [1.5, 2.5], "warmup": True, "flags": "contended"}],
            },  # fmt: skip
        ],
    }


def test_fields_read_into_records_with_the_defaults_of_the_format() -> None:
    export = ExportDocument.from_json(_doc(), "run.json")
    a, b = export.workloads
    assert (a.name, a.unit, a.direction, a.per_work) == ("a", "s", "lower_is_better", True)
    assert a.result is not None
    assert (a.result.mean, a.result.variance, a.result.n_q, a.result.q) == (0.5, 0.01, 4, 2)
    assert a.result.ci_low is None
    assert a.rounds is not None and b.rounds is not None
    first = a.rounds[0]
    assert first.readings == (2.0, 4.0) and first.reading_flags == ("", "outlier")
    assert (first.work, first.flags, first.status, first.warmup) == (4.0, "", "ok", False)
    assert b.per_work is False and b.result is None and b.rounds[0].warmup
    assert b.rounds[0].reading_flags is None


def test_analysed_readings_per_work_and_contended_counts() -> None:
    export = ExportDocument.from_json(_doc(), "run.json")
    a, b = export.workloads
    # 2/4 and 4/4 (an outlier stays); the warm-up reading and the contended one are out
    assert analysed_readings(a).tolist() == [0.5, 1.0]
    # the stored dict form gives the same (the report's compare reads it)
    assert analysed_readings(_doc()["workloads"][0]).tolist() == [0.5, 1.0]
    assert contended_rounds(a) == (1, 1)
    # a warm-up round is not counted even when flagged
    assert contended_rounds(b) == (0, 0)
    assert analysed_readings(b).tolist() == [1.5, 2.5]


def test_read_benchrun_makes_one_group_per_workload() -> None:
    ds = read_benchrun(_doc(), "run.json")
    assert ds.unit == "s" and ds.source_format == "benchrun"
    assert np.array_equal(ds.groups[(None, None, "a")], [0.5, 1.0])
    assert ds.rounds[(None, None, "a")] == (2,)
    assert ds.rounds[(None, None, "b")] == (2,)
    assert any("1 rounds were contended" in n for n in ds.notes)


def _damaged(path: tuple[Any, ...], value: object) -> dict[str, Any]:
    doc = copy.deepcopy(_doc())
    node: Any = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return doc


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("workloads", 0, "rounds", 0, "flags"), None,
         "run.json: workloads[0].rounds[0].flags: expected comma-separated text, got null"),
        (("workloads", 0, "rounds", 0, "wait_ns"), -1,
         "run.json: workloads[0].rounds[0].wait_ns: expected a whole number of ns >= 0, got -1"),
        (("workloads", 0, "rounds", 0, "wait_source"), 3,
         "run.json: workloads[0].rounds[0].wait_source: expected text, got 3"),
        (("workloads", 0, "rounds", 1, "work"), 0,
         "run.json: workloads[0].rounds[1].work: the amount of work must be positive, got 0"),
        (("workloads", 0, "rounds", 0, "reading_flags"), [""],
         "run.json: workloads[0].rounds[0].reading_flags: 1 flags for 2 readings"),
        (("workloads", 0, "rounds", 0, "reading_flags"), [1, 2],
         "run.json: workloads[0].rounds[0].reading_flags: expected an array of text flags"),
        (("workloads", 0, "rounds", 0, "readings"), "1",
         "run.json: workloads[0].rounds[0].readings: expected an array of numbers, got '1'"),
        (("workloads", 0, "rounds", 2), [],
         "run.json: workloads[0].rounds[2]: expected a round object, got an array"),
        (("workloads", 0, "result", "variance"), -1.0,
         "run.json: workloads[0].result.variance: a variance cannot be negative (-1.0)"),
        (("workloads", 0, "result", "n_q"), 1.5,
         "run.json: workloads[0].result.n_q: expected a whole number >= 0, got 1.5"),
        (("workloads", 0, "result"), "x",
         "run.json: workloads[0].result: expected an object, got 'x'"),
        (("workloads", 0, "direction"), "up",
         "run.json: workloads[0].direction: expected lower_is_better or higher_is_better, "
         "got 'up'"),
        (("workloads", 0, "unit"), None, "run.json: workloads[0].unit: expected text, got null"),
        (("workloads", 0, "per_work"), "yes",
         "run.json: workloads[0].per_work: expected true or false, got 'yes'"),
        (("workloads", 1, "name"), "a", "run.json: workloads[1].name: workload 'a' appears twice"),
        (("workloads", 1), 7, "run.json: workloads[1]: expected a workload object, got 7"),
        (("campaign",), None, "run.json: campaign: expected an object, got null"),
        (("workloads",), {}, "run.json: benchrun export without a workloads list"),
        (("version",), 2,
         "run.json: benchrun export version 2 is newer than this benchrun reads (1); "
         "upgrade benchrun"),
        (("version",), True, "run.json: benchrun export without a valid version field"),
        (("format",), "other", 'run.json: not a benchrun export (no "format": "benchrun-export")'),
    ],
)  # fmt: skip
def test_a_damaged_field_is_one_line_naming_it(
    path: tuple[Any, ...], value: object, message: str
) -> None:
    doc = _damaged(path, value)
    for read in (ExportDocument.from_json, check_export, read_benchrun):
        with pytest.raises(UserError) as err:
            read(doc, "run.json")
        assert str(err.value) == message


def test_null_rounds_read_as_none_and_missing_rounds_as_results_only() -> None:
    doc = _damaged(("workloads", 1, "rounds"), None)
    ds = read_benchrun(doc, "run.json")
    assert "b: no analysed readings, left out" in ds.notes
    del doc["workloads"][1]["rounds"]
    with pytest.raises(UserError, match="holds results only"):
        read_benchrun(doc, "run.json")
