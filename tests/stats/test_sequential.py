"""Look schedule and alpha spending of the stopping rule (docs/methods.md §10; stats/sequential.py).

References: closed forms (the geometric recursion, Σ α_j = α, the Lan-DeMets spending
functions evaluated with scipy, the normal-approximation sample-size formula), scipy's
Welch test with Holm's adjustment computed by hand, and a simulation with known truth:
two-sample z-tests on equal normal samples at the looks of the schedule, which must reject
in <= α of the runs with the split α and far more often with the full α at every look.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from benchrun.stats.sequential import (
    Sample,
    alpha_spending,
    baseline_tests,
    confirm_separations,
    cumulative_alpha,
    growth_needed,
    look_schedule,
    plan_looks,
)


def test_schedule_matches_the_ceil_recursion_by_hand() -> None:
    # n_{j+1} = ceil(3 n_j / 2) = (3 n_j + 1) // 2 in integers, then the budget
    expected = [8]
    while (3 * expected[-1] + 1) // 2 < 500:
        expected.append((3 * expected[-1] + 1) // 2)
    expected.append(500)
    assert look_schedule(8, 500) == tuple(expected)
    assert look_schedule(8, 500) == (8, 12, 18, 27, 41, 62, 93, 140, 210, 315, 473, 500)


def test_schedule_edge_cases() -> None:
    assert look_schedule(500, 500) == (500,)
    assert look_schedule(600, 500) == (600,)
    assert look_schedule(1, 3, ratio=1.1) == (1, 2, 3)  # at least one round between looks
    for bad in ((0, 10, 1.5), (5, 10, 1.0), (5, 0, 1.5), (5, 10, float("nan"))):
        with pytest.raises(ValueError):
            look_schedule(*bad)


@settings(max_examples=60, deadline=None)
@given(
    first=st.integers(1, 200),
    extra=st.integers(0, 5000),
    ratio=st.floats(1.05, 4.0, allow_nan=False),
)
def test_schedule_is_geometric(first: int, extra: int, ratio: float) -> None:
    last = first + extra
    s = look_schedule(first, last, ratio)
    assert s[0] == first and s[-1] == max(first, last)
    assert all(b > a for a, b in zip(s, s[1:], strict=False))
    for a, b in zip(s[:-2], s[1:-1], strict=True):  # every step but the last (the budget)
        assert b == max(a + 1, math.ceil(ratio * a - 1e-9))
    if last > first:
        assert len(s) <= math.ceil(math.log(last / first) / math.log(ratio)) + 1


@pytest.mark.parametrize("k", [1, 4, 12, 25])
def test_uniform_spending_is_bonferroni(k: int) -> None:
    a = alpha_spending(k, 0.01)
    assert a == (0.01 / k,) * k
    assert math.fsum(a) == pytest.approx(0.01, rel=1e-15)


def test_lan_demets_spending_against_closed_forms() -> None:
    t = np.array([0.1, 0.25, 0.5, 0.8, 1.0])
    alpha = 0.01
    pocock = np.cumsum(alpha_spending(5, alpha, "pocock", t))
    assert pocock == pytest.approx(alpha * np.log(1 + (math.e - 1) * t), rel=1e-12)
    obf = np.cumsum(alpha_spending(5, alpha, "obrien-fleming", t))
    z = sps.norm.ppf(1 - alpha / 2)
    # 2 - 2Φ(z/√t), written as 2·Φ̄(z/√t) to avoid cancellation
    assert obf == pytest.approx(2 * sps.norm.sf(z / np.sqrt(t)), rel=1e-9)
    for kind in ("uniform", "pocock", "obrien-fleming"):
        a = alpha_spending(5, alpha, kind, t)
        assert all(v >= 0 for v in a)
        assert math.fsum(a) == pytest.approx(alpha, rel=1e-12)
    # default fractions j/K
    assert np.cumsum(alpha_spending(4, 0.05, "pocock")) == pytest.approx(
        0.05 * np.log1p((math.e - 1) * np.arange(1, 5) / 4), rel=1e-12
    )


def test_spending_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="alpha"):
        alpha_spending(3, 1.5)
    with pytest.raises(ValueError, match="increasing"):
        alpha_spending(3, 0.01, "pocock", [0.5, 0.4, 1.0])
    with pytest.raises(ValueError, match="last fraction"):
        alpha_spending(2, 0.01, "pocock", [0.5, 0.9])
    with pytest.raises(ValueError, match="spending"):
        alpha_spending(2, 0.01, "linear")
    with pytest.raises(ValueError, match="n_looks"):
        alpha_spending(0, 0.01)


def test_plan_and_cumulative_alpha() -> None:
    plan = plan_looks(10, 500, 0.01)
    assert plan.schedule == look_schedule(10, 500)
    assert plan.alphas == (0.01 / plan.n_looks,) * plan.n_looks
    assert cumulative_alpha(plan.alphas, plan.n_looks - 1) == pytest.approx(0.01, rel=1e-15)
    assert cumulative_alpha(plan.alphas, 2) == pytest.approx(3 * 0.01 / plan.n_looks)
    assert plan.point_index(9) is None
    assert plan.point_index(10) == 0 and plan.point_index(14) == 0 and plan.point_index(15) == 1
    assert plan.point_index(10**6) == plan.n_looks - 1
    for kind in ("pocock", "obrien-fleming"):
        p = plan_looks(10, 500, 0.01, spending=kind)
        assert math.fsum(p.alphas) == pytest.approx(0.01, rel=1e-12)
    d = plan.to_dict()
    assert d["schedule"][0] == 10 and d["spending"] == "uniform"


@pytest.mark.slow
def test_split_alpha_controls_peeking_and_full_alpha_does_not() -> None:
    """Two equal normal samples tested (z-test, known σ) at every look of the schedule.

    With α_j from the uniform split the share of runs with any rejection must stay <= α
    (+3 simulation SE); testing at the full α at every look (peeking) must exceed 2α.
    """
    rng = np.random.default_rng(20261122)
    runs, alpha = 20_000, 0.05
    sched = np.array(look_schedule(8, 200))
    x = rng.standard_normal((runs, sched[-1])) - rng.standard_normal((runs, sched[-1]))
    z = np.cumsum(x, axis=1)[:, sched - 1] / np.sqrt(2.0 * sched)  # N(0, 1) at each look
    split = np.array(alpha_spending(sched.size, alpha))
    crit_split = sps.norm.isf(split / 2)
    crit_full = sps.norm.isf(alpha / 2)
    rejected_split = np.mean(np.any(np.abs(z) > crit_split, axis=1))
    rejected_full = np.mean(np.any(np.abs(z) > crit_full, axis=1))
    se = math.sqrt(alpha * (1 - alpha) / runs)
    assert rejected_split <= alpha + 3 * se
    assert rejected_full > 2 * alpha


# ----------------------------------------------------------------------------- tests at a look
def _sample(x: np.ndarray) -> Sample:
    return Sample(float(x.mean()), float(x.var(ddof=1)), x.size)


def test_confirm_separations_is_holm_over_scipy_welch() -> None:
    rng = np.random.default_rng(3)
    a, b, c = rng.normal(1.0, 0.1, 12), rng.normal(1.2, 0.1, 12), rng.normal(1.25, 0.1, 12)
    pairs = [(_sample(a), _sample(b)), (_sample(b), _sample(c))]
    p = [sps.ttest_ind(a, b, equal_var=False).pvalue, sps.ttest_ind(b, c, equal_var=False).pvalue]
    order = np.argsort(p)
    holm_p = np.empty(2)
    holm_p[order[0]] = min(1, 2 * p[order[0]])
    holm_p[order[1]] = max(holm_p[order[0]], p[order[1]])
    for alpha in (1e-6, 1e-3, 0.05, 0.3):
        assert confirm_separations(pairs, alpha, [True, True]) == list(holm_p < alpha)
    # the wrong order is never confirmed, and higher_is_better flips what "in front" means
    assert confirm_separations([(_sample(b), _sample(a))], 0.05, [True]) == [False]
    assert confirm_separations([(_sample(b), _sample(a))], 0.05, [False]) == [True]


def test_baseline_tests_verdicts() -> None:
    rng = np.random.default_rng(4)
    base = rng.normal(1.0, 0.01, 40)
    slow, fast, same = base * 1.05, base * 0.95, rng.normal(1.0, 0.002, 40)
    items = [(_sample(x), _sample(base)) for x in (slow, fast, same)]
    res = baseline_tests(items, 0.01, 0.01, [True, True, True])
    assert [r.verdict for r in res] == ["slower", "faster", "equivalent"]
    assert res[0].welch_p == pytest.approx(sps.ttest_ind(slow, base, equal_var=False).pvalue)
    assert res[0].relative_change == pytest.approx(slow.mean() / base.mean() - 1, rel=1e-12)
    assert res[2].welch_p_holm >= res[2].welch_p
    higher = baseline_tests(items[:1], 0.01, 0.01, [False])
    assert higher[0].verdict == "faster"  # a larger rate is better
    vague = baseline_tests([(Sample(1.0, 1.0, 5), Sample(1.0, 1.0, 5))], 0.01, 0.01, [True])
    assert vague[0].verdict == "undecided"


def test_growth_needed_closed_form() -> None:
    v, n, d, alpha = 4.0, 10, 0.5, 0.01
    a, b = Sample(100.0, v, n), Sample(100.0 + d, v, n)
    sep, eq = growth_needed(a, b, margin=0.01, alpha=alpha)
    z = sps.norm.ppf(1 - alpha / 2) + sps.norm.ppf(0.8)
    assert sep == pytest.approx(z**2 * (2 * v / n) / d**2, rel=1e-12)
    ze = sps.norm.ppf(1 - alpha) + sps.norm.ppf(0.8)
    assert eq == pytest.approx(ze**2 * (2 * v / n) / (1.0 - d) ** 2, rel=1e-12)
    # a fixed (stored) side keeps its variance: the live side must make up the rest
    a2, b2 = Sample(100.0, 0.04, 10), Sample(100.3, 0.04, 10)
    sep_fixed, _ = growth_needed(a2, b2, margin=0.01, alpha=alpha, fixed=(False, True))
    expected = 0.004 / ((0.3 / z) ** 2 - 0.004)  # live variance / room left by the fixed one
    assert expected > 1 and sep_fixed == pytest.approx(expected, rel=1e-12)
    assert growth_needed(a2, Sample(100.1, 0.04, 10), 0.01, alpha, fixed=(False, True))[0] is None
    # unreachable: the stored side alone is too imprecise for the equivalence margin
    assert (
        growth_needed(Sample(1.0, 1e-6, 10), Sample(1.0, 1.0, 2), 0.01, 0.01, fixed=(False, True))[
            1
        ]
        is None
    )
    assert growth_needed(a, Sample(100.0, v, n), 0.01, alpha)[0] is None  # equal means
