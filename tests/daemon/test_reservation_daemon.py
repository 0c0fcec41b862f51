"""A queued campaign whose CPUs another benchrun run holds waits for them instead of
failing (docs/reservation.md, "The daemon"): the real daemon, a real child process holding
the CPU reservation, the rounds read back with plain sqlite3."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from daemon_util import Env, det_experiment, rounds_of, wait_for

HOLDER = """
import sys, time
from benchrun.runner.execute.reservation import try_reserve
r = try_reserve("auto", "interactive", allowed=[0, 1])
print(type(r).__name__, flush=True)
time.sleep(120)
"""


@pytest.mark.skipif(os.sched_getaffinity(0) != {0, 1}, reason="written for CPUs 0 and 1")
def test_a_queued_campaign_waits_for_cpus_held_by_another_run(xdg: Env, tmp_path: Path) -> None:
    # the holder and the daemon's child use the same lock directory: this pytest
    # process's BENCHRUN_CPU_LOCK_DIR (tests/conftest.py), inherited by both
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER], stdout=subprocess.PIPE, text=True, env=xdg.env()
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "Reservation"
        xdg.start_daemon()
        exp = det_experiment(tmp_path, tmp_path / "out", 3)
        sub = xdg.cli("submit", str(exp))
        assert sub.returncode == 0, sub.stderr
        entry_id = int(sub.stdout)

        def said_waiting() -> bool:
            return "waiting for CPUs" in xdg.cli("logs", str(entry_id)).stdout

        wait_for(said_waiting, 60, "the child's waiting line in its log")
        assert f"pid {holder.pid}" in xdg.cli("logs", str(entry_id)).stdout
        time.sleep(1.0)  # still waiting, not failed, nothing measured
        assert xdg.entry(entry_id)["state"] == "running"
        db = tmp_path / "out" / "det" / "benchrun.db"
        assert not db.exists() or rounds_of(db) == []
        before_release = time.time()
    finally:
        holder.kill()
        holder.wait()
    final = xdg.wait_state(entry_id, ("done",))
    assert final["state"] == "done", final
    assert [(i, s) for _, i, s, _ in rounds_of(db)] == [(0, "ok"), (1, "ok"), (2, "ok")]
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        (first,) = conn.execute("SELECT min(started_at) FROM round").fetchone()
    finally:
        conn.close()
    assert first >= before_release  # measured only once the holder was gone
