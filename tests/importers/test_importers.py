"""Importers: every expected value is read off the fixture files in tests/data by eye."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from benchrun.runner.errors import UserError
from benchrun.runner.importers import load, load_many
from benchrun.runner.importers.dataset import Dataset, direction_for_unit, display_name

DATA = Path(__file__).resolve().parent.parent / "data"


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# ------------------------------------------------------------------------------ CSV
def test_csv_long_groups_in_first_seen_order_and_row_order() -> None:
    ds = load(DATA / "long.csv")
    assert ds.source_format == "csv"
    assert ds.unit == "s"
    assert ds.direction == "lower_is_better"
    assert list(ds.groups) == [
        ("gcc", "fft", None),
        ("clang", "fft", None),
        ("gcc", "sort", None),
        ("clang", "sort", None),
    ]
    np.testing.assert_array_equal(ds.groups[("clang", "fft", None)], [1.0, 1.125])
    np.testing.assert_array_equal(ds.groups[("gcc", "sort", None)], [0.5, 0.75])
    assert ds.names == ["gcc/fft", "clang/fft", "gcc/sort", "clang/sort"]
    assert ds.systems == ["gcc", "clang"]
    assert ds.benchmarks == ["fft", "sort"]


def test_csv_value_only_is_one_group(tmp_path: Path) -> None:
    ds = load(_write(tmp_path, "v.csv", "value\n3\n1\n2\n"))
    assert list(ds.groups) == [(None, None, None)]
    np.testing.assert_array_equal(ds.groups[(None, None, None)], [3.0, 1.0, 2.0])
    assert ds.unit == ""
    assert not ds.has_systems


def test_csv_semicolon_bom_case_insensitive_header_and_blank_lines(tmp_path: Path) -> None:
    text = "\ufeffWorkload;Value;Unit\nA;10;ops/s\n\nB;20;ops/s\nA;30;ops/s\n"
    ds = load(_write(tmp_path, "s.csv", text))
    assert ds.named() == {"A": pytest.approx([10.0, 30.0]), "B": pytest.approx([20.0])}
    assert ds.unit == "ops/s"
    assert ds.direction == "higher_is_better"


def test_csv_arrays_are_read_only() -> None:
    ds = load(DATA / "long.csv")
    with pytest.raises(ValueError):
        ds.groups[("gcc", "fft", None)][0] = 9.0


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "empty file"),
        ("   \n\n", "empty file"),
        ("system,time\na,1\n", "no 'value' column (columns: system, time)"),
        ("value\n", "no readings"),
        ("system,value\na,1\na,fast\n", "row 3: value 'fast' is not a number"),
        ("system,value\na,1\na,nan\n", "row 3: value 'nan' is not finite"),
        ("system,value\na,inf\n", "row 2: value 'inf' is not finite"),
        ("system,value\na,1\n,2\n", "row 3: empty 'system' cell"),
        ("system,value\na,\n", "row 2: empty value"),
        ("value,unit\n1,s\n2,ms\n", "row 3: unit 'ms' differs from 's'"),
        ("value,value\n1,2\n", "named twice"),
        ("benchmark,system,value\nx,a\n", "row 2: only 2 field(s)"),
    ],
)
def test_csv_bad_input_is_one_line_user_error(tmp_path: Path, text: str, fragment: str) -> None:
    path = _write(tmp_path, "bad.csv", text)
    with pytest.raises(UserError) as info:
        load(path)
    message = info.value.message
    assert fragment in message
    assert str(path) in message
    assert "\n" not in message
    assert info.value.exit_code == 2


def test_direction_guess_from_unit() -> None:
    assert direction_for_unit("s") == "lower_is_better"
    assert direction_for_unit("bytes") == "lower_is_better"
    assert direction_for_unit("MB/s") == "higher_is_better"
    assert direction_for_unit("GFLOP/s") == "higher_is_better"
    assert direction_for_unit("") == "lower_is_better"


# ------------------------------------------------------------------------ hyperfine
def test_hyperfine_times_in_seconds_per_command() -> None:
    ds = load(DATA / "hyperfine_two.json")
    assert ds.source_format == "hyperfine"
    assert ds.unit == "s"
    assert ds.names == ["true", "sleep 0.002"]
    np.testing.assert_allclose(
        ds.group("true"),
        [0.000729074, 0.0007164750000000001, 0.0007287340000000001, 0.0006888640000000001,
         0.0006801110000000001],
        rtol=0,
        atol=0,
    )  # fmt: skip
    assert ds.group("sleep 0.002")[3] == 0.003137168


def test_hyperfine_parameters_become_workload() -> None:
    ds = load(DATA / "hyperfine_params.json")
    assert list(ds.groups) == [(None, "sleep 0.001", "ms=1"), (None, "sleep 0.002", "ms=2")]
    np.testing.assert_array_equal(
        ds.group("sleep 0.002/ms=2"), [0.0030378090000000003, 0.0030134420000000003, 0.003087022]
    )


def test_hyperfine_nonzero_exit_codes_are_noted(tmp_path: Path) -> None:
    doc = {"results": [{"command": "x", "times": [1.0, 2.0], "exit_codes": [0, 1]}]}
    ds = load(_write(tmp_path, "h.json", json.dumps(doc)))
    assert any("1 of 2 runs exited non-zero" in note for note in ds.notes)


def test_hyperfine_without_times_is_refused(tmp_path: Path) -> None:
    doc = {"results": [{"command": "x", "mean": 1.0}]}
    with pytest.raises(UserError, match="no 'times' array"):
        load(_write(tmp_path, "h.json", json.dumps(doc)))


def test_hyperfine_nan_time_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, "h.json", '{"results": [{"command": "x", "times": [1.0, NaN]}]}')
    with pytest.raises(UserError, match=r"times\[1\].*not finite"):
        load(path)


# --------------------------------------------------------------------------- pyperf
def test_pyperf_suite_values_without_warmups_or_calibration() -> None:
    ds = load(DATA / "pyperf_suite.json")
    assert ds.source_format == "pyperf"
    assert ds.unit == "s"
    assert ds.names == ["json_dumps", "regex_compile"]
    np.testing.assert_array_equal(
        ds.group("json_dumps"), [0.01462, 0.01458, 0.01471, 0.01449, 0.01466, 0.01453]
    )
    np.testing.assert_array_equal(
        ds.group("regex_compile"), [0.2031, 0.2045, 0.2027, 0.2038, 0.2019, 0.2050]
    )
    # 7 calibration warm-ups + 2 + 2 run warm-ups; one calibration run
    assert any(note.startswith("11 pyperf warm-up values excluded") for note in ds.notes)
    assert any(note.startswith("1 pyperf calibration runs") for note in ds.notes)


def test_pyperf_gzip_and_single_benchmark_with_run_level_name(tmp_path: Path) -> None:
    doc = {
        "version": "1.0",
        "benchmarks": [{"runs": [{"metadata": {"name": "b", "unit": "byte"}, "values": [5, 7]}]}],
    }
    path = tmp_path / "mem.json.gz"
    path.write_bytes(gzip.compress(json.dumps(doc).encode()))
    ds = load(path)
    assert ds.named() == {"b": pytest.approx([5.0, 7.0])}
    assert ds.unit == "B"


def test_pyperf_mixed_units_and_missing_name_are_refused(tmp_path: Path) -> None:
    runs = [{"values": [1.0]}]
    doc = {
        "version": "1.0",
        "benchmarks": [
            {"metadata": {"name": "a", "unit": "second"}, "runs": runs},
            {"metadata": {"name": "b", "unit": "byte"}, "runs": runs},
        ],
    }
    with pytest.raises(UserError, match="different units"):
        load(_write(tmp_path, "p.json", json.dumps(doc)))
    doc = {"version": "1.0", "benchmarks": [{"runs": runs}]}
    with pytest.raises(UserError, match=r"benchmarks\[0\] has no 'name'"):
        load(_write(tmp_path, "p.json", json.dumps(doc)))


# ------------------------------------------------------------------ Google Benchmark
def test_gbench_iterations_only_converted_to_finest_unit() -> None:
    ds = load(DATA / "gbench_reps.json")
    assert ds.source_format == "gbench"
    assert ds.unit == "ns"  # one benchmark in ns, one in us
    assert ds.names == ["BM_VectorPush/1024", "BM_MapInsert/64"]
    np.testing.assert_array_equal(ds.group("BM_VectorPush/1024"), [1702.5, 1711.25, 1698.75])
    np.testing.assert_allclose(ds.group("BM_MapInsert/64"), [4375.0, 4500.0, 4250.0], rtol=1e-12)
    assert any(note.startswith("5 aggregate entries") for note in ds.notes)
    assert any("error" in note for note in ds.notes)


def test_gbench_cpu_time() -> None:
    ds = load(DATA / "gbench_reps.json", gbench_time="cpu_time")
    np.testing.assert_array_equal(ds.group("BM_VectorPush/1024"), [1698.1, 1706.0, 1695.5])


def test_gbench_legacy_layout_without_run_type() -> None:
    ds = load(DATA / "gbench_legacy.json")
    assert ds.named() == {"BM_Copy/8": pytest.approx([31.0, 33.0])}
    assert any("debug" in note for note in ds.notes)
    assert any("scaling" in note for note in ds.notes)


def test_gbench_aggregates_only_is_refused(tmp_path: Path) -> None:
    doc = {
        "benchmarks": [
            {"name": "BM_x_mean", "run_name": "BM_x", "run_type": "aggregate",
             "aggregate_name": "mean", "real_time": 3.0, "cpu_time": 3.0, "time_unit": "ns"}
        ]
    }  # fmt: skip
    with pytest.raises(UserError, match="only aggregate entries"):
        load(_write(tmp_path, "g.json", json.dumps(doc)))


# ------------------------------------------------------------------------- detection
def test_unknown_json_shape_names_the_top_level_keys(tmp_path: Path) -> None:
    path = _write(tmp_path, "odd.json", '{"foo": 1, "bar": [2]}')
    with pytest.raises(UserError) as info:
        load(path)
    assert info.value.message == (
        f"{path}: not a CSV, hyperfine, pyperf or Google Benchmark export "
        "(top-level keys: foo, bar)"
    )


def test_forced_format_that_does_not_match(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="not a hyperfine export"):
        load(DATA / "pyperf_suite.json", fmt="hyperfine")
    with pytest.raises(UserError, match="no 'value' column"):
        load(DATA / "hyperfine_two.json", fmt="csv")


def test_invalid_json_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="invalid JSON at line 1"):
        load(_write(tmp_path, "broken.json", '{"results": ['))
    with pytest.raises(UserError, match="no such file"):
        load(tmp_path / "absent.csv")
    with pytest.raises(UserError, match="is a directory"):
        load(tmp_path)


# --------------------------------------------------------------------------- Dataset
def test_select_for_system_and_pair() -> None:
    ds = load(DATA / "long.csv")
    assert list(ds.select(system="clang").groups) == [
        ("clang", "fft", None),
        ("clang", "sort", None),
    ]
    assert list(ds.select(benchmark="sort").groups) == [
        ("gcc", "sort", None),
        ("clang", "sort", None),
    ]
    pairing = ds.pair("gcc", "clang")
    assert pairing.benchmarks == ("fft", "sort")
    np.testing.assert_array_equal(pairing.a[0], [1.25, 1.5])
    np.testing.assert_array_equal(pairing.b[1], [0.25, 0.375])
    with pytest.raises(UserError, match="no system 'icc'; systems in the data: gcc, clang"):
        ds.pair("gcc", "icc")


def test_pair_refuses_a_benchmark_measured_on_one_side(tmp_path: Path) -> None:
    ds = load(_write(tmp_path, "p.csv", "system,benchmark,value\na,x,1\nb,x,2\na,y,3\n"))
    with pytest.raises(UserError, match=r"y \(only in a\)"):
        ds.pair("a", "b")


def test_pair_by_group_name_without_systems() -> None:
    ds = load(DATA / "hyperfine_two.json")
    pairing = ds.pair("true", "sleep 0.002")
    assert len(pairing.a) == 1
    assert pairing.b[0][0] == 0.0030365770000000004
    with pytest.raises(UserError, match="groups in the data: true, sleep 0.002"):
        ds.pair("true", "false")


def test_load_many_labels_files_as_systems(tmp_path: Path) -> None:
    old = _write(tmp_path, "old.csv", "benchmark,value\nx,2\nx,3\n")
    new = _write(tmp_path, "new.csv", "benchmark,value\nx,1\n")
    ds = load_many([old, new])
    assert ds.systems == ["old", "new"]
    np.testing.assert_array_equal(ds.for_system("old")["x"], [2.0, 3.0])
    other = _write(tmp_path, "ops.csv", "value,unit\n1,ops/s\n")
    with pytest.raises(UserError, match="different units"):
        load_many([old, other])


def test_display_name_and_frozen() -> None:
    assert display_name(("a", None, "w")) == "a/w"
    assert display_name((None, None, None)) == "(all)"
    ds = Dataset(groups={(None, "b", None): [1, 2]}, unit="s", source_format="csv")
    with pytest.raises(AttributeError):
        ds.unit = "ms"  # type: ignore[misc]


# --------------------------------------------------------------------------- weights
def test_weights_file_with_and_without_header(tmp_path: Path) -> None:
    from benchrun.runner.importers.weights import read_weights

    assert read_weights(_write(tmp_path, "w.csv", "benchmark,weight\nfft,2\nsort,0.5\n")) == {
        "fft": 2.0,
        "sort": 0.5,
    }
    assert read_weights(_write(tmp_path, "w2.csv", "fft,3\n")) == {"fft": 3.0}
    for text, fragment in [
        ("fft,0\n", "must be > 0"),
        ("fft,1\nfft,2\n", "two weights"),
        ("fft,heavy\n", "row 1: value 'heavy' is not a number"),
        ("", "no weights"),
    ]:
        with pytest.raises(UserError, match=fragment):
            read_weights(_write(tmp_path, "bad.csv", text))


# ------------------------------------------------------------------------- processes
def _pyperf_runs(name: str) -> list[dict]:
    return json.loads((DATA / name).read_text())["benchmarks"][0]["runs"]


def test_pyperf_processes_are_the_runs_with_values() -> None:
    runs = _pyperf_runs("pyperf_seq_old.json")  # a real `pyperf command` file
    with_values = [r["values"] for r in runs if r.get("values")]
    ds = load(DATA / "pyperf_seq_old.json")
    key = (None, "command", None)
    assert ds.processes[key] == tuple(len(v) for v in with_values) == (2,) * 10
    split = ds.process_values(key)
    assert split is not None and len(split) == 10
    for got, expected in zip(split, with_values, strict=True):
        np.testing.assert_array_equal(got, expected)
    warmups = sum(len(r.get("warmups") or []) for r in runs)
    assert any(note.startswith(f"{warmups} pyperf warm-up values excluded") for note in ds.notes)
    assert ds.process_word == "process"


def test_pyperf_suite_processes_per_benchmark() -> None:
    doc = json.loads((DATA / "pyperf_suite.json").read_text())
    ds = load(DATA / "pyperf_suite.json")
    for bench in doc["benchmarks"]:
        name = bench["metadata"]["name"]
        sizes = tuple(len(r["values"]) for r in bench["runs"] if r.get("values"))
        assert ds.processes[(None, name, None)] == sizes


def test_hyperfine_and_gbench_one_value_per_process_or_repetition() -> None:
    times = json.loads((DATA / "hyperfine_old.json").read_text())["results"][0]["times"]
    ds = load(DATA / "hyperfine_old.json")
    assert ds.processes[(None, "loop", None)] == (1,) * len(times) == (1,) * 30
    gb = load(DATA / "gbench_reps.json")
    assert gb.process_word == "repetition"
    assert dict(gb.processes) == {
        (None, "BM_VectorPush/1024", None): (1, 1, 1),
        (None, "BM_MapInsert/64", None): (1, 1, 1),
    }


def test_csv_has_no_processes_and_merge_select_keep_them(tmp_path: Path) -> None:
    csv = load(DATA / "long.csv")
    assert not csv.processes and csv.process_values(("gcc", "fft", None)) is None
    ds = load_many([DATA / "pyperf_30pct_old.json", DATA / "pyperf_30pct_new.json"])
    assert dict(ds.processes) == {
        ("pyperf_30pct_old", "command", None): (2,) * 10,
        ("pyperf_30pct_new", "command", None): (2,) * 10,
    }
    one = ds.select(system="pyperf_30pct_new")
    assert list(one.processes) == [("pyperf_30pct_new", "command", None)]


def test_process_sizes_must_add_up() -> None:
    with pytest.raises(ValueError, match="hold 3 values in 2 processes"):
        Dataset(groups={(None, "b", None): [1, 2]}, unit="s", source_format="pyperf",
                processes={(None, "b", None): (1, 2)})  # fmt: skip
