"""Slurm campaigns through the daemon and ``--resume`` on the real one-node cluster (issue 19).

The daemon (``python -m benchrun.runner.daemon``, private XDG directories) and
``benchrun run`` are real processes; the jobs are real jobs of the cluster of
tests/slurm/cluster.sh. What is checked after each fault: every finished round is kept,
no round index is stored twice, the readings are those the workload prints (computed
here), and Slurm holds no job of the campaign at the end (their ``--comment`` marks them:
runner/execute/slurm_jobs.py).
"""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "daemon"))

from daemon_util import Env, count_rounds, rounds_of, wait_for, xdg_env  # noqa: E402

from benchrun.runner.execute.agent import CONNECT_TIMEOUT  # noqa: E402
from benchrun.runner.execute.slurm import AGENT_LOG, SlurmCommands  # noqa: E402
from benchrun.runner.execute.slurm_jobs import (  # noqa: E402
    campaign_comment,
    jobs_with_comment,
    squeue_argv,
)

pytestmark = pytest.mark.usefixtures("slurm_cluster")


@pytest.fixture
def xdg() -> Iterator[Env]:
    with xdg_env() as env:
        yield env


def experiment(
    tmp_path: Path,
    rounds: int,
    sleep: float,
    name: str = "sd",
    pending_limit: str = "5m",
    held: bool = False,
) -> Path:
    """A Slurm experiment whose workload prints ``v=<7 r mod 13>`` in round r after
    sleeping ``sleep`` seconds (fixed mode, no warm-up). ``held``: its jobs are submitted
    held (``sbatch --hold``: PENDING, reason JobHeldUser) until the test releases them,
    which makes a job pend without taking the node from anyone else."""
    path = tmp_path / f"{name}.yaml"
    code = f"import time; time.sleep({sleep}); print('v=%d' % ({{round}} * 7 % 13))"
    path.write_text(
        f"name: {name}\noutput: {tmp_path / 'out'}\n"
        "executor: {kind: slurm, partition: alpha, time: '10:00', "
        f"pending_limit: {pending_limit}{', sbatch_args: [--hold]' if held else ''}}}\n"
        f"settings: {{adaptive: false, rounds: {rounds}, warmup_rounds: 0, pin: none}}\n"
        "workloads:\n"
        f'  - name: a\n    command: ["python3", "-c", "{code}"]\n'
        "    metric: readings\n    readings: {pattern: 'v=([0-9]+)', unit: u}\n"
    )
    return path


def campaign_dir(tmp_path: Path, name: str = "sd") -> Path:
    return tmp_path / "out" / name


