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
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, Protocol

from benchrun.runner import __version__
from benchrun.runner.campaign.metrics import (
    CONTENTION_FREE_METRICS,
    counter_sources,
    metric_value,
    round_metrics,
)
from benchrun.runner.config.experiment import Experiment, Settings, Workload
from benchrun.runner.errors import UserError
from benchrun.runner.execute.containment import INFLIGHT_FILE, discard_spare, end_leftovers
from benchrun.runner.execute.contention import (
    CONTENDED_FLAG,
    add_flag,
    flagged_contended,
    is_contended,
    left_out_as_contended,
)
from benchrun.runner.execute.duet import launch_duet
from benchrun.runner.execute.executor import Executor, RoundOutcome, RoundSpec
from benchrun.runner.execute.fleet import FleetExecutor
from benchrun.runner.execute.local import LocalExecutor
from benchrun.runner.execute.slurm import SlurmExecutor
from benchrun.runner.format import format_percent, format_value
from benchrun.runner.machine.quiet import quiet_settings, wait_for_quiet
from benchrun.runner.safefs import cannot, open_dir, open_file
from benchrun.runner.store.database import CampaignRow, NewHook, NewRound, Store

#: flag of the rounds that calibrated a workload's ``{work}`` (stored, never analysed)
CALIBRATION_FLAG = "calibration"
#: flag of a round of a duet campaign's solo pass (docs/duet.md): stored as warm-up, so
#: no analysis but the asymmetry check (runner/campaign/duets.py) reads it
DUET_SOLO_FLAG = "duet-solo"
#: flag of a duet side's probe round: alone, on both duet CPUs, before its first duet
DUET_PROBE_FLAG = "duet-probe"
#: ok rounds are committed in groups: the open group is committed once its first round is
#: this many seconds old, and before a round that may take this long is launched
#: (docs/loop.md "Durability"); 0 commits every round on its own
GROUP_COMMIT_S = 0.05


def contended_stop(name: str, round_index: int, outcome: RoundOutcome, settings: Settings) -> str:
    """Why a campaign with ``contended: fail`` stops: the contended round, its wait and
    wall time, the share against ``contended_threshold`` (``settings``: the Settings)."""
    wait, wall = outcome.wait_ns or 0, outcome.wall_ns
    return (
        f"{name} round {round_index} was contended: it waited {format_value(wait / 1e9, 's')} "
        f"of its {format_value(wall / 1e9, 's')} for a CPU "
        f"({format_percent(wait / wall if wall else None, digits=2)} > contended_threshold "
        f"{format_percent(settings.contended_threshold, digits=2)}; {outcome.wait_source}) "
        "and contended: fail is set; quiet the machine or set contended: exclude"
    )


def mark_contended(
    name: str,
    round_index: int,
    outcome: RoundOutcome,
    flags: str,
    warmup: bool,
    settings: Settings,
) -> tuple[str, RoundOutcome, str | None]:
    """An ok round that waited for a CPU longer than ``settings.contended_threshold`` of its
    wall time (docs/contention.md): its ``flags`` with ``contended`` added, the outcome
    marked for the display, and why the campaign stops (``contended: fail``, a steady
    round); otherwise the three unchanged and None."""
    if not (
        outcome.status == "ok"
        and is_contended(outcome.wait_ns, outcome.wall_ns, settings.contended_threshold)
    ):
        return flags, outcome, None
    marked = dataclasses.replace(outcome, extra={**outcome.extra, CONTENDED_FLAG: True})
    stop = (
        contended_stop(name, round_index, outcome, settings)
        if settings.contended == "fail" and not warmup
        else None
    )
    return add_flag(flags, CONTENDED_FLAG), marked, stop


class Display(Protocol):
    """What the campaign tells the user while it runs (see runner/ui/display.py)."""

    def start(
        self, campaign: CampaignRow, targets: dict[str, int], done: dict[str, int]
    ) -> None: ...

    def round_done(
        self, workload: str, outcome: RoundOutcome, value: float | None, warmup: bool
    ) -> None: ...

    def message(self, text: str) -> None: ...

    def show_decision(self, decision: Any, eta_s: float | None) -> None: ...

    def stop(self) -> None: ...


