"""Adaptive mode of ``benchrun run``: calibrate, run passes, ask the controller, stop.

The loop and how a resume rebuilds it from the store: docs/controller.md "The loop". When
the controller is asked (after a pass whose rounds measured enough time to pay for the
analysis, or when something forces a decision: a look, a budget, a stopped workload) and
why the statistics are not imported before the first round: docs/loop.md.
"""

from __future__ import annotations

import shutil
import statistics
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from benchrun.runner.campaign.budget import Budget, campaign_budget
from benchrun.runner.campaign.calibrate import calibrate, target_round_time
from benchrun.runner.campaign.duets import duet_plan, finish_duet, run_pass
from benchrun.runner.campaign.livestatus import LiveStatus, LiveWorkload
from benchrun.runner.campaign.scheduler import pass_order
from benchrun.runner.campaign.session import (
    CALIBRATION_FLAG,
    CampaignOutcome,
    Display,
    RoundLauncher,
    SessionOptions,
    WorkloadState,
    campaign_session,
    finish_campaign,
    last_pass,
)
from benchrun.runner.config.experiment import Experiment
from benchrun.runner.errors import UserError
from benchrun.runner.execute.duet import DuetPlan
from benchrun.runner.execute.executor import Executor
from benchrun.runner.files import atomic_write_text
from benchrun.runner.importers.dataset import MAX_MAGNITUDE
from benchrun.runner.results.baseline import load_baseline
from benchrun.runner.store.database import CampaignRow, EventRow

if TYPE_CHECKING:  # the statistics (scipy) are imported at the first decision, not here
    from benchrun.runner.control.collector import WorkloadStats
    from benchrun.runner.control.controller import Controller, Decision
    from benchrun.runner.control.pairing import PassSeries

#: trivial rounds launched to measure the launch overhead
OVERHEAD_ROUNDS = 5
STATUS_FILE = "status.json"
#: status.json is rewritten at most this often (s), and when the campaign stops
STATUS_EVERY_S = 1.0
#: the controller is asked after a pass once the rounds since it was last asked measured
#: ANALYSIS_RATIO times the modelled cost of asking (collect + decide: ANALYSIS_WORKLOAD_S
#: per workload and ANALYSIS_READING_S per steady reading, measured on a loaded 2-core
#: machine), so the analysis takes about 1/ANALYSIS_RATIO of the measuring time or less,
#: and its total over a campaign grows linearly with the readings (docs/loop.md "When the
#: controller is asked"); a look, a budget or a stopped workload asks it at once. Passes
#: whose rounds measure more than that cost (about 20 ms a workload at the start) ask it
#: after every pass, as before.
ANALYSIS_RATIO = 20.0
ANALYSIS_WORKLOAD_S = 1e-3
ANALYSIS_READING_S = 1e-6


def uses_work(experiment: Experiment, name: str) -> bool:
    """Whether the workload's command has a ``{work}`` placeholder to calibrate."""
    w = next(w for w in experiment.workloads if w.name == name)
    return w.work is not None and any("{work}" in part for part in w.command)


#: a stored baseline result by workload: (mean, variance, n_q, q) (results/baseline.py)
Baseline = Mapping[str, tuple[float, float, int, int]]


def controller_for(
    experiment: Experiment, events: list[EventRow], baseline: Baseline | None
) -> Controller:
    """The stopping controller of ``experiment``, restored from the newest stored state.

    Workloads are ranked against each other only within one metric and unit (a wall time
    and a throughput are not neighbours), and with ``compare:`` only within their group
    (:meth:`runner.config.experiment.Experiment.comparison_group`); ``baseline`` maps names to stored
    summaries.
    """
    from benchrun.runner.control.controller import Controller, ControllerParams

    state = None
    for e in reversed(events):  # the newest event that holds the controller's state
        match e.data:
            case {"state": dict() as found}:
                state = found
                break
    params = ControllerParams.from_settings(experiment.settings)
    return Controller(
        params,
        [
            (w.name, w.direction, experiment.comparison_group(w.name) or f"alone:{w.name}")
            for w in experiment.workloads
        ],
        baseline=baseline,
        reference=experiment.settings.reference,
        state=state,
    )


