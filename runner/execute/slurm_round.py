"""One round on a Slurm job's agent: send it, wait for its outcome, or lose the job under it.

:class:`RoundExchange` sends a round to one agent of the current job
(:mod:`runner.execute.slurm_protocol`'s ``round`` message) and reads until its
``outcome``; meanwhile it passes Ctrl-C on as ``interrupt`` (cancelling the job when
the agent does not answer within ``interrupt_grace`` s) and asks Slurm every
``running_poll`` s whether the job still runs (:mod:`runner.execute.slurm_watch`). A job
that ended under the round fails it with Slurm's state as its reason (docs/slurm.md,
"Faults and what each costs"); the next launch gets a new job
(:mod:`runner.execute.slurm_start`).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

from benchrun.runner.errors import UserError
from benchrun.runner.execute.agent import ChannelClosed
from benchrun.runner.execute.agent_messages import (
    BadPayload,
    Interrupt,
    OutcomeReport,
    ProtocolError,
    Refused,
    Terminated,
)
from benchrun.runner.execute.executor import RoundOutcome, RoundSpec, RoundStatus
from benchrun.runner.execute.slurm_commands import JobState
from benchrun.runner.execute.slurm_protocol import Agent, Job, Wake, poll_fds, round_message
from benchrun.runner.execute.slurm_start import JobStarter, SlurmOptions
from benchrun.runner.execute.slurm_watch import JobWatcher


class RoundExchange:
    """The rounds of one executor, sent to its jobs' agents.

    Parameters
    ----------
    options : SlurmOptions
        ``env_keys`` (what travels), ``interrupt_grace`` and ``running_poll``.
    starter : JobStarter
        The jobs (a lost job is forgotten there; the first round's time is noted in its
        ``timings``).
    watcher : JobWatcher
        Asks Slurm whether a job still runs, and cancels it.
    wake : Wake
        Set by Ctrl-C: the round in flight is interrupted.
    on_message : callable
        Told each job lost under a round.
    """

    def __init__(
        self,
        options: SlurmOptions,
        starter: JobStarter,
        watcher: JobWatcher,
        wake: Wake,
        on_message: Callable[[str], None],
    ) -> None:
        self.options = options
        self.starter = starter
        self.watcher = watcher
        self.wake = wake
        self.on_message = on_message
        self._round = 0

    def run_on(self, job: Job, agent: Agent, spec: RoundSpec, started: float) -> RoundOutcome:
        """Send ``spec`` to ``agent`` and wait for what it did (``started``: the launch's
        wall clock time, s)."""
        assert agent.channel is not None
        self._round += 1
        round_id = self._round
        message = round_message(round_id, spec, self.options.env_keys)
        sent = time.monotonic()
        try:
            agent.channel.send(message)
        except ChannelClosed:
            return self._job_lost(job, agent, spec, started, sent)
        outcome = self._await_outcome(job, agent, round_id, spec, started, sent)
        if self.starter.timings.to_first_round is None and job is self.starter.jobs[0]:
            self.starter.timings.to_first_round = time.monotonic() - job.submitted
        return outcome

    def _await_outcome(
        self,
        job: Job,
        agent: Agent,
        round_id: int,
        spec: RoundSpec,
        started: float,
        sent: float,
    ) -> RoundOutcome:
        """Read ``agent``'s messages until the round's outcome; meanwhile pass on an
        interrupt (and cancel the job past ``interrupt_grace``) and ask Slurm every
        ``running_poll`` s whether the job still runs."""
        assert agent.channel is not None
        channel = agent.channel
        grace = self.options.interrupt_grace
        interrupted_at: float | None = None
        next_poll = time.monotonic() + self.options.running_poll
        while True:
            try:
                message = channel.next()
            except BadPayload as exc:
                if exc.kind != OutcomeReport.TYPE or exc.round_id != round_id:
                    continue  # not this round's outcome: dropped, as a well-formed one is
                self.watcher.cancel(job.job_id)
                raise UserError(f"slurm: job {job.job_id}: {exc}") from None
            except ProtocolError as exc:
                self.watcher.cancel(job.job_id)
                raise UserError(
                    f"slurm: the agent of job {job.job_id} on node {agent.node} sent garbage: {exc}"
                ) from None
            if message is not None:
                if isinstance(message, OutcomeReport) and message.id == round_id:
                    return self._outcome(job, agent, message)
                if isinstance(message, Refused) and message.id == round_id:
                    raise UserError(message.message)
                if isinstance(message, Terminated):
                    return self._job_lost(job, agent, spec, started, sent)
                continue
            now = time.monotonic()
            wait = next_poll - now
            if interrupted_at is not None:
                wait = min(wait, interrupted_at + grace - now)
            ready = poll_fds([channel.fileno(), self.wake.fd], max(0.0, wait))
            if self.wake.fd in ready:
                self.wake.drain()
                if self.wake.pending and interrupted_at is None:
                    self.wake.pending = False
                    interrupted_at = time.monotonic()
                    try:
                        channel.send(Interrupt(round_id))
                    except ChannelClosed:
                        return self._job_lost(job, agent, spec, started, sent)
            if channel.fileno() in ready:
                try:
                    channel.feed()
                except ChannelClosed:
                    return self._job_lost(job, agent, spec, started, sent)
            now = time.monotonic()
            if interrupted_at is not None and now >= interrupted_at + grace:
                self.watcher.cancel(job.job_id)
                return self._job_lost(job, agent, spec, started, sent)
            if now >= next_poll:
                next_poll = now + self.options.running_poll
                state = self.watcher.state(job.job_id)
                if state is not None and state.finished:
                    return self._job_lost(job, agent, spec, started, sent)

    def _outcome(self, job: Job, agent: Agent, message: OutcomeReport) -> RoundOutcome:
        """The round's outcome in an ``outcome`` message, with its node and job."""
        outcome = message.outcome
        extra = {**outcome.extra, "slurm_job": job.job_id}
        return dataclasses.replace(outcome, node=outcome.node or agent.node, extra=extra)

    def _job_lost(
        self, job: Job, agent: Agent, spec: RoundSpec, started: float, sent: float
    ) -> RoundOutcome:
        """The job (or ``agent``, its node's agent) ended under the round: the round
        failed with Slurm's reason (or was interrupted, when benchrun cancelled the job
        itself); the whole job is given up, the next launch submits a new one."""
        wall_ns = int((time.monotonic() - sent) * 1e9)
        # interrupted only when benchrun itself ended the job (Ctrl-C past its grace), not
        # when it cancels a job whose agent stopped answering (that round failed)
        ours = job.job_id in self.watcher.cancelled
        state = self.watcher.final_state(job.job_id)
        if state is None or not state.finished:
            # the agent is gone but Slurm still has the job running: end it
            self.watcher.cancel(job.job_id)
            shown = state.state if state is not None else "unknown to Slurm"
            reason = (
                f"the agent of slurm job {job.job_id} on node {agent.node} stopped answering "
                f"(job {shown}); the job was cancelled"
            )
            state = JobState(job.job_id, "CANCELLED", node=agent.node)
        else:
            reason = state.describe()
        job.ended = state
        self.starter.forget(job)
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