@dataclass
class WorkloadState:
    """Bookkeeping of one workload during a campaign (rebuilt from the store on resume)."""

    workload: Workload
    workload_id: int
    launched: int = 0  # rounds stored (any status)
    steady_ok: int = 0  # ok rounds that are not warm-up
    failed: int = 0
    consecutive_failures: int = 0
    passes: set[int] = field(default_factory=set)
    stopped: str | None = None  # reason the workload was stopped early
    calibration: int = 0  # rounds launched to calibrate {work} (stored, flagged)
    warmup_launched: int = 0  # warm-up rounds stored (calibration, solo, probe excluded)
    solo: int = 0  # a duet campaign's solo-pass and probe rounds (stored, flagged)
    #: ok non-warm-up rounds flagged contended (docs/contention.md); with
    #: ``contended: exclude`` (or fail) they are not steady: not in the lists below
    contended: int = 0
    #: readings of every steady ok round, in launch order, and the work amount of each
    steady_readings: list[tuple[float, ...]] = field(default_factory=list)
    steady_work: list[int | None] = field(default_factory=list)
    steady_passes: list[int] = field(default_factory=list)  # pass of each steady ok round
    #: node of each steady ok round (None: this machine; docs/methods.md §14)
    steady_nodes: list[str | None] = field(default_factory=list)
    seconds: float = 0.0  # wall time of every stored round, s

    def record(
        self,
        ok: bool,
        warmup: bool,
        pass_index: int,
        readings: tuple[float, ...],
        work: int | None,
        flags: str,
        wall_ns: int,
        node: str | None = None,
        contended: str = "exclude",
    ) -> None:
        """Account for one stored round (as it happens, or when rebuilding on resume);
        ``node``: where it ran (None: this machine); ``contended``: the campaign's
        ``settings.contended`` (a round flagged contended is not steady unless ``keep``)."""
        self.launched += 1
        self.passes.add(pass_index)
        self.seconds += wall_ns / 1e9
        marks = flags.split(",")
        if CALIBRATION_FLAG in marks:
            self.calibration += 1
        elif DUET_SOLO_FLAG in marks or DUET_PROBE_FLAG in marks:
            self.solo += 1
        elif warmup:
            self.warmup_launched += 1
        if not ok:
            self.failed += 1
            self.consecutive_failures += 1
            return
        self.consecutive_failures = 0
        if not warmup and flagged_contended(flags):
            self.contended += 1
            if left_out_as_contended(flags, contended):
                return
        if not warmup:
            self.steady_ok += 1
            self.steady_readings.append(readings)
            self.steady_work.append(work)
            self.steady_passes.append(pass_index)
            self.steady_nodes.append(node)


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
        by_id[r.workload_id].record(
            r.status == "ok",
            r.warmup,
            r.pass_,
            r.readings,
            r.work,
            r.flags,
            r.wall_ns,
            (r.facts or {}).get("node"),
            experiment.settings.contended,
        )
    return states


