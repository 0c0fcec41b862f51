"""Duet passes (``settings.duet``, docs/duet.md): the compared pair runs at the same time.

In a duet campaign each pass launches the two workloads of
:meth:`runner.config.experiment.Experiment.duet_pair` together through
:func:`runner.execute.duet.launch_duet`, each pinned to one of the two CPUs of the
:class:`runner.execute.duet.DuetPlan` (swapped every pass); both rounds are stored with
the pass's index, so the paired analysis (per-pass log ratios, runner/control/pairing.py)
reads a duet as a pass holding both rounds. Other workloads of the experiment (outside
the pair) run alone in the same pass, in its order.

Every ``solo_every``-th pass after warm-up is a *solo pass*: the two sides run alone, one
after the other, each on its CPU of that pass; their rounds are stored flagged
``duet-solo`` (as warm-up, so no analysis but the asymmetry check reads them). When the
campaign ends, :func:`finish_duet` compares the duets' ratio with the solo passes'
(runner/control/duet_asymmetry.py), stores the result as a ``duet-asymmetry`` event, and
with ``asymmetry: refuse`` refuses the duet verdict of an asymmetric pair. A side that
uses more than one CPU stops the campaign unless ``force`` is set: before its first duet
of a run each side runs once alone on both duet CPUs (a *probe* round, flagged
``duet-probe``, stored as warm-up), where a multi-threaded side shows its CPU time above
its wall time; after every duet, a side that escaped its one CPU shows the same.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from benchrun.runner.campaign.session import (
    CALIBRATION_FLAG,
    DUET_PROBE_FLAG,
    DUET_SOLO_FLAG,
    CampaignOutcome,
    Display,
    RoundLauncher,
)
from benchrun.runner.config.experiment import DuetSpec, Experiment, Workload
from benchrun.runner.control.duet_asymmetry import (
    ASYMMETRY_EVENT,
    MULTI_CPU_EVENT,
    Asymmetry,
    duet_asymmetry,
)
from benchrun.runner.execute.contention import left_out_as_contended
from benchrun.runner.execute.duet import DuetPlan, duet_cpus, plan_duet
from benchrun.runner.execute.executor import RoundOutcome
from benchrun.runner.execute.pinning import PinPlan, pinned_runner
from benchrun.runner.store.database import RoundRow


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


def is_solo_pass(spec: DuetSpec, pass_index: int) -> bool:
    """Whether pass ``pass_index`` is a solo pass of the pair (passes ``k-1``, ``2k-1``, ...
    for ``solo_every`` = k; none for 0), warm-up aside (:func:`run_pass` checks that)."""
    k = spec.solo_every
    return k > 0 and pass_index % k == k - 1


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
    one duet when both are in it (at the place of the first), each other workload alone;
    in a solo pass (:func:`is_solo_pass`, both sides past warm-up) the pair's sides alone,
    one after the other, each on its CPU of the pass.
    ``work(name)``/``warmup(name)``: the round's ``{work}`` and whether it is warm-up;
    ``stop()``: checked before each launch; ``after(name)``: called after each stored
    round. False when the campaign must end (interrupted, ``fail_fast``, a side on more
    than one CPU without ``force``)."""
    spec = launcher.experiment.settings.duet or DuetSpec()
    both = pair[0] in order and pair[1] in order
    cpus = duet_cpus(plan, pass_index, spec.cpus, launcher.experiment.settings.seed)
    solo = both and is_solo_pass(spec, pass_index) and not warmup(pair[0]) and not warmup(pair[1])
    done: set[str] = set()
    for name in order:
        if name in done:
            continue
        if stop():
            return True
        if solo and name in pair:
            out = launcher.launch(
                name,
                pass_index,
                work=work(name),
                warmup=True,
                flags=DUET_SOLO_FLAG,
                cpus=cpus[pair.index(name)],
                extra_facts={"duet_solo": pass_index},
            )
            if out is None or launcher.failure_stop:
                return False
            if after is not None:
                after(name)
            continue
        if both and name in pair:
            if not _probe(launcher, pair, cpus, pass_index, work, spec):
                return False
            outcomes = launcher.launch_duet(
                pair,
                pass_index,
                works=(work(pair[0]), work(pair[1])),
                warmups=(warmup(pair[0]), warmup(pair[1])),
                cpus=cpus,
            )
            done.update(pair)
            if launcher.interrupted or launcher.failure_stop:
                return False
            for side, outcome in zip(pair, outcomes, strict=True):
                if outcome is not None and not _check_one_cpu(
                    launcher, side, outcome, spec, pass_index
                ):
                    return False
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
#: shortest round (s) whose CPU time is compared with its wall time
MULTI_CPU_MIN_WALL_S = 0.01


