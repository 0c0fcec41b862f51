"""Rank-based paired test on the per-pass log ratios d (docs/methods.md §13.1).

For a pair (a, b) measured in the same passes, ``d_p = ln(y_bp / y_ap)``. Under "A and B are
the same program" the random order of the two rounds within a pass makes each ``d_p``
symmetric about 0 (the two readings of a pass are exchangeable), which is exactly the null
hypothesis of the Wilcoxon signed-rank test. This module holds that test, the
Hodges-Lehmann estimate of the centre of d with its distribution-free confidence interval
(Walsh averages), and TOST by two one-sided signed-rank tests against ``±ln(1 + margin)``.

- Statistic: ``W+ = Σ_{d_i > 0} R_i`` with ``R_i`` the (mid)rank of ``|d_i|`` among all n
  values. Zeros are ranked with the rest and then count for neither sign (Pratt 1959): the
  statistic then equals the number of positive Walsh averages (Tukey's identity), so test,
  estimate and interval rest on the same n values, and a zero still pushes the other ranks
  up (a run of exact ties between A and B is evidence of no difference, not missing data).
- Null distribution: conditional on the ``|d_i|`` (a permutation test over the 2^n sign
  patterns, valid for any ties or zeros). Exact when at most 200 values are non-zero (or
  all non-zero ``|d_i|`` are equal: then it is the sign test's binomial), else the normal
  approximation with the conditional mean ``ΣR_i/2`` and variance ``ΣR_i²/4`` over the
  non-zero values (the usual tie correction plus Pratt's zero correction) and the
  Edgeworth term of the statistic's fourth cumulant ``-ΣR_i⁴/8``: W+ is a sum of bounded
  terms, lighter-tailed than the normal, so the plain normal p overstates the far tail
  (by 65 % at 200 values and p = 1e-7, 20 % at 1 000), which costs a sequential test at
  small levels passes; the corrected p is within 15 % of the exact one there.
- Estimate: ``θ̂ = median{(d_i + d_j)/2 : i <= j}`` (Hodges & Lehmann 1963), the
  pseudo-median of d. ``exp(θ̂)`` is the median per-pass ratio b/a when d is symmetric;
  ``exp(mean d)`` (stats.paired) is the geometric-mean ratio.
- Interval: the k-th smallest and k-th largest Walsh averages, ``k`` from the signed-rank
  null quantile (Hollander, Wolfe & Chicken 2014, §3.3).

Units: d, the estimate and its CI are natural-log ratios (dimensionless).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import bdtr, bdtrc, ndtr, ndtri

from benchrun.stats.results import AsDict, HasPValue

__all__ = ["SignedRankTest", "signed_rank_test", "signed_rank_p", "hodges_lehmann"]

#: at most this many non-zero values: the exact (permutation) null distribution (its
#: convolution costs about 2-3 ms at 200 values on this project's VM, 30-80 ms at 400)
EXACT_MAX_N = 200
#: at most this many values: every Walsh average is formed and np.partition selects;
#: above it, order statistics of the Walsh averages are found by counting (O(n log n) each).
#: Both give the same values; on this project's 2-core VM four order statistics cost about
#: the same both ways at 400 values, and at 5000 about 98 ms formed against 10-15 counted
WALSH_MAX_N = 400
_ALTERNATIVES = ("two-sided", "greater", "less")


def _values(d: ArrayLike) -> np.ndarray:
    x = np.asarray(d, dtype=np.float64)
    if x.ndim != 1:
        raise ValueError(f"d must be one-dimensional, got shape {x.shape}")
    if x.size < 2:
        raise ValueError(f"the signed-rank test needs at least 2 values of d, got {x.size}")
    bad = int(np.count_nonzero(~np.isfinite(x)))
    if bad:
        raise ValueError(f"d must be finite: {bad} of {x.size} values are NaN or infinite")
    return x


def _check_confidence(confidence: float) -> None:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")


def _doubled_midranks(a: np.ndarray) -> tuple[np.ndarray, bool]:
    """Twice the average ranks (1-based) of ``a`` (integers: ties share their mean rank),
    and whether there are ties."""
    n = a.size
    order = np.argsort(a, kind="stable")
    s = a[order]
    new = np.empty(n, dtype=bool)
    new[0] = True
    np.not_equal(s[1:], s[:-1], out=new[1:])
    starts = np.flatnonzero(new)
    ends = np.append(starts[1:], n)
    r2 = np.empty(n, dtype=np.int64)
    r2[order] = np.repeat(starts + 1 + ends, ends - starts)
    return r2, starts.size < n


@functools.lru_cache(maxsize=64)
def _untied_pmf(n: int) -> np.ndarray:
    """Null pmf of W+ for ranks 1..n (no ties, no zeros): index t is P(W+ = t)."""
    pmf = _sum_pmf(np.arange(1, n + 1, dtype=np.int64))
    pmf.setflags(write=False)
    return pmf


def _sum_pmf(weights: np.ndarray) -> np.ndarray:
    """pmf of Σ w_i·B_i with independent fair coins B_i (integer weights >= 1)."""
    pmf = np.zeros(int(weights.sum()) + 1)
    pmf[0] = 1.0
    top = 0
    for w in weights.tolist():
        shifted = pmf[: top + 1].copy()
        pmf[: top + 1] *= 0.5
        pmf[w : w + top + 1] += 0.5 * shifted
        top += w
    return pmf


def _binomial_tails(k: int, m: int) -> tuple[float, float]:
    """(P[X >= k], P[X <= k]) for X ~ Binomial(m, 1/2): exact integer sums up to m = 1000
    (so k = m gives exactly 2^-m), scipy's incomplete beta above."""
    if m > 1000:
        return (float(bdtrc(k - 1, m, 0.5)) if k > 0 else 1.0), float(bdtr(k, m, 0.5))
    upper = sum(math.comb(m, i) for i in range(k, m + 1))
    lower = (1 << m) - upper + math.comb(m, k)
    return upper / (1 << m), lower / (1 << m)