class RoundLauncher:
    """Launches one round of a workload and commits it before anything else happens.

    Shared by the fixed and the adaptive loop: renders the argv (``{round}``, ``{work}``),
    builds the environment, launches through the executor, stores the round and its
    readings in one transaction, updates the workload's bookkeeping and applies the
    failure rules (``max_consecutive_failures`` stops a workload, ``fail_fast`` the
    campaign: :attr:`failure_stop`).
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
        round_facts_fn: Any = None,
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
        self.failure_stop: str | None = None
        self._guarded_pass: int | None = None
        #: the command that continues this campaign (printed when it is interrupted)
        self.resume_command = resume_command or default_resume_command(experiment)
        #: the group commit window, s (GROUP_COMMIT_S; 0: one commit per round)
        self.group_commit_s = GROUP_COMMIT_S
        #: the display calls of the rounds in the open group, made once it is committed
        self._unreported: list[tuple[str, RoundOutcome, float | None, bool]] = []
        #: wall time of each workload's last round in this run, ns
        self._last_wall: dict[str, int] = {}
        self._setup_done: set[str] = set()  # workloads whose setup ran in this run
        self._started: set[str] = set()  # workloads that launched something in this run
        self._cleaned: set[str] = set()  # workloads whose cleanup ran in this run

    def commit(self) -> None:
        """Commit the open group of rounds, then report them (the display): a round is
        never reported before it is committed. Called by the loops before they report
        anything else (a decision, status.json, the end of the campaign)."""
        self.store.commit_group()
        unreported, self._unreported = self._unreported, []
        for name, outcome, value, warmup in unreported:
            self.display.round_done(name, outcome, value, warmup)

    def _commit_before_launch(self, name: str) -> None:
        """Commit the open group before a round of ``name`` that may be long: the first
        of ``name`` in this run, or one after a round of GROUP_COMMIT_S or more, so that no
        group stays open while a long round runs."""
        if self.store.group_rounds and (
            self._last_wall.get(name, 1 << 62) >= self.group_commit_s * 1e9
        ):
            self.commit()

    def before_pass(self, pass_index: int) -> None:
        """Quiet-machine guard (``settings.quiet_load``, runner/machine/quiet.py): before the first
        round of each pass, wait until the 1-minute load average is below the threshold,
        at most ``quiet_max_wait`` seconds; a wait is stored as a "quiet-wait" event.
        Ctrl-C ends the wait at once."""
        settings = self.experiment.settings
        # the experiment's quiet_load, else the daemon-wide default (runner/machine/quiet.py)
        max_load, max_wait = quiet_settings(settings.quiet_load, settings.quiet_max_wait)
        if max_load is None or pass_index == self._guarded_pass:
            return
        self._guarded_pass = pass_index
        self.commit()  # no group stays open through a wait
        waited = wait_for_quiet(max_load, max_wait, should_stop=lambda: self.interrupted)
        if waited < 0.05 or self.interrupted:  # quiet at once: nothing worth recording
            return
        load = os.getloadavg()[0]
        quiet = load < max_load
        text = (
            f"waited {waited:.1f} s for the load average to fall below {max_load:g}"
            if quiet
            else f"load average still {load:.2f} after {waited:.1f} s (quiet_load "
            f"{max_load:g}); measuring anyway"
        )
        self.store.add_event(
            self.campaign.id,
            "quiet-wait",
            text,
            {"seconds": waited, "load": load, "quiet": quiet, "pass": pass_index},
        )
        self.display.message(text)

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

    def hook_spec(
        self, name: str, kind: str, argv: tuple[str, ...], pass_index: int | None = None
    ) -> RoundSpec:
        """What the executor needs to run ``argv`` as the ``kind`` hook of ``name``: the
        workload's environment, directory and CPUs, ``settings.hook_timeout`` (else the
        round's timeout), no readings, no memory limit."""
        settings = self.experiment.settings
        w = self.states[name].workload
        hook = w.hook(kind)
        assert hook is not None
        env = dict(self.base_env)
        env.update(w.env)
        timeout = settings.hook_timeout
        if timeout is None:
            timeout = w.timeout if w.timeout is not None else settings.timeout
        return RoundSpec(
            workload=name,
            argv=argv,
            env=env,
            timeout=timeout,
            shell=hook.shell,
            cwd=workload_cwd(self.experiment, w),
            cpus=self.workload_cpus,
            output_limit=settings.output_limit,
            hook=kind,
            pass_index=pass_index,
        )

    def run_hook(
        self,
        name: str,
        kind: str,
        round_index: int | None = None,
        work: int | None = None,
        pass_index: int | None = None,
    ) -> tuple[RoundOutcome, NewHook]:
        """Run the ``kind`` hook of ``name`` (its {round}/{work} filled for a prepare);
        what it did, and the record to store (the caller stores it)."""
        hook = self.states[name].workload.hook(kind)
        assert hook is not None
        argv = hook.render(round_index or 0, work)
        self.commit()  # a hook may take long: no group stays open while it runs
        outcome = self.executor.launch(self.hook_spec(name, kind, argv, pass_index))
        record = NewHook(
            campaign_id=self.campaign.id,
            workload_id=self.states[name].workload_id,
            kind=kind,
            round_index=round_index,
            status=outcome.status,
            reason=outcome.reason,
            exit_code=outcome.exit_code,
            started_at=outcome.started_at,
            wall_ns=outcome.wall_ns,
            argv=argv,
            stdout_tail=outcome.stdout_tail,
            stderr_tail=outcome.stderr_tail,
        )
        return outcome, record

    def _hook_interrupted(self, outcome: RoundOutcome) -> bool:
        return outcome.status == "interrupted" or (self.interrupted and outcome.status != "ok")

    def _round_interrupted(self, name: str, round_index: int, what: str = "") -> None:
        self.commit()
        self.store.add_event(
            self.campaign.id,
            "round-interrupted",
            f"round {round_index} of {name} was interrupted{what} and will be redone on resume",
            {"workload": name, "round_index": round_index},
        )

    def launch(
        self,
        name: str,
        pass_index: int,
        *,
        work: int | None,
        warmup: bool,
        flags: str = "",
        cpus: tuple[int, ...] | None = None,
        extra_facts: dict[str, Any] | None = None,
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
        self._commit_before_launch(name)
        spec = self.spec(name, argv, pass_index)
        if cpus is not None:
            spec = dataclasses.replace(spec, cpus=cpus)
        outcome = self.executor.launch(spec)
        if outcome.status == "interrupted" or (self.interrupted and outcome.status != "ok"):
            for record in hooks:  # the prepare ran: its output is kept
                self.store.add_hook(record)
            self._round_interrupted(name, round_index)
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
            self._commit_before_launch(names[i])
        if len(prepared) == 1:  # the other side could not run: this one runs alone
            i, argv, hooks = prepared[0]
            name = names[i]
            round_index = self.states[name].launched
            outcome = self.executor.launch(self.spec(name, argv))
            if outcome.status == "interrupted" or (self.interrupted and outcome.status != "ok"):
                for record in hooks:
                    self.store.add_hook(record)
                self._round_interrupted(name, round_index)
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
            if outcome.status == "interrupted" or (self.interrupted and outcome.status != "ok"):
                for record in hooks:
                    self.store.add_hook(record)
                self._round_interrupted(name, round_index, " (in a duet)")
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
        failed; None when interrupted (stored as an event)."""
        st = self.states[name]
        w = st.workload
        hooks: list[NewHook] = []
        for kind in ("setup", "prepare"):
            if kind == "prepare":
                self._started.add(name)  # past its setup: its cleanup runs from here on
            if w.hook(kind) is None or (kind == "setup" and name in self._setup_done):
                continue
            done, record = self.run_hook(
                name, kind, round_index if kind == "prepare" else None, work, pass_index
            )
            if self._hook_interrupted(done):
                self.store.add_hook(record)
                self._round_interrupted(name, round_index, f" during its {kind}")
                return None
            if done.status != "ok":
                return self._hook_failed(
                    name,
                    kind,
                    done,
                    [*hooks, record],
                    pass_index,
                    round_index,
                    argv,
                    work,
                    warmup,
                    flags,
                )
            if kind == "setup":
                self.store.add_hook(record)
                self._setup_done.add(name)
            else:
                hooks.append(record)
        return hooks

    def _hook_failed(
        self,
        name: str,
        kind: str,
        done: RoundOutcome,
        hooks: list[NewHook],
        pass_index: int,
        round_index: int,
        argv: tuple[str, ...],
        work: int | None,
        warmup: bool,
        flags: str,
    ) -> RoundOutcome:
        """Store the round that a failed setup/prepare kept from running, as a failed round
        with the hook's reason and output; a failed setup also stops the workload."""
        last = (done.stderr_tail or done.stdout_tail).strip().splitlines()
        said = f" ({last[-1].strip()[:200]})" if last else ""
        reason = f"{kind} failed: {done.reason}{said}; the round did not run"
        failed = RoundOutcome(
            status="failed",
            wall_ns=0,
            user_s=0.0,
            sys_s=0.0,
            max_rss_kib=0,
            exit_code=None,
            started_at=done.started_at,
            reason=reason,
            stdout_tail=done.stdout_tail,
            stderr_tail=done.stderr_tail,
        )
        self.store.add_event(
            self.campaign.id,
            "hook-failed",
            f"{name}: {reason}",
            {"workload": name, "kind": kind, "round_index": round_index},
        )
        outcome = self._store(
            name, failed, pass_index, round_index, argv, work, warmup, flags, hooks
        )
        if kind == "setup" and not self.failure_stop and not self.states[name].stopped:
            self.stop_workload(name, f"setup failed: {done.reason}{said}")
            self.display.message(
                f"{name}: stopped: its setup failed; see `benchrun show "
                f"{self.experiment.campaign_dir} --failures` for its output"
            )
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
        extra_facts: dict[str, Any] | None = None,
    ) -> RoundOutcome:
        """Commit a round (with the hooks that ran for it), account for it, and apply the
        failure rules. ``extra_facts``: added to the round's facts (a duet's id and partner)."""
        settings = self.experiment.settings
        st = self.states[name]
        w = st.workload
        facts = self.round_facts_fn(self.workload_cpus) if self.round_facts_fn else None
        if extra_facts:
            facts = {**(facts or {}), **extra_facts}
        if outcome.node is not None:  # a round measured elsewhere: where (docs/slurm.md)
            facts = {**(facts or {}), "node": outcome.node}
            if "slurm_job" in outcome.extra:
                facts["slurm_job"] = outcome.extra["slurm_job"]
        readings = round_readings(w, outcome)
        ok = outcome.status == "ok"
        stop = None
        if w.metric not in CONTENTION_FREE_METRICS:  # a count waiting does not change
            flags, outcome, stop = mark_contended(
                name, round_index, outcome, flags, warmup, settings
            )
        grouped = ok and self.group_commit_s > 0
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
        self._last_wall[name] = outcome.wall_ns
        st.record(ok, warmup, pass_index, readings, work, flags, outcome.wall_ns, outcome.node,
                  settings.contended)  # fmt: skip
        if stop and not self.failure_stop:
            self.failure_stop = stop
        value = metric_value(w, outcome) if ok else None
        if grouped:  # reported once committed
            self._unreported.append((name, outcome, value, warmup))
            if self.store.group_age() >= self.group_commit_s:
                self.commit()
            return outcome
        self.display.round_done(name, outcome, value, warmup)
        if ok:
            return outcome
        self.display.message(f"{name}: round {round_index} {outcome.status}: {outcome.reason}")
        if settings.fail_fast:
            self.failure_stop = (
                f"{name} round {round_index} {outcome.status} ({outcome.reason}) "
                "and fail_fast is set"
            )
        elif st.consecutive_failures >= settings.max_consecutive_failures:
            self.stop_workload(
                name, f"{st.consecutive_failures} failures in a row, last: {outcome.reason}"
            )
            self.display.message(
                f"{name}: stopped after {st.stopped}; see `benchrun show "
                f"{self.experiment.campaign_dir}` for its output"
            )
        return outcome

    def cleanup(self, name: str, record: bool = True) -> str | None:
        """Run the ``cleanup`` of ``name`` if it has one, its setup succeeded (or it has
        none) and it prepared or launched a round in this ``benchrun run``, and its cleanup
        has not run yet; stored unless ``record`` is false. Returns a warning when it
        failed (nothing measured is lost)."""
        w = self.states[name].workload
        if w.cleanup is None or name not in self._started or name in self._cleaned:
            return None
        self._cleaned.add(name)
        clear = getattr(self.executor, "clear_interrupt", None)
        if clear is not None:
            clear()  # a Ctrl-C that stopped the campaign must not stop its cleanup
        done, hook = self.run_hook(name, "cleanup")
        if record:
            self.store.add_hook(hook)
        if done.status == "ok":
            return None
        last = (done.stderr_tail or done.stdout_tail).strip().splitlines()
        said = f" ({last[-1].strip()[:200]})" if last else ""
        warning = (
            f"{name}: cleanup failed: {done.reason}{said}; every round is stored, nothing is lost"
        )
        if record:
            self.store.add_event(
                self.campaign.id, "hook-failed", warning, {"workload": name, "kind": "cleanup"}
            )
        self.display.message(warning)
        return warning

    def cleanup_all(self, record: bool = True) -> list[str]:
        """:meth:`cleanup` of every workload, in file order; the warnings of those that failed."""
        warnings = [self.cleanup(name, record) for name in self.states]
        return [w for w in warnings if w is not None]

    def stop_workload(self, name: str, reason: str) -> None:
        """Give up on a workload for good (stored, so a resume does not retry it)."""
        self.commit()
        st = self.states[name]
        st.stopped = reason
        self.store.set_workload_status(st.workload_id, "stopped", reason)
        self.store.add_event(self.campaign.id, "workload-stopped", f"{name}: {reason}")


