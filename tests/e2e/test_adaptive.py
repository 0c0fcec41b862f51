"""End to end: adaptive mode (the default) with real processes, the database read back.

The workloads print readings whose truth the test knows (seeded noise around a known
mean), so every verdict and interval can be checked against that truth rather than
against benchrun's own output.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import time
from pathlib import Path

import numpy as np
from e2e_util import cli, query, start_benchrun

#: prints READINGS values of seeded iid normal noise, sd SD % of MEAN, seeded by round+salt
NOISE = """\
import random, sys
r, mean, sd, salt = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
rng = random.Random(r * 1000 + salt)
for _ in range(20):
    print("v=%.6f" % (mean * (1 + sd / 100 * rng.gauss(0, 1))))
"""

#: 200 readings of a stationary AR(1) chain (phi 0.8, innovation sd 1) around 50, per round
AR1 = """\
import random, sys
rng = random.Random(7000 + int(sys.argv[1]))
phi, x = 0.8, 0.0
x = rng.gauss(0, 1 / (1 - phi * phi) ** 0.5)
for _ in range(200):
    x = phi * x + rng.gauss(0, 1)
    print("v=%.6f" % (50.0 + x))
"""


def _noise_workloads(py: str, items: list[tuple[str, float, float, int]]) -> str:
    lines = []
    for name, mean, sd, salt in items:
        lines.append(
            f"""  - name: {name}
    command: ["{py}", "noise.py", "{{round}}", "{mean}", "{sd}", "{salt}"]
    readings: {{pattern: 'v=([0-9.]+)', unit: ms}}
"""
        )
    return "".join(lines)


def _experiment(tmp_path: Path, name: str, settings: str, workloads: str) -> Path:
    (tmp_path / "noise.py").write_text(NOISE)
    (tmp_path / "ar1.py").write_text(AR1)
    text = f"name: {name}\noutput: {tmp_path / 'out'}\nsettings:\n{settings}workloads:\n{workloads}"
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    return path


def _events(db: Path, kind: str) -> list[dict]:
    return [
        json.loads(d) for (d,) in query(db, "SELECT data_json FROM event WHERE kind = ?", (kind,))
    ]


SETTINGS = "  pin: none\n  warmup_rounds: 0\n  min_round_time: 0\n  max_time: 2m\n"


def test_two_identical_workloads_end_equivalent_not_at_max_rounds(tmp_path: Path, py: str) -> None:
    exp = _experiment(
        tmp_path,
        "same",
        SETTINGS + "  max_rounds: 200\n",
        _noise_workloads(py, [("a", 100.0, 2.0, 1), ("b", 100.0, 2.0, 2)]),
    )
    proc = cli("run", str(exp), "-q")
    assert proc.returncode == 0, proc.stderr
    db = tmp_path / "out" / "same" / "benchrun.db"
    (reason,) = query(db, "SELECT stop_reason FROM campaign")[0]
    assert reason.startswith("all conditions met") and "equivalent within 1 %" in reason
    (verdicts,) = _events(db, "verdicts")
    assert [p["verdict"] for p in verdicts["pairs"]] == ["equivalent"]
    rounds = query(db, "SELECT count(*) FROM round GROUP BY workload_id")
    assert all(n < 200 for (n,) in rounds)
    assert "equivalent" in proc.stdout and "within 1 %" in proc.stdout


def test_ten_percent_apart_is_separated_in_the_right_order(tmp_path: Path, py: str) -> None:
    exp = _experiment(
        tmp_path,
        "apart",
        SETTINGS,
        _noise_workloads(py, [("slow", 110.0, 3.0, 1), ("fast", 100.0, 3.0, 2)]),
    )
    proc = cli("run", str(exp), "-q")
    assert proc.returncode == 0, proc.stderr
    (verdicts,) = _events(tmp_path / "out" / "apart" / "benchrun.db", "verdicts")
    (pair,) = verdicts["pairs"]
    assert (pair["a"], pair["b"], pair["verdict"]) == ("fast", "slow", "separated")


def test_ar1_readings_ci_covers_the_known_mean_with_subsessions(tmp_path: Path, py: str) -> None:
    workloads = f"""  - name: ar1
    command: ["{py}", "ar1.py", "{{round}}"]
    readings: {{pattern: 'v=([0-9.]+)', unit: ms}}