def _probe(
    launcher: RoundLauncher,
    pair: tuple[str, str],
    cpus: tuple[tuple[int, ...], tuple[int, ...]],
    pass_index: int,
    work: Callable[[str], int | None],
    spec: DuetSpec,
) -> bool:
    """Each side not probed yet in this run gets one round alone on both duet CPUs (the
    union of ``cpus``), stored as warm-up flagged ``duet-probe``, and is checked by
    :func:`_check_one_cpu`: a multi-threaded side that respects its pin runs on one CPU in
    a duet and is not seen there, but given two it uses them. False when the campaign
    must end (interrupted, a failure stop, a side on more than one CPU without force)."""
    both_cpus = tuple(sorted(set(cpus[0]) | set(cpus[1])))
    for side in pair:
        if side in launcher.duet_probed:
            continue
        launcher.duet_probed.add(side)
        out = launcher.launch(
            side,
            pass_index,
            work=work(side),
            warmup=True,
            flags=DUET_PROBE_FLAG,
            cpus=both_cpus,
            extra_facts={"duet_probe": pass_index},
        )
        if out is None or launcher.failure_stop:
            return False
        if not _check_one_cpu(launcher, side, out, spec, pass_index, probe=True):
            return False
    return True


def _check_one_cpu(
    launcher: RoundLauncher,
    name: str,
    outcome: RoundOutcome,
    spec: DuetSpec,
    duet: int,
    *,
    probe: bool = False,
) -> bool:
    """Whether the campaign may go on after ``name``'s round in duet ``duet``.

    A side whose CPU time (user + sys) exceeds :data:`MULTI_CPU_RATIO` times its wall time
    (ok rounds of at least :data:`MULTI_CPU_MIN_WALL_S`) ran on more than one CPU although
    it was pinned to one (it set its own affinity): it takes the other side's CPU, so the
    duet's premise (one CPU each, symmetric interference) fails. Without ``force`` that
    stops the campaign (:attr:`RoundLauncher.failure_stop`, the rounds so far kept, a
    ``duet-multi-cpu`` event); with it, the output says so once per side. ``probe``: the
    round was the side's probe (:func:`_probe`, alone on both duet CPUs, before duet
    ``duet``)."""
    wall = outcome.wall_ns / 1e9
    if outcome.status != "ok" or wall < MULTI_CPU_MIN_WALL_S:
        return True
    cpu = outcome.user_s + outcome.sys_s
    ratio = cpu / wall
    if ratio <= MULTI_CPU_RATIO:
        return True
    where = f"alone on two CPUs before duet {duet}" if probe else f"in duet {duet}"
    said = (
        f"duet: {name} used {ratio:.1f} CPUs {where} ({cpu:.3g} s of CPU time in "
        f"{wall:.3g} s of wall time), but a duet gives each side one CPU"
    )
    if spec.force:
        if name not in launcher.duet_multi_cpu:
            launcher.duet_multi_cpu.add(name)
            launcher.display.message(
                f"{said}; its duet ratios are not trustworthy (going on: duet force is set)"
            )
        return True
    launcher.store.add_event(
        launcher.campaign.id,
        MULTI_CPU_EVENT,
        said,
        {
            "workload": name,
            "duet": duet,
            "probe": probe,
            "cpus_used": ratio,
            "cpu_s": cpu,
            "wall_s": wall,
        },
    )
    launcher.failure_stop = (
        f"{said}; run this pair without duet (--set duet=false), or set duet: "
        "{force: true} to run it anyway"
    )
    return False


def pair_values(
    rounds: Sequence[RoundRow], workload_id: int, workload: Workload, contended: str = "exclude"
) -> tuple[dict[int, float], dict[int, float]]:
    """Pass -> value of workload ``workload_id``'s ok rounds, for its duets (steady rounds
    with a ``duet`` fact) and for its solo passes (flagged ``duet-solo``); ``rounds`` are
    the store's rows, ``workload`` the experiment's :class:`Workload`; rounds left out as
    contended under ``contended`` (the setting) are left out here too."""
    # the pairing (and with it scipy) only at the campaign's end: docs/loop.md, Startup
    from benchrun.runner.control.pairing import round_values_by_pass

    duet: list[RoundRow] = []
    solo: list[RoundRow] = []
    for r in rounds:
        if r.workload_id != workload_id or r.status != "ok":
            continue
        if left_out_as_contended(r.flags, contended):
            continue
        marks = r.flags.split(",")
        if DUET_SOLO_FLAG in marks:
            solo.append(r)
        elif not r.warmup and CALIBRATION_FLAG not in marks and "duet" in (r.facts or {}):
            duet.append(r)
    per_work = bool(workload.per_work)

    def values(rows: list[RoundRow]) -> dict[int, float]:
        return round_values_by_pass(
            [r.readings for r in rows], [r.work for r in rows], [r.pass_ for r in rows], per_work
        )

    return values(duet), values(solo)


