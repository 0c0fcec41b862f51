"""Tests of stats.hpt (docs/methods.md §8, CHEN §IV) against scipy, textbook tables, closed forms."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from benchrun.stats.hpt import hpt, r_speedup, rank_sum_pvalues, signed_rank_zsplit

EXACT_PERM = stats.PermutationMethod(n_resamples=np.inf)


# --------------------------------------------------------------------- level 1 vs scipy
def test_rank_sum_exact_without_ties_matches_scipy_exact() -> None:
    rng = np.random.default_rng(0)
    for _ in range(60):
        m, n = rng.integers(2, 12, size=2)
        x, y = rng.normal(0.3, 1, m), rng.normal(0, 1, n)
        p_greater, p_less, method = rank_sum_pvalues(x, y)
        assert method == "exact"
        ref_g = stats.mannwhitneyu(x, y, alternative="greater", method="exact").pvalue
        ref_l = stats.mannwhitneyu(x, y, alternative="less", method="exact").pvalue
        assert p_greater == pytest.approx(ref_g, rel=1e-12)
        assert p_less == pytest.approx(ref_l, rel=1e-12)


def test_rank_sum_exact_with_ties_matches_full_permutation_enumeration() -> None:
    rng = np.random.default_rng(1)
    for _ in range(40):
        m, n = rng.integers(2, 7, size=2)
        x = rng.integers(0, 5, m).astype(float)
        y = rng.integers(0, 5, n).astype(float)
        if np.all(np.concatenate([x, y]) == x[0]):
            continue
        p_greater, p_less, _ = rank_sum_pvalues(x, y)
        for alt, mine in (("greater", p_greater), ("less", p_less)):
            ref = stats.mannwhitneyu(x, y, alternative=alt, method=EXACT_PERM).pvalue
            assert mine == pytest.approx(ref, rel=1e-12)


def test_rank_sum_normal_approximation_matches_scipy_for_m_above_12() -> None:
    """§12: the original HPT script swapped the bounds here; compare with scipy."""
    rng = np.random.default_rng(2)
    for m in (12, 13, 20, 50):
        x = np.round(rng.normal(0.4, 1, m), 1)  # rounded: ties, exercising the correction
        y = np.round(rng.normal(0.0, 1, m + 3), 1)
        p_greater, p_less, method = rank_sum_pvalues(x, y)
        assert method == "normal"
        ref_g = stats.mannwhitneyu(
            x, y, alternative="greater", method="asymptotic", use_continuity=False
        ).pvalue
        assert p_greater == pytest.approx(ref_g, rel=1e-10)
        assert p_less == pytest.approx(1 - ref_g, rel=1e-10)
        # without ties it is Wilcoxon's rank-sum z test (scipy.stats.ranksums)
        xu, yu = rng.normal(0.4, 1, m), rng.normal(0, 1, m)
        p_greater, _, _ = rank_sum_pvalues(xu, yu)
        ref = stats.ranksums(xu, yu, alternative="greater").pvalue
        assert p_greater == pytest.approx(ref, rel=1e-10)


def test_rank_sum_normal_has_the_right_tail_and_is_not_always_significant() -> None:
    x = np.arange(20.0) + 100  # clearly larger
    y = np.arange(20.0)
    p_greater, p_less, _ = rank_sum_pvalues(x, y)
    assert p_greater < 1e-6 and p_less > 1 - 1e-6
    # under H0 the rejection rate at 0.05 stays near 0.05 (the swapped-bounds bug gives ~1)
    rng = np.random.default_rng(3)
    p = np.array(
        [rank_sum_pvalues(rng.normal(size=15), rng.normal(size=15))[0] for _ in range(400)]
    )
    assert np.mean(p <= 0.05) <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 400)


# --------------------------------------------------------------------- level 2 vs scipy
def test_signed_rank_zsplit_matches_scipy_exact_and_asymptotic() -> None:
    rng = np.random.default_rng(4)
    for _ in range(150):
        n = int(rng.integers(2, 40))
        d = rng.integers(-4, 5, n).astype(float)  # zeros and ties
        if np.all(d == 0):
            continue
        r_a, r_b, p_a, p_b, method = signed_rank_zsplit(d)
        scipy_method = "exact" if n < 25 else "asymptotic"
        assert method == ("exact" if n < 25 else "normal")
        for alt, mine in (("greater", p_a), ("less", p_b)):
            ref = stats.wilcoxon(
                d, zero_method="zsplit", method=scipy_method, alternative=alt, correction=False
            )
            assert mine == pytest.approx(ref.pvalue, rel=1e-9, abs=1e-15)
        assert r_a == pytest.approx(
            stats.wilcoxon(
                d, zero_method="zsplit", method=scipy_method, alternative="greater"
            ).statistic
        )
        assert r_a + r_b == pytest.approx(n * (n + 1) / 2)


@pytest.mark.parametrize(
    ("n", "alpha", "critical"),
    # one-sided critical values T of the Wilcoxon signed-rank table (e.g. Siegel & Castellan
    # 1988, Table J; any textbook): reject when min(R) <= T
    [(10, 0.05, 10), (10, 0.025, 8), (10, 0.01, 5), (20, 0.05, 60), (20, 0.01, 43)],
)
def test_signed_rank_exact_distribution_reproduces_textbook_critical_values(
    n: int, alpha: float, critical: int
) -> None:
    def d_with_rb(rb: int) -> np.ndarray:
        # distinct magnitudes 1..n, the negative ones chosen greedily to sum to rb
        negative, rest = set(), rb
        for r in range(n, 0, -1):
            if r <= rest:
                negative.add(r)
                rest -= r
        assert rest == 0
        return np.array([-r if r in negative else r for r in range(1, n + 1)], dtype=float)

    assert 1 - signed_rank_zsplit(d_with_rb(critical))[2] >= 1 - alpha
    assert 1 - signed_rank_zsplit(d_with_rb(critical + 1))[2] < 1 - alpha


# ------------------------------------------------------------------------ HPT end to end
def _reference_hpt_confidence(a: np.ndarray, b: np.ndarray, alpha_tau: float) -> float:
    """Independent HPT from scipy pieces (no ties in the data, m < 12)."""
    d = np.zeros(len(a))
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        alt = "greater" if np.median(x) > np.median(y) else "less"
        if stats.mannwhitneyu(x, y, alternative=alt, method="exact").pvalue <= alpha_tau:
            d[i] = np.median(x) - np.median(y)
    if np.all(d == 0):
        return _all_zero_confidence(len(d))
    res = stats.wilcoxon(d, zero_method="zsplit", method="exact", alternative="greater")
    return 1 - res.pvalue


def _all_zero_confidence(n: int) -> float:
    # all d = 0: R_A = n(n+1)/4; p = P(T >= floor(R_A)) for the untied signed-rank law
    counts = np.array([1.0])
    for r in range(1, n + 1):
        counts = np.convolve(counts, np.r_[1.0, np.zeros(r - 1), 1.0])
    return 1 - counts[math.floor(n * (n + 1) / 4) :].sum() / 2.0**n


def test_hpt_matches_independent_scipy_pipeline() -> None:
    rng = np.random.default_rng(5)
    for _ in range(30):
        n, m = int(rng.integers(3, 15)), int(rng.integers(5, 11))
        base = rng.uniform(1, 10, (n, 1))
        a = base * rng.lognormal(rng.normal(0.05, 0.1, (n, 1)), 0.05, (n, m))
        b = base * rng.lognormal(0, 0.05, (n, m))
        res = hpt(a, b)
        assert res.confidence == pytest.approx(_reference_hpt_confidence(a, b, 0.05), rel=1e-12)
        meds = [(r.median_a, r.median_b) for r in res.benchmarks]
        np.testing.assert_allclose(meds, np.c_[np.median(a, 1), np.median(b, 1)])


@pytest.mark.parametrize("n", [1, 3, 5, 10, 24])
def test_all_benchmarks_won_by_a_gives_one_minus_two_to_minus_n(n: int) -> None:
    rng = np.random.default_rng(n)
    b = rng.uniform(1, 2, (n, 6))
    a = b + 10 + rng.uniform(0, 5, (n, 1))  # every A run beats every B run
    res = hpt(a, b)
    assert res.confidence == pytest.approx(1 - 2.0**-n, rel=1e-14)
    assert res.wins_a == n and res.r_b == 0 and res.r_a == n * (n + 1) / 2
    assert (res.winner == "A") == (1 - 2.0**-n >= 0.95)


def test_all_won_with_30_benchmarks_uses_normal_closed_form() -> None:
    n = 30
    b = np.tile(np.arange(1.0, 7.0), (n, 1))
    a = b + np.arange(1, n + 1)[:, None] * 10.0  # distinct d: no ties
    res = hpt(a, b)
    z = (n * (n + 1) / 4) / math.sqrt(n * (n + 1) * (2 * n + 1) / 24)
    assert res.method == "normal"
    assert res.confidence == pytest.approx(stats.norm.cdf(z), rel=1e-12)


def test_times_are_converted_and_reciprocal_option_equals_scores_of_one_over_t() -> None:
    rng = np.random.default_rng(6)
    t_a = rng.lognormal(0, 0.1, (8, 7)) * rng.uniform(0.001, 10, (8, 1))
    t_b = t_a * rng.lognormal(0.1, 0.1, (8, 7))  # B slower on average
    recip = hpt(t_a, t_b, higher_is_better=False, time_score="reciprocal")
    direct = hpt(1 / t_a, 1 / t_b)
    assert recip.confidence == direct.confidence and recip.r_a == direct.r_a
    norm = hpt(t_a, t_b, higher_is_better=False)
    # level 1 is the same for every c/t conversion (m = 7 is odd, so winners too)
    assert [r.winner for r in norm.benchmarks] == [r.winner for r in direct.benchmarks]
    assert [r.p_value for r in norm.benchmarks] == pytest.approx(
        [r.p_value for r in direct.benchmarks], rel=1e-12
    )
    # the table reports medians in the input unit (seconds here)
    assert norm.benchmarks[0].median_a == pytest.approx(np.median(t_a[0]))


def test_dict_input_with_unequal_run_counts_and_json() -> None:
    a = {"x": [5.0, 6, 7, 8, 9], "y": [1.0, 2], "z": [3.0, 3, 3, 3]}
    b = {"y": [1.5, 2.5], "x": [1.0, 2, 3, 4], "z": [3.0, 3]}
    res = hpt(a, b)
    rows = {r.benchmark: r for r in res.benchmarks}
    assert rows["x"].p_value == pytest.approx(
        stats.mannwhitneyu(a["x"], b["x"], alternative="greater", method="exact").pvalue
    )
    assert rows["z"].winner == "tie" and rows["z"].p_value is None
    assert any("too few runs" in note for note in res.notes)  # y: 2 vs 2 runs, min p 1/6 > 0.10
    json.dumps(res.to_dict(), allow_nan=False)


def test_bad_input_raises_clear_errors() -> None:
    with pytest.raises(ValueError, match="same benchmarks"):
        hpt({"a": [1, 2]}, {"b": [1, 2]})
    with pytest.raises(ValueError, match="2-D"):
        hpt([1, 2, 3], [1, 2, 3])
    with pytest.raises(ValueError, match="NaN"):
        hpt([[1, np.nan]], [[1, 2]])
    with pytest.raises(ValueError, match="> 0"):
        hpt([[1, 0.0]], [[1, 2]], higher_is_better=False)
    with pytest.raises(ValueError, match="r must"):
        r_speedup([[2, 3]], [[1, 2]], r=0.4)


# ------------------------------------------------------------------------------ r-speedup
def test_r_speedup_closed_form_boundary_three_runs() -> None:
    """5 benchmarks x 3 runs, α_τ = 0.10: a benchmark stays a significant A win while at
    most one of its 9 (A/γ, B) pairs is inverted (exact p = 2/20), i.e. up to the second
    smallest ratio a_i/b_j; all 5 wins give 1 - 2^-5 >= 0.95, 4 wins + a tie give 0.9375."""
    rng = np.random.default_rng(7)
    b = rng.uniform(1, 1.1, (5, 3)) * rng.uniform(1, 5, (5, 1))
    a = b * 1.537 * rng.uniform(1, 1.05, (5, 3))
    ratios = a[:, :, None] / b[:, None, :]
    gamma_star = min(np.sort(r.ravel())[1] for r in ratios)
    res = r_speedup(a, b, r=0.95)
    assert res.gamma_grid == math.floor(gamma_star * 100) / 100
    assert res.gamma <= gamma_star <= res.gamma + res.precision + 1e-12
    assert res.precision <= 1e-6 and res.confidence_at_gamma == pytest.approx(1 - 2**-5)
    assert res.gmean_speedup == pytest.approx(stats.gmean(np.median(a, 1) / np.median(b, 1)))


def test_r_speedup_matches_reference_grid_walk() -> None:
    rng = np.random.default_rng(8)
    n, m = 8, 8
    base = rng.uniform(1, 3, (n, 1))
    b = base * rng.lognormal(0, 0.05, (n, m))
    a = base * rng.lognormal(0.25, 0.05, (n, m))
    gamma = 1.0
    while _reference_hpt_confidence(a / (gamma + 0.01), b, 0.05) >= 0.95:
        gamma = round(gamma + 0.01, 2)
    res = r_speedup(a, b, r=0.95)
    assert res.gamma_grid == gamma
    ref_g = _reference_hpt_confidence(a / res.gmean_speedup, b, 0.05)
    assert res.gmean_confidence == pytest.approx(ref_g)


def test_r_speedup_none_when_a_does_not_win_and_for_times() -> None:
    b = np.tile(np.arange(10.0, 16.0), (6, 1))
    res = r_speedup(b, b + 5)
    assert res.gamma is None and res.notes
    # times: A twice as fast <=> scores of A twice as large; same answer as on 1/t
    t_b = np.random.default_rng(9).uniform(1, 1.1, (6, 5))
    t_a = t_b / 2
    res_t = r_speedup(t_a, t_b, higher_is_better=False, time_score="reciprocal")
    res_s = r_speedup(1 / t_a, 1 / t_b)
    assert res_t.gamma_grid == res_s.gamma_grid and res_t.gmean_speedup == pytest.approx(2.0)


# ------------------------------------------------------------------------ property tests
def _suite(draw: st.DrawFn, lo: int, hi: int, n: int, m: int) -> np.ndarray:
    vals = draw(st.lists(st.integers(lo, hi), min_size=n * m, max_size=n * m))
    return np.array(vals, dtype=float).reshape(n, m)


@st.composite
def suites(draw: st.DrawFn, lo_a: int = 1, hi_a: int = 20) -> tuple[np.ndarray, np.ndarray]:
    n, m = draw(st.integers(1, 8)), draw(st.integers(3, 6))
    return _suite(draw, lo_a, hi_a, n, m), _suite(draw, 1, 20, n, m)


@settings(max_examples=60, deadline=None)
@given(suites(), st.floats(1e-3, 1e3))
def test_verdict_invariant_under_common_scaling(ab: tuple, c: float) -> None:
    a, b = ab
    base, scaled = hpt(a, b), hpt(a * c, b * c)
    assert scaled.winner == base.winner
    assert scaled.confidence == pytest.approx(base.confidence, abs=1e-12)
    assert [r.rank for r in scaled.benchmarks] == [r.rank for r in base.benchmarks]


@settings(max_examples=60, deadline=None)
@given(suites())
def test_swapping_a_and_b_swaps_the_confidences(ab: tuple) -> None:
    """Exactly: hpt(b, a).confidence == hpt(a, b).confidence_b. With the exact law and its
    conservative rounding, c_A + c_B <= 1 (< 1 when R_A is an integer: 1 - P(T = R_A))."""
    a, b = ab
    ab_res, ba_res = hpt(a, b), hpt(b, a)
    assert ba_res.confidence == ab_res.confidence_b
    assert ba_res.confidence_b == ab_res.confidence
    assert (ba_res.r_a, ba_res.r_b) == (ab_res.r_b, ab_res.r_a)
    assert ab_res.confidence + ab_res.confidence_b <= 1 + 1e-12


def test_swap_with_normal_branch_confidences_sum_to_one() -> None:
    rng = np.random.default_rng(10)
    a, b = rng.normal(10, 1, (30, 6)), rng.normal(10.2, 1, (30, 6))
    res = hpt(a, b)
    assert res.method == "normal"
    assert res.confidence + res.confidence_b == pytest.approx(1.0, abs=1e-12)


@settings(
    max_examples=25, deadline=None, derandomize=True
)  # the same 25 suites each run (3.6-44 s when random)
@given(suites(lo_a=15, hi_a=40), st.floats(0.55, 0.99), st.floats(0.55, 0.99))
def test_r_speedup_non_increasing_in_r(ab: tuple, r1: float, r2: float) -> None:
    a, b = ab
    lo, hi = sorted((r1, r2))
    g_lo, g_hi = r_speedup(a, b, r=lo).gamma, r_speedup(a, b, r=hi).gamma
    assert (g_lo if g_lo is not None else 0.0) >= (g_hi if g_hi is not None else 0.0) - 1e-12