"""
    exp = _experiment(tmp_path, "ar1", SETTINGS + "  ci_rel_width: 0.002\n", workloads)
    proc = cli("run", str(exp), "-q")
    assert proc.returncode == 0, proc.stderr
    show = cli("show", str(tmp_path / "out" / "ar1"), "--json")
    assert show.returncode == 0, show.stderr
    (w,) = json.loads(show.stdout)["workloads"]
    assert w["status"] == "done"  # the controller's workload-done, not the store's "active"
    c = w["collected"]
    # phi 0.8: integrated autocorrelation time (1 + phi) / (1 - phi) = 9 readings
    assert c["q"] > 1
    assert c["ci_low"] <= 50.0 <= c["ci_high"]
    assert c["rel_half_width"] <= 0.002
    # the reported mean is the mean of the readings in complete subsessions, computed here
    # from the stored readings independently of benchrun
    values = np.array(
        [
            v
            for (v,) in query(
                tmp_path / "out" / "ar1" / "benchrun.db",
                "SELECT value FROM reading JOIN round ON round.id = reading.round_id"
                " WHERE round.warmup = 0 ORDER BY round.seq, reading.idx",
            )
        ]
    )
    # stationary chains: MSER-5's guard finds no warm-up, so every reading is steady
    assert c["warmup_readings"] == 0
    assert abs(c["mean"] - np.mean(values[: c["q"] * c["n_q"]])) < 1e-9


def test_regression_check_against_a_baseline_campaign(tmp_path: Path, py: str) -> None:
    # a baseline precise enough to show "within 1 %": its CI half-width 0.2 % of the mean
    old = _experiment(
        tmp_path,
        "old",
        SETTINGS + "  ci_rel_width: 0.002\n",
        _noise_workloads(py, [("parse", 100.0, 2.0, 1), ("render", 50.0, 2.0, 2)]),
    )
    assert cli("run", str(old), "-q").returncode == 0
    # the new version: parse got 10 % slower, render stayed the same
    new = _experiment(
        tmp_path,
        "new",
        SETTINGS + f"  baseline: {tmp_path / 'out' / 'old'}\n",
        _noise_workloads(py, [("parse", 110.0, 2.0, 3), ("render", 50.0, 2.0, 4)]),
    )
    proc = cli("run", str(new), "-q")
    assert proc.returncode == 0, proc.stderr
    (verdicts,) = _events(tmp_path / "out" / "new" / "benchrun.db", "verdicts")
    by_name = {b["name"]: b for b in verdicts["baselines"]}
    assert by_name["parse"]["verdict"] == "slower"
    assert abs(by_name["parse"]["relative_change"] - 0.10) < 0.02
    assert by_name["render"]["verdict"] == "equivalent"
    assert "slower" in proc.stdout


def test_a_baseline_too_imprecise_to_decide_stops_early_and_says_so(
    tmp_path: Path, py: str
) -> None:
    # 5 rounds of 20 readings at 5 % noise: the stored mean is uncertain by about 1 %, so
    # "within 1 %" can never be shown however long the new side runs
    old = _experiment(
        tmp_path,
        "vague",
        SETTINGS + "  max_rounds: 5\n  min_rounds: 5\n",
        _noise_workloads(py, [("w", 100.0, 5.0, 1)]),
    )
    assert cli("run", str(old), "-q").returncode == 0
    new = _experiment(
        tmp_path,
        "check",
        SETTINGS + f"  baseline: {tmp_path / 'out' / 'vague'}\n  max_rounds: 400\n",
        _noise_workloads(py, [("w", 100.2, 5.0, 2)]),
    )
    proc = cli("run", str(new), "-q")
    assert proc.returncode == 0, proc.stderr
    db = tmp_path / "out" / "check" / "benchrun.db"
    (reason,) = query(db, "SELECT stop_reason FROM campaign")[0]
    assert "stored side is too imprecise" in reason
    (rounds,) = query(db, "SELECT count(*) FROM round")[0]
    assert rounds < 400


def test_missing_baseline_is_a_clear_error(tmp_path: Path, py: str) -> None:
    exp = _experiment(
        tmp_path,
        "nobase",
        SETTINGS + "  baseline: no/such/dir\n",
        _noise_workloads(py, [("a", 1.0, 1.0, 1)]),
    )
    proc = cli("run", str(exp), "-q")
    assert proc.returncode == 2
    assert "settings.baseline" in proc.stderr and "not found" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_budget_stop_names_the_unmet_condition(tmp_path: Path, py: str) -> None:
    # 0.3 % apart with 5 % noise: neither separable nor provably equivalent in 8 rounds
    exp = _experiment(
        tmp_path,
        "budget",
        SETTINGS + "  max_rounds: 8\n",
        _noise_workloads(py, [("a", 100.0, 5.0, 1), ("b", 100.3, 5.0, 2)]),
    )
    proc = cli("run", str(exp), "-q")
    assert proc.returncode == 0, proc.stderr
    db = tmp_path / "out" / "budget" / "benchrun.db"
    (reason,) = query(db, "SELECT stop_reason FROM campaign")[0]
    assert reason.startswith("max_rounds 8 reached")
    assert "undecided" in reason and "more rounds" in reason
    assert query(db, "SELECT count(*) FROM round GROUP BY workload_id") == [(8,), (8,)]


def test_calibration_grows_work_and_per_work_normalises(tmp_path: Path, py: str) -> None:
    workloads = f"""  - name: spin
    command: ["{py}", "-c", "import time; time.sleep({{work}} / 1000)"]
    work: 5
    per_work: true
