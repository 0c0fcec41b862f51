"""Tests for stats.speedup: Touati's Speedup-Test (docs/methods.md §6.2).

Every p-value is checked against scipy (ttest_ind, scipy.stats.f, ks_2samp, mannwhitneyu),
each branch of the decision flow with constructed data whose preconditions the test
asserts first, the suite's share CI against R's prop.test value quoted in docs/methods.md §12,
and the false-speedup rate by simulation.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from benchrun.stats.speedup import (
    CONFIDENCE_WARNING,
    NO_SPEEDUP,
    NOT_ENOUGH,
    SPEEDUP,
    speedup_suite,
    speedup_test,
)

ALPHA = 0.05


def normal(seed: int, mean: float, sd: float, n: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(mean, sd, n)


def f_test_p(x: np.ndarray, y: np.ndarray) -> float:
    f = np.var(x, ddof=1) / np.var(y, ddof=1)
    dfs = (x.size - 1, y.size - 1)
    return 2 * min(stats.f.cdf(f, *dfs), stats.f.sf(f, *dfs))


def test_small_non_normal_sample_is_not_enough_data() -> None:
    x = 5 + np.random.default_rng(1).exponential(1.0, 20) ** 2
    y = normal(2, 4.0, 0.3, 20)
    assert stats.shapiro(x).pvalue < ALPHA  # precondition: X is not normal
    r = speedup_test(x, y)
    assert r.mean_verdict == NOT_ENOUGH and r.mean_p is None and r.f_test_p is None
    assert r.median_verdict == NOT_ENOUGH  # n <= 30
    assert "Student t-test" not in r.tests_used and "Welch t-test" not in r.tests_used
    assert r.shapiro_p_x == pytest.approx(stats.shapiro(x).pvalue)


def test_normal_equal_variances_uses_student() -> None:
    x, y = normal(5, 10.0, 1.0, 20), normal(105, 9.0, 1.0, 20)
    assert stats.shapiro(x).pvalue >= ALPHA and stats.shapiro(y).pvalue >= ALPHA
    assert f_test_p(x, y) >= ALPHA
    r = speedup_test(x, y)
    assert r.f_test_p == pytest.approx(f_test_p(x, y), rel=1e-10)
    assert r.mean_test == "student" and r.equal_variances is True
    ref = stats.ttest_ind(x, y, equal_var=True, alternative="greater").pvalue
    assert r.mean_p == pytest.approx(ref, rel=1e-10)
    assert r.mean_verdict == SPEEDUP and not r.mean_warning
    assert r.median_verdict == NOT_ENOUGH and r.median_p is None
    assert r.speedup_mean == pytest.approx(x.mean() / y.mean())
    assert r.speedup_median == pytest.approx(np.median(x) / np.median(y))
    assert r.speedup_min == pytest.approx(x.min() / y.min())


def test_normal_unequal_variances_uses_welch_and_median_test() -> None:
    x, y = normal(4, 11.0, 3.0, 40), normal(104, 9.0, 0.5, 45)
    assert stats.shapiro(x).pvalue >= ALPHA and stats.shapiro(y).pvalue >= ALPHA
    assert f_test_p(x, y) < ALPHA
    r = speedup_test(x, y)
    assert r.mean_test == "welch" and r.equal_variances is False
    ref = stats.ttest_ind(x, y, equal_var=False, alternative="greater").pvalue
    assert r.mean_p == pytest.approx(ref, rel=1e-10)
    assert r.f_test_p == pytest.approx(f_test_p(x, y), rel=1e-10)
    assert r.mean_verdict == SPEEDUP
    ks = stats.ks_2samp(x - np.median(x), y - np.median(y)).pvalue
    assert r.ks_p == pytest.approx(ks)
    mw = stats.mannwhitneyu(x, y, alternative="greater")
    assert r.median_p == pytest.approx(mw.pvalue, rel=1e-10)
    pairs = x[:, None] - y[None, :]
    assert r.prob_superiority == pytest.approx(
        (np.sum(pairs > 0) + 0.5 * np.sum(pairs == 0)) / pairs.size, rel=1e-12
    )
    assert r.median_test == "wilcoxon-mann-whitney"
    assert set(r.tests_used) >= {"Shapiro-Wilk", "F-test", "Welch t-test", "Kolmogorov-Smirnov"}


def test_large_non_normal_samples_carry_the_warning() -> None:
    rng = np.random.default_rng(7)
    x, y = rng.lognormal(2.3, 0.6, 60), rng.lognormal(2.0, 0.6, 60)
    assert stats.shapiro(x).pvalue < ALPHA  # precondition: large but not normal
    r = speedup_test(x, y)
    assert r.mean_warning and any(CONFIDENCE_WARNING in w for w in r.warnings)
    assert r.mean_verdict == SPEEDUP and r.mean_p is not None
    eq = f_test_p(x, y) >= ALPHA
    ref = stats.ttest_ind(x, y, equal_var=eq, alternative="greater").pvalue
    assert r.mean_p == pytest.approx(ref, rel=1e-10)
    assert r.median_verdict == SPEEDUP


def test_ks_rejecting_location_shift_carries_the_warning() -> None:
    x = normal(8, 10.0, 0.3, 80)
    y = 9.0 + np.random.default_rng(9).exponential(0.3, 80)
    assert stats.ks_2samp(x - np.median(x), y - np.median(y)).pvalue < ALPHA
    r = speedup_test(x, y)
    assert r.median_warning and r.median_verdict == SPEEDUP
    assert any("location-shift" in w for w in r.warnings)


def test_slower_version_is_no_speedup() -> None:
    x, y = normal(10, 10.0, 1.0, 40), normal(11, 10.5, 1.0, 40)
    r = speedup_test(x, y)
    assert r.mean_verdict == NO_SPEEDUP and r.median_verdict == NO_SPEEDUP
    assert r.mean_p > 0.5 and r.median_p > 0.5


def test_constant_and_tiny_samples() -> None:
    r = speedup_test([2.0] * 40, [1.0] * 40)
    assert r.mean_verdict == SPEEDUP and r.median_verdict == SPEEDUP and r.mean_p is None
    r = speedup_test([1.0] * 40, [1.0] * 40)
    assert r.mean_verdict == NO_SPEEDUP and r.median_verdict == NO_SPEEDUP
    r = speedup_test([3.0, 3.1], [1.0, 1.1])
    assert r.mean_verdict == NOT_ENOUGH and r.shapiro_p_x is None
    d = r.to_dict()
    assert d["shapiro_p_x"] is None and d["mean_verdict"] == NOT_ENOUGH


@pytest.mark.parametrize("bad", [[1.0, 0.0, 2.0], [1.0, -1.0], [1.0, float("nan")], [1.0]])
def test_bad_times_raise(bad: list[float]) -> None:
    with pytest.raises(ValueError):
        speedup_test(bad, [1.0, 2.0, 3.0])


@pytest.mark.parametrize("dist", ["normal", "lognormal"])
def test_no_speedup_is_rarely_called_a_speedup(dist: str) -> None:
    rng = np.random.default_rng(31)
    reps = 1500
    if dist == "normal":
        data = rng.normal(10.0, 1.0, size=(reps, 2, 40))
    else:
        data = rng.lognormal(2.0, 0.5, size=(reps, 2, 40))
    results = [speedup_test(x, y, alpha=ALPHA) for x, y in data]
    bound = ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / reps)
    assert np.mean([r.mean_verdict == SPEEDUP for r in results]) <= bound
    assert np.mean([r.median_verdict == SPEEDUP for r in results]) <= bound


# ----------------------------------------------------------------------------- suite
def _suite(a: int, b: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    out = {}
    for j in range(b):
        x = normal(100 + j, 10.0 + j, 0.5, 40)
        y = normal(200 + j, (9.0 if j < a else 11.0) + j, 0.5, 40)
        out[f"bench{j}"] = (x, y)
    return out


def test_suite_share_ci_matches_r_prop_test() -> None:
    # 17 of 30 benchmarks faster; R: prop.test(17, 30, conf.level = 0.90) -> [0.4027157, 0.7184049]
    r = speedup_suite(_suite(17, 30), confidence=0.90, precision=0.05)
    s = r.share_mean
    assert (s.a, s.b) == (17, 30)
    assert s.ci_low == pytest.approx(0.4027157, abs=1e-7)
    assert s.ci_high == pytest.approx(0.7184049, abs=1e-7)
    assert s.valid and s.validity_value == pytest.approx(17 * (1 - 17 / 30))
    z = stats.norm.ppf(0.95)
    assert s.benchmarks_needed == math.ceil(z * z * (17 / 30) * (13 / 30) / 0.05**2)
    assert r.share_median.a == 17
    assert r.to_dict()["share_mean"]["a"] == 17


def test_suite_overall_speedup_and_weights() -> None:
    bench = _suite(2, 4)
    w = {"bench0": 1.0, "bench1": 2.0, "bench2": 0.5, "bench3": 3.0}
    r = speedup_suite(bench, weights=w)
    num = sum(w[k] * x.mean() for k, (x, _) in bench.items())
    den = sum(w[k] * y.mean() for k, (_, y) in bench.items())
    assert r.overall_speedup_mean == pytest.approx(num / den, rel=1e-12)
    assert r.gain_mean == pytest.approx(1 - den / num, rel=1e-12)
    num = sum(w[k] * np.median(x) for k, (x, _) in bench.items())
    den = sum(w[k] * np.median(y) for k, (_, y) in bench.items())
    assert r.overall_speedup_median == pytest.approx(num / den, rel=1e-12)
    assert r.result("bench3").mean_verdict == NO_SPEEDUP
    # 2 of 4: a(1 - a/b) = 1 <= 5 -> Touati's validity warning
    assert not r.share_mean.valid and r.warnings
    unweighted = speedup_suite(bench)
    x_means = [x.mean() for x, _ in bench.values()]
    y_means = [y.mean() for _, y in bench.values()]
    assert unweighted.overall_speedup_mean == pytest.approx(sum(x_means) / sum(y_means))


def test_suite_bad_input() -> None:
    bench = _suite(1, 2)
    with pytest.raises(ValueError, match="weights"):
        speedup_suite(bench, weights={"bench0": 1.0})
    with pytest.raises(ValueError, match="weights"):
        speedup_suite(bench, weights=[1.0, -1.0])
    with pytest.raises(ValueError, match="non-empty"):
        speedup_suite({})
    with pytest.raises(ValueError, match="'bad'"):
        speedup_suite({"bad": ([1.0, 2.0], [0.0, 1.0])})


def test_suite_without_any_speedup_uses_worst_case_for_sample_size() -> None:
    r = speedup_suite(_suite(0, 3), confidence=0.95, precision=0.05)
    assert r.share_mean.a == 0 and r.share_mean.ci_low == 0.0
    # the classic worst case: 1.96^2 * 0.25 / 0.05^2 = 384.1 -> 385 benchmarks
    assert r.share_mean.benchmarks_needed == 385
