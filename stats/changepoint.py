"""Change points in a history of campaigns over revisions (docs/history.md, issue 31).

A history is one estimate ``x_r`` per revision ``r`` (a campaign's mean of one workload,
in revision order) with its standard error ``s_r`` (from the campaign's CI), and the
between-campaign variance ``tau²``: how much two campaigns of the same revision differ on
this machine beyond what each campaign's CI says. Everything is done on the log scale,
``y_r = ln x_r`` with the relative standard error ``e_r = s_r / x_r`` (delta method), so a
step is a ratio and ``tau`` is relative (0.005 = campaign-to-campaign sd of 0.5 %). The
variance of one revision's value around its level is ``v_r = e_r² + tau²``.

The detector (chosen on the figures of ``benchmarks/changepoints.py``, docs/history.md):

1. **tau.** When not given, it is estimated from the history itself, robustly: the
   successive differences ``d_r = y_{r+1} - y_r`` have variance ``e_r² + e_{r+1}² +
   2 tau²`` where the level is constant, and a step or a single outlier moves only one or
   two of them. A first tau from their normalised median absolute deviation (MAD, about
   their median: a slow creep shifts the median, not the spread) sets aside the
   differences farther than 3 sd from the median; the moment estimate on the rest
   (corrected for the truncation) is ``tau² = max(0, (mean d² - mean(e_r² + e_{r+1}²)) / 2)``
   (:func:`tau_from_history`; von Neumann's mean square successive difference, made
   robust). The MAD alone was too imprecise on 30 revisions: its 5 % quantile was a third
   of the true tau, and too small a tau is what makes false alarms. For the same reason
   the detector uses tau one standard error above the estimate (the mean square of m
   successive differences has a relative standard error of about ``sqrt(3/m)``).
2. **One outlying campaign is not a level.** Each value is compared with the median of
   itself and its two neighbours (the median of the first or last three at the ends):
   a value farther than ``CLIP`` (4) standard deviations ``sqrt(v_r)`` from it is replaced
   by that median (a Hampel filter on Tukey's running median of 3). A level of two or more
   revisions keeps every value (the running median follows it); a single outlying
   campaign, wherever it is, loses its leverage (winsorised at 4 sd instead, one at the
   last revision kept enough of it to be taken for a change). New levels must
   also hold for ``min_size`` (2) revisions: a change is never placed after the last
   revision but one, where one campaign cannot tell a new level from an outlier.
3. **Binary segmentation with a weighted, studentised likelihood-ratio (CUSUM) test.**
   In a segment of m revisions, a split at ``k`` has the standardised difference of the
   two weighted means, ``z_k = (m_right - m_left) / sqrt(1/W_left + 1/W_right)``, weights
   ``w_r = 1/v_r`` and ``W`` their sums (with known variances the likelihood ratio of one
   change in the mean is ``max_k z_k²``: Hinkley 1970; binary segmentation: Vostrikova
   1981), divided by ``sqrt(phi_k)``, ``phi_k`` the weighted residual variance of the two
   levels over ``m - 2`` degrees of freedom (a weighted two-sample t; with tau given,
   ``phi_k`` is at least 1: the data may show more variation than the given tau, never
   less). The segment's p-value is that of ``max_k |t_k|`` under "no change" by
   permutation (Antoch & Hušková 2001): the same statistic, computed the same way (tau
   estimated from the segment, at least the given one; the same outlier filter), on
   ``N_PERM`` random orders of the segment's campaigns, each keeping its own standard
   error. With no change the campaigns are exchangeable, so the test is exact whatever
   the distribution of the noise (heavy tails, two modes) and the search over the split
   and the estimation of tau are paid for; a parametric bootstrap (normal histories with
   the estimated tau) gave three times the false alarms on noisy and bimodal runners and
   no more power. A segment of m of the n revisions is split when ``p <= alpha m / n``:
   with no change anywhere the probability of reporting any change is at most ``alpha``
   (the family error rate of the history), and the sub-segments of a split share alpha
   rather than each spending all of it (fewer echoes of a real step; no recall lost in
   benchmarks/changepoints.py).
4. **Size and evidence.** Each change's ratio is ``exp(m_after - m_before)`` between the
   weighted means of its two adjacent levels, with the CI ``exp(d ± q se)``,
   ``se = sqrt(phi (1/W_before + 1/W_after))``, ``phi`` the weighted residual variance of
   the final levels (at least 1 with tau given), ``q`` the normal quantile with tau given
   and Student's t on ``n - levels`` degrees of freedom with tau estimated; its evidence
   is the permutation p-value of the segment test that found it, and ``z = d / se``.

Units: indices count revisions (0-based); ratios, tau and relative errors are
dimensionless; levels are in the unit of the estimates.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import ndtri, stdtrit

from benchrun.stats.results import AsDict, HasPValue

__all__ = [
    "ALPHA",
    "CLIP",
    "ChangePoint",
    "ChangePoints",
    "MIN_SIZE",
    "N_PERM",
    "find_changes",
    "tau_from_history",
]

#: family error rate of one history: the probability of any change reported when there is
#: none (benchmarks/changepoints.py: 0.01 keeps the false alarms far below 1 per 100
#: unchanged revisions at every length from 30 to 100)
ALPHA = 0.01
#: fewest revisions a level must hold (a single campaign is never a level)
MIN_SIZE = 2
#: distance, in standard deviations sqrt(e_r² + tau²), beyond which a value is replaced by
#: the running median of 3 (an outlying campaign loses its leverage; 4 sd: 0.04 % of
#: the values of a history without outliers are touched)
CLIP = 4.0
#: permutations behind each p-value (its resolution is 1/(N_PERM + 1))
N_PERM = 2000
#: normalises the MAD to the sd of a normal distribution
_MAD_NORMAL = 1.482602218505602
#: successive differences farther than this many sd from their median are left out of tau
_TRIM = 3.0
#: variance of a standard normal truncated at ±_TRIM: 1 - 2 _TRIM phi(_TRIM) / (2 Phi(_TRIM) - 1)
_TRIM_VAR = 0.9733369246625415
#: smallest variance of a value, relative² (keeps exact inputs finite)
_TINY_VAR = 1e-24


@dataclass(frozen=True)
class ChangePoint(AsDict, HasPValue):
    """One change point of a history (module docstring).

    Attributes
    ----------
    index : int
        First revision of the new level (0-based, in the order given).
    ratio, ratio_low, ratio_high : float
        New level / old level (> 1: the estimates grew, e.g. slower for times) and its CI
        at ``confidence`` of :class:`ChangePoints`.
    p_value : float
        Permutation p-value of the segment test that found the change (the search over
        the split and the estimation of tau included); at most ``alpha``.
    z : float
        The step over its standard error, on the log scale.
    level_before, level_after : float
        The two levels (weighted geometric means, unit of the estimates).
    n_before, n_after : int
        Revisions in the level before and in the level after.
    """

    index: int
    ratio: float
    ratio_low: float
    ratio_high: float
    p_value: float
    z: float
    level_before: float
    level_after: float
    n_before: int
    n_after: int


@dataclass(frozen=True)
class ChangePoints(AsDict):
    """What :func:`find_changes` found in a history.

    Attributes
    ----------
    changes : tuple of ChangePoint
        In revision order; empty when the history has one level.
    n : int
        Revisions in the history.
    tau : float
        Between-campaign sd used, relative (log scale).
    tau_estimated : bool
        True when tau was estimated from the history: then ``tau`` is one standard
        error above the estimate of :func:`tau_from_history` (module docstring).
    outliers : tuple of int
        Revisions whose value was replaced by the median of it and its neighbours
        (outlying campaigns).
    alpha, confidence : float
        Family error rate of the history; level of each ratio's CI.
    min_size : int
        Fewest revisions of a level.
    method : str
        The detector (``"weighted CUSUM binary segmentation"``).
    """

    changes: tuple[ChangePoint, ...]
    n: int
    tau: float
    tau_estimated: bool
    outliers: tuple[int, ...]
    alpha: float
    confidence: float
    min_size: int
    method: str = "weighted CUSUM binary segmentation"

    @property
    def indices(self) -> list[int]:
        """The first revision of each new level."""
        return [c.index for c in self.changes]


def _tau(y: np.ndarray, e2: np.ndarray, upper: bool = False) -> np.ndarray:
    """tau of each row of ``y`` (..., n) with relative variances ``e2`` (broadcastable):
    :func:`tau_from_history`; ``upper``: one standard error above (the mean square of m
    successive differences has a relative standard error of about sqrt(3/m): their lag-1
    correlation is -1/2)."""
    d = np.diff(y, axis=-1)
    dc = d - np.median(d, axis=-1, keepdims=True)
    scale = _MAD_NORMAL * np.median(np.abs(dc), axis=-1, keepdims=True)
    pair = np.broadcast_to(e2[..., 1:] + e2[..., :-1], d.shape)
    tau0_2 = np.maximum(scale * scale - np.median(pair, axis=-1, keepdims=True), 0.0) / 2.0
    # one step on the differences within _TRIM sd of their centre (steps and outliers out)
    keep = dc * dc <= _TRIM**2 * (pair + 2.0 * tau0_2)
    count = np.maximum(np.sum(keep, axis=-1), 1)
    sq = np.sum(np.where(keep, dc * dc, 0.0), axis=-1) / count / _TRIM_VAR
    if upper:
        sq = sq * (1.0 + np.sqrt(3.0 / count))
    own = np.sum(np.where(keep, pair, 0.0), axis=-1) / count
    return np.sqrt(np.maximum(sq - own, 0.0) / 2.0)


def tau_from_history(log_values: ArrayLike, log_se: ArrayLike) -> float:
    """Between-campaign sd of a history, estimated robustly from its successive differences.

    Where the level is constant, ``d_r = y_{r+1} - y_r`` has variance ``e_r² + e_{r+1}² +
    2 tau²``; a step or an outlying campaign moves one or two differences only. A first
    tau from the normalised MAD of the differences about their median (a slow creep
    shifts the median, not the MAD) sets aside those farther than 3 sd from the median;
    on the rest, ``tau² = max(0, (mean d² / c - mean(e_r² + e_{r+1}²)) / 2)`` with ``c``
    the variance of a standard normal truncated at ±3 (0.9733).

    Parameters
    ----------
    log_values : array_like
        ``ln x_r`` in revision order (at least 3).
    log_se : array_like
        Relative standard errors ``e_r = s_r / x_r`` of each revision's campaign.

    Returns
    -------
    float
        tau, relative (0.005 = 0.5 %); 0 when the campaigns' own errors explain the
        differences.

    References
    ----------
    .. [1] J. von Neumann, R. H. Kent, H. R. Bellinson and B. I. Hart, "The mean square
       successive difference", Annals of Mathematical Statistics 12(2), 1941, pp. 153-162.
    .. [2] P. J. Rousseeuw and C. Croux, "Alternatives to the median absolute deviation",
       Journal of the American Statistical Association 88(424), 1993, pp. 1273-1283.

    Examples
    --------
    A hundred campaigns with errors of 0.3 % and a campaign-to-campaign sd of 0.5 %:

    >>> rng = np.random.default_rng(1)
    >>> y = 0.005 * rng.standard_normal(100) + 0.003 * rng.standard_normal(100)
    >>> round(tau_from_history(y, np.full(100, 0.003)), 4)
    0.0047

    A +5 % step in the middle changes one difference, which is set aside:

    >>> y[50:] += math.log(1.05)
    >>> round(tau_from_history(y, np.full(100, 0.003)), 4)
    0.0047
    """
    y = np.asarray(log_values, dtype=float)
    e = np.asarray(log_se, dtype=float)
    if y.ndim != 1 or y.shape != e.shape or y.size < 3:
        raise ValueError("tau_from_history needs two 1-d arrays of the same length >= 3")
    return float(_tau(y, e * e))


def _hampel(y: np.ndarray, sd: np.ndarray) -> np.ndarray:
    """``y`` (..., n) with each value farther than ``CLIP`` sd from the median of itself and
    its two neighbours (of the first or last three at the ends) replaced by that median."""
    if y.shape[-1] < 3:
        return y
    a = np.concatenate([y[..., 2:3], y[..., :-1]], axis=-1)
    b = y
    c = np.concatenate([y[..., 1:], y[..., -3:-2]], axis=-1)
    med = np.maximum(np.minimum(a, b), np.minimum(np.maximum(a, b), c))
    return np.where(np.abs(y - med) > CLIP * sd, med, y)


def _scan(y: np.ndarray, w: np.ndarray, min_size: int, floor: float | None) -> np.ndarray:
    """The statistic of every split of each row of ``y`` (..., m), left sizes ``min_size``
    to ``m - min_size``: the standardised difference of the weighted means, divided by
    ``sqrt(phi)``, the weighted residual variance of the two-level fit over its ``m - 2``
    degrees of freedom (at least ``floor``; None: not divided)."""
    w = np.broadcast_to(w, y.shape)
    yc = y - y[..., :1]
    cw = np.cumsum(w, axis=-1)
    cs = np.cumsum(w * yc, axis=-1)
    m = y.shape[-1]
    k = slice(min_size - 1, m - min_size)
    wl, sl = cw[..., k], cs[..., k]
    wr, sr = cw[..., -1:] - wl, cs[..., -1:] - sl
    z = (sr / wr - sl / wl) / np.sqrt(1.0 / wl + 1.0 / wr)
    if floor is None:
        return np.asarray(z)
    c2 = np.cumsum(w * yc * yc, axis=-1)
    q2 = c2[..., k]
    rss = (q2 - sl * sl / wl) + (c2[..., -1:] - q2 - sr * sr / wr)
    phi = np.maximum(rss / max(m - 2, 1), max(floor, _TINY_VAR))
    return np.asarray(z / np.sqrt(phi))


def _prepare(
    y: np.ndarray, e2: np.ndarray, tau: float | None, robust: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Rows of ``y`` (..., m) through the outlier filter, and their weights ``1 / v``,
    ``v = e² + t²`` with ``t`` estimated from each row one standard error up, at least
    ``tau`` when given (a row more variable than the given tau keeps its own scale: with
    the given one, permuted rows of a segment holding a step lost half their values to the
    filter and became runs); ``robust`` False: no filter."""
    t2 = _tau(y, e2, upper=True)[..., None] ** 2 if y.shape[-1] >= 3 else np.zeros(1)
    if tau is not None:
        t2 = np.maximum(t2, tau * tau)
    v = np.maximum(e2 + t2, _TINY_VAR)
    return (_hampel(y, np.sqrt(v)) if robust else y), np.asarray(1.0 / v)


