"""The Slurm executor: rounds measured on a compute node, results stored at home.

:class:`SlurmExecutor` follows the :class:`runner.execute.executor.Executor` protocol. At
its first launch it checks the partition, opens a TCP listener on the submit host and
submits ONE batch job running benchrun's agent (:mod:`runner.execute.agent`) with a fresh
random token, one agent per node of the job; once every agent has connected and found on
its node what the experiment needs, every :meth:`SlurmExecutor.launch` sends the round to
an agent (all rounds of pass p to the job's node p mod N), which runs it with the local
executor's code and sends back what it did. The store stays on the submit host. When the
job ends under a round (scancel, time limit, node failure) that round fails with Slurm's
state and exit code as its reason, and the next launch submits a new job (at most
``max_resubmits`` times). docs/slurm.md has the protocol, the faults and their costs.

The executor is thin; its parts are modules of their own: the pure sbatch builder
(:mod:`runner.execute.slurm_sbatch`), the Slurm commands and job states
(:mod:`runner.execute.slurm_commands`) and their watcher (:mod:`runner.execute.slurm_watch`),
the submit host's side of the agent protocol (:mod:`runner.execute.slurm_protocol`), the
getting of a job whose agents serve (:mod:`runner.execute.slurm_start`) and one round on
an agent (:mod:`runner.execute.slurm_round`). This module routes the rounds to the nodes
and runs a workload's setup and cleanup on each node; :class:`SlurmOptions` groups what
configures the parts.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Callable
from typing import Any

from benchrun.runner.config.experiment import PinSpec, SlurmSpec
from benchrun.runner.execute.agent_messages import NodeCallback
from benchrun.runner.execute.executor import RoundOutcome, RoundSpec, RoundStatus
from benchrun.runner.execute.slurm_commands import (
    COMMAND_TIMEOUT,
    FINISHED_STATES,
    JobState,
    SlurmCommands,
)
from benchrun.runner.execute.slurm_protocol import (
    Agent,
    Job,
    SharedCheck,
    Wake,
    part,
)
from benchrun.runner.execute.slurm_round import RoundExchange
from benchrun.runner.execute.slurm_sbatch import AGENT_LOG, AGENT_MODULE
from benchrun.runner.execute.slurm_start import (
    INTERRUPT_GRACE,
    Interrupted,
    JobStarter,
    SlurmOptions,
    SlurmTimings,
)
from benchrun.runner.execute.slurm_watch import (
    PENDING_POLL,
    RUNNING_POLL,
    SETTLE_TIME,
    JobWatcher,
)

__all__ = [
    "AGENT_LOG",
    "AGENT_MODULE",
    "COMMAND_TIMEOUT",
    "FINISHED_STATES",
    "INTERRUPT_GRACE",
    "PENDING_POLL",
    "RUNNING_POLL",
    "SETTLE_TIME",
    "JobState",
    "SharedCheck",
    "SlurmCommands",
    "SlurmExecutor",
    "SlurmOptions",
    "SlurmTimings",
]


class SlurmExecutor:
    """Run each round on a Slurm compute node through benchrun's agent (module docstring).

    Parameters
    ----------
    spec : SlurmSpec
        The experiment's ``executor:`` (partition, time limit, ...).
    options : SlurmOptions, optional
        The jobs' name, mark (``comment``), ``pin``, checks, the variables that travel
        (``env_keys``) and the waits; any of its fields may also be given by keyword,
        replacing that of ``options``.
    commands : SlurmCommands, optional
        The Slurm commands (tests pass a stand-in).
    on_message : callable, optional
        Told each event worth a line (job submitted, started, ended, resubmitted);
        default: printed on stderr.
    on_node : callable, optional
        ``on_node(node, record)`` is called once per node, when the first job on it
        connects, with the node's metadata record from the agent's hello (the campaign
        stores it as a ``node-metadata`` event); the records are also kept in
        :attr:`node_metadata`.
    own_jobs : set of str, optional
        Job ids submitted by this run of the campaign, never taken for leftovers; the
        executor adds each job it submits. The executors of one campaign (a fleet's node
        types) share one set, since their jobs carry the same comment. Default: a set of
        this executor's own.
    """

    def __init__(
        self,
        spec: SlurmSpec,
        options: SlurmOptions | None = None,
        *,
        commands: SlurmCommands | None = None,
        on_message: Callable[[str], None] | None = None,
        on_node: NodeCallback | None = None,
        own_jobs: set[str] | None = None,
        **option_fields: Any,
    ) -> None:
        self.spec = spec
        self.options = dataclasses.replace(options or SlurmOptions(), **option_fields)
        self.on_message = on_message if on_message is not None else _to_stderr
        # SETTLE_TIME read now, so that a test may shorten it on this module
        self.watcher = JobWatcher(
            commands if commands is not None else SlurmCommands(), self.on_message, SETTLE_TIME
        )
        self._wake = Wake()
        self._start = JobStarter(
            spec,
            self.options,
            self.watcher,
            self._wake,
            self.on_message,
            on_node,
            own_jobs if own_jobs is not None else set(),
        )
        #: every job submitted, in order; what they cost; each node's metadata record
        self.jobs = self._start.jobs
        self.timings = self._start.timings
        self.node_metadata = self._start.node_metadata
        self.own_jobs = self._start.own_jobs
        self._rounds = RoundExchange(
            self.options, self._start, self.watcher, self._wake, self.on_message
        )
        #: each workload's setup (as the campaign sent it), to run on its other nodes
        self._setups: dict[str, RoundSpec] = {}
        #: (workload, node) where that setup ran
        self._set_up: set[tuple[str, str]] = set()
        #: the nodes that ran something of each workload (its cleanup runs there)
        self._used: dict[str, set[str]] = {}

    # ----------------------------------------------------------------- the parts' values
    # (the options by the names the constructor's keywords had: the factory's tests
    # and the fleet read them)

    @property
    def job_name(self) -> str:
        return self.options.job_name

    @property
    def pin(self) -> PinSpec:
        return self.options.pin

    @property
    def checks(self) -> tuple[SharedCheck, ...]:
        return self.options.checks

    @property
    def env_keys(self) -> frozenset[str] | None:
        return self.options.env_keys

    @property
    def comment(self) -> str | None:
        return self.options.comment

    @property
    def interrupt_grace(self) -> float:
        return self.options.interrupt_grace

    @property
    def running_poll(self) -> float:
        return self.options.running_poll

    @property
    def python(self) -> str:
        return self._start.python

    @property
    def commands(self) -> SlurmCommands:
        return self.watcher.commands

    @property
    def on_node(self) -> NodeCallback | None:
        """Told each node's metadata record, once (the campaign sets it)."""
        return self._start.on_node

    @on_node.setter
    def on_node(self, callback: NodeCallback | None) -> None:
        self._start.on_node = callback

    @property
    def node(self) -> str | None:
        """The node(s) of the current job's agents (``n1,n2``; None before one connected)."""
        job = self._start.current
        return job.node if job is not None else None

    @property
    def node_count(self) -> int:
        """How many nodes each job has (``nodes:``, a count or the names)."""
        return self._start.node_count

    @property
    def node_names(self) -> list[str]:
        """The nodes ``nodes:`` names, host list expressions expanded; empty for a count."""
        return self._start.node_names

    def batch_script(self, token: str) -> str:
        """The job's script (:func:`runner.execute.slurm_sbatch.batch_script`)."""
        return self._start.batch_script(token)

    def sbatch_options(self) -> list[str]:
        """The sbatch options of every job: the executor's keys, then ``sbatch_args``."""
        return self._start.sbatch_options()

    # the job's steps, by their old names (tests drive them one by one)
    @property
    def _job(self) -> Job | None:
        return self._start.current

    @_job.setter
    def _job(self, job: Job | None) -> None:
        self._start.current = job

    @property
    def _address(self) -> tuple[str, int] | None:
        listener = self._start.listener
        return listener.address if listener is not None else None

    def _preflight(self) -> None:
        self._start.preflight()

    def _listen(self) -> None:
        self._start.listen()

    def _submit(self) -> Job:
        return self._start.submit()

    # ----------------------------------------------------------------- the protocol

    def interrupt(self) -> None:
        """Kill the round in flight on its node (its process group, as locally); safe from
        a signal handler. The job stays for the next round (and the cleanups); if the
        agent does not answer within ``interrupt_grace`` seconds the job is cancelled.
        With no round in flight the next launch returns "interrupted" at once; while a
        job is pending, the wait ends at once (``close`` then cancels the job)."""
        self._wake.interrupt()

    def clear_interrupt(self) -> None:
        """Forget an interrupt that arrived while no round was in flight."""
        self._wake.pending = False

    def launch(self, spec: RoundSpec) -> RoundOutcome:
        """Run one round on a node and return what it did, with ``node`` set.

        A job of several nodes runs every round (and hook) of pass ``spec.pass_index``
        on its node ``pass_index mod N`` (the first node when ``pass_index`` is None); a
        workload's ``setup`` seen once runs again before its first round on each other
        node, and its ``cleanup`` runs on every node of the job that ran it.

        Raises :class:`UserError` when no job can run it: a bad partition, a job pending
        past ``pending_limit``, a node that lacks what the experiment needs, a benchrun
        version that differs, or ``max_resubmits`` exhausted.
        """
        started = time.time()
        if self._wake.pending:
            self._wake.pending = False
            return _not_run(started, "interrupted", "interrupted before the round started")
        try:
            job = self._start.ready_job()
        except Interrupted:
            waiting = self._job.job_id if self._job is not None else "?"
            return _not_run(
                started, "interrupted", f"interrupted while waiting for slurm job {waiting}"
            )
        if spec.hook == "cleanup":
            return self._cleanup(job, spec, started)
        agent = self._route(job, spec)
        if spec.hook == "setup":
            self._setups[spec.workload] = spec
        elif (
            spec.workload in self._setups
            and (spec.workload, agent.node) not in self._set_up
            and len(job.agents) > 1
        ):
            setup = self._run_on(job, agent, self._setups[spec.workload], started)
            if setup.status != "ok":
                return _setup_failed(setup, agent.node)
            self._set_up.add((spec.workload, agent.node))
        outcome = self._run_on(job, agent, spec, started)
        if spec.hook == "setup" and outcome.status == "ok":
            self._set_up.add((spec.workload, agent.node))
        return outcome

    def close(self) -> None:
        """End the job (``bye`` to its agents, ``scancel`` if it is still there) and
        release the listener; idempotent. Ctrl-C ends a campaign through here."""
        start = getattr(self, "_start", None)
        if start is None:  # __init__ did not get this far
            return
        job, start.current = start.current, None
        if job is not None and job.ended is None:
            part(job.agents)
            # the agents have exited (or were told to): give Slurm a moment to see it, so
            # that the job ends COMPLETED rather than CANCELLED
            self.watcher.end_after_goodbye(job.job_id)
        start.close_listener()
        self._wake.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - never raise from a finalizer
            pass

    # ------------------------------------------------------------------ one round

    def _route(self, job: Job, spec: RoundSpec) -> Agent:
        """The agent of the node that runs ``spec``: pass p on node p mod N."""
        index = 0 if spec.pass_index is None else spec.pass_index % len(job.agents)
        return job.agents[index]

    def _cleanup(self, job: Job, spec: RoundSpec, started: float) -> RoundOutcome:
        """A workload's cleanup on every node of ``job`` that ran something of it (the
        first node when none did); the first failure, else the last outcome."""
        used = self._used.get(spec.workload, set())
        targets = [a for a in job.agents if a.node in used] or job.agents[:1]
        result: RoundOutcome | None = None
        for agent in targets:
            if self._job is not job:  # lost under the previous node's cleanup
                break
            outcome = self._run_on(job, agent, spec, started)
            if result is None or (result.status == "ok" and outcome.status != "ok"):
                result = outcome
        assert result is not None
        return result

    def _run_on(self, job: Job, agent: Agent, spec: RoundSpec, started: float) -> RoundOutcome:
        """Send ``spec`` to ``agent`` and wait for what it did."""
        self._used.setdefault(spec.workload, set()).add(agent.node)
        return self._rounds.run_on(job, agent, spec, started)


def _to_stderr(text: str) -> None:
    print(f"benchrun: {text}", file=sys.stderr, flush=True)


def _not_run(started: float, status: RoundStatus, reason: str) -> RoundOutcome:
    return RoundOutcome(
        status=status,
        wall_ns=0,
        user_s=0.0,
        sys_s=0.0,
        max_rss_kib=0,
        exit_code=None,
        started_at=started,
        reason=reason,
        extra={"started": False},
    )


def _setup_failed(setup: RoundOutcome, node: str) -> RoundOutcome:
    """The round a workload's setup kept from running on ``node`` (a job lost under the
    setup is that outcome as it is)."""
    if "slurm_state" in setup.extra or setup.status == "interrupted":
        return setup
    return dataclasses.replace(
        setup,
        status="failed",
        wall_ns=0,
        user_s=0.0,
        sys_s=0.0,
        max_rss_kib=0,
        reason=f"setup failed on node {node}: {setup.reason}; the round did not run",
    )
