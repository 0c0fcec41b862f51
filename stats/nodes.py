"""Nodes as a level of variation: one-way random-effects analysis of per-node means.

A workload measured on several machines ("nodes") gives, per node i, n_i independent
means (its subsession means, docs/methods.md §3). Model (one-way random effects):

    y_ij = mu + b_i + e_ij,   b_i ~ (0, sigma_b²),   e_ij ~ (0, sigma_w²)

with the node effects b_i independent of the within-node noise e_ij. The question
(Kalibera & Jones 2013) is at which level to repeat: when sigma_b² > 0, more repetitions
on the same nodes cannot narrow the CI of mu below what k node means allow, and the honest
CI is the t interval over the k node means (k - 1 degrees of freedom). docs/methods.md
§14 gives the formulas and sources; units are those of the means (variances their square).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from benchrun.stats.results import AsDict, HasCI, HasPValue

__all__ = ["NodeVariation", "node_variation", "optimal_repetitions"]

#: which interval a :class:`NodeVariation` gives for the grand mean
CiFrom = Literal["nodes", "pooled"]


@dataclass(frozen=True)
class NodeVariation(AsDict, HasPValue, HasCI):
    """Result of :func:`node_variation` (units: those of the means; variances squared).

    Attributes
    ----------
    nodes : tuple of str
        Node names, in the order given.
    counts, means : tuple
        Means per node (n_i) and the mean of each node's means (ybar_i).
    k, n : int
        Nodes, and means over all nodes (N = sum n_i).
    f, p_value : float or None
        One-way ANOVA ``F = MSB / MSW`` on (k - 1, N - k) degrees of freedom and its
        upper-tail p-value; None when every mean is equal (nothing varies).
    df_between, df_within : int
        k - 1 and N - k.
    ms_between, ms_within : float
        ``MSB = sum n_i (ybar_i - ybar)² / (k - 1)``, ``MSW = sum (y_ij - ybar_i)² / (N - k)``.
    n0 : float
        Searle's average group size ``(N - sum n_i² / N) / (k - 1)`` (n for balanced data).
    within_variance, between_variance : float
        Method-of-moments (ANOVA) estimates ``sigma_w² = MSW`` and
        ``sigma_b² = max(0, (MSB - MSW) / n0)``.
    icc : float or None
        Intraclass correlation ``sigma_b² / (sigma_b² + sigma_w²)`` (None when both are 0).
    alpha : float
        Level of the F test; ``differ`` is ``p_value < alpha``.
    differ : bool
        Nodes differ: the F test rejects "no node effect".
    ci_from : {"nodes", "pooled"}
        Which interval ``mean``/``ci_low``/``ci_high`` are: from the k node means when
        the nodes differ, else from the N pooled means.
    mean, ci_low, ci_high, half_width : float
        The estimate of the grand mean and its CI (see ``ci_from``).
    confidence : float
        Level of the CIs.
    node_mean, node_ci_low, node_ci_high : float
        Mean of the node means and the t interval ``± t_{(1+c)/2, k-1} s_m / sqrt(k)``,
        s_m the standard deviation of the k node means (always computed).
    pooled_mean, pooled_ci_low, pooled_ci_high : float
        Mean of the N means and the t interval ``± t_{(1+c)/2, N-1} s / sqrt(N)``.
    floor_half_width : float
        ``t_{(1+c)/2, k-1} sqrt(sigma_b² / k)``: the node interval's half-width with
        infinitely many repetitions per node, what only more nodes can narrow.
    optimal_per_node : int or None
        :func:`optimal_repetitions` for ``cost_ratio``; None when sigma_b² is 0.
    cost_ratio : float
        Cost of one more node over the cost of one more mean on a node.
    """

    nodes: tuple[str, ...]
    counts: tuple[int, ...]
    means: tuple[float, ...]
    k: int
    n: int
    f: float | None
    p_value: float | None
    df_between: int
    df_within: int
    ms_between: float
    ms_within: float
    n0: float
    within_variance: float
    between_variance: float
    icc: float | None
    alpha: float
    differ: bool
    ci_from: CiFrom
    mean: float
    ci_low: float
    ci_high: float
    half_width: float
    confidence: float
    node_mean: float
    node_ci_low: float
    node_ci_high: float
    pooled_mean: float
    pooled_ci_low: float
    pooled_ci_high: float
    floor_half_width: float
    optimal_per_node: int | None
    cost_ratio: float


def optimal_repetitions(
    within_variance: float, between_variance: float, cost_ratio: float = 1.0
) -> int | None:
    """Repetitions per node that minimise the cost of a given precision of the grand mean.

    With k nodes and r means per node, ``Var(grand mean) = sigma_b²/k + sigma_w²/(k r)``
    and the cost is ``k (c_node + r c_rep)``; the r that minimises the cost at fixed
    variance (equivalently the variance at fixed cost) is
    ``r = sqrt((c_node / c_rep) · sigma_w² / sigma_b²)``, rounded up (at least 1).

    Parameters
    ----------
    within_variance : float
        sigma_w², the variance of one mean within a node (units²), >= 0.
    between_variance : float
        sigma_b², the variance of the node effects (units²), >= 0.
    cost_ratio : float
        ``c_node / c_rep``: the cost of adding a node (job start, warm-up) over the cost
        of one more mean on a node already running; > 0.

    Returns
    -------
    int or None
        The optimal repetitions per node, ``ceil(sqrt(cost_ratio·sigma_w²/sigma_b²))``,
        at least 1; None when sigma_b² is 0 (no node variation: where repetitions run
        does not matter, so no optimum exists).

    References
    ----------
    .. [1] T. Kalibera, R. Jones, "Rigorous Benchmarking in Reasonable Time", ISMM 2013,
       §3 (optimal repetition counts ``r_i = ceil(sqrt(c_{i+1}/c_i · S_i²/S_{i+1}²))``).
    .. [2] W. G. Cochran, *Sampling Techniques*, 3rd ed., Wiley 1977, §10.6 (two-stage
       sampling: optimum number of second-stage units).

    Examples
    --------
    Equal variance components and equal costs: one mean per node is best.

    >>> optimal_repetitions(1.0, 1.0)
    1

    Within-node noise 16 times the node variance, a node costing 4 means:

    >>> optimal_repetitions(16.0, 1.0, cost_ratio=4.0)
    8
    >>> optimal_repetitions(1.0, 0.0) is None
    True
    """
    w, b, c = float(within_variance), float(between_variance), float(cost_ratio)
    if not (math.isfinite(w) and w >= 0 and math.isfinite(b) and b >= 0):
        raise ValueError("variance components must be finite and >= 0")
    if not (math.isfinite(c) and c > 0):
        raise ValueError(f"cost_ratio must be > 0, got {cost_ratio!r}")
    if b == 0.0:
        return None
    return max(1, math.ceil(math.sqrt(c * w / b) - 1e-12))


def _t_half(s2: float, m: int, confidence: float) -> float:
    """``t_{(1+c)/2, m-1} · sqrt(s2 / m)``; 0 when s2 is 0."""
    from scipy.special import stdtrit  # on first use: reading stored results needs none

    return float(stdtrit(m - 1, 0.5 + confidence / 2.0)) * math.sqrt(s2 / m) if s2 > 0 else 0.0


def node_variation(
    groups: Mapping[str, ArrayLike] | Sequence[ArrayLike],
    *,
    confidence: float = 0.95,
    alpha: float = 0.05,
    cost_ratio: float = 1.0,
) -> NodeVariation:
    """Do nodes differ, how much, and the CI of the grand mean that follows (module docstring).

    Parameters
    ----------
    groups : mapping of str to array_like, or sequence of array_like
        Per node, its independent means (e.g. a workload's subsession means on that node);
        a sequence names the nodes "0", "1", .... At least 2 nodes, each with at least one
        finite value, and at least one node with 2 or more (N > k).
    confidence : float
        Level of the CIs, in (0, 1).
    alpha : float
        Level of the F test that decides which CI is used, in (0, 1).
    cost_ratio : float
        Cost of one more node over one more mean on a node (:func:`optimal_repetitions`).

    Returns
    -------
    NodeVariation
        The ANOVA table (F, p, MSB, MSW), the variance components by the method of
        moments, the intraclass correlation, both CIs of the grand mean and the one used:
        the t interval over the k node means (k - 1 df, centred on the mean of the node
        means) when ``p < alpha``, else the t interval over the N pooled means (N - 1 df).

    Notes
    -----
    ``MSB = sum n_i (ybar_i - ybar)²/(k-1)``, ``MSW = sum_i sum_j (y_ij - ybar_i)²/(N-k)``,
    ``F = MSB/MSW`` on (k-1, N-k) df (the same F as ``scipy.stats.f_oneway``).
    ``E[MSW] = sigma_w²`` and ``E[MSB] = sigma_w² + n0 sigma_b²`` with
    ``n0 = (N - sum n_i²/N)/(k-1)``, hence the ANOVA estimators ``sigma_w² = MSW``,
    ``sigma_b² = (MSB - MSW)/n0`` (truncated at 0). The node-mean interval is exact for
    normal effects whatever the n_i (each node mean is one observation of mu with variance
    sigma_b² + sigma_w²/n_i; with unequal n_i it is approximate). The pooled interval
    ignores sigma_b² and is too narrow when nodes differ.

    References
    ----------
    .. [1] T. Kalibera, R. Jones, "Rigorous Benchmarking in Reasonable Time", ISMM 2013
       (repeat at the level that varies; variance components of a multi-level design).
    .. [2] S. R. Searle, G. Casella, C. E. McCulloch, *Variance Components*, Wiley 1992,
       §3.5 (one-way classification, ANOVA estimators, balanced and unbalanced).
    .. [3] O. L. Davies, P. L. Goldsmith (eds.), *Statistical Methods in Research and
       Production*, 4th ed., 1972, Table 6.3 (the Dyestuff data of the example below;
       R package lme4's ``Dyestuff``).

    Examples
    --------
    The Dyestuff data (yield of dyestuff, 5 samples from each of 6 batches) give the
    classic variance components sigma_b² = 1764.05 and sigma_w² = 2451.25:

    >>> dyestuff = {
    ...     "A": [1545, 1440, 1440, 1520, 1580], "B": [1540, 1555, 1490, 1560, 1495],
    ...     "C": [1595, 1550, 1605, 1510, 1560], "D": [1445, 1440, 1595, 1465, 1545],
    ...     "E": [1595, 1630, 1515, 1635, 1625], "F": [1520, 1455, 1450, 1480, 1445]}
    >>> r = node_variation(dyestuff)
    >>> round(r.between_variance, 2), round(r.within_variance, 2), round(r.f, 3)
    (1764.05, 2451.25, 4.598)
    >>> r.differ, r.ci_from, r.k
    (True, 'nodes', 6)
    >>> round(r.mean, 1), round(r.half_width, 2)
    (1527.5, 49.83)
    """
    c, a = float(confidence), float(alpha)
    if not 0.0 < c < 1.0:
        raise ValueError(f"confidence must be strictly between 0 and 1, got {confidence!r}")
    if not 0.0 < a < 1.0:
        raise ValueError(f"alpha must be strictly between 0 and 1, got {alpha!r}")
    if isinstance(groups, Mapping):
        names = tuple(str(k) for k in groups)
        values = list(groups.values())
    else:
        names = tuple(str(i) for i in range(len(groups)))
        values = list(groups)
    arrays = [np.asarray(v, dtype=np.float64).reshape(-1) for v in values]
    k = len(arrays)
    if k < 2:
        raise ValueError(f"need at least 2 nodes, got {k}")
    for name, x in zip(names, arrays, strict=True):
        if x.size == 0:
            raise ValueError(f"node {name!r} has no means")
        if not np.all(np.isfinite(x)):
            raise ValueError(f"node {name!r}: means contain NaN or infinite values")
    counts = np.array([x.size for x in arrays], dtype=np.int64)
    n = int(counts.sum())
    if n <= k:
        raise ValueError("need a node with at least 2 means (the within-node variance)")
    means = np.array([float(np.mean(x)) for x in arrays])
    allx = np.concatenate(arrays)
    grand = float(np.mean(allx))
    ssb = float(np.sum(counts * (means - grand) ** 2))
    ssw = float(sum(np.sum((x - m) ** 2) for x, m in zip(arrays, means, strict=True)))
    dfb, dfw = k - 1, n - k
    msb, msw = ssb / dfb, ssw / dfw
    if msw > 0.0:
        f: float | None = msb / msw
        from scipy.special import fdtrc

        p: float | None = float(fdtrc(dfb, dfw, msb / msw))
    elif msb > 0.0:
        f, p = math.inf, 0.0
    else:
        f, p = None, None
    n0 = (n - float(np.sum(counts.astype(np.float64) ** 2)) / n) / dfb
    s2b = max(0.0, (msb - msw) / n0)
    s2w = msw
    icc = s2b / (s2b + s2w) if s2b + s2w > 0 else None
    differ = p is not None and p < a
    node_mean = float(np.mean(means))
    node_half = _t_half(float(np.var(means, ddof=1)), k, c)
    pooled_half = _t_half(float(np.var(allx, ddof=1)), n, c)
    if differ:
        ci_from: CiFrom = "nodes"
        est, half = node_mean, node_half
    else:
        ci_from, est, half = "pooled", grand, pooled_half
    return NodeVariation(
        nodes=names,
        counts=tuple(int(v) for v in counts),
        means=tuple(float(v) for v in means),
        k=k,
        n=n,
        f=f,
        p_value=p,
        df_between=dfb,
        df_within=dfw,
        ms_between=msb,
        ms_within=msw,
        n0=n0,
        within_variance=s2w,
        between_variance=s2b,
        icc=icc,
        alpha=a,
        differ=differ,
        ci_from=ci_from,
        mean=est,
        ci_low=est - half,
        ci_high=est + half,
        half_width=half,
        confidence=c,
        node_mean=node_mean,
        node_ci_low=node_mean - node_half,
        node_ci_high=node_mean + node_half,
        pooled_mean=grand,
        pooled_ci_low=grand - pooled_half,
        pooled_ci_high=grand + pooled_half,
        floor_half_width=_t_half(s2b, k, c),
        optimal_per_node=optimal_repetitions(s2w, s2b, cost_ratio),
        cost_ratio=float(cost_ratio),
    )
