"""describe / tukey_outliers / aggregate / summarize (docs/methods.md §1-5).

References: numpy and scipy (quantiles, hmean, gmean, t.interval, quantile_test, shapiro),
closed forms, and properties (location/scale equivariance) checked with hypothesis.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import signal
from scipy import stats as sps

from benchrun.stats.summary import aggregate, describe, summarize, tukey_outliers

KEYS = {
    "n", "warmup_readings", "subsession_size", "n_subsessions", "mean", "ci_low", "ci_high",
    "median", "median_ci_low", "median_ci_high", "std", "cov", "min", "q1", "q3", "max", "p90",
    "p99", "autocorrelation_lag1", "normality_p", "outliers", "deterministic", "notes",
    "subsession_variance", "confidence", "ess", "enough_data", "certified", "interval_low",
    "interval_high", "tau_bound", "width_factor", "interval_note",
}  # fmt: skip


# ----------------------------------------------------------------------------- describe
def test_describe_matches_numpy_and_scipy() -> None:
    x = np.random.default_rng(1).lognormal(size=250)
    d = describe(x)
    ref = sps.describe(x)
    assert d.n == 250
    assert d.mean == pytest.approx(ref.mean, rel=1e-14)
    assert d.std == pytest.approx(np.sqrt(ref.variance), rel=1e-13)
    assert d.cov == pytest.approx(np.std(x, ddof=1) / np.mean(x), rel=1e-13)
    q = np.percentile(x, [25, 50, 75, 90, 99])
    assert [d.q1, d.median, d.q3, d.p90, d.p99] == pytest.approx(q, rel=1e-14)
    assert (d.min, d.max) == (x.min(), x.max())
    assert d.deterministic is False
    json.dumps(d.to_dict())


def test_percentiles_reported_only_when_n_allows() -> None:
    """Rule: a p-quantile needs n·min(p, 1-p) >= 1 (p90: n >= 10, p99: n >= 100)."""
    d9 = describe(np.arange(9.0))
    assert d9.p90 is None and d9.p99 is None and d9.q1 is not None
    assert any("p90" in n for n in d9.notes)
    d10 = describe(np.arange(10.0))
    assert d10.p90 == pytest.approx(np.percentile(np.arange(10.0), 90))
    assert d10.p99 is None
    assert describe(np.arange(100.0)).p99 == pytest.approx(98.01)
    d3 = describe([1.0, 2.0, 3.0])
    assert d3.q1 is None and d3.median == 2.0 and d3.outliers is None


def test_deterministic_flag() -> None:
    assert describe([5.0] * 4).deterministic is True
    near = 1000.0 + np.array([0.0, 0.5, -0.5, 0.2, -0.2])  # CoV 0.04 %
    assert describe(near).deterministic is True
    assert describe(near, deterministic_threshold=0.0001).deterministic is False
    assert describe([1.0, 2.0, 3.0]).deterministic is False


def test_describe_one_reading_and_zero_mean() -> None:
    d = describe([7.0])
    assert d.n == 1 and d.mean == 7.0 and d.std is None and d.median is None
    z = describe([-1.0, 1.0, -2.0, 2.0])
    assert z.cov is None and any("coefficient of variation" in n for n in z.notes)


def test_tukey_outliers_against_hand_computed_fences() -> None:
    x = np.array([1.0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 100, -50])
    q1, q3 = np.percentile(x, [25, 75])
    lo, hi = q1 - 1.5 * (q3 - q1), q3 + 1.5 * (q3 - q1)
    r = tukey_outliers(x)
    assert (r.low_fence, r.high_fence) == (pytest.approx(lo), pytest.approx(hi))
    assert (r.n_low, r.n_high, r.count) == (1, 1, 2)
    assert describe(x).outliers == 2
    assert tukey_outliers(x, k=100).count == 0
    with pytest.raises(ValueError, match="at least 4"):
        tukey_outliers([1.0, 2.0])


# ----------------------------------------------------------------------------- aggregate
def test_aggregate_kinds() -> None:
    x = np.array([2.0, 4.0, 8.0])
    assert aggregate(x, "cost").value == pytest.approx(14 / 3)
    assert aggregate(x, "rate").value == pytest.approx(sps.hmean(x))
    g = aggregate(x, "ratio")
    assert g.value == pytest.approx(sps.gmean(x)) and "not be averaged" in g.notes[0]
    # 10 ops at 10 ops/s (1 s) and 30 ops at 30 ops/s (1 s): 40 ops in 2 s = 20 ops/s
    assert aggregate([10.0, 30.0], "rate", work=[10.0, 30.0]).value == pytest.approx(20.0)
    with pytest.raises(ValueError, match="> 0"):
        aggregate([1.0, -1.0], "rate")
    with pytest.raises(ValueError, match="kind"):
        aggregate([1.0], "speed")  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- summarize
def test_summarize_iid_keys_and_reference_values() -> None:
    x = np.random.default_rng(3).normal(50.0, 5.0, size=400)
    s = summarize(x, warmup="none")
    d = s.to_dict()
    assert set(d) == KEYS
    json.dumps(d)
    assert s.enough_data and s.n == 400 and s.warmup_readings == 0
    q, h = s.subsession_size, s.n_subsessions
    assert q * h <= 400 and 8 <= h <= 20
    b = x[: q * h].reshape(h, q).mean(axis=1)
    lo, hi = sps.t.interval(0.95, h - 1, loc=b.mean(), scale=sps.sem(b))
    assert (s.ci_low, s.ci_high) == (pytest.approx(lo), pytest.approx(hi))
    assert s.subsession_variance == pytest.approx(np.var(b, ddof=1))
    assert s.normality_p == pytest.approx(sps.shapiro(b).pvalue)
    assert s.mean == pytest.approx(x.mean())
    assert s.autocorrelation_lag1 == pytest.approx(sps.pearsonr(x[:-1], x[1:])[0], abs=0.01)
    med = sps.quantile_test(x, q=np.median(x)).confidence_interval(0.95)
    assert (s.median_ci_low, s.median_ci_high) == (med.low, med.high)
    assert s.ci_low < 50.0 < s.ci_high


def test_summarize_all_equal_is_deterministic_with_zero_width() -> None:
    s = summarize([3.5] * 12)
    assert s.deterministic and s.ci_low == s.ci_high == 3.5
    assert s.subsession_variance == 0.0
    assert any("zero width" in n for n in s.notes)
    json.dumps(s.to_dict())


def test_summarize_one_reading() -> None:
    s = summarize([42.0])
    d = s.to_dict()
    assert d["n"] == 1 and d["mean"] == 42.0
    fixed = {"n", "mean", "notes", "warmup_readings", "confidence", "enough_data", "certified"}
    assert all(d[k] is None for k in set(KEYS) - fixed)
    assert d["notes"] and d["enough_data"] is False and d["certified"] is False


@pytest.mark.parametrize(
    ("bad", "match"),
    [([], "empty"), ([1.0, float("nan")], "non-finite"), ([1.0, float("inf")], "non-finite")],
)
def test_summarize_bad_input(bad: list[float], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        summarize(bad)


def test_summarize_bad_options() -> None:
    with pytest.raises(ValueError, match="warmup"):
        summarize([1.0, 2.0, 3.0], warmup="auto")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="warmup_readings"):
        summarize([1.0, 2.0, 3.0], warmup=3)
    with pytest.raises(ValueError, match="confidence"):
        summarize([1.0, 2.0, 3.0], confidence=95)


def test_summarize_small_n_median_ci_note() -> None:
    s = summarize([1.0, 2.0, 4.0, 3.0, 5.0, 2.5, 3.5, 1.5], warmup="none")
    assert s.n == 8 and s.enough_data
    assert s.median_ci_low is not None  # n = 8 >= 6
    s5 = summarize([1.0, 2.0, 4.0, 3.0, 5.0], warmup="none")
    assert s5.median_ci_low is None
    assert any("n too small for a median CI at 95 %" in n or "needed" in n for n in s5.notes)


def test_summarize_negative_values_allowed() -> None:
    x = np.random.default_rng(4).normal(-10.0, 1.0, size=100)
    s = summarize(x, warmup="none")
    assert s.mean < 0 and s.ci_high < 0 and s.cov == pytest.approx(np.std(x, ddof=1) / 10, rel=0.1)


def test_summarize_warmup_modes() -> None:
    rng = np.random.default_rng(5)
    x = rng.normal(size=600)
    x[:50] += 20.0 * np.exp(-np.arange(50) / 10.0) + 5.0
    s = summarize(x)
    assert 45 <= s.warmup_readings <= 70 and s.n == 600 - s.warmup_readings
    assert any("MSER-5" in n for n in s.notes)
    assert summarize(x, warmup=100).warmup_readings == 100
    assert summarize(x, warmup="none").warmup_readings == 0


def test_summarize_not_enough_data_says_how_many() -> None:
    rng = np.random.default_rng(6)
    x = signal.lfilter([1.0], [1.0, -0.95], rng.standard_normal(200))
    s = summarize(x, warmup="none")
    assert not s.enough_data and s.ci_low is None and s.ci_high is None
    assert s.readings_needed is not None and s.readings_needed > 200
    assert any("readings needed" in n for n in s.notes)
    assert s.to_dict()["enough_data"] is False


def test_summarize_outlier_removal_only_on_request() -> None:
    x = np.concatenate([np.random.default_rng(7).normal(10.0, 1.0, 200), [60.0, 70.0]])
    kept = summarize(x, warmup="none")
    assert kept.n == 202 and kept.outliers >= 2
    removed = summarize(x, warmup="none", remove_outliers=True)
    assert removed.n == 202 - tukey_outliers(x).count
    assert any("removed on request" in n for n in removed.notes)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    st.integers(0, 2**31 - 1),
    st.integers(-6, 6),
    st.sampled_from([0.0, 1.0, -3.0, 1e3]),
    st.integers(20, 300),
)
def test_summarize_location_scale_equivariance(seed: int, k: int, a: float, n: int) -> None:
    """summarize(a + 2^k·x) = a + 2^k·summarize(x) for mean, CI, median, quantiles; the
    subsession size, counts and correlations do not change (2^k scaling is exact)."""
    x = np.random.default_rng(seed).gamma(2.0, size=n)
    b = 2.0**k
    s0, s1 = summarize(x, warmup="none"), summarize(a + b * x, warmup="none")
    assert s1.subsession_size == s0.subsession_size
    assert s1.n_subsessions == s0.n_subsessions and s1.enough_data == s0.enough_data
    tol = 1e-9 * b * (1 + float(np.abs(x).max())) + 1e-9 * abs(a)
    for key in ("mean", "median", "q1", "q3", "min", "max", "ci_low", "ci_high"):
        v0, v1 = getattr(s0, key), getattr(s1, key)
        if v0 is None:
            assert v1 is None
        else:
            assert v1 == pytest.approx(a + b * v0, abs=tol)
    assert s1.std == pytest.approx(b * s0.std, rel=1e-9)
    if s0.subsession_variance is not None:
        assert s1.subsession_variance == pytest.approx(b * b * s0.subsession_variance, rel=1e-6)
    assert s1.autocorrelation_lag1 == pytest.approx(s0.autocorrelation_lag1, abs=1e-9)
