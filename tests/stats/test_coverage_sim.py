"""Coverage simulations with known truth (docs/methods.md §3-4; docs/subsessions.md).

AR(1) series x_t = φ x_{t-1} + e_t, e_t iid N(0, 1), started in the stationary distribution,
true mean 0. Each CI that benchrun issues is checked against 0. Refusals ("not enough data")
are not counted as covered or missed: coverage is over the CIs actually issued, and the
refusal rate is asserted separately to be low, so refusing hard series cannot pass the test.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps
from stats_util import ar1

from benchrun.stats.autocorr import subsession_size
from benchrun.stats.intervals import median_ci
from benchrun.stats.summary import summarize

SERIES = 2000


def subsession_ci_outcomes(x: np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    """(coverage over issued CIs, refusal rate) of benchrun's rule on the rows of x; the
    t-interval is computed here with scipy from the subsession means of the chosen q."""
    covered = issued = 0
    for row in x:
        c = subsession_size(row, confidence)
        if not c.enough:
            continue
        h, q = c.n_subsessions, c.q
        b = row[: h * q].reshape(h, q).mean(axis=1)
        lo, hi = sps.t.interval(confidence, h - 1, loc=b.mean(), scale=sps.sem(b))
        issued += 1
        covered += lo <= 0.0 <= hi
    return covered / max(issued, 1), 1.0 - issued / len(x)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("phi", "n", "seed"),
    [(0.0, 200, 101), (0.5, 1000, 102), (0.9, 5000, 103)],
)
def test_subsession_t_ci_coverage_ar1(phi: float, n: int, seed: int) -> None:
    """95 % CI over subsession means covers the true mean in [0.93, 0.97] of 2 000 series,
    and refuses at most 2 % of them (n = 200 / 1 000 / 5 000 readings for φ = 0 / 0.5 / 0.9,
    i.e. 200 / 333 / 263 τ; Pilot's strict preset needs ~10 000 readings at φ = 0.9)."""
    coverage, refused = subsession_ci_outcomes(ar1(phi, n, SERIES, seed))
    assert refused <= 0.02
    assert 0.93 <= coverage <= 0.97


@pytest.mark.slow
def test_naive_t_ci_over_raw_readings_fails_at_phi_09() -> None:
    """Control: the same simulation detects a broken CI. The t-interval over raw AR(1)
    φ = 0.9 readings has true coverage ≈ P(|Z| < 1.96/√19) = 0.35, far below 0.93."""
    x = ar1(0.9, 2000, SERIES, 104)
    m = x.mean(axis=1)
    half = sps.t.ppf(0.975, x.shape[1] - 1) * x.std(axis=1, ddof=1) / np.sqrt(x.shape[1])
    coverage = np.mean(np.abs(m) <= half)
    expected = 2 * sps.norm.cdf(1.96 / np.sqrt(19.0)) - 1
    assert coverage == pytest.approx(expected, abs=0.04)
    assert coverage < 0.6


@pytest.mark.slow
def test_median_ci_coverage_lognormal() -> None:
    """Exact order-statistic median CI on iid lognormal data (true median 1), n = 40:
    coverage equals the binomial closed form 1 - 2·F(j-1) (0.9615 for n = 40, j = 14)
    within simulation error, and lies in [0.93, 0.97]."""
    n = 40
    rng = np.random.default_rng(105)
    x = rng.lognormal(0.0, 1.0, size=(SERIES, n))
    hits = 0
    for row in x:
        ci = median_ci(row, 0.95)
        hits += ci.low <= 1.0 <= ci.high
    coverage = hits / SERIES
    j = int(sps.binom.ppf(0.025, n, 0.5))
    while sps.binom.cdf(j, n, 0.5) > 0.025:
        j -= 1
    exact = 1 - 2 * sps.binom.cdf(j, n, 0.5)  # ranks j+1 .. n-j
    assert exact == pytest.approx(0.9615, abs=1e-4)
    assert coverage == pytest.approx(exact, abs=0.015)
    assert 0.93 <= coverage <= 0.97


@pytest.mark.slow
def test_summarize_median_ci_coverage_autocorrelated() -> None:
    """exp(AR(1) φ = 0.5), true median exp(0) = 1, n = 1 000, 600 series: summarize's
    median CI (effective-n ranks) covers in [0.92, 0.97]; the plain iid interval on the same
    series covers far less (about 0.81), so the adjustment matters."""
    y = np.exp(ar1(0.5, 1000, 600, 106))
    hits = issued = naive = 0
    for row in y:
        s = summarize(row, warmup="none")
        ci = median_ci(row)
        naive += ci.low <= 1.0 <= ci.high
        if s.median_ci_low is None:
            continue
        issued += 1
        hits += s.median_ci_low <= 1.0 <= s.median_ci_high
    assert issued >= 590
    assert 0.92 <= hits / issued <= 0.97
    assert naive / len(y) < 0.88