"""
    settings = "  pin: none\n  warmup_rounds: 1\n  min_round_time: 150ms\n  max_rounds: 60\n"
    exp = _experiment(tmp_path, "cal", settings, workloads)
    proc = cli("run", str(exp), "-q")
    assert proc.returncode == 0, proc.stderr
    db = tmp_path / "out" / "cal" / "benchrun.db"
    (cal,) = _events(db, "calibrated")
    (overhead,) = _events(db, "launch-overhead")
    target = max(0.150, overhead["seconds"] / 0.01)
    assert cal["target_s"] == target and cal["reached"]
    rows = query(db, "SELECT flags, warmup, work, wall_ns FROM round ORDER BY seq")
    # a round may also be flagged contended (the machine's load; docs/contention.md)
    calib = [r for r in rows if "calibration" in r[0].split(",")]
    steady = [r for r in rows if r[0] in ("", "contended") and not r[1]]
    assert [w for _, _, w, _ in calib] == [s[0] for s in cal["steps"]]
    assert calib[-1][3] / 1e9 >= target  # the chosen amount really lasted the target
    assert all(r[1] == 1 for r in calib)  # stored, flagged warm-up, never analysed
    assert steady and {w for _, _, w, _ in steady} == {cal["work"]}
    # per_work: the estimate is wall time per unit of work, i.e. about 1 ms per unit
    show = json.loads(cli("show", str(tmp_path / "out" / "cal"), "--json").stdout)
    (w,) = show["workloads"]
    per_unit = np.array([wall / 1e9 / work for _, _, work, wall in steady])
    c = w["collected"]
    # one reading per round: MSER-5 may call the first rounds warm-up (§2); the mean is
    # over the n_used readings after them, or over all of them while not enough data
    # (a budget stop on a noisy machine; WorkloadStats.mean)
    w0 = c["warmup_readings"]
    used = per_unit[w0 : w0 + c["n_used"]] if c["enough"] else per_unit[w0:]
    assert abs(c["mean"] - used.mean()) < 1e-12
    # >= the 1 ms sleep per unit; the interpreter's start (< 0.1 s) is spread over the units
    assert 0.001 <= c["mean"] < 0.001 + 0.1 / cal["work"]


def test_interrupt_then_resume_finishes_without_repeating(tmp_path: Path, py: str) -> None:
    exp = _experiment(
        tmp_path,
        "resume",
        SETTINGS + "  max_rounds: 60\n  ci_rel_width: 0.0005\n",
        _noise_workloads(py, [("a", 100.0, 2.0, 1), ("b", 100.2, 2.0, 2)]),
    )
    db = tmp_path / "out" / "resume" / "benchrun.db"
    proc = start_benchrun("run", str(exp), "-q")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if query(db, "SELECT count(*) FROM round")[0][0] >= 20:
                break
        except sqlite3.OperationalError:
            pass  # the store is not created yet
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGINT, err
    assert "--resume" in err
    before = query(db, "SELECT count(*) FROM round")[0][0]
    again = cli("run", str(exp), "--resume", "-q")
    assert again.returncode == 0, again.stderr
    rows = query(db, "SELECT workload_id, round_index FROM round")
    assert len(rows) == len(set(rows)) and len(rows) > before
    # a round number appears once per workload, and they are consecutive
    for wid in {w for w, _ in rows}:
        idx = sorted(i for w, i in rows if w == wid)
        assert idx == list(range(len(idx)))
    # the look plan was made once and restored on resume (alpha is not spent twice)
    assert len(_events(db, "plan")) == 1
    looks = _events(db, "look")
    assert looks and looks[-1]["spent"] <= 0.01 + 1e-12
    (status,) = query(db, "SELECT status FROM campaign")[0]
    assert status == "done"


def test_a_workload_that_always_crashes_stops_and_the_rest_finishes(
    tmp_path: Path, py: str
) -> None:
    workloads = _noise_workloads(py, [("ok", 100.0, 2.0, 1)]) + (
        f'  - name: crash\n    command: ["{py}", "-c", "raise SystemExit(3)"]\n'
    )
    exp = _experiment(tmp_path, "crash", SETTINGS, workloads)
    proc = cli("run", str(exp), "-q")
    assert proc.returncode == 1
    assert "crash" in proc.stderr and "Traceback" not in proc.stderr
    db = tmp_path / "out" / "crash" / "benchrun.db"
    (status, reason) = query(db, "SELECT status, stop_reason FROM campaign")[0]
    assert status == "done" and "crash" in reason
    counts = dict(
        query(
            db,
            "SELECT w.name, count(*) FROM round r JOIN workload w ON w.id = r.workload_id"
            " GROUP BY w.name",
        )
    )
    assert counts["crash"] == 3  # max_consecutive_failures
    assert 5 <= counts["ok"] < 500


#: one reading per round: MEAN x a drift shared by every workload (14 % sinusoid of the
#: wall clock, period 6 s) x seeded iid noise of SD %: a machine whose speed wanders
DRIFT = """\
import math, random, sys, time
r, mean, sd, salt = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
rng = random.Random(r * 1000 + salt)
f = 1 + 0.14 * math.sin(2 * math.pi * time.time() / 6.0)
print("v=%.6f" % (mean * f * (1 + sd / 100 * rng.gauss(0, 1))))
"""


def _drift_workloads(tmp_path: Path, py: str, items: list[tuple[str, float, int]]) -> str:
    """Workloads (name, mean, salt) printing DRIFT readings with 0.5 % noise."""
    (tmp_path / "drift.py").write_text(DRIFT)
    return "".join(
        f"""  - name: {name}
    command: ["{py}", "drift.py", "{{round}}", "{mean}", "0.5", "{salt}"]
    readings: {{pattern: 'v=([0-9.]+)', unit: ms}}