def _level(y: np.ndarray, w: np.ndarray) -> tuple[float, float]:
    """Weighted mean of ``y`` and the sum of the weights."""
    total = float(np.sum(w))
    return float(np.sum(w * y) / total), total


def find_changes(
    estimates: Sequence[float] | ArrayLike,
    se: Sequence[float] | ArrayLike,
    *,
    tau: float | None = None,
    alpha: float = ALPHA,
    confidence: float = 0.95,
    min_size: int = MIN_SIZE,
    min_change: float = 0.0,
    n_perm: int = N_PERM,
    seed: int = 0,
) -> ChangePoints:
    """Change points of a history of campaigns (module docstring; docs/history.md).

    Weighted binary segmentation: in each segment the largest studentised difference of
    the weighted means on both sides of a split, its p-value by permuting the segment's
    campaigns (each with its error; tau and the filter recomputed on each), a split where
    ``p <= alpha`` times the segment's share of the revisions; values more than 4 sd from
    the median of their neighbours are replaced by it first, and a level holds at least
    ``min_size`` revisions.

    Parameters
    ----------
    estimates : array_like
        Each revision's estimate ``x_r`` (> 0), in revision order.
    se : array_like
        Each estimate's standard error ``s_r`` (same unit; a 95 % CI's half-width / 1.96).
    tau : float, optional
        Between-campaign sd, relative (0.005 = 0.5 %), measured on the machine; None:
        estimated from the history (:func:`tau_from_history`, one standard error above
        the estimate; said in the result).
    alpha : float
        Family error rate of the history (probability of any change when there is none).
    confidence : float
        Level of each ratio's CI.
    min_size : int
        Fewest revisions of a level (>= 1; 2 keeps one outlying campaign from being one;
        1 also turns the outlier filter off, since one campaign may then be a level).
    min_change : float
        Smallest relative change reported (0.01 = 1 %); smaller significant steps are
        merged with their neighbours.
    n_perm : int
        Permutations behind each p-value.
    seed : int
        Seed of the permutations (the result is a function of the inputs and the seed).

    Returns
    -------
    ChangePoints
        The change points in revision order, with tau and the outlying revisions.

    References
    ----------
    .. [1] D. V. Hinkley, "Inference about the change-point in a sequence of random
       variables", Biometrika 57(1), 1970, pp. 1-17.
    .. [2] L. Ju. Vostrikova, "Detecting 'disorder' in multidimensional random processes",
       Soviet Mathematics Doklady 24, 1981, pp. 55-59 (binary segmentation).
    .. [3] J. Antoch and M. Hušková, "Permutation tests in change point analysis",
       Statistics & Probability Letters 53(1), 2001, pp. 37-46.
    .. [4] J. W. Tukey, Exploratory Data Analysis, Addison-Wesley, 1977 (running medians
       of 3).
    .. [5] D. S. Matteson and N. A. James, "A nonparametric approach for multiple change
       point analysis of multivariate data", Journal of the American Statistical
       Association 109(505), 2014, pp. 334-345 (E-Divisive, compared in docs/history.md).

    Examples
    --------
    Thirty campaigns, sd 0.5 % between campaigns, CIs of ±0.6 %, +5 % from the 18th on:

    >>> rng = np.random.default_rng(3)
    >>> x = 100 * np.exp(0.005 * rng.standard_normal(30)) * np.where(np.arange(30) < 17, 1, 1.05)
    >>> found = find_changes(x, np.full(30, 0.3))
    >>> found.indices
    [17]
    >>> c = found.changes[0]
    >>> round(c.ratio, 3), round(c.ratio_low, 3), round(c.ratio_high, 3), c.p_value < 0.001
    (1.053, 1.048, 1.057, True)

    One campaign 10 % slow is not a change:

    >>> x = 100 * np.exp(0.005 * rng.standard_normal(30))
    >>> x[12] *= 1.10
    >>> found = find_changes(x, np.full(30, 0.3))
    >>> found.indices, found.outliers
    ([], (12,))
    """
    x = np.asarray(estimates, dtype=float)
    s = np.asarray(se, dtype=float)
    if x.ndim != 1 or x.shape != s.shape:
        raise ValueError("estimates and se must be 1-d arrays of the same length")
    if not (np.all(np.isfinite(x)) and np.all(x > 0)):
        raise ValueError("estimates must be finite and > 0")
    if not (np.all(np.isfinite(s)) and np.all(s >= 0)):
        raise ValueError("standard errors must be finite and >= 0")
    if min_size < 1 or not 0 < alpha < 1 or not 0 < confidence < 1 or n_perm < 1:
        raise ValueError("min_size >= 1, alpha and confidence in (0, 1), n_perm >= 1")
    n = x.size
    y = np.log(x)
    e2 = (s / x) ** 2
    estimated = tau is None
    if tau is None:
        tau = float(_tau(y, e2, upper=True)) if n >= 3 else 0.0
    elif not (math.isfinite(tau) and tau >= 0):
        raise ValueError("tau must be finite and >= 0")
    v = np.maximum(e2 + tau * tau, _TINY_VAR)
    # a level of one revision allowed: no campaign is an outlier
    robust = min_size >= 2
    yw = _hampel(y, np.sqrt(v)) if robust else y
    outliers = tuple(int(i) for i in np.flatnonzero(yw != y))
    w = 1.0 / v

    # the scale of the test: the data's own when tau was estimated, at least the given tau's
    floor = 1.0 if not estimated else 0.0
    given = None if estimated else tau
    found: list[tuple[int, float]] = []
    rng = np.random.default_rng(seed)
    stack = [(0, n)] if n >= 2 * min_size else []
    while stack:
        a, b = stack.pop()
        if b - a < 2 * min_size:
            continue
        ys, ws = _prepare(y[a:b], e2[a:b], given, robust)
        z = _scan(ys, ws, min_size, floor)
        j = int(np.argmax(np.abs(z)))
        stat = abs(float(z[j]))
        # the same statistic, the same way, on n_perm permutations of the segment's campaigns
        order = rng.permuted(np.tile(np.arange(b - a), (n_perm, 1)), axis=1)
        ys, ws = _prepare(y[a:b][order], e2[a:b][order], given, robust)
        null = np.max(np.abs(_scan(ys, ws, min_size, floor)), axis=-1)
        p = (1.0 + float(np.count_nonzero(null >= stat * (1 - 1e-12)))) / (n_perm + 1.0)
        if p <= alpha * (b - a) / n:
            k = a + min_size + j
            found.append((k, p))
            stack += [(a, k), (k, b)]
    found.sort()

    def build(points: list[tuple[int, float]]) -> list[ChangePoint]:
        bounds = [0, *(k for k, _ in points), n]
        spans = list(zip(bounds[:-1], bounds[1:], strict=True))
        levels = [_level(yw[lo:hi], w[lo:hi]) for lo, hi in spans]
        rss = sum(
            float(np.sum(w[lo:hi] * (yw[lo:hi] - m) ** 2))
            for (lo, hi), (m, _) in zip(spans, levels, strict=True)
        )
        df = n - len(levels)
        phi = max(rss / df if df > 0 else 1.0, floor)
        q = (
            float(stdtrit(df, 0.5 + confidence / 2))
            if estimated and df > 0
            else float(ndtri(0.5 + confidence / 2))
        )
        out = []
        for i, (k, p) in enumerate(points):
            (mb, wb), (ma, wa) = levels[i], levels[i + 1]
            d, sd = ma - mb, math.sqrt(phi * (1.0 / wb + 1.0 / wa))
            out.append(
                ChangePoint(
                    index=k,
                    ratio=math.exp(d),
                    ratio_low=math.exp(d - q * sd),
                    ratio_high=math.exp(d + q * sd),
                    p_value=p,
                    z=d / sd,
                    level_before=math.exp(mb),
                    level_after=math.exp(ma),
                    n_before=k - bounds[i],
                    n_after=bounds[i + 2] - k,
                )
            )
        return out

    changes = build(found)
    while changes and min_change > 0:
        small = min(range(len(changes)), key=lambda i: abs(math.log(changes[i].ratio)))
        if abs(changes[small].ratio - 1) >= min_change:
            break
        del found[small]
        changes = build(found)
    return ChangePoints(
        changes=tuple(changes),
        n=n,
        tau=float(tau),
        tau_estimated=estimated,
        outliers=outliers,
        alpha=alpha,
        confidence=confidence,
        min_size=min_size,
    )
