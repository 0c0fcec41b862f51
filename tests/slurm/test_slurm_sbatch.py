"""The pure sbatch builder (runner/execute/slurm_sbatch.py) and the parsers of Slurm's
answers (runner/execute/slurm_commands.py), without Slurm (issue 30).

The expected scripts and command lines are written out by hand from sbatch's and srun's
documented options (``--job-name``, ``--output`` with ``%j``, ``--comment``,
``--partition``, ``--constraint``, ``--account``, ``--nodes``, ``--nodelist``, ``--time``
as ``days-hours:minutes:seconds``, ``--exclusive``, ``--parsable``; srun's ``--nodes``,
``--ntasks``, ``--ntasks-per-node``), and the script is run by ``/bin/sh``.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from benchrun.runner.config.experiment import SlurmSpec
from benchrun.runner.execute.slurm import SlurmExecutor, SlurmOptions
from benchrun.runner.execute.slurm_commands import JobState, parse_sacct, parse_scontrol_job
from benchrun.runner.execute.slurm_sbatch import (
    AgentJob,
    batch_script,
    sbatch_argv,
    sbatch_options,
)

LOG = "--output=/tmp/benchrun-agent-%j.out"


def test_the_script_of_a_one_node_job() -> None:
    script = batch_script(AgentJob("/usr/bin/python3", "login1", 7000), "0f3a")
    assert script == (
        "#!/bin/sh\n"
        "# benchrun's agent (docs/slurm.md): runs the rounds the submit host sends\n"
        "BENCHRUN_AGENT_TOKEN=0f3a\n"
        "export BENCHRUN_AGENT_TOKEN\n"
        "exec /usr/bin/python3 -m benchrun.runner.campaign.node_agent --connect login1:7000\n"
    )


def test_the_script_of_a_three_node_job_starts_one_agent_per_node_through_srun() -> None:
    script = batch_script(AgentJob("/opt/py/bin/python", "10.0.0.5", 4242, nodes=3), "ab")
    assert script.splitlines()[-1] == (
        "exec srun --nodes=3 --ntasks=3 --ntasks-per-node=1 /opt/py/bin/python "
        "-m benchrun.runner.campaign.node_agent --connect 10.0.0.5:4242"
    )


def test_an_ipv6_address_is_bracketed_and_a_path_with_a_space_quoted() -> None:
    script = batch_script(AgentJob("/opt/my py/python", "fe80::1", 9), "ab")
    assert script.splitlines()[-1] == (
        "exec '/opt/my py/python' -m benchrun.runner.campaign.node_agent --connect '[fe80::1]:9'"
    )


def test_the_script_runs_in_sh_with_the_token_in_the_environment_not_the_command_line(
    tmp_path: Path,
) -> None:
    """/bin/sh runs the script as sbatch would; a stand-in python prints what it got."""
    python = tmp_path / "my python"
    python.write_text('#!/bin/sh\necho "argv: $*"\necho "token: $BENCHRUN_AGENT_TOKEN"\n')
    python.chmod(0o755)
    script = batch_script(AgentJob(str(python), "login1", 7000), "c0ffee")
    env = {k: v for k, v in os.environ.items() if k != "BENCHRUN_AGENT_TOKEN"}
    done = subprocess.run(
        ["/bin/sh"], input=script, capture_output=True, text=True, timeout=30, env=env
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "argv: -m benchrun.runner.campaign.node_agent --connect login1:7000",
        "token: c0ffee",
    ]


def test_the_options_of_a_job_with_every_key() -> None:
    spec = SlurmSpec(
        partition="alpha",
        constraint="fast",
        account="p1",
        time=5400.0,  # 90 minutes
        sbatch_args=("--qos=short", "--mem=4G"),
    )
    assert sbatch_options(spec, "benchrun-x", "benchrun-campaign:/c", 1) == [
        "--job-name=benchrun-x",
        LOG,
        "--comment=benchrun-campaign:/c",
        "--partition=alpha",
        "--constraint=fast",
        "--account=p1",
        "--nodes=1",
        "--time=0-01:30:00",
        "--exclusive",
        "--qos=short",
        "--mem=4G",
    ]


def test_the_options_of_a_job_with_no_keys() -> None:
    spec = SlurmSpec(exclusive=False)
    assert sbatch_options(spec, "benchrun", None, 1) == ["--job-name=benchrun", LOG, "--nodes=1"]


def test_named_nodes_go_to_nodelist_with_their_expanded_count() -> None:
    spec = SlurmSpec(nodes=("n[1-2]", "n4"), exclusive=False)
    assert sbatch_options(spec, "j", None, 3) == [
        "--job-name=j",
        LOG,
        "--nodelist=n[1-2],n4",
        "--nodes=3",
    ]


def test_a_node_count_goes_to_nodes() -> None:
    assert sbatch_options(SlurmSpec(nodes=4, exclusive=False), "j", None, 4)[-1] == "--nodes=4"


def test_the_time_limit_is_rounded_up_to_whole_minutes() -> None:
    # 61 s -> 2 minutes; 1 day and 60 s -> 1-00:01:00; 2 h exactly -> 0-02:00:00
    for seconds, text in ((61.0, "0-00:02:00"), (86460.0, "1-00:01:00"), (7200.0, "0-02:00:00")):
        options = sbatch_options(SlurmSpec(time=seconds, exclusive=False), "j", None, 1)
        assert options[-1] == f"--time={text}"


def test_sbatch_is_asked_for_a_parsable_answer() -> None:
    assert sbatch_argv(["--nodes=1", "--exclusive"]) == [
        "sbatch",
        "--parsable",
        "--nodes=1",
        "--exclusive",
    ]


def test_a_sacct_line_is_read() -> None:
    # sacct -n -P -X -o State,ExitCode,Reason,NodeList
    assert parse_sacct("5", "CANCELLED by 0|0:15|None|n[1-2]\n") == JobState(
        "5", "CANCELLED", None, "0:15", "n[1-2]", "n[1-2]"
    )
    assert parse_sacct("6", "PENDING|0:0|Resources|None assigned\n") == JobState(
        "6", "PENDING", "Resources", "0:0", None, None
    )


def test_a_scontrol_show_job_line_is_read() -> None:
    line = (
        "JobId=7 JobName=benchrun UserId=root(0) JobState=TIMEOUT Reason=TimeLimit "
        "Dependency=(null) ExitCode=0:15 NodeList=n[1-2] BatchHost=n1\n"
    )
    assert parse_scontrol_job("7", line) == JobState(
        "7", "TIMEOUT", "TimeLimit", "0:15", "n1", "n[1-2]"
    )
    pending = "JobId=8 JobState=PENDING Reason=Priority ExitCode=0:0 NodeList=(null)\n"
    assert parse_scontrol_job("8", pending) == JobState("8", "PENDING", "Priority", "0:0")


def test_the_executor_takes_its_options_as_one_record_or_by_keyword() -> None:
    """SlurmOptions given whole, with a field replaced by keyword (as the old keywords)."""
    options = SlurmOptions(job_name="jn", comment="mark", env_keys=frozenset({"A"}))
    executor = SlurmExecutor(SlurmSpec(partition="p", exclusive=False), options, pin=(0, 1))
    try:
        assert executor.sbatch_options() == [
            "--job-name=jn",
            LOG,
            "--comment=mark",
            "--partition=p",
            "--nodes=1",
        ]
        assert (executor.pin, executor.env_keys) == ((0, 1), frozenset({"A"}))
        assert executor.options == SlurmOptions(
            job_name="jn", comment="mark", env_keys=frozenset({"A"}), pin=(0, 1)
        )
    finally:
        executor.close()
