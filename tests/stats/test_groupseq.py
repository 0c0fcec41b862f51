"""Group-sequential boundaries by error spending (docs/methods.md §10.1; stats/groupseq.py).

References used (none computed by the code under test):

- Jennison & Turnbull, *Group Sequential Methods with Applications to Clinical Trials*
  (2000): Pocock's constants C_P(K) (Table 2.1: 2.178, 2.413, 2.555 for K = 2, 5, 10) and
  O'Brien-Fleming's C_B(5) = 2.040 (Table 2.3), two-sided α 0.05, equal looks.
- The Lan-DeMets O'Brien-Fleming-type boundaries for five equal looks at two-sided α 0.05,
  4.877, 3.357, 2.680, 2.290, 2.031, as computed by the Lan-DeMets program of Reboussin,
  DeMets, Kim & Lan (Controlled Clinical Trials 21, 2000, 190-207), which spends
  α*(t) = 2 - 2Φ(z_{α/4}/√t) on each side (α/2 per side).
- scipy.stats.multivariate_normal.cdf with corr(Z_j, Z_k) = √(I_j/I_k).
- Seeded, vectorised Brownian-motion simulations (exact at the looks: independent normal
  increments of variance I_k - I_{k-1}).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps
from scipy.integrate import quad
from scipy.optimize import brentq

from benchrun.stats.groupseq import Boundaries, crossing_probabilities, empty_boundaries


def _mvn_no_crossing(
    info: list[float], c: list[float], drift: float, sides: int, seed: int | None = None
) -> float:
    i = np.asarray(info, dtype=float)
    corr = np.sqrt(np.minimum.outer(i, i) / np.maximum.outer(i, i))
    mean = drift * np.sqrt(i)
    upper = np.asarray(c, dtype=float)
    lower = -upper if sides == 2 else np.full(len(c), -np.inf)
    dist = sps.multivariate_normal(
        mean, corr, allow_singular=True, abseps=1e-9, releps=1e-9, seed=seed
    )
    return float(dist.cdf(upper, lower_limit=lower))


def _mvn_no_crossing_median(info: list[float], c: list[float], drift: float, sides: int) -> float:
    """scipy's value as the median of 5 seeded evaluations: its randomised quasi-Monte
    Carlo integration scatters by a few 1e-6 (up to 5e-5 in one seed of 5) when looks
    1.0001x apart make the correlation matrix nearly singular."""
    return float(np.median([_mvn_no_crossing(info, c, drift, sides, seed) for seed in range(5)]))


@pytest.mark.parametrize(
    ("info", "c", "drift", "sides"),
    [
        ([1.0, 2.5, 7.0], [2.5, 2.3, 2.1], 0.0, 2),
        ([1.0, 2.0], [2.2, 2.0], 0.0, 1),
        ([3.0, 5.0, 6.0], [2.4, 2.4, 2.2], 0.6, 2),
        ([3.0, 5.0, 6.0], [2.4, 2.4, 2.2], 0.6, 1),
        ([100.0, 100.01, 100.02], [2.3, 2.2, 2.1], 0.0, 2),  # ratio 1.0001
        ([100 * 1.0001**k for k in range(6)], [2.3, 2.25, 2.2, 2.15, 2.1, 2.05], 0.0, 2),
        ([100 * 1.0001**k for k in range(6)], [2.3, 2.25, 2.2, 2.15, 2.1, 2.05], 0.3, 1),
        ([1.0, 1e3, 1e6], [2.5, 2.3, 2.1], 0.0, 2),  # ratio 1000
        ([1.0, 1e3, 1e6], [2.5, 2.3, 2.1], 0.0, 1),
    ],
)
def test_total_crossing_matches_scipy_multivariate_normal(
    info: list[float], c: list[float], drift: float, sides: int
) -> None:
    got = crossing_probabilities(info, c, drift=drift, sides=sides).sum()
    want = 1.0 - _mvn_no_crossing(info, c, drift, sides)
    assert got == pytest.approx(want, abs=2e-7, rel=1e-6)


@pytest.mark.slow
@settings(max_examples=30, deadline=None, derandomize=True)
@given(
    first=st.floats(0.5, 500.0),
    log_ratios=st.lists(
        st.sampled_from([1e-4, 0.01, 0.1, 0.4, 1.0, 3.0, 7.0]), min_size=1, max_size=3
    ),
    z=st.lists(st.floats(0.3, 3.5), min_size=4, max_size=4),
    drift=st.sampled_from([0.0, 0.05, -0.3]),
    sides=st.sampled_from([1, 2]),
)
def test_random_schedules_match_scipy(
    first: float, log_ratios: list[float], z: list[float], drift: float, sides: int
) -> None:
    """Looks from ratio 1.0001 to ratio 1000 apart, any boundaries, any drift. (Closer
    looks make the correlation matrix singular to scipy: see the next test.)"""
    info = list(first * np.exp(np.cumsum([0.0, *log_ratios])))
    c = z[: len(info)]
    got = crossing_probabilities(info, c, drift=drift, sides=sides).sum()
    want = 1.0 - _mvn_no_crossing_median(info, c, drift, sides)
    assert got == pytest.approx(want, abs=2e-6)


@pytest.mark.parametrize("gap", [1e-9, 1e-6, 1e-4])
def test_second_look_just_after_the_first_matches_quadrature(gap: float) -> None:
    """P(Z_1 < 1, Z_2 >= 1) at I = 1 and 1 + gap: ∫_{-∞}^{1} φ(u) Φ((u - √(1+gap))/√gap) du
    by scipy.integrate.quad (the kernel is √gap wide: far narrower than any grid cell)."""
    w, b2 = math.sqrt(gap), math.sqrt(1.0 + gap)
    want, _ = quad(
        lambda u: sps.norm.pdf(u) * sps.norm.cdf((u - b2) / w),
        1.0 - 60.0 * w,
        1.0,
        points=[1.0 - 5.0 * w, 1.0 - w],
        epsabs=1e-15,
        epsrel=1e-12,
    )
    got = crossing_probabilities([1.0, 1.0 + gap], [1.0, 1.0], sides=1)[1]
    assert got == pytest.approx(want, rel=1e-4)


def test_first_look_is_exact_and_by_side_splits_it() -> None:
    p = crossing_probabilities([4.0, 9.0], [2.0, math.inf], drift=0.3, by_side=True)
    assert p[0, 0] == pytest.approx(sps.norm.sf(2.0 - 0.3 * 2.0), abs=1e-12)
    assert p[0, 1] == pytest.approx(sps.norm.cdf(-2.0 - 0.3 * 2.0), abs=1e-12)
    assert p[1].tolist() == [0.0, 0.0]


@pytest.mark.parametrize(("k", "c_p"), [(2, 2.178), (5, 2.413), (10, 2.555)])
def test_pocock_constants(k: int, c_p: float) -> None:
    looks = list(range(1, k + 1))
    # the published constant spends α 0.05 (its rounding to 3 decimals moves α by < 5e-5)
    assert crossing_probabilities(looks, [c_p] * k).sum() == pytest.approx(0.05, abs=1e-4)
    # and solving for the constant gives it back to the table's 3 decimals
    solved = brentq(lambda c: crossing_probabilities(looks, [c] * k).sum() - 0.05, 1.9, 3.0)
    assert solved == pytest.approx(c_p, abs=1e-3)
    # consistency: add() inverts crossing_probabilities (Pocock's increments give C_P back)
    inc = crossing_probabilities(looks, [c_p] * k)
    b = empty_boundaries()
    for i, cum in zip(looks, np.cumsum(inc), strict=True):
        b = b.add(i, float(cum))
    assert np.allclose(b.bounds, c_p, atol=1e-6)


def test_obrien_fleming_constant() -> None:
    c = [2.040 * math.sqrt(5 / k) for k in range(1, 6)]
    assert crossing_probabilities(range(1, 6), c).sum() == pytest.approx(0.05, abs=1e-4)


def test_lan_demets_obrien_fleming_type_spending() -> None:
    z = sps.norm.isf(0.05 / 4)
    b = empty_boundaries()
    for k in range(1, 6):
        b = b.add(k, 2 * (2 - 2 * sps.norm.cdf(z / math.sqrt(k / 5))))
    assert np.allclose(b.bounds, [4.877, 3.357, 2.680, 2.290, 2.031], atol=6e-4)
    assert b.spent[-1] == pytest.approx(0.05, abs=1e-15)


def test_add_spends_what_it_is_asked_and_nominal_levels() -> None:
    cums = [0.0, 0.004, 0.004, 0.02, 0.05]
    b = empty_boundaries()
    for i, cum in zip([10, 15, 23, 35, 53], cums, strict=True):
        b = b.add(i, cum)
    assert b.bounds[0] == math.inf and b.bounds[2] == math.inf
    assert b.nominal(0) == 0.0
    # the first test: P(|Z_2| >= c) = 0.004 in closed form (through the grid of look 1)
    assert b.bounds[1] == pytest.approx(sps.norm.isf(0.002), abs=2e-5)
    p = crossing_probabilities(b.info, b.bounds)
    assert np.allclose(np.cumsum(p), cums, atol=1e-9)
    assert b.nominal() == pytest.approx(2 * sps.norm.sf(b.bounds[-1]))
    assert b.nominal() > 0.05 / 5  # correlated looks: better than Bonferroni's α/K


def test_one_sided_first_look_and_negative_bounds() -> None:
    b = empty_boundaries(sides=1).add(1.0, 0.025).add(2.0, 0.9)
    assert b.bounds[0] == pytest.approx(sps.norm.isf(0.025), abs=1e-8)
    assert b.bounds[1] < 0  # spending 0.875 more at one look needs a negative boundary
    p = crossing_probabilities(b.info, b.bounds, sides=1)
    assert np.cumsum(p).tolist() == pytest.approx([0.025, 0.9], abs=1e-6)


def test_round_trip_through_json_and_resume() -> None:
    b = empty_boundaries().add(10, 0.0).add(15, 0.01).add(23, 0.02)
    data = json.loads(json.dumps(b.to_dict()))
    back = Boundaries.from_dict(data)
    assert back == b
    assert back.add(35, 0.03).bounds == pytest.approx(b.add(35, 0.03).bounds, abs=1e-12)
    hand = Boundaries(b.info, b.bounds, b.spent, 2)  # no cached density: recomputed
    assert hand == b
    assert hand.add(35, 0.03).bounds == pytest.approx(b.add(35, 0.03).bounds, abs=1e-12)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: empty_boundaries(3), "sides"),
        (lambda: empty_boundaries().add(0.0, 0.01), "info"),
        (lambda: empty_boundaries().add(math.nan, 0.01), "info"),
        (lambda: empty_boundaries().add(5, 0.01).add(5, 0.02), "increase"),
        (lambda: empty_boundaries().add(5, 0.01).add(4, 0.02), "increase"),
        (lambda: empty_boundaries().add(5, 0.02).add(6, 0.01), "decrease"),
        (lambda: empty_boundaries().add(5, 1.0), r"\[0, 1\)"),
        (lambda: empty_boundaries().add(5, -0.1), r"\[0, 1\)"),
        (lambda: empty_boundaries().nominal(), "no looks"),
        (lambda: crossing_probabilities([1, 2], [2.0]), "one value per look"),
        (lambda: crossing_probabilities([2, 1], [2.0, 2.0]), "increasing"),
        (lambda: crossing_probabilities([1, 2], [2.0, -1.0]), ">= 0"),
        (lambda: crossing_probabilities([1, 2], [2.0, 2.0], drift=math.inf), "drift"),
        (lambda: Boundaries.from_dict({"info": [1]}), "stored"),
        (lambda: Boundaries((1.0,), (2.0,), (0.5, 0.6)), "one value per look"),
        (lambda: Boundaries((1.0,), (math.nan,), (0.5,)), "bounds"),
        (lambda: Boundaries((1.0, 2.0), (2.0, 2.0), (0.5, 0.4)), "non-decreasing"),
    ],
)
def test_bad_input_is_a_value_error(call: object, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        call()  # type: ignore[operator]


# ----------------------------------------------------------------------------- simulation
def _geometric_info(start: float = 12.0, stop: float = 2000.0, ratio: float = 1.25) -> list:
    out = [start]
    while out[-1] * ratio < stop:
        out.append(float(math.ceil(out[-1] * ratio)))
    out.append(stop)
    return out


def _log_uniform(info: list, alpha: float, sides: int) -> Boundaries:
    r = info[1] / info[0]
    span = math.log(info[-1] / info[0] * r)
    b = empty_boundaries(sides)
    for i in info:
        b = b.add(i, alpha * min(1.0, math.log(i / info[0] * r) / span))
    return b


def _simulate(info: list, n: int, drift: float, seed: int) -> np.ndarray:
    """Z at the looks of n Brownian paths with drift (independent increments)."""
    rng = np.random.default_rng(seed)
    i = np.asarray(info)
    inc = np.diff(np.concatenate(([0.0], i)))
    s = np.cumsum(rng.standard_normal((n, i.size)) * np.sqrt(inc) + drift * inc, axis=1)
    return s / np.sqrt(i)


@pytest.mark.parametrize("alpha", [0.05, 0.01])
@pytest.mark.parametrize("sides", [2, 1])
def test_simulated_error_rate_on_an_irregular_schedule(alpha: float, sides: int) -> None:
    info = _geometric_info()
    b = _log_uniform(info, alpha, sides)
    n = 200_000
    z = _simulate(info, n, 0.0, seed=28 + sides + int(1000 * alpha))
    stat = np.abs(z) if sides == 2 else z
    hit = (stat >= np.asarray(b.bounds)).any(axis=1).mean()
    se = math.sqrt(alpha * (1 - alpha) / n)
    assert abs(hit - alpha) <= 2 * se, (hit, alpha, se)


def test_crossing_probabilities_match_simulation_under_drift() -> None:
    info = _geometric_info()
    b = _log_uniform(info, 0.01, 2)
    theta = 0.12  # oracle n* = ((z_.995 + z_.8)/θ)² ≈ 811
    n = 100_000
    z = _simulate(info, n, theta, seed=2028)
    crossed = np.abs(z) >= np.asarray(b.bounds)
    first = np.where(crossed.any(axis=1), crossed.argmax(axis=1), -1)
    sim = np.bincount(first[first >= 0], minlength=len(info)) / n
    exact = crossing_probabilities(info, b.bounds, drift=theta)
    se = np.sqrt(np.cumsum(exact) * (1 - np.cumsum(exact)) / n) + 1e-12
    assert np.all(np.abs(np.cumsum(sim) - np.cumsum(exact)) <= 3 * se)
    assert sim.sum() == pytest.approx(exact.sum(), abs=2 * se[-1])


def test_tost_with_one_sided_boundaries_keeps_alpha_at_the_margin() -> None:
    """Equivalence within ±m by two one-sided sequential tests, each on its own
    boundaries at α: at the margin (drift = m) a false equivalence needs the test of
    "δ >= m" to cross, so it happens with probability <= α; the simulation measures it."""
    info = _geometric_info(10, 1000, 1.5)
    alpha, m = 0.05, 0.1
    b = _log_uniform(info, alpha, 1)
    n = 200_000
    s = _simulate(info, n, m, seed=4) * np.sqrt(info)  # score S(I)
    i = np.asarray(info)
    c = np.asarray(b.bounds)
    below = (m * i - s) / np.sqrt(i) >= c  # rejects δ >= m
    above = (s + m * i) / np.sqrt(i) >= c  # rejects δ <= -m
    equivalent = (np.maximum.accumulate(below, axis=1) & np.maximum.accumulate(above, axis=1)).any(
        axis=1
    )
    se = math.sqrt(alpha * (1 - alpha) / n)
    assert abs(below.any(axis=1).mean() - alpha) <= 2 * se  # the one-sided test is exact
    assert equivalent.mean() <= alpha + 2 * se