def _signed_rank(x: np.ndarray) -> tuple[float, float, float, float, bool]:
    """(W+, z, P[W >= W+], P[W <= W+], exact) under the sign-flip null, zeros by Pratt."""
    r2, ties = _doubled_midranks(np.abs(x))
    nonzero = x != 0
    untied = not ties and bool(nonzero.all())  # ranks 1..n
    r2 = r2[nonzero]
    if r2.size == 0:
        return 0.0, 0.0, 1.0, 1.0, True
    positive = x[nonzero] > 0
    w2 = int(r2[positive].sum())
    total2 = int(r2.sum())
    # (W+ - ΣR/2)/sqrt(ΣR²/4) in the doubled ranks 2R
    z = (2 * w2 - total2) / math.sqrt(float(np.square(r2, dtype=np.float64).sum()))
    if r2.min() == r2.max():  # one tie group: the sign test, exact at any n
        greater, less = _binomial_tails(int(positive.sum()), int(r2.size))
        return w2 / 2.0, z, greater, less, True
    if r2.size <= EXACT_MAX_N:
        g = 2 if untied else math.gcd(*r2.tolist())
        w = r2 // g
        pmf = _untied_pmf(int(w.size)) if untied else _sum_pmf(w)
        t = w2 // g
        less = float(pmf[: t + 1].sum())
        greater = float(pmf[t:].sum())
        return w2 / 2.0, z, min(1.0, greater), min(1.0, less), True
    r2f = r2.astype(np.float64)
    g2 = -2.0 * float(np.sum(r2f**4)) / float(np.sum(r2f**2)) ** 2
    return w2 / 2.0, z, _edgeworth_sf(z, g2), _edgeworth_sf(-z, g2), False


def _edgeworth_sf(z: float, g2: float) -> float:
    """P[Z >= z] for a standardised symmetric statistic of excess kurtosis ``g2 <= 0``: the
    one-term Edgeworth expansion ``Φ(-z) + g2/24·(z³ - 3z)·φ(z)`` (Kendall & Stuart,
    *The Advanced Theory of Statistics* 1, 4th ed., 1977, §6.18), at least ``Φ(-z)/2``
    (far out, where the expansion would go below that and then negative) and at most 1.

    For the signed-rank statistic ``g2 = -2ΣR_i⁴/(ΣR_i²)²`` (each term ``±R_i/2`` has
    fourth cumulant ``-R_i⁴/8``), about ``-1.2/n`` without ties. Against the exact law
    without ties at 201-600 values the result is within 15 % of the exact p for p >= 1e-8,
    where the plain normal p is up to 65 % above it; the floor takes over near p = 6e-8 at
    201 values (3e-9 at 300, 4e-12 at 600), 14 % below the exact p there and above it
    farther out (tests/stats/test_signedrank.py).
    """
    normal = float(ndtr(-z))
    tail = normal + g2 / 24.0 * (z**3 - 3.0 * z) * math.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)
    return min(1.0, max(0.5 * normal, tail))


