"""Counter metrics through the real ``benchrun`` console script (issue 33): the race of
``sum(range(3000000))`` against ``sum(range(3060000))`` on ``metric: instructions``
separated in the right order within 10 passes, its ratio within 0.5 % of valgrind's own
instruction counts of the two commands, the other metrics of the list stored beside it
with their sources; and the one line a machine that cannot count gets."""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

import pytest
from valgrind_refs import VALGRIND, valgrind_instructions

from benchrun.runner.execute.counters import probe_perf
from tests.e2e.e2e_util import query, run_benchrun, write_experiment

HAS_PMU = probe_perf("instructions").available

RACE = """\
    name: race
    output: {out}
    workloads:
      - name: small
        command: [python3, -c, "sum(range(3000000))"]
        metric: [instructions, wall_time, task_clock]
      - name: large
        command: [python3, -c, "sum(range(3060000))"]
        metric: [instructions, wall_time, task_clock]
    settings:
      max_rounds: 10
      warmup_rounds: 0
      timeout: 300s
"""


@pytest.mark.skipif(
    not HAS_PMU and VALGRIND is None, reason="no PMU and no valgrind: instructions uncountable"
)
def test_the_race_on_instructions(tmp_path: Path) -> None:
    exp = write_experiment(tmp_path, RACE.format(out=tmp_path / "out"))
    done = run_benchrun("run", str(exp), timeout=1200)
    assert "Traceback" not in done.stderr
    shown = run_benchrun("show", str(tmp_path / "out" / "race"), "--json")
    assert shown.returncode == 0, shown.stderr
    doc = json.loads(shown.stdout)
    (pair,) = doc["verdicts"]["pairs"]
    assert pair["verdict"] == "separated"
    assert (pair["a"], pair["b"]) == ("small", "large")  # small runs fewer instructions
    db = tmp_path / "out" / "race" / "benchrun.db"
    passes = query(db, "SELECT COUNT(DISTINCT pass) FROM round WHERE status = 'ok'")[0][0]
    assert passes <= 10
    # every metric of the list, each with its source, beside the deciding one
    rows = query(
        db,
        "SELECT w.name, m.name, m.value, m.source, m.scope FROM round_metric m"
        " JOIN round r ON r.id = m.round_id JOIN workload w ON w.id = r.workload_id",
    )
    source = "perf_event" if HAS_PMU else "cachegrind"
    assert {(m, s) for _, m, _, s, _ in rows if m == "instructions"} == {("instructions", source)}
    assert {m for _, m, _, _, _ in rows} == {"instructions", "wall_time", "task_clock"}
    # the reading the statistics use is the instruction count
    readings = query(
        db,
        "SELECT w.name, g.value FROM reading g JOIN round r ON r.id = g.round_id"
        " JOIN workload w ON w.id = r.workload_id",
    )
    counted = {(w, v) for w, m, v, _, _ in rows if m == "instructions"}
    assert set(readings) == counted
    medians = {
        name: statistics.median(v for w, v in readings if w == name) for name in ("small", "large")
    }
    # the campaign's metadata say where the counts came from
    (meta,) = query(db, "SELECT metadata_json FROM campaign")
    assert json.loads(meta[0])["counters"]["instructions"]["source"] == source
    # show's metrics table names the metrics side by side
    assert {(m["workload"], m["metric"]) for m in doc["metrics"]} >= {
        ("small", "instructions"),
        ("small", "wall_time"),
    }
    report = run_benchrun("report", str(tmp_path / "out" / "race"), "--format", "json", "-o", "-")
    assert report.returncode == 0, report.stderr
    rows = json.loads(report.stdout)["metrics"]
    assert {(m["workload"], m["metric"], m["source"]) for m in rows if m["deciding"]} == {
        ("small", "instructions", source),
        ("large", "instructions", source),
    }
    # the text outputs put the metrics side by side too
    text = run_benchrun("show", str(tmp_path / "out" / "race"), env={"COLUMNS": "200"})
    assert "metrics (every metric of each workload's list; * decides)" in text.stdout
    assert re.search(r"small\s+│ instructions \*", text.stdout), text.stdout
    md = run_benchrun("report", str(tmp_path / "out" / "race"), "--format", "md", "-o", "-")
    assert "| workload | metric | median | mean | CoV | rounds | source | scope |" in md.stdout
    if VALGRIND is not None:
        theirs = [
            valgrind_instructions(["python3", "-c", f"sum(range({n}))"], tmp_path / f"vg{n}")
            for n in (3000000, 3060000)
        ]
        ours = medians["large"] / medians["small"]
        assert ours == pytest.approx(theirs[1] / theirs[0], rel=0.005)


@pytest.mark.skipif(HAS_PMU, reason="a PMU counts instructions here; valgrind is not needed")
def test_instructions_without_valgrind_is_one_line(tmp_path: Path) -> None:
    exp = write_experiment(
        tmp_path,
        f"""\
        name: nopath
        output: {tmp_path / "out"}
        workloads:
          - name: a
            command: [/bin/true]
            metric: instructions
        """,
    )
    empty = tmp_path / "bin"
    empty.mkdir()
    done = run_benchrun("run", str(exp), env={"PATH": str(empty)})
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert "Traceback" not in done.stderr
    errors = [line for line in lines if line.startswith("benchrun: error:")]
    assert len(errors) == 1 and "valgrind" in errors[0], done.stderr


@pytest.mark.skipif(not probe_perf("task_clock").available, reason="no perf_event_open here")
def test_the_one_line_form_takes_a_metric_list(tmp_path: Path) -> None:
    done = run_benchrun(
        "run",
        "-c",
        "sleep 0.02",
        "-c",
        "sleep 0.02; sleep 0.02",
        "--metric",
        "task_clock,wall_time",
        "--set",
        "adaptive=false",
        "--set",
        "rounds=3",
        "--set",
        "warmup_rounds=0",
        "-o",
        str(tmp_path / "out"),
        cwd=tmp_path,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    (db,) = (tmp_path / "out").glob("*/benchrun.db")
    assert query(db, "SELECT DISTINCT metric, unit FROM workload") == [("task_clock", "s")]
    rows = query(db, "SELECT name, source, value FROM round_metric ORDER BY round_id, rowid")
    assert {(n, s) for n, s, _ in rows} == {("task_clock", "perf_event"), ("wall_time", "clock")}
    # sleeping costs little CPU; the wall time is at least the sleeps (a closed form)
    assert all(v < 0.02 for n, _, v in rows if n == "task_clock")
    assert all(v >= 0.02 for n, _, v in rows if n == "wall_time")


def test_the_one_line_form_names_a_bad_metric_in_one_line(tmp_path: Path) -> None:
    done = run_benchrun("run", "-c", "true", "--metric", "wall_time,instrs", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "benchrun: error: --metric wall_time,instrs: got string 'instrs'; valid: wall_time | "
        "cpu_time | max_rss | readings | instructions | cycles | branch_misses | cache_misses "
        "| task_clock | context_switches | page_faults"
    ]