def calibrated_works(events: list[EventRow]) -> dict[str, int]:
    """The ``{work}`` each workload was calibrated to, from the stored "calibrated" events
    (written by :meth:`_Adaptive.calibrate_all`: ``workload``, ``work``, ...; the newest
    wins); an event without a workload name and an integer work is skipped."""
    works: dict[str, int] = {}
    for e in events:
        if e.kind == "calibrated":
            match e.data:
                case {"workload": str(name), "work": int(work)}:
                    works[name] = work
    return works


def write_status(path: Path, status: LiveStatus) -> None:
    """Replace ``path`` with ``status`` as JSON atomically (write a temporary file, rename)."""
    try:
        atomic_write_text(path, status.to_json())
    except (OSError, ValueError):
        pass  # the live status is a convenience; the store holds the truth


def live_status(
    campaign: CampaignRow,
    decision: Decision,
    states: dict[str, WorkloadState],
    elapsed_s: float,
    eta_s: float | None,
) -> LiveStatus:
    """The live status of a running campaign (``status.json``; times in seconds)."""
    workloads = {}
    for name, w in decision.workloads.items():
        st = states[name]
        workloads[name] = LiveWorkload(
            rounds=st.launched,
            # the rounds analysed (issue 27): a single-reading series shorter than its
            # rounds lost rounds to the collector's warm-up cut (n >= rounds otherwise)
            steady=st.steady_ok - max(0, w.rounds - w.n),
            failed=st.failed,
            contended=st.contended,  # ok non-warm-up rounds flagged contended
            mean=w.mean,
            ci_low=w.ci_low,
            ci_high=w.ci_high,
            q=w.q,
            n_q=w.n_q,
            rel_half_width=w.rel_half_width,
            target=w.target,
            done=w.done,
            active=w.active,
            rounds_needed=w.rounds_needed,
            unmet=w.unmet,
            waiting_for=w.waiting_for,
            stopped=st.stopped,
        )
    return LiveStatus(
        campaign_id=campaign.id,
        name=campaign.name,
        updated_at=time.time(),
        elapsed_s=elapsed_s,
        eta_s=eta_s,
        stop=decision.stop,
        reason=decision.reason,
        workloads=workloads,
        undecided=tuple(f"{p.a}~{p.b}" for p in decision.pairs if p.verdict == "undecided"),
        pairs=decision.pairs,
        baselines=decision.baselines,
    )


def eta_seconds(
    decision: Decision,
    states: dict[str, WorkloadState],
    budget_left_s: float | None = None,
    max_rounds: int | None = None,
) -> float | None:
    """Estimated seconds to finish: rounds each workload still needs x its mean round time
    (rounds run one after another), each need at most what ``max_rounds`` leaves it (None:
    the cap does not hold, ``extend_rounds``), the total at most ``budget_left_s`` (what
    ``max_time`` leaves: the campaign stops there whatever it still needs). None while some
    active workload has no estimate."""
    total = 0.0
    for name in decision.active:
        w = decision.workloads[name]
        need = w.rounds_needed
        st = states[name]
        if need is None or st.launched == 0:
            return None
        if max_rounds is not None:
            need = min(need, max(0, max_rounds - w.rounds))
        total += need * st.seconds / st.launched
    return total if budget_left_s is None else min(total, max(0.0, budget_left_s))


#: how many of the latest estimates of the time left the shown one is the median of
ETA_WINDOW = 5