def check_asymmetry(launcher: RoundLauncher, pair: tuple[str, str]) -> Asymmetry | None:
    """The asymmetry check over the campaign's stored rounds (None: too few duets or
    solo passes, under two of either)."""
    store, campaign = launcher.store, launcher.campaign
    rounds = store.rounds(campaign.id)
    policy = launcher.experiment.settings.contended
    a_duet, a_solo = pair_values(
        rounds, launcher.states[pair[0]].workload_id, launcher.states[pair[0]].workload, policy
    )
    b_duet, b_solo = pair_values(
        rounds, launcher.states[pair[1]].workload_id, launcher.states[pair[1]].workload, policy
    )
    return duet_asymmetry(
        a_duet, b_duet, a_solo, b_solo, confidence=launcher.experiment.settings.confidence
    )


def asymmetry_words(pair: tuple[str, str], check: Asymmetry) -> str:
    """One line saying what the asymmetry check found (the output, show, the report)."""
    a, b = pair
    head = (
        f"{b}/{a} in duet {check.duet_ratio:.4g}, alone {check.solo_ratio:.4g}: asymmetry "
        f"{check.asymmetry:.4g} [{check.low:.4g}, {check.high:.4g}] ({check.n_duet} duets, "
        f"{check.n_solo} solo passes; {a} {check.slowdown_a:.3g}x slower in a duet, "
        f"{b} {check.slowdown_b:.3g}x)"
    )
    if check.flagged:
        return (
            f"{head}: the pair interferes asymmetrically, so the duet ratio is off by that "
            "factor (docs/duet.md)"
        )
    return f"{head}: no asymmetric interference found"


def finish_duet(launcher: RoundLauncher, ended: CampaignOutcome) -> CampaignOutcome:
    """After a duet campaign (not interrupted, not failed): the asymmetry check, stored as a
    ``duet-asymmetry`` event and said in the output. With ``asymmetry: refuse`` and an
    asymmetric pair the duet verdict is refused: the event says ``verdict_valid: false``
    (show and the report mark the duet verdict invalid and give the solo passes' ratio),
    and the exit code is 1."""
    spec = launcher.experiment.settings.duet
    pair = launcher.experiment.duet_pair()
    if spec is None or pair is None or spec.solo_every == 0 or ended.status != "done":
        return ended
    check = check_asymmetry(launcher, pair)
    campaign_id = launcher.campaign.id
    if check is None:
        text = (
            f"duet: no asymmetry check: fewer than two solo passes (one every {spec.solo_every} "
            "passes after warm-up); run longer or lower duet solo_every"
        )
        launcher.store.add_event(
            campaign_id, ASYMMETRY_EVENT, text, {"pair": list(pair), "computed": False}
        )
        launcher.display.message(text)
        return ended
    refused = check.flagged and spec.asymmetry == "refuse"
    text = "duet: " + asymmetry_words(pair, check)
    data: dict[str, Any] = {
        "pair": list(pair),
        "computed": True,
        **check.to_dict(),
        "action": spec.asymmetry,
        "verdict_valid": not refused,
    }
    launcher.store.add_event(campaign_id, ASYMMETRY_EVENT, text, data)
    launcher.display.message(text)
    if not refused:
        return ended
    a, b = pair
    message = (
        f"duet verdict refused (duet asymmetry: refuse): the pair interferes "
        f"asymmetrically (asymmetry {check.asymmetry:.4g} [{check.low:.4g}, "
        f"{check.high:.4g}]); alone, in the solo passes, {b}/{a} = {check.solo_ratio:.4g} "
        f"[{check.solo_low:.4g}, {check.solo_high:.4g}] ({check.n_solo} passes); measure "
        "this pair without duet (--set duet=false)"
    )
    return dataclasses.replace(ended, exit_code=max(ended.exit_code, 1), message=message)
