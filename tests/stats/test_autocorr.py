"""Autocorrelation, integrated autocorrelation time and subsession sizing (docs/methods.md §3).

References: NIST StRD univariate datasets (certified mean, sd, lag-1 r; tolerances from GSL's
statistics/test_nist.c), Pilot's unit-test vector (docs/methods.md §12), numpy's correlate, and
AR(1) closed forms (ρ_k = φ^k, τ = (1+φ)/(1-φ)).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import signal
from scipy import stats as sps

from benchrun.stats.autocorr import (
    acf,
    autocorrelation,
    integrated_autocorrelation_time,
    pilot_subsession_size,
    subsession_means,
    subsession_size,
)
from benchrun.stats.intervals import mean_ci, subsessions_for_width
from benchrun.stats.summary import describe

# NIST StRD reference data shipped with the tests (tests/data/README.md, nist/SOURCES.md)
NIST = Path(__file__).resolve().parents[1] / "data" / "nist"


def load_nist(name: str) -> tuple[np.ndarray, float, float, float]:
    """(data, certified mean, sd, lag-1 r) from a NIST .dat file or a commons-math copy."""
    path = next(p for p in NIST.iterdir() if p.name.startswith(name + "."))
    lines = path.read_text().splitlines()
    if path.suffix == ".dat":
        cert = [float(line.split()[-1]) for line in lines[40:43]]
        data = [float(line) for line in lines[60:] if line.strip()]
        return np.array(data), cert[0], cert[1], cert[2]
    vals: dict[str, float] = {}
    data = []
    for line in lines:
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        if "=" in s:
            k, v = s.split("=")
            vals[k.strip()] = float(v)
        else:
            data.append(float(s))
    arr = np.array(data)
    assert arr.size == int(vals["n"])
    return arr, vals["mean"], vals["standardDeviation"], vals["autocorrelationCoefficient"]


# (dataset, rel tol mean, rel tol sd, rel tol lag-1) from GSL test_nist.c, floored at 1e-14
# for mean/sd (GSL's 1e-15 is below a few ulps of double rounding in our two-pass sums)
GSL_TOL = {
    "Lew": (1e-15, 1e-15, 1e-14),
    "Lottery": (1e-15, 1e-15, 1e-14),
    "Mavro": (1e-15, 1e-13, 1e-13),
    "Michelso": (1e-15, 1e-13, 1e-13),
    "PiDigits": (1e-14, 1e-15, 1e-14),
    "NumAcc1": (1e-15, 1e-15, 1e-15),
    "NumAcc2": (1e-15, 1e-15, 1e-10),
    "NumAcc3": (1e-15, 1e-9, 1e-10),
    "NumAcc4": (1e-15, 1e-7, 1e-10),
}


@pytest.mark.parametrize("name", sorted(GSL_TOL))
def test_nist_certified_values(name: str) -> None:
    x, mean, sd, r1 = load_nist(name)
    tm, ts, tr = GSL_TOL[name]
    d = describe(x)
    assert d.mean == pytest.approx(mean, rel=max(tm, 1e-14), abs=0)
    assert d.std == pytest.approx(sd, rel=max(ts, 1e-14), abs=0)
    assert autocorrelation(x, 1) == pytest.approx(r1, rel=tr, abs=0)
    # the FFT acf gives the same lag-1 value (looser: FFT round-off)
    assert acf(x, 1)[1] == pytest.approx(r1, rel=max(tr, 1e-11), abs=1e-12)


def test_acf_matches_direct_numpy_correlation() -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(size=500).cumsum() + rng.normal(size=500)
    d = x - x.mean()
    direct = np.correlate(d, d, mode="full")[d.size - 1 :] / np.dot(d, d)
    np.testing.assert_allclose(acf(x, 60), direct[:61], rtol=0, atol=1e-12)
    for k in (1, 7, 60):
        assert autocorrelation(x, k) == pytest.approx(direct[k], abs=1e-12)


def test_acf_of_ar1_is_geometric() -> None:
    """AR(1) with φ = 0.7: ρ_k = φ^k (closed form); n = 200 000 so the sample acf is close."""
    rng = np.random.default_rng(11)
    x = signal.lfilter([1.0], [1.0, -0.7], rng.standard_normal(200_000))
    r = acf(x, 5)
    np.testing.assert_allclose(r, 0.7 ** np.arange(6), atol=0.01)


@pytest.mark.parametrize("phi", [0.0, 0.5, 0.9])
def test_integrated_autocorrelation_time_of_ar1(phi: float) -> None:
    """τ = (1+φ)/(1-φ) for AR(1); averaged over 20 series of 20 000 readings, within 6 %."""
    rng = np.random.default_rng(5)
    e = rng.standard_normal((20, 20_000))
    x = signal.lfilter([1.0], [1.0, -phi], e, axis=1)
    taus = [integrated_autocorrelation_time(row) for row in x]
    assert np.mean(taus) == pytest.approx((1 + phi) / (1 - phi), rel=0.06)


def test_bad_input_is_rejected_clearly() -> None:
    with pytest.raises(ValueError, match="empty"):
        autocorrelation([], 1)
    with pytest.raises(ValueError, match="non-finite"):
        acf([1.0, float("nan"), 2.0])
    with pytest.raises(ValueError, match="lag"):
        autocorrelation([1.0, 2.0, 3.0], 3)
    with pytest.raises(ValueError, match="all values are equal"):
        acf([2.0, 2.0, 2.0])
    assert autocorrelation([2.0, 2.0, 2.0], 1) is None
    with pytest.raises(ValueError, match="larger than"):
        subsession_means([1.0, 2.0], 3)


# ----------------------------------------------------------------------------- Pilot §12
FERRARI = np.array(
    "1.21 1.67 1.71 1.53 2.03 2.15 1.88 2.02 1.75 1.84 1.61 1.35 1.43 1.64 1.52 1.44 1.17 "
    "1.42 1.64 1.86 1.68 1.91 1.73 2.18 2.27 1.93 2.19 2.04 1.92 1.97 1.65 1.71 1.89 1.70 "
    "1.62 1.48 1.55 1.39 1.45 1.67 1.62 1.77 1.88 1.82 1.93 2.09 2.24 2.16".split(),
    dtype=float,
)


def test_pilot_vector_section_12() -> None:
    assert FERRARI.size == 48
    assert describe(FERRARI).mean == pytest.approx(1.756458333333333, rel=1e-15)
    # limit 1.0 accepts q = 1; 0.6 first accepts q = 2; 0.1 first accepts q = 4
    c1 = pilot_subsession_size(FERRARI, 1.0, 5)
    assert (c1.q, c1.lag1) == (1, pytest.approx(0.63655574361384437, rel=1e-13))
    c2 = pilot_subsession_size(FERRARI, 0.6, 5)
    assert (c2.q, c2.lag1) == (2, pytest.approx(0.55892351761172487, rel=1e-13))
    c4 = pilot_subsession_size(FERRARI, 0.1, 5)
    assert c4.q == 4 and c4.n_subsessions == 12 and c4.enough
    assert c4.lag1 == pytest.approx(0.08230986644266707, rel=1e-12)
    b = subsession_means(FERRARI, 4)
    ci = mean_ci(b, 0.95)
    assert ci.high - ci.low == pytest.approx(0.29157062128900485, rel=1e-13)
    need = subsessions_for_width(float(np.std(b, ddof=1)), b.size, float(b.mean()), 0.05)
    assert need == 34


def test_pilot_rule_refuses_when_no_size_qualifies() -> None:
    c = pilot_subsession_size(FERRARI, 0.1, 20)  # q <= 2 allowed; both have r1 > 0.5
    assert not c.enough and c.method == "pilot"


# ----------------------------------------------------------------------------- subsessions
@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=200),
    st.integers(1, 20),
)
def test_subsession_means_mean_equals_mean_of_used_readings(vals: list[float], q: int) -> None:
    x = np.array(vals)
    if q > x.size:
        return
    b = subsession_means(x, q)
    h = x.size // q
    assert b.size == h
    assert b.mean() == pytest.approx(x[: h * q].mean(), rel=1e-9, abs=1e-6)


def test_subsession_size_iid_short_series_gets_q1() -> None:
    """20 per-round values with no correlation: q = 1 (the 20 rounds are the subsessions)."""
    x = np.array([9.8, 10.3, 10.1, 9.7, 10.0, 10.4, 9.9, 10.2, 9.6, 10.1] * 2)
    x = x + np.linspace(0, 1e-9, 20)  # not all equal
    rng = np.random.default_rng(2)
    x = rng.permutation(x)
    c = subsession_size(x)
    # the reference: Pilot's loosest rule also takes q = 1 on this series
    assert pilot_subsession_size(x, 0.8, 8).q == 1
    assert c.enough and c.q == 1 and c.n_subsessions == 20


def test_subsession_size_refuses_most_short_correlated_series() -> None:
    """AR(1) φ = 0.9 (τ = 19) with 300 readings (16 τ) is too short: most of 400 such series
    are refused (measured 70 % over 2 000 in docs/subsessions.md), and every refusal
    estimates more readings than it has, near min_subsessions · (1 + 5 (τ - 1)) = 728."""
    rng = np.random.default_rng(8)
    x = signal.lfilter([1.0], [1.0, -0.9], rng.standard_normal((400, 300)), axis=1)
    choices = [subsession_size(row) for row in x]
    refused = [c for c in choices if not c.enough]
    assert len(refused) / len(choices) >= 0.55
    needs = np.array([c.readings_needed for c in refused])
    assert (needs > 300).all()
    assert 400 < np.median(needs) < 2000
    assert all(any("not enough data" in n for n in c.notes) for c in refused)
    json.dumps(refused[0].to_dict())


def test_subsession_size_random_walk_is_never_enough() -> None:
    """A random walk has no finite correlation time: no CI, whatever the length."""
    rng = np.random.default_rng(4)
    for n in (200, 2000, 20000):
        c = subsession_size(rng.standard_normal(n).cumsum())
        assert not c.enough and c.readings_needed is not None and c.readings_needed > n


def test_subsession_size_reports_tau_and_ess_consistently() -> None:
    rng = np.random.default_rng(9)
    x = signal.lfilter([1.0], [1.0, -0.5], rng.standard_normal(5000))
    c = subsession_size(x)
    assert c.enough and c.tau is not None and c.ess is not None
    assert c.ess == pytest.approx(5000 / c.tau)
    assert c.tau == pytest.approx(3.0, rel=0.25)  # (1 + 0.5)/(1 - 0.5)
    assert c.q >= 1 + math.ceil(5 * (c.tau - 1) - 1e-9) == c.q_min
    assert 8 <= c.n_subsessions <= 20
    b = subsession_means(x, c.q)
    d = b - b.mean()
    assert c.lag1 == pytest.approx(np.dot(d[:-1], d[1:]) / np.dot(d, d))


def test_subsession_size_deterministic_series() -> None:
    c = subsession_size([3.0] * 50)
    assert c.enough and c.q == 1 and c.method == "deterministic"


def test_subsession_lag1_check_catches_slow_drift() -> None:
    """White noise plus a slow sine of 2 periods: the acf window closes at short lags
    (τ looks ~1) but the subsession means follow the sine; the lag-1 check must not
    accept them silently (either q grows or the series is refused)."""
    n = 4000
    rng = np.random.default_rng(1)
    t = np.arange(n)
    x = rng.standard_normal(n) + 3.0 * np.sin(2 * np.pi * 2 * t / n)
    c = subsession_size(x)
    if c.enough:
        b = subsession_means(x, c.q)
        r1 = sps.pearsonr(b[:-1], b[1:]).statistic
        assert r1 < 0.6
    else:
        assert c.readings_needed is not None and c.readings_needed > n


def _sokal_reference(x: np.ndarray, window: float = 5.0) -> tuple[float, int]:
    """τ and the window M by a direct O(n²) implementation of Sokal's rule (reference)."""
    d = x - x.mean()
    n = d.size
    c0 = float(np.dot(d, d))
    tau = 1.0
    for m in range(1, n // 2 + 1):
        tau += 2.0 * float(np.dot(d[:-m], d[m:])) / c0
        if m >= window * tau:
            return tau, m
    raise AssertionError("window did not close")


@pytest.mark.parametrize(("phi", "n"), [(0.0, 60), (0.5, 400), (0.8, 2000)])
def test_tau_upper_bound_sizes_subsessions_by_the_closed_form(phi: float, n: int) -> None:
    rng = np.random.default_rng(11)
    x = signal.lfilter([1.0], [1.0, -phi], rng.normal(size=n + 200))[200:]
    tau, m = _sokal_reference(x)
    z = sps.norm.ppf(0.95)
    tau_u = max(tau, 1.0) * (1.0 + z * math.sqrt(2.0 * (2 * m + 1) / n))
    expected_q_min = 1 + math.ceil(5.0 * (tau_u - 1.0) - 1e-9)
    got = subsession_size(x, 0.95, tau_upper=0.95)
    assert got.tau == pytest.approx(tau, rel=1e-9)
    assert got.q_min == expected_q_min
    plain = subsession_size(x, 0.95)
    assert plain.q_min <= got.q_min  # the bound only ever asks for larger subsessions


def test_tau_upper_bound_restores_coverage_when_the_rule_is_reapplied() -> None:
    """Sequential use (docs/methods.md §10): re-apply the rule at n = 20, 30, 45, ... and take the
    CI the first time the series is accepted. On AR(1) φ = 0.7 (τ = 5.67) the plain rule
    accepts early, when τ̂ happens to be small, and its first CIs cover far less than 95 %;
    the upper bound must bring the coverage of first-accepted CIs close to nominal."""
    rng = np.random.default_rng(5)
    phi, n_max, reps = 0.7, 1200, 400
    e = rng.normal(size=(reps, n_max + 100))
    series = signal.lfilter([1.0], [1.0, -phi], e, axis=1)[:, 100:]
    looks = [20]
    while looks[-1] < n_max:
        looks.append(min(n_max, math.ceil(looks[-1] * 1.5)))

    def first_ci_coverage(tau_upper: float | None) -> float:
        hits = issued = 0
        for x in series:
            for n in looks:
                ch = subsession_size(x[:n], 0.95, tau_upper=tau_upper)
                if ch.enough:
                    b = subsession_means(x[:n], ch.q)
                    half = sps.t.ppf(0.975, b.size - 1) * b.std(ddof=1) / math.sqrt(b.size)
                    hits += abs(b.mean()) <= half
                    issued += 1
                    break
        return hits / issued

    plain, bounded = first_ci_coverage(None), first_ci_coverage(0.95)
    assert plain < 0.88  # the flaw the bound exists for (measured ~0.8)
    assert bounded > 0.92 and bounded > plain + 0.05


def _upper_bound(x: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """(τ, its upper confidence bound) by the reference Sokal window and the closed form
    ``max(τ, 1)·(1 + z·sqrt(2(2M + 1)/n))``."""
    tau, m = _sokal_reference(x)
    z = sps.norm.ppf(level)
    return tau, max(tau, 1.0) * (1.0 + z * math.sqrt(2.0 * (2 * m + 1) / x.size))


def test_note_says_independence_not_shown_when_only_the_upper_bound_exceeds_1() -> None:
    # i.i.d. readings whose τ̂ is below 1: only the upper bound asks for longer subsessions,
    # so the note must not call the readings autocorrelated
    x = np.random.default_rng(1).normal(size=400)
    tau, upper = _upper_bound(x)
    assert tau < 1.0 < upper
    got = subsession_size(x, 0.95, tau_upper=0.95)
    assert got.enough and got.q > 1
    (note,) = got.notes
    assert note.startswith(
        f"independence not shown (tau = {tau:.2f}, upper bound {upper:.2f} > 1): CI over "
        f"{got.n_subsessions} subsession means of {got.q} readings"
    )
    assert "autocorrelated" not in note


def test_note_says_autocorrelated_when_the_estimate_exceeds_1() -> None:
    # AR(1) φ = 0.5 (τ = 3): the estimate itself is above 1
    e = np.random.default_rng(11).normal(size=600)
    x = signal.lfilter([1.0], [1.0, -0.5], e)[200:]
    tau, _ = _upper_bound(x)
    assert tau > 1.0
    got = subsession_size(x, 0.95, tau_upper=0.95)
    assert got.enough
    (note,) = got.notes
    assert note == (
        f"readings are autocorrelated (tau = {tau:.2f}): CI over {got.n_subsessions} "
        f"subsession means of {got.q} readings"
    )
