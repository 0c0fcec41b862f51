"""Tests for stats.compare (docs/methods.md §6.1, §6.3, §6.4).

References: the §12 Welch example (values quoted in Pilot's unit tests), scipy.stats,
Cohen (1988) power tables, R's wilcox.test help example, and simulations with known truth.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from benchrun.stats.compare import (
    effect_size,
    effect_size_from_summary,
    mann_whitney,
    required_sample_size,
    tost,
    tost_from_summary,
    welch,
    welch_from_summary,
)

# NIST StRD reference data shipped with the tests (tests/data/README.md, nist/SOURCES.md)
NIST = Path(__file__).resolve().parents[1] / "data" / "nist" / "Michelso.dat"

# 23 speed-of-light values (km/s - 299000) used against Michelson 1879 in docs/methods.md §12.
# Provenance: Pilot's unit test TestSpeedOfLight (unit_test_statistics.cc, Yan Li), which
# takes them from the textbook chapter http://math.arizona.edu/~ghystad/chapter12.pdf.
# Expected there: s = 107.114618526, df 27.754, p 0.0003625357, 99 % CI [30.67544, 161.68977].
NEWCOMB_23 = np.array(
    [883, 816, 778, 796, 682, 711, 611, 599, 1051, 781, 578, 796, 774, 820, 772, 696, 573,
     748, 748, 797, 851, 809, 723],
    dtype=float,
)  # fmt: skip


def michelson() -> np.ndarray:
    return np.loadtxt(NIST, skiprows=60) * 1000 - 299000


# ----------------------------------------------------------------------------- Welch
def test_welch_speed_of_light_reference() -> None:
    a = michelson()
    assert a.size == 100
    r = welch(a, NEWCOMB_23, confidence=0.99)
    assert r.df == pytest.approx(27.754, abs=1e-3)
    assert r.df_pilot == 27
    assert r.p_value == pytest.approx(0.0003625357, abs=1e-10)
    assert r.ci_low == pytest.approx(30.67544, abs=1e-5)
    assert r.ci_high == pytest.approx(161.68977, abs=1e-5)
    assert math.sqrt(r.var_b) == pytest.approx(107.114618526, rel=1e-10)
    # the same from the three summary numbers of each side
    s = welch_from_summary(852.4, 79.0105478190518**2, 100, r.mean_b, r.var_b, 23, confidence=0.99)
    assert s.p_value == pytest.approx(0.0003625357, abs=1e-10)


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_welch_matches_scipy(alternative: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    a = rng.normal(10, 1, size=rng.integers(3, 40))
    b = rng.normal(10.3, 2.5, size=rng.integers(3, 40))
    ref = stats.ttest_ind(a, b, equal_var=False, alternative=alternative)
    ci = ref.confidence_interval(0.9)
    r = welch(a, b, alternative=alternative, confidence=0.9)
    assert r.statistic == pytest.approx(ref.statistic, rel=1e-12)
    assert r.df == pytest.approx(ref.df, rel=1e-12)
    assert r.p_value == pytest.approx(ref.pvalue, rel=1e-10)
    for mine, theirs in ((r.ci_low, ci.low), (r.ci_high, ci.high)):
        if math.isinf(theirs):
            assert mine is None
        else:
            assert mine == pytest.approx(theirs, rel=1e-10)
    s = welch_from_summary(
        a.mean(), a.var(ddof=1), a.size, b.mean(), b.var(ddof=1), b.size,
        alternative=alternative, confidence=0.9,
    )  # fmt: skip
    assert s == r
    assert r.to_dict()["p_value"] == pytest.approx(ref.pvalue, rel=1e-10)


def test_welch_one_side_constant_has_df_n_minus_1() -> None:
    a = np.full(8, 5.0)
    b = np.array([5.1, 5.3, 4.9, 5.6, 5.2])
    r = welch(a, b)
    assert r.df == pytest.approx(b.size - 1)
    assert r.p_value == pytest.approx(stats.ttest_1samp(b, 5.0).pvalue, rel=1e-10)


def test_welch_both_constant_is_deterministic() -> None:
    r = welch([2.0, 2.0, 2.0], [3.0, 3.0])
    assert r.deterministic and r.df is None and r.statistic is None
    assert r.p_value == 0.0 and r.difference == -1.0
    assert welch([2.0, 2.0], [3.0, 3.0], alternative="greater").p_value == 1.0
    assert welch([2.0, 2.0], [2.0, 2.0]).p_value == 1.0
    d = r.to_dict()
    assert d["df"] is None and d["notes"]


@pytest.mark.parametrize(
    "args",
    [([1.0], [1.0, 2.0]), ([1.0, float("nan")], [1.0, 2.0]), ([[1.0, 2.0]], [1.0, 2.0])],
)
def test_welch_rejects_bad_input(args: tuple) -> None:
    with pytest.raises(ValueError):
        welch(*args)


def test_welch_bad_summary_and_alternative() -> None:
    with pytest.raises(ValueError, match="n_a"):
        welch_from_summary(1, 1, 1, 2, 1, 5)
    with pytest.raises(ValueError, match="var_b"):
        welch_from_summary(1, 1, 5, 2, -1, 5)
    with pytest.raises(ValueError, match="alternative"):
        welch([1, 2], [3, 4], alternative="bigger")


def test_welch_type_one_error_by_simulation() -> None:
    # unequal variances and sizes, equal means: rejection rate must be alpha
    rng = np.random.default_rng(11)
    reps, alpha = 4000, 0.05
    a = rng.normal(0, 1, size=(reps, 6))
    b = rng.normal(0, 3, size=(reps, 15))
    rejections = sum(
        welch_from_summary(ma, va, 6, mb, vb, 15).p_value < alpha
        for ma, va, mb, vb in zip(
            a.mean(1), a.var(1, ddof=1), b.mean(1), b.var(1, ddof=1), strict=True
        )
    )
    se = math.sqrt(alpha * (1 - alpha) / reps)
    assert abs(rejections / reps - alpha) < 3 * se


# ----------------------------------------------------------------------------- sample size
def test_required_sample_size_cohen_table() -> None:
    # Cohen (1988), Table 2.4.1: two-sided a = .05, power .80: d = .5 -> 64, d = .8 -> 26
    assert required_sample_size(0.0, 1.0, 0.5, 1.0) == 64
    assert required_sample_size(10.0, 4.0, 11.6, 4.0) == 26
    # d = .2: Cohen's table prints 393 (normal approximation); the noncentral t says 394
    n = required_sample_size(0.0, 1.0, 0.2, 1.0)
    assert n in (393, 394)
    for k, above in ((n, True), (n - 1, False)):
        ncp, nu = 0.2 / math.sqrt(2 / k), 2 * k - 2
        crit = stats.t.ppf(0.975, nu)
        power = stats.nct.sf(crit, nu, ncp) + stats.nct.cdf(-crit, nu, ncp)
        assert (power >= 0.8) == above


def test_required_sample_size_edge_cases() -> None:
    assert required_sample_size(1.0, 1.0, 1.0, 2.0) is None
    assert required_sample_size(1.0, 0.0, 2.0, 0.0) == 2
    with pytest.raises(ValueError, match="max_n"):
        required_sample_size(0.0, 1.0, 1e-6, 1.0, max_n=1000)


def test_required_sample_size_power_by_simulation() -> None:
    rng = np.random.default_rng(5)
    ma, va, mb, vb = 100.0, 4.0, 101.5, 9.0
    n = required_sample_size(ma, va, mb, vb, alpha=0.05, power=0.8)
    reps = 4000

    def empirical_power(k: int) -> float:
        a = rng.normal(ma, math.sqrt(va), size=(reps, k))
        b = rng.normal(mb, math.sqrt(vb), size=(reps, k))
        return float(np.mean(stats.ttest_ind(a, b, axis=1, equal_var=False).pvalue < 0.05))

    se = math.sqrt(0.8 * 0.2 / reps)
    assert empirical_power(n) >= 0.8 - 3 * se
    assert empirical_power(n // 2) < 0.8 - 0.15


# ----------------------------------------------------------------------------- TOST
@pytest.mark.parametrize("relative", [True, False])
def test_tost_matches_two_shifted_scipy_tests(relative: bool) -> None:
    rng = np.random.default_rng(3)
    a, b = rng.normal(50, 1, 20), rng.normal(50.2, 1.5, 25)
    margin = 0.02 if relative else 0.9
    delta = margin * a.mean() if relative else margin
    r = tost(a, b, margin, relative=relative, alpha=0.05)
    assert r.delta == pytest.approx(delta)
    p_lo = stats.ttest_ind(a + delta, b, equal_var=False, alternative="greater").pvalue
    p_hi = stats.ttest_ind(a - delta, b, equal_var=False, alternative="less").pvalue
    assert r.p_lower == pytest.approx(p_lo, rel=1e-10)
    assert r.p_upper == pytest.approx(p_hi, rel=1e-10)
    assert r.p_value == pytest.approx(max(p_lo, p_hi), rel=1e-10)
    # equivalent <=> the 90 % Welch CI lies inside (-delta, delta)
    ci = stats.ttest_ind(a, b, equal_var=False).confidence_interval(0.90)
    assert (r.ci_low, r.ci_high) == pytest.approx((ci.low, ci.high), rel=1e-10)
    assert r.equivalent == (-delta < ci.low and ci.high < delta)


def test_tost_deterministic_and_errors() -> None:
    assert tost([10.0, 10.0], [10.05, 10.05], 0.01).equivalent
    assert not tost([10.0, 10.0], [10.2, 10.2], 0.01).equivalent
    with pytest.raises(ValueError, match="mean_a"):
        tost_from_summary(0.0, 1.0, 5, 0.1, 1.0, 5, margin=0.01)
    with pytest.raises(ValueError, match="margin"):
        tost([1, 2], [1, 2], margin=0)


def test_tost_size_at_the_margin_by_simulation() -> None:
    # true difference exactly +delta: "equivalent" must happen in <= alpha of samples
    rng = np.random.default_rng(21)
    reps, alpha, delta, n = 4000, 0.05, 0.5, 30
    a = rng.normal(delta, 1.0, size=(reps, n))
    b = rng.normal(0.0, 1.0, size=(reps, n))
    args = zip(a.mean(1), a.var(1, ddof=1), b.mean(1), b.var(1, ddof=1), strict=True)
    eq = sum(
        tost_from_summary(ma, va, n, mb, vb, n, delta, relative=False, alpha=alpha).equivalent
        for ma, va, mb, vb in args
    )
    assert eq / reps <= alpha + 3 * math.sqrt(alpha * (1 - alpha) / reps)
    assert eq / reps > alpha / 2  # the test is not trivially conservative at the boundary
    # and it has power when the truth is well inside the margin
    a0 = rng.normal(0.0, 1.0, size=(500, n))
    inside = sum(
        tost_from_summary(x.mean(), x.var(ddof=1), n, y.mean(), y.var(ddof=1), n, 1.0,
                          relative=False).equivalent
        for x, y in zip(a0, rng.normal(0.0, 1.0, size=(500, n)), strict=True)
    )  # fmt: skip
    assert inside / 500 > 0.9


# ----------------------------------------------------------------------------- Mann-Whitney
def test_mann_whitney_r_example() -> None:
    # R ?wilcox.test (Hollander & Wolfe 1973, p. 69): wilcox.test(x, y, alternative = "g")
    # gives W = 35, p-value = 0.1272
    x = [0.80, 0.83, 1.89, 1.04, 1.45, 1.38, 1.91, 1.64, 0.73, 1.46]
    y = [1.15, 0.88, 0.90, 0.74, 1.21]
    r = mann_whitney(x, y, alternative="greater")
    assert r.statistic == 35
    assert r.p_value == pytest.approx(0.1272, abs=5e-5)
    assert r.prob_superiority == pytest.approx(35 / 50)


@pytest.mark.parametrize("alternative", ["two-sided", "less"])
def test_mann_whitney_superiority_brute_force_with_ties(alternative: str) -> None:
    rng = np.random.default_rng(8)
    x = rng.integers(0, 6, size=17).astype(float)
    y = rng.integers(1, 7, size=23).astype(float)
    diff = x[:, None] - y[None, :]
    expected = (np.sum(diff > 0) + 0.5 * np.sum(diff == 0)) / diff.size
    r = mann_whitney(x, y, alternative=alternative)
    assert r.prob_superiority == pytest.approx(expected, rel=1e-12)
    assert r.p_value == pytest.approx(stats.mannwhitneyu(x, y, alternative=alternative).pvalue)
    assert r.to_dict()["n_y"] == 23


# ----------------------------------------------------------------------------- effect size
def test_effect_size_closed_forms() -> None:
    a = np.array([10.1, 10.4, 9.8, 10.0, 10.6, 10.2])
    b = np.array([9.5, 9.9, 9.7, 9.4, 9.8, 9.6, 10.0, 9.3])
    sp = math.sqrt(((5) * a.var(ddof=1) + 7 * b.var(ddof=1)) / 12)
    d = (a.mean() - b.mean()) / sp
    r = effect_size(a, b, confidence=0.9)
    assert r.cohens_d == pytest.approx(d, rel=1e-12)
    # Hedges' approximation J ~ 1 - 3/(4 df - 1) is within 1e-3 of the exact J at df = 12
    assert r.hedges_g == pytest.approx(d * (1 - 3 / (4 * 12 - 1)), rel=1e-3)
    # the bounds are the noncentral-t quantile inversions (scipy.stats.nct)
    scale = math.sqrt(1 / 6 + 1 / 8)
    t_obs = d / scale
    assert stats.nct.cdf(t_obs, 12, r.d_ci_low / scale) == pytest.approx(0.95, abs=1e-8)
    assert stats.nct.cdf(t_obs, 12, r.d_ci_high / scale) == pytest.approx(0.05, abs=1e-8)
    assert r.g_ci_low / r.d_ci_low == pytest.approx(r.hedges_g / r.cohens_d)


def test_effect_size_large_n_agrees_with_hedges_olkin() -> None:
    rng = np.random.default_rng(4)
    a, b = rng.normal(0.4, 1, 400), rng.normal(0, 1, 300)
    r = effect_size(a, b)
    d = r.cohens_d
    se = math.sqrt(700 / (400 * 300) + d * d / 1400)
    assert r.d_ci_low == pytest.approx(d - 1.959964 * se, abs=5e-3)
    assert r.d_ci_high == pytest.approx(d + 1.959964 * se, abs=5e-3)


def test_effect_size_zero_variance() -> None:
    r = effect_size_from_summary(1.0, 0.0, 4, 2.0, 0.0, 4)
    assert r.cohens_d is None and r.notes
    assert r.to_dict()["hedges_g"] is None


def test_effect_size_ci_coverage_by_simulation() -> None:
    rng = np.random.default_rng(17)
    reps, delta = 1000, 0.8
    a = rng.normal(delta, 1.0, size=(reps, 12))
    b = rng.normal(0.0, 1.0, size=(reps, 9))
    covered = 0
    for x, y in zip(a, b, strict=True):
        r = effect_size(x, y, confidence=0.95)
        covered += r.d_ci_low <= delta <= r.d_ci_high
    se = math.sqrt(0.95 * 0.05 / reps)
    assert abs(covered / reps - 0.95) < 3 * se
