"""A readings pattern that backtracks forever, and a flood of readings, against the real
runner: the round fails with a clear reason, the campaign goes on, SIGTERM is served."""

from __future__ import annotations

import signal
import time
from pathlib import Path

from e2e_util import cli, query, start_benchrun, write_experiment


def _experiment(tmp_path: Path, py: str, readings: str, code: str, rounds: int = 2) -> Path:
    return write_experiment(
        tmp_path,
        f"""
        name: hostile
        output: {tmp_path}
        settings: {{adaptive: false, rounds: {rounds}, warmup_rounds: 0, pin: none,
                    max_consecutive_failures: 2, timeout: 5s}}
        workloads:
          - name: w
            command: ["{py}", "-c", "{code}"]
            readings: {readings}
        """,
    )


def test_a_backtracking_pattern_fails_the_round_and_the_campaign_ends(
    tmp_path: Path, py: str
) -> None:
    exp = _experiment(
        tmp_path, py, "{pattern: '(a|aa)+b', match_timeout: 300ms}", "print('a' * 40)"
    )
    t0 = time.monotonic()
    proc = cli("run", str(exp), "-q")
    assert time.monotonic() - t0 < 30  # with Python's re: hours per round
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    rows = query(tmp_path / "hostile" / "benchrun.db", "SELECT status, reason FROM round")
    assert len(rows) == 2
    assert all(s == "failed" and "took more than 0.3 s" in r for s, r in rows)


def test_a_flood_of_readings_fails_the_round_past_max_readings(tmp_path: Path, py: str) -> None:
    exp = _experiment(
        tmp_path,
        py,
        "{pattern: 't=([0-9]+)', max_readings: 1000}",
        "print(chr(10).join(['t=1'] * 200000))",
        rounds=1,
    )
    proc = cli("run", str(exp), "-q")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    db = tmp_path / "hostile" / "benchrun.db"
    rows = query(db, "SELECT status, reason FROM round")
    assert len(rows) == 2  # max_consecutive_failures
    assert all(s == "failed" and "more than 1000 readings" in r for s, r in rows)
    assert query(db, "SELECT count(*) FROM reading")[0][0] == 0


def test_sigterm_is_served_while_a_pattern_searches(tmp_path: Path, py: str) -> None:
    exp = _experiment(tmp_path, py, "{pattern: '(a|aa)+b', match_timeout: 60s}", "print('a' * 60)")
    proc = start_benchrun("run", str(exp), "-q")
    time.sleep(4)  # the round (a print) is long over: the runner is matching
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert time.monotonic() - t0 < 10
    assert proc.returncode == 128 + signal.SIGTERM and "Traceback" not in err
    (status,) = query(tmp_path / "hostile" / "benchrun.db", "SELECT status FROM campaign")[0]
    assert status == "interrupted"


def test_an_adaptive_run_with_readings_beyond_the_statistics_range_ends_in_one_line(
    tmp_path: Path, py: str
) -> None:
    code = "import random; print('t=%g' % (random.random() * 1e200))"
    exp = write_experiment(
        tmp_path,
        f"""
        name: huge
        output: {tmp_path}
        settings: {{pin: none, max_time: 30s, min_round_time: 0}}
        workloads:
          - name: a
            command: ["{py}", "-c", "{code}"]
            readings: {{pattern: 't=([0-9.e+]+)', unit: ms}}
          - name: b
            command: ["{py}", "-c", "{code}"]
            readings: {{pattern: 't=([0-9.e+]+)', unit: ms}}
        """,
    )
    proc = cli("run", str(exp), "-q")
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1 and "beyond ±1e+50" in proc.stderr
    stopped = query(tmp_path / "huge" / "benchrun.db", "SELECT status_reason FROM workload")
    assert all("beyond ±1e+50" in (r or "") for (r,) in stopped)
