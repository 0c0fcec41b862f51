"""A paired comparison's own looks (runner/control/pairlooks.py): the first look, the
spending, the units, the tests against scipy, and the error rate under repeated looks."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from benchrun.runner.control.pairlooks import (
    FIRST_SHARE,
    LAG1_FULL,
    LAG1_SHIFT,
    SPEND_RHO,
    PairLookState,
    cumulative_spend,
    first_look,
    look_tests,
    look_units,
    next_look_after,
)
from benchrun.stats.signedrank import signed_rank_p


@pytest.mark.parametrize("alpha", [0.01, 0.05, 0.01 / 3])
def test_the_first_look_is_the_fewest_passes_an_exact_test_can_decide(alpha: float) -> None:
    n = first_look(alpha, 2)
    level = FIRST_SHARE * alpha
    # n passes of one sign: exact two-sided p = 2/2^n (the sign-flip null)
    assert 2.0 / 2**n <= level < 2.0 / 2 ** (n - 1)
    assert first_look(alpha, n + 5) == n + 5  # never before min_rounds


def test_the_spending_starts_at_its_share_and_tends_to_alpha() -> None:
    alpha, n0 = 0.01, 12
    assert cumulative_spend(n0 - 1, n0, alpha) == 0.0
    assert cumulative_spend(n0, n0, alpha) == pytest.approx(FIRST_SHARE * alpha)
    for n in (24, 100, 1000):
        want = alpha * (FIRST_SHARE + (1 - FIRST_SHARE) * (1 - (n0 / n) ** SPEND_RHO))
        assert cumulative_spend(n, n0, alpha) == pytest.approx(want, rel=1e-12)
    assert cumulative_spend(1e12, n0, alpha) == pytest.approx(alpha, rel=1e-5)
    spent = [cumulative_spend(n, n0, alpha) for n in range(n0, 5000, 7)]
    assert all(b > a for a, b in zip(spent, spent[1:], strict=False))


def test_the_look_schedule_grows_geometrically_from_the_first_look() -> None:
    points = [10]
    while points[-1] < 200:
        points.append(next_look_after(points[-1], 10, 1.1))
    assert points[:6] == [10, 11, 13, 15, 17, 19]  # ceil(1.1 n), at least one more
    assert next_look_after(3, 10, 1.1) == 10
    assert next_look_after(14, 10, 1.1) == 15


def test_independent_passes_are_their_own_units_and_correlated_ones_are_batched() -> None:
    rng = np.random.default_rng(5)
    iid = rng.normal(0.0, 0.08, 400)
    units, q, inflation = look_units(iid, tau=1.1)
    assert q == 1 and units is iid
    ranks = stats.rankdata(iid) - (iid.size + 1) / 2
    r1 = float(np.dot(ranks[:-1], ranks[1:]) / np.dot(ranks, ranks))
    # raised by its standard error, whole up to LAG1_FULL passes and shrinking beyond
    allowance = LAG1_SHIFT / math.sqrt(iid.size) * min(1.0, LAG1_FULL / iid.size)
    r = max(0.0, r1 + allowance)
    assert inflation == pytest.approx((1 + r) / (1 - r))  # AR(1)'s tau at that lag-1
    for shift, full in ((1.0, math.inf), (0.5, 100.0), (2.0, 50.0)):
        r = max(0.0, r1 + shift / math.sqrt(iid.size) * min(1.0, full / iid.size))
        got = look_units(iid, tau=1.1, shift=shift, full_until=full)[2]
        assert got == pytest.approx((1 + r) / (1 - r))
    # AR(1) with phi 0.7: tau = (1 + phi)/(1 - phi) = 5.7, q = 1 + ceil(5 (tau - 1))
    e = rng.normal(0.0, 0.08, 400)
    x = np.empty(400)
    x[0] = e[0]
    for i in range(1, 400):
        x[i] = 0.7 * x[i - 1] + e[i]
    tau = (1 + 0.7) / (1 - 0.7)
    units, q, inflation = look_units(x, tau=tau)
    assert q == 1 + math.ceil(5 * (tau - 1))
    ranks = stats.rankdata(units) - (units.size + 1) / 2
    r1 = float(np.dot(ranks[:-1], ranks[1:]) / np.dot(ranks, ranks))
    allowance = LAG1_SHIFT / math.sqrt(units.size) * min(1.0, LAG1_FULL / x.size)
    r = min(0.9, max(0.0, r1 + allowance))
    assert inflation == pytest.approx((1 + r) / (1 - r))
    k = 400 // q
    assert np.allclose(units, x[: k * q].reshape(k, q).mean(axis=1))
    # short series stay unbatched; the cap keeps 8 units
    assert look_units(x[:12], tau=tau)[1] == 1
    assert look_units(x[:40], tau=50.0)[1] == 5


def test_the_rank_tests_agree_with_scipy() -> None:
    rng = np.random.default_rng(3)
    d = rng.laplace(0.02, 0.05, 12)  # no ties: scipy's exact null is exact
    r = look_tests(d, 1, "rank", margin=0.01, confidence=0.95)
    assert r.p == pytest.approx(stats.wilcoxon(d, method="exact").pvalue, rel=1e-10)
    delta = math.log1p(0.01)
    lo = stats.wilcoxon(d + delta, alternative="greater", method="exact").pvalue
    hi = stats.wilcoxon(d - delta, alternative="less", method="exact").pvalue
    assert r.tost_p == pytest.approx(max(lo, hi), rel=1e-10)
    i, j = np.triu_indices(d.size)
    assert r.estimate == pytest.approx(float(np.median((d[i] + d[j]) / 2)), rel=1e-12)
    assert r.low is not None and r.high is not None and r.low < r.estimate < r.high
    assert r.estimand.startswith("median per-pass ratio")


def test_the_t_option_is_the_one_sample_t_test() -> None:
    rng = np.random.default_rng(4)
    d = rng.normal(0.01, 0.05, 40)
    r = look_tests(d, 1, "t", margin=0.02, confidence=0.9)
    assert r.p == pytest.approx(stats.ttest_1samp(d, 0.0).pvalue, rel=1e-10)
    delta = math.log1p(0.02)
    lo = stats.ttest_1samp(d, -delta, alternative="greater").pvalue
    hi = stats.ttest_1samp(d, delta, alternative="less").pvalue
    assert r.tost_p == pytest.approx(max(lo, hi), rel=1e-10)
    ci = stats.t.interval(0.9, d.size - 1, loc=d.mean(), scale=stats.sem(d))
    assert (r.low, r.high) == pytest.approx(ci, rel=1e-10)
    assert r.estimand == "geometric-mean ratio"


def test_ten_passes_of_one_sign_decide_with_the_whole_alpha() -> None:
    """A fixed campaign's one (final) look spends all of alpha: 10 passes of one sign give
    the exact p 2/2^10 = 0.00195 < 0.01 (hyperfine's 10 runs answer this too)."""
    state = PairLookState(first_look(0.01, 5), 0.01, 0.01, 1.1)
    sep, _ = state.levels(10, final=True)
    assert sep == pytest.approx(0.01, rel=1e-6)
    d = np.full(10, 0.15) + np.linspace(-0.01, 0.01, 10)
    assert look_tests(d, 1, "rank", 0.01, 0.95).p == pytest.approx(2 / 2**10)
    assert state.spent_all and not state.due(10_000)


def test_the_state_survives_a_round_trip_through_json() -> None:
    import json

    state = PairLookState(10, 0.01, 0.01, 1.1)
    for n in (10, 11, 13, 15):
        state.levels(n, final=False)
    back = PairLookState.from_dict(json.loads(json.dumps(state.to_dict())))
    assert back.to_dict() == state.to_dict()
    assert back.levels(17, final=False) == state.levels(17, final=False)


def _look_points(n0: int, n_max: int) -> list[int]:
    """The look schedule from n0 (growth 1.1) up to n_max passes."""
    points = [n0]
    while points[-1] < n_max:
        points.append(next_look_after(points[-1], n0, 1.1))
    return [p for p in points if p <= n_max]


@pytest.mark.parametrize("noise", ["normal", "t3"])
def test_identical_twins_are_separated_at_most_alpha_over_all_looks(noise: str) -> None:
    """Simulation with a known truth (E[d] = 0, symmetric): the signed-rank test at every
    look of the schedule, at the nominal levels of the boundaries, rejects in at most
    alpha + 2 SE of the series; without the boundaries (alpha at every look) far more."""
    rng = np.random.default_rng(11 if noise == "normal" else 12)
    alpha, n_series, n_max = 0.05, 300, 400
    shape = (n_series, n_max)
    d = rng.normal(0, 1, shape) if noise == "normal" else rng.standard_t(3, shape)
    n0 = first_look(alpha, 5)
    points = _look_points(n0, n_max)
    state = PairLookState(n0, alpha, alpha, 1.1)
    levels = [state.levels(n, final=False)[0] for n in points]
    rejected = np.zeros(n_series, bool)
    naive = np.zeros(n_series, bool)
    for n, level in zip(points, levels, strict=True):
        p = np.array([signed_rank_p(row[:n])[0] for row in d])
        rejected |= p <= level
        naive |= p <= alpha
    rate, se = rejected.mean(), math.sqrt(alpha * (1 - alpha) / n_series)
    assert rate <= alpha + 2 * se
    assert naive.mean() > 3 * alpha  # looking without boundaries inflates the error


@pytest.mark.slow
def test_correlated_twins_are_separated_at_most_alpha_over_all_looks() -> None:
    """AR(1) passes (phi 0.3, tau 1.86) of two identical workloads, tested at every look as
    the controller does (units and inflation from look_units, with the collector's tau):
    any separation in at most alpha + 2 SE of the series."""
    from benchrun.runner.control.pairing import series_stats

    rng = np.random.default_rng(21)
    alpha, n_series, n_max, phi = 0.05, 200, 300, 0.3
    e = rng.normal(0, math.sqrt(1 - phi**2), (n_series, n_max))
    x = np.empty_like(e)
    x[:, 0] = rng.normal(0, 1, n_series)
    for t in range(1, n_max):
        x[:, t] = phi * x[:, t - 1] + e[:, t]
    n0 = first_look(alpha, 5)
    points = _look_points(n0, n_max)
    state = PairLookState(n0, alpha, alpha, 1.1)
    levels = [state.levels(n, final=False)[0] for n in points]
    wrong = 0
    for row in x:
        for n, level in zip(points, levels, strict=True):
            s = series_stats(row[:n])
            units, q, inflation = look_units(row[:n], None if s is None else s.tau)
            if look_tests(units, q, "rank", 0.01, 0.95, inflation).p <= level:
                wrong += 1
                break
    assert wrong / n_series <= alpha + 2 * math.sqrt(alpha * (1 - alpha) / n_series)
