"""Duet passes (``settings.duet``, docs/duet.md): the compared pair runs at the same time.

In a duet campaign each pass launches the two workloads of
:meth:`runner.config.experiment.Experiment.duet_pair` together through
:func:`runner.execute.duet.launch_duet`, each pinned to one of the two CPUs of the
:class:`runner.execute.duet.DuetPlan` (swapped every pass); both rounds are stored with
the pass's index, so the paired analysis (per-pass log ratios, runner/control/pairing.py)
reads a duet as a pass holding both rounds. Other workloads of the experiment (outside
the pair) run alone in the same pass, in its order.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from benchrun.runner.campaign.session import Display, RoundLauncher
from benchrun.runner.config.experiment import Experiment
from benchrun.runner.execute.duet import DuetPlan, duet_cpus, plan_duet
from benchrun.runner.execute.executor import RoundOutcome
from benchrun.runner.execute.pinning import PinPlan, pinned_runner


@contextmanager
def duet_plan(
    experiment: Experiment, launcher: RoundLauncher, display: Display
) -> Iterator[DuetPlan | None]:
    """The duet CPUs of the campaign (None without ``settings.duet``), stored as a
    ``duet-plan`` event; the runner is kept off both CPUs where the machine has a third,
    and the output says so once when it shares one."""
    if not experiment.settings.duet:
        yield None
        return
    # the runner may be pinned already (runner/commands/run.py): its CPUs and the
    # workload's are those the campaign may use
    allowed = set(os.sched_getaffinity(0)) | set(launcher.workload_cpus or ())
    plan = plan_duet(experiment.settings.pin, allowed=allowed)
    launcher.store.add_event(launcher.campaign.id, "duet-plan", plan.reason, plan.to_dict())
    display.message(plan.reason)
    if plan.shares:
        display.message(
            "duet: only two CPUs, so the runner shares a CPU with a workload; the CPUs swap "
            "every duet so neither side bears it alone (docs/duet.md: when duet pays)"
        )
    with pinned_runner(PinPlan(None, plan.runner_cpus, plan.reason)):
        yield plan


def run_pass(
    launcher: RoundLauncher,
    plan: DuetPlan,
    pair: tuple[str, str],
    order: list[str],
    pass_index: int,
    work: Callable[[str], int | None],
    warmup: Callable[[str], bool],
    stop: Callable[[], bool],
    after: Callable[[str], None] | None = None,
) -> bool:
    """Launch one pass over ``order`` (the workloads that get a round in it): the pair as
    one duet when both are in it (at the place of the first), each other workload alone.
    ``work(name)``/``warmup(name)``: the round's ``{work}`` and whether it is warm-up;
    ``stop()``: checked before each launch; ``after(name)``: called after each stored
    round. False when the campaign must end (interrupted, ``fail_fast``)."""
    both = pair[0] in order and pair[1] in order
    done: set[str] = set()
    for name in order:
        if name in done:
            continue
        if stop():
            return True
        if both and name in pair:
            outcomes = launcher.launch_duet(
                pair,
                pass_index,
                works=(work(pair[0]), work(pair[1])),
                warmups=(warmup(pair[0]), warmup(pair[1])),
                cpus=duet_cpus(plan, pass_index),
            )
            done.update(pair)
            if launcher.interrupted or launcher.failure_stop:
                return False
            for side, outcome in zip(pair, outcomes, strict=True):
                if outcome is not None:
                    _check_one_cpu(launcher, side, outcome)
                if outcome is not None and after is not None:
                    after(side)
            continue
        out = launcher.launch(name, pass_index, work=work(name), warmup=warmup(name))
        if out is None or launcher.failure_stop:
            return False
        if after is not None:
            after(name)
    return True


#: CPU time over wall time above which a side is taken to run on more than one CPU
MULTI_CPU_RATIO = 1.5


def _check_one_cpu(launcher: RoundLauncher, name: str, outcome: RoundOutcome) -> None:
    """Say once per campaign and workload when a duet side used more CPU time than wall
    time (user + sys > :data:`MULTI_CPU_RATIO` x wall, rounds of at least 10 ms): it runs on
    more than one CPU, so it takes the other side's CPU too and the duet's premise (one
    CPU each, symmetric interference) does not hold (docs/duet.md)."""
    wall = outcome.wall_ns / 1e9
    if outcome.status != "ok" or wall < 0.01:
        return
    ratio = (outcome.user_s + outcome.sys_s) / wall
    if ratio > MULTI_CPU_RATIO and name not in launcher.duet_multi_cpu:
        launcher.duet_multi_cpu.add(name)
        launcher.display.message(
            f"duet: {name} used {ratio:.1f}x its wall time in CPU time: it runs on more "
            "than one CPU, which duet assumes it does not; its duet ratios are not "
            "trustworthy (run this pair without duet: --set duet=false)"
        )
