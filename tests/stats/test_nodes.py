"""stats.nodes: one-way random-effects analysis of per-node means (docs/methods.md §14).

Reference values: scipy.stats.f_oneway (F, p), closed-form t intervals computed here with
scipy.stats.t, the Dyestuff data (Davies & Goldsmith 1972, Table 6.3; R lme4's
``Dyestuff``, whose REML fit, equal to the ANOVA estimates for these balanced data,
gives Batch variance 1764.0 and Residual 2451.3). Simulations with a known truth: nodes
with random effects and the F test's false-positive rate without them.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats as ss

from benchrun.stats import node_variation, optimal_repetitions

DYESTUFF = {
    "A": [1545, 1440, 1440, 1520, 1580],
    "B": [1540, 1555, 1490, 1560, 1495],
    "C": [1595, 1550, 1605, 1510, 1560],
    "D": [1445, 1440, 1595, 1465, 1545],
    "E": [1595, 1630, 1515, 1635, 1625],
    "F": [1520, 1455, 1450, 1480, 1445],
}


def test_dyestuff_variance_components_and_anova() -> None:
    r = node_variation(DYESTUFF)
    ref = ss.f_oneway(*DYESTUFF.values())
    assert r.f == pytest.approx(float(ref.statistic), rel=1e-12)
    assert r.p_value == pytest.approx(float(ref.pvalue), rel=1e-10)
    # the published variance components of the Dyestuff data
    assert r.between_variance == pytest.approx(1764.05, abs=1e-9)
    assert r.within_variance == pytest.approx(2451.25, abs=1e-9)
    assert r.icc == pytest.approx(1764.05 / (1764.05 + 2451.25), rel=1e-12)
    assert (r.df_between, r.df_within, r.n0) == (5, 24, 5.0)
    assert r.differ and r.ci_from == "nodes"


def test_node_interval_is_the_t_interval_of_node_means() -> None:
    r = node_variation(DYESTUFF)
    m = np.array([np.mean(v) for v in DYESTUFF.values()])
    lo, hi = ss.t.interval(0.95, df=5, loc=m.mean(), scale=ss.sem(m))
    assert (r.ci_low, r.ci_high) == (pytest.approx(lo, rel=1e-12), pytest.approx(hi, rel=1e-12))
    allx = np.concatenate([np.asarray(v, float) for v in DYESTUFF.values()])
    plo, phi = ss.t.interval(0.95, df=29, loc=allx.mean(), scale=ss.sem(allx))
    assert r.pooled_ci_low == pytest.approx(plo, rel=1e-12)
    assert r.pooled_ci_high == pytest.approx(phi, rel=1e-12)
    # the floor: t_{k-1} sqrt(sigma_b^2 / k)
    assert r.floor_half_width == pytest.approx(ss.t.ppf(0.975, 5) * math.sqrt(1764.05 / 6))


def test_unbalanced_groups_match_scipy_and_searle_n0() -> None:
    rng = np.random.default_rng(3)
    groups = {"x": rng.normal(0, 1, 3), "y": rng.normal(1, 1, 7), "z": rng.normal(0.5, 1, 12)}
    r = node_variation(groups, alpha=0.5)
    ref = ss.f_oneway(*groups.values())
    assert r.f == pytest.approx(float(ref.statistic), rel=1e-12)
    assert r.p_value == pytest.approx(float(ref.pvalue), rel=1e-10)
    n = np.array([3, 7, 12])
    n0 = (n.sum() - (n**2).sum() / n.sum()) / 2
    assert r.n0 == pytest.approx(n0)
    assert r.between_variance == pytest.approx(max(0.0, (r.ms_between - r.ms_within) / n0))
    assert r.counts == (3, 7, 12)


def test_no_difference_gives_the_pooled_interval() -> None:
    groups = [[1.0, 2.0, 3.0], [2.0, 1.0, 3.0], [3.0, 2.0, 1.0]]
    r = node_variation(groups)
    assert r.f == 0.0 and r.p_value == 1.0
    assert not r.differ and r.ci_from == "pooled"
    assert r.between_variance == 0.0 and r.optimal_per_node is None
    lo, hi = ss.t.interval(0.95, df=8, loc=2.0, scale=ss.sem([1, 2, 3] * 3))
    assert (r.ci_low, r.ci_high) == (pytest.approx(lo), pytest.approx(hi))


def test_constant_and_bad_input() -> None:
    r = node_variation([[5.0, 5.0], [5.0]])
    assert r.f is None and r.p_value is None and not r.differ and r.half_width == 0.0
    r = node_variation([[5.0, 5.0], [6.0, 6.0]])
    assert r.f == math.inf and r.differ
    for bad in ([[1.0, 2.0]], [[1.0], [2.0]], [[1.0, 2.0], []], [[1.0, math.nan], [1.0]]):
        with pytest.raises(ValueError):
            node_variation(bad)
    with pytest.raises(ValueError):
        node_variation([[1.0, 2.0], [3.0]], alpha=1.0)


def test_optimal_repetitions_minimises_cost_for_the_variance() -> None:
    # brute force over designs: for each r, the nodes k (real) that reach a variance V,
    # and their cost; the best integer r must be the formula's (or its floor neighbour)
    sw2, sb2, ratio = 9.0, 0.5, 3.0
    r_star = optimal_repetitions(sw2, sb2, ratio)
    rs = np.arange(1, 200)
    var_unit = sb2 + sw2 / rs  # k * Var(mean) for one node
    cost = (ratio + rs) * var_unit  # cost of reaching V = 1 is k (c_node + r c_rep), k = var_unit
    best = int(rs[np.argmin(cost)])
    assert r_star is not None and best in (r_star - 1, r_star)
    assert r_star == math.ceil(math.sqrt(ratio * sw2 / sb2))
    with pytest.raises(ValueError):
        optimal_repetitions(1.0, 1.0, cost_ratio=0.0)


def _simulate(rng: np.random.Generator, sims: int, k: int, r: int, sd_b: float, sd_w: float):
    """sims campaigns of k nodes with r means each: y = mu + b_i + e_ij, mu = 10."""
    b = rng.normal(0.0, sd_b, (sims, k, 1))
    e = rng.normal(0.0, sd_w, (sims, k, r))
    return 10.0 + b + e


def test_node_ci_covers_where_the_pooled_ci_undercovers() -> None:
    rng = np.random.default_rng(20131)
    y = _simulate(rng, 3000, k=4, r=8, sd_b=1.0, sd_w=1.0)
    node_cov = pooled_cov = used_cov = 0
    differ = 0
    for sample in y:
        res = node_variation(list(sample))
        node_cov += res.node_ci_low <= 10.0 <= res.node_ci_high
        pooled_cov += res.pooled_ci_low <= 10.0 <= res.pooled_ci_high
        used_cov += res.ci_low <= 10.0 <= res.ci_high
        differ += res.differ
    n = len(y)
    # closed form for the pooled interval's coverage is not simple; the node interval
    # is exact here (balanced, normal): 0.95 within 3 binomial standard errors
    se = math.sqrt(0.95 * 0.05 / n)
    assert abs(node_cov / n - 0.95) < 3 * se
    assert pooled_cov / n < 0.75  # ignores sigma_b^2: far too narrow
    assert differ / n > 0.7  # the F test sees nodes this different most of the time
    assert used_cov / n > 0.85  # the interval used (chosen by the F test)


def test_f_test_false_positive_rate_without_node_effect() -> None:
    rng = np.random.default_rng(7)
    y = _simulate(rng, 4000, k=3, r=6, sd_b=0.0, sd_w=2.0)
    rejected = sum(node_variation(list(s)).differ for s in y)
    se = math.sqrt(0.05 * 0.95 / len(y))
    assert abs(rejected / len(y) - 0.05) < 3 * se
    # the same rejections as scipy's one-way ANOVA
    p = ss.f_oneway(y[:, 0], y[:, 1], y[:, 2], axis=1).pvalue
    assert int(np.sum(p < 0.05)) == rejected


def test_to_dict_is_jsonable() -> None:
    import json

    d = node_variation(DYESTUFF).to_dict()
    json.loads(json.dumps(d))
    assert d["nodes"] == list("ABCDEF") and d["ci_from"] == "nodes"
