"""Watching a campaign's Slurm jobs: their states, their ends, their cancellation.

:class:`JobWatcher` asks Slurm (through :class:`SlurmCommands`) what became of a job,
waits for Slurm to record a job's end, cancels jobs (remembering which ones benchrun
cancelled itself, so that a round they ended counts as interrupted, not failed), cancels
the jobs a dead run of the campaign left (their ``--comment``), and words why a job did
not start. A Slurm command that fails is told to ``on_message``, never raised, except
where nothing can go on without it. docs/slurm.md, "Faults and what each costs".
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

from benchrun.runner.errors import UserError
from benchrun.runner.execute.slurm_commands import JobState, SlurmCommands
from benchrun.runner.execute.slurm_sbatch import AGENT_LOG

#: how often the job's state is asked while waiting for it to start, seconds
PENDING_POLL = 1.0
#: how often the job's state is asked while a round runs (a node that dies without
#: closing the connection is noticed this late at most), seconds
RUNNING_POLL = 15.0
#: after the connection ended, how long to wait for Slurm to record the job's end, s
SETTLE_TIME = 15.0
#: after its agents said goodbye, how long the job has to leave RUNNING before it is
#: cancelled (so that it ends COMPLETED rather than CANCELLED), s
GOODBYE_TIME = 3.0


class JobWatcher:
    """The states of one executor's jobs, as Slurm tells them.

    Parameters
    ----------
    commands : SlurmCommands
        The Slurm commands (tests pass a stand-in).
    on_message : callable
        Told each failed Slurm command and each job it cancels for a dead run.
    settle_time : float
        Seconds :meth:`final_state` waits for Slurm to record a job's end.
    """

    def __init__(
        self,
        commands: SlurmCommands,
        on_message: Callable[[str], None],
        settle_time: float = SETTLE_TIME,
    ) -> None:
        self.commands = commands
        self.on_message = on_message
        self.settle_time = settle_time
        #: the job ids benchrun cancelled itself
        self.cancelled: set[str] = set()

    def cancel(self, job_id: str) -> None:
        """``scancel`` the job (remembered in :attr:`cancelled`); when that fails, say so
        with the command to run by hand."""
        self.cancelled.add(job_id)
        try:
            self.commands.cancel(job_id)
        except UserError as exc:
            self.on_message(f"{exc}; cancel job {job_id} by hand (scancel {job_id})")

    def state(self, job_id: str) -> JobState | None:
        """The job's state now; None when Slurm does not know it or did not answer."""
        try:
            return self.commands.state(job_id)
        except UserError as exc:
            self.on_message(str(exc))
            return None

    def final_state(self, job_id: str) -> JobState | None:
        """The job's state once Slurm has recorded its end (waits up to
        :attr:`settle_time` s, asking every 0.2 s)."""
        deadline = time.monotonic() + self.settle_time
        state = self.state(job_id)
        while (state is None or not state.finished) and time.monotonic() < deadline:
            time.sleep(0.2)
            state = self.state(job_id)
        return state

    def end_after_goodbye(self, job_id: str) -> None:
        """After the job's agents were told goodbye: give Slurm up to
        :data:`GOODBYE_TIME` s to see them exit, so that the job ends COMPLETED, then
        cancel it if it still runs."""
        deadline = time.monotonic() + GOODBYE_TIME
        state = self.state(job_id)
        while (
            state is not None
            and state.state in ("RUNNING", "CONFIGURING")
            and time.monotonic() < deadline
        ):
            time.sleep(0.1)
            state = self.state(job_id)
        if state is not None and not state.finished and state.state != "COMPLETING":
            self.cancel(job_id)

    def cancel_leftovers(self, comment: str, own_jobs: set[str]) -> None:
        """Cancel the jobs an earlier run of this campaign left queued or running (they
        carry ``comment``; that run died without closing them; the campaign lock says no
        one else serves them), except those in ``own_jobs`` (this run's). Best effort:
        when squeue cannot tell, the campaign goes on and says so."""
        try:
            leftovers = self.commands.jobs_with_comment(comment)
        except UserError as exc:
            self.on_message(f"{exc}; jobs left by an earlier run were not looked for")
            return
        for job_id in leftovers:
            if job_id in own_jobs:  # another executor of this run submitted it
                continue
            self.cancel(job_id)
            self.on_message(
                f"slurm: cancelled job {job_id}, left by an earlier run of this campaign"
            )

    def hostnames(self, node_list: str | None) -> list[str]:
        """The node names of a Slurm host list; ``(unknown)`` for none, the list as
        given when Slurm cannot expand it."""
        if not node_list:
            return ["(unknown)"]
        try:
            return self.commands.hostnames(node_list)
        except UserError:
            return [node_list]

    def pending_message(
        self,
        job_id: str,
        state: JobState | None,
        connected: Sequence[str],
        limit: float,
        address: str,
    ) -> str:
        """Why job ``job_id`` has not served after ``limit`` s (``pending_limit``): still
        pending (Slurm's reason), or running with the agents of ``connected`` nodes only
        (those that did not connect to ``address`` named)."""
        if state is None:
            what = "did not start"
        elif state.state == "PENDING":
            what = f"is still PENDING ({state.reason or 'no reason given'})"
        elif connected:
            names = self.hostnames(state.node_list or state.node)
            missing = [n for n in names if n not in connected] or ["(unknown)"]
            what = (
                f"is {state.state} on nodes {', '.join(names)} but the agent on node "
                f"{', '.join(missing)} did not connect to {address} (connected: "
                f"{', '.join(connected)}; can every node reach this host? executor listen:)"
            )
        else:
            what = (
                f"is {state.state} on node {state.node} but its agent did not connect to "
                f"{address} (can the nodes reach this host? executor listen:)"
            )
        hint = log_hint(job_id, None) if state and state.state == "RUNNING" else ""
        return (
            f"slurm: job {job_id} {what} after {limit:g} s (executor pending_limit); "
            f"it was cancelled; nothing was measured by it{hint}"
        )


def log_hint(job_id: str, node: str | None) -> str:
    """Where the agent job's output is, with its last lines when this host can read it."""
    path = Path(AGENT_LOG.replace("%j", job_id))
    where = f" on node {node}" if node else ""
    try:
        lines = path.read_text(errors="replace").strip().splitlines()[-3:]
    except OSError:
        return f"; its output is in {path}{where}"
    said = " | ".join(line.strip() for line in lines if line.strip())
    return f"; its output ({path}{where}): {said}" if said else f"; its output {path} is empty"