def start_campaign(
    store: Store,
    experiment: Experiment,
    resume: bool,
    new: bool,
    metadata_fn: Any,
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


@contextmanager
def campaign_session(
    experiment: Experiment,
    executor: Executor,
    display: Display,
    *,
    resume: bool = False,
    new: bool = False,
    metadata_fn: Any = None,
    round_facts_fn: Any = None,
    workload_cpus: tuple[int, ...] | None = None,
    resume_command: str | None = None,
    on_start: Any = None,
) -> Iterator[RoundLauncher]:
    """Everything a campaign loop runs inside: the directory lock, the open store, the
    campaign (new, or resumed with its bookkeeping rebuilt), SIGINT/SIGTERM handling, and
    the :class:`RoundLauncher` that launches and commits rounds. ``metadata_fn()`` gives
    the machine snapshot of a new campaign; ``round_facts_fn(cpus)`` the facts of a round;
    ``resume_command`` the command that continues the campaign, for the messages that
    suggest it (default :func:`default_resume_command`); ``on_start(store, campaign_id)``
    is called once the campaign is open (``benchrun run`` says there whether the machine
    is loaded, docs/reservation.md), so that a refused start stays one line. Cleanups that
    :func:`finish_campaign` did not run (the loop raised) run on the way out, unrecorded."""
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
            store, experiment, resume, new, metadata_fn, resume_command
        )
        if isinstance(executor, LocalExecutor):
            executor.inflight_campaign = campaign.id
        if isinstance(executor, (SlurmExecutor, FleetExecutor)):  # each node's record, once
            executor.on_node = functools.partial(store_node_metadata, store, campaign.id)
        if ended:
            store.add_event(campaign.id, "leftovers", ended, {})
        if on_start is not None:
            on_start(store, campaign.id)
        with _Interrupts(executor, settings.on_interrupt == "kill") as interrupts:
            launcher = RoundLauncher(
                store,
                campaign,
                experiment,
                executor,
                display,
                states,
                interrupts,
                round_facts_fn=round_facts_fn,
                workload_cpus=workload_cpus,
                resume_command=resume_command,
            )
            try:
                yield launcher
            finally:
                launcher.cleanup_all(record=False)  # only what finish_campaign did not run
                discard_spare(inflight)


