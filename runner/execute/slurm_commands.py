"""The Slurm commands benchrun runs on the submit host, and what they answer.

:class:`SlurmCommands` runs ``sbatch``, ``scancel``, ``squeue``, ``sacct`` (falling back to
``scontrol show job`` where accounting is off), ``sinfo`` and ``scontrol show
partition|hostnames``; :class:`JobState` is what Slurm says about one job. The parsers of
``sacct`` and ``scontrol show job`` output are pure functions. Tests replace
:class:`SlurmCommands` with a local stand-in (tests/slurm/).
"""

from __future__ import annotations

import re
import shlex
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

from benchrun.runner.errors import UserError
from benchrun.runner.execute.slurm_jobs import jobs_with_comment, squeue_argv
from benchrun.runner.execute.slurm_sbatch import sbatch_argv

#: job states after which a job will not run again (sacct/scontrol words)
FINISHED_STATES = frozenset(
    {
        "BOOT_FAIL",
        "CANCELLED",
        "COMPLETED",
        "DEADLINE",
        "FAILED",
        "NODE_FAIL",
        "OUT_OF_MEMORY",
        "PREEMPTED",
        "REVOKED",
        "TIMEOUT",
    }
)
#: seconds a Slurm command may take before benchrun gives up on it
COMMAND_TIMEOUT = 60.0


@dataclass(frozen=True)
class JobState:
    """What Slurm says about one job: ``state`` (``RUNNING``, ``TIMEOUT``, ...),
    ``reason`` (why it is pending or ended; None for ``None``), ``exit_code`` as Slurm
    writes it (``exit:signal``, e.g. ``0:15``), the ``node`` it ran on (its batch host),
    and ``node_list``, all its nodes as Slurm writes them (``n[1-2]``)."""

    job_id: str
    state: str
    reason: str | None = None
    exit_code: str | None = None
    node: str | None = None
    node_list: str | None = None

    @property
    def finished(self) -> bool:
        """True when the job will not run (again)."""
        return self.state in FINISHED_STATES

    def describe(self) -> str:
        """``slurm job 12 TIMEOUT (exit 0:15)``: the reason given to a round it ended."""
        exit_text = f" (exit {self.exit_code})" if self.exit_code else ""
        return f"slurm job {self.job_id} {self.state}{exit_text}"


_KEY_VALUE = re.compile(r"(\w+)=(\S*)")


