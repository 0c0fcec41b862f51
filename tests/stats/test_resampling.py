"""Tests of stats.resampling (docs/methods.md §9): enumeration, simulations with known truth,
closed forms (delta method, PCA identities)."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from scipy import stats

from benchrun.stats.resampling import biplot, gmean_ratio_ci, randomization_test, runs_for_ci_width


# ------------------------------------------------------------------------ randomization
def _brute_force_p(a: list, b: list, fn, alternative: str) -> float:
    """Every within-benchmark relabeling, enumerated directly with itertools.product."""

    def stat(pairs: list[tuple[list, list]]) -> float:
        return float(np.mean([math.log(fn(x)) - math.log(fn(y)) for x, y in pairs]))

    observed = stat(list(zip(a, b, strict=True)))
    per_bench = []
    for x, y in zip(a, b, strict=True):
        pool = list(x) + list(y)
        options = []
        for chosen in itertools.combinations(range(len(pool)), len(x)):
            rest = [pool[i] for i in range(len(pool)) if i not in chosen]
            options.append(([pool[i] for i in chosen], rest))
        per_bench.append(options)
    values = np.array([stat(list(combo)) for combo in itertools.product(*per_bench)])
    eps = 1e-9 * abs(observed) + 1e-14
    if alternative == "two-sided":
        return float(np.mean(np.abs(values) >= abs(observed) - eps))
    if alternative == "greater":
        return float(np.mean(values >= observed - eps))
    return float(np.mean(values <= observed + eps))


@pytest.mark.parametrize("center", ["mean", "median"])
@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_randomization_exact_matches_brute_force_enumeration(center: str, alternative: str) -> None:
    a = {"p": [3.1, 2.9], "q": [7.0, 7.7, 6.1], "r": [1.0, 1.4]}
    b = {"p": [2.0, 2.5], "q": [6.5, 5.9], "r": [1.2, 0.9, 1.1]}
    res = randomization_test(a, b, center=center, alternative=alternative)
    assert res.exact and res.n_permutations == 6 * 10 * 10
    fn = np.mean if center == "mean" else np.median
    ref = _brute_force_p(list(a.values()), list(b.values()), fn, alternative)
    assert res.p_value == pytest.approx(ref, abs=1e-12)
    expected = np.mean([np.log(fn(a[k]) / fn(b[k])) for k in a])
    assert res.statistic == pytest.approx(expected, rel=1e-12)
    json.dumps(res.to_dict(), allow_nan=False)


def test_randomization_monte_carlo_agrees_with_exact() -> None:
    rng = np.random.default_rng(11)
    a = rng.lognormal(0.15, 0.2, (3, 3))
    b = rng.lognormal(0.0, 0.2, (3, 3))
    exact = randomization_test(a, b)  # 20**3 = 8000 relabelings
    mc = randomization_test(a, b, n_permutations=7999, seed=3)
    assert exact.exact and not mc.exact
    se = math.sqrt(exact.p_value * (1 - exact.p_value) / 7999)
    assert abs(mc.p_value - exact.p_value) <= 4 * se + 1 / 8000


def test_randomization_p_value_uniform_under_h0_and_powerful_under_h1() -> None:
    rng = np.random.default_rng(12)
    n_sim, alpha_levels = 500, (0.05, 0.10, 0.25)
    p_null, p_alt = [], []
    for _ in range(n_sim):
        base = rng.uniform(1, 5, (4, 1))
        b = base * rng.lognormal(0, 0.3, (4, 6))
        a0 = base * rng.lognormal(0, 0.3, (4, 6))
        p_null.append(
            randomization_test(a0, b, n_permutations=199, seed=rng.integers(1 << 31)).p_value
        )
        if len(p_alt) < 100:
            a1 = base * rng.lognormal(0.4, 0.3, (4, 6))
            p_alt.append(randomization_test(a1, b, n_permutations=199, seed=1).p_value)
    p_null = np.array(p_null)
    for alpha in alpha_levels:
        sim_err = 3 * math.sqrt(alpha * (1 - alpha) / n_sim)
        assert abs(np.mean(p_null <= alpha) - alpha) <= sim_err
    assert np.mean(np.array(p_alt) <= 0.05) > 0.9


# ------------------------------------------------------------------------- bootstrap CI
def test_gmean_ratio_estimate_and_width_match_delta_method() -> None:
    rng = np.random.default_rng(13)
    n, m = 10, 40
    base = rng.uniform(0.5, 20, (n, 1))
    a = base * rng.lognormal(0.1, 0.25, (n, m))
    b = base * rng.lognormal(0.0, 0.25, (n, m))
    ci = gmean_ratio_ci(a, b, n_resamples=4000, method="percentile", seed=0)
    assert ci.estimate == pytest.approx(stats.gmean(a.mean(1) / b.mean(1)), rel=1e-12)
    # delta method: var(log R) = Σ_τ (s_A²/(m x̄_A²) + s_B²/(m x̄_B²)) / n²
    var = np.sum(a.var(1) / (m * a.mean(1) ** 2) + b.var(1) / (m * b.mean(1) ** 2)) / n**2
    delta_width = 2 * stats.norm.ppf(0.975) * math.sqrt(var)
    assert math.log(ci.high / ci.low) == pytest.approx(delta_width, rel=0.08)
    assert ci.n == 2 * n * m


@pytest.mark.slow
@pytest.mark.parametrize("method", ["percentile", "BCa"])
def test_gmean_ratio_ci_coverage_with_known_ratio(method: str) -> None:
    """Lognormal runs: E[A_τ]/E[B_τ] = e^δ in every benchmark, so the true R = e^δ.

    The bootstrap's plug-in variance is (m-1)/m of the unbiased one, so the expected
    coverage is about 2Φ(1.96·sqrt(39/40)) - 1 = 0.947 at m = 40; the tolerance is 3
    simulation standard errors around 0.95."""
    rng = np.random.default_rng(14)
    n_sim, n, m, delta = 400, 5, 40, 0.1
    hits = 0
    for _ in range(n_sim):
        mu = rng.uniform(0, 3, (n, 1))
        a = np.exp(mu + delta) * rng.lognormal(0, 0.3, (n, m))
        b = np.exp(mu) * rng.lognormal(0, 0.3, (n, m))
        ci = gmean_ratio_ci(a, b, n_resamples=1000, method=method, seed=int(rng.integers(1 << 31)))
        hits += ci.low <= math.exp(delta) <= ci.high
    coverage = hits / n_sim
    assert abs(coverage - 0.95) <= 3 * math.sqrt(0.95 * 0.05 / n_sim)


def test_gmean_ratio_ci_degenerate_and_bad_input() -> None:
    ci = gmean_ratio_ci([[2.0, 2.0, 2.0]], [[1.0, 1.0, 1.0]], n_resamples=200, seed=0)
    assert ci.estimate == 2.0 and ci.low is None and ci.notes
    json.dumps(ci.to_dict(), allow_nan=False)
    with pytest.raises(ValueError, match="> 0"):
        gmean_ratio_ci([[1.0, -1.0]], [[1.0, 2.0]])
    with pytest.raises(ValueError, match="at least 2 runs"):
        gmean_ratio_ci([[1.0]], [[1.0]])
    with pytest.raises(ValueError, match="method"):
        gmean_ratio_ci([[1.0, 2]], [[1.0, 2]], method="studentized")


# -------------------------------------------------------------------------- sample size
def test_runs_for_ci_width_first_crossing_and_delta_method_scale() -> None:
    rng = np.random.default_rng(15)
    n, sigma = 8, 0.3
    a = rng.lognormal(0.05, sigma, (n, 200))
    b = rng.lognormal(0.0, sigma, (n, 200))
    target = 0.08
    res = runs_for_ci_width(a, b, target, n_resamples=1000, seed=0)
    assert res.m is not None
    assert res.widths[-1] == (res.m, pytest.approx(res.widths[-1][1]))
    assert res.widths[-1][1] <= target and all(w > target for _, w in res.widths[:-1])
    # delta method with the true lognormal CV: width ≈ 2 z R sqrt(2 cv² / (m n))
    cv2 = math.expm1(sigma**2)
    m_delta = 2 * cv2 * (2 * 1.96 * math.exp(0.05) / target) ** 2 / n
    assert 0.6 * m_delta <= res.m <= 1.5 * m_delta


def test_runs_for_ci_width_not_reached_gives_none_and_estimate() -> None:
    rng = np.random.default_rng(16)
    a, b = rng.lognormal(0, 0.3, (3, 8)), rng.lognormal(0, 0.3, (3, 8))
    res = runs_for_ci_width(a, b, 0.001, n_resamples=500, seed=0)
    assert res.m is None and res.m_available == 8 and len(res.widths) == 6
    assert res.extrapolated_m > 8 and "not reached" in res.notes[0]
    json.dumps(res.to_dict(), allow_nan=False)


# ------------------------------------------------------------------------------- biplot
def test_biplot_closed_forms() -> None:
    rng = np.random.default_rng(17)
    med = rng.lognormal(0, 1, (4, 7))
    res = biplot(med, ["m1", "m2", "m3", "m4"], [f"b{j}" for j in range(7)])
    scores, loadings = np.array(res.scores), np.array(res.loadings)
    logs = np.log(med)
    assert sum(res.explained) == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(scores @ loadings.T + np.array(res.column_means), logs, atol=1e-12)
    np.testing.assert_allclose(loadings.T @ loadings, np.eye(loadings.shape[1]), atol=1e-12)
    # shares equal the eigenvalue shares of the covariance matrix (independent route)
    centred = logs - logs.mean(0)
    eig = np.sort(np.linalg.eigvalsh(centred.T @ centred))[::-1][: len(res.explained)]
    np.testing.assert_allclose(res.explained, eig / eig.sum(), atol=1e-12)
    assert len(res.explained) == 3  # 4 machines, centred: rank <= 3
    json.dumps(res.to_dict(), allow_nan=False)


def test_biplot_rank_one_and_unit_invariance() -> None:
    u, v = np.array([0.1, -0.3, 0.5]), np.array([1.0, 2.0, -1.0, 0.5])
    col_effect = np.array([0.0, 3.0, -2.0, 1.0])
    med = np.exp(col_effect + np.outer(u, v))  # centred log matrix has rank 1
    res = biplot(med, ["x", "y", "z"], ["a", "b", "c", "d"])
    assert res.explained == pytest.approx((1.0,))
    assert res.singular_values[0] == pytest.approx(
        np.linalg.norm(u - u.mean()) * np.linalg.norm(v), rel=1e-12
    )
    rescaled = biplot(med * np.array([1e3, 1.0, 1e-3, 7.0]), ["x", "y", "z"], list("abcd"))
    np.testing.assert_allclose(rescaled.scores, res.scores, atol=1e-12)
    with pytest.raises(ValueError, match="no variance"):
        biplot(np.ones((3, 4)), ["x", "y", "z"], list("abcd"))
    with pytest.raises(ValueError, match="labels"):
        biplot(med, ["x"], list("abcd"))
