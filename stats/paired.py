"""Paired comparisons within passes: the per-pass log ratio of two workloads (docs/paired.md).

Model of a drifting machine: the value of workload w in pass p is ``y_wp = mu_w·f_p·e_wp``
with ``f_p`` the machine's speed during the pass (shared by every workload that felt it)
and ``e_wp`` independent noise. For a pair (a, b) measured in the same passes,

    d_p = ln y_bp - ln y_ap = ln(mu_b/mu_a) + (ln e_bp - ln e_ap),

so the drift cancels, and the series ``d`` is analysed like any series of readings
(subsession means, docs/methods.md §3). This module holds the tests on a summary of ``d``:
the mean of its subsession means ``m``, their sample variance ``s²`` and count ``n``.

- Ratio and CI: ``r = exp(m)``, ``exp(m ∓ t_{(1+c)/2, n-1}·s/√n)``.
- Separation: the one-sample t test of ``E[d] = 0`` (two-sided), Student with ``n - 1``
  degrees of freedom, as :func:`scipy.stats.ttest_1samp` on the subsession means.
- Equivalence: TOST of ``E[d]`` against ``±ln(1 + margin)`` (Schuirmann 1987), one-sample.

Sources: A. Abedi, T. Brecht, "Conducting Repeatable Experiments in Highly Variable Cloud
Computing Environments", ICPE 2017 (randomised multiple interleaved trials); L. Bulej et
al., "Duet Benchmarking", ICPE 2020; D. J. Schuirmann, J. Pharmacokin. Biopharm. 15 (1987).
Units: ``d`` and ``m`` are natural-log ratios (dimensionless); ratios are b/a.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats
from scipy.special import ndtri

from benchrun.stats.results import HasPValue

__all__ = [
    "log_ratios",
    "PairedTest",
    "paired_test",
    "paired_growth_needed",
    "confirm_paired",
    "ratio_of_means_ci",
]


def log_ratios(a: ArrayLike, b: ArrayLike) -> np.ndarray | None:
    """``ln b - ln a`` element by element (the per-pass log ratio d_p, docs/paired.md).

    Parameters
    ----------
    a, b : array_like
        The two workloads' values in the same passes (one-dimensional, equal lengths,
        finite), in one unit; ValueError for unequal lengths or non-finite values.

    Returns
    -------
    ndarray or None
        ``d`` with ``d[p] = ln b[p] - ln a[p]`` (natural log of b/a, dimensionless); None
        when a value is not > 0 (no logarithm: the caller falls back to an unpaired
        comparison).

    Notes
    -----
    With ``y_wp = mu_w·f_p·e_wp`` (docs/methods.md §13), ``d_p = ln(mu_b/mu_a) +
    (ln e_bp - ln e_ap)``: the machine's speed ``f_p`` during pass p cancels.

    References
    ----------
    .. [1] A. Abedi and T. Brecht, "Conducting repeatable experiments in highly variable
       cloud computing environments", ICPE '17, 2017. doi:10.1145/3030207.3030229

    Examples
    --------
    >>> log_ratios([1.0, 2.0], [2.0, 2.0]).round(4).tolist()
    [0.6931, 0.0]
    >>> a, b = [10.0, 10.4, 9.8], [10.6, 10.9, 10.3]
    >>> bool(np.allclose(log_ratios(a, b), np.log(np.divide(b, a))))
    True
    >>> log_ratios([1.0, 0.0], [2.0, 2.0]) is None
    True
    """
    xa, xb = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if xa.shape != xb.shape or xa.ndim != 1:
        raise ValueError(f"a and b must be 1-D of one length, got {xa.shape} and {xb.shape}")
    if not (np.all(np.isfinite(xa)) and np.all(np.isfinite(xb))):
        raise ValueError("a and b must be finite")
    if xa.size and (xa.min() <= 0 or xb.min() <= 0):
        return None
    return np.log(xb) - np.log(xa)


@dataclass(frozen=True)
class PairedTest(HasPValue):
    """Tests on the mean log ratio ``m`` of a pair (see the module docstring).

    Attributes:
        mean: ``m``, mean of the subsession means of d (natural log of b/a).
        se: ``s/√n``, its standard error.
        n: subsession means of d; ``df = n - 1``.
        ratio, ratio_low, ratio_high: ``exp(m)`` and its CI at ``confidence`` (b/a).
        p_value: two-sided one-sample t test of ``E[d] = 0``.
        tost_p: TOST p against ``±ln(1 + margin)``; ``equivalent`` is ``tost_p < alpha``.
        margin, alpha, confidence: the levels used.
    """

    mean: float
    se: float
    n: int
    ratio: float
    ratio_low: float
    ratio_high: float
    p_value: float
    tost_p: float
    equivalent: bool
    margin: float
    alpha: float
    confidence: float

    @property
    def df(self) -> int:
        return self.n - 1

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def paired_test(
    mean: float,
    var: float,
    n: int,
    *,
    margin: float = 0.01,
    alpha: float = 0.01,
    confidence: float = 0.95,
) -> PairedTest:
    """One-sample t and TOST tests on a summary (m, s², n) of the log-ratio series d.

    Parameters
    ----------
    mean : float
        ``m``, the mean of the subsession means of d (natural log of b/a).
    var : float
        ``s²``, their sample variance (ddof=1), >= 0.
    n : int
        Number of subsession means of d, at least 2.
    margin : float
        Relative equivalence margin, > 0: TOST tests against ``δ = ln(1 + margin)``.
    alpha : float
        Level of each one-sided TOST test, in (0, 0.5); ``equivalent`` is ``tost_p < alpha``.
    confidence : float
        Level of the confidence interval of the ratio, in (0, 1).

    Returns
    -------
    PairedTest
        ``pvalue`` of the two-sided one-sample t test of ``E[d] = 0``, ``tost_p`` and
        ``equivalent``, the ratio ``exp(m)`` (b/a) with its CI ``ratio_low``/``ratio_high``,
        ``se`` and ``df = n - 1``.

    Notes
    -----
    ``p = 2·P[T_{n-1} >= |m|/se]`` with ``se = sqrt(s²/n)``; TOST with δ = ln(1 + margin):
    ``p_tost = max(P[T >= (m + δ)/se], P[T <= (m - δ)/se])``; the ratio's CI is
    ``exp(m ∓ t_{(1+c)/2, n-1}·se)``. A zero variance makes the ratio exact: p is 0 (m ≠ 0)
    or 1, TOST p is 0 inside ±δ and 1 outside.

    References
    ----------
    .. [1] Student, "The probable error of a mean", Biometrika 6(1):1-25, 1908.
       doi:10.1093/biomet/6.1.1
    .. [2] D. J. Schuirmann, "A comparison of the two one-sided tests procedure and the
       power approach for assessing the equivalence of average bioavailability", Journal
       of Pharmacokinetics and Biopharmaceutics 15(6):657-680, 1987. doi:10.1007/BF01068419

    Examples
    --------
    >>> t = paired_test(math.log(1.02), 0.01**2, 10, margin=0.01, alpha=0.01)
    >>> round(t.ratio, 4), t.pvalue < 1e-3, t.equivalent
    (1.02, True, False)

    From the log ratios of six passes, the same p as ``scipy.stats.ttest_1samp`` (and
    ``ttest_rel`` on the logarithms), the same TOST p as two one-sided t tests, and the
    ratio's CI as the exponential of the t interval of the mean of d:

    >>> from scipy import stats as sps
    >>> a = [10.0, 10.4, 9.8, 10.1, 10.3, 9.9]
    >>> b = [10.6, 10.9, 10.3, 10.8, 10.8, 10.4]
    >>> d = log_ratios(a, b)
    >>> t = paired_test(float(d.mean()), float(d.var(ddof=1)), d.size, margin=0.1, alpha=0.05)
    >>> round(t.ratio, 4), round(t.ratio_low, 4), round(t.ratio_high, 4)
    (1.0545, 1.0458, 1.0634)
    >>> ref = sps.ttest_1samp(d, 0.0)
    >>> bool(abs(t.pvalue - ref.pvalue) < 1e-12), t.df == int(ref.df)
    (True, True)
    >>> delta = math.log1p(0.1)
    >>> p_lo = sps.ttest_1samp(d, -delta, alternative="greater").pvalue
    >>> p_hi = sps.ttest_1samp(d, delta, alternative="less").pvalue
    >>> bool(abs(t.tost_p - max(p_lo, p_hi)) < 1e-12), t.equivalent
    (True, True)
    >>> ci = sps.t.interval(0.95, d.size - 1, loc=d.mean(), scale=sps.sem(d))
    >>> [round(float(x), 4) for x in np.exp(ci)]
    [1.0458, 1.0634]
    """
    m, v = float(mean), float(var)
    if not (math.isfinite(m) and math.isfinite(v) and v >= 0):
        raise ValueError(f"mean and var must be finite with var >= 0, got {mean}, {var}")
    if int(n) != n or n < 2:
        raise ValueError(f"n must be an integer >= 2, got {n}")
    if not 0 < alpha < 0.5:
        raise ValueError(f"alpha must be in (0, 0.5), got {alpha}")
    if not (math.isfinite(margin) and margin > 0):
        raise ValueError(f"margin must be > 0, got {margin}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    n = int(n)
    delta = math.log1p(margin)
    se = math.sqrt(v / n)
    if se == 0.0:
        p = 0.0 if m != 0 else 1.0
        p_tost = 0.0 if abs(m) < delta else 1.0
        lo = hi = m
    else:
        df = n - 1
        p = float(2.0 * stats.t.sf(abs(m) / se, df))
        p_tost = float(max(stats.t.sf((m + delta) / se, df), stats.t.cdf((m - delta) / se, df)))
        half = float(stats.t.ppf(0.5 + confidence / 2.0, df)) * se
        lo, hi = m - half, m + half
    return PairedTest(
        mean=m,
        se=se,
        n=n,
        ratio=math.exp(m),
        ratio_low=math.exp(lo),
        ratio_high=math.exp(hi),
        p_value=min(1.0, p),
        tost_p=min(1.0, p_tost),
        equivalent=p_tost < alpha,
        margin=float(margin),
        alpha=float(alpha),
        confidence=float(confidence),
    )


def paired_growth_needed(
    mean: float, var: float, n: int, margin: float, alpha: float, power: float = 0.8
) -> tuple[float | None, float | None]:
    """Factor f by which the log-ratio series must grow to separate resp. show equivalence.

    Planning estimate (normal approximation, the variance of m falling as 1/f): with
    ``se = sqrt(s²/n)``, separation needs ``se/√f <= |m|/(z_{1-α/2} + z_power)`` and
    equivalence ``se/√f <= (δ - |m|)/(z_{1-α} + z_power)``, δ = ln(1 + margin).
    Returns (f_separation, f_equivalence), each >= 1, or None when unreachable.
    """
    se2 = float(var) / int(n)
    d = abs(float(mean))
    delta = math.log1p(margin)
    zp = float(ndtri(power))

    def factor(target: float) -> float:
        return max(1.0, se2 / target**2) if se2 > 0 else 1.0

    sep = factor(d / (zp - float(ndtri(alpha / 2)))) if d > 0 else None
    eq = factor((delta - d) / (zp - float(ndtri(alpha)))) if delta > d else None
    return sep, eq


def confirm_paired(summaries: Sequence[tuple[float, float, int]], alpha: float) -> list[bool]:
    """Does each separation hold on a second summary (m, s², n) of the same log ratios?

    The "pass at q and 2q" check (docs/methods.md §3) for paired separations: the summaries
    are of the subsession means of size 2q; the two-sided one-sample t test, Holm-adjusted
    over the given pairs (Holm 1979), must reject at ``alpha``. The caller checks that
    the sign of m agrees with the separation it confirms.
    """
    from benchrun.stats.multi import holm

    if not summaries:
        return []
    ps = [
        paired_test(m, v, n, alpha=min(alpha, 0.49)).p_value if n >= 2 else 1.0
        for m, v, n in summaries
    ]
    return [p < alpha for p in holm(ps)]


def ratio_of_means_ci(
    mean_a: float,
    var_a: float,
    n_a: int,
    mean_b: float,
    var_b: float,
    n_b: int,
    confidence: float = 0.95,
) -> tuple[float, float | None, float | None]:
    """Ratio ``mean_b/mean_a`` of two independent means and its CI (delta method on logs).

    Parameters
    ----------
    mean_a, mean_b : float
        The two means, in one unit; the CI needs both > 0.
    var_a, var_b : float
        Sample variances (ddof=1) of the observations behind each mean, in the unit squared.
    n_a, n_b : int
        Number of observations behind each mean, at least 2.
    confidence : float
        Level of the confidence interval, in (0, 1).

    Returns
    -------
    tuple of (float, float or None, float or None)
        ``(r, low, high)`` with ``r = mean_b/mean_a`` (dimensionless); (None, None) bounds
        when a mean is not > 0 (r is NaN when ``mean_a`` is 0) or a variance is infinite.

    Notes
    -----
    ``se(ln r)² = s_a²/(n_a·m_a²) + s_b²/(n_b·m_b²)`` with Welch-Satterthwaite degrees of
    freedom on the same terms; CI ``r·exp(∓t·se)`` with ``t = t_{(1+c)/2, ν}``. Both
    variances 0 give the zero-width interval (r, r).

    References
    ----------
    .. [1] G. Casella and R. L. Berger, *Statistical Inference*, 2nd ed., Duxbury, 2002,
       §5.5.4 (the delta method).
    .. [2] F. E. Satterthwaite, "An approximate distribution of estimates of variance
       components", Biometrics Bulletin 2(6):110-114, 1946. doi:10.2307/3002019

    Examples
    --------
    B's mean is 10 % above A's:

    >>> r, low, high = ratio_of_means_ci(100.0, 4.0, 10, 110.0, 9.0, 12)
    >>> round(r, 4), round(low, 4), round(high, 4)
    (1.1, 1.0771, 1.1234)

    The same interval written out, with the Welch-Satterthwaite ν and scipy's t quantile:

    >>> from scipy import stats as sps
    >>> ua, ub = 4.0 / (10 * 100.0**2), 9.0 / (12 * 110.0**2)
    >>> nu = (ua + ub) ** 2 / (ua**2 / 9 + ub**2 / 11)
    >>> half = sps.t.ppf(0.975, nu) * math.sqrt(ua + ub)
    >>> round(1.1 * math.exp(-half), 4), round(1.1 * math.exp(half), 4)
    (1.0771, 1.1234)
    >>> ratio_of_means_ci(0.0, 1.0, 5, 2.0, 1.0, 5)
    (nan, None, None)
    """
    if not (mean_a > 0 and mean_b > 0):
        return (mean_b / mean_a if mean_a else math.nan), None, None
    r = mean_b / mean_a
    # squared coefficients of variation over n, formed as (sd/mean)² so that means near
    # the smallest floats (1e-300) do not underflow mean² to 0
    ua = (math.sqrt(var_a) / mean_a) ** 2 / n_a
    ub = (math.sqrt(var_b) / mean_b) ** 2 / n_b
    se = math.sqrt(ua + ub)
    if not math.isfinite(se):  # a variance beyond the largest float: no interval
        return r, None, None
    if se == 0:
        return r, r, r
    wa, wb = ua / (ua + ub), ub / (ua + ub)  # Welch-Satterthwaite, scale-free
    df = 1.0 / (wa**2 / (n_a - 1) + wb**2 / (n_b - 1))
    t = float(stats.t.ppf(0.5 + confidence / 2.0, df))
    return r, r * math.exp(-t * se), r * math.exp(t * se)
