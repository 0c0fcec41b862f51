"""One campaign of ``benchrun run``: open the store, plan, launch, commit, repeat.

This module owns the loop of docs/design.md's data flow in fixed mode
(``settings.rounds`` steady rounds per workload): scheduler -> executor -> store, with
interruption (SIGINT/SIGTERM) and resume. Nothing here computes statistics.

Durability contract (docs/loop.md "Durability"): a round is committed before the campaign
reports it (the display, status.json, a decision, an event); short ok rounds are committed
in groups (:data:`GROUP_COMMIT_S`), any other round at once, so a crash loses at most the
rounds of the last group window and the round in flight. A round killed by an
interruption is not stored as a round but as an event, and is redone on resume. A lock
file keeps two runners off the same campaign directory.
"""

from __future__ import annotations

import dataclasses
import fcntl
import functools
import os
import shlex
import signal
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from benchrun.runner import __version__
from benchrun.runner.campaign.contended import contended_stop, mark_contended
from benchrun.runner.campaign.failures import FailureRules
from benchrun.runner.campaign.groupcommit import GroupCommit
from benchrun.runner.campaign.hooks import HookInterrupted, HookRunner, what_failed, workload_cwd
from benchrun.runner.campaign.metrics import (
    CONTENTION_FREE_METRICS,
    counter_sources,
    metric_value,
    round_metrics,
)
from benchrun.runner.campaign.quietguard import QuietGuard
from benchrun.runner.campaign.workload_state import (
    CALIBRATION_FLAG,
    DUET_PROBE_FLAG,
    DUET_SOLO_FLAG,
    Display,
    WorkloadState,
)
from benchrun.runner.config.experiment import Experiment, Workload
from benchrun.runner.errors import UserError
from benchrun.runner.execute.containment import INFLIGHT_FILE, discard_spare, end_leftovers
from benchrun.runner.execute.duet import launch_duet
from benchrun.runner.execute.executor import Executor, RoundOutcome, RoundSpec
from benchrun.runner.execute.fleet import FleetExecutor
from benchrun.runner.execute.local import LocalExecutor
from benchrun.runner.execute.slurm import SlurmExecutor
from benchrun.runner.safefs import cannot, open_dir, open_file
from benchrun.runner.store.database import CampaignRow, EventRow, NewHook, NewRound, Store

__all__ = [
    "CALIBRATION_FLAG",
    "DUET_PROBE_FLAG",
    "DUET_SOLO_FLAG",
    "GROUP_COMMIT_S",
    "LOCK_FILE",
    "CampaignOutcome",
    "Display",
    "RoundLauncher",
    "WorkloadState",
    "campaign_lock",
    "campaign_session",
    "contended_stop",
    "default_resume_command",
    "experiment_label",
    "finish_campaign",
    "last_pass",
    "load_states",
    "mark_contended",
    "open_campaign",
    "round_readings",
    "start_campaign",
    "store_node_metadata",
    "workload_cwd",
]

#: ok rounds are committed in groups: the open group is committed once its first round is
#: this many seconds old, and before a round that may take this long is launched
#: (docs/loop.md "Durability"); 0 commits every round on its own
GROUP_COMMIT_S = 0.05


@dataclass(frozen=True)
class CampaignOutcome:
    """How a campaign ended: ``status`` as stored, and the process exit code to use."""

    campaign_id: int
    db_path: Path
    status: str
    exit_code: int
    message: str
    #: problems that cost nothing measured, for the user to see (a failed cleanup)
    warnings: tuple[str, ...] = ()


def round_readings(workload: Workload, outcome: RoundOutcome) -> tuple[float, ...]:
    """The readings stored for a round: the parsed ones, or the single metric value."""
    if outcome.status != "ok":
        return ()
    if workload.metric == "readings":
        return tuple(outcome.readings)
    value = metric_value(workload, outcome)
    return () if value is None else (value,)


#: the lock file of a campaign directory (one runner per campaign)
LOCK_FILE = ".benchrun.lock"


