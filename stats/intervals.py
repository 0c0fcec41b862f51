"""Confidence intervals (docs/methods.md §4).

- :func:`mean_ci`: Student t interval ``m ± t_{1-α/2, n-1} · s/√n`` (HOEFLER §3.1.2). In
  benchrun it is applied to *subsession means* (docs/methods.md §3), never blindly to raw
  autocorrelated readings.
- :func:`median_ci`, :func:`quantile_ci`: distribution-free order-statistic intervals from the
  binomial distribution (exact), as in LEBOUDEC §2.4.
- :func:`bootstrap_ci`: BCa bootstrap via :func:`scipy.stats.bootstrap` ([WANG], §4).
- :func:`proportion_ci`: Wilson score interval with continuity correction exactly as R's
  ``prop.test`` computes it (docs/methods.md §12), with TOUATI's validity warning (§4).
- :func:`proportion_sample_size`, :func:`subsessions_for_width`: how many benchmarks or
  subsessions are needed for a target precision (TOUATI §4, PILOT / docs/methods.md §12).

Every interval is an :class:`Interval`; unusable bounds are ``None`` with a note, never a
made-up number. Units: an interval has the unit of the data it was computed from.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import ModuleType
from typing import Literal

import numpy as np

__all__ = [
    "Interval",
    "mean_ci",
    "median_ci",
    "quantile_ci",
    "bootstrap_ci",
    "proportion_ci",
    "proportion_sample_size",
    "subsessions_for_width",
]


def _scipy_stats() -> ModuleType:
    """``scipy.stats``, imported at its first use: it takes longer to import than the rest of
    a command (0.3-0.5 s), and what ``benchrun show`` computes needs none of it."""
    from scipy import stats

    return stats


# ----------------------------------------------------------------------------- validation
def as_series(values: Iterable[float] | np.ndarray, *, name: str = "values") -> np.ndarray:
    """Return ``values`` as a 1-D float64 array, or raise ValueError (house rule 5).

    Raises when the input is empty, not one-dimensional, not numeric, or holds NaN/inf
    (the message names the first offending index). Shared by the other ``stats`` modules
    of this concept (summary, autocorr, warmup, normality).
    """
    try:
        x = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be numbers: {exc}") from None
    if x.ndim == 0:
        x = x.reshape(1)
    if x.ndim != 1:
        raise ValueError(f"{name} must be a one-dimensional series, got shape {x.shape}")
    if x.size == 0:
        raise ValueError(f"{name} is empty: at least one reading is needed")
    finite = np.isfinite(x)
    if not finite.all():
        i = int(np.argmin(finite))
        raise ValueError(f"{name} contains a non-finite value ({x[i]!r}) at index {i}")
    return x


def check_confidence(confidence: float) -> float:
    """Return ``confidence`` as a float if it lies strictly between 0 and 1, else raise."""
    c = float(confidence)
    if not 0.0 < c < 1.0:
        raise ValueError(f"confidence must be strictly between 0 and 1, got {confidence!r}")
    return c


@functools.lru_cache(maxsize=4096)
def t_quantile(q: float, df: float) -> float:
    """The q-quantile of Student's t with ``df`` degrees of freedom, remembered per (q, df).

    Parameters
    ----------
    q : float
        Probability, in (0, 1).
    df : float
        Degrees of freedom, > 0.

    Returns
    -------
    float
        ``scipy.stats.t.ppf(q, df)`` as a Python float (no unit). Many groups of the same
        size need the same quantile; it is computed once.

    Examples
    --------
    >>> from scipy import stats
    >>> t_quantile(0.975, 9) == float(stats.t.ppf(0.975, 9))
    True
    >>> round(t_quantile(0.975, 9), 6)
    2.262157
    """
    return float(_scipy_stats().t.ppf(q, df))


@functools.lru_cache(maxsize=1024)
def normal_quantile(q: float) -> np.float64:
    """The q-quantile of the standard normal distribution, remembered per q.

    Parameters
    ----------
    q : float
        Probability, in (0, 1).

    Returns
    -------
    numpy.float64
        ``scipy.stats.norm.ppf(q)`` exactly as scipy returns it (a numpy scalar, so that
        arithmetic on it is the same as on scipy's own result): ``scipy.special.ndtri(q)``,
        the function ``norm.ppf`` evaluates, called without importing ``scipy.stats``.

    Examples
    --------
    >>> from scipy import stats
    >>> normal_quantile(0.975) == stats.norm.ppf(0.975)
    True
    >>> all(normal_quantile(q) == stats.norm.ppf(q) for q in (1e-12, 0.005, 0.5, 0.9, 0.995))
    True
    >>> round(float(normal_quantile(0.975)), 6)
    1.959964
    """
    from scipy.special import ndtri  # on first use: reading stored results needs none

    return np.float64(ndtri(q))


def opt_float(v: float | np.floating | None) -> float | None:
    """A JSON-safe float: ``None`` for None/NaN/inf, a Python float otherwise."""
    if v is None:
        return None
    f = float(v)
    return f if math.isfinite(f) else None


# ----------------------------------------------------------------------------- result type
@dataclass(frozen=True)
class Interval:
    """A confidence interval for one parameter.

    Attributes: ``estimate`` (point estimate), ``low``/``high`` (bounds, ``None`` when the
    data cannot support an interval; ``notes`` says why), ``confidence`` (e.g. 0.95),
    ``method`` (short name), ``n`` (observations used), ``notes``.
    """

    estimate: float | None
    low: float | None
    high: float | None
    confidence: float
    method: str
    n: int
    notes: tuple[str, ...] = ()

    @property
    def half_width(self) -> float | None:
        """``(high - low) / 2``, or None without bounds."""
        if self.low is None or self.high is None:
            return None
        return (self.high - self.low) / 2.0

    @property
    def rel_half_width(self) -> float | None:
        """Relative width ``half_width / |estimate|`` (docs/methods.md §4; what ``ci_rel_width``
        bounds). None without bounds or when the estimate is 0."""
        hw = self.half_width
        if hw is None or self.estimate is None or self.estimate == 0:
            return None
        return hw / abs(self.estimate)

    def to_dict(self) -> dict[str, object]:
        """JSON-serialisable dict (floats or None), including the two derived widths."""
        return {
            "estimate": opt_float(self.estimate),
            "low": opt_float(self.low),
            "high": opt_float(self.high),
            "confidence": float(self.confidence),
            "method": self.method,
            "n": int(self.n),
            "half_width": opt_float(self.half_width),
            "rel_half_width": opt_float(self.rel_half_width),
            "notes": list(self.notes),
        }


# ----------------------------------------------------------------------------- mean
def mean_ci(values: Iterable[float] | np.ndarray, confidence: float = 0.95) -> Interval:
    """Student t confidence interval of the mean (docs/methods.md §4).

    Parameters
    ----------
    values : array_like
        Independent, roughly normal observations (in benchrun: *subsession means*,
        docs/methods.md §3, not raw autocorrelated readings), finite.
    confidence : float
        Coverage probability, in (0, 1).

    Returns
    -------
    Interval
        ``estimate`` (the mean), ``low``/``high`` in the unit of ``values``; with one value
        the bounds are None (no variance estimate); all values equal give a zero-width
        interval and a note.

    Notes
    -----
    ``m ± t_{1-α/2, n-1} · s / √n`` with ``s`` the sample standard deviation (ddof=1) and
    α = 1 - confidence.

    References
    ----------
    .. [1] T. Hoefler and R. Belli, "Scientific benchmarking of parallel computing
       systems: twelve ways to tell the masses when reporting performance results",
       SC '15, §3.1.2. doi:10.1145/2807591.2807644

    Examples
    --------
    >>> from scipy import stats as sps
    >>> ci = mean_ci([1, 2, 3, 4])
    >>> round(ci.low, 5), round(ci.high, 5)
    (0.44574, 4.55426)
    >>> [round(float(x), 5) for x in sps.t.interval(0.95, 3, loc=2.5, scale=sps.sem([1, 2, 3, 4]))]
    [0.44574, 4.55426]
    """
    c = check_confidence(confidence)
    x = as_series(values)
    n = x.size
    m = float(np.mean(x))
    if n < 2:
        return Interval(m, None, None, c, "student-t", n, ("n = 1: no variance, no CI",))
    s = float(np.std(x, ddof=1))
    if s == 0.0:
        return Interval(m, m, m, c, "student-t", n, ("all values equal: CI has zero width",))
    half = t_quantile(0.5 + c / 2.0, n - 1) * s / math.sqrt(n)
    return Interval(m, m - half, m + half, c, "student-t", n)


def subsessions_for_width(
    std: float,
    n_subsessions: int,
    mean: float,
    rel_half_width: float,
    confidence: float = 0.95,
) -> int:
    """Number of subsession means needed for a CI of relative half-width ``rel_half_width``.

    Parameters
    ----------
    std : float
        Current standard deviation (ddof=1) of the subsession means, >= 0, in the metric's
        unit.
    n_subsessions : int
        Current number of subsession means h, at least 2.
    mean : float
        Current mean, non-zero, in the metric's unit.
    rel_half_width : float
        Target half-width relative to ``|mean|``, > 0 (0.05 = 5 %).
    confidence : float
        Coverage probability, in (0, 1).

    Returns
    -------
    int
        The number of subsession means needed, at least 2.

    Notes
    -----
    Pilot's planning formula (PILOT; docs/methods.md §3, §12): with the current subsession
    standard deviation ``s`` (ddof=1) over ``h`` subsessions and the current mean ``m``,
    ``h_needed = ceil((t_{1-α/2, h-1} · s / (rel_half_width · |m|))^2)``, using the t
    quantile at the *current* degrees of freedom h-1, as Pilot does.

    References
    ----------
    .. [1] Y. Li, Y. Gupta, E. L. Miller and D. D. E. Long, "Pilot: a framework that
       understands how to do performance benchmarks the right way", 24th IEEE MASCOTS, 2016.
       doi:10.1109/MASCOTS.2016.31

    Examples
    --------
    docs/methods.md §12: 48 Ferrari readings, q = 4, full width 10 % of the mean
    (``rel_half_width=0.05``) -> 34:

    >>> x = np.array([1.21, 1.67, 1.71, 1.53, 2.03, 2.15, 1.88, 2.02, 1.75, 1.84, 1.61,
    ...               1.35, 1.43, 1.64, 1.52, 1.44, 1.17, 1.42, 1.64, 1.86, 1.68, 1.91,
    ...               1.73, 2.18, 2.27, 1.93, 2.19, 2.04, 1.92, 1.97, 1.65, 1.71, 1.89,
    ...               1.70, 1.62, 1.48, 1.55, 1.39, 1.45, 1.67, 1.62, 1.77, 1.88, 1.82,
    ...               1.93, 2.09, 2.24, 2.16])
    >>> means = x.reshape(12, 4).mean(axis=1)
    >>> s = float(means.std(ddof=1))
    >>> subsessions_for_width(s, 12, float(x.mean()), 0.05)
    34
    >>> from scipy import stats
    >>> math.ceil((stats.t.ppf(0.975, 11) * s / (0.05 * x.mean())) ** 2)
    34
    """
    c = check_confidence(confidence)
    if n_subsessions < 2:
        raise ValueError("n_subsessions must be >= 2 to have a variance estimate")
    if not rel_half_width > 0:
        raise ValueError(f"rel_half_width must be > 0, got {rel_half_width!r}")
    if mean == 0:
        raise ValueError("a relative width needs a non-zero mean")
    if not std >= 0 or not math.isfinite(std):
        raise ValueError(f"std must be a finite number >= 0, got {std!r}")
    t = float(_scipy_stats().t.ppf(0.5 + c / 2.0, n_subsessions - 1))
    need = (t * std / (rel_half_width * abs(mean))) ** 2
    # guard against 33.0000000001 from rounding
    return max(2, int(math.ceil(need - 1e-9)))


# ----------------------------------------------------------------------------- quantiles
def _order_stat_ranks(n: float, p: float, alpha: float) -> tuple[int, int] | None:
    """1-based ranks (j, k) of the equal-tailed binomial(n, p) order-statistic interval.

    j is the largest rank with P(B <= j-1) <= α/2 and k the smallest with P(B >= k) <= α/2,
    B ~ Binomial(n, p); then P(x_(j) <= ξ_p < x_(k)) = P(j <= B <= k-1) >= 1 - α.
    ``n`` may be a (non-integer) effective sample size; callers rescale. None if no such
    ranks exist within 1..n.
    """
    nn = int(math.floor(n))
    if nn < 1:
        return None
    return _binomial_ranks(nn, float(p), float(alpha))


@functools.lru_cache(maxsize=4096)
def _binomial_ranks(nn: int, p: float, alpha: float) -> tuple[int, int] | None:
    """:func:`_order_stat_ranks` for an integer n, remembered: many groups share n."""
    b = _scipy_stats().binom(nn, p)
    # largest j with cdf(j-1) <= alpha/2  ->  j - 1 = largest m with cdf(m) <= alpha/2
    m = int(b.ppf(alpha / 2.0))  # smallest m with cdf(m) >= alpha/2
    while m >= 0 and b.cdf(m) > alpha / 2.0:
        m -= 1
    j = m + 1
    # smallest k with sf(k-1) = P(B >= k) <= alpha/2
    k = int(b.isf(alpha / 2.0))  # smallest value v with sf(v) <= alpha/2
    while k >= 1 and b.sf(k - 1) <= alpha / 2.0:
        k -= 1
    k = k + 1
    if j < 1 or k > nn:
        return None
    return j, k


def quantile_ci(
    values: Iterable[float] | np.ndarray,
    p: float,
    confidence: float = 0.95,
    *,
    ess: float | None = None,
    sorted_values: bool = False,
) -> Interval:
    """Distribution-free CI of the p-quantile from order statistics (docs/methods.md §4).

    Parameters
    ----------
    values : array_like
        Observations, finite, at least one.
    p : float
        The quantile's probability, in (0, 1) (0.5: the median).
    confidence : float
        Coverage probability, in (0, 1).
    ess : float, optional
        Effective sample size (< n) of autocorrelated readings, e.g. n divided by the
        integrated autocorrelation time of the indicator series ``x_t <= quantile``.
    sorted_values : bool
        Whether ``values`` are already sorted ascending (skips the sort).

    Returns
    -------
    Interval
        ``estimate`` (the type-7 sample quantile, numpy/R default) and ``low``/``high``
        (order statistics) in the unit of ``values``; too few observations for the
        requested level -> bounds None with a note.

    Notes
    -----
    With B ~ Binomial(n, p), the interval is ``[x_(j), x_(k)]`` (1-based order statistics)
    where j is the largest rank with ``P(B <= j-1) <= α/2`` and k the smallest with
    ``P(B >= k) <= α/2``; its exact coverage for continuous data is
    ``P(j <= B <= k-1) >= 1 - α`` (LEBOUDEC §2.4; same ranks as
    ``scipy.stats.quantile_test(...).confidence_interval``).

    Autocorrelated readings make the order statistics less informative. If ``ess`` is
    given, the ranks are computed for Binomial(round(ess), p) and scaled by ``n / ess``: an
    approximation, stated in the notes.

    References
    ----------
    .. [1] J.-Y. Le Boudec, *Performance Evaluation of Computer and Communication Systems*,
       EPFL Press, 2010, §2.4.

    Examples
    --------
    The 90th percentile of 1, 2, ..., 40, and scipy's order-statistic interval:

    >>> from scipy.stats import quantile_test
    >>> x = np.arange(1.0, 41.0)
    >>> ci = quantile_ci(x, 0.9)
    >>> ci.estimate, ci.low, ci.high
    (36.1, 32.0, 40.0)
    >>> ref = quantile_test(x, p=0.9).confidence_interval(0.95)
    >>> float(ref.low), float(ref.high)
    (32.0, 40.0)
    """
    c = check_confidence(confidence)
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be strictly between 0 and 1, got {p!r}")
    x = as_series(values)
    xs = x if sorted_values else np.sort(x)
    n = xs.size
    est = float(np.quantile(xs, p))
    alpha = 1.0 - c
    notes: list[str] = []
    method = "order-statistic (exact binomial)"
    m = float(n)
    if ess is not None and ess < n:
        m = max(float(ess), 1.0)
        method = "order-statistic (binomial on effective n)"
        notes.append(
            f"readings are autocorrelated: ranks from an effective sample size of {m:.1f} "
            f"of {n} (approximate)"
        )
    ranks = _order_stat_ranks(m, p, alpha)
    if ranks is None:
        notes.append(f"n too small for a {_pct(p)} CI at {c * 100:g} %")
        return Interval(est, None, None, c, method, n, tuple(notes))
    j, k = ranks
    if m != n:
        scale = n / math.floor(m)
        j = max(1, int(math.floor(j * scale)))
        k = min(n, int(math.ceil(k * scale)))
    return Interval(est, float(xs[j - 1]), float(xs[k - 1]), c, method, n, tuple(notes))


def _pct(p: float) -> str:
    return "median" if p == 0.5 else f"p{p * 100:g} quantile"


def median_ci(
    values: Iterable[float] | np.ndarray, confidence: float = 0.95, *, ess: float | None = None
) -> Interval:
    """Exact distribution-free CI of the median: :func:`quantile_ci` with p = 0.5.

    Parameters
    ----------
    values : array_like
        Observations, finite, at least one.
    confidence : float
        Coverage probability, in (0, 1).
    ess : float, optional
        Effective sample size of autocorrelated readings (see :func:`quantile_ci`).

    Returns
    -------
    Interval
        ``estimate`` (the sample median) and ``low``/``high`` (order statistics) in the
        unit of ``values``. Needs n >= 6 at 95 % (HOEFLER: "n > 5"); below that
        ``low``/``high`` are None with the note "n too small for a median CI at 95 %".

    Notes
    -----
    Symmetric ranks j and n + 1 - j (docs/methods.md §4), from Binomial(n, 1/2).

    References
    ----------
    .. [1] J.-Y. Le Boudec, *Performance Evaluation of Computer and Communication Systems*,
       EPFL Press, 2010, §2.4.
    .. [2] T. Hoefler and R. Belli, "Scientific benchmarking of parallel computing
       systems: twelve ways to tell the masses when reporting performance results",
       SC '15. doi:10.1145/2807591.2807644

    Examples
    --------
    Twelve readings: the interval is [x_(3), x_(10)], with exact coverage
    P(3 <= B <= 9) for B ~ Binomial(12, 1/2):

    >>> from scipy import stats as sps
    >>> x = [12.1, 9.8, 11.4, 10.2, 13.5, 10.9, 9.5, 11.8, 10.4, 12.7, 10.1, 11.0]
    >>> ci = median_ci(x)
    >>> ci.estimate, ci.low, ci.high
    (10.95, 10.1, 12.1)
    >>> sorted(x)[2], sorted(x)[9]
    (10.1, 12.1)
    >>> round(float(sps.binom.cdf(9, 12, 0.5) - sps.binom.cdf(2, 12, 0.5)), 4)
    0.9614
    >>> ref = sps.quantile_test(x, q=10.95, p=0.5).confidence_interval(0.95)
    >>> float(ref.low), float(ref.high)
    (10.1, 12.1)
    >>> median_ci([1, 2, 3, 4, 5]).notes
    ('n too small for a median CI at 95 %',)
    """
    return quantile_ci(values, 0.5, confidence, ess=ess)


# ----------------------------------------------------------------------------- bootstrap
def bootstrap_ci(
    data: Iterable[float] | np.ndarray | tuple[np.ndarray, ...],
    statistic: Callable[..., float],
    confidence: float = 0.95,
    n_resamples: int = 10_000,
    method: Literal["BCa", "percentile", "basic"] = "BCa",
    seed: int | None = 0,
) -> Interval:
    """Bootstrap CI of ``statistic`` via :func:`scipy.stats.bootstrap` (docs/methods.md §4, WANG).

    Parameters
    ----------
    data : array_like or tuple of array_like
        One sample (1-D) or a tuple of samples, finite.
    statistic : callable
        Takes one argument per sample and returns a number.
    confidence : float
        Coverage probability, in (0, 1).
    n_resamples : int
        Number of bootstrap resamples B, at least 100.
    method : {"BCa", "percentile", "basic"}
        Interval method of :func:`scipy.stats.bootstrap`.
    seed : int or None
        Seed of ``numpy.random.default_rng``; makes the interval reproducible.

    Returns
    -------
    Interval
        ``estimate`` (the statistic on the data) and ``low``/``high`` in its unit;
        non-finite bounds (degenerate data) become None with a note; scipy's warnings are
        copied into ``notes``.

    Notes
    -----
    With a tuple of samples, ``statistic`` takes one argument per sample and they are
    resampled independently. BCa with B = 10 000 resamples by default; ``seed`` makes it
    reproducible. For statistics without a closed form (ratio of geometric means, speedup
    of medians).

    References
    ----------
    .. [1] B. Efron, "Better bootstrap confidence intervals", Journal of the American
       Statistical Association 82(397):171-185, 1987. doi:10.1080/01621459.1987.10478410
    .. [2] B. Efron and R. J. Tibshirani, *An Introduction to the Bootstrap*, Chapman &
       Hall, 1993.

    Examples
    --------
    BCa interval of a median, and scipy's with the same seed:

    >>> x = [12.1, 9.8, 11.4, 10.2, 13.5, 10.9, 9.5, 11.8, 10.4, 12.7]
    >>> ci = bootstrap_ci(x, np.median)
    >>> ci.estimate, ci.low, ci.high
    (11.15, 10.2, 12.25)
    >>> from scipy import stats
    >>> ref = stats.bootstrap((np.asarray(x),), np.median, n_resamples=10_000, method="BCa",
    ...                       vectorized=False, random_state=np.random.default_rng(0))
    >>> float(ref.confidence_interval.low), float(ref.confidence_interval.high)
    (10.2, 12.25)
    """
    c = check_confidence(confidence)
    if n_resamples < 100:
        raise ValueError(f"n_resamples must be >= 100, got {n_resamples}")
    samples = data if isinstance(data, tuple) else (data,)
    arrays = tuple(as_series(s, name="data") for s in samples)
    n = int(sum(a.size for a in arrays))
    est = float(statistic(*arrays))

    notes: list[str] = []
    rng = np.random.default_rng(seed)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = _scipy_stats().bootstrap(
            arrays,
            statistic,
            confidence_level=c,
            n_resamples=n_resamples,
            method=method,
            random_state=rng,
            vectorized=False,
        )
    for w in caught:
        notes.append(f"scipy: {str(w.message).splitlines()[0]}")
    lo = opt_float(res.confidence_interval.low)
    hi = opt_float(res.confidence_interval.high)
    if lo is None or hi is None:
        notes.append("bootstrap distribution is degenerate: no interval")
        lo = hi = None
    return Interval(est, lo, hi, c, f"bootstrap {method} (B={n_resamples})", n, tuple(notes))


# ----------------------------------------------------------------------------- proportions
def proportion_ci(successes: int, trials: int, confidence: float = 0.95) -> Interval:
    """Wilson score interval with continuity correction, as R's ``prop.test`` (docs/methods.md §4, §12).

    Parameters
    ----------
    successes : int
        Number of successes x (e.g. benchmarks with a significant speedup), 0 <= x <= n.
    trials : int
        Number of trials n (benchmarks), at least 1.
    confidence : float
        Coverage probability, in (0, 1).

    Returns
    -------
    Interval
        ``estimate`` p̂ = x/n and ``low``/``high`` in [0, 1]; a note with TOUATI's warning
        when ``a·(1 - a/b) <= 5`` (normal approximation not valid).

    Notes
    -----
    z = Φ^-1((1+conf)/2), p̂ = x/n, YATES = min(0.5, |x - n/2|) (R's default null p0 = 0.5),
    z22n = z²/(2n); upper = ``(p_c + z22n + z·sqrt(p_c(1-p_c)/n + z22n/(2n))) / (1 + 2·z22n)``
    with p_c = p̂ + YATES/n (1 when p_c >= 1); lower likewise with p̂ - YATES/n and -z
    (0 when p_c <= 0). ``proportion_ci(17, 30, 0.90)`` -> [0.4027157, 0.7184049], R's
    ``prop.test(17, 30, conf.level=0.90)``.

    References
    ----------
    .. [1] E. B. Wilson, "Probable inference, the law of succession, and statistical
       inference", Journal of the American Statistical Association 22(158):209-212, 1927.
       doi:10.1080/01621459.1927.10502953
    .. [2] R. G. Newcombe, "Two-sided confidence intervals for the single proportion:
       comparison of seven methods", Statistics in Medicine 17(8):857-872, 1998.
       doi:10.1002/(SICI)1097-0258(19980430)17:8<857::AID-SIM777>3.0.CO;2-E
    .. [3] S.-A.-A. Touati, J. Worms and S. Briais, "The Speedup-Test: a statistical
       methodology for programme speedup analysis and computation", Concurrency and
       Computation: Practice and Experience 25(10):1410-1426, 2013.
       doi:10.1002/cpe.2939

    Examples
    --------
    >>> ci = proportion_ci(17, 30, 0.90)
    >>> round(ci.low, 7), round(ci.high, 7)
    (0.4027157, 0.7184049)

    scipy's ``wilsoncc`` applies the full 0.5 correction, which R also does here
    (|x - n/2| = 2 >= 0.5), so the two agree:

    >>> from scipy.stats import binomtest
    >>> ref = binomtest(17, 30).proportion_ci(0.90, method="wilsoncc")
    >>> round(float(ref.low), 7), round(float(ref.high), 7)
    (0.4027157, 0.7184049)
    >>> len(proportion_ci(3, 10).notes)  # 3·(1 - 3/10) = 2.1 <= 5
    1
    """
    c = check_confidence(confidence)
    x, n = int(successes), int(trials)
    if x != successes or n != trials:
        raise ValueError("successes and trials must be whole numbers")
    if n < 1:
        raise ValueError(f"trials must be >= 1, got {trials}")
    if not 0 <= x <= n:
        raise ValueError(f"successes must be between 0 and trials ({n}), got {successes}")
    z = float(_scipy_stats().norm.ppf(0.5 + c / 2.0))
    phat = x / n
    yates = min(0.5, abs(x - n * 0.5))
    z22n = z * z / (2.0 * n)
    pc = phat + yates / n
    if pc >= 1:
        upper = 1.0
    else:
        upper = (pc + z22n + z * math.sqrt(pc * (1 - pc) / n + z22n / (2 * n))) / (1 + 2 * z22n)
    pc = phat - yates / n
    if pc <= 0:
        lower = 0.0
    else:
        lower = (pc + z22n - z * math.sqrt(pc * (1 - pc) / n + z22n / (2 * n))) / (1 + 2 * z22n)
    notes: list[str] = []
    if x * (1 - x / n) <= 5:
        notes.append(
            f"a(1 - a/b) = {x * (1 - x / n):.2f} <= 5: the normal approximation behind this "
            "interval is not valid (TOUATI); more benchmarks are needed"
        )
    return Interval(
        phat, max(0.0, lower), min(1.0, upper), c, "wilson-cc (R prop.test)", n, tuple(notes)
    )


def proportion_sample_size(p: float, r: float, confidence: float = 0.95) -> int:
    """Benchmarks needed to estimate a proportion near ``p`` within ±``r`` (TOUATI §4).

    Parameters
    ----------
    p : float
        Expected proportion, in [0, 1].
    r : float
        Target precision (half-width of the interval), in (0, 1).
    confidence : float
        Coverage probability, in (0, 1).

    Returns
    -------
    int
        The number of benchmarks b, at least 1.

    Notes
    -----
    ``b >= z_{1-α/2}^2 · p(1-p) / r^2``, rounded up; z from the normal distribution.

    References
    ----------
    .. [1] S.-A.-A. Touati, J. Worms and S. Briais, "The Speedup-Test: a statistical
       methodology for programme speedup analysis and computation", Concurrency and
       Computation: Practice and Experience 25(10):1410-1426, 2013.
       doi:10.1002/cpe.2939

    Examples
    --------
    >>> from scipy.stats import norm
    >>> proportion_sample_size(0.5, 0.1)
    97
    >>> math.ceil(norm.ppf(0.975) ** 2 * 0.25 / 0.1**2)
    97
    """
    c = check_confidence(confidence)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p must be in [0, 1], got {p!r}")
    if not 0.0 < r < 1.0:
        raise ValueError(f"r (precision) must be in (0, 1), got {r!r}")
    z = float(_scipy_stats().norm.ppf(0.5 + c / 2.0))
    return max(1, int(math.ceil(z * z * p * (1 - p) / (r * r) - 1e-12)))
