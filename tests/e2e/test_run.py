"""End to end: ``benchrun run`` with real processes, the database read back with sqlite3.

The runs that touch the OS (pinning, timeouts, crashes, memory limits, signals) go through
the console script; commands after a kill, and ``show``, run in process (e2e_util.cli)."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest
from e2e_util import (
    REPO,
    cli,
    query,
    rounds_stored,
    run_benchrun,
    start_benchrun,
    write_experiment,
)


def test_demo_stops_by_itself_with_every_pair_decided(tmp_path: Path) -> None:
    # The demo's max_time (50 s, so the README command ends within a minute) is raised for
    # the test: on a noisy VM the same code took 10-52 s (benchmarks/demo_time.py), and in
    # its slow phases the host's drift makes the rounds correlated (tau 5-15 rounds), so a
    # workload needs 8 subsessions of 20-70 rounds before its CI can be trusted. What is
    # tested here is that the stopping rule ends the campaign, not the machine's speed;
    # the round budget is raised with the time (CI once saw sleep-10ms at tau 20 readings
    # under the other xdist worker's load reach the demo's 1000 rounds ~190 rounds short)
    proc = run_benchrun(
        "run", str(REPO / "configs" / "demo.yaml"), "-o", str(tmp_path), "-q",
        "--set", "max_time=240s", "--set", "max_rounds=4000", timeout=400,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    db = tmp_path / "demo" / "benchrun.db"
    (status, reason, settings) = query(
        db, "SELECT status, stop_reason, settings_json FROM campaign"
    )[0]
    max_rounds = json.loads(settings)["max_rounds"]
    assert json.loads(settings)["max_time"] == 240.0  # --set is stored with the campaign
    # adaptive (the default): it stopped because every condition held, not on a budget
    assert status == "done"
    assert reason.startswith("all conditions met"), reason
    rows = query(
        db,
        "SELECT w.name, sum(r.warmup = 0 AND r.status = 'ok'), sum(r.warmup), sum(r.status != 'ok')"
        " FROM round r JOIN workload w ON w.id = r.workload_id GROUP BY w.name ORDER BY w.name",
    )
    # sum-range expands over n in [1e6, 2e6] -> 4 workloads, none failed
    assert [r[0] for r in rows] == [
        "sleep-10ms",
        "sort-20k",
        "sum-range[n=1000000]",
        "sum-range[n=2000000]",
    ]
    for _name, steady, warmup, failed in rows:
        assert 5 <= steady < max_rounds  # min_rounds 5, well before the budget
        assert warmup >= 1 and failed == 0
    # the demo's question (compare: by n) was decided on the per-pass ratio, in the order
    # of the work (2 million integers take longer than 1 million)
    verdicts = [
        json.loads(d) for (d,) in query(db, "SELECT data_json FROM event WHERE kind = 'verdicts'")
    ]
    assert len(verdicts) == 1 and verdicts[0]["conditions_met"] is True
    (pair,) = verdicts[0]["pairs"]
    assert (pair["a"], pair["b"]) == ("sum-range[n=1000000]", "sum-range[n=2000000]")
    assert (pair["verdict"], pair["test"]) == ("separated", "paired")
    assert 1.0 < pair["ratio_low"] <= pair["ratio"] <= pair["ratio_high"] < 2.5
    # sleep 0.01: every steady wall time is at least 10 ms (the reading is in seconds)
    walls = [
        v
        for (v,) in query(
            db,
            "SELECT reading.value FROM reading JOIN round ON round.id ="
            " reading.round_id JOIN workload w ON w.id = round.workload_id"
            " WHERE w.name = 'sleep-10ms'",
        )
    ]
    assert min(walls) >= 0.010
    # sort-20k was calibrated: its steady rounds use the stored work amount, and each
    # round stored one reading per unit of work
    (cal,) = query(db, "SELECT data_json FROM event WHERE kind = 'calibrated'")[0]
    work = json.loads(cal)["work"]
    counts = query(
        db,
        "SELECT round.work, count(reading.idx) FROM round JOIN workload w ON"
        " w.id = round.workload_id JOIN reading ON reading.round_id = round.id"
        " WHERE w.name = 'sort-20k' AND round.flags NOT LIKE '%calibration%'"
        " GROUP BY round.id",
    )
    assert counts and all(c == (work, work) for c in counts)
    assert "mean" in proc.stdout and "sleep-10ms" in proc.stdout and "separated" in proc.stdout
    (meta,) = query(db, "SELECT metadata_json FROM campaign")[0]
    assert meta and "PYTHONHASHSEED" in meta


def test_child_sees_its_pinned_cpu(tmp_path: Path, py: str) -> None:
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        pytest.skip("pinning needs two usable CPUs; this machine allows only " + str(allowed))
    exp = write_experiment(
        tmp_path,
        f"""
        name: pin
        output: {tmp_path}
        settings: {{rounds: 3, warmup_rounds: 0, pin: auto}}
        workloads:
          - name: affinity
            command: ["{py}", "-c", "import os; print('mask=%d' % sum(1 << c for c in os.sched_getaffinity(0)))"]
            readings: {{pattern: 'mask=([0-9]+)', unit: mask}}
        """,
    )
    proc = run_benchrun("run", str(exp), "-q")
    assert proc.returncode == 0, proc.stderr
    rows = query(
        tmp_path / "pin" / "benchrun.db",
        "SELECT round.cpus, reading.value FROM round JOIN reading ON reading.round_id = round.id",
    )
    assert len(rows) == 3
    for cpus, mask in rows:
        pinned = [int(c) for c in cpus.split(",")]
        assert mask == sum(1 << c for c in pinned)  # what the child saw == what was recorded
        # 'auto' never gives the workload every CPU: the runner keeps at least one
        assert set(pinned) < set(allowed)
    if len(allowed) == 2:
        assert {cpus for cpus, _ in rows} == {str(allowed[1])}


def test_timeout_and_crash_are_stored_as_failed_and_the_campaign_goes_on(
    tmp_path: Path, py: str
) -> None:
    exp = write_experiment(
        tmp_path,
        f"""
        name: failing
        output: {tmp_path}
        settings: {{rounds: 2, warmup_rounds: 0, timeout: 300ms, max_consecutive_failures: 2}}
        workloads:
          - name: hangs
            command: ["sleep", "30"]
          - name: crashes
            command: ["{py}", "-c", "import sys; print('about to fail'); sys.exit(3)"]
          - name: fine
            command: ["true"]
        """,
    )
    t0 = time.monotonic()
    proc = run_benchrun("run", str(exp), "-q")
    assert time.monotonic() - t0 < 20  # two 0.3 s timeouts, not two 30 s sleeps
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert "stopped" in proc.stderr
    db = tmp_path / "failing" / "benchrun.db"
    rows = dict(
        ((name, status), n)
        for name, status, n in query(
            db,
            "SELECT w.name, r.status, count(*) FROM round r JOIN workload w ON w.id = r.workload_id"
            " GROUP BY w.name, r.status",
        )
    )
    assert rows == {("hangs", "timeout"): 2, ("crashes", "failed"): 2, ("fine", "ok"): 2}
    reason, out, code = query(
        db,
        "SELECT r.reason, r.stdout_tail, r.exit_code FROM round r JOIN workload w"
        " ON w.id = r.workload_id WHERE w.name = 'crashes' LIMIT 1",
    )[0]
    assert code == 3 and "3" in reason and "about to fail" in out
    stopped = query(db, "SELECT name FROM workload WHERE status = 'stopped' ORDER BY name")
    assert stopped == [("crashes",), ("hangs",)]


def _slow_experiment(tmp_path: Path, out: Path, py: str) -> Path:
    return write_experiment(
        tmp_path,
        f"""
        name: slow
        output: {out}
        settings: {{rounds: 6, warmup_rounds: 1, seed: 7}}
        workloads:
          - name: a
            command: ["{py}", "-c", "import time; time.sleep(0.05); print('v=%d' % {{round}})"]
            readings: {{pattern: 'v=([0-9]+)', unit: count}}
          - name: b
            command: ["sleep", "0.04"]
          - name: c
            command: ["sleep", "0.03"]
        """,
        name=f"slow-{out.name}.yaml",
    )


def _sequence(db: Path) -> list[tuple]:
    return query(
        db,
        "SELECT w.name, r.round_index, r.pass FROM round r JOIN workload w"
        " ON w.id = r.workload_id ORDER BY r.seq",
    )


def test_sigkill_then_resume_stores_every_round_exactly_once(tmp_path: Path, py: str) -> None:
    # The truth: an uninterrupted campaign of the same experiment.
    ref_exp = _slow_experiment(tmp_path, tmp_path / "ref", py)
    assert cli("run", str(ref_exp), "-q").returncode == 0
    reference = _sequence(tmp_path / "ref" / "slow" / "benchrun.db")
    assert len(reference) == 3 * 7

    exp = _slow_experiment(tmp_path, tmp_path / "killed", py)
    db = tmp_path / "killed" / "slow" / "benchrun.db"
    for kills in range(2):  # kill it twice at different moments
        proc = start_benchrun("run", str(exp), "-q", *(["--resume"] if kills else []))
        deadline = time.monotonic() + 60
        target = 5 + 6 * kills
        while rounds_stored(db) < target and time.monotonic() < deadline:
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    proc = cli("run", str(exp), "-q", "--resume")
    assert proc.returncode == 0, proc.stderr
    assert _sequence(db) == reference  # same rounds, same order, nothing twice
    readings = query(
        db,
        "SELECT reading.value FROM reading JOIN round ON round.id = reading.round_id"
        " JOIN workload w ON w.id = round.workload_id WHERE w.name = 'a' ORDER BY round.seq",
    )
    assert [v for (v,) in readings] == [float(i) for i in range(7)]
    assert query(db, "PRAGMA integrity_check") == [("ok",)]
    kinds = [k for (k,) in query(db, "SELECT kind FROM event ORDER BY id")]
    assert kinds.count("resume") == 2


def test_sigint_marks_interrupted_and_prints_the_resume_command(tmp_path: Path, py: str) -> None:
    exp = _slow_experiment(tmp_path, tmp_path / "int", py)
    db = tmp_path / "int" / "slow" / "benchrun.db"
    proc = start_benchrun("run", str(exp))
    deadline = time.monotonic() + 60
    while rounds_stored(db) < 4 and time.monotonic() < deadline:
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + signal.SIGINT
    assert "Traceback" not in err
    assert f"benchrun run {exp} --resume" in err
    (status,) = query(db, "SELECT status FROM campaign")[0]
    assert status == "interrupted"
    n_before = rounds_stored(db)
    assert n_before >= 4
    # running again without --resume refuses to abandon it
    again = cli("run", str(exp), "-q")
    assert again.returncode == 2 and "--resume" in again.stderr
    done = cli("run", str(exp), "-q", "--resume")
    assert done.returncode == 0, done.stderr
    assert rounds_stored(db) == 21


def test_resume_refuses_a_changed_experiment(tmp_path: Path, py: str) -> None:
    exp = _slow_experiment(tmp_path, tmp_path / "chg", py)
    db = tmp_path / "chg" / "slow" / "benchrun.db"
    proc = start_benchrun("run", str(exp), "-q")
    while rounds_stored(db) < 3:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    exp.write_text(exp.read_text().replace('sleep", "0.04', 'sleep", "0.05'))
    refused = cli("run", str(exp), "-q", "--resume")
    assert refused.returncode == 2
    assert "changed" in refused.stderr and "--new" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    fresh = cli("run", str(exp), "-q", "--new")
    assert fresh.returncode == 0, fresh.stderr
    assert query(db, "SELECT id, status FROM campaign ORDER BY id") == [(1, "running"), (2, "done")]


def test_show_reports_status_and_failures(tmp_path: Path, py: str) -> None:
    exp = write_experiment(
        tmp_path,
        f"""
        name: mixed
        output: {tmp_path}
        settings: {{rounds: 3, warmup_rounds: 0}}
        workloads:
          - name: ok
            command: ["true"]
          - name: bad
            command: ["{py}", "-c", "import sys; sys.stderr.write('boom\\\\n'); sys.exit(1)"]
        """,
    )
    cli("run", str(exp), "-q")
    shown = cli("show", str(tmp_path / "mixed"), "--failures")
    assert shown.returncode == 0, shown.stderr
    assert "done" in shown.stdout and "boom" in shown.stdout and "bad" in shown.stdout
    missing = cli("show", str(tmp_path / "nothing-here"))
    assert missing.returncode == 2 and "Traceback" not in missing.stderr


def test_quiet_guard_waits_before_each_pass_and_records_it(tmp_path: Path, py: str) -> None:
    # a load average below 1e-6 never happens on a live machine: every pass waits the
    # full quiet_max_wait (0.5 s) and then measures anyway; a huge threshold never waits
    for name, load, expected in (("busy", "0.000001", 2), ("calm", "1000", 0)):
        exp = write_experiment(
            tmp_path,
            f"""
            name: {name}
            output: {tmp_path}
            settings: {{rounds: 2, warmup_rounds: 0, quiet_load: {load}, quiet_max_wait: 500ms}}
            workloads:
              - name: a
                command: ["{py}", "-c", "pass"]
            """,
            name=f"{name}.yaml",
        )
        proc = cli("run", str(exp), "-q")
        assert proc.returncode == 0, proc.stderr
        events = query(
            tmp_path / name / "benchrun.db",
            "SELECT message, data_json FROM event WHERE kind = 'quiet-wait'",
        )
        assert len(events) == expected
        for message, data in events:
            d = json.loads(data)
            assert d["quiet"] is False and 0.5 <= d["seconds"] < 5
            assert "measuring anyway" in message


def test_memory_limit_fails_the_round_and_names_the_limit(tmp_path: Path, py: str) -> None:
    # 400 MB of bytes under a 256 MiB address-space limit cannot be allocated; 1 MB can
    exp = write_experiment(
        tmp_path,
        f"""
        name: mem
        output: {tmp_path}
        settings: {{rounds: 1, warmup_rounds: 0, max_consecutive_failures: 1}}
        workloads:
          - name: big
            command: ["{py}", "-c", "b = bytearray(400 * 1024 * 1024)"]
            memory_limit: 256MiB
          - name: small
            command: ["{py}", "-c", "b = bytearray(1024 * 1024)"]
            memory_limit: 256MiB
        """,
    )
    proc = run_benchrun("run", str(exp), "-q")
    assert proc.returncode == 1
    rows = dict(
        query(
            tmp_path / "mem" / "benchrun.db",
            "SELECT w.name, r.status || ': ' || coalesce(r.reason, '') FROM round r"
            " JOIN workload w ON w.id = r.workload_id",
        )
    )
    assert rows["small"].startswith("ok")
    assert rows["big"].startswith("failed") and "memory_limit 256 MiB" in rows["big"]
