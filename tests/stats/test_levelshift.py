"""Warm-up or level shift (stats/levelshift.py, docs/methods.md §2.1; issue 27).

References: the SN statistic written out split by split from Shao & Zhang's (2010)
definition (O(n²), independent of the prefix-sum implementation), and seeded simulations
with a known truth: a real warm-up, mid-campaign steps of +20 % and +100 %, a warm-up
followed by a step, and stationary iid and AR(1) series (false level-shift rate <= 1 %
plus sampling slack). benchmarks/level_shift.py prints the full table.
"""

from __future__ import annotations

import numpy as np
import pytest
from stats_util import ar1

from benchrun.stats.levelshift import change_point, sn_statistic, sn_threshold, steady_start
from benchrun.stats.warmup import mser5


def brute_sn(x: np.ndarray) -> float:
    n = x.size
    best = 0.0
    for k in range(1, n):
        t = (x[:k].sum() - k / n * x.sum()) / np.sqrt(n)
        left = sum((x[:i].sum() - i / k * x[:k].sum()) ** 2 for i in range(1, k + 1))
        right = sum(
            (x[i - 1 :].sum() - (n - i + 1) / (n - k) * x[k:].sum()) ** 2
            for i in range(k + 1, n + 1)
        )
        best = max(best, t * t / ((left + right) / n**2))
    return best


@pytest.mark.parametrize("seed", range(4))
def test_sn_statistic_matches_the_definition(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 60))
    x = rng.normal(size=n) + np.where(np.arange(n) < n // 3, 0.0, rng.uniform(0, 2))
    assert sn_statistic(x)[0][0] == pytest.approx(brute_sn(x), rel=1e-8)


def test_threshold_table_limits() -> None:
    assert sn_threshold(19) == np.inf
    assert sn_threshold(20) == pytest.approx(325.0)
    assert sn_threshold(5000) == pytest.approx(87.0)
    assert sn_threshold(20) > sn_threshold(60) > sn_threshold(400) > 68.6  # Shao & Zhang's 1 %


def _starts(x: np.ndarray) -> list:
    return [steady_start(r, worse="higher") for r in x]


N, REPS = 60, 200


def test_quiet_prefix_then_disturbance_is_a_shift_not_warm_up() -> None:
    """The issue's campaign: plain MSER-5 cuts the quiet rounds; the rule refuses."""
    rng = np.random.default_rng(1)
    x = np.where(np.arange(52) < 17, 115.0, 270.0) * (1 + 0.02 * rng.standard_normal((REPS, 52)))
    assert np.mean([mser5(r, alpha=0.001) > 0 for r in x]) > 0.9
    got = _starts(x)
    assert all(s.warmup == 0 and s.shift is not None for s in got)
    assert np.mean([abs(s.shift.at - 17) <= 1 for s in got]) > 0.95


@pytest.mark.parametrize("step", [0.2, 1.0])
def test_mid_campaign_step_is_found_where_it_is(step: float) -> None:
    rng = np.random.default_rng(2)
    t = np.arange(N)
    x = 100 * (1 + 0.02 * rng.standard_normal((REPS, N))) * np.where(t < 30, 1.0, 1 + step)
    got = _starts(x)
    found = [s for s in got if s.shift is not None]
    assert len(found) / REPS > 0.97
    assert np.mean([abs(s.shift.at - 30) <= 2 for s in found]) > 0.95
    assert np.median([s.shift.change for s in found]) == pytest.approx(step, rel=0.05)


def test_real_warm_up_is_cut_and_not_a_shift() -> None:
    rng = np.random.default_rng(3)
    t = np.arange(N)
    x = 100 * (1 + 0.5 * np.exp(-t / 4.0) + 0.02 * rng.standard_normal((REPS, N)))
    got = _starts(x)
    assert np.mean([s.shift is None for s in got]) > 0.99
    assert np.mean([s.warmup > 0 for s in got]) > 0.9


def test_warm_up_then_step_keeps_the_cut_and_finds_the_step() -> None:
    rng = np.random.default_rng(4)
    t = np.arange(100)
    x = 100 * (1 + 0.5 * np.exp(-t / 3.0) + 0.01 * rng.standard_normal((REPS, 100)))
    x = x * np.where(t < 50, 1.0, 1.2)
    got = _starts(x)
    assert np.mean([s.shift is not None and abs(s.shift.at - 50) <= 2 for s in got]) > 0.95
    assert np.mean([s.warmup > 0 for s in got]) > 0.9


@pytest.mark.parametrize("phi", [0.0, 0.7, 0.9])
def test_stationary_series_rarely_shift(phi: float) -> None:
    """cv 10 %, so the 5 % floor does not hide the test: the false rate is the test's."""
    x = 100 * (1 + 0.1 * ar1(phi, 40, 600, seed=5) * np.sqrt(1 - phi * phi))
    rate = np.mean([change_point(r) is not None for r in x])
    assert rate <= 0.01 + 3 * np.sqrt(0.01 * 0.99 / 600)


def test_a_worse_start_is_cut_only_where_cutting_is_allowed() -> None:
    """20 rounds at 150 then 40 at 100 (+-1 %): a start worse than the rest. With
    detection it is cut (MSER-5 or the step rule); where nothing may be cut (warmup
    'none', an export's analysed rounds) it is a level shift of -33 % at round 21."""
    rng = np.random.default_rng(9)
    x = np.r_[np.full(20, 150.0), np.full(40, 100.0)] * (1 + 0.01 * rng.standard_normal(60))
    cut = steady_start(x, worse="higher")
    assert cut.warmup == 20 and cut.shift is None
    kept = steady_start(x, worse="higher", warmup=False, step_warmup=False)
    assert kept.warmup == 0 and kept.shift is not None and kept.shift.at == 20
    assert kept.shift.change == pytest.approx(x[20:].mean() / x[:20].mean() - 1)
