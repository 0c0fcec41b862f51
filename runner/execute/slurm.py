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
"""

from __future__ import annotations

import dataclasses
import hmac
import os
import re
import secrets
import select
import shlex
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchrun.runner import __version__
from benchrun.runner.config.experiment import PinSpec, SlurmSpec
from benchrun.runner.errors import UserError
from benchrun.runner.execute.agent import (
    MAX_LINE,
    PROTOCOL,
    TOKEN_ENV,
    UNAUTHENTICATED_LINE,
    Channel,
    ChannelClosed,
    ProtocolError,
    outcome_from_dict,
    spec_to_dict,
)
from benchrun.runner.execute.executor import RoundOutcome, RoundSpec, RoundStatus
from benchrun.runner.execute.slurm_jobs import jobs_with_comment, squeue_argv

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
#: how often the job's state is asked while waiting for it to start, seconds
PENDING_POLL = 1.0
#: how often the job's state is asked while a round runs (a node that dies without
#: closing the connection is noticed this late at most), seconds
RUNNING_POLL = 15.0
#: after the connection ended, how long to wait for Slurm to record the job's end, s
SETTLE_TIME = 15.0
#: after ``interrupt``, how long the agent has to answer before the job is cancelled, s
INTERRUPT_GRACE = 10.0
#: the module a job runs: benchrun's agent (runner/execute/agent.py) with the node's
#: metadata collector (runner/machine/nodes.py) for its hello
AGENT_MODULE = "benchrun.runner.campaign.node_agent"
#: where the agent job's stdout/stderr go on its node (``%j``: the job id)
AGENT_LOG = "/tmp/benchrun-agent-%j.out"


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
        argv = ["sbatch", "--parsable", *options]
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
            state, exit_code, reason, nodes = (
                done.stdout.strip().splitlines()[0].split("|") + [""] * 4
            )[:4]
            node_list = None if nodes in ("", "None assigned") else nodes
            return JobState(
                job_id,
                state.split()[0] if state.split() else "UNKNOWN",
                None if reason in ("", "None") else reason,
                exit_code or None,
                node_list,
                node_list,
            )
        done = self._run(["scontrol", "show", "job", "-o", job_id])
        if done.returncode != 0 or "JobState=" not in done.stdout:
            return None
        fields = dict(_KEY_VALUE.findall(done.stdout))
        node = fields.get("BatchHost") or fields.get("NodeList")
        node_list = fields.get("NodeList")
        return JobState(
            job_id,
            fields.get("JobState", "UNKNOWN"),
            None if fields.get("Reason") in (None, "", "None") else fields["Reason"],
            fields.get("ExitCode") or None,
            None if node in (None, "", "(null)") else node,
            None if node_list in (None, "", "(null)") else node_list,
        )

    def hostnames(self, node_list: str) -> list[str]:
        """The node names of a Slurm host list (``n[1-2]`` -> n1, n2), by ``scontrol show
        hostnames``; the list as given when that fails."""
        done = self._run(["scontrol", "show", "hostnames", node_list])
        names = done.stdout.split() if done.returncode == 0 else []
        return names or [node_list]


@dataclass(frozen=True)
class SharedCheck:
    """What one workload needs on the node: its directory ``cwd`` and its ``program``
    (a path relative to ``cwd`` when it holds ``/``, else a name on ``path``, default
    the agent's ``$PATH``); None where nothing is checked (a shell command)."""

    workload: str
    cwd: str | None
    program: str | None = None
    path: str | None = None


class _Interrupted(Exception):
    """Ctrl-C while a job was being waited for."""


@dataclass
class _Agent:
    """One node's agent of a job: its connection (None once closed) and node name."""

    node: str
    channel: Channel | None
    connected: float  # monotonic s


@dataclass
class _Job:
    """One submitted job and its agents (one per node; :attr:`agents` in routing order
    once all have connected)."""

    job_id: str
    token: str
    submitted: float  # monotonic s
    expected: int = 1  # agents the job starts
    agents: list[_Agent] = field(default_factory=list)
    ended: JobState | None = None

    @property
    def channel(self) -> Channel | None:
        """The first agent's connection (None before it connected or once it closed)."""
        return self.agents[0].channel if self.agents else None

    @property
    def node(self) -> str | None:
        """The node names of the agents connected so far (``n1,n2``), None before any."""
        return ",".join(a.node for a in self.agents) if self.agents else None

    @property
    def connected(self) -> float | None:
        """When the last of its agents connected (monotonic s), None before all did."""
        if len(self.agents) < self.expected:
            return None
        return max(a.connected for a in self.agents)


@dataclass
class SlurmTimings:
    """What a campaign's jobs cost, in seconds (for docs/slurm.md's figures):
    ``to_agent``: submission to the agent's hello, per job; ``to_first_round``:
    submission to the first round's outcome of the first job."""

    to_agent: list[float] = field(default_factory=list)
    to_first_round: float | None = None


class SlurmExecutor:
    """Run each round on a Slurm compute node through benchrun's agent (module docstring).

    Parameters
    ----------
    spec : SlurmSpec
        The experiment's ``executor:`` (partition, time limit, ...).
    job_name : str
        Name of the jobs (sbatch ``--job-name``).
    pin : str or tuple of int
        The experiment's ``pin``: the agent plans it inside its job's CPUs.
    checks : sequence of SharedCheck
        What the workloads need on the node, checked before the first round.
    env_keys : collection of str, optional
        The variables the experiment sets (``settings.env`` and the workloads' ``env``):
        only these travel with a round, and the round's environment on the node is the
        job's environment (Slurm's, exported from the submitting shell) with these set.
        None sends each round's whole environment.
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
    comment : str, optional
        The jobs' ``--comment``, marking them as this campaign's
        (:func:`runner.execute.slurm_jobs.campaign_comment`); the first launch cancels
        the jobs still carrying it, which a run that died left behind. None: no mark.
    own_jobs : set of str, optional
        Job ids submitted by this run of the campaign, never taken for leftovers; the
        executor adds each job it submits. The executors of one campaign (a fleet's node
        types) share one set, since their jobs carry the same comment. Default: a set of
        this executor's own.
    """

    def __init__(
        self,
        spec: SlurmSpec,
        *,
        job_name: str = "benchrun",
        pin: PinSpec = "auto",
        checks: Sequence[SharedCheck] = (),
        env_keys: frozenset[str] | None = None,
        commands: SlurmCommands | None = None,
        on_message: Callable[[str], None] | None = None,
        interrupt_grace: float = INTERRUPT_GRACE,
        running_poll: float = RUNNING_POLL,
        on_node: Callable[[str, dict[str, Any]], None] | None = None,
        comment: str | None = None,
        own_jobs: set[str] | None = None,
    ) -> None:
        self.spec = spec
        self.job_name = job_name
        self.pin = pin
        self.checks = tuple(checks)
        self.env_keys = env_keys
        self.commands = commands if commands is not None else SlurmCommands()
        self.on_message = on_message if on_message is not None else _to_stderr
        self.interrupt_grace = interrupt_grace
        self.running_poll = running_poll
        self.python = spec.python or sys.executable
        self.timings = SlurmTimings()
        #: every job submitted, in order
        self.jobs: list[_Job] = []
        #: each node's metadata record, from the hello of the first job on it
        self.node_metadata: dict[str, dict[str, Any]] = {}
        self.on_node = on_node
        self.comment = comment
        self.own_jobs: set[str] = own_jobs if own_jobs is not None else set()
        self._job: _Job | None = None
        self._listener: socket.socket | None = None
        self._address: tuple[str, int] | None = None
        self._preflight_done = False
        self._cancelled: set[str] = set()
        self._round = 0
        self._interrupt_pending = False
        self._wake_r, self._wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        #: each workload's setup (as the campaign sent it), to run on its other nodes
        self._setups: dict[str, RoundSpec] = {}
        #: (workload, node) where that setup ran
        self._set_up: set[tuple[str, str]] = set()
        #: the nodes that ran something of each workload (its cleanup runs there)
        self._used: dict[str, set[str]] = {}
        self._node_names: list[str] | None = None

    # ----------------------------------------------------------------- the protocol

    def interrupt(self) -> None:
        """Kill the round in flight on its node (its process group, as locally); safe from
        a signal handler. The job stays for the next round (and the cleanups); if the
        agent does not answer within ``interrupt_grace`` seconds the job is cancelled.
        With no round in flight the next launch returns "interrupted" at once; while a
        job is pending, the wait ends at once (``close`` then cancels the job)."""
        self._interrupt_pending = True
        try:
            os.write(self._wake_w, b"!")
        except OSError:
            pass

    def clear_interrupt(self) -> None:
        """Forget an interrupt that arrived while no round was in flight."""
        self._interrupt_pending = False

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
        if self._interrupt_pending:
            self._interrupt_pending = False
            return _not_run(started, "interrupted", "interrupted before the round started")
        try:
            job = self._ready_job()
        except _Interrupted:
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
        job, self._job = self._job, None
        if job is not None and job.ended is None:
            channels = [a.channel for a in job.agents if a.channel is not None]
            for channel in channels:
                try:
                    channel.send({"type": "bye"})
                except (ChannelClosed, OSError):
                    pass
            for channel in channels:
                try:
                    channel.receive(3.0)  # the agent closes: the job completes
                except (ChannelClosed, ProtocolError, OSError):
                    pass
                channel.close()
            for agent in job.agents:
                agent.channel = None
            # the agents have exited (or were told to): give Slurm a moment to see it, so
            # that the job ends COMPLETED rather than CANCELLED
            deadline = time.monotonic() + 3.0
            state = self._state(job.job_id)
            while (
                state is not None
                and state.state in ("RUNNING", "CONFIGURING")
                and time.monotonic() < deadline
            ):
                time.sleep(0.1)
                state = self._state(job.job_id)
            if state is not None and not state.finished and state.state != "COMPLETING":
                self._cancel(job.job_id)
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        for name in ("_wake_r", "_wake_w"):
            fd = getattr(self, name, -1)
            if fd >= 0:
                os.close(fd)
                setattr(self, name, -1)

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - never raise from a finalizer
            pass

    @property
    def node(self) -> str | None:
        """The node(s) of the current job's agents (``n1,n2``; None before one connected)."""
        return self._job.node if self._job is not None else None

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
                for name in (self._hostnames(entry) if "[" in entry else [entry])
            ]
        return self._node_names

    # ---------------------------------------------------------------- job lifecycle

    def _ready_job(self) -> _Job:
        """The job whose agents take the next round: the current one while its
        connections live, else a new one (submitted, started, checked)."""
        job = self._job
        if job is not None and job.agents and not self._ended_idle(job):
            return job
        if job is not None:
            self._forget(job)
        if not self._preflight_done:
            self._preflight()
        resubmits = len(self.jobs) - 1
        if self.jobs and resubmits >= self.spec.max_resubmits:
            last = self.jobs[-1].ended
            why = last.describe() if last is not None else f"slurm job {self.jobs[-1].job_id} ended"
            raise UserError(
                f"slurm: {why}, and {resubmits} job(s) were already submitted again "
                f"(executor max_resubmits: {self.spec.max_resubmits}); every finished round "
                "is stored: continue with --resume once the cluster is well"
            )
        job = self._submit()
        self._await_agent(job)
        return job

    def _preflight(self) -> None:
        """Before anything is queued: the partition exists, the listener."""
        if self.node_count < 1:
            raise UserError(f"slurm: nodes: {self.spec.nodes}: a job needs at least one node")
        for name in (self.spec.partition or "").split(","):
            if name:
                self.commands.check_partition(name)
        if self.comment is not None:
            self._cancel_leftovers(self.comment)
        self._listen()
        self._preflight_done = True

    def _cancel_leftovers(self, comment: str) -> None:
        """Cancel the jobs an earlier run of this campaign left queued or running (it died
        without closing them; the campaign lock says no one else serves them). Best
        effort: when squeue cannot tell, the campaign goes on and says so."""
        try:
            leftovers = self.commands.jobs_with_comment(comment)
        except UserError as exc:
            self.on_message(f"{exc}; jobs left by an earlier run were not looked for")
            return
        for job_id in leftovers:
            if job_id in self.own_jobs:  # another executor of this run submitted it
                continue
            self._cancel(job_id)
            self.on_message(
                f"slurm: cancelled job {job_id}, left by an earlier run of this campaign"
            )

    def _listen(self) -> None:
        host, port = None, 0
        if self.spec.listen:
            text = self.spec.listen
            if text.count(":") == 1:
                text, _, port_text = text.rpartition(":")
                port = int(port_text)
            host = text.strip("[]")
        bind_host = host if host is not None else ""
        family = socket.AF_INET6 if host is not None and ":" in host else socket.AF_INET
        listener = socket.socket(family, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            listener.bind((bind_host, port))
        except OSError as exc:
            listener.close()
            raise UserError(
                f"slurm: cannot listen on {bind_host or '*'}:{port} for the agents: "
                f"{exc.strerror or exc} (executor listen:)"
            ) from None
        listener.listen(8)
        listener.set_inheritable(False)
        self._listener = listener
        self._address = (
            host if host is not None else socket.gethostname(),
            listener.getsockname()[1],
        )

    def batch_script(self, token: str) -> str:
        """The job's script: the agent, told where to connect (the token in its
        environment, not on its command line, which ``ps`` shows to everyone); one agent
        per node through ``srun`` when the job has several nodes."""
        assert self._address is not None
        host, port = self._address
        target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        count = self.node_count
        launcher = (
            f"srun --nodes={count} --ntasks={count} --ntasks-per-node=1 " if count > 1 else ""
        )
        return (
            "#!/bin/sh\n"
            "# benchrun's agent (docs/slurm.md): runs the rounds the submit host sends\n"
            f"{TOKEN_ENV}={shlex.quote(token)}\n"
            f"export {TOKEN_ENV}\n"
            f"exec {launcher}{shlex.quote(self.python)} -m {AGENT_MODULE} "
            f"--connect {shlex.quote(target)}\n"
        )

    def sbatch_options(self) -> list[str]:
        """The sbatch options of every job: the executor's keys, then ``sbatch_args``."""
        s = self.spec
        options = [f"--job-name={self.job_name}", f"--output={AGENT_LOG}"]
        if self.comment is not None:
            options.append(f"--comment={self.comment}")
        if s.partition:
            options.append(f"--partition={s.partition}")
        if s.constraint:
            options.append(f"--constraint={s.constraint}")
        if s.account:
            options.append(f"--account={s.account}")
        if isinstance(s.nodes, int):
            options.append(f"--nodes={s.nodes}")
        else:
            options += [f"--nodelist={','.join(s.nodes)}", f"--nodes={self.node_count}"]
        time_text = s.time_text()
        if time_text is not None:
            options.append(f"--time={time_text}")
        if s.exclusive:
            options.append("--exclusive")
        return options + list(s.sbatch_args)

    def _submit(self) -> _Job:
        token = secrets.token_hex(16)
        job_id = self.commands.submit(self.batch_script(token), self.sbatch_options())
        self.own_jobs.add(job_id)
        job = _Job(job_id, token, time.monotonic(), expected=self.node_count)
        self.jobs.append(job)
        self._job = job
        again = (
            f" (again, {len(self.jobs) - 1} of {self.spec.max_resubmits})"
            if len(self.jobs) > 1
            else ""
        )
        self.on_message(f"slurm: submitted job {job_id}{again}; waiting for it to start")
        return job

    def _await_agent(self, job: _Job) -> None:
        """Wait until every agent of ``job`` has connected and passed the checks; raises
        :class:`UserError` (after cancelling the job) when one cannot, or
        :class:`_Interrupted` on Ctrl-C."""
        assert self._listener is not None
        deadline = job.submitted + self.spec.pending_limit
        next_poll = time.monotonic() + PENDING_POLL
        state: JobState | None = None
        while len(job.agents) < job.expected:
            now = time.monotonic()
            if now >= deadline:
                message = self._pending_message(job, state)
                self._cancel(job.job_id)
                job.ended = JobState(job.job_id, "CANCELLED", node=job.node)
                self._forget(job)
                raise UserError(message)
            wait = min(deadline, next_poll) - now
            ready = _poll([self._listener.fileno(), self._wake_r], wait)
            if self._wake_r in ready:
                _drain(self._wake_r)
                if self._interrupt_pending:
                    self._interrupt_pending = False
                    raise _Interrupted
            if self._listener.fileno() in ready:
                self._accept(job)
                continue
            if time.monotonic() >= next_poll:
                next_poll = time.monotonic() + PENDING_POLL
                state = self._state(job.job_id)
                if state is not None and state.finished:
                    job.ended = state
                    self._forget(job)
                    who = (
                        "benchrun's agent connected"
                        if job.expected == 1
                        else f"all {job.expected} agents connected (from: {job.node or 'none'})"
                    )
                    raise UserError(
                        f"slurm: {state.describe()} before {who}{_log_hint(job.job_id, state.node)}"
                    )
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

    def _pending_message(self, job: _Job, state: JobState | None) -> str:
        limit = self.spec.pending_limit
        address = f"{self._address[0]}:{self._address[1]}" if self._address is not None else "?:?"
        if state is None:
            what = "did not start"
        elif state.state == "PENDING":
            what = f"is still PENDING ({state.reason or 'no reason given'})"
        elif job.agents:
            connected = [a.node for a in job.agents]
            names = self._hostnames(state.node_list or state.node)
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
        hint = _log_hint(job.job_id, None) if state and state.state == "RUNNING" else ""
        return (
            f"slurm: job {job.job_id} {what} after {limit:g} s (executor pending_limit); "
            f"it was cancelled; nothing was measured by it{hint}"
        )

    def _hostnames(self, node_list: str | None) -> list[str]:
        if not node_list:
            return ["(unknown)"]
        try:
            return self.commands.hostnames(node_list)
        except UserError:
            return [node_list]

    def _accept(self, job: _Job) -> bool:
        """Take one connection; True when it is one of ``job``'s agents and it passed the
        checks (a stranger or a stale agent is dropped)."""
        assert self._listener is not None
        try:
            sock, _ = self._listener.accept()
        except OSError:
            return False
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        channel = Channel(sock, max_line=UNAUTHENTICATED_LINE)
        try:
            hello = channel.receive(10.0)
        except ProtocolError as exc:
            channel.close()
            self.on_message(f"slurm: dropped a connection whose hello was not valid: {exc}")
            return False
        except (ChannelClosed, OSError):
            channel.close()
            return False
        if (
            hello is None
            or hello.get("type") != "hello"
            or not isinstance(hello.get("token"), str)
            or not hmac.compare_digest(hello["token"], job.token)
        ):
            channel.close()
            return False
        channel.max_line = MAX_LINE  # it proved who it is
        agent = _Agent(str(hello.get("node") or "?"), channel, time.monotonic())
        job.agents.append(agent)
        try:
            self._check_agent(job, agent, hello)
        except UserError:
            self._abandon(job)
            raise
        self._keep_metadata(agent.node, hello.get("metadata"))
        return True

    def _keep_metadata(self, node: str, record: object) -> None:
        """Keep ``node``'s record (the first job's on it) and tell :attr:`on_node`."""
        if node in self.node_metadata or not isinstance(record, dict):
            return
        self.node_metadata[node] = record
        if self.on_node is not None:
            self.on_node(node, record)

    def _check_agent(self, job: _Job, agent: _Agent, hello: Mapping[str, Any]) -> None:
        """The shared things: same protocol and benchrun version, the workloads' files."""
        assert agent.channel is not None
        if hello.get("protocol") != PROTOCOL or hello.get("version") != __version__:
            raise UserError(
                f"slurm: node {agent.node} runs benchrun {hello.get('version')} (protocol "
                f"{hello.get('protocol')}) with {hello.get('python')}, this host benchrun "
                f"{__version__} (protocol {PROTOCOL}); install the same benchrun where the "
                "nodes find it, or point executor python: at it"
            )
        agent.channel.send(
            {
                "type": "setup",
                "pin": list(self.pin) if isinstance(self.pin, tuple) else self.pin,
                "checks": [dataclasses.asdict(c) for c in self.checks],
            }
        )
        try:
            ready = agent.channel.receive(60.0)
        except (ChannelClosed, ProtocolError) as exc:
            raise UserError(
                f"slurm: the agent of job {job.job_id} on node {agent.node} failed its setup: {exc}"
            ) from None
        if ready is None or ready.get("type") != "ready":
            raise UserError(
                f"slurm: the agent of job {job.job_id} on node {agent.node} did not answer "
                "its setup"
            )
        problems = [str(p) for p in ready.get("problems") or ()]
        if problems:
            raise UserError(
                f"slurm: node {agent.node} lacks what the experiment needs: "
                + "; ".join(problems)
                + " (the workloads' files must be on every node, at the same paths: "
                "docs/slurm.md)"
            )

    def _ended_idle(self, job: _Job) -> bool:
        """True when the job ended between rounds (an agent said so or hung up); a job
        that Slurm still runs without that agent is cancelled."""
        gone: _Agent | None = None
        for agent in job.agents:
            if agent.channel is None:
                gone = agent
                break
            try:
                while _poll([agent.channel.fileno()], 0.0):
                    agent.channel.feed()
                    message = agent.channel.next()
                    while message is not None:
                        if message.get("type") == "terminated":
                            raise ChannelClosed("terminated")
                        message = agent.channel.next()
            except (ChannelClosed, ProtocolError, OSError):
                gone = agent
                break
        if gone is None:
            return False
        state = self._final_state(job.job_id)
        if state is None or not state.finished:
            self._cancel(job.job_id)  # its other agents cannot serve alone
            state = JobState(job.job_id, "CANCELLED", node=job.node)
            what = f"the agent of job {job.job_id} on node {gone.node} ended; the job was cancelled"
        else:
            what = state.describe()
        job.ended = state
        self.on_message(f"slurm: {what} between rounds; submitting a new job")
        return True

    # ------------------------------------------------------------------ one round

    def _route(self, job: _Job, spec: RoundSpec) -> _Agent:
        """The agent of the node that runs ``spec``: pass p on node p mod N."""
        index = 0 if spec.pass_index is None else spec.pass_index % len(job.agents)
        return job.agents[index]

    def _cleanup(self, job: _Job, spec: RoundSpec, started: float) -> RoundOutcome:
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

    def _run_on(self, job: _Job, agent: _Agent, spec: RoundSpec, started: float) -> RoundOutcome:
        """Send ``spec`` to ``agent`` and wait for what it did."""
        assert agent.channel is not None
        self._round += 1
        round_id = self._round
        self._used.setdefault(spec.workload, set()).add(agent.node)
        message: dict[str, Any] = {"type": "round", "id": round_id, "spec": self._wire_spec(spec)}
        if self.env_keys is not None:
            message["env_base"] = "node"
        sent = time.monotonic()
        try:
            agent.channel.send(message)
        except ChannelClosed:
            return self._job_lost(job, agent, spec, started, sent)
        outcome = self._await_outcome(job, agent, round_id, spec, started, sent)
        if self.timings.to_first_round is None and job is self.jobs[0]:
            self.timings.to_first_round = time.monotonic() - job.submitted
        return outcome

    def _wire_spec(self, spec: RoundSpec) -> dict[str, Any]:
        data = spec_to_dict(spec)
        if self.env_keys is not None:
            data["env"] = {k: v for k, v in spec.env.items() if k in self.env_keys}
        return data

    def _await_outcome(
        self,
        job: _Job,
        agent: _Agent,
        round_id: int,
        spec: RoundSpec,
        started: float,
        sent: float,
    ) -> RoundOutcome:
        assert agent.channel is not None
        channel = agent.channel
        interrupted_at: float | None = None
        next_poll = time.monotonic() + self.running_poll
        while True:
            try:
                message = channel.next()
            except ProtocolError as exc:
                self._cancel(job.job_id)
                raise UserError(
                    f"slurm: the agent of job {job.job_id} on node {agent.node} sent garbage: {exc}"
                ) from None
            if message is not None:
                kind = message.get("type")
                if kind == "outcome" and message.get("id") == round_id:
                    try:
                        outcome = outcome_from_dict(message.get("outcome") or {})
                    except ProtocolError as exc:
                        self._cancel(job.job_id)
                        raise UserError(f"slurm: job {job.job_id}: {exc}") from None
                    extra = {**outcome.extra, "slurm_job": job.job_id}
                    return dataclasses.replace(
                        outcome, node=outcome.node or agent.node, extra=extra
                    )
                if kind == "refused" and message.get("id") == round_id:
                    raise UserError(str(message.get("message")))
                if kind == "terminated":
                    return self._job_lost(job, agent, spec, started, sent)
                continue
            now = time.monotonic()
            wait = next_poll - now
            if interrupted_at is not None:
                wait = min(wait, interrupted_at + self.interrupt_grace - now)
            ready = _poll([channel.fileno(), self._wake_r], max(0.0, wait))
            if self._wake_r in ready:
                _drain(self._wake_r)
                if self._interrupt_pending and interrupted_at is None:
                    self._interrupt_pending = False
                    interrupted_at = time.monotonic()
                    try:
                        channel.send({"type": "interrupt", "id": round_id})
                    except ChannelClosed:
                        return self._job_lost(job, agent, spec, started, sent)
            if channel.fileno() in ready:
                try:
                    channel.feed()
                except ChannelClosed:
                    return self._job_lost(job, agent, spec, started, sent)
            now = time.monotonic()
            if interrupted_at is not None and now >= interrupted_at + self.interrupt_grace:
                self._cancel(job.job_id)
                return self._job_lost(job, agent, spec, started, sent)
            if now >= next_poll:
                next_poll = now + self.running_poll
                state = self._state(job.job_id)
                if state is not None and state.finished:
                    return self._job_lost(job, agent, spec, started, sent)

    def _job_lost(
        self, job: _Job, agent: _Agent, spec: RoundSpec, started: float, sent: float
    ) -> RoundOutcome:
        """The job (or ``agent``, its node's agent) ended under the round: the round
        failed with Slurm's reason (or was interrupted, when benchrun cancelled the job
        itself); the whole job is given up, the next launch submits a new one."""
        wall_ns = int((time.monotonic() - sent) * 1e9)
        # interrupted only when benchrun itself ended the job (Ctrl-C past its grace), not
        # when it cancels a job whose agent stopped answering (that round failed)
        ours = job.job_id in self._cancelled
        state = self._final_state(job.job_id)
        if state is None or not state.finished:
            # the agent is gone but Slurm still has the job running: end it
            self._cancel(job.job_id)
            shown = state.state if state is not None else "unknown to Slurm"
            reason = (
                f"the agent of slurm job {job.job_id} on node {agent.node} stopped answering "
                f"(job {shown}); the job was cancelled"
            )
            state = JobState(job.job_id, "CANCELLED", node=agent.node)
        else:
            reason = state.describe()
        job.ended = state
        self._forget(job)
        status: RoundStatus = "interrupted" if ours else "failed"
        if not ours:
            self.on_message(
                f"slurm: {spec.workload}: {reason} under the round on node {agent.node}; the "
                "next round goes to a new job"
            )
        return RoundOutcome(
            status=status,
            wall_ns=wall_ns,
            user_s=0.0,
            sys_s=0.0,
            max_rss_kib=0,
            exit_code=None,
            started_at=started,
            reason=reason,
            extra={"slurm_job": job.job_id, "slurm_state": state.state},
            node=agent.node,
        )

    # ------------------------------------------------------------------ helpers

    def _forget(self, job: _Job) -> None:
        for agent in job.agents:
            if agent.channel is not None:
                agent.channel.close()
                agent.channel = None
        if self._job is job:
            self._job = None

    def _abandon(self, job: _Job) -> None:
        """Cancel ``job`` and forget it (its agents cannot serve)."""
        for agent in job.agents:
            if agent.channel is not None:
                try:
                    agent.channel.send({"type": "bye"})
                except ChannelClosed:
                    pass
        self._cancel(job.job_id)
        job.ended = JobState(job.job_id, "CANCELLED", node=job.node)
        self._forget(job)

    def _cancel(self, job_id: str) -> None:
        self._cancelled.add(job_id)
        try:
            self.commands.cancel(job_id)
        except UserError as exc:
            self.on_message(f"{exc}; cancel job {job_id} by hand (scancel {job_id})")

    def _state(self, job_id: str) -> JobState | None:
        try:
            return self.commands.state(job_id)
        except UserError as exc:
            self.on_message(str(exc))
            return None

    def _final_state(self, job_id: str) -> JobState | None:
        """The job's state once Slurm has recorded its end (waits up to SETTLE_TIME s)."""
        deadline = time.monotonic() + SETTLE_TIME
        state = self._state(job_id)
        while (state is None or not state.finished) and time.monotonic() < deadline:
            time.sleep(0.2)
            state = self._state(job_id)
        return state


def _to_stderr(text: str) -> None:
    print(f"benchrun: {text}", file=sys.stderr, flush=True)


def _poll(fds: Sequence[int], timeout: float) -> set[int]:
    poller = select.poll()
    for fd in fds:
        poller.register(fd, select.POLLIN)
    try:
        events = poller.poll(max(0, int(timeout * 1000 + 0.999)))
    except InterruptedError:  # pragma: no cover - PEP 475 retries
        return set()
    return {fd for fd, _ in events}


def _drain(fd: int) -> None:
    try:
        while os.read(fd, 4096):
            pass
    except (BlockingIOError, OSError):
        pass


def _log_hint(job_id: str, node: str | None) -> str:
    """Where the agent job's output is, with its last lines when this host can read it."""
    path = Path(AGENT_LOG.replace("%j", job_id))
    where = f" on node {node}" if node else ""
    try:
        lines = path.read_text(errors="replace").strip().splitlines()[-3:]
    except OSError:
        return f"; its output is in {path}{where}"
    said = " | ".join(line.strip() for line in lines if line.strip())
    return f"; its output ({path}{where}): {said}" if said else f"; its output {path} is empty"


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