@contextmanager
def campaign_lock(directory: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``directory/.benchrun.lock`` (one runner per campaign).

    The directory is made (0700) when missing and must be one no other user can plant files
    in (runner/safefs.py :func:`~benchrun.runner.safefs.open_dir`); the lock file is opened
    relative to it without following a symlink and without truncating, and must be a
    regular file of ours (a planted file or link is refused, never written); it is created
    0600 with ``O_EXCL``. Once locked it holds our pid, for the message another runner
    prints. A full disk is one line (exit 75), as a file that cannot be made."""
    path = directory / LOCK_FILE
    dir_fd = open_dir(directory, create=True)
    try:
        fd = open_file(dir_fd, LOCK_FILE, path, write=True, create=True, private=False)
    except OSError as exc:
        raise cannot(path, exc) from None
    finally:
        os.close(dir_fd)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raw = os.pread(fd, 32, 0).decode(errors="replace").strip()
            holder = raw if raw.isdigit() else "another process"
            raise UserError(
                f"{directory} is being measured right now by pid {holder}; wait for it or "
                "choose another output directory",
                exit_code=1,
            ) from None
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode(), 0)
        except OSError as exc:
            raise cannot(path, exc, "write") from None
        yield
    finally:
        os.close(fd)


class _Interrupts:
    """SIGINT/SIGTERM: stop launching; with ``on_interrupt: kill`` also kill the round."""

    def __init__(self, executor: Executor, kill_round: bool) -> None:
        self.executor = executor
        self.kill_round = kill_round
        self.signum: int | None = None
        self._old: dict[int, Any] = {}

    def __enter__(self) -> _Interrupts:
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._old[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._old.items():
            signal.signal(sig, handler)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        first = self.signum is None
        self.signum = signum
        if self.kill_round or not first:  # a second Ctrl-C always kills the round
            self.executor.interrupt()


def _workload_spec(w: Workload) -> dict[str, Any]:
    spec = asdict(w)
    spec["params"] = dict(w.params)
    spec["env"] = dict(w.env)
    return spec


def _settings_dict(experiment: Experiment) -> dict[str, Any]:
    s = asdict(experiment.settings)
    s["env"] = dict(experiment.settings.env)
    return s


def default_resume_command(experiment: Experiment) -> str:
    """``benchrun run FILE -o OUTPUT --resume``: the command that continues ``experiment``'s
    campaign when it was started from a file without other options (``benchrun run``
    passes the exact one, with every option it was given)."""
    source = str(experiment.source_path) if experiment.source_path else "EXPERIMENT.yaml"
    return shlex.join(["benchrun", "run", source, "-o", str(experiment.output), "--resume"])


def experiment_label(experiment: Experiment) -> str:
    """How messages name the experiment: its file, or its name when it has none (the
    one-line form, ``benchrun run -c CMD``)."""
    if experiment.source_path is not None:
        return str(experiment.source_path)
    return f"experiment {experiment.name} (from the command line)"


def open_campaign(
    store: Store,
    experiment: Experiment,
    resume: bool,
    new: bool,
    resume_command: str | None = None,
) -> tuple[CampaignRow, bool]:
    """Find the campaign to continue (``resume``) or create a new one; returns (row, resumed).

    Refuses to resume when the measurement-relevant part of the experiment changed, and
    refuses to silently abandon an interrupted campaign (``--new`` starts over anyway);
    ``resume_command`` is the command that message suggests (default:
    :func:`default_resume_command`).
    """
    existing = store.campaigns()
    latest = existing[-1] if existing else None
    unfinished = latest is not None and latest.status in ("running", "interrupted")
    if resume:
        if latest is None:
            raise UserError(
                f"nothing to resume in {store.path.parent}: no campaign yet; run without --resume"
            )
        if not unfinished:
            raise UserError(
                f"nothing to resume: the last campaign in {store.path.parent} is {latest.status}; "
                "run without --resume to start a new one"
            )
        if latest.fingerprint != experiment.measurement_fingerprint():
            raise UserError(
                f"{experiment_label(experiment)}: the experiment changed since campaign {latest.id} "
                "started (commands, parameters, pinning, environment or seed), so its rounds "
                "would not be comparable; start a new campaign with --new, or rename the "
                "experiment (name:) to keep both"
            )
        return latest, True
    if unfinished and not new:
        assert latest is not None
        hint = resume_command or default_resume_command(experiment)
        raise UserError(
            f"{store.path.parent} holds an {latest.status} campaign; continue it with: "
            f"{hint}; or start over with --new"
        )
    argv = " ".join(sys.argv)
    campaign_id = store.create_campaign(
        name=experiment.name,
        config_path=str(experiment.source_path) if experiment.source_path else None,
        config_text=experiment.source_text,
        fingerprint=experiment.measurement_fingerprint(),
        settings=_settings_dict(experiment),
        workloads=[
            {
                "name": w.name,
                "metric": w.metric,
                "unit": w.unit,
                "direction": w.direction,
                "spec": _workload_spec(w),
            }
            for w in experiment.workloads
        ],
        benchrun_version=__version__,
        command_line=argv,
        experiment=experiment,
    )
    return store.campaign(campaign_id), False


def load_states(
    store: Store, campaign: CampaignRow, experiment: Experiment
) -> dict[str, WorkloadState]:
    """Rebuild per-workload bookkeeping from what the store holds."""
    rows = {w.name: w for w in store.workloads(campaign.id)}
    states: dict[str, WorkloadState] = {}
    for w in experiment.workloads:
        row = rows[w.name]
        st = WorkloadState(workload=w, workload_id=row.id)
        if row.status == "stopped":
            st.stopped = row.status_reason or "stopped"
        states[w.name] = st
    by_id = {st.workload_id: st for st in states.values()}
    for r in store.rounds(campaign.id):
        node = None  # where a round measured elsewhere ran (its facts say)
        match r.facts:
            case {"node": str(stored_node)}:
                node = stored_node
        by_id[r.workload_id].record(
            r.status == "ok",
            r.warmup,
            r.pass_,
            r.readings,
            r.work,
            r.flags,
            r.wall_ns,
            node,
            experiment.settings.contended,
        )
    return states


class RoundLauncher:
    """Launches one round of a workload and commits it before anything else happens.

    Shared by the fixed and the adaptive loop: renders the argv (``{round}``, ``{work}``),
    builds the environment, launches through the executor (one round, or a duet's two),
    stores the round and its readings, flagged contended when it waited for a CPU
    (runner/campaign/contended.py), and updates the workload's bookkeeping. Its parts:
    the workload's hooks (:attr:`hooks`, runner/campaign/hooks.py), the group commit of
    rounds (:attr:`group`, runner/campaign/groupcommit.py) and the failure rules
    (:attr:`failures`, runner/campaign/failures.py: ``max_consecutive_failures`` stops a
    workload, ``fail_fast`` the campaign: :attr:`failure_stop`).
    """

    def __init__(
        self,
        store: Store,
        campaign: CampaignRow,
        experiment: Experiment,
        executor: Executor,
        display: Display,
        states: dict[str, WorkloadState],
        interrupts: _Interrupts,
        *,
        round_facts_fn: RoundFactsFn | None = None,
        workload_cpus: tuple[int, ...] | None = None,
        resume_command: str | None = None,
    ) -> None:
        self.store = store
        self.campaign = campaign
        self.experiment = experiment
        self.executor = executor
        self.display = display
        #: duet sides already reported as using more than one CPU (campaign/duets.py)
        self.duet_multi_cpu: set[str] = set()
        #: duet sides whose probe round (both CPUs, docs/duet.md) ran in this run
        self.duet_probed: set[str] = set()
        self.states = states
        self.interrupts = interrupts
        self.round_facts_fn = round_facts_fn
        self.workload_cpus = workload_cpus
        self.base_env = dict(os.environ)
        self.base_env.update(experiment.settings.env)
        self._envs: dict[str, dict[str, str]] = {}  # the environment of each workload's rounds
        self.seq = store.next_seq(campaign.id)
        #: the command that continues this campaign (printed when it is interrupted)
        self.resume_command = resume_command or default_resume_command(experiment)
        #: the group commit of rounds, in windows of GROUP_COMMIT_S (0: one commit a round)
        self.group = GroupCommit(store, display, GROUP_COMMIT_S)
        self.failures = FailureRules(
            store,
            campaign.id,
            experiment.settings,
            states,
            display,
            experiment.campaign_dir,
            commit=self.commit,
        )
        self.hooks = HookRunner(
            store,
            campaign.id,
            experiment,
            executor,
            display,
            states,
            base_env=self.base_env,
            workload_cpus=workload_cpus,
            commit=self.commit,
            interrupted=lambda: self.interrupted,
        )
        self.quiet = QuietGuard(
            store,
            campaign.id,
            experiment.settings,
            display,
            commit=self.commit,
            interrupted=lambda: self.interrupted,
        )

    @property
    def failure_stop(self) -> str | None:
        """Why the campaign stops (fail_fast, contended: fail, set by the loops too: a
        duet side on more than one CPU); None while it goes on."""
        return self.failures.failure_stop

    @failure_stop.setter
    def failure_stop(self, reason: str | None) -> None:
        self.failures.failure_stop = reason

    @property
    def group_commit_s(self) -> float:
        """The group commit window, s (GROUP_COMMIT_S; 0: one commit per round)."""
        return self.group.window_s

    def commit(self) -> None:
        """Commit the open group of rounds, then report them (the display): a round is
        never reported before it is committed. Called by the loops before they report
        anything else (a decision, status.json, the end of the campaign)."""
        self.group.commit()

    def stop_workload(self, name: str, reason: str) -> None:
        """Give up on a workload for good (stored, so a resume does not retry it)."""
        self.failures.stop_workload(name, reason)

    def cleanup(self, name: str, record: bool = True) -> str | None:
        """The ``cleanup`` of ``name`` (:meth:`HookRunner.cleanup`): a warning when it failed."""
        return self.hooks.cleanup(name, record)

    def cleanup_all(self, record: bool = True) -> list[str]:
        """:meth:`cleanup` of every workload, in file order; the warnings of those that failed."""
        return self.hooks.cleanup_all(record)

    def before_pass(self, pass_index: int) -> None:
        """The quiet-machine guard before the first round of pass ``pass_index``
        (:meth:`QuietGuard.before_pass`)."""
        self.quiet.before_pass(pass_index)

    @property
    def interrupted(self) -> bool:
        return self.interrupts.signum is not None

    def spec(self, name: str, argv: tuple[str, ...], pass_index: int | None = None) -> RoundSpec:
        """What the executor needs to launch ``argv`` as a round of workload ``name`` (of
        pass ``pass_index``: a multi-node executor keeps a pass on one node)."""
        settings = self.experiment.settings
        w = self.states[name].workload
        env = self._envs.get(name)
        if env is None:  # one mapping per workload, the same object every round
            env = self._envs[name] = {**self.base_env, **w.env}
        return RoundSpec(
            workload=name,
            argv=argv,
            env=env,
            timeout=w.timeout if w.timeout is not None else settings.timeout,
            shell=w.shell,
            cwd=workload_cwd(self.experiment, w),
            cpus=self.workload_cpus,
            readings=w.readings if w.metric == "readings" else None,
            output_limit=settings.output_limit,
            memory_limit=w.memory_limit if w.memory_limit is not None else settings.memory_limit,
            pass_index=pass_index,
            counters=w.counters,
        )

    def _round_interrupted(self, name: str, round_index: int, what: str = "") -> None:
        self.commit()
        self.store.add_event(
            self.campaign.id,
            "round-interrupted",
            f"round {round_index} of {name} was interrupted{what} and will be redone on resume",
            {"workload": name, "round_index": round_index},
        )

    def _lost(
        self, name: str, round_index: int, outcome: RoundOutcome, hooks: list[NewHook], what: str
    ) -> bool:
        """Whether the round ``outcome`` of ``name`` was interrupted; then the records of
        the hooks that ran for it are stored (their output is kept) and the round is an
        event (redone on resume), not a round."""
        if not (outcome.status == "interrupted" or (self.interrupted and outcome.status != "ok")):
            return False
        for record in hooks:  # the prepare ran: its output is kept
            self.store.add_hook(record)
        self._round_interrupted(name, round_index, what)
        return True

    def launch(
        self,
        name: str,
        pass_index: int,
        *,
        work: int | None,
        warmup: bool,
        flags: str = "",
        cpus: tuple[int, ...] | None = None,
        extra_facts: Mapping[str, int | str] | None = None,
    ) -> RoundOutcome | None:
        """Run and store the next round of ``name``; None when it was interrupted (then it
        is not stored as a round but as an event, and is redone on resume). ``cpus``: pin
        it there instead of the workload CPUs (a duet's solo round); ``extra_facts``: added
        to the round's facts.

        The workload's ``setup`` runs first if it has not run in this ``benchrun run``, and
        its ``prepare`` before the round; both untimed, stored in the ``hook`` table. A
        failing setup or prepare is stored as a failed round that did not run (the hook's
        reason and output), and a failing setup also stops the workload.
        """
        st = self.states[name]
        round_index = st.launched
        argv = st.workload.render(round_index, work)
        before = self._before_round(name, pass_index, round_index, argv, work, warmup, flags)
        if not isinstance(before, list):
            return before
        hooks = before
        self.group.before_launch(name)
        spec = self.spec(name, argv, pass_index)
        if cpus is not None:
            spec = dataclasses.replace(spec, cpus=cpus)
        outcome = self.executor.launch(spec)
        if self._lost(name, round_index, outcome, hooks, ""):
            return None
        return self._store(
            name, outcome, pass_index, round_index, argv, work, warmup, flags, hooks, extra_facts
        )

    def launch_duet(
        self,
        names: tuple[str, str],
        pass_index: int,
        *,
        works: tuple[int | None, int | None],
        warmups: tuple[bool, bool],
        cpus: tuple[tuple[int, ...], tuple[int, ...]],
    ) -> tuple[RoundOutcome | None, RoundOutcome | None]:
        """Run the next rounds of both ``names`` at the same time, each pinned to its
        ``cpus`` (docs/duet.md), and store both with pass ``pass_index`` (the duet's id).

        Each side's setup and prepare run first, one after the other; a side whose hook
        failed is stored as a failed round that did not run and the other side runs alone
        (an ordinary round). A side that was interrupted is None (stored as an event, redone
        on resume), as in :meth:`launch`.
        """
        prepared: list[tuple[int, tuple[str, ...], list[NewHook]]] = []
        results: list[RoundOutcome | None] = [None, None]
        for i, name in enumerate(names):
            st = self.states[name]
            round_index = st.launched
            argv = st.workload.render(round_index, works[i])
            before = self._before_round(
                name, pass_index, round_index, argv, works[i], warmups[i], ""
            )
            if not isinstance(before, list):
                results[i] = before
                if before is None:  # interrupted: nothing more this pass
                    return results[0], results[1]
                continue
            prepared.append((i, argv, before))
        for i, _, _ in prepared:
            self.group.before_launch(names[i])
        if len(prepared) == 1:  # the other side could not run: this one runs alone
            i, argv, hooks = prepared[0]
            name = names[i]
            round_index = self.states[name].launched
            outcome = self.executor.launch(self.spec(name, argv))
            if self._lost(name, round_index, outcome, hooks, ""):
                return results[0], results[1]
            results[i] = self._store(
                name, outcome, pass_index, round_index, argv, works[i], warmups[i], "", hooks
            )
            return results[0], results[1]
        if not prepared:
            return results[0], results[1]
        specs = [
            dataclasses.replace(self.spec(names[i], argv), cpus=cpus[i]) for i, argv, _ in prepared
        ]
        outcomes = launch_duet(self.executor, specs[0], specs[1])
        for (i, argv, hooks), outcome in zip(prepared, outcomes, strict=True):
            name = names[i]
            round_index = self.states[name].launched
            if self._lost(name, round_index, outcome, hooks, " (in a duet)"):
                continue
            results[i] = self._store(
                name,
                outcome,
                pass_index,
                round_index,
                argv,
                works[i],
                warmups[i],
                "",
                hooks,
                extra_facts={"duet": pass_index, "duet_with": names[1 - i]},
            )
        return results[0], results[1]

    def _before_round(
        self,
        name: str,
        pass_index: int,
        round_index: int,
        argv: tuple[str, ...],
        work: int | None,
        warmup: bool,
        flags: str,
    ) -> list[NewHook] | RoundOutcome | None:
        """The workload's setup (once per ``benchrun run``) and prepare before a round: the
        prepare records to store with the round; the stored failed round when a hook
        failed (a failed setup also stops the workload); None when interrupted (stored as
        an event)."""
        before = self.hooks.before_round(name, pass_index, round_index, work)
        if isinstance(before, HookInterrupted):
            self._round_interrupted(name, round_index, f" during its {before.kind}")
            return None
        if isinstance(before, list):
            return before
        failed = self.hooks.failed(name, before, round_index)
        outcome = self._store(
            name, failed, pass_index, round_index, argv, work, warmup, flags, before.records
        )
        if before.kind == "setup":
            self.failures.setup_failed(name, what_failed(before.outcome))
        return outcome

    def _store(
        self,
        name: str,
        outcome: RoundOutcome,
        pass_index: int,
        round_index: int,
        argv: tuple[str, ...],
        work: int | None,
        warmup: bool,
        flags: str,
        hooks: list[NewHook],
        extra_facts: Mapping[str, int | str] | None = None,
    ) -> RoundOutcome:
        """Commit a round (with the hooks that ran for it), account for it, and apply the
        failure rules. ``extra_facts``: added to the round's facts (a duet's id and partner)."""
        settings = self.experiment.settings
        st = self.states[name]
        w = st.workload
        facts = self._facts(outcome, extra_facts)
        readings = round_readings(w, outcome)
        ok = outcome.status == "ok"
        stop = None
        if w.metric not in CONTENTION_FREE_METRICS:  # a count waiting does not change
            flags, outcome, stop = mark_contended(
                name, round_index, outcome, flags, warmup, settings
            )
        grouped = self.group.grouped(ok)
        if not grouped:
            self.commit()  # the rounds before it first, reported in order
        self.store.add_round(
            NewRound(
                campaign_id=self.campaign.id,
                workload_id=st.workload_id,
                seq=self.seq,
                pass_=pass_index,
                round_index=round_index,
                status=outcome.status,
                reason=outcome.reason,
                exit_code=outcome.exit_code,
                started_at=outcome.started_at,
                wall_ns=outcome.wall_ns,
                user_s=outcome.user_s,
                sys_s=outcome.sys_s,
                max_rss_kib=outcome.max_rss_kib,
                cpus=",".join(map(str, outcome.cpus)) if outcome.cpus else None,
                argv=argv,
                work=work,
                warmup=warmup,
                readings=readings,
                stdout_tail=outcome.stdout_tail if outcome.status != "ok" else None,
                stderr_tail=outcome.stderr_tail if outcome.status != "ok" else None,
                facts=facts,
                flags=flags,
                hooks=hooks,
                wait_ns=outcome.wait_ns,
                wait_source=outcome.wait_source,
                metrics=round_metrics(w, outcome),
            ),
            group=grouped,
        )
        self.seq += 1
        self.group.stored(name, outcome.wall_ns)
        st.record(ok, warmup, pass_index, readings, work, flags, outcome.wall_ns, outcome.node,
                  settings.contended)  # fmt: skip
        self.failures.stop_campaign(stop)
        value = metric_value(w, outcome) if ok else None
        if grouped:  # reported once committed
            self.group.report_later(name, outcome, value, warmup)
            return outcome
        self.display.round_done(name, outcome, value, warmup)
        if ok:
            return outcome
        self.failures.round_failed(name, round_index, outcome)
        return outcome

    def _facts(
        self, outcome: RoundOutcome, extra_facts: Mapping[str, int | str] | None
    ) -> Mapping[str, object] | None:
        """A round's facts: ``round_facts_fn(workload_cpus)``, ``extra_facts`` (a duet's id
        and partner), and where a round measured elsewhere ran (its node, its Slurm job)."""
        facts = self.round_facts_fn(self.workload_cpus) if self.round_facts_fn else None
        if extra_facts:
            facts = {**(facts or {}), **extra_facts}
        if outcome.node is not None:  # a round measured elsewhere: where (docs/slurm.md)
            facts = {**(facts or {}), "node": outcome.node}
            if "slurm_job" in outcome.extra:
                facts["slurm_job"] = outcome.extra["slurm_job"]
        return facts


def start_campaign(
    store: Store,
    experiment: Experiment,
    resume: bool,
    new: bool,
    metadata_fn: MetadataFn | None,
    resume_command: str | None = None,
) -> tuple[CampaignRow, dict[str, WorkloadState]]:
    """Open (or resume) the campaign, record metadata for a new one, rebuild bookkeeping."""
    campaign, resumed = open_campaign(store, experiment, resume, new, resume_command)
    if resumed:
        store.set_status(campaign.id, "running", "resumed")
        store.add_event(campaign.id, "resume", f"resumed by pid {os.getpid()}")
    elif metadata_fn is not None:
        store.set_metadata(campaign.id, metadata_fn())
    return campaign, load_states(store, campaign, experiment)


def finish_campaign(launcher: RoundLauncher, done_reason: str) -> CampaignOutcome:
    """Run the cleanups, store how the campaign ended and say which exit code and message go
    to the user: interrupted (128 + signal), fail_fast (1), workloads stopped by failures
    (1), done (0); a failed cleanup is a warning and changes none of these."""
    launcher.commit()
    warnings = tuple(launcher.cleanup_all())
    outcome = _finish(launcher, done_reason)
    return dataclasses.replace(outcome, warnings=warnings)


def _finish(launcher: RoundLauncher, done_reason: str) -> CampaignOutcome:
    store, experiment, campaign = launcher.store, launcher.experiment, launcher.campaign
    campaign_dir = experiment.campaign_dir
    resume_hint = launcher.resume_command
    if launcher.interrupts.signum is not None:
        signum = launcher.interrupts.signum
        sig = signal.Signals(signum).name
        store.set_status(campaign.id, "interrupted", f"{sig} received")
        return CampaignOutcome(
            campaign.id,
            experiment.db_path,
            "interrupted",
            128 + signum,
            f"interrupted ({sig}); every finished round is stored in {experiment.db_path}; "
            f"continue with: {resume_hint}",
        )
    if launcher.failure_stop:
        store.set_status(campaign.id, "failed", launcher.failure_stop)
        return CampaignOutcome(
            campaign.id, experiment.db_path, "failed", 1, f"stopped: {launcher.failure_stop}"
        )
    stopped = {n: st.stopped for n, st in launcher.states.items() if st.stopped}
    if stopped:
        reason = "; ".join(f"{n}: {r}" for n, r in stopped.items())
        store.set_status(campaign.id, "done", f"{done_reason}; but stopped early: {reason}")
        return CampaignOutcome(
            campaign.id,
            experiment.db_path,
            "done",
            1,
            f"{len(stopped)} workload(s) stopped early because of failures "
            f"({', '.join(stopped)}); `benchrun show {campaign_dir}` shows their output",
        )
    store.set_status(campaign.id, "done", done_reason)
    return CampaignOutcome(campaign.id, experiment.db_path, "done", 0, done_reason)


#: the machine's metadata record of a new campaign (runner/machine/metadata.py)
MetadataFn = Callable[[], Mapping[str, object]]
#: a round's facts of this machine from the CPUs it is pinned to (load, frequency)
RoundFactsFn = Callable[[tuple[int, ...] | None], Mapping[str, object] | None]


@dataclass(frozen=True)
class SessionOptions:
    """How :func:`campaign_session` opens a campaign: ``resume`` the unfinished one, or
    start a ``new`` one over it; ``metadata_fn()`` the machine snapshot of a new campaign;
    ``round_facts_fn(cpus)`` the facts of each round; ``workload_cpus`` where rounds are
    pinned; ``resume_command`` the command the messages suggest to continue (default
    :func:`default_resume_command`); ``on_start(store, campaign_id)`` called once the
    campaign is open."""

    resume: bool = False
    new: bool = False
    metadata_fn: MetadataFn | None = None
    round_facts_fn: RoundFactsFn | None = None
    workload_cpus: tuple[int, ...] | None = None
    resume_command: str | None = None
    on_start: Callable[[Store, int], None] | None = None


@contextmanager
def campaign_session(
    experiment: Experiment,
    executor: Executor,
    display: Display,
    options: SessionOptions,
) -> Iterator[RoundLauncher]:
    """Everything a campaign loop runs inside: the directory lock, the open store, the
    campaign (new, or resumed with its bookkeeping rebuilt), SIGINT/SIGTERM handling, and
    the :class:`RoundLauncher` that launches and commits rounds; ``options`` as
    :class:`SessionOptions` (``on_start`` is where ``benchrun run`` says whether the
    machine is loaded, docs/reservation.md, so that a refused start stays one line).
    Cleanups that :func:`finish_campaign` did not run (the loop raised) run on the way
    out, unrecorded."""
    metadata_fn = options.metadata_fn
    settings = experiment.settings
    with campaign_lock(experiment.campaign_dir), Store.create_or_open(experiment.db_path) as store:
        inflight = experiment.campaign_dir / INFLIGHT_FILE
        ended = end_leftovers(inflight)  # a run killed with SIGKILL left its round running
        if ended:
            display.message(ended)
        if isinstance(executor, LocalExecutor):
            executor.inflight_path = inflight
        counters = counter_sources(experiment, executor)  # one line if they cannot be counted
        if counters and metadata_fn is not None:
            metadata_fn = functools.partial(_with_counters, metadata_fn, counters)
        campaign, states = start_campaign(
            store, experiment, options.resume, options.new, metadata_fn, options.resume_command
        )
        if isinstance(executor, LocalExecutor):
            executor.inflight_campaign = campaign.id
        if isinstance(executor, (SlurmExecutor, FleetExecutor)):  # each node's record, once
            executor.on_node = functools.partial(store_node_metadata, store, campaign.id)
        if ended:
            store.add_event(campaign.id, "leftovers", ended, {})
        if options.on_start is not None:
            options.on_start(store, campaign.id)
        with _Interrupts(executor, settings.on_interrupt == "kill") as interrupts:
            launcher = RoundLauncher(
                store,
                campaign,
                experiment,
                executor,
                display,
                states,
                interrupts,
                round_facts_fn=options.round_facts_fn,
                workload_cpus=options.workload_cpus,
                resume_command=options.resume_command,
            )
            try:
                yield launcher
            finally:
                launcher.cleanup_all(record=False)  # only what finish_campaign did not run
                discard_spare(inflight)


def _with_counters(
    metadata_fn: Callable[[], Mapping[str, object]], counters: Mapping[str, Mapping[str, str]]
) -> dict[str, object]:
    """The machine snapshot of ``metadata_fn()`` with the campaign's counter metrics and
    their sources and scopes under ``"counters"``."""
    return {**metadata_fn(), "counters": counters}


def store_node_metadata(store: Store, campaign_id: int, node: str, record: Any) -> None:
    """Store ``node``'s metadata record as a ``node-metadata`` event, unless the campaign
    has one for that node already (a resumed campaign back on a node)."""
    for event in store.events(campaign_id):
        match event:
            case EventRow(kind="node-metadata", data={"node": stored}) if stored == node:
                return
    store.add_event(
        campaign_id, "node-metadata", f"metadata of node {node}", {"node": node, "record": record}
    )


def last_pass(states: dict[str, WorkloadState]) -> int:
    """The highest pass that holds a stored round (0 for a new campaign)."""
    return max((max(st.passes) for st in states.values() if st.passes), default=0)