def steady_eta(history: list[float], raw: float | None, elapsed: float) -> float | None:
    """The time left to show: the median of the latest :data:`ETA_WINDOW` raw estimates,
    each counted down to now (``elapsed``, campaign seconds), so one pass whose rounds
    needed swing (a pair's estimate of the passes it needs moves with every look) does not
    swing the line between 2 and 35 minutes (issue 32). ``history`` holds (in place) the
    latest ``(estimate + elapsed)`` finishing times; None (no estimate, or stopped) clears
    it.
    """
    if raw is None:
        history.clear()
        return None
    history.append(raw + elapsed)
    del history[:-ETA_WINDOW]
    ends = sorted(history)
    mid = (
        ends[len(ends) // 2]
        if len(ends) % 2
        else (ends[len(ends) // 2 - 1] + ends[len(ends) // 2]) / 2
    )
    return max(0.0, mid - elapsed)


class _Adaptive:
    """One adaptive campaign in progress (state shared by the steps of :func:`run_adaptive`)."""

    def __init__(
        self,
        launcher: RoundLauncher,
        display: Display,
        executor: Executor,
        baseline: Baseline | None,
        budget: Budget,
    ) -> None:
        experiment, store, campaign = launcher.experiment, launcher.store, launcher.campaign
        states = launcher.states
        self.experiment = experiment
        self.settings = experiment.settings
        self.store = store
        self.campaign = campaign
        self.states = states
        self.launcher = launcher
        self.display = display
        self.executor = executor
        events = store.events(campaign.id)
        self._events = events
        self._baseline = baseline
        self._controller: Controller | None = None  # made at the first decision
        self.works = calibrated_works(events)
        overhead = [e.data for e in events if e.kind == "launch-overhead" and e.data]
        self.overhead_s: float | None = float(overhead[-1]["seconds"]) if overhead else None
        # the campaign's time across resumes, hooks, calibration and warm-up included
        self.budget = budget
        self.status_path = experiment.campaign_dir / STATUS_FILE
        self._status_at = -STATUS_EVERY_S  # monotonic time of the last status.json write
        self._etas: list[float] = []  # the latest estimates of the time left, s
        self._pairs: PassSeries | None = None
        self._paired_counts: dict[str, tuple[int, int]] = {}
        self._checked: dict[str, int] = {}  # steady rounds checked for huge readings
        self._huge: dict[str, float] = {}
        # what the last decision saw (when to ask the controller again: _due)
        self.decision: Decision | None = None
        self._seen_seconds = 0.0
        self._seen_stopped: frozenset[str] = frozenset()
        self._readings = 0  # steady readings so far, counted as rounds arrive
        self._counted: dict[str, int] = {}  # steady rounds counted into _readings
        #: the duet CPUs with settings.duet (docs/duet.md), set by run_adaptive
        self.duet: DuetPlan | None = None

    @property
    def controller(self) -> Controller:
        """The stopping controller (runner/control/controller.py), made when first asked."""
        if self._controller is None:
            self._controller = controller_for(self.experiment, self._events, self._baseline)
        return self._controller

    @property
    def pairs(self) -> PassSeries:
        """The per-pass values of every workload (runner/control/pairing.py)."""
        if self._pairs is None:
            from benchrun.runner.control.pairing import PassSeries

            self._pairs = PassSeries(
                {},
                confidence=self.settings.confidence,
                min_subsessions=self.settings.min_subsessions,
            )
        return self._pairs

    @property
    def elapsed_s(self) -> float:
        return self.budget.elapsed_s

    # ---------------------------------------------------------------- calibration
    def launch_overhead(self) -> float | None:
        """Median wall time (s) of a trivial round launched like the workloads (stored)."""
        if self.overhead_s is not None:
            return self.overhead_s
        true = shutil.which("true")
        if true is None:
            return None
        name = self.experiment.workloads[0].name
        times = []
        for _ in range(OVERHEAD_ROUNDS):
            out = self.executor.launch(self.launcher.spec(name, (true,)))
            if out.status != "ok":
                return None
            times.append(out.wall_ns / 1e9)
        self.overhead_s = statistics.median(times)
        self.store.add_event(
            self.campaign.id,
            "launch-overhead",
            f"launch overhead {self.overhead_s * 1e3:.3g} ms (median of {OVERHEAD_ROUNDS} "
            f"rounds of {true})",
            {"seconds": self.overhead_s, "rounds": times},
        )
        return self.overhead_s

    def calibrate_all(self) -> bool:
        """Calibrate ``{work}`` of every workload that needs it; False when interrupted."""
        if self.settings.min_round_time <= 0:
            return True
        todo = [
            w.name
            for w in self.experiment.workloads
            if uses_work(self.experiment, w.name)
            and w.name not in self.works
            and not self.states[w.name].stopped
        ]
        if not todo:
            return True
        overhead = self.launch_overhead() or 0.0
        target = target_round_time(self.settings.min_round_time, overhead)
        for name in todo:
            if self.launcher.interrupted:
                return False
            if self.budget.exhausted:
                self.display.message(self.budget.note(f"calibrating {name}"))
                return True
            st = self.states[name]
            start = max(
                [int(st.workload.work or 1)] + [int(w) for w in st.steady_work if w is not None]
            )

            def measure(work: int, name: str = name) -> float | None:
                out = self.launcher.launch(name, 0, work=work, warmup=True, flags=CALIBRATION_FLAG)
                if out is None or out.status != "ok":
                    return None
                return out.wall_ns / 1e9

            self.display.message(f"{name}: calibrating {{work}} to rounds of >= {target:.3g} s")
            result = calibrate(measure, start, target, out_of_time=lambda: self.budget.exhausted)
            if result is None:
                if self.launcher.interrupted:
                    return False
                if self.launcher.failure_stop:
                    return True
                if not st.stopped:
                    self.launcher.stop_workload(
                        name, "a calibration round failed; see `benchrun show --failures`"
                    )
                continue
            self.works[name] = result.work
            self.store.add_event(
                self.campaign.id,
                "calibrated",
                f"{name}: {result.note}",
                {
                    "workload": name,
                    "work": result.work,
                    "target_s": result.target_s,
                    "overhead_s": overhead,
                    "steps": [list(s) for s in result.steps],
                    "reached": result.reached,
                },
            )
            self.display.message(f"{name}: {result.note}")
        return True

    # ---------------------------------------------------------------- decisions
    def stats(self) -> dict[str, WorkloadStats | None]:
        from benchrun.runner.results.workloads import collect_workload

        s = self.settings
        out: dict[str, WorkloadStats | None] = {}
        for name, st in self.states.items():
            if self._huge_reading(name) is not None:
                out[name] = None  # stopped: its statistics would overflow
                continue
            out[name] = collect_workload(
                st.steady_readings,
                st.steady_work,
                per_work=st.workload.per_work,
                confidence=s.confidence,
                warmup_readings=s.warmup_readings,
                min_subsessions=s.min_subsessions,
                nodes=st.steady_nodes,
                direction=st.workload.direction,
            )
        return out

    def _huge_reading(self, name: str) -> float | None:
        """A steady reading of ``name`` beyond ``MAX_MAGNITUDE`` (whose powers overflow the
        statistics), checked once per reading; the first one found stops the workload."""
        st = self.states[name]
        if name not in self._huge:
            for values in st.steady_readings[self._checked.get(name, 0) :]:
                beyond = [v for v in values if not abs(v) <= MAX_MAGNITUDE]
                if beyond:
                    self._huge[name] = beyond[0]
                    break
            self._checked[name] = len(st.steady_readings)
        huge = self._huge.get(name)
        if huge is not None and not st.stopped:
            self.launcher.stop_workload(
                name,
                f"a reading of {huge:g} {st.workload.unit} is beyond ±{MAX_MAGNITUDE:g}, where "
                "the statistics overflow; have the workload print a larger unit",
            )
        return huge

    def pass_series(self, stats: dict[str, WorkloadStats | None]) -> PassSeries:
        """The per-pass values of every workload (runner/control/pairing.py), refreshed for the
        workloads that got rounds (or a new within-round warm-up cut) since the last call:
        only the new rounds' values are computed while the cut stays the same."""
        from benchrun.runner.control.pairing import round_values_by_pass

        pairs = self.pairs
        for name, st in self.states.items():
            s = stats.get(name)
            skip = s.warmup_readings // s.rounds if s is not None and s.rounds else 0
            count = len(st.steady_passes)
            before = self._paired_counts.get(name)
            if before == (count, skip):
                continue
            self._paired_counts[name] = (count, skip)
            per_work = st.workload.per_work
            if (
                before is not None
                and before[1] == skip
                and before[0] <= count
                and (not per_work or all(w for w in st.steady_work))
            ):
                start = before[0]
                pairs.add(
                    name,
                    round_values_by_pass(
                        st.steady_readings[start:],
                        st.steady_work[start:],
                        st.steady_passes[start:],
                        per_work,
                        skip,
                    ),
                )
                continue
            pairs.update(
                name,
                round_values_by_pass(
                    st.steady_readings, st.steady_work, st.steady_passes, per_work, skip
                ),
            )
        return pairs

    def decide(self) -> Decision:
        """Commit the rounds so far, collect, decide, store the events, tell the user,
        rewrite status.json (nothing is reported that is not committed)."""
        self.launcher.commit()
        retired = {n: st.stopped for n, st in self.states.items() if st.stopped}
        stats = self.stats()
        decision = self.controller.decide(
            stats,
            {n: st.steady_ok for n, st in self.states.items()},
            self.elapsed_s,
            retired=retired,
            pairs=self.pass_series(stats),
        )
        for e in decision.events:
            self.store.add_event(self.campaign.id, e.kind, e.message, e.data)
            if e.kind in ("pair-verdict", "pair-revised", "baseline-verdict", "workload-done"):
                self.display.message(e.message)
        left = self.budget.max_time_s - self.budget.elapsed_s
        cap = None if self.controller.params.extend_rounds else self.settings.max_rounds
        raw = None if decision.stop else eta_seconds(decision, self.states, left, cap)
        eta = steady_eta(self._etas, raw, elapsed=self.budget.elapsed_s)
        self.display.show_decision(decision, eta)
        now = time.monotonic()
        if decision.stop or now - self._status_at >= STATUS_EVERY_S:
            self._status_at = now
            write_status(
                self.status_path,
                live_status(self.campaign, decision, self.states, self.elapsed_s, eta),
            )
        self.decision = decision
        self._seen_seconds = sum(st.seconds for st in self.states.values())
        self._seen_stopped = self._stopped()
        return decision

    def _stopped(self) -> frozenset[str]:
        return frozenset(n for n, st in self.states.items() if st.stopped)

    def _due(self, active: tuple[str, ...]) -> bool:
        """Whether to ask the controller after this pass (module constants): always when
        nothing was decided yet, the budget is spent, a workload was stopped, an active
        workload reached ``max_rounds`` or the controller's next look is due; otherwise once
        the rounds since the last decision measured ANALYSIS_RATIO times its modelled cost."""
        d = self.decision
        if d is None or self.budget.exhausted or self._stopped() != self._seen_stopped:
            return True
        steady = {n: st.steady_ok for n, st in self.states.items()}
        if d.next_look_at is not None and max(steady.values(), default=0) >= d.next_look_at:
            return True
        if any(steady[n] >= self.settings.max_rounds for n in active if n in steady):
            return True
        for name, st in self.states.items():
            counted = self._counted.get(name, 0)
            if counted < len(st.steady_readings):
                self._readings += sum(len(r) for r in st.steady_readings[counted:])
                self._counted[name] = len(st.steady_readings)
        measured = sum(st.seconds for st in self.states.values()) - self._seen_seconds
        cost = ANALYSIS_WORKLOAD_S * len(self.states) + ANALYSIS_READING_S * self._readings
        return measured >= ANALYSIS_RATIO * cost

    def run(self) -> str:
        """Calibrate, then passes until the controller stops; returns the stop reason."""
        if not self.calibrate_all():
            return "interrupted during calibration"
        pass_index = last_pass(self.states) + 1
        names = [w.name for w in self.experiment.workloads]
        # without a steady round yet, the first decision can only say "every workload": the
        # first pass runs before it (the controller and scipy are imported after that pass)
        active: tuple[str, ...] | None = None
        undecided_pass = all(st.steady_ok == 0 for st in self.states.values())
        if undecided_pass:
            active = tuple(names)
        while not (self.launcher.interrupted or self.launcher.failure_stop):
            decided = not undecided_pass and (active is None or self._due(active))
            undecided_pass = False
            if decided:
                decision = self.decide()
                active = decision.active
            if decided and decision.stop:
                from benchrun.runner.results.workloads import VERDICTS_EVENT

                d = decision.to_dict()
                self.store.add_event(
                    self.campaign.id,
                    VERDICTS_EVENT,
                    decision.reason,
                    {
                        "pairs": d["pairs"],
                        "baselines": d["baselines"],
                        "reason": d["reason"],
                        "conditions_met": decision.met,
                        "units": {w.name: w.unit for w in self.experiment.workloads},
                        "directions": {w.name: w.direction for w in self.experiment.workloads},
                        "margin": self.settings.margin,
                        "alpha": self.settings.alpha,
                        "confidence": self.settings.confidence,
                    },
                )
                return decision.reason
            assert active is not None
            order = [
                n
                for n in pass_order(names, pass_index, self.settings.order, self.settings.seed)
                if n in active and not self.states[n].stopped
            ]
            if not order:
                if decided:  # cannot happen: the controller never lists retired workloads
                    return decision.reason
                active = None  # every workload of the last decision stopped: ask again
                continue
            self.launcher.before_pass(pass_index)
            if self.duet is not None:
                pair = self.experiment.duet_pair()
                assert pair is not None
                run_pass(
                    self.launcher,
                    self.duet,
                    pair,
                    order,
                    pass_index,
                    work=lambda n: self.works.get(n, self.states[n].workload.work),
                    warmup=lambda n: self.states[n].warmup_launched < self.settings.warmup_rounds,
                    stop=lambda: self.launcher.interrupted or self.budget.exhausted,
                )
                pass_index += 1
                continue
            for name in order:
                if self.launcher.interrupted or self.budget.exhausted:
                    break
                st = self.states[name]
                out = self.launcher.launch(
                    name,
                    pass_index,
                    work=self.works.get(name, st.workload.work),
                    warmup=st.warmup_launched < self.settings.warmup_rounds,
                )
                if out is None or self.launcher.failure_stop:
                    break
            pass_index += 1
        return "stopped before the stopping rule was met"


def run_adaptive(
    experiment: Experiment,
    executor: Executor,
    display: Display,
    options: SessionOptions,
) -> CampaignOutcome:
    """Run (or resume) an adaptive campaign (module docstring); ``options`` as
    :func:`runner.campaign.session.campaign_session`. Never raises for a workload's failure."""
    settings = experiment.settings
    baseline = None
    if settings.baseline is not None:
        stored = load_baseline(settings.baseline)
        baseline = {n: r.as_tuple() for n, r in stored.items() if n in experiment.names}
        if not baseline:
            raise UserError(
                f"settings.baseline: {settings.baseline} has no usable result for any workload "
                f"of this experiment (names: {', '.join(experiment.names)}; a usable result "
                "has a CI of its own, at least 2 subsession means); a campaign directory "
                "gives its newest campaign: for an earlier one, `benchrun export DIR "
                "--campaign ID -o old.json` and give old.json"
            )
    with (
        campaign_session(experiment, executor, display, options) as launcher,
        # the campaign's time across resumes: earlier runs' spans plus this run's (budget.py)
        campaign_budget(
            launcher.store,
            launcher.campaign.id,
            settings.max_time,
            sum(st.seconds for st in launcher.states.values()),
        ) as budget,
    ):
        store, campaign, states = launcher.store, launcher.campaign, launcher.states
        if baseline is not None and not options.resume:
            store.add_event(
                campaign.id,
                "baseline",
                f"compared with {settings.baseline} ({len(baseline)} workloads)",
                {"path": settings.baseline, "results": {n: list(v) for n, v in baseline.items()}},
            )
        loop = _Adaptive(launcher, display, executor, baseline, budget)
        display.start(
            campaign,
            {n: settings.warmup_rounds + settings.min_rounds for n in states},
            {n: st.launched for n, st in states.items()},
        )
        try:
            with duet_plan(experiment, launcher, display) as plan:
                loop.duet = plan
                reason = loop.run()
        finally:
            launcher.commit()  # every round committed, then shown
            display.stop()
        return finish_duet(launcher, finish_campaign(launcher, reason))
