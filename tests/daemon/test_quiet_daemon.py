"""The daemon-wide quiet-machine guard (``daemon start --quiet-load``), with real load."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest
from daemon_util import Env, write_experiment


def env_probe(tmp_path: Path) -> Path:
    """An experiment whose workload reports the quiet load its environment carries."""
    return write_experiment(
        tmp_path,
        f"""
        name: probe
        output: {tmp_path / "out"}
        settings: {{adaptive: false, rounds: 1, warmup_rounds: 0}}
        workloads:
          - name: env
            command: ["python3", "-c", "import os; print('q=' + os.environ['BENCHRUN_QUIET_LOAD'])"]
            readings: {{pattern: 'q=([0-9.e-]+)', unit: load}}
        """,
    )


def test_daemon_waits_for_a_quiet_machine_and_gives_up_at_the_limit(
    xdg: Env, tmp_path: Path
) -> None:
    # a machine running tests has a 1-minute load average above 1e-4: the daemon must wait
    if os.getloadavg()[0] < 1e-4:
        pytest.skip("the load average is 0.00 here, so there is nothing to wait for")
    xdg.start_daemon("--quiet-load", "0.0001", "--quiet-max-wait", "1.5")
    entry_id = int(xdg.cli("submit", str(env_probe(tmp_path))).stdout)
    entry = xdg.wait_state(entry_id, ("done",), 60)
    assert entry["started_at"] - entry["submitted_at"] >= 1.5
    quiet = [m for kind, m in xdg.queue_log(entry_id) if kind == "quiet"]
    assert len(quiet) == 1
    assert "below 0.0001" in quiet[0] and "gave up" in quiet[0]
    waited = float(quiet[0].split()[1])
    assert 1.5 <= waited < 10
    # the daemon-wide default reaches the campaign (runner.machine.quiet.quiet_settings reads it)
    db = tmp_path / "out" / "probe" / "benchrun.db"
    assert sqlite3.connect(db).execute("SELECT value FROM reading").fetchall() == [(0.0001,)]
    status = xdg.cli("daemon", "status")
    assert "wait for load < 0.0001" in status.stdout


def test_a_quiet_machine_starts_at_once(xdg: Env, tmp_path: Path) -> None:
    xdg.start_daemon("--quiet-load", "1000")
    entry_id = int(xdg.cli("submit", str(env_probe(tmp_path))).stdout)
    entry = xdg.wait_state(entry_id, ("done",), 60)
    (quiet,) = [m for kind, m in xdg.queue_log(entry_id) if kind == "quiet"]
    assert quiet.startswith("waited 0.0 s") and "gave up" not in quiet
    assert entry["started_at"] - entry["submitted_at"] < 1.5
