"""Calibration of a workload's work amount before measuring (PILOT; docs/methods.md vocabulary).

A workload whose command holds ``{work}`` does ``work`` units per round. Launching a
process costs a fixed overhead (fork/exec, pinning, wait4: about a millisecond here, see
benchmarks/runner_overhead.py) that is part of every wall-time reading; Pilot's advice is to
make a round long enough that this overhead is negligible. benchrun grows ``work`` until
one round lasts at least

    target = max(min_round_time, overhead / max_overhead_share)

with ``max_overhead_share = 1 %`` and ``overhead`` the median wall time of a trivial round
(``true``) launched the same way. Pure logic here; the campaign loop launches the rounds.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from benchrun.runner.config.schema import MAX_WORK

#: launch overhead must stay below this share of a round's wall time
MAX_OVERHEAD_SHARE = 0.01
#: most calibration rounds before giving up on reaching the target
MAX_STEPS = 16
#: growth of ``work`` between two calibration rounds is at most this factor
MAX_GROWTH = 10.0


@dataclass(frozen=True)
class Calibration:
    """Outcome of :func:`calibrate`: the work amount chosen and how it was found.

    ``steps`` holds ``(work, seconds)`` of every calibration round; ``reached`` says whether
    the last round lasted at least ``target_s`` (seconds).
    """

    work: int
    target_s: float
    steps: tuple[tuple[int, float], ...]
    reached: bool

    @property
    def note(self) -> str:
        last_work, last_s = self.steps[-1]
        if self.reached:
            return (
                f"work {last_work} gives {last_s:.3g} s per round "
                f"(target {self.target_s:.3g} s, {len(self.steps)} calibration rounds)"
            )
        return (
            f"work {last_work} gives only {last_s:.3g} s per round after {len(self.steps)} "
            f"calibration rounds (target {self.target_s:.3g} s); using it anyway"
        )


def target_round_time(min_round_time_s: float, overhead_s: float) -> float:
    """Seconds a calibrated round must last: ``max(min_round_time, overhead / 1 %)``."""
    return max(float(min_round_time_s), float(overhead_s) / MAX_OVERHEAD_SHARE)


def next_work(work: int, seconds: float, target_s: float) -> int:
    """The next work amount to try after ``work`` took ``seconds`` (< ``target_s``).

    Assumes time grows about linearly with work: aims 20 % past the target, grows at least
    1.5x (so a noisy short round cannot stall the search) and at most 10x per step, and
    never past ``MAX_WORK`` (the largest ``work:`` an experiment file may give).
    """
    factor = MAX_GROWTH if seconds <= 0 else min(MAX_GROWTH, max(1.5, 1.2 * target_s / seconds))
    return min(MAX_WORK, max(work + 1, math.ceil(work * factor)))


def calibrate(
    measure: Callable[[int], float | None],
    start: int,
    target_s: float,
    max_steps: int = MAX_STEPS,
    out_of_time: Callable[[], bool] = lambda: False,
) -> Calibration | None:
    """Grow ``work`` from ``start`` until ``measure(work)`` (one round's wall time, s) reaches
    ``target_s``. Returns None when ``measure`` returns None (the round failed or was
    interrupted: nothing to calibrate on). ``max_steps`` rounds at most, none started once
    ``out_of_time()`` is true (the campaign's budget), and none past ``MAX_WORK``; the last
    work amount is then used even if it never reached the target (``reached`` False).
    """
    if start < 1:
        raise ValueError(f"start must be >= 1, got {start}")
    work = min(int(start), MAX_WORK)
    steps: list[tuple[int, float]] = []
    for step in range(max_steps):
        if step and (out_of_time() or steps[-1][0] >= MAX_WORK):
            break
        seconds = measure(work)
        if seconds is None:
            return None
        steps.append((work, float(seconds)))
        if seconds >= target_s:
            return Calibration(work, target_s, tuple(steps), True)
        work = next_work(work, seconds, target_s)
    return Calibration(steps[-1][0], target_s, tuple(steps), False)
