"""stats.paired against scipy (reference values) and by simulation (error rates, coverage)."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest
from scipy import stats as sps

from benchrun.stats.paired import (
    confirm_paired,
    log_ratios,
    paired_growth_needed,
    paired_test,
    ratio_of_means_ci,
)


def _summary(x: np.ndarray) -> tuple[float, float, int]:
    return float(x.mean()), float(x.var(ddof=1)), int(x.size)


def test_t_test_ratio_ci_and_tost_match_scipy() -> None:
    rng = np.random.default_rng(3)
    d = rng.normal(0.004, 0.01, 25)
    t = paired_test(*_summary(d), margin=0.01, alpha=0.05, confidence=0.95)
    ref = sps.ttest_1samp(d, 0.0)
    assert t.p_value == pytest.approx(ref.pvalue, rel=1e-10)
    ci = ref.confidence_interval(0.95)
    assert t.ratio == pytest.approx(math.exp(d.mean()), rel=1e-12)
    assert t.ratio_low == pytest.approx(math.exp(ci.low), rel=1e-10)
    assert t.ratio_high == pytest.approx(math.exp(ci.high), rel=1e-10)
    delta = math.log(1.01)
    lo = sps.ttest_1samp(d, -delta, alternative="greater").pvalue
    hi = sps.ttest_1samp(d, delta, alternative="less").pvalue
    assert t.tost_p == pytest.approx(max(lo, hi), rel=1e-10)
    assert t.equivalent == (max(lo, hi) < 0.05)


def test_zero_variance_is_exact() -> None:
    t = paired_test(0.0, 0.0, 5)
    assert (t.p_value, t.tost_p, t.equivalent, t.ratio_low) == (1.0, 0.0, True, 1.0)
    t = paired_test(math.log(1.5), 0.0, 5)
    assert (t.p_value, t.equivalent) == (0.0, False)


def test_log_ratios_refuses_non_positive_values_and_bad_shapes() -> None:
    assert log_ratios([1.0, 0.0], [1.0, 1.0]) is None
    np.testing.assert_allclose(log_ratios([2.0, 4.0], [4.0, 2.0]), [math.log(2), -math.log(2)])
    with pytest.raises(ValueError, match="one length"):
        log_ratios([1.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="finite"):
        log_ratios([1.0], [math.nan])
    with pytest.raises(ValueError, match="n must be"):
        paired_test(0.0, 1.0, 1)


def test_growth_needed_reaches_the_target_it_names() -> None:
    # closed form: se/sqrt(f) = |m| / (z_{1-a/2} + z_0.8)
    m, v, n, a = 0.01, 0.02**2, 10, 0.01
    sep, eq = paired_growth_needed(m, v, n, margin=0.05, alpha=a)
    z = sps.norm.ppf(1 - a / 2) + sps.norm.ppf(0.8)
    assert sep == pytest.approx((math.sqrt(v / n) * z / m) ** 2)
    z1 = sps.norm.ppf(1 - a) + sps.norm.ppf(0.8)
    assert eq == pytest.approx(max(1.0, (math.sqrt(v / n) * z1 / (math.log(1.05) - m)) ** 2))
    assert paired_growth_needed(0.0, v, n, margin=0.01, alpha=a)[0] is None


def test_confirm_paired_uses_holm() -> None:
    # p-values 0.004 and 0.006 at alpha 0.01: Holm rejects 0.004 (< 0.005) and then 0.006
    ms = []
    for p in (0.004, 0.006):
        tq = sps.t.isf(p / 2, 9)
        ms.append((tq * math.sqrt(1.0 / 10), 1.0, 10))
    assert confirm_paired(ms, 0.01) == [True, True]
    tq = sps.t.isf(0.02 / 2, 9)
    assert confirm_paired([ms[0], (tq * math.sqrt(0.1), 1.0, 10)], 0.01) == [True, False]


def test_simulation_drift_cancels_error_rate_and_coverage() -> None:
    """Shared AR(1) drift (phi 0.99, 10 %) times iid noise: the paired t test on 40 passes
    keeps its level on equal workloads and its ratio CI covers the known ratio."""
    rng = np.random.default_rng(20261123)
    reps, passes, phi = 4000, 40, 0.99
    e = rng.normal(0.0, 0.1 * math.sqrt(1 - phi**2), (reps, passes))
    f = np.empty((reps, passes))
    f[:, 0] = rng.normal(0.0, 0.1, reps)
    for p in range(1, passes):
        f[:, p] = phi * f[:, p - 1] + e[:, p]
    true_ratio = 1.02
    ya = np.exp(f + rng.normal(0, 0.02, (reps, passes)))
    yb = true_ratio * np.exp(f + rng.normal(0, 0.02, (reps, passes)))
    yc = np.exp(f + rng.normal(0, 0.02, (reps, passes)))
    d_ab = np.log(yb) - np.log(ya)
    d_ac = np.log(yc) - np.log(ya)
    m, s = d_ab.mean(1), d_ab.std(1, ddof=1) / math.sqrt(passes)
    t = sps.t.ppf(0.975, passes - 1)
    cover = np.mean((m - t * s < math.log(true_ratio)) & (math.log(true_ratio) < m + t * s))
    assert 0.94 <= cover <= 0.96
    p_equal = 2 * sps.t.sf(
        np.abs(d_ac.mean(1)) / (d_ac.std(1, ddof=1) / math.sqrt(passes)), passes - 1
    )
    assert np.mean(p_equal < 0.05) <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / reps)
    # and the same function agrees with the vectorised formula on one replicate
    one = paired_test(*_summary(d_ab[0]), confidence=0.95)
    assert one.ratio_low == pytest.approx(math.exp(m[0] - t * s[0]), rel=1e-10)
    # power on the 2 % pair: paired nearly always; the unpaired view of the same data
    # (Welch on the two series) loses it to the drift's variance
    p_ab = 2 * sps.t.sf(np.abs(m) / s, passes - 1)
    welch = sps.ttest_ind(np.log(yb), np.log(ya), axis=1, equal_var=False).pvalue
    assert np.mean(p_ab < 0.05) > 0.99
    assert np.mean(welch < 0.05) < np.mean(p_ab < 0.05) - 0.2


def test_ratio_of_means_ci_covers_by_simulation() -> None:
    rng = np.random.default_rng(7)
    reps, na, nb = 4000, 12, 20
    a = rng.normal(10.0, 0.5, (reps, na))
    b = rng.normal(12.0, 0.8, (reps, nb))
    hits = 0
    for i in range(reps):
        _, lo, hi = ratio_of_means_ci(
            a[i].mean(), a[i].var(ddof=1), na, b[i].mean(), b[i].var(ddof=1), nb
        )
        assert lo is not None and hi is not None
        hits += lo < 1.2 < hi
    assert 0.93 <= hits / reps <= 0.965
    assert ratio_of_means_ci(0.0, 1.0, 3, 1.0, 1.0, 3)[1] is None
    assert ratio_of_means_ci(2.0, 0.0, 5, 3.0, 0.0, 5) == (1.5, 1.5, 1.5)


@pytest.mark.parametrize("scale", [1e-300, 1e-160, 1e-150, 1e150, 1e300])
def test_ratio_of_means_ci_is_scale_free_down_to_the_smallest_floats(scale: float) -> None:
    """A ratio of means and its CI do not depend on the unit: means near 1e-300 (where
    mean² underflows to 0 and used to raise ZeroDivisionError, issue 29) give the interval
    of the same data at scale 1 (which the docstring's example checks against scipy) as
    long as the variances are normal floats; beyond that the ratio stays exact and the
    interval is degenerate or absent, never a traceback."""
    base = ratio_of_means_ci(100.0, 4.0, 10, 110.0, 9.0, 12)
    var_a, var_b = 4.0 * scale * scale, 9.0 * scale * scale  # inf, not OverflowError
    scaled = ratio_of_means_ci(100.0 * scale, var_a, 10, 110.0 * scale, var_b, 12)
    assert scaled[0] == pytest.approx(base[0], rel=1e-12)
    if var_a >= sys.float_info.min and math.isfinite(var_b):
        assert scaled == pytest.approx(base, rel=1e-9)
    elif not math.isfinite(var_a):
        assert scaled[1:] == (None, None)