def signed_rank_p(
    d: ArrayLike, shift: float = 0.0, alternative: str = "two-sided"
) -> tuple[float, bool]:
    """p-value of the Wilcoxon signed-rank test that ``d - shift`` is symmetric about 0.

    Parameters
    ----------
    d : array_like
        The per-pass log ratios (one-dimensional, at least 2 values, finite).
    shift : float
        The centre under the null hypothesis, in the units of d (e.g. ``±ln(1 + margin)``
        for the two one-sided tests of TOST).
    alternative : {"two-sided", "greater", "less"}
        "greater": d tends to exceed ``shift`` (W+ large); "less": the reverse.

    Returns
    -------
    tuple of (float, bool)
        ``(p, exact)``: the p-value and whether it comes from the exact null distribution
        (False: the Edgeworth-corrected normal approximation).

    Notes
    -----
    Ranks of ``|d_i - shift|`` over all n values (midranks for ties; zeros ranked and then
    counted for neither sign, Pratt 1959). The null law is that of ``Σ R_i·B_i`` over the
    non-zero values with independent fair coins ``B_i`` (sign flips): computed exactly by
    convolution when at most 200 values are non-zero, or as a binomial when their ``|d_i|``
    are all equal; otherwise ``z = (W+ - ΣR_i/2)/sqrt(ΣR_i²/4)`` against the normal
    distribution with the Edgeworth term of the fourth cumulant (:func:`_edgeworth_sf`),
    without continuity correction. Two-sided: twice the smaller tail, at most 1.
    Without ties or zeros this is ``scipy.stats.wilcoxon`` (method "exact") up to 200
    values, and within 15 % of it above (scipy's "asymptotic" is the plain normal p); with them, scipy's "exact" rounds the statistic and uses the untied
    law (not exact), so this conditional law is used instead (it equals scipy's
    permutation test, which scipy runs only up to 13 values).

    References
    ----------
    .. [1] F. Wilcoxon, "Individual comparisons by ranking methods", Biometrics Bulletin
       1(6):80-83, 1945. doi:10.2307/3001968
    .. [2] J. W. Pratt, "Remarks on zeros and ties in the Wilcoxon signed rank procedures",
       Journal of the American Statistical Association 54(287):655-667, 1959.
       doi:10.1080/01621459.1959.10501526
    .. [3] M. Hollander, D. A. Wolfe and E. Chicken, *Nonparametric Statistical Methods*,
       3rd ed., Wiley, 2014, §3.1.

    Examples
    --------
    Ten passes all of one sign: the exact two-sided p is 2/2^10.

    >>> signed_rank_p([0.01, 0.02, 0.015, 0.03, 0.011, 0.007, 0.02, 0.05, 0.012, 0.018])
    (0.001953125, True)

    The same p as ``scipy.stats.wilcoxon``'s exact law without ties, and close to it above
    200 values:

    >>> from scipy import stats as sps
    >>> rng = np.random.default_rng(1)
    >>> d = rng.normal(0.01, 0.02, 30)
    >>> p, exact = signed_rank_p(d, alternative="greater")
    >>> exact, bool(abs(p - sps.wilcoxon(d, alternative="greater").pvalue) < 1e-12)
    (True, True)
    >>> d = rng.normal(0.003, 0.02, 400)
    >>> p, exact = signed_rank_p(d, shift=0.005)
    >>> ref = sps.wilcoxon(d - 0.005, method="exact").pvalue
    >>> exact, bool(abs(p / ref - 1) < 0.01)
    (False, True)
    """
    if alternative not in _ALTERNATIVES:
        raise ValueError(f"alternative must be one of {_ALTERNATIVES}, got {alternative!r}")
    if not math.isfinite(shift):
        raise ValueError(f"shift must be finite, got {shift}")
    x = _values(d)
    _, _, greater, less, exact = _signed_rank(x - shift if shift else x)
    if alternative == "greater":
        return greater, exact
    if alternative == "less":
        return less, exact
    return min(1.0, 2.0 * min(greater, less)), exact


