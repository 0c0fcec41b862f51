"""MSER-5 warm-up detection (docs/methods.md §2; White 1997).

References: a brute-force transcription of the docs/methods.md §2 formula (independent of the
vectorised implementation), hand-made series with an obvious answer, and a simulation with
a planted transient of known length.
"""

from __future__ import annotations

import numpy as np
import pytest
from stats_util import ar1

import benchrun.stats.warmup as warmup_module
from benchrun.stats.warmup import mser5, mser5_at_limit


def brute_force_mser5(x: np.ndarray) -> int:
    """docs/methods.md §2 literally: batches of 5, d over the first half, argmin of
    Σ_{j>d} (z_j - mean_{>d})^2 / (k - d)^2, first minimum on ties."""
    k = len(x) // 5
    z = [sum(x[5 * j : 5 * j + 5]) / 5 for j in range(k)]
    best, best_d = None, 0
    for d in range(k // 2 + 1):
        tail = z[d:]
        m = sum(tail) / len(tail)
        val = sum((v - m) ** 2 for v in tail) / (k - d) ** 2
        if best is None or val < best - 1e-15 * abs(best):
            best, best_d = val, d
    return 5 * best_d


@pytest.mark.parametrize("seed", range(8))
def test_mser5_matches_formula(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 400))
    x = rng.normal(size=n) + 4.0 * np.exp(-np.arange(n) / rng.uniform(2, 30))
    assert mser5(x, alpha=None) == brute_force_mser5(list(x))


def test_obvious_transient() -> None:
    """Ten readings at 100 then 90 readings alternating 1, 2: cut exactly 10."""
    x = np.array([100.0] * 10 + [1.0, 2.0] * 45)
    assert mser5(x) == 10
    assert mser5(np.array([1.0, 2.0] * 50)) == 0


def test_short_series_and_bad_input() -> None:
    assert mser5(np.arange(19.0)) == 0  # fewer than 4 batches: no truncation
    with pytest.raises(ValueError, match="non-finite"):
        mser5([1.0, float("inf")] * 20)
    with pytest.raises(ValueError, match="empty"):
        mser5([])


def test_at_limit_flags_a_series_without_steady_state() -> None:
    """A steady downward trend: MSER-5 cuts as allowed (half), which is flagged."""
    x = np.linspace(100.0, 0.0, 400) + np.random.default_rng(0).normal(0, 0.1, 400)
    assert mser5(x) == 200
    assert mser5_at_limit(x)
    assert not mser5_at_limit(np.random.default_rng(1).normal(size=400))


def test_planted_warmup_is_found() -> None:
    """Planted series (1 000 seeded series, n = 2 000 readings each):
    x_t = e_t + 8·exp(-t/25) for t < 50 and x_t = e_t afterwards, e_t iid N(0, 1).
    The transient lasts exactly 50 readings (still 1.1 σ at t = 49).

    Target (issue 3): |d - 50| <= 10 in >= 90 % of series. Plain MSER-5 (alpha=None)
    overshoots by 3+ batches in about 11 % of series (past the transient MSER(d) moves like
    a random walk), reaching only ~0.87; benchrun's step-back (stats/warmup.py) gives back
    steady batches and reaches the target. Both are asserted, so the test shows why the
    refinement exists.
    """
    rng = np.random.default_rng(2024)
    n, series = 2000, 1000
    t = np.arange(n)
    planted = np.where(t < 50, 8.0 * np.exp(-t / 25.0), 0.0)
    x = rng.standard_normal((series, n)) + planted
    d = np.array([mser5(row) for row in x])
    err = d - 50
    assert np.mean(err < -10) <= 0.02
    assert np.mean(np.abs(err) <= 10) >= 0.90
    plain = np.array([mser5(row, alpha=None) for row in x]) - 50
    assert np.mean(np.abs(plain) <= 10) < 0.90


