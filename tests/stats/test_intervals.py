"""Confidence intervals (docs/methods.md §4) against scipy, R prop.test and closed forms."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats as sps

from benchrun.stats.intervals import (
    Interval,
    bootstrap_ci,
    mean_ci,
    median_ci,
    proportion_ci,
    proportion_sample_size,
    quantile_ci,
    subsessions_for_width,
)


@pytest.mark.parametrize("conf", [0.9, 0.95, 0.99])
def test_mean_ci_matches_scipy_t_interval(conf: float) -> None:
    x = np.random.default_rng(1).normal(10.0, 2.0, size=17)
    ci = mean_ci(x, conf)
    lo, hi = sps.t.interval(conf, x.size - 1, loc=x.mean(), scale=sps.sem(x))
    assert ci.low == pytest.approx(lo, rel=1e-12)
    assert ci.high == pytest.approx(hi, rel=1e-12)
    assert ci.half_width == pytest.approx((hi - lo) / 2, rel=1e-12)
    assert ci.rel_half_width == pytest.approx((hi - lo) / 2 / x.mean(), rel=1e-12)
    json.dumps(ci.to_dict())


def test_mean_ci_edge_cases() -> None:
    one = mean_ci([4.2])
    assert one.low is None and one.high is None and one.estimate == 4.2 and one.notes
    same = mean_ci([3.0] * 5)
    assert same.low == same.high == 3.0 and "zero width" in same.notes[0]
    with pytest.raises(ValueError, match="confidence"):
        mean_ci([1.0, 2.0], 1.5)
    with pytest.raises(ValueError, match="non-finite"):
        mean_ci([1.0, float("inf")])
    assert Interval(0.0, -1.0, 1.0, 0.95, "x", 3).rel_half_width is None


@pytest.mark.parametrize("n", [6, 7, 10, 20, 31, 50, 101, 500])
def test_median_ci_matches_scipy_quantile_test(n: int) -> None:
    """scipy.stats.quantile_test's CI uses the same equal-tailed binomial ranks."""
    x = np.random.default_rng(n).lognormal(size=n)
    ci = median_ci(x, 0.95)
    ref = sps.quantile_test(x, q=np.median(x), p=0.5).confidence_interval(0.95)
    assert (ci.low, ci.high) == (ref.low, ref.high)
    assert ci.estimate == pytest.approx(np.median(x))


@pytest.mark.parametrize("p", [0.1, 0.25, 0.9, 0.99])
def test_quantile_ci_matches_scipy_quantile_test(p: float) -> None:
    x = np.random.default_rng(7).exponential(size=1000)
    ci = quantile_ci(x, p, 0.95)
    ref = sps.quantile_test(x, q=np.quantile(x, p), p=p).confidence_interval(0.95)
    assert (ci.low, ci.high) == (ref.low, ref.high)


@pytest.mark.parametrize("n", [6, 9, 12, 25, 40])
def test_median_ci_exact_coverage_closed_form(n: int) -> None:
    """The ranks j, n+1-j give coverage 1 - 2 F(j-1) >= 0.95 (B ~ Bin(n, 1/2)), and j is
    the largest rank with that property (closed form from the binomial)."""
    x = np.arange(1.0, n + 1.0)
    ci = median_ci(x)
    j, k = int(ci.low), int(ci.high)
    assert k == n + 1 - j
    cover = 1 - 2 * sps.binom.cdf(j - 1, n, 0.5)
    assert cover >= 0.95
    assert 1 - 2 * sps.binom.cdf(j, n, 0.5) < 0.95


def test_median_ci_needs_six_readings_at_95() -> None:
    ci = median_ci([1.0, 2.0, 3.0, 4.0, 5.0])
    assert ci.low is None and ci.high is None
    assert "n too small for a median CI at 95 %" in ci.notes
    assert median_ci(np.arange(6.0)).low == 0.0


def test_median_ci_agrees_with_leboudec_ranks_for_large_n() -> None:
    """LEBOUDEC: ranks floor((n - z√n)/2) and ceil(1 + (n + z√n)/2) for large n (±1)."""
    n = 2001
    x = np.arange(1.0, n + 1.0)
    ci = median_ci(x)
    z = sps.norm.ppf(0.975)
    assert abs(ci.low - math.floor((n - z * math.sqrt(n)) / 2)) <= 1
    assert abs(ci.high - math.ceil(1 + (n + z * math.sqrt(n)) / 2)) <= 1