def _with_counters(metadata_fn: Any, counters: dict[str, Any]) -> dict[str, Any]:
    """The machine snapshot of ``metadata_fn()`` with the campaign's counter metrics and
    their sources and scopes under ``"counters"``."""
    return {**metadata_fn(), "counters": counters}


def store_node_metadata(store: Store, campaign_id: int, node: str, record: Any) -> None:
    """Store ``node``'s metadata record as a ``node-metadata`` event, unless the campaign
    has one for that node already (a resumed campaign back on a node)."""
    for event in store.events(campaign_id):
        if event.kind == "node-metadata" and (event.data or {}).get("node") == node:
            return
    store.add_event(
        campaign_id, "node-metadata", f"metadata of node {node}", {"node": node, "record": record}
    )


def last_pass(states: dict[str, WorkloadState]) -> int:
    """The highest pass that holds a stored round (0 for a new campaign)."""
    return max((max(st.passes) for st in states.values() if st.passes), default=0)


def workload_cwd(experiment: Experiment, w: Workload) -> str | None:
    """Where a workload runs: its ``cwd`` (relative to the experiment file's directory), or
    that directory itself, so that ``python3 bench.py`` finds the script beside the file."""
    base = experiment.source_path.parent if experiment.source_path else None
    if w.cwd is None:
        return str(base) if base else None
    cwd = Path(w.cwd)
    if not cwd.is_absolute() and base is not None:
        cwd = base / cwd
    return str(cwd)
