"""A workload's hooks in a campaign: ``setup``, ``prepare`` and ``cleanup`` (docs/hooks.md).

The ``setup`` runs once per ``benchrun run`` before the workload's first round, the
``prepare`` before each round (its ``{round}``/``{work}`` filled), the ``cleanup`` at the
end of the run for a workload that got past its setup; all are launched through the
executor, untimed, and stored in the ``hook`` table. A failing setup or prepare keeps its
round from running: the launcher stores that round as failed, with the text
:func:`failed_round` gives it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from benchrun.runner.campaign.workload_state import Display, WorkloadState
from benchrun.runner.config.experiment import Experiment, Workload
from benchrun.runner.execute.executor import Executor, RoundOutcome, RoundSpec
from benchrun.runner.store.database import NewHook, Store


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


def what_failed(done: RoundOutcome) -> str:
    """A failed hook in a few words: its reason and the last line of its output (stderr,
    else stdout; at most 200 characters) in parentheses."""
    last = (done.stderr_tail or done.stdout_tail).strip().splitlines()
    said = f" ({last[-1].strip()[:200]})" if last else ""
    return f"{done.reason}{said}"


def failed_round(kind: str, done: RoundOutcome) -> RoundOutcome:
    """The round that a failed ``kind`` hook (``done``: what it did) kept from running: a
    failed round of no duration with the hook's reason and output."""
    return RoundOutcome(
        status="failed",
        wall_ns=0,
        user_s=0.0,
        sys_s=0.0,
        max_rss_kib=0,
        exit_code=None,
        started_at=done.started_at,
        reason=f"{kind} failed: {what_failed(done)}; the round did not run",
        stdout_tail=done.stdout_tail,
        stderr_tail=done.stderr_tail,
    )


@dataclass(frozen=True)
class HookFailed:
    """A ``setup`` or ``prepare`` (``kind``) that failed before a round: what it did
    (``outcome``), and the hook records to store with the round that did not run."""

    kind: str
    outcome: RoundOutcome
    records: list[NewHook]


@dataclass(frozen=True)
class HookInterrupted:
    """A ``setup`` or ``prepare`` (``kind``) that was interrupted (its record is stored)."""

    kind: str


class HookRunner:
    """Runs the hooks of a campaign's workloads and remembers, for this ``benchrun run``,
    whose setup ran, who got past it (their cleanup runs) and whose cleanup ran.

    ``base_env``: the environment of every round (the runner's, with ``settings.env``);
    ``commit``: commits the open group of rounds (a hook may take long: no group stays
    open while it runs); ``interrupted``: whether SIGINT/SIGTERM was received."""

    def __init__(
        self,
        store: Store,
        campaign_id: int,
        experiment: Experiment,
        executor: Executor,
        display: Display,
        states: dict[str, WorkloadState],
        *,
        base_env: dict[str, str],
        workload_cpus: tuple[int, ...] | None,
        commit: Callable[[], None],
        interrupted: Callable[[], bool],
    ) -> None:
        self.store = store
        self.campaign_id = campaign_id
        self.experiment = experiment
        self.executor = executor
        self.display = display
        self.states = states
        self.base_env = base_env
        self.workload_cpus = workload_cpus
        self.commit = commit
        self.interrupted = interrupted
        self.setup_done: set[str] = set()  # workloads whose setup ran in this run
        self.started: set[str] = set()  # workloads that launched something in this run
        self.cleaned: set[str] = set()  # workloads whose cleanup ran in this run

    def spec(
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

    def run(
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
        outcome = self.executor.launch(self.spec(name, kind, argv, pass_index))
        record = NewHook(
            campaign_id=self.campaign_id,
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
        return outcome.status == "interrupted" or (self.interrupted() and outcome.status != "ok")

    def before_round(
        self, name: str, pass_index: int, round_index: int, work: int | None
    ) -> list[NewHook] | HookFailed | HookInterrupted:
        """The workload's setup (once per ``benchrun run``) and prepare before round
        ``round_index`` of ``name``: the prepare records to store with the round; the
        failed hook (the caller stores the round it kept from running); the interrupted
        one (its record stored; the caller stores the event)."""
        st = self.states[name]
        w = st.workload
        hooks: list[NewHook] = []
        for kind in ("setup", "prepare"):
            if kind == "prepare":
                self.started.add(name)  # past its setup: its cleanup runs from here on
            if w.hook(kind) is None or (kind == "setup" and name in self.setup_done):
                continue
            done, record = self.run(
                name, kind, round_index if kind == "prepare" else None, work, pass_index
            )
            if self._hook_interrupted(done):
                self.store.add_hook(record)
                return HookInterrupted(kind)
            if done.status != "ok":
                return HookFailed(kind, done, [*hooks, record])
            if kind == "setup":
                self.store.add_hook(record)
                self.setup_done.add(name)
            else:
                hooks.append(record)
        return hooks

    def failed(self, name: str, failed: HookFailed, round_index: int) -> RoundOutcome:
        """The round of ``name`` that the ``failed`` hook kept from running
        (:func:`failed_round`), with a ``hook-failed`` event stored."""
        outcome = failed_round(failed.kind, failed.outcome)
        self.store.add_event(
            self.campaign_id,
            "hook-failed",
            f"{name}: {outcome.reason}",
            {"workload": name, "kind": failed.kind, "round_index": round_index},
        )
        return outcome

    def cleanup(self, name: str, record: bool = True) -> str | None:
        """Run the ``cleanup`` of ``name`` if it has one, its setup succeeded (or it has
        none) and it prepared or launched a round in this ``benchrun run``, and its cleanup
        has not run yet; stored unless ``record`` is false. Returns a warning when it
        failed (nothing measured is lost)."""
        w = self.states[name].workload
        if w.cleanup is None or name not in self.started or name in self.cleaned:
            return None
        self.cleaned.add(name)
        clear = getattr(self.executor, "clear_interrupt", None)
        if clear is not None:
            clear()  # a Ctrl-C that stopped the campaign must not stop its cleanup
        done, hook = self.run(name, "cleanup")
        if record:
            self.store.add_hook(hook)
        if done.status == "ok":
            return None
        warning = (
            f"{name}: cleanup failed: {what_failed(done)}; every round is stored, nothing is lost"
        )
        if record:
            self.store.add_event(
                self.campaign_id, "hook-failed", warning, {"workload": name, "kind": "cleanup"}
            )
        self.display.message(warning)
        return warning

    def cleanup_all(self, record: bool = True) -> list[str]:
        """:meth:`cleanup` of every workload, in file order; the warnings of those that failed."""
        warnings = [self.cleanup(name, record) for name in self.states]
        return [w for w in warnings if w is not None]
