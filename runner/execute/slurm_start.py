"""Getting a Slurm job whose agents serve: submit it, wait for its agents, check them.

:class:`JobStarter` holds the jobs of one :class:`runner.execute.slurm.SlurmExecutor`:
before the first job it checks the partition, cancels what a dead run of the campaign
left and opens the listener; it submits a job (:mod:`runner.execute.slurm_sbatch`), waits
until every agent has connected and passed its setup (:mod:`runner.execute.slurm_protocol`)
or the job ended or stayed pending past ``pending_limit`` (:mod:`runner.execute.slurm_watch`),
and submits a new one when the current job ended between rounds, at most
``max_resubmits`` times. docs/slurm.md, "How a campaign runs" and "Faults and what each
costs".
"""

from __future__ import annotations

import secrets
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from benchrun.runner.config.experiment import PinSpec, SlurmSpec
from benchrun.runner.errors import UserError
from benchrun.runner.execute.agent_messages import NodeCallback
from benchrun.runner.execute.slurm_commands import JobState
from benchrun.runner.execute.slurm_protocol import (
    Agent,
    Job,
    Listener,
    SharedCheck,
    Wake,
    hung_up,
    poll_fds,
    say_bye,
    set_up,
)
from benchrun.runner.execute.slurm_sbatch import AgentJob, batch_script, sbatch_options
from benchrun.runner.execute.slurm_watch import PENDING_POLL, RUNNING_POLL, JobWatcher, log_hint

#: after ``interrupt``, how long the agent has to answer before the job is cancelled, s
INTERRUPT_GRACE = 10.0


@dataclass(frozen=True)
class SlurmOptions:
    """How a :class:`runner.execute.slurm.SlurmExecutor` runs its jobs, beyond the
    experiment's ``executor:`` (:class:`SlurmSpec`).

    ``job_name``: the jobs' ``--job-name``. ``pin``: the experiment's ``pin``, which
    the agent plans inside its job's CPUs. ``checks``: what the workloads need on the
    node, checked before the first round. ``env_keys``: the variables the experiment
    sets (``settings.env`` and the workloads' ``env``): only these travel with a round,
    whose environment on the node is the job's with these set; None sends each round's
    whole environment. ``comment``: the jobs' ``--comment``, marking them as this
    campaign's (:func:`runner.execute.slurm_jobs.campaign_comment`); the first launch
    cancels the jobs still carrying it, which a run that died left behind; None: no
    mark. ``interrupt_grace``: seconds the agent has to answer an interrupt before the
    job is cancelled. ``running_poll``: seconds between two questions to Slurm about a
    job while a round runs.
    """

    job_name: str = "benchrun"
    pin: PinSpec = "auto"
    checks: tuple[SharedCheck, ...] = ()
    env_keys: frozenset[str] | None = None
    comment: str | None = None
    interrupt_grace: float = INTERRUPT_GRACE
    running_poll: float = RUNNING_POLL

    def __post_init__(self) -> None:
        object.__setattr__(self, "checks", tuple(self.checks))  # a list given is kept as one


@dataclass
class SlurmTimings:
    """What a campaign's jobs cost, in seconds (for docs/slurm.md's figures):
    ``to_agent``: submission to the agent's hello, per job; ``to_first_round``:
    submission to the first round's outcome of the first job."""

    to_agent: list[float] = field(default_factory=list)
    to_first_round: float | None = None


class Interrupted(Exception):
    """Ctrl-C while a job was being waited for."""


