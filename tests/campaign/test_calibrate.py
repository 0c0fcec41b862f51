"""Calibration of {work} (runner/campaign/calibrate.py) against closed forms of a known time model."""

from __future__ import annotations

import math

import pytest

from benchrun.runner.campaign.calibrate import (
    MAX_GROWTH,
    MAX_STEPS,
    calibrate,
    next_work,
    target_round_time,
)


def test_target_is_the_larger_of_min_round_time_and_100x_overhead() -> None:
    assert target_round_time(0.5, 0.001) == 0.5
    assert target_round_time(0.05, 0.002) == pytest.approx(0.2)  # 1 % overhead rule
    assert target_round_time(0.0, 0.0) == 0.0


@pytest.mark.parametrize(("fixed", "per_unit"), [(0.0, 1e-3), (0.04, 1e-4), (0.001, 2e-6)])
def test_linear_time_model_reaches_the_target_without_overshooting_much(
    fixed: float, per_unit: float
) -> None:
    """Round time = fixed + per_unit * work (a process start plus the work itself)."""
    target = 0.5
    seen: list[int] = []

    def measure(work: int) -> float:
        seen.append(work)
        return fixed + per_unit * work

    res = calibrate(measure, 1, target)
    assert res is not None and res.reached
    # the smallest work amount that reaches the target, from the model
    smallest = math.ceil((target - fixed) / per_unit)
    assert smallest <= res.work
    # work 1 is far below the target: several steps; the one before the last was short
    assert len(seen) > 1
    assert fixed + per_unit * seen[-2] < target
    for a, b in zip(seen, seen[1:], strict=False):
        assert 1.5 * a <= b <= MAX_GROWTH * a + 1
    # aiming 20 % past the target: no more than 1.5x the smallest sufficient amount, or
    # the minimum growth step 1.5x from below it
    assert res.work <= max(1.5 * smallest, 1.5 * seen[-2] + 1)


def test_work_that_does_not_change_time_gives_up_after_max_steps() -> None:
    res = calibrate(lambda work: 0.01, 1, 0.5)
    assert res is not None and not res.reached
    assert len(res.steps) == MAX_STEPS and res.work == res.steps[-1][0]
    assert "using it anyway" in res.note


def test_a_failed_round_gives_none() -> None:
    assert calibrate(lambda work: None if work > 1 else 0.001, 1, 0.5) is None


def test_already_long_enough_keeps_the_start() -> None:
    res = calibrate(lambda work: 0.7, 40, 0.5)
    assert res is not None and res.work == 40 and res.steps == ((40, 0.7),)


def test_next_work_bounds() -> None:
    assert next_work(10, 0.0, 1.0) == 100  # no time measured: the largest step
    assert next_work(10, 0.4, 0.5) == 15  # at least 1.5x
    assert next_work(1, 0.4, 0.5) == 2  # and at least +1
    assert next_work(100, 0.01, 0.5) == 1000  # at most 10x
    with pytest.raises(ValueError):
        calibrate(lambda w: 1.0, 0, 0.5)
