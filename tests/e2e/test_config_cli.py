"""End to end: the installed ``benchrun`` console script on experiment files.

``benchrun validate`` on malformed files must exit 2 with exactly one stderr line that
names the file and the line (counted in the test's own text), and never a traceback.
"""

from __future__ import annotations

import json
import re
import shutil
import statistics
import subprocess
from pathlib import Path

import pytest
from e2e_util import REPO, cli

from benchrun.runner.config.loader import load_experiment

VALID_WORKLOADS = """\
workloads:
  - name: a
    command: [python3, -c, "pass"]
"""


def benchrun(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``benchrun ARGS`` in process (e2e_util.cli: the console script's function without
    its start-up); ``benchrun_script`` runs the installed script."""
    return cli(*args, cwd=cwd)


def benchrun_script(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("benchrun")
    assert exe is not None, "the benchrun console script is not installed (pip install -e .)"
    return subprocess.run(
        [exe, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


# (id, file text, 1-based line the error must name, fragment of the message)
MALFORMED: list[tuple[str, str, int, str]] = [
    (
        "yaml-syntax",
        "name: x\nworkloads:\n  - name: a\n    command: [python3\n    metric: wall_time\n",
        5,
        "YAML syntax error",
    ),
    ("top-level-list", "- name: x\n- workloads: []\n", 1, "expected a mapping"),
    (
        "unknown-key",
        "name: x\nsettings:\n  rouns: 3\n" + VALID_WORKLOADS,
        3,
        "did you mean 'rounds'?",
    ),
    ("missing-workloads", "name: x\ndescription: d\n", 1, "missing required key 'workloads'"),
    ("empty-workloads", "name: x\n\nworkloads: []\n", 3, "empty"),
    ("wrong-type", "name: x\nsettings:\n  seed: one\n" + VALID_WORKLOADS, 3, "expected an integer"),
    (
        "bad-duration",
        "name: x\nsettings:\n  warmup_rounds: 0\n  timeout: 5 parsecs\n" + VALID_WORKLOADS,
        4,
        "bad duration",
    ),
    (
        "bad-cpu-list",
        "name: x\nsettings:\n  pin: '2-1'\n" + VALID_WORKLOADS,
        3,
        "end is below the start",
    ),
    (
        "absent-cpu",
        "name: x\nsettings:\n  pin: [9999]\n" + VALID_WORKLOADS,
        3,
        "not available on this machine",
    ),
    ("confidence", "name: x\nsettings:\n  confidence: 95\n" + VALID_WORKLOADS, 3, "<= 0.999999"),
    ("negative-rounds", "name: x\nsettings:\n  rounds: -1\n" + VALID_WORKLOADS, 3, ">= 1"),
    (
        "not-on-path",
        "name: x\nworkloads:\n  - name: a\n    command: [python3]\n  - name: b\n    command: no-such-prog-xyz -v\n",
        6,
        "not found on PATH",
    ),
    (
        "placeholder",
        "name: x\nworkloads:\n  - name: a\n    params: {n: 3}\n    command: [python3, -c, 'print({m})']\n",
        5,
        "unknown placeholder {m}",
    ),
    (
        "bad-regex",
        "name: x\nworkloads:\n  - name: a\n    command: [python3]\n    readings:\n      unit: ms\n      pattern: '(t=(\\d+))'\n",
        7,
        "exactly one",
    ),
    (
        "duplicate-names",
        "name: x\nworkloads:\n  - name: a\n    command: [python3, '{n}']\n  - name: 'a[n=1]'\n    command: [python3]\nmatrix:\n  n: [1, 2]\n",
        5,
        "duplicate workload name",
    ),
    (
        "readings-with-metric",
        "name: x\nworkloads:\n  - name: a\n    command: [python3]\n    readings: {pattern: '(\\d+)'}\n    metric: max_rss\n",
        6,
        "metric",
    ),
]


@pytest.mark.parametrize(
    ("case", "text", "line", "fragment"), MALFORMED, ids=[m[0] for m in MALFORMED]
)
def test_validate_malformed(tmp_path: Path, case: str, text: str, line: int, fragment: str) -> None:
    (tmp_path / f"{case}.yaml").write_text(text)
    proc = benchrun("validate", f"{case}.yaml", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"benchrun: error: {case}.yaml:{line}: "), lines[0]
    assert fragment in lines[0]
    assert proc.stdout == ""


def test_validate_missing_file(tmp_path: Path) -> None:
    proc = benchrun_script("validate", "absent.yaml", cwd=tmp_path)  # the console script
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        "benchrun: error: absent.yaml: file not found; check the path (benchrun init FILE writes an example)"
    ]


def test_validate_valid(tmp_path: Path) -> None:
    (tmp_path / "ok.yaml").write_text(
        "name: ok\nsettings: {rounds: 3}\nworkloads:\n  - name: a\n    command: [python3, -c, 'pass {n}']\nmatrix:\n  n: [1, 2]\n"
    )
    proc = benchrun("validate", "ok.yaml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert "OK" in proc.stdout
    assert "a[n=1], a[n=2]" in proc.stdout
    assert "3 rounds" in proc.stdout
    assert "results/ok/benchrun.db" in proc.stdout


def test_schema_is_json(tmp_path: Path) -> None:
    proc = benchrun("schema", cwd=tmp_path)
    assert proc.returncode == 0
    schema = json.loads(proc.stdout)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["required"] == ["name", "workloads"]


def test_init_round_trips(tmp_path: Path) -> None:
    proc = benchrun("init", cwd=tmp_path)
    assert proc.returncode == 0
    (tmp_path / "from-stdout.yaml").write_text(proc.stdout)
    exp = load_experiment(tmp_path / "from-stdout.yaml")
    assert exp.settings.pin == "auto"
    assert len(exp.workloads) >= 2

    first = benchrun("init", "exp.yaml", cwd=tmp_path)
    assert first.returncode == 0
    assert (tmp_path / "exp.yaml").read_text() == proc.stdout
    again = benchrun("init", "exp.yaml", cwd=tmp_path)
    assert again.returncode == 2
    assert again.stderr.splitlines() == [
        "benchrun: error: exp.yaml: already exists; use --force to overwrite it"
    ]
    (tmp_path / "exp.yaml").write_text("changed")
    forced = benchrun("init", "exp.yaml", "--force", cwd=tmp_path)
    assert forced.returncode == 0
    assert (tmp_path / "exp.yaml").read_text() == proc.stdout
    assert benchrun("validate", "exp.yaml", cwd=tmp_path).returncode == 0


def test_init_example_commands_run(tmp_path: Path) -> None:
    """Every workload of the example really runs, and the readings pattern finds values."""
    proc = benchrun("init", "exp.yaml", cwd=tmp_path)
    assert proc.returncode == 0
    exp = load_experiment(tmp_path / "exp.yaml")
    for workload in exp.workloads:
        argv = workload.render(0)
        done = subprocess.run(argv, cwd=workload.cwd, capture_output=True, text=True, timeout=30)
        assert done.returncode == 0, (workload.name, done.stderr)
        if workload.readings is not None:
            assert workload.readings.pattern is not None
            values = [float(v) for v in re.findall(workload.readings.pattern, done.stdout)]
            assert len(values) == 3 and all(v > 0 for v in values)


def test_every_example_in_configs_validates() -> None:
    """Each example experiment shipped in configs/ is valid on this machine (the demo is
    also run in full by test_run.py; the others by hand, their figures in the notes)."""
    examples = sorted((REPO / "configs").glob("*.yaml"))
    assert {p.stem for p in examples} >= {"demo", "compare", "sweep", "regression"}
    for path in examples:
        proc = benchrun("validate", str(path), cwd=REPO)
        assert proc.returncode == 0, f"{path.name}: {proc.stderr}"


def test_sweep_and_compare_examples_run_and_store_their_readings(tmp_path: Path) -> None:
    """The sweep and compare examples run through `benchrun run` (fixed mode via --set, so
    the test does not depend on this machine's noise) and their readings are in the store:
    a sweep round holds one reading per sort, i.e. as its calibrated work amount,
    and sorting 100x more floats takes at least 20x longer (n log n: about 170x)."""
    from e2e_util import query

    sweep = benchrun(
        "run", str(REPO / "configs" / "sweep.yaml"), "-o", str(tmp_path), "-q",
        "--set", "rounds=2", "--set", "min_round_time=20ms", cwd=tmp_path,
    )  # fmt: skip
    assert sweep.returncode == 0, sweep.stderr
    db = tmp_path / "sweep" / "benchrun.db"
    rounds = query(
        db,
        "SELECT w.name, r.work, (SELECT COUNT(*) FROM reading g WHERE g.round_id = r.id) "
        "FROM round r JOIN workload w ON w.id = r.workload_id WHERE r.status = 'ok' "
        "AND r.warmup = 0",
    )
    names = {name for name, _, _ in rounds}
    assert names == {"sort[size=1000]", "sort[size=10000]", "sort[size=100000]"}
    assert all(work >= 1 and count == work for _, work, count in rounds), rounds
    median = {
        name: statistics.median(
            v for (v,) in query(
                db,
                "SELECT g.value FROM reading g JOIN round r ON r.id = g.round_id "
                "JOIN workload w ON w.id = r.workload_id WHERE w.name = ? AND r.warmup = 0",
                (name,),
            )
        )
        for name in names
    }  # fmt: skip
    assert median["sort[size=100000]"] > 20 * median["sort[size=1000]"], median

    compare = benchrun(
        "run", str(REPO / "configs" / "compare.yaml"), "-o", str(tmp_path), "-q",
        "--set", "rounds=3", cwd=tmp_path,
    )  # fmt: skip
    assert compare.returncode == 0, compare.stderr
    counts = query(
        tmp_path / "compare" / "benchrun.db",
        "SELECT w.name, COUNT(*) FROM round r JOIN workload w ON w.id = r.workload_id "
        "WHERE r.status = 'ok' AND r.warmup = 0 GROUP BY w.name",
    )
    assert dict(counts) == {"comprehension": 3, "map-lambda": 3}