class JobStarter:
    """The jobs of one executor and the one whose agents take the next round.

    Parameters
    ----------
    spec : SlurmSpec
        The experiment's ``executor:``.
    options : SlurmOptions
        The jobs' name, mark, pin and checks.
    watcher : JobWatcher
        Asks Slurm about the jobs and cancels them.
    wake : Wake
        Ends the wait for a job's agents on Ctrl-C.
    on_message : callable
        Told each event worth a line (job submitted, started, ended between rounds).
    on_node : callable, optional
        ``on_node(node, record)``, once per node, with the metadata record of the first
        job's hello on it.
    own_jobs : set of str
        The job ids of this run of the campaign (shared by a fleet's executors); each
        job submitted is added.
    """

    def __init__(
        self,
        spec: SlurmSpec,
        options: SlurmOptions,
        watcher: JobWatcher,
        wake: Wake,
        on_message: Callable[[str], None],
        on_node: NodeCallback | None,
        own_jobs: set[str],
    ) -> None:
        self.spec = spec
        self.options = options
        self.watcher = watcher
        self.wake = wake
        self.on_message = on_message
        self.on_node = on_node
        self.own_jobs = own_jobs
        self.python = spec.python or sys.executable
        self.timings = SlurmTimings()
        #: every job submitted, in order
        self.jobs: list[Job] = []
        #: the job whose agents take the next round (None between jobs)
        self.current: Job | None = None
        #: each node's metadata record, from the hello of the first job on it
        self.node_metadata: dict[str, dict[str, object]] = {}
        self.listener: Listener | None = None
        self._preflight_done = False
        self._node_names: list[str] | None = None

    # ---------------------------------------------------------------- the nodes

    @property
    def node_count(self) -> int:
        """How many nodes each job has (``nodes:``, a count or the names)."""
        nodes = self.spec.nodes
        return nodes if isinstance(nodes, int) else len(self.node_names)

    @property
    def node_names(self) -> list[str]:
        """The nodes ``nodes:`` names, in its order, host list expressions (``n[1-4]``)
        expanded by ``scontrol show hostnames``; empty for a count."""
        nodes = self.spec.nodes
        if isinstance(nodes, int):
            return []
        if self._node_names is None:
            self._node_names = [
                name
                for entry in nodes
                for name in (self.watcher.hostnames(entry) if "[" in entry else [entry])
            ]
        return self._node_names

    # ---------------------------------------------------------------- what is submitted

    def batch_script(self, token: str) -> str:
        """The job's script (:func:`runner.execute.slurm_sbatch.batch_script`) for the
        listener's address."""
        assert self.listener is not None
        host, port = self.listener.address
        return batch_script(AgentJob(self.python, host, port, self.node_count), token)

    def sbatch_options(self) -> list[str]:
        """The sbatch options of every job: the executor's keys, then ``sbatch_args``."""
        return sbatch_options(
            self.spec, self.options.job_name, self.options.comment, self.node_count
        )

    # ---------------------------------------------------------------- job lifecycle

    def ready_job(self) -> Job:
        """The job whose agents take the next round: the current one while its
        connections live, else a new one (submitted, started, checked)."""
        job = self.current
        if job is not None and job.agents and not self.ended_idle(job):
            return job
        if job is not None:
            self.forget(job)
        if not self._preflight_done:
            self.preflight()
        resubmits = len(self.jobs) - 1
        if self.jobs and resubmits >= self.spec.max_resubmits:
            last = self.jobs[-1].ended
            why = last.describe() if last is not None else f"slurm job {self.jobs[-1].job_id} ended"
            raise UserError(
                f"slurm: {why}, and {resubmits} job(s) were already submitted again "
                f"(executor max_resubmits: {self.spec.max_resubmits}); every finished round "
                "is stored: continue with --resume once the cluster is well"
            )
        job = self.submit()
        self.await_agents(job)
        return job

    def preflight(self) -> None:
        """Before anything is queued: the partition exists, the listener."""
        if self.node_count < 1:
            raise UserError(f"slurm: nodes: {self.spec.nodes}: a job needs at least one node")
        for name in (self.spec.partition or "").split(","):
            if name:
                self.watcher.commands.check_partition(name)
        if self.options.comment is not None:
            self.watcher.cancel_leftovers(self.options.comment, self.own_jobs)
        self.listen()
        self._preflight_done = True

    def listen(self) -> None:
        """Open the listener the agents connect to (``listen:``)."""
        self.listener = Listener(self.spec.listen)

    def submit(self) -> Job:
        """Submit a job with a fresh token; it becomes :attr:`current`."""
        token = secrets.token_hex(16)
        job_id = self.watcher.commands.submit(self.batch_script(token), self.sbatch_options())
        self.own_jobs.add(job_id)
        job = Job(job_id, token, time.monotonic(), expected=self.node_count)
        self.jobs.append(job)
        self.current = job
        again = (
            f" (again, {len(self.jobs) - 1} of {self.spec.max_resubmits})"
            if len(self.jobs) > 1
            else ""
        )
        self.on_message(f"slurm: submitted job {job_id}{again}; waiting for it to start")
        return job

    def await_agents(self, job: Job) -> None:
        """Wait until every agent of ``job`` has connected and passed the checks; raises
        :class:`UserError` (after cancelling the job) when one cannot, or
        :class:`Interrupted` on Ctrl-C."""
        assert self.listener is not None
        deadline = job.submitted + self.spec.pending_limit
        next_poll = time.monotonic() + PENDING_POLL
        state: JobState | None = None
        while len(job.agents) < job.expected:
            now = time.monotonic()
            if now >= deadline:
                message = self._pending_message(job, state)
                self.watcher.cancel(job.job_id)
                job.ended = JobState(job.job_id, "CANCELLED", node=job.node)
                self.forget(job)
                raise UserError(message)
            wait = min(deadline, next_poll) - now
            ready = poll_fds([self.listener.fileno(), self.wake.fd], wait)
            if self.wake.fd in ready:
                self.wake.drain()
                if self.wake.pending:
                    self.wake.pending = False
                    raise Interrupted
            if self.listener.fileno() in ready:
                self.accept(job)
                continue
            if time.monotonic() >= next_poll:
                next_poll = time.monotonic() + PENDING_POLL
                state = self.watcher.state(job.job_id)
                if state is not None and state.finished:
                    job.ended = state
                    self.forget(job)
                    raise UserError(
                        f"slurm: {state.describe()} before {_who(job)}"
                        f"{log_hint(job.job_id, state.node)}"
                    )
        self._started(job)

    def _started(self, job: Job) -> None:
        """Put ``job``'s agents in ``nodes:`` order, note its start and say it."""
        names = self.node_names
        job.agents.sort(
            key=lambda a: (names.index(a.node) if a.node in names else len(names), a.node)
        )
        connected = job.connected
        assert connected is not None
        self.timings.to_agent.append(connected - job.submitted)
        where = (
            f"nodes {', '.join(a.node for a in job.agents)}"
            if job.expected > 1
            else f"node {job.node}"
        )
        self.on_message(
            f"slurm: job {job.job_id} runs on {where} "
            f"({connected - job.submitted:.1f} s after submission)"
        )

    def _pending_message(self, job: Job, state: JobState | None) -> str:
        address = self.listener.address if self.listener is not None else None
        return self.watcher.pending_message(
            job.job_id,
            state,
            [a.node for a in job.agents],
            self.spec.pending_limit,
            f"{address[0]}:{address[1]}" if address is not None else "?:?",
        )

    def accept(self, job: Job) -> bool:
        """Take one connection; True when it is one of ``job``'s agents and it passed the
        checks (a stranger or a stale agent is dropped)."""
        assert self.listener is not None
        accepted = self.listener.accept(job.token, self.on_message)
        if accepted is None:
            return False
        agent, hello = accepted
        job.agents.append(agent)
        try:
            set_up(job.job_id, agent, hello, self.options.pin, self.options.checks)
        except UserError:
            self.abandon(job)
            raise
        self._keep_metadata(agent.node, hello.metadata)
        return True

    def _keep_metadata(self, node: str, record: dict[str, object] | None) -> None:
        """Keep ``node``'s record (the first job's on it) and tell :attr:`on_node`."""
        if node in self.node_metadata or record is None:
            return
        self.node_metadata[node] = record
        if self.on_node is not None:
            self.on_node(node, record)

    def ended_idle(self, job: Job) -> bool:
        """True when the job ended between rounds (an agent said so or hung up); a job
        that Slurm still runs without that agent is cancelled."""
        gone: Agent | None = next((a for a in job.agents if hung_up(a)), None)
        if gone is None:
            return False
        state = self.watcher.final_state(job.job_id)
        if state is None or not state.finished:
            self.watcher.cancel(job.job_id)  # its other agents cannot serve alone
            state = JobState(job.job_id, "CANCELLED", node=job.node)
            what = f"the agent of job {job.job_id} on node {gone.node} ended; the job was cancelled"
        else:
            what = state.describe()
        job.ended = state
        self.on_message(f"slurm: {what} between rounds; submitting a new job")
        return True

    def forget(self, job: Job) -> None:
        """Close ``job``'s connections; it is no longer :attr:`current`."""
        job.close()
        if self.current is job:
            self.current = None

    def abandon(self, job: Job) -> None:
        """Cancel ``job`` and forget it (its agents cannot serve)."""
        say_bye(job.agents)
        self.watcher.cancel(job.job_id)
        job.ended = JobState(job.job_id, "CANCELLED", node=job.node)
        self.forget(job)

    def close_listener(self) -> None:
        if self.listener is not None:
            self.listener.close()
            self.listener = None


def _who(job: Job) -> str:
    """Whose connection a job that ended before it served was waited for."""
    if job.expected == 1:
        return "benchrun's agent connected"
    return f"all {job.expected} agents connected (from: {job.node or 'none'})"