def test_quantile_ci_effective_n_is_wider() -> None:
    x = np.random.default_rng(3).normal(size=1000)
    full = quantile_ci(x, 0.5)
    eff = quantile_ci(x, 0.5, ess=250)
    assert eff.low <= full.low and eff.high >= full.high
    assert "effective sample size" in eff.notes[0]


def test_bootstrap_ci_wraps_scipy_bootstrap() -> None:
    x = np.random.default_rng(5).lognormal(size=40)
    ci = bootstrap_ci(x, np.median, 0.95, n_resamples=2000, seed=42)
    ref = sps.bootstrap(
        (x,),
        np.median,
        confidence_level=0.95,
        n_resamples=2000,
        method="BCa",
        random_state=np.random.default_rng(42),
        vectorized=False,
    )
    assert ci.low == pytest.approx(ref.confidence_interval.low, rel=1e-12)
    assert ci.high == pytest.approx(ref.confidence_interval.high, rel=1e-12)
    assert ci.estimate == pytest.approx(np.median(x))


def test_bootstrap_ci_of_mean_close_to_t_interval() -> None:
    """For normal data the BCa CI of the mean approaches the t interval (n = 200)."""
    x = np.random.default_rng(6).normal(5.0, 1.0, size=200)
    b = bootstrap_ci(x, np.mean, 0.95, n_resamples=4000, seed=1)
    t = mean_ci(x, 0.95)
    assert b.low == pytest.approx(t.low, abs=0.03)
    assert b.high == pytest.approx(t.high, abs=0.03)


def test_bootstrap_ci_two_samples() -> None:
    rng = np.random.default_rng(8)
    a, b = rng.lognormal(1.0, 0.2, 30), rng.lognormal(0.8, 0.2, 30)
    ci = bootstrap_ci((a, b), lambda u, v: np.median(u) / np.median(v), n_resamples=1000)
    assert ci.low < np.median(a) / np.median(b) < ci.high


def test_proportion_ci_matches_r_prop_test() -> None:
    """R: prop.test(17, 30, conf.level = 0.90)$conf.int = [0.4027157, 0.7184049] (METHODS §12)."""
    ci = proportion_ci(17, 30, 0.90)
    assert ci.low == pytest.approx(0.4027157, abs=5e-8)
    assert ci.high == pytest.approx(0.7184049, abs=5e-8)
    assert ci.estimate == pytest.approx(17 / 30)


@pytest.mark.parametrize(("x", "n"), [(3, 20), (12, 15), (40, 100), (1, 10), (9, 10)])
def test_proportion_ci_matches_scipy_wilsoncc_when_full_correction(x: int, n: int) -> None:
    """When |x - n/2| >= 0.5 R's correction is the full 0.5, as scipy's 'wilsoncc'."""
    ref = sps.binomtest(x, n).proportion_ci(0.95, method="wilsoncc")
    ci = proportion_ci(x, n, 0.95)
    assert ci.low == pytest.approx(ref.low, abs=1e-12)
    assert ci.high == pytest.approx(ref.high, abs=1e-12)


def test_proportion_ci_touati_warning_and_bounds() -> None:
    assert any("TOUATI" in n for n in proportion_ci(2, 10).notes)
    assert not proportion_ci(50, 100).notes
    assert proportion_ci(0, 10).low == 0.0
    assert proportion_ci(10, 10).high == 1.0
    with pytest.raises(ValueError, match="successes"):
        proportion_ci(11, 10)


def test_proportion_sample_size_closed_form() -> None:
    """b >= z^2 C(1-C)/r^2: 1.959964^2 · 0.25 / 0.05^2 = 384.15 -> 385 (TOUATI §4)."""
    assert proportion_sample_size(0.5, 0.05, 0.95) == 385
    z = sps.norm.ppf(0.95)
    assert proportion_sample_size(0.3, 0.1, 0.90) == math.ceil(z * z * 0.21 / 0.01)


def test_subsessions_for_width_formula() -> None:
    """Pilot's planning formula; its §12 case (34) is in test_autocorr.py. Here: s = 1,
    h = 10, m = 10, 2 % half-width -> (t_{0.975,9} · 1/0.2)^2 = 127.99 -> 128."""
    t = sps.t.ppf(0.975, 9)
    assert subsessions_for_width(1.0, 10, 10.0, 0.02) == math.ceil((t / 0.2) ** 2)
    with pytest.raises(ValueError):
        subsessions_for_width(1.0, 1, 10.0, 0.02)