class SlurmCommands:
    """The Slurm commands benchrun runs: ``sbatch``, ``scancel``, ``sacct`` (falling
    back to ``scontrol show job`` where accounting is off) and ``scontrol show
    partition``. Each raises :class:`UserError` when the command is missing or hangs
    past ``timeout`` seconds. Tests replace this object with a local stand-in."""

    def __init__(self, timeout: float = COMMAND_TIMEOUT) -> None:
        self.timeout = timeout

    def _run(
        self, argv: Sequence[str], stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        try:
            return subprocess.run(
                list(argv),
                input=stdin,
                capture_output=True,
                text=True,
                timeout=self.timeout,
                stdin=None if stdin is not None else subprocess.DEVNULL,
            )
        except FileNotFoundError:
            raise UserError(
                f"slurm: {argv[0]} not found on PATH; executor slurm runs the Slurm commands "
                "(sbatch, scancel, sacct or scontrol) on this host"
            ) from None
        except subprocess.TimeoutExpired:
            raise UserError(
                f"slurm: {shlex.join(argv)} did not answer within {self.timeout:g} s; is "
                "slurmctld up (scontrol ping)?"
            ) from None

    def partitions(self) -> list[str]:
        """The partitions ``sinfo`` lists."""
        done = self._run(["sinfo", "-h", "-o", "%R"])
        return sorted({line.strip() for line in done.stdout.splitlines() if line.strip()})

    def check_partition(self, name: str) -> None:
        """:class:`UserError` naming the valid partitions when ``name`` is not one."""
        done = self._run(["scontrol", "show", "partition", "-o", name])
        if done.returncode == 0 and f"PartitionName={name} " in done.stdout + " ":
            return
        known = self.partitions()
        listing = ", ".join(known) if known else "none found by sinfo"
        raise UserError(
            f"slurm: partition {name!r} does not exist (executor partition:); partitions: "
            f"{listing}; nothing was submitted"
        )

    def submit(self, script: str, options: Sequence[str]) -> str:
        """``sbatch --parsable OPTIONS`` with ``script`` on stdin; the job id."""
        argv = sbatch_argv(options)
        done = self._run(argv, stdin=script)
        if done.returncode != 0:
            said = " ".join(done.stderr.split()) or f"exit status {done.returncode}"
            raise UserError(f"slurm: sbatch refused the job: {said} ({shlex.join(argv)})")
        job_id = done.stdout.strip().split(";")[0]
        if not job_id.isdigit():
            raise UserError(f"slurm: sbatch printed {done.stdout.strip()!r}, not a job id")
        return job_id

    def cancel(self, job_id: str) -> None:
        """``scancel JOB`` (a job that already ended is no error)."""
        self._run(["scancel", job_id])

    def jobs_with_comment(self, comment: str) -> list[str]:
        """This user's jobs not ended yet whose ``--comment`` is ``comment`` (squeue)."""
        done = self._run(squeue_argv())
        return jobs_with_comment(done.stdout, comment) if done.returncode == 0 else []

    def state(self, job_id: str) -> JobState | None:
        """The job's state from ``sacct``, else ``scontrol show job``; None if Slurm
        does not know the job (any more)."""
        done = self._run(
            ["sacct", "-n", "-P", "-X", "-j", job_id, "-o", "State,ExitCode,Reason,NodeList"]
        )
        if done.returncode == 0 and done.stdout.strip():
            return parse_sacct(job_id, done.stdout)
        done = self._run(["scontrol", "show", "job", "-o", job_id])
        if done.returncode != 0 or "JobState=" not in done.stdout:
            return None
        return parse_scontrol_job(job_id, done.stdout)

    def hostnames(self, node_list: str) -> list[str]:
        """The node names of a Slurm host list (``n[1-2]`` -> n1, n2), by ``scontrol show
        hostnames``; the list as given when that fails."""
        done = self._run(["scontrol", "show", "hostnames", node_list])
        names = done.stdout.split() if done.returncode == 0 else []
        return names or [node_list]


def parse_sacct(job_id: str, output: str) -> JobState:
    """The state in the first line of ``sacct -n -P -X -o State,ExitCode,Reason,NodeList``
    (``|``-separated; ``CANCELLED by 0`` is ``CANCELLED``; ``None assigned``: no node)."""
    state, exit_code, reason, nodes = (output.strip().splitlines()[0].split("|") + [""] * 4)[:4]
    node_list = None if nodes in ("", "None assigned") else nodes
    return JobState(
        job_id,
        state.split()[0] if state.split() else "UNKNOWN",
        None if reason in ("", "None") else reason,
        exit_code or None,
        node_list,
        node_list,
    )


def parse_scontrol_job(job_id: str, output: str) -> JobState:
    """The state in ``scontrol show job -o`` output (``KEY=VALUE`` words; the node is
    ``BatchHost``, else ``NodeList``; ``(null)``: none)."""
    state, reason, exit_code, batch_host, node_list = "UNKNOWN", "", "", "", ""
    for key, value in _KEY_VALUE.findall(output):  # a key given twice: the last counts
        match key:
            case "JobState":
                state = value
            case "Reason":
                reason = value
            case "ExitCode":
                exit_code = value
            case "BatchHost":
                batch_host = value
            case "NodeList":
                node_list = value
    node = batch_host or node_list
    return JobState(
        job_id,
        state,
        None if reason in ("", "None") else reason,
        exit_code or None,
        None if node in ("", "(null)") else node,
        None if node_list in ("", "(null)") else node_list,
    )
