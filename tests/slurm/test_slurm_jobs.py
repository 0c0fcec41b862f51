"""Slurm's answers as benchrun reads them, with stand-in commands on ``PATH`` (no Slurm):
the job state from ``sacct`` or, where accounting is off, ``scontrol show job``; and the
campaign's leftover jobs found by ``squeue`` and cancelled (runner/execute/slurm_jobs.py,
runner/daemon/child.py). Each stand-in prints what the real command prints and records
its arguments, so a test sees which commands ran."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from benchrun.runner.config.experiment import SlurmSpec
from benchrun.runner.daemon.child import cancel_slurm_jobs
from benchrun.runner.execute.slurm import JobState, SlurmCommands, SlurmExecutor
from benchrun.runner.execute.slurm_jobs import (
    campaign_comment,
    cancel_leftover_jobs,
    jobs_with_comment,
)

#: what ``scontrol show job -o 12`` prints for a job killed at its time limit (one line)
SCONTROL_TIMEOUT = (
    "JobId=12 JobName=benchrun-x UserId=root(0) JobState=TIMEOUT Reason=TimeLimit "
    "Dependency=(null) ExitCode=0:15 RunTime=00:01:02 NodeList=n1 BatchHost=n1\n"
)


class StandIns:
    """A directory put first on ``PATH`` holding stand-ins for Slurm's commands."""

    def __init__(self, directory: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.dir = directory
        self.dir.mkdir()
        monkeypatch.setenv("PATH", f"{directory}{os.pathsep}{os.environ['PATH']}")

    def command(self, name: str, stdout: str = "", stderr: str = "", status: int = 0) -> None:
        """``name`` prints ``stdout``/``stderr``, exits ``status`` and appends its
        arguments to ``name.calls``."""
        (self.dir / f"{name}.out").write_text(stdout)
        (self.dir / f"{name}.err").write_text(stderr)
        script = self.dir / name
        script.write_text(
            "#!/bin/sh\n"
            f'echo "$*" >> "{self.dir}/{name}.calls"\n'
            f'cat "{self.dir}/{name}.out"\n'
            f'cat "{self.dir}/{name}.err" >&2\n'
            f"exit {status}\n"
        )
        script.chmod(script.stat().st_mode | stat.S_IXUSR)

    def calls(self, name: str) -> list[str]:
        path = self.dir / f"{name}.calls"
        return path.read_text().splitlines() if path.exists() else []


@pytest.fixture
def slurm_bin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> StandIns:
    return StandIns(tmp_path / "bin", monkeypatch)


# ------------------------------------------------------------------ sacct or scontrol


def test_sacct_is_asked_first_and_its_answer_used(slurm_bin: StandIns) -> None:
    # a finished job scontrol has forgotten (MinJobAge): only accounting knows it
    slurm_bin.command("sacct", "CANCELLED by 0|0:15|None|n3\n")
    slurm_bin.command(
        "scontrol", stderr="slurm_load_jobs error: Invalid job id specified\n", status=1
    )
    state = SlurmCommands().state("12")
    assert state == JobState("12", "CANCELLED", None, "0:15", "n3", "n3")
    assert state.finished and state.describe() == "slurm job 12 CANCELLED (exit 0:15)"
    (call,) = slurm_bin.calls("sacct")
    assert call.split() == "-n -P -X -j 12 -o State,ExitCode,Reason,NodeList".split()
    assert slurm_bin.calls("scontrol") == []  # sacct answered: scontrol is not asked


def test_sacct_of_a_pending_job_names_its_reason_and_no_node(slurm_bin: StandIns) -> None:
    slurm_bin.command("sacct", "PENDING|0:0|Resources|None assigned\n")
    slurm_bin.command("scontrol", SCONTROL_TIMEOUT)
    assert SlurmCommands().state("12") == JobState("12", "PENDING", "Resources", "0:0", None)
    assert slurm_bin.calls("scontrol") == []


def test_without_accounting_scontrol_answers(slurm_bin: StandIns) -> None:
    # what sacct says on the test cluster (AccountingStorageType=none)
    slurm_bin.command(
        "sacct",
        stderr="sacct: error: Slurm accounting storage is disabled\n",
        status=1,
    )
    slurm_bin.command("scontrol", SCONTROL_TIMEOUT)
    state = SlurmCommands().state("12")
    assert state == JobState("12", "TIMEOUT", "TimeLimit", "0:15", "n1", "n1")
    assert state.describe() == "slurm job 12 TIMEOUT (exit 0:15)"
    assert len(slurm_bin.calls("sacct")) == 1
    assert slurm_bin.calls("scontrol") == ["show job -o 12"]


def test_a_job_not_yet_in_accounting_is_read_from_scontrol(slurm_bin: StandIns) -> None:
    slurm_bin.command("sacct", "")  # sacct works but has no record of the job yet
    slurm_bin.command("scontrol", SCONTROL_TIMEOUT.replace("TIMEOUT", "RUNNING"))
    state = SlurmCommands().state("12")
    assert state is not None and state.state == "RUNNING" and not state.finished
    assert slurm_bin.calls("scontrol") == ["show job -o 12"]


def test_a_job_neither_knows_is_none(slurm_bin: StandIns) -> None:
    slurm_bin.command("sacct", stderr="sacct: error: disabled\n", status=1)
    slurm_bin.command(
        "scontrol", stderr="slurm_load_jobs error: Invalid job id specified\n", status=1
    )
    assert SlurmCommands().state("12") is None


# ------------------------------------------------------------------ leftover jobs


def test_jobs_are_matched_on_the_whole_comment(tmp_path: Path) -> None:
    mine = campaign_comment(tmp_path / "c")
    assert mine == f"benchrun-campaign:{(tmp_path / 'c').resolve()}"
    listing = f"7|{mine}\n8|{mine}x\n9|(null)\n10|{campaign_comment(tmp_path / 'd')}\n11|{mine}\n"
    assert jobs_with_comment(listing, mine) == ["7", "11"]


def test_leftover_jobs_are_listed_then_cancelled(slurm_bin: StandIns, tmp_path: Path) -> None:
    mine = campaign_comment(tmp_path / "c")
    slurm_bin.command("squeue", f"21|{mine}\n22|other\n23|{mine}\n")
    slurm_bin.command("scancel")
    assert cancel_leftover_jobs(tmp_path / "c") == ["21", "23"]
    (listed,) = slurm_bin.calls("squeue")
    assert listed.split() == ["-h", "-u", str(os.getuid()), "-o", "%i|%k"]
    assert slurm_bin.calls("scancel") == ["21 23"]


def test_leftover_jobs_of_the_executor_go_through_its_commands(
    slurm_bin: StandIns, tmp_path: Path
) -> None:
    mine = campaign_comment(tmp_path / "c")
    slurm_bin.command("squeue", f"5|{mine}\n6|x\n")
    assert SlurmCommands().jobs_with_comment(mine) == ["5"]
    slurm_bin.command("squeue", stderr="squeue: error: cannot reach slurmctld\n", status=1)
    assert SlurmCommands().jobs_with_comment(mine) == []


def test_no_slurm_answer_cancels_nothing(slurm_bin: StandIns, tmp_path: Path) -> None:
    slurm_bin.command("squeue", stderr="squeue: error: cannot reach slurmctld\n", status=1)
    slurm_bin.command("scancel")
    assert cancel_leftover_jobs(tmp_path / "c") == []
    assert slurm_bin.calls("scancel") == []


def test_the_daemon_asks_slurm_only_for_slurm_experiments(
    slurm_bin: StandIns, tmp_path: Path
) -> None:
    mine = campaign_comment(tmp_path / "c")
    slurm_bin.command("squeue", f"31|{mine}\n")
    slurm_bin.command("scancel")
    local = "name: x\nworkloads:\n  - {name: a, command: 'true'}\n"
    assert cancel_slurm_jobs(local, tmp_path / "c") == []
    assert slurm_bin.calls("squeue") == []
    remote = "name: x\nexecutor: {kind: slurm}\nworkloads:\n  - {name: a, command: 'true'}\n"
    assert cancel_slurm_jobs(remote, tmp_path / "c") == ["31"]
    assert slurm_bin.calls("scancel") == ["31"]


def test_no_squeue_on_path_cancels_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    assert cancel_slurm_jobs("executor: slurm\n", tmp_path / "c") == []
    assert cancel_leftover_jobs(tmp_path / "c") == []


def test_the_executor_marks_its_jobs_and_cancels_those_a_dead_run_left(
    slurm_bin: StandIns, tmp_path: Path
) -> None:
    mine = campaign_comment(tmp_path / "c")
    slurm_bin.command("squeue", f"41|{mine}\n42|{mine}/x\n")
    slurm_bin.command("scancel")
    said: list[str] = []
    spec = SlurmSpec(listen="127.0.0.1")
    executor = SlurmExecutor(spec, on_message=said.append, comment=mine)
    try:
        assert f"--comment={mine}" in executor.sbatch_options()
        executor._preflight()  # what the first launch does before it submits
    finally:
        executor.close()
    assert slurm_bin.calls("scancel") == ["41"]
    assert said == ["slurm: cancelled job 41, left by an earlier run of this campaign"]
    assert "--comment" not in " ".join(SlurmExecutor(spec).sbatch_options())


def test_a_fleets_node_types_never_cancel_each_others_jobs(
    slurm_bin: StandIns, tmp_path: Path
) -> None:
    """A fleet's executors share the campaign's comment: the second type's first launch
    sees the first type's job in squeue, and must take only a dead run's job for a
    leftover (a real fleet run cancelled its own alpha job 0.16 s after it started)."""
    mine = campaign_comment(tmp_path / "c")
    slurm_bin.command("sbatch", "51\n")
    slurm_bin.command("squeue", f"50|{mine}\n51|{mine}\n")
    slurm_bin.command("scancel")
    said: list[str] = []
    shared: set[str] = set()
    alpha = SlurmExecutor(
        SlurmSpec(listen="127.0.0.1"), on_message=said.append, comment=mine, own_jobs=shared
    )
    beta = SlurmExecutor(
        SlurmSpec(listen="127.0.0.1"), on_message=said.append, comment=mine, own_jobs=shared
    )
    try:
        alpha._listen()
        alpha._submit()  # alpha's job 51 is queued (the stand-in sbatch's answer)
        beta._preflight()  # then beta's first launch looks for leftovers
    finally:
        alpha.close()
        beta.close()
    assert slurm_bin.calls("scancel") == ["50"]  # the dead run's job only
    assert beta.own_jobs is alpha.own_jobs == {"51"}


def test_the_campaign_goes_on_when_squeue_does_not_answer(
    slurm_bin: StandIns, tmp_path: Path
) -> None:
    script = slurm_bin.dir / "squeue"
    script.write_text("#!/bin/sh\nexec sleep 30\n")
    script.chmod(0o755)
    slurm_bin.command("scancel")
    said: list[str] = []
    executor = SlurmExecutor(
        SlurmSpec(listen="127.0.0.1"),
        commands=SlurmCommands(timeout=0.3),
        on_message=said.append,
        comment=campaign_comment(tmp_path),
    )
    try:
        executor._preflight()
    finally:
        executor.close()
    assert len(said) == 1 and "did not answer within 0.3 s" in said[0]
    assert said[0].endswith("jobs left by an earlier run were not looked for")
    assert slurm_bin.calls("scancel") == []
