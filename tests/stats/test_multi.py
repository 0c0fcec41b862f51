"""Tests for stats.multi (docs/methods.md §7): Holm, ANOVA, Kruskal-Wallis, rank_results.

References: hand-computed Holm example and the closed-testing definition of Holm's adjusted
p-values (brute force), closed-form F and H statistics, scipy, and simulations with known truth.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from benchrun.stats.compare import required_sample_size
from benchrun.stats.multi import anova, holm, kruskal_wallis, rank_results


# ----------------------------------------------------------------------------- Holm
def test_holm_hand_computed() -> None:
    # sorted 0.005, 0.01, 0.03, 0.04 -> 4*0.005, 3*0.01, 2*0.03, max(0.06, 1*0.04)
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx((0.03, 0.06, 0.06, 0.02))
    assert holm([0.5, 0.9]) == pytest.approx((1.0, 1.0))
    assert holm([]) == ()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=7))
def test_holm_equals_closed_testing_with_bonferroni(p: list[float]) -> None:
    # Holm = closed testing with Bonferroni local tests: the adjusted p of H_i is the
    # largest Bonferroni p-value min(1, |S|·min_{j in S} p_j) over index sets S containing i
    m = len(p)
    expected = []
    for i in range(m):
        worst = 0.0
        for size in range(1, m + 1):
            for s in itertools.combinations(range(m), size):
                if i in s:
                    worst = max(worst, min(1.0, size * min(p[j] for j in s)))
        expected.append(worst)
    assert holm(p) == pytest.approx(tuple(expected), abs=1e-12)


def test_holm_fwer_under_global_null() -> None:
    # independent uniform p-values: Holm rejects something iff min p < alpha/m,
    # probability 1 - (1 - alpha/m)^m
    rng = np.random.default_rng(2)
    reps, m, alpha = 20000, 5, 0.05
    p = rng.uniform(size=(reps, m))
    any_reject = np.array([min(holm(row)) < alpha for row in p])
    expected = 1 - (1 - alpha / m) ** m
    assert abs(any_reject.mean() - expected) < 3 * math.sqrt(expected * (1 - expected) / reps)


def test_holm_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        holm([0.1, float("nan")])
    with pytest.raises(ValueError):
        holm([1.2])


# ----------------------------------------------------------------------------- omnibus
GROUPS = {
    "a": [24.1, 25.3, 23.8, 24.9, 25.0],
    "b": [26.2, 27.0, 25.8, 26.5],
    "c": [24.0, 23.1, 23.9, 24.4, 23.5, 24.2],
}


def test_anova_closed_form() -> None:
    arrays = [np.array(v) for v in GROUPS.values()]
    allv = np.concatenate(arrays)
    n, k = allv.size, len(arrays)
    ssb = sum(a.size * (a.mean() - allv.mean()) ** 2 for a in arrays)
    ssw = sum(((a - a.mean()) ** 2).sum() for a in arrays)
    f = (ssb / (k - 1)) / (ssw / (n - k))
    r = anova(GROUPS)
    assert r.statistic == pytest.approx(f, rel=1e-12)
    assert r.p_value == pytest.approx(stats.f.sf(f, k - 1, n - k), rel=1e-10)
    assert r.df == (2.0, 12.0)
    assert r.within_variance == pytest.approx(ssw / (n - k))
    e = {(x.a, x.b): x.e for x in r.effect_sizes}
    assert e[("a", "b")] == pytest.approx(
        (np.mean(GROUPS["a"]) - np.mean(GROUPS["b"])) / math.sqrt(ssw / (n - k))
    )
    assert len(e) == 3
    assert r.to_dict()["effect_sizes"][0]["a"] == "a"


def test_kruskal_wallis_closed_form_without_ties() -> None:
    arrays = [np.array(v) for v in GROUPS.values()]
    allv = np.concatenate(arrays)
    assert np.unique(allv).size == allv.size
    ranks = stats.rankdata(allv)
    n = allv.size
    h, start = 0.0, 0
    for a in arrays:
        h += ranks[start : start + a.size].sum() ** 2 / a.size
        start += a.size
    h = 12 / (n * (n + 1)) * h - 3 * (n + 1)
    r = kruskal_wallis(list(GROUPS.values()))
    assert r.statistic == pytest.approx(h, rel=1e-12)
    assert r.p_value == pytest.approx(stats.chi2.sf(h, 2), rel=1e-10)
    assert r.names == ("0", "1", "2") and r.df == (2.0,)


def test_omnibus_degenerate_groups() -> None:
    assert anova([[1.0, 1.0], [1.0, 1.0]]).p_value == 1.0
    r = anova([[1.0, 1.0], [2.0, 2.0]])
    assert r.p_value == 0.0 and r.statistic is None and r.effect_sizes[0].e is None
    assert kruskal_wallis([[3.0, 3.0], [3.0, 3.0, 3.0]]).p_value == 1.0
    with pytest.raises(ValueError, match="2 groups"):
        anova([[1.0, 2.0]])
    with pytest.raises(ValueError, match="group 'x'"):
        kruskal_wallis({"x": [1.0], "y": [1.0, 2.0]})


def test_omnibus_size_by_simulation() -> None:
    rng = np.random.default_rng(9)
    reps, alpha = 2000, 0.05
    data = rng.normal(0, 1, size=(reps, 4, 8))
    rej_f = np.mean([anova(list(g)).p_value < alpha for g in data])
    rej_h = np.mean([kruskal_wallis(list(g)).p_value < alpha for g in data])
    se = math.sqrt(alpha * (1 - alpha) / reps)
    assert abs(rej_f - alpha) < 3 * se
    # the chi-square approximation of H is slightly conservative at n_i = 8
    assert alpha - 4 * se < rej_h < alpha + 3 * se


# ----------------------------------------------------------------------------- ranking
def res(name: str, mean: float, var: float, n: int, direction: str = "lower_is_better", **kw):
    return {"name": name, "mean": mean, "variance": var, "n": n, "direction": direction, **kw}


def test_rank_order_and_welch_holm_values() -> None:
    rs = [res("slow", 12.0, 1.0, 10), res("fast", 10.0, 0.5, 8), res("mid", 11.5, 2.0, 12)]
    r = rank_results(rs, alpha=0.01)
    assert r.names == ("fast", "mid", "slow")
    p1 = stats.ttest_ind_from_stats(10.0, math.sqrt(0.5), 8, 11.5, math.sqrt(2.0), 12, False).pvalue
    p2 = stats.ttest_ind_from_stats(11.5, math.sqrt(2.0), 12, 12.0, 1.0, 10, False).pvalue
    assert [p.welch_p for p in r.pairs] == pytest.approx([p1, p2], rel=1e-10)
    lo, hi = sorted([p1, p2])
    expected = {lo: min(1, 2 * lo), hi: max(min(1, 2 * lo), hi)}
    assert [p.welch_p_holm for p in r.pairs] == pytest.approx([expected[p1], expected[p2]])
    ci = stats.t.interval(0.95, 7, loc=10.0, scale=math.sqrt(0.5 / 8))
    assert (r.ci_low[0], r.ci_high[0]) == pytest.approx(ci)
    up = rank_results(
        [res(x["name"], x["mean"], x["variance"], x["n"], "higher_is_better") for x in rs]
    )
    assert up.names == ("slow", "mid", "fast")
    assert r.pairs[0].difference == pytest.approx(1.5)
    assert r.pairs[0].relative_difference == pytest.approx(0.15)
    assert r.pairs[0].effect_size == pytest.approx(1.5 / math.sqrt((7 * 0.5 + 11 * 2.0) / 18))


def test_rank_verdict_branches() -> None:
    se = 0.1  # each result: n = 1000, variance = se^2 * n
    var, n = se * se * 1000, 1000
    # disjoint 95 % CIs
    r = rank_results([res("a", 100.0, var, n), res("b", 101.0, var, n)])
    assert r.pairs[0].verdict == "separated" and not r.pairs[0].ci_overlap
    # CIs overlap (gap 3.82 se < 3.92 se) but Welch p ~ 0.007 < 0.01
    r = rank_results([res("a", 100.0, var, n), res("b", 100.0 + 2.7 * math.sqrt(2) * se, var, n)])
    p = r.pairs[0]
    assert p.ci_overlap and p.welch_p < 0.01 and p.verdict == "separated"
    # same means, tight: equivalent within 1 %
    r = rank_results([res("a", 100.0, var, n), res("b", 100.05, var, n)])
    assert r.pairs[0].verdict == "equivalent" and r.pairs[0].tost_p < 0.01 and r.decided
    # neither: undecided, with the n a Welch test at alpha/(k-1) needs
    r = rank_results([res("a", 100.0, 4.0, 5), res("b", 100.9, 4.0, 5), res("c", 200.0, 4.0, 5)])
    p = r.pairs[0]
    assert p.verdict == "undecided" and not r.decided and r.pairs[1].verdict == "separated"
    assert p.required_n == required_sample_size(100.0, 4.0, 100.9, 4.0, alpha=0.01 / 2)
    # at that n the expected t statistic exceeds the critical value of the test
    nu = 2 * (p.required_n - 1)
    assert 0.9 / math.sqrt(8.0 / p.required_n) > stats.t.ppf(1 - 0.01 / 4, nu)


def test_rank_uses_given_cis_and_accepts_objects() -> None:
    @dataclass(frozen=True)
    class Result:
        name: str
        mean: float
        variance: float
        n: int
        direction: str
        ci_low: float
        ci_high: float

    a = Result("a", 10.0, 1.0, 5, "lower_is_better", 9.99, 10.01)
    b = Result("b", 10.1, 1.0, 5, "lower_is_better", 10.09, 10.11)
    r = rank_results([b, a])
    assert r.names == ("a", "b") and r.pairs[0].verdict == "separated"
    assert r.pairs[0].welch_p > 0.5  # decided by the given CIs, not by Welch
    d = r.to_dict()
    assert d["pairs"][0]["verdict"] == "separated" and d["decided"] is True


def test_rank_single_and_bad_input() -> None:
    assert rank_results([res("only", 1.0, 1.0, 3)]).pairs == ()
    with pytest.raises(ValueError, match="directions"):
        rank_results([res("a", 1.0, 1.0, 3), res("b", 1.0, 1.0, 3, "higher_is_better")])
    with pytest.raises(ValueError, match="'variance'"):
        rank_results([{"name": "a", "mean": 1.0, "n": 3, "direction": "lower_is_better"}])
    with pytest.raises(ValueError, match="n must be"):
        rank_results([res("a", 1.0, 1.0, 1)])
    with pytest.raises(ValueError, match="unique"):
        rank_results([res("a", 1.0, 1.0, 3), res("a", 2.0, 1.0, 3)])
    with pytest.raises(ValueError, match="ci_high"):
        rank_results([res("a", 1.0, 1.0, 3, ci_low=0.5)])
    with pytest.raises(ValueError):
        rank_results([])


def test_rank_false_separation_rate_by_simulation() -> None:
    # k = 3 truly equal workloads: the share of campaigns with any "separated" pair <= alpha
    rng = np.random.default_rng(13)
    reps, alpha, n = 3000, 0.01, 10
    x = rng.normal(100.0, 1.0, size=(reps, 3, n))
    means, variances = x.mean(axis=2), x.var(axis=2, ddof=1)
    any_sep = 0
    for m, v in zip(means, variances, strict=True):
        r = rank_results([res(str(j), m[j], v[j], n) for j in range(3)], alpha=alpha)
        any_sep += any(p.verdict == "separated" for p in r.pairs)
    assert any_sep / reps <= alpha + 3 * math.sqrt(alpha * (1 - alpha) / reps)


def test_rank_detects_real_differences_by_simulation() -> None:
    # 3 workloads 2 % apart, CoV 1 %, 20 subsession means: every pair should be separated
    rng = np.random.default_rng(14)
    reps, n = 300, 20
    x = rng.normal([[100.0], [102.0], [104.0]], 1.0, size=(reps, 3, n))
    means, variances = x.mean(axis=2), x.var(axis=2, ddof=1)
    ok = 0
    for m, v in zip(means, variances, strict=True):
        r = rank_results([res(str(j), m[j], v[j], n) for j in range(3)])
        ok += r.names == ("0", "1", "2") and all(p.verdict == "separated" for p in r.pairs)
    assert ok / reps > 0.99
