"""Fault test: SIGKILL the daemon at 20 seeded random moments of a campaign.

Real processes and real databases: the daemon (what ``benchrun daemon start`` detaches),
its ``benchrun run`` child, workloads printing deterministic readings by round number.
After each kill the daemon is restarted; at the end the results DB must pass
``PRAGMA integrity_check``, hold every round number exactly once, and equal an
uninterrupted ``benchrun run`` of the same experiment, reading for reading.
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import time
from pathlib import Path

from daemon_util import (
    Env,
    count_rounds,
    det_experiment,
    expected_reading,
    rounds_of,
    wait_for,
)

SEED = 20261123
KILLS = 20
ROUNDS = 8  # per workload; two workloads -> 16 rounds
WORKLOADS = ("a", "b")


def _gone(pid: int, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:
            if Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].startswith("Z"):
                return True  # a zombie: dead, waiting for its parent to reap it
        except OSError:
            return True
        time.sleep(0.01)
    return False


def test_sigkill_at_20_random_moments_loses_and_duplicates_nothing(
    xdg: Env, tmp_path: Path
) -> None:
    rng = random.Random(SEED)
    total = ROUNDS * len(WORKLOADS)
    # kill after k committed rounds (k drawn with replacement over the campaign) plus
    # 0-80 ms: kills land mid-round, between a commit and the next launch, and (when k
    # repeats) while a resumed child is still starting
    # (k < total - 2: a kill never comes after the campaign could have finished)
    moments = sorted(rng.choices(range(total - 2), k=KILLS))
    delays = [rng.uniform(0.0, 0.08) for _ in moments]

    exp = det_experiment(tmp_path, tmp_path / "out", ROUNDS, workloads=WORKLOADS, sleep=0.05)
    db = tmp_path / "out" / "det" / "benchrun.db"
    daemon = xdg.start_daemon(fast=True)
    sub = xdg.cli("submit", str(exp))  # in process: the daemon is the real process here
    assert sub.returncode == 0, sub.stderr
    entry_id = int(sub.stdout)

    running_at_kill = 0
    children_killed = 0
    for k, delay in zip(moments, delays, strict=True):
        wait_for(lambda k=k: count_rounds(db) >= k, 60, f"{k} committed rounds")
        time.sleep(delay)
        before = xdg.entry(entry_id)
        daemon.send_signal(signal.SIGKILL)
        daemon.wait(10)
        assert count_rounds(db) < total, "the campaign finished before the last kill"
        if before["state"] == "running":
            running_at_kill += 1
            # PR_SET_PDEATHSIG: the child dies with the daemon, like on a power loss
            if before["pid"] and _gone(before["pid"], 5.0):
                children_killed += 1
        daemon = xdg.start_daemon(fast=True)

    final = xdg.wait_state(entry_id, ("done", "failed", "paused", "interrupted"), timeout=90)
    assert final["state"] == "done", final
    assert children_killed == running_at_kill
    assert running_at_kill >= KILLS // 2  # most kills hit a running campaign

    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        campaigns = conn.execute("SELECT id, status FROM campaign").fetchall()
        kinds = [k for (k,) in conn.execute("SELECT kind FROM event ORDER BY id")]
        dup = conn.execute(
            "SELECT count(*) FROM (SELECT workload_id, round_index FROM round"
            " GROUP BY workload_id, round_index HAVING count(*) > 1)"
        ).fetchone()[0]
    finally:
        conn.close()
    assert len(campaigns) == 1 and campaigns[0][1] == "done"
    assert dup == 0
    got = rounds_of(db)
    # every round number exactly once, all ok, with the reading the workload prints
    assert [(w, i) for w, i, _, _ in got] == [(w, i) for w in WORKLOADS for i in range(ROUNDS)]
    assert all(status == "ok" for _, _, status, _ in got)
    assert all(vals == (expected_reading(i),) for _, i, _, vals in got)
    # the event logs record the interruptions and the resumes
    assert kinds.count("daemon-resume") >= 1 and kinds.count("resume") >= 1
    crash_logs = [m for kind, m in xdg.queue_log(entry_id) if kind == "crash-detected"]
    assert len(crash_logs) == running_at_kill

    # the same experiment, uninterrupted, gives the same rounds and readings
    ref = xdg.cli("run", str(exp), "-o", str(tmp_path / "ref"), "-q")
    assert ref.returncode == 0, ref.stderr
    assert rounds_of(tmp_path / "ref" / "det" / "benchrun.db") == got


def _marked_sleepers(entry_id: int) -> set[int]:
    """pids of ``sleep 31.5`` processes carrying the daemon's mark of ``entry_id``."""
    found = set()
    for pid in (int(p) for p in os.listdir("/proc") if p.isdigit()):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        mark = f"BENCHRUN_DAEMON_ENTRY={entry_id}:".encode()  # ID:QUEUE (child.entry_mark)
        if cmdline[:2] == [b"sleep", b"31.5"] and any(e.startswith(mark) for e in environ):
            found.add(pid)
    return found


def test_workloads_left_by_a_killed_daemon_are_killed_on_restart(xdg: Env, tmp_path: Path) -> None:
    exp = tmp_path / "slow.yaml"
    exp.write_text(
        f"name: slow\noutput: {tmp_path / 'out'}\n"
        "settings: {adaptive: false, rounds: 3, warmup_rounds: 0, timeout: 60s}\n"
        "workloads:\n  - {name: sleeper, command: [sleep, '31.5']}\n"
    )
    daemon = xdg.start_daemon()
    entry_id = int(xdg.cli("submit", str(exp)).stdout)
    wait_for(lambda: bool(_marked_sleepers(entry_id)), 30, "the workload to start")
    (orphan,) = _marked_sleepers(entry_id)
    child = xdg.entry(entry_id)["pid"]
    daemon.send_signal(signal.SIGKILL)
    daemon.wait(10)
    assert _gone(child, 5.0)  # the benchrun run child died with the daemon
    assert not _gone(orphan, 0.3)  # its workload did not (own session): an orphan
    xdg.start_daemon()
    assert _gone(orphan, 5.0)  # killed by the restarted daemon before it resumed
    log = [m for kind, m in xdg.queue_log(entry_id) if kind == "crash-detected"]
    assert len(log) == 1 and f"child pid {child}" in log[0]
    assert xdg.cli("cancel", str(entry_id)).returncode == 0
    xdg.wait_state(entry_id, ("cancelled",), 30)
    wait_for(lambda: not _marked_sleepers(entry_id), 10, "no workload left")