def _ci_rank(n: int, confidence: float) -> int:
    """k of the interval [W_(k), W_(M+1-k)]: largest k with 2·P0[W+ <= k-1] <= 1 - c (0: none)."""
    tail = (1.0 - confidence) / 2.0
    if n <= EXACT_MAX_N:
        cdf = np.cumsum(_untied_pmf(n))
        return int(np.searchsorted(cdf, tail * (1.0 + 1e-12), side="right"))
    mean = n * (n + 1) / 4.0
    sd = math.sqrt(n * (n + 1) * (2 * n + 1) / 24.0)
    k = math.floor(mean + float(ndtri(tail)) * sd + 0.5)
    return min(max(0, k), (n * (n + 1) // 2 + 1) // 2)


def _walsh_all(s: np.ndarray, ranks: list[int]) -> list[float]:
    """Order statistics (1-based ranks) of the pair sums s_i + s_j, i <= j, all formed."""
    n = s.size
    if n <= 100:
        sums = np.add.outer(s, s)[np.triu_indices(n)]
    else:  # row by row: half the memory traffic of the square
        sums = np.empty(n * (n + 1) // 2)
        at = 0
        for i in range(n):
            sums[at : at + n - i] = s[i] + s[i:]
            at += n - i
    kth = sorted({r - 1 for r in ranks})
    part = np.partition(sums, kth)
    return [float(part[r - 1]) for r in ranks]


def _row_counts(s: np.ndarray, t: float, strict: bool) -> np.ndarray:
    """For each i: #{j : s_i + s_j < t} (strict) or <= t, the sums in floating point.

    ``searchsorted(s, t - s_i)`` is right except where rounding of ``t - s_i`` disagrees
    with that of ``s_i + s_j``; those rows are redone by a vectorised binary search on the
    sums themselves, so counts agree exactly with the sums formed by :func:`_walsh_all`.
    """
    n = s.size
    idx = np.searchsorted(s, t - s, side="left" if strict else "right")
    below = s + s[np.maximum(idx - 1, 0)]
    above = s + s[np.minimum(idx, n - 1)]
    if strict:
        ok = ((idx == 0) | (below < t)) & ((idx == n) | (above >= t))
    else:
        ok = ((idx == 0) | (below <= t)) & ((idx == n) | (above > t))
    bad = np.flatnonzero(~ok)
    if bad.size:
        si = s[bad]
        lo = np.zeros(bad.size, dtype=np.int64)
        hi = np.full(bad.size, n, dtype=np.int64)
        while True:
            active = lo < hi
            if not active.any():
                break
            mid = (lo + hi) // 2
            v = si + s[np.minimum(mid, n - 1)]
            inside = (v < t) if strict else (v <= t)
            go_right = active & inside
            lo = np.where(go_right, mid + 1, lo)
            hi = np.where(active & ~inside, mid, hi)
        idx[bad] = lo
    return idx


def _walsh_select(s: np.ndarray, rank: int, seed: int = 0) -> float:
    """The rank-th smallest (1-based) pair sum s_i + s_j, i <= j, of sorted s, without
    forming them: candidate ranges per row narrowed by sampled pivots (Floyd-Rivest style),
    each step counting sums below a threshold in O(n log n); at most ``max(n, 4096)``
    candidates are finally formed and partitioned."""
    n = s.size
    rows = np.arange(n)
    lo = rows.copy()  # candidates of row i: j in [lo_i, hi_i)
    hi = np.full(n, n, dtype=np.int64)
    below = 0  # sums known to rank before every candidate
    cap = max(n, 4096)
    rng = np.random.default_rng(seed)
    m = 2048
    while True:
        cnt = hi - lo
        total = int(cnt.sum())
        if total <= cap:
            keep = np.flatnonzero(cnt)
            starts = np.repeat(lo[keep] - np.cumsum(cnt[keep]) + cnt[keep], cnt[keep])
            j = starts + np.arange(total)
            i = np.repeat(keep, cnt[keep])
            sums = s[i] + s[j]
            r = rank - below - 1
            return float(np.partition(sums, r)[r])
        cum = np.cumsum(cnt)
        pick = rng.integers(0, total, size=m)
        prow = np.searchsorted(cum, pick, side="right")
        pj = lo[prow] + pick - (cum[prow] - cnt[prow])
        vals = np.sort(s[prow] + s[pj])
        q = (rank - below) / total
        pos = q * m
        gap = 3.0 * math.sqrt(m * q * (1 - q)) + 2.0
        t_lo = float(vals[max(0, math.floor(pos - gap))])
        t_hi = float(vals[min(m - 1, math.ceil(pos + gap))])
        new_lo = np.clip(_row_counts(s, t_lo, strict=True), lo, hi)
        new_hi = np.clip(_row_counts(s, t_hi, strict=False), lo, hi)
        n_below = int((new_lo - lo).sum())
        n_mid = int((new_hi - new_lo).sum())
        if rank <= below + n_below:
            hi = new_lo
        elif rank > below + n_below + n_mid:
            lo = new_hi
            below += n_below + n_mid
        elif t_lo == t_hi:
            return t_lo  # every candidate left in [t_lo, t_hi] is this one value
        elif n_mid < total:
            lo, hi = new_lo, new_hi
            below += n_below
        else:  # the sample spanned all candidates: split at one pivot
            t = float(vals[min(m - 1, int(pos))])
            p_lo = np.clip(_row_counts(s, t, strict=True), lo, hi)
            p_hi = np.clip(_row_counts(s, t, strict=False), lo, hi)
            a, b = int((p_lo - lo).sum()), int((p_hi - lo).sum())
            if rank <= below + a:
                hi = p_lo
            elif rank <= below + b:
                return t
            else:
                lo = p_hi
                below += b


def _walsh_next(s: np.ndarray, t: float, rank: int) -> float:
    """The (rank+1)-th smallest pair sum, given ``t``, the rank-th (one count, O(n log n))."""
    n = s.size
    rows = np.arange(n)
    ub = _row_counts(s, t, strict=False)
    if int(np.maximum(ub - rows, 0).sum()) > rank:
        return t  # t is repeated
    j = np.maximum(ub, rows)  # first j >= i with s_i + s_j > t
    ok = j < n
    return float((s[ok] + s[j[ok]]).min())


def _walsh_order_stats(s: np.ndarray, ranks: list[int]) -> list[float]:
    """Order statistics (1-based ranks) of the pair sums s_i + s_j, i <= j, of sorted s."""
    if s.size <= WALSH_MAX_N:
        return _walsh_all(s, ranks)
    found: dict[int, float] = {}
    for r in sorted(set(ranks)):
        prev = found.get(r - 1)
        found[r] = _walsh_select(s, r) if prev is None else _walsh_next(s, prev, r - 1)
    return [found[r] for r in ranks]


def hodges_lehmann(
    d: ArrayLike, confidence: float = 0.95
) -> tuple[float, float | None, float | None]:
    """Hodges-Lehmann estimate of the centre of d and its distribution-free CI.

    Parameters
    ----------
    d : array_like
        The per-pass log ratios (one-dimensional, at least 2 values, finite).
    confidence : float
        Level of the interval, in (0, 1).

    Returns
    -------
    tuple of (float, float or None, float or None)
        ``(estimate, low, high)``: the median of the ``M = n(n+1)/2`` Walsh averages
        ``(d_i + d_j)/2, i <= j`` (the pseudo-median of d, in the units of d), and the
        k-th smallest and k-th largest Walsh averages; (None, None) when n is too small
        for any k to reach ``confidence`` (n < 6 at 0.95).

    Notes
    -----
    ``W_(k)`` is the k-th smallest Walsh average. Since W+ of ``d - θ`` is the number of
    Walsh averages above θ (Tukey), ``P[W_(k) <= θ <= W_(M+1-k)] = 1 - 2·P0[W+ <= k-1]``
    for continuous symmetric d; k is the largest integer with ``2·P0[W+ <= k-1] <= 1 - c``
    from the exact null law for n <= 50 (so the interval covers at least ``c``), and
    ``k = round(n(n+1)/4 - z_{(1+c)/2}·sqrt(n(n+1)(2n+1)/24))`` above (HWC §3.3,
    large-sample approximation). Up to 400 values all Walsh averages are formed
    (``np.partition``); above, each order statistic is found by counting the averages
    below a threshold, which is the signed-rank statistic as a function of the shift
    (O(n log n) per count, bounded memory), with thresholds drawn from a sample of the
    remaining candidates. Both give the same floating-point values.

    References
    ----------
    .. [1] J. L. Hodges and E. L. Lehmann, "Estimates of location based on rank tests",
       Annals of Mathematical Statistics 34(2):598-611, 1963. doi:10.1214/aoms/1177704172
    .. [2] M. Hollander, D. A. Wolfe and E. Chicken, *Nonparametric Statistical Methods*,
       3rd ed., Wiley, 2014, §3.2 (estimator) and §3.3 (confidence interval).
    .. [3] J. F. Monahan, "Algorithm 616: fast computation of the Hodges-Lehmann location
       estimator", ACM Transactions on Mathematical Software 10(3):265-270, 1984.
       doi:10.1145/1271.319414

    Examples
    --------
    The Hamilton depression scale data of Hollander & Wolfe (second visit minus first,
    9 patients): estimate -0.46 and the interval (-0.786, -0.010), which covers 96.1 %
    (the closest the exact law allows at or above 95 %):

    >>> x = [1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30]
    >>> y = [0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.06, 3.14, 1.29]
    >>> est, low, high = hodges_lehmann(np.subtract(y, x))
    >>> round(est, 3), round(low, 3), round(high, 3)
    (-0.46, -0.786, -0.01)
    >>> hodges_lehmann([0.1, 0.2, 0.3])
    (0.2, None, None)
    """
    _check_confidence(confidence)
    # halves: h_i + h_j is the Walsh average (d_i + d_j)/2 rounded once, and cannot overflow
    s = np.sort(_values(d)) * 0.5
    n = s.size
    big_m = n * (n + 1) // 2
    k = _ci_rank(n, confidence)
    ranks = [(big_m + 1) // 2, big_m // 2 + 1]
    if k >= 1:
        ranks += [k, big_m + 1 - k]
    sums = _walsh_order_stats(s, ranks)
    estimate = 0.5 * sums[0] + 0.5 * sums[1]  # = (a + b)/2 exactly, without overflow
    if k < 1:
        return estimate, None, None
    return estimate, sums[2], sums[3]


@dataclass(frozen=True)
class SignedRankTest(HasPValue, AsDict):
    """Wilcoxon signed-rank test, Hodges-Lehmann estimate and rank TOST on d = ln(b/a).

    Attributes:
        n: values in d.
        statistic: W+, the sum of the ranks of ``|d|`` over the positive d (zeros ranked,
            counted for neither sign).
        z: standardised W+ (tie- and zero-corrected), positive when d tends to be > 0.
        p_value: two-sided p of "d is symmetric about 0".
        exact: p_value from the exact null distribution (else the Edgeworth-corrected
            normal approximation).
        estimate: Hodges-Lehmann estimate, the pseudo-median of d (``exp`` of it is the
            median per-pass ratio b/a for symmetric d).
        ci_low, ci_high: distribution-free CI of the pseudo-median at ``confidence``
            (None when n is too small to reach it).
        confidence: level of that CI.
        tost_p: max of the one-sided signed-rank p-values of d against ``-δ`` (greater)
            and ``+δ`` (less), ``δ = ln(1 + margin)``; ``equivalent`` is ``tost_p < alpha``.
        margin, alpha: the levels used.
    """

    n: int
    statistic: float
    z: float
    p_value: float
    exact: bool
    estimate: float
    ci_low: float | None
    ci_high: float | None
    confidence: float
    tost_p: float
    equivalent: bool
    margin: float
    alpha: float

    def to_dict(self) -> dict[str, object]:
        """Every field, JSON-safe."""
        return AsDict.to_dict(self)


def signed_rank_test(
    d: ArrayLike, *, margin: float = 0.01, alpha: float = 0.01, confidence: float = 0.95
) -> SignedRankTest:
    """Wilcoxon signed-rank test, Hodges-Lehmann estimate with CI and rank TOST on d.

    Parameters
    ----------
    d : array_like
        The per-pass log ratios ``ln(b/a)`` (one-dimensional, at least 2 values, finite).
    margin : float
        Relative equivalence margin, > 0: TOST tests against ``δ = ln(1 + margin)``.
    alpha : float
        Level of each one-sided TOST test, in (0, 0.5); ``equivalent`` is ``tost_p < alpha``.
    confidence : float
        Level of the CI of the pseudo-median, in (0, 1).

    Returns
    -------
    SignedRankTest
        ``p_value`` (two-sided) with ``statistic`` W+, ``z`` and ``exact``; ``estimate``,
        ``ci_low``, ``ci_high`` (log ratios); ``tost_p`` and ``equivalent``.

    Notes
    -----
    The test of :func:`signed_rank_p`, the estimate and CI of :func:`hodges_lehmann`, and
    ``tost_p = max(p_greater(d + δ), p_less(d - δ))``: equivalence when the pseudo-median
    is shown above ``-δ`` and below ``+δ`` (Schuirmann's two one-sided tests with
    signed-rank tests). Zero spread is not special: d all 0 gives p 1, estimate 0 and
    ``tost_p = 2^-n`` (every ``d ± δ`` has one sign); d all equal to ``c != 0`` gives
    ``p = 2/2^n``, the rank test's smallest p at n values.

    References
    ----------
    .. [1] F. Wilcoxon, "Individual comparisons by ranking methods", Biometrics Bulletin
       1(6):80-83, 1945. doi:10.2307/3001968
    .. [2] J. L. Hodges and E. L. Lehmann, "Estimates of location based on rank tests",
       Annals of Mathematical Statistics 34(2):598-611, 1963. doi:10.1214/aoms/1177704172
    .. [3] M. Hollander, D. A. Wolfe and E. Chicken, *Nonparametric Statistical Methods*,
       3rd ed., Wiley, 2014, §3.1-3.3.
    .. [4] D. J. Schuirmann, "A comparison of the two one-sided tests procedure and the
       power approach for assessing the equivalence of average bioavailability", Journal
       of Pharmacokinetics and Biopharmaceutics 15(6):657-680, 1987. doi:10.1007/BF01068419

    Examples
    --------
    >>> d = np.log([1.021, 1.013, 1.030, 1.008, 1.019, 1.025, 1.016, 0.998, 1.022, 1.017])
    >>> t = signed_rank_test(d, margin=0.01, alpha=0.01)
    >>> round(t.pvalue, 5), t.exact, t.statistic
    (0.00391, True, 54.0)
    >>> walsh = np.add.outer(d, d)[np.triu_indices(d.size)] / 2
    >>> bool(abs(t.estimate - np.median(walsh)) < 1e-15), round(math.exp(t.estimate), 4)
    (True, 1.0175)
    >>> t.tost_p > t.alpha, t.equivalent
    (True, False)
    >>> t = signed_rank_test(np.zeros(10))
    >>> t.pvalue, t.estimate, t.ci_low, t.ci_high, t.tost_p, t.equivalent
    (1.0, 0.0, 0.0, 0.0, 0.0009765625, True)
    """
    if not 0 < alpha < 0.5:
        raise ValueError(f"alpha must be in (0, 0.5), got {alpha}")
    if not (math.isfinite(margin) and margin > 0):
        raise ValueError(f"margin must be > 0, got {margin}")
    _check_confidence(confidence)
    x = _values(d)
    w_plus, z, greater, less, exact = _signed_rank(x)
    estimate, low, high = hodges_lehmann(x, confidence)
    delta = math.log1p(margin)
    p_above = _signed_rank(x + delta)[2]  # H0: centre <= -δ, against greater
    p_below = _signed_rank(x - delta)[3]  # H0: centre >= +δ, against less
    tost_p = max(p_above, p_below)
    return SignedRankTest(
        n=int(x.size),
        statistic=w_plus,
        z=z,
        p_value=min(1.0, 2.0 * min(greater, less)),
        exact=exact,
        estimate=estimate,
        ci_low=low,
        ci_high=high,
        confidence=float(confidence),
        tost_p=tost_p,
        equivalent=tost_p < alpha,
        margin=float(margin),
        alpha=float(alpha),
    )
