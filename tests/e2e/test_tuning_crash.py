"""A ``tune: true`` campaign SIGKILLed while the machine is tuned (issue 33 item 3,
docs/tuning.md): the kernel's ``perf_event_max_sample_rate``, set to 54321 first, is 1
while the campaign runs and 54321 again after ``benchrun system reset``, or after the
next ``benchrun run`` of any experiment. The values are read from /proc, written by the
kernel; the real ``benchrun`` console script runs the campaigns."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.e2e.e2e_util import benchrun_argv, query, run_benchrun, write_experiment
from tests.real_tuning import (
    GROUP,
    MARK,
    needs_real_sample_rate,
    read_sample_rate,
    real_sample_rate,
)

pytestmark = [needs_real_sample_rate, pytest.mark.xdist_group(GROUP)]

TUNED = """\
    name: tuned
    output: {out}
    settings:
      adaptive: false
      rounds: 200
      warmup_rounds: 0
      pin: none
      tune: true
    workloads:
      - name: a
        command: [sleep, "0.2"]
"""

NEXT = """\
    name: next
    output: {out}
    settings:
      adaptive: false
      rounds: 2
      warmup_rounds: 0
      pin: none
    workloads:
      - name: b
        command: ["true"]
"""


def _kill_while_tuned(tmp_path: Path, env: dict[str, str]) -> Path:
    """Start the tuned campaign, SIGKILL it once it has tuned and stored a round; returns
    its store."""
    exp = write_experiment(tmp_path, TUNED.format(out=tmp_path / "out"))
    db = tmp_path / "out" / "tuned" / "benchrun.db"
    proc = subprocess.Popen(
        [*benchrun_argv(), "run", str(exp), "-q"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            if db.exists() and read_sample_rate() == "1":
                try:
                    if query(db, "SELECT count(*) FROM round")[0][0] > 0:
                        break
                except Exception:  # noqa: BLE001 - tables not made yet
                    pass
            time.sleep(0.1)
        assert proc.poll() is None, proc.communicate()[1]
        assert read_sample_rate() == "1"
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
    return db


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "BENCHRUN_TUNING_DIR": str(tmp_path / "tuning")}


def test_sigkilled_tune_campaign_then_system_reset_gives_54321_back(
    tmp_path: Path, env: dict[str, str]
) -> None:
    with real_sample_rate(MARK):
        db = _kill_while_tuned(tmp_path, env)
        assert read_sample_rate() == "1"  # nobody restored it: the process died
        journal = json.loads((tmp_path / "tuning" / "tuning.json").read_text())
        assert journal["owner"]["kind"] == "campaign"
        assert {"path": "proc/sys/kernel/perf_event_max_sample_rate", "before": MARK}.items() <= (
            journal["entries"][-1].items()
        )
        # the killed campaign's metadata said what it tuned, before and after
        meta = json.loads(query(db, "SELECT metadata_json FROM campaign")[0][0])
        assert {(c["setting"], c["before"], c["after"]) for c in meta["tuning"]["changes"]} == {
            ("perf_event_max_sample_rate", MARK, "1")
        }
        shown = run_benchrun("system", env=env)
        assert "ended without restoring" in shown.stdout
        reset = run_benchrun("system", "reset", env=env)
        assert reset.returncode == 0, reset.stderr
        assert read_sample_rate() == MARK
        assert "perf_event_max_sample_rate: 1 -> 54321" in reset.stdout
        assert not (tmp_path / "tuning" / "tuning.json").exists()


def test_sigkilled_tune_campaign_then_the_next_run_gives_54321_back(
    tmp_path: Path, env: dict[str, str]
) -> None:
    with real_sample_rate(MARK):
        _kill_while_tuned(tmp_path, env)
        assert read_sample_rate() == "1"
        nxt = write_experiment(tmp_path, NEXT.format(out=tmp_path / "out"), "next.yaml")
        done = run_benchrun("run", str(nxt), env=env)
        assert done.returncode == 0, done.stderr
        assert read_sample_rate() == MARK
        assert "ended without restoring the machine's tuning" in done.stderr
        db = tmp_path / "out" / "next" / "benchrun.db"
        kinds = [k for (k,) in query(db, "SELECT kind FROM event")]
        assert "tuning-restored" in kinds
        assert not (tmp_path / "tuning" / "tuning.json").exists()