@pytest.mark.parametrize("n", [20, 40, 100, 400])
def test_clean_series_are_rarely_truncated(n: int) -> None:
    """iid N(0,1) series have no warm-up (truth: 0). Plain MSER-5 truncates something in
    30-58 % of such series (half of the series in 58 % at n = 20); with the significance
    guard at alpha = 0.01 the share truncated must stay small (<= 5 %, 400 series)."""
    rng = np.random.default_rng(n)
    x = rng.standard_normal((400, n))
    guarded = np.array([mser5(row) for row in x])
    plain = np.array([mser5(row, alpha=None) for row in x])
    assert np.mean(guarded > 0) <= 0.05
    assert np.mean(plain > 0) >= 0.2  # the problem the guard exists for


def test_decaying_transient_in_a_short_series_is_found() -> None:
    """A transient that decays, as a machine warming up over rounds does: 200 values,
    x_t = e_t + 4·exp(-t/8) for t < 20, e_t iid N(0, 1) (truth: 20 values of warm-up,
    1.5 σ on average). The significance check compares the truncated batch means with
    the kept ones' spread (stats/warmup.py); a Welch test that also uses the head's own
    spread (the decay makes it wide) found this in about 2 % of series. 500 series."""
    rng = np.random.default_rng(31)
    n, t = 200, np.arange(200)
    x = rng.standard_normal((500, n)) + np.where(t < 20, 4.0 * np.exp(-t / 8.0), 0.0)
    d = np.array([mser5(row) for row in x])
    assert np.mean(d > 0) >= 0.90
    assert np.mean(np.abs(d - 20) <= 10) >= 0.75


@pytest.mark.parametrize(("phi", "n", "bound"), [(0.7, 100, 0.05), (0.97, 2000, 0.04)])
def test_correlated_steady_series_are_rarely_truncated(phi: float, n: int, bound: float) -> None:
    """Stationary AR(1) series have no warm-up (truth: 0), but a slow excursion at the
    start looks like one. The significance check counts the kept batch means as n/τ
    independent ones; with τ forced to 1 the long φ = 0.97 series are cut far more often
    (about 12 % against about 1 %). 300 series each."""
    x = ar1(phi, n, 300, seed=71)
    cut = np.mean([mser5(row) > 0 for row in x])
    assert cut <= bound
    if phi > 0.9:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(warmup_module, "_batch_tau", lambda tail: 1.0)
            naive = np.mean([mser5(row) > 0 for row in x])
        assert naive >= cut + 0.05


@pytest.mark.parametrize("tau", [1.0, 2.5])
def test_transient_p_is_scipys_t_test_without_importing_scipy_stats(tau: float) -> None:
    """The head-against-tail p-value is ``2 * scipy.stats.t.sf(|t|, m / tau - 1)`` bit for
    bit (the module calls ``scipy.special.stdtr``, which ``t.sf`` evaluates, so that
    ``benchrun show`` need not import scipy.stats), and the step-back limit's quantile is
    ``scipy.stats.norm.isf``'s."""
    from scipy import stats as sps
    from scipy.special import ndtri

    rng = np.random.default_rng(3)
    for _ in range(200):
        head = rng.normal(10.0, 1.0, int(rng.integers(1, 6)))
        m = int(rng.integers(8, 60))
        tail_mean, tail_sd = float(rng.normal(10.0, 0.5)), float(rng.uniform(0.1, 2.0))
        t = (float(head.mean()) - tail_mean) / (tail_sd * np.sqrt(tau / head.size + tau / m))
        expected = 2.0 * float(sps.t.sf(abs(t), max(m / tau - 1.0, 1.0)))
        assert warmup_module._transient_p(head, tail_mean, tail_sd, m, tau) == expected
    for alpha in (0.001, 0.01, 0.05, 0.2):
        assert float(-ndtri(alpha / 2.0)) == float(sps.norm.isf(alpha / 2.0))
