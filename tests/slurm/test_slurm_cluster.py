"""Campaigns through a real Slurm (issue 19): the one-node cluster of tests/slurm/cluster.sh
(node ``vm`` or this machine's name, partitions ``alpha`` and ``beta``), started once by
the ``slurm_cluster`` fixture; skipped with the reason where it cannot run.

Each test runs a campaign with :func:`runner.campaign.run.run_campaign` and the executor
:func:`runner.execute.factory.make_executor` builds from the file, as ``benchrun run``
will once it is wired to the factory.
"""

from __future__ import annotations

import contextlib
import csv
import os
import re
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from benchrun.runner.campaign.run import run_campaign
from benchrun.runner.campaign.session import CampaignOutcome
from benchrun.runner.config.loader import load_experiment
from benchrun.runner.errors import UserError
from benchrun.runner.execute.executor import RoundOutcome
from benchrun.runner.execute.factory import make_executor
from benchrun.runner.execute.slurm import SlurmCommands, SlurmExecutor
from benchrun.runner.store.database import Store

pytestmark = pytest.mark.usefixtures("slurm_cluster")


class Recorder:
    """A display that keeps every round's outcome (with its node) and every message."""

    def __init__(self) -> None:
        self.outcomes: list[tuple[str, RoundOutcome]] = []
        self.messages: list[str] = []
        self.on_round: Any = None

    def start(self, *args: Any) -> None:
        pass

    def round_done(self, workload: str, outcome: RoundOutcome, value: Any, warmup: bool) -> None:
        self.outcomes.append((workload, outcome))
        if self.on_round is not None:
            self.on_round(len(self.outcomes))

    def message(self, text: str) -> None:
        self.messages.append(text)

    def show_decision(self, *args: Any) -> None:
        pass

    def stop(self) -> None:
        pass


def write(tmp_path: Path, executor: str, settings: str, workloads: str, name: str) -> Path:
    path = tmp_path / "exp.yaml"
    path.write_text(
        f"name: {name}\noutput: {tmp_path / 'results'}\nexecutor: {executor}\n"
        f"settings: {settings}\nworkloads:\n{workloads}"
    )
    return path


def campaign(path: Path, display: Recorder, **kw: Any) -> tuple[CampaignOutcome, SlurmExecutor]:
    experiment = load_experiment(path)
    executor = make_executor(experiment, on_message=display.message)
    assert isinstance(executor, SlurmExecutor)
    with contextlib.closing(executor):
        return run_campaign(experiment, executor, display, **kw), executor


def queued(name: str) -> list[str]:
    done = subprocess.run(
        ["squeue", "-h", "-n", name, "-o", "%i %T"], capture_output=True, text=True, timeout=30
    )
    return done.stdout.split()


def job_state(job_id: str, settle_s: float = 30.0) -> str:
    """The job's state once Slurm has finished ending it: COMPLETING (processes being
    killed, the epilog) lasts a few seconds on a loaded machine; at most ``settle_s``."""
    deadline = time.monotonic() + settle_s
    while True:
        state = SlurmCommands().state(job_id)
        assert state is not None
        if state.state != "COMPLETING" or time.monotonic() > deadline:
            return state.state
        time.sleep(0.5)


def stored_rounds(db: Path) -> list[Any]:
    with Store.create_or_open(db) as store:
        (row,) = store.campaigns()[-1:]
        return list(store.rounds(row.id))


def test_a_campaign_end_to_end(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "{kind: slurm, partition: alpha, time: '10:00'}",
        "{rounds: 3, warmup_rounds: 1}",
        '  - {name: t, command: "true"}\n  - {name: s, command: [sleep, "0.05"]}\n',
        "slurm-e2e",
    )
    display = Recorder()
    outcome, executor = campaign(path, display)
    assert (outcome.status, outcome.exit_code) == ("done", 0), outcome.message
    rounds = stored_rounds(outcome.db_path)
    assert len(rounds) == 8 and all(r.status == "ok" for r in rounds)
    node = os.uname().nodename.split(".")[0]
    assert {o.node for _, o in display.outcomes} == {node}
    assert all(o.extra["slurm_job"] == executor.jobs[0].job_id for _, o in display.outcomes)
    assert len(executor.jobs) == 1  # one job served the whole campaign
    sleeps = [o.wall_ns / 1e9 for w, o in display.outcomes if w == "s"]
    assert all(0.05 <= s < 1.0 for s in sleeps)
    assert job_state(executor.jobs[0].job_id) == "COMPLETED"
    assert queued("benchrun-slurm-e2e") == []
    assert executor.timings.to_first_round is not None and executor.timings.to_first_round < 60


def test_a_job_cancelled_mid_campaign_then_resumed(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "{kind: slurm, partition: beta, max_resubmits: 0}",
        "{rounds: 3, warmup_rounds: 0}",
        "  - {name: s, command: [sleep, '1']}\n",
        "slurm-scancel",
    )
    display = Recorder()
    experiment = load_experiment(path)
    executor = make_executor(experiment, on_message=display.message)
    assert isinstance(executor, SlurmExecutor)

    def cancel_after_first(count: int) -> None:
        if count == 1:  # the second round has just been sent: scancel it from outside
            job = executor.jobs[0].job_id
            threading.Timer(0.5, subprocess.run, args=(["scancel", job],)).start()

    display.on_round = cancel_after_first
    with contextlib.closing(executor), pytest.raises(UserError, match="max_resubmits: 0"):
        run_campaign(experiment, executor, display)
    first_job = executor.jobs[0].job_id
    assert job_state(first_job) == "CANCELLED"
    rounds = stored_rounds(experiment.db_path)
    assert [r.status for r in rounds] == ["ok", "failed"]
    assert re.fullmatch(rf"slurm job {first_job} CANCELLED \(exit \d+:\d+\)", rounds[1].reason)
    # --resume: a new executor, a new job; the failed round stays stored
    display = Recorder()
    outcome, resumed = campaign(path, display, resume=True)
    assert (outcome.status, outcome.exit_code) == ("done", 0), outcome.message
    rounds = stored_rounds(experiment.db_path)
    assert [r.status for r in rounds] == ["ok", "failed", "ok", "ok"]
    assert resumed.jobs[0].job_id != first_job
    assert queued("benchrun-slurm-scancel") == []