"""
        for name, mean, salt in items
    )


def test_paired_comparisons_decide_on_a_drifting_machine(tmp_path: Path, py: str) -> None:
    """b 2 % slower than a, c equal to a, all under a shared ±14 % drift: the pairs are
    decided on per-pass ratios, in the right order, with ratio CIs that hold the truth."""
    workloads = _drift_workloads(tmp_path, py, [("a", 100.0, 1), ("b", 102.0, 2), ("c", 100.0, 3)])
    exp = _experiment(
        tmp_path, "drift", SETTINGS + "  max_rounds: 300\n  margin: 0.01\n", workloads
    )
    proc = cli("run", str(exp), "-q", "--fail-on-unmet")
    assert proc.returncode == 0, proc.stderr + proc.stdout
    db = tmp_path / "out" / "drift" / "benchrun.db"
    (verdicts,) = _events(db, "verdicts")
    assert verdicts["conditions_met"] is True
    pairs = {frozenset((p["a"], p["b"])): p for p in verdicts["pairs"]}
    ac = pairs[frozenset(("a", "c"))]
    assert (ac["verdict"], ac["test"]) == ("equivalent", "paired")
    assert ac["ratio_low"] < 1.0 < ac["ratio_high"]
    cb = next(p for k, p in pairs.items() if "b" in k)
    assert (cb["b"], cb["verdict"], cb["test"]) == ("b", "separated", "paired")
    assert cb["ratio_low"] < 1.02 < cb["ratio_high"]
    assert "1.02" in proc.stdout and "slower than" in proc.stdout
    rounds = query(db, "SELECT count(*) FROM round GROUP BY workload_id")
    assert all(n < 300 for (n,) in rounds)


def test_fail_on_unmet_exits_3_and_stores_conditions_unmet(tmp_path: Path, py: str) -> None:
    exp = _experiment(
        tmp_path,
        "unmet",
        SETTINGS + "  max_rounds: 8\n",
        _noise_workloads(py, [("a", 100.0, 5.0, 1), ("b", 100.3, 5.0, 2)]),
    )
    proc = cli("run", str(exp), "-q", "--fail-on-unmet")
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr.count("\n") == 1 and "unmet at the end" in proc.stderr
    (verdicts,) = _events(tmp_path / "out" / "unmet" / "benchrun.db", "verdicts")
    assert verdicts["conditions_met"] is False
    fixed = cli("run", str(exp), "-q", "--fail-on-unmet", "--set", "rounds=2", "--new")
    assert fixed.returncode == 2 and "needs adaptive mode" in fixed.stderr


def test_independent_comparisons_on_a_drifting_machine_are_flagged(tmp_path: Path, py: str) -> None:
    """The same drift with `comparison: independent`: the summary names the drift and
    warns that Welch on drifting series can be wrong; the verdicts say Welch decided."""
    workloads = _drift_workloads(tmp_path, py, [("a", 100.0, 1), ("b", 102.0, 2)])
    exp = _experiment(tmp_path, "indep", SETTINGS + "  max_rounds: 60\n", workloads)
    proc = cli("run", str(exp), "-q", "--set", "comparison=independent")
    assert proc.returncode == 0, proc.stderr
    assert "drift: a: the level moved" in proc.stdout
    assert "comparisons were independent" in proc.stdout
    (verdicts,) = _events(tmp_path / "out" / "indep" / "benchrun.db", "verdicts")
    assert [p["test"] for p in verdicts["pairs"]] == ["welch"]
