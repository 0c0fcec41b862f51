"""Tests of stats.quantreg (docs/methods.md §7) against closed forms, brute force and simulation."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from scipy import stats

import benchrun.stats.quantreg as qr
from benchrun.stats.quantreg import quantile_fit, quantile_regression

TAUS = tuple(round(0.05 * k, 2) for k in range(1, 20))


def _minimiser_interval(x: np.ndarray, tau: float) -> tuple[float, float]:
    """Set of minimisers of Σ ρ_τ(x_i - q): x_(⌈nτ⌉), or [x_(nτ), x_(nτ+1)] if nτ is whole."""
    xs, k = np.sort(x), x.size * tau
    if abs(k - round(k)) < 1e-9:
        k = round(k)
        return xs[k - 1], xs[k]
    return xs[math.ceil(k) - 1], xs[math.ceil(k) - 1]


def test_binary_factor_equals_difference_of_sample_quantiles() -> None:
    rng = np.random.default_rng(20)
    a, b = rng.lognormal(0, 0.2, 37), rng.lognormal(0.1, 0.3, 53)  # nτ never whole
    res = quantile_regression(a, b, seed=0, n_boot=200)
    assert res.quantiles == pytest.approx(TAUS) and res.method.startswith("linprog")
    ref_a = np.quantile(a, TAUS, method="inverted_cdf")
    ref_b = np.quantile(b, TAUS, method="inverted_cdf")
    np.testing.assert_allclose(res.intercept, ref_a, rtol=1e-9)
    np.testing.assert_allclose(res.effect, ref_b - ref_a, rtol=1e-8, atol=1e-12)
    json.dumps(res.to_dict(), allow_nan=False)


def test_binary_factor_non_unique_solutions_lie_in_the_minimiser_set() -> None:
    rng = np.random.default_rng(21)
    a, b = rng.normal(10, 1, 40), rng.normal(11, 2, 60)  # nτ whole for many τ
    res = quantile_regression(a, b, seed=0, n_boot=200)
    for tau, b0, b1 in zip(res.quantiles, res.intercept, res.effect, strict=True):
        lo_a, hi_a = _minimiser_interval(a, tau)
        lo_b, hi_b = _minimiser_interval(b, tau)
        assert lo_a - 1e-9 <= b0 <= hi_a + 1e-9
        assert lo_b - 1e-9 <= b0 + b1 <= hi_b + 1e-9


def test_lp_optimum_matches_brute_force_over_interpolating_lines() -> None:
    """An optimal regression quantile passes through 2 observations (Koenker & Bassett
    1978), so the minimum over all lines through pairs of points is the optimum."""
    rng = np.random.default_rng(22)
    x = rng.uniform(0, 10, 9)
    y = 1 + 0.5 * x + rng.standard_t(3, 9)
    for tau in (0.1, 0.25, 0.5, 0.8):
        best = math.inf
        for i, j in itertools.combinations(range(9), 2):
            slope = (y[j] - y[i]) / (x[j] - x[i])
            r = y - (y[i] + slope * (x - x[i]))
            best = min(best, float(np.sum(r * (tau - (r < 0)))))
        beta, loss = quantile_fit(y, x, tau)
        assert loss == pytest.approx(best, rel=1e-9)
        r = y - beta[0] - beta[1] * x
        assert np.sum(np.isclose(r, 0, atol=1e-8)) >= 2  # an interpolating vertex


def test_noise_free_line_is_recovered_at_every_quantile() -> None:
    x = np.linspace(0, 5, 30)
    for tau in (0.1, 0.5, 0.9):
        beta, loss = quantile_fit(2 + 3 * x, x, tau)
        np.testing.assert_allclose(beta, [2, 3], rtol=1e-9)
        assert loss == pytest.approx(0, abs=1e-8)


def test_laplace_noise_slope_and_quantile_intercept_within_asymptotic_error() -> None:
    """Koenker-Bassett asymptotics: cov(β̂_τ) = τ(1-τ)/f(q_τ)² · (XᵀX)⁻¹. Laplace(0, 1):
    f(0) = 1/2; q_0.9 = ln 5, f(q_0.9) = 0.1."""
    rng = np.random.default_rng(23)
    n = 2000
    x = rng.uniform(0, 1, n)
    y = 2 + 3 * x + rng.laplace(0, 1, n)
    cov = np.linalg.inv(np.c_[np.ones(n), x].T @ np.c_[np.ones(n), x])
    for tau, q, f in ((0.5, 0.0, 0.5), (0.9, math.log(5), 0.1)):
        beta, _ = quantile_fit(y, x, tau)
        se = math.sqrt(tau * (1 - tau)) / f * np.sqrt(np.diag(cov))
        assert abs(beta[1] - 3) <= 4 * se[1]
        assert abs(beta[0] - (2 + q)) <= 4 * se[0]


def test_units_do_not_matter_equivariance_in_nanoseconds() -> None:
    rng = np.random.default_rng(24)
    a, b = rng.lognormal(0, 0.2, 51), rng.lognormal(0.2, 0.2, 47)
    base = quantile_regression(a, b, quantiles=(0.1, 0.5, 0.9), seed=1, n_boot=300)
    tiny = quantile_regression(a * 1e-9, b * 1e-9, quantiles=(0.1, 0.5, 0.9), seed=1, n_boot=300)
    np.testing.assert_allclose(np.array(tiny.effect) * 1e9, base.effect, rtol=1e-7)
    np.testing.assert_allclose(np.array(tiny.ci_high) * 1e9, base.ci_high, rtol=1e-7)


def test_closed_form_path_above_lp_limit_agrees_with_lp(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(25)
    a, b = rng.gamma(3, 1, 301), rng.gamma(3, 1.2, 299)
    lp = quantile_regression(a, b, seed=2, n_boot=200)
    monkeypatch.setattr(qr, "LP_MAX_OBSERVATIONS", 100)
    cf = quantile_regression(a, b, seed=2, n_boot=200)
    assert cf.method.startswith("closed form") and "> 100" in cf.notes[0]
    np.testing.assert_allclose(cf.effect, lp.effect, rtol=1e-8, atol=1e-12)
    assert cf.ci_low == lp.ci_low  # same seed, same bootstrap


@pytest.mark.slow
def test_bootstrap_ci_coverage_of_known_quantile_shift() -> None:
    """A ~ N(0, 1), B ~ N(0.5, 1.5²): true effect at τ is 0.5 + 0.5·z_τ."""
    rng = np.random.default_rng(26)
    taus = (0.25, 0.5, 0.9)
    truth = 0.5 + 0.5 * stats.norm.ppf(taus)
    n_sim = 200
    hits = np.zeros(len(taus))
    for _ in range(n_sim):
        a, b = rng.normal(0, 1, 150), rng.normal(0.5, 1.5, 150)
        res = quantile_regression(a, b, quantiles=taus, n_boot=400, seed=int(rng.integers(1 << 31)))
        hits += (np.array(res.ci_low) <= truth) & (truth <= np.array(res.ci_high))
    tol = 3 * math.sqrt(0.95 * 0.05 / n_sim)
    np.testing.assert_array_less(np.abs(hits / n_sim - 0.95), tol)


def test_bad_input_and_extreme_quantile_note() -> None:
    res = quantile_regression([1.0, 2, 3, 4], [2.0, 3, 4, 5], quantiles=(0.05, 0.5), n_boot=100)
    assert any("minimum or maximum" in n for n in res.notes)
    with pytest.raises(ValueError, match="between 0 and 1"):
        quantile_regression([1.0, 2], [1.0, 2], quantiles=(1.0,))
    with pytest.raises(ValueError, match="one-dimensional"):
        quantile_regression([[1.0, 2]], [1.0, 2])
    with pytest.raises(ValueError, match="NaN"):
        quantile_regression([1.0, np.nan], [1.0, 2])
    with pytest.raises(ValueError, match="n_boot"):
        quantile_regression([1.0, 2], [1.0, 2], n_boot=10)
    with pytest.raises(ValueError, match="rows"):
        quantile_fit([1.0, 2, 3], [1.0, 2], 0.5)