def test_ctrl_c_ends_the_campaign_and_its_job(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "{kind: slurm}",
        "{rounds: 5, warmup_rounds: 0}",
        "  - {name: s, command: [sleep, '30']}\n",
        "slurm-ctrlc",
    )
    display = Recorder()
    experiment = load_experiment(path)
    executor = make_executor(experiment, on_message=display.message)
    assert isinstance(executor, SlurmExecutor)
    ticker = threading.Timer(4.0, os.kill, args=(os.getpid(), signal.SIGINT))
    ticker.start()
    t0 = time.monotonic()
    with contextlib.closing(executor):
        outcome = run_campaign(experiment, executor, display)
    assert outcome.status == "interrupted" and outcome.exit_code == 130
    assert time.monotonic() - t0 < 20
    assert stored_rounds(experiment.db_path) == []  # the killed round is redone on resume
    assert job_state(executor.jobs[0].job_id) in ("COMPLETED", "CANCELLED")
    assert queued("benchrun-slurm-ctrlc") == []


def test_a_bad_partition_is_refused_before_anything_is_queued(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "{kind: slurm, partition: gamma}",
        "{rounds: 1}",
        '  - {name: t, command: "true"}\n',
        "slurm-badpart",
    )
    with pytest.raises(UserError) as info:
        campaign(path, Recorder())
    # the partitions as sinfo lists them (alpha, beta and, on the cluster of today's
    # tests/slurm/cluster.sh, the two-node ones)
    listed = subprocess.run(
        ["sinfo", "-h", "-o", "%R"], capture_output=True, text=True, timeout=30
    ).stdout.split()
    assert {"alpha", "beta"} <= set(listed)
    assert str(info.value) == (
        "slurm: partition 'gamma' does not exist (executor partition:); partitions: "
        f"{', '.join(sorted(set(listed)))}; nothing was submitted"
    )
    assert queued("benchrun-slurm-badpart") == []


@pytest.mark.slow
def test_a_job_that_hits_its_time_limit(tmp_path: Path) -> None:
    """A real time limit: Slurm's limits are whole minutes and slurmctld checks them every
    30 s, so the job of ``time: 0:01:00`` under a round of 150 s ends 60 to 90 s in."""
    path = write(
        tmp_path,
        "{kind: slurm, time: '0:01:00', max_resubmits: 0}",
        "{rounds: 1, warmup_rounds: 0, timeout: 5m}",
        "  - {name: long, command: [sleep, '150']}\n",
        "slurm-timeout",
    )
    display = Recorder()
    experiment = load_experiment(path)
    executor = make_executor(experiment, on_message=display.message)
    assert isinstance(executor, SlurmExecutor)
    t0 = time.monotonic()
    with contextlib.closing(executor), pytest.raises(UserError, match="max_resubmits: 0"):
        run_campaign(experiment, executor, display)
    assert 55 < time.monotonic() - t0 < 140
    job = executor.jobs[0].job_id
    assert job_state(job) == "TIMEOUT"
    (stored,) = stored_rounds(experiment.db_path)
    assert stored.status == "failed"
    assert re.fullmatch(rf"slurm job {job} TIMEOUT \(exit \d+:\d+\)", stored.reason)
    assert queued("benchrun-slurm-timeout") == []


def test_benchrun_run_takes_the_executor_from_the_file(tmp_path: Path) -> None:
    """The command line a user types: `benchrun run exp.yaml` with `executor: slurm`
    runs its rounds in a job (the console script, a real process), stores them at home
    and records the executor instead of this host's containment."""
    path = write(
        tmp_path,
        "{kind: slurm, partition: beta, time: '10:00'}",
        "{rounds: 3, warmup_rounds: 0, pin: none}",
        '  - {name: t, command: "true"}\n',
        "slurm-cli",
    )
    done = subprocess.run(
        ["benchrun", "run", str(path)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert "slurm: submitted job" in done.stderr and "runs on node" in done.stderr
    db = tmp_path / "results" / "slurm-cli" / "benchrun.db"
    rounds = stored_rounds(db)
    assert [r.status for r in rounds] == ["ok"] * 3
    with Store.create_or_open(db) as store:
        meta = store.campaign().metadata
    assert meta["executor"]["kind"] == "slurm" and meta["executor"]["partition"] == "beta"
    assert "containment" not in meta
    assert queued("benchrun-slurm-cli") == []
    # every round records its node (and job), in the store and in the CSV export
    node = os.uname().nodename.split(".")[0]
    assert {r.facts["node"] for r in rounds} == {node}
    assert len({r.facts["slurm_job"] for r in rounds}) == 1
    csv_path = tmp_path / "readings.csv"
    exported = subprocess.run(
        ["benchrun", "export", str(db.parent), "--format", "csv", "-o", str(csv_path)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert exported.returncode == 0, exported.stderr
    with csv_path.open() as f:
        assert {row["node"] for row in csv.DictReader(f)} == {node}
