"""Fixed mode (``settings.adaptive: false``): ``settings.rounds`` steady rounds of every workload."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from benchrun.runner.campaign.budget import Budget, campaign_budget
from benchrun.runner.campaign.duets import duet_plan, finish_duet, run_pass
from benchrun.runner.campaign.scheduler import PassScheduler, pass_order
from benchrun.runner.campaign.session import (
    CampaignOutcome,
    Display,
    RoundLauncher,
    SessionOptions,
    campaign_session,
    finish_campaign,
    last_pass,
)
from benchrun.runner.config.experiment import Experiment
from benchrun.runner.execute.duet import DuetPlan
from benchrun.runner.execute.executor import Executor


def run_fixed(
    experiment: Experiment,
    executor: Executor,
    display: Display,
    options: SessionOptions,
) -> CampaignOutcome:
    """Run (or resume) a fixed-mode campaign: ``settings.rounds`` steady ok rounds each,
    or fewer when ``settings.max_time`` runs out first (checked before every round). A
    workload's ``cleanup`` runs as soon as it has its rounds, the others' when the
    campaign ends.

    ``options``: how the session opens (:class:`runner.campaign.session.SessionOptions`). Returns how it ended; never raises for
    a workload's failure (those are stored rounds).
    """
    settings = experiment.settings
    target = settings.warmup_rounds + settings.rounds
    # a workload that keeps failing now and then must still end: cap launches
    max_launches = 2 * target + settings.max_consecutive_failures
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
        states = launcher.states
        out_of_time: str | None = None
        cleanup_warnings: list[str] = []

        def needs_round(name: str) -> bool:
            st = states[name]
            if st.stopped:
                return False
            if st.launched >= max_launches and st.steady_ok < settings.rounds:
                # contended rounds left out of the analysis are replaced like failed ones
                left_out = f" ({st.contended} contended, left out)" if st.contended else ""
                launcher.stop_workload(
                    name,
                    f"only {st.steady_ok} of {settings.rounds} rounds succeeded in "
                    f"{st.launched} launches{left_out}",
                )
                display.message(f"{name}: stopped: {st.stopped}")
                return False
            return st.launched < settings.warmup_rounds or st.steady_ok < settings.rounds

        scheduler = PassScheduler(
            list(experiment.names),
            settings.order,
            settings.seed,
            needs_round,
            lambda name, p: p in states[name].passes,
            first_pass=last_pass(states),
        )
        display.start(
            launcher.campaign,
            {n: target for n in states},
            {n: st.launched for n, st in states.items()},
        )
        if settings.duet:
            try:
                with duet_plan(experiment, launcher, display) as plan:
                    assert plan is not None
                    out_of_time = _duet_passes(
                        experiment, launcher, plan, needs_round, budget, display, cleanup_warnings
                    )
            finally:
                launcher.commit()  # every round committed, then shown
                display.stop()
            ended = finish_campaign(
                launcher, out_of_time or f"{settings.rounds} rounds of every workload"
            )
            ended = finish_duet(launcher, ended)
            return dataclasses.replace(ended, warnings=(*cleanup_warnings, *ended.warnings))
        try:
            out_of_time = _passes(
                experiment, launcher, scheduler, needs_round, budget, display, cleanup_warnings
            )
        finally:
            launcher.commit()  # every round committed, then shown
            display.stop()
        ended = finish_campaign(
            launcher, out_of_time or f"{settings.rounds} rounds of every workload"
        )
        return dataclasses.replace(ended, warnings=(*cleanup_warnings, *ended.warnings))


def _passes(
    experiment: Experiment,
    launcher: RoundLauncher,
    scheduler: PassScheduler,
    needs_round: Callable[[str], bool],
    budget: Budget,
    display: Display,
    cleanup_warnings: list[str],
) -> str | None:
    """Launch the scheduler's rounds one by one until every workload has its rounds, the
    campaign is interrupted or stopped on failures, or the time budget runs out (the
    note then returned); a workload's cleanup runs after its last round."""
    settings = experiment.settings
    states = launcher.states
    out_of_time: str | None = None
    for pass_index, name in scheduler:
        launcher.before_pass(pass_index)
        if launcher.interrupted:
            break
        if budget.exhausted:
            done = sum(min(st.steady_ok, settings.rounds) for st in states.values())
            out_of_time = budget.note(
                f"{done} of {settings.rounds * len(states)} rounds; raise max_time or lower rounds"
            )
            display.message(out_of_time)
            break
        st = states[name]
        outcome = launcher.launch(
            name,
            pass_index,
            work=st.workload.work,
            warmup=st.launched < settings.warmup_rounds,
        )
        if outcome is None or launcher.failure_stop:
            break
        if not needs_round(name):  # its last round: clean up before the others go on
            cleanup_warnings.extend(w for w in [launcher.cleanup(name)] if w)
    return out_of_time


def _duet_passes(
    experiment: Experiment,
    launcher: RoundLauncher,
    plan: DuetPlan,
    needs_round: Callable[[str], bool],
    budget: Budget,
    display: Display,
    cleanup_warnings: list[str],
) -> str | None:
    """Fixed mode with ``settings.duet`` (docs/duet.md): passes until no workload needs a
    round, the pair launched as one duet in each; a resumed campaign starts a new pass.
    Returns the out-of-time note, if the budget ran out."""
    settings = experiment.settings
    states = launcher.states
    pair = experiment.duet_pair()
    assert pair is not None
    names = list(experiment.names)
    pass_index = last_pass(states) + 1 if any(st.passes for st in states.values()) else 0
    out_of_time: list[str] = []

    def stop() -> bool:
        if launcher.interrupted:
            return True
        if budget.exhausted:
            done = sum(min(st.steady_ok, settings.rounds) for st in states.values())
            out_of_time.append(
                budget.note(
                    f"{done} of {settings.rounds * len(states)} rounds; "
                    "raise max_time or lower rounds"
                )
            )
            display.message(out_of_time[0])
            return True
        return False

    def after(name: str) -> None:
        if not needs_round(name):  # its last round: clean up before the others go on
            cleanup_warnings.extend(w for w in [launcher.cleanup(name)] if w)

    while True:
        order = [
            n
            for n in pass_order(names, pass_index, settings.order, settings.seed)
            if needs_round(n)
        ]
        if not order:
            return None
        launcher.before_pass(pass_index)
        if stop():
            return out_of_time[0] if out_of_time else None
        go_on = run_pass(
            launcher,
            plan,
            pair,
            order,
            pass_index,
            work=lambda n: states[n].workload.work,
            warmup=lambda n: states[n].warmup_launched < settings.warmup_rounds,
            stop=lambda: bool(out_of_time) or stop(),
            after=after,
        )
        if not go_on or out_of_time or launcher.interrupted:
            return out_of_time[0] if out_of_time else None
        pass_index += 1