def jobs(directory: Path) -> dict[str, str]:
    """The campaign's jobs Slurm still holds: job id -> state (squeue)."""
    done = subprocess.run(
        [*squeue_argv()[:-1], "%i|%k"], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    ids = jobs_with_comment(done.stdout, campaign_comment(directory))
    states = {}
    for job_id in ids:
        state = SlurmCommands().state(job_id)
        states[job_id] = state.state if state is not None else "GONE"
    return states


def final_state(job_id: str) -> str:
    state = SlurmCommands().state(job_id)
    return state.state if state is not None else "forgotten by Slurm"


def assert_complete(db: Path, rounds: int) -> None:
    """Every round index once, ok, with the reading the workload prints."""
    got = rounds_of(db)
    assert [(w, i, s) for w, i, s, _ in got] == [("a", i, "ok") for i in range(rounds)]
    assert [v for *_, v in got] == [(float(i * 7 % 13),) for i in range(rounds)]


def nodes_and_jobs(db: Path) -> tuple[set[str], set[str]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        facts = [json.loads(f or "{}") for (f,) in conn.execute("SELECT facts_json FROM round")]
    finally:
        conn.close()
    return {f.get("node") for f in facts}, {f.get("slurm_job") for f in facts}


def test_a_slurm_campaign_runs_through_the_daemon(xdg: Env, tmp_path: Path) -> None:
    path = experiment(tmp_path, rounds=4, sleep=0.0)
    xdg.start_daemon()
    done = xdg.cli("submit", str(path))
    assert done.returncode == 0, done.stderr
    entry_id = int(done.stdout)
    entry = xdg.wait_state(entry_id, ("done",), 180)
    db = Path(entry["db_path"])
    assert_complete(db, 4)
    node_names, job_ids = nodes_and_jobs(db)
    assert len(node_names) == 1 and None not in node_names
    assert len(job_ids) == 1
    logs = xdg.cli("logs", str(entry_id))
    assert f"campaign {entry_id} done" in logs.stdout, logs.stdout
    status = xdg.cli("status", str(entry_id), "--json")
    assert json.loads(status.stdout)["entry"]["state"] == "done"
    assert jobs(campaign_dir(tmp_path)) == {}
    assert final_state(job_ids.pop()) in ("COMPLETED", "forgotten by Slurm")


@pytest.mark.slow
def test_a_job_cancelled_under_a_round_through_the_daemon(xdg: Env, tmp_path: Path) -> None:
    """``scancel`` from outside while a round runs: that round is stored failed with
    Slurm's state and exit code, the next round goes to a new job, the campaign ends."""
    path = experiment(tmp_path, rounds=3, sleep=1.0)
    xdg.start_daemon()
    entry_id = int(xdg.cli("submit", str(path)).stdout)
    db = campaign_dir(tmp_path) / "benchrun.db"
    wait_for(lambda: count_rounds(db) >= 1, 180, "a round stored", 0.05)
    (first_job,) = jobs(campaign_dir(tmp_path))
    time.sleep(0.3)  # the next round is on the node
    subprocess.run(["scancel", first_job], timeout=30)
    xdg.wait_state(entry_id, ("done",), 180)
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        stored = conn.execute(
            "SELECT round_index, status, reason FROM round ORDER BY round_index"
        ).fetchall()
    finally:
        conn.close()
    assert [i for i, _, _ in stored] == list(range(len(stored)))
    failed = [(i, why) for i, status, why in stored if status != "ok"]
    assert len(failed) == 1 and len(stored) == 4, stored
    assert re.fullmatch(rf"slurm job {first_job} CANCELLED \(exit \d+:\d+\)", failed[0][1])
    _, job_ids = nodes_and_jobs(db)
    assert len(job_ids) == 2 and first_job in job_ids
    assert jobs(campaign_dir(tmp_path)) == {}


@pytest.mark.slow
@pytest.mark.parametrize("how", ["sigkill", "sigterm"])
def test_the_daemon_dies_while_the_job_runs(xdg: Env, tmp_path: Path, how: str) -> None:
    """SIGKILL (the child dies with the daemon; the agent sees its connection end and the
    job ends) or SIGTERM, as ``daemon stop`` and systemd send (the child closes its job);
    on restart the campaign is resumed in a new job and finishes with every round once."""
    rounds = 8
    path = experiment(tmp_path, rounds=rounds, sleep=0.8)
    daemon = xdg.start_daemon()
    entry_id = int(xdg.cli("submit", str(path)).stdout)
    db = campaign_dir(tmp_path) / "benchrun.db"
    wait_for(lambda: count_rounds(db) >= 2, 180, "two rounds stored", 0.05)
    (first_job,) = jobs(campaign_dir(tmp_path))
    child = xdg.entry(entry_id)["pid"]
    if how == "sigkill":
        daemon.send_signal(signal.SIGKILL)
        daemon.wait(10)
    else:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(60)
        assert xdg.entry(entry_id)["state"] == "interrupted"
    wait_for(lambda: not _alive(child), 10, "the child to end")
    assert count_rounds(db) < rounds  # the campaign was cut short
    kept = {i for _, i, _, _ in rounds_of(db)}
    # nobody serves the job any more: its agent ends it (no daemon involved)
    wait_for(lambda: first_job not in jobs(campaign_dir(tmp_path)), 30, "the job to end", 0.5)
    assert final_state(first_job) in ("COMPLETED", "forgotten by Slurm")
    xdg.start_daemon()
    xdg.wait_state(entry_id, ("done",), 240)
    assert_complete(db, rounds)
    assert kept <= {i for _, i, _, _ in rounds_of(db)}
    _, job_ids = nodes_and_jobs(db)
    assert first_job in job_ids and len(job_ids) == 2  # the resume ran in a new job
    assert jobs(campaign_dir(tmp_path)) == {}
    kinds = [k for k, _ in xdg.queue_log(entry_id)]
    assert ("crash-detected" if how == "sigkill" else "requeued") in kinds


@pytest.mark.slow
def test_a_pending_job_of_a_dead_child_is_cancelled_on_restart(xdg: Env, tmp_path: Path) -> None:
    path = experiment(tmp_path, rounds=3, sleep=0.0, held=True)
    daemon = xdg.start_daemon()
    entry_id = int(xdg.cli("submit", str(path)).stdout)
    orphan = one_pending_job(tmp_path)
    child = xdg.entry(entry_id)["pid"]
    daemon.send_signal(signal.SIGKILL)
    daemon.wait(10)
    wait_for(lambda: not _alive(child), 10, "the child to die with the daemon")
    time.sleep(1.0)
    assert jobs(campaign_dir(tmp_path)) == {orphan: "PENDING"}  # left behind by the child
    xdg.start_daemon()
    # the restarted daemon cancels it before resuming: it never starts an agent
    wait_for(lambda: final_state(orphan) == "CANCELLED", 30, "the orphan cancelled", 0.2)
    said = [m for k, m in xdg.queue_log(entry_id) if k == "slurm-cancel"]
    assert len(said) == 1 and orphan in said[0]
    resumed = one_pending_job(tmp_path)
    assert resumed != orphan
    release(resumed)
    entry = xdg.wait_state(entry_id, ("done",), 240)
    assert_complete(Path(entry["db_path"]), 3)
    assert jobs(campaign_dir(tmp_path)) == {}


@pytest.mark.slow
def test_cancel_or_a_killed_child_leaves_no_pending_job(xdg: Env, tmp_path: Path) -> None:
    """``benchrun cancel`` while the job pends: the child's executor cancels it as it
    closes. The child SIGKILLed by someone (the daemon lives): the daemon cancels it."""
    path = experiment(tmp_path, rounds=2, sleep=0.0, held=True)
    xdg.start_daemon()
    first = int(xdg.cli("submit", str(path)).stdout)
    pending = one_pending_job(tmp_path)
    assert xdg.cli("cancel", str(first)).returncode == 0
    xdg.wait_state(first, ("cancelled",), 60)
    assert final_state(pending) == "CANCELLED"
    assert jobs(campaign_dir(tmp_path)) == {}
    assert not [m for k, m in xdg.queue_log(first) if k == "slurm-cancel"]  # it closed

    second = int(xdg.cli("submit", str(path)).stdout)
    orphan = one_pending_job(tmp_path)
    os.kill(xdg.entry(second)["pid"], signal.SIGKILL)
    entry = xdg.wait_state(second, ("interrupted",), 60)
    assert "SIGKILL" in entry["message"]
    assert final_state(orphan) == "CANCELLED"
    said = [m for k, m in xdg.queue_log(second) if k == "slurm-cancel"]
    assert len(said) == 1 and orphan in said[0]
    assert jobs(campaign_dir(tmp_path)) == {}


@pytest.mark.slow
def test_a_job_pending_too_long_stops_the_campaign_and_resume_continues_it(
    xdg: Env, tmp_path: Path
) -> None:
    """Past ``pending_limit`` the job is cancelled and the child stops with Slurm's state
    and reason: the entry is ``failed`` with that line (its campaign is not ended), and
    ``benchrun resume`` continues it once its job can run."""
    path = experiment(tmp_path, rounds=3, sleep=0.0, pending_limit="20s", held=True)
    xdg.start_daemon()
    entry_id = int(xdg.cli("submit", str(path)).stdout)
    entry = xdg.wait_state(entry_id, ("failed",), 120)
    message = entry["message"]
    assert re.search(r"slurm: job \d+ is still PENDING \(JobHeldUser\) after 20 s", message)
    assert f"`benchrun resume {entry_id}` continues it" in message
    assert jobs(campaign_dir(tmp_path)) == {}
    campaign_id = entry["campaign_id"]
    assert campaign_id is not None
    assert xdg.cli("resume", str(entry_id)).returncode == 0

    def ended() -> bool:
        now = xdg.entry(entry_id)
        return now["launches"] == 2 and now["state"] in ("done", "failed")

    wait_for(lambda: bool(jobs(campaign_dir(tmp_path))) or ended(), 180, "a job", 0.1)
    for job_id in jobs(campaign_dir(tmp_path)):
        subprocess.run(["scontrol", "release", job_id], capture_output=True, timeout=30)
    wait_for(ended, 180, "the resumed campaign to end", 0.2)
    entry = xdg.entry(entry_id)
    launched = [m for k, m in xdg.queue_log(entry_id) if k == "launch"]
    assert len(launched) == 2 and "--resume" in launched[1] and "--new" in launched[0]
    assert entry["campaign_id"] == campaign_id  # the same campaign, continued
    if entry["state"] == "done":
        assert_complete(Path(entry["db_path"]), 3)
    else:  # the one node was busy with other jobs past pending_limit again
        assert "after 20 s (executor pending_limit)" in entry["message"], entry["message"]
    assert jobs(campaign_dir(tmp_path)) == {}


@pytest.mark.slow
def test_resume_after_the_submitting_benchrun_was_killed(tmp_path: Path) -> None:
    """``benchrun run`` SIGKILLed mid-campaign: the job ends by itself (its agent sees the
    connection close), then ``--resume`` keeps the finished rounds in a new job."""
    rounds = 6
    path = experiment(tmp_path, rounds=rounds, sleep=0.4)
    db = campaign_dir(tmp_path) / "benchrun.db"
    run = subprocess.Popen(
        ["benchrun", "run", str(path), "-q"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        wait_for(lambda: count_rounds(db) >= 2, 180, "two rounds stored", 0.1)
        (first_job,) = jobs(campaign_dir(tmp_path))
    finally:
        run.kill()
        run.wait(10)
    kept = {i for _, i, _, _ in rounds_of(db)}
    wait_for(lambda: first_job not in jobs(campaign_dir(tmp_path)), 30, "the job to end", 0.5)
    assert final_state(first_job) in ("COMPLETED", "forgotten by Slurm")
    done = subprocess.run(
        ["benchrun", "run", str(path), "--resume", "-q"], capture_output=True, text=True,
        timeout=240,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert_complete(db, rounds)
    assert kept <= {i for _, i, _, _ in rounds_of(db)}
    _, job_ids = nodes_and_jobs(db)
    assert first_job in job_ids and len(job_ids) == 2
    assert jobs(campaign_dir(tmp_path)) == {}


@pytest.mark.slow
def test_resume_cancels_the_pending_job_a_killed_run_left(tmp_path: Path) -> None:
    path = experiment(tmp_path, rounds=2, sleep=0.0, held=True)
    killed_run(path)
    orphan = one_pending_job(tmp_path)
    resumed = subprocess.Popen(
        ["benchrun", "run", str(path), "--resume"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: final_state(orphan) == "CANCELLED", 60, "the orphan cancelled", 0.2)
        release(one_pending_job(tmp_path))
        _, err = resumed.communicate(timeout=240)
    finally:
        if resumed.poll() is None:
            resumed.terminate()  # its executor cancels its job
            resumed.wait(30)
    assert resumed.returncode == 0, err
    assert f"cancelled job {orphan}, left by an earlier run of this campaign" in err
    assert_complete(campaign_dir(tmp_path) / "benchrun.db", 2)
    assert jobs(campaign_dir(tmp_path)) == {}


@pytest.mark.slow
def test_an_orphan_job_that_starts_ends_by_itself(tmp_path: Path) -> None:
    """No one resumes the campaign of a killed ``benchrun run``: its pending job starts
    later, its agent finds nobody listening and gives up after its connect timeout
    (``CONNECT_TIMEOUT``, 60 s), and the job ends."""
    path = experiment(tmp_path, rounds=2, sleep=0.0, held=True)
    killed_run(path)
    orphan = one_pending_job(tmp_path)
    release(orphan)
    wait_for(lambda: final_state(orphan) != "PENDING", 300, "the orphan to start", 0.2)
    started = time.monotonic()
    wait_for(lambda: orphan not in jobs(campaign_dir(tmp_path)), CONNECT_TIMEOUT + 30, "its end", 1)
    assert time.monotonic() - started < CONNECT_TIMEOUT + 30
    assert final_state(orphan) in ("FAILED", "forgotten by Slurm")
    said = Path(AGENT_LOG.replace("%j", orphan)).read_text()
    assert "cannot reach" in said and "Connection refused" in said


def one_pending_job(tmp_path: Path) -> str:
    """Wait for the campaign's one job and check that it pends."""
    wait_for(lambda: bool(jobs(campaign_dir(tmp_path))), 60, "the job queued", 0.2)
    ((job_id, state),) = jobs(campaign_dir(tmp_path)).items()
    assert state == "PENDING"
    return job_id


def release(job_id: str) -> None:
    done = subprocess.run(["scontrol", "release", job_id], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def killed_run(path: Path) -> None:
    """``benchrun run PATH``, SIGKILLed once its (held) job is queued."""
    run = subprocess.Popen(
        ["benchrun", "run", str(path), "-q"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        directory = campaign_dir(path.parent, path.stem)
        wait_for(lambda: bool(jobs(directory)), 60, "the job queued", 0.2)
    finally:
        run.kill()
        run.wait(10)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[-1][:1] != "Z"
    except OSError:
        return False
