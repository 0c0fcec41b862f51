"""Per-group summaries (docs/methods.md §1-5): description, outliers, aggregation, full summary.

- :func:`describe`: n, mean, std, CoV, min, quartiles, median, max, p90, p99, the
  deterministic flag and the Tukey outlier count (§1, HOEFLER §3.1).
- :func:`tukey_outliers`: Tukey's fences, counted, never removed silently (§1).
- :func:`aggregate`: the right mean for costs, rates and ratios (§1, HOEFLER §3.1).
- :func:`summarize`: warm-up (§2), subsession means (§3), CIs (§4), normality (§5) in one
  JSON-ready :class:`Summary`.

Units: every location/spread value has the unit of the readings; CoV, p-values and
correlations have none; counts are readings.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from benchrun.stats.autocorr import (
    MAX_SUBSESSIONS,
    MIN_SUBSESSIONS,
    SubsessionChoice,
    autocorrelation,
    integrated_autocorrelation_time,
    subsession_means,
    subsession_size,
)
from benchrun.stats.intervals import as_series, check_confidence, mean_ci, opt_float, quantile_ci
from benchrun.stats.normality import normality
from benchrun.stats.results import HasCI
from benchrun.stats.uncertified import MIN_READINGS, UncertifiedInterval, uncertified_mean_ci
from benchrun.stats.warmup import mser5, mser5_at_limit

__all__ = [
    "Description",
    "OutlierResult",
    "Aggregate",
    "Summary",
    "describe",
    "tukey_outliers",
    "aggregate",
    "summarize",
]

#: CoV below this (0.1 %) -> "deterministic" (docs/methods.md §1)
DETERMINISTIC_COV = 0.001


def _mean(x: np.ndarray) -> float:
    """Mean with one correction pass (accurate for NIST NumAcc-style data)."""
    m = float(np.mean(x))
    return m + float(np.mean(x - m))


def _min_n(p: float) -> int:
    """Smallest n for which the sample p-quantile is reported: n·min(p, 1-p) >= 1, i.e. at
    least one reading lies beyond it on average (median 2, quartiles 4, p90 10, p99 100)."""
    return int(math.ceil(1.0 / min(p, 1.0 - p) - 1e-9))


# ----------------------------------------------------------------------------- outliers
@dataclass(frozen=True)
class OutlierResult:
    """Tukey's fences ``[Q1 - k·IQR, Q3 + k·IQR]`` and the counts outside them (§1)."""

    k: float
    q1: float
    q3: float
    low_fence: float
    high_fence: float
    n_low: int
    n_high: int

    @property
    def count(self) -> int:
        """Readings outside the fences."""
        return self.n_low + self.n_high

    def to_dict(self) -> dict[str, object]:
        """JSON-serialisable dict."""
        return {
            "k": float(self.k),
            "q1": float(self.q1),
            "q3": float(self.q3),
            "low_fence": float(self.low_fence),
            "high_fence": float(self.high_fence),
            "n_low": int(self.n_low),
            "n_high": int(self.n_high),
            "count": int(self.count),
        }


def tukey_outliers(values: Iterable[float] | np.ndarray, k: float = 1.5) -> OutlierResult:
    """Count readings outside Tukey's fences Q1 - k·IQR and Q3 + k·IQR (docs/methods.md §1).

    Parameters
    ----------
    values : array_like
        Readings, finite, at least 4 (ValueError otherwise).
    k : float
        Fence multiplier, > 0 (1.5: Tukey's inner fences).

    Returns
    -------
    OutlierResult
        ``q1``, ``q3``, ``low_fence``, ``high_fence`` in the unit of ``values``, and the
        counts ``n_low``, ``n_high`` and ``count``.

    Notes
    -----
    Quartiles are type-7 sample quantiles (numpy's and R's default). Nothing is removed
    here; removal is only done on explicit request (``summarize(remove_outliers=True)``)
    and then reported (HOEFLER "On removing outliers").

    References
    ----------
    .. [1] J. W. Tukey, *Exploratory Data Analysis*, Addison-Wesley, 1977.
    .. [2] R. J. Hyndman and Y. Fan, "Sample quantiles in statistical packages", The
       American Statistician 50(4):361-365, 1996.
    .. [3] T. Hoefler and R. Belli, "Scientific benchmarking of parallel computing
       systems: twelve ways to tell the masses when reporting performance results",
       SC '15. doi:10.1145/2807591.2807644

    Examples
    --------
    >>> x = [10.2, 10.4, 9.9, 10.1, 10.3, 12.9, 10.0, 10.2]
    >>> r = tukey_outliers(x)
    >>> round(r.low_fence, 4), round(r.high_fence, 4), r.n_low, r.n_high
    (9.7, 10.7, 0, 1)

    The same fences from numpy's quartiles:

    >>> q1, q3 = np.percentile(x, [25, 75])
    >>> round(float(q1 - 1.5 * (q3 - q1)), 4), round(float(q3 + 1.5 * (q3 - q1)), 4)
    (9.7, 10.7)
    """
    if not k > 0:
        raise ValueError(f"k must be > 0, got {k!r}")
    x = as_series(values)
    if x.size < 4:
        raise ValueError(f"Tukey's fences need at least 4 readings, got {x.size}")
    q1, q3 = (float(v) for v in np.quantile(x, [0.25, 0.75]))
    iqr = q3 - q1
    lo, hi = q1 - k * iqr, q3 + k * iqr
    return OutlierResult(k, q1, q3, lo, hi, int(np.sum(x < lo)), int(np.sum(x > hi)))


# ----------------------------------------------------------------------------- describe
@dataclass(frozen=True)
class Description:
    """Descriptive statistics of one series (docs/methods.md §1). None = not meaningful at this n."""

    n: int
    mean: float
    std: float | None
    cov: float | None
    min: float | None
    q1: float | None
    median: float | None
    q3: float | None
    max: float | None
    p90: float | None
    p99: float | None
    deterministic: bool | None
    outliers: int | None
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, object]:
        """JSON-serialisable dict."""
        out: dict[str, object] = {}
        for key in self.__dataclass_fields__:
            v = getattr(self, key)
            if key == "notes":
                out[key] = list(v)
            elif isinstance(v, bool) or v is None or key in ("n", "outliers"):
                out[key] = v
            else:
                out[key] = opt_float(v)
        return out


def describe(
    values: Iterable[float] | np.ndarray,
    *,
    deterministic_threshold: float = DETERMINISTIC_COV,
    outlier_k: float = 1.5,
) -> Description:
    """n, mean, std (ddof=1), CoV = std/|mean|, min, Q1, median, Q3, max, p90, p99 (§1).

    Parameters
    ----------
    values : array_like
        Readings, finite, at least one.
    deterministic_threshold : float
        CoV below which the series counts as deterministic, >= 0 (default 0.1 %).
    outlier_k : float
        Multiplier of Tukey's fences for the outlier count.

    Returns
    -------
    Description
        The statistics in the unit of ``values`` (CoV without unit), ``deterministic``,
        ``outliers`` and ``notes``; None where not meaningful at this n.

    Notes
    -----
    Quantiles are type-7 (linear interpolation, numpy/R default). A p-quantile is reported
    only when ``n · min(p, 1-p) >= 1`` (median n >= 2, quartiles n >= 4, p90 n >= 10,
    p99 n >= 100), otherwise None with a note. ``deterministic`` is True when std = 0 or
    CoV < ``deterministic_threshold`` (default 0.1 %). ``outliers`` is the Tukey count
    (k = 1.5) when quartiles exist. One reading: only n and mean.

    References
    ----------
    .. [1] T. Hoefler and R. Belli, "Scientific benchmarking of parallel computing
       systems: twelve ways to tell the masses when reporting performance results",
       SC '15. doi:10.1145/2807591.2807644
    .. [2] R. J. Hyndman and Y. Fan, "Sample quantiles in statistical packages", The
       American Statistician 50(4):361-365, 1996.

    Examples
    --------
    >>> from scipy import stats as sps
    >>> x = [10.2, 10.4, 9.9, 10.1, 10.3, 12.9, 10.0, 10.2]
    >>> d = describe(x)
    >>> d.n, d.mean, round(d.std, 4), round(d.cov, 4), d.median, d.p90, d.outliers
    (8, 10.5, 0.9827, 0.0936, 10.2, None, 1)

    The same with numpy and scipy:

    >>> round(float(np.std(x, ddof=1)), 4), round(float(sps.variation(x, ddof=1)), 4)
    (0.9827, 0.0936)
    >>> float(np.median(x))
    10.2
    """
    if not deterministic_threshold >= 0:
        raise ValueError("deterministic_threshold must be >= 0")
    x = as_series(values)
    n = x.size
    mean = _mean(x)
    if n == 1:
        return Description(
            n=1,
            mean=mean,
            std=None,
            cov=None,
            min=None,
            q1=None,
            median=None,
            q3=None,
            max=None,
            p90=None,
            p99=None,
            deterministic=None,
            outliers=None,
            notes=("one reading: no spread, quantiles or intervals",),
        )
    notes: list[str] = []
    d = x - mean
    std = math.sqrt(float(np.dot(d, d)) / (n - 1))
    cov: float | None = std / abs(mean) if mean != 0 else None
    if cov is None and std > 0:
        notes.append("mean is 0: coefficient of variation undefined")
    deterministic = std == 0.0 or (cov is not None and cov < deterministic_threshold)
    xs = np.sort(x)
    probs = {"q1": 0.25, "median": 0.5, "q3": 0.75, "p90": 0.9, "p99": 0.99}
    qv = np.quantile(xs, list(probs.values()))
    got: dict[str, float | None] = {}
    for (name, p), v in zip(probs.items(), qv, strict=True):
        if n >= _min_n(p):
            got[name] = float(v)
        else:
            got[name] = None
            notes.append(f"n = {n} too small for {name} (needs {_min_n(p)})")
    outliers = None
    if got["q1"] is not None and got["q3"] is not None:
        iqr = got["q3"] - got["q1"]
        lo, hi = got["q1"] - outlier_k * iqr, got["q3"] + outlier_k * iqr
        outliers = int(np.searchsorted(xs, lo, "left") + (n - np.searchsorted(xs, hi, "right")))
    return Description(
        n=n,
        mean=mean,
        std=std,
        cov=cov,
        min=float(xs[0]),
        q1=got["q1"],
        median=got["median"],
        q3=got["q3"],
        max=float(xs[-1]),
        p90=got["p90"],
        p99=got["p99"],
        deterministic=bool(deterministic),
        outliers=outliers,
        notes=tuple(notes),
    )


# ----------------------------------------------------------------------------- aggregate
@dataclass(frozen=True)
class Aggregate:
    """One number standing for many readings, and how it was obtained (§1)."""

    value: float
    kind: str
    method: str
    n: int
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, object]:
        """JSON-serialisable dict."""
        return {
            "value": opt_float(self.value),
            "kind": self.kind,
            "method": self.method,
            "n": int(self.n),
            "notes": list(self.notes),
        }


def aggregate(
    values: Iterable[float] | np.ndarray,
    kind: Literal["cost", "rate", "ratio"] = "cost",
    work: Iterable[float] | np.ndarray | None = None,
) -> Aggregate:
    """Summarise readings with the mean that fits their kind (docs/methods.md §1, HOEFLER §3.1).

    Parameters
    ----------
    values : array_like
        Readings, finite; > 0 for rates and ratios.
    kind : {"cost", "rate", "ratio"}
        What the readings are (see Notes).
    work : array_like, optional
        Work amount w_i of each reading, > 0; only for ``kind="rate"``.

    Returns
    -------
    Aggregate
        ``value`` in the unit of ``values``, the ``method`` used, ``n`` and ``notes``.

    Notes
    -----
    - ``cost`` (seconds, joules, bytes): arithmetic mean.
    - ``rate`` (ops/s, MB/s): with ``work`` w_i per reading, total work / total time
      ``Σ w_i / Σ (w_i / r_i)``; without it the harmonic mean ``n / Σ (1/r_i)`` (the same
      when every reading did equal work). Rates must be > 0.
    - ``ratio`` (speedups, normalised values): ratios should not be averaged; the geometric
      mean ``exp(mean(log r_i))`` is returned with a note saying so. Must be > 0.

    References
    ----------
    .. [1] T. Hoefler and R. Belli, "Scientific benchmarking of parallel computing
       systems: twelve ways to tell the masses when reporting performance results",
       SC '15. doi:10.1145/2807591.2807644

    Examples
    --------
    >>> from scipy.stats import gmean, hmean
    >>> rates = [100.0, 200.0, 400.0]
    >>> round(aggregate(rates, "rate").value, 4), round(float(hmean(rates)), 4)
    (171.4286, 171.4286)

    With work amounts, total work over total time (7 units in 0.03 s):

    >>> round(aggregate(rates, "rate", work=[1.0, 2.0, 4.0]).value, 4), round(7 / 0.03, 4)
    (233.3333, 233.3333)
    >>> r = aggregate([1.1, 0.9, 1.5], "ratio")
    >>> r.method, round(r.value, 4), round(float(gmean([1.1, 0.9, 1.5])), 4)
    ('geometric mean', 1.1409, 1.1409)
    """
    x = as_series(values)
    if kind == "cost":
        if work is not None:
            raise ValueError("work applies only to kind='rate'")
        return Aggregate(_mean(x), kind, "arithmetic mean", x.size)
    if kind not in ("rate", "ratio"):
        raise ValueError(f"kind must be 'cost', 'rate' or 'ratio', got {kind!r}")
    if np.any(x <= 0):
        raise ValueError(f"{kind}s must be > 0 to aggregate")
    if kind == "ratio":
        if work is not None:
            raise ValueError("work applies only to kind='rate'")
        note = (
            "ratios should not be averaged (HOEFLER §3.1); geometric mean reported because "
            "nothing else is available"
        )
        return Aggregate(float(np.exp(np.mean(np.log(x)))), kind, "geometric mean", x.size, (note,))
    if work is None:
        return Aggregate(float(x.size / np.sum(1.0 / x)), kind, "harmonic mean", x.size)
    w = as_series(work, name="work")
    if w.size != x.size:
        raise ValueError(f"work has {w.size} entries for {x.size} readings")
    if np.any(w <= 0):
        raise ValueError("work amounts must be > 0")
    return Aggregate(float(np.sum(w) / np.sum(w / x)), kind, "total work / total time", x.size)


# ----------------------------------------------------------------------------- summarize
_KEYS = (
    "n",
    "warmup_readings",
    "subsession_size",
    "n_subsessions",
    "mean",
    "ci_low",
    "ci_high",
    "median",
    "median_ci_low",
    "median_ci_high",
    "std",
    "cov",
    "min",
    "q1",
    "q3",
    "max",
    "p90",
    "p99",
    "autocorrelation_lag1",
    "normality_p",
    "outliers",
    "deterministic",
    "notes",
    "subsession_variance",
    "confidence",
    "ess",
    "enough_data",
    "certified",
    "interval_low",
    "interval_high",
    "tau_bound",
    "width_factor",
    "interval_note",
)


@dataclass(frozen=True)
class Summary(HasCI):
    """Full summary of one workload's readings (docs/methods.md §1-5).

    ``n`` counts analysed readings (after warm-up and any requested outlier removal);
    ``mean``/``std``/quantiles are over them. ``ci_low``/``ci_high`` are the Student t
    interval over the ``n_subsessions`` subsession means of ``subsession_size`` readings
    (§3-4); ``subsession_variance`` is their sample variance s_q² (ddof=1), so
    (mean, n_subsessions, subsession_size, subsession_variance) is enough to compare
    against this result later (PILOT "Comparing Results"). ``readings_needed`` and ``tau``
    are extra attributes (not in :meth:`to_dict`), as are ``subsessions`` (the full choice)
    and ``uncertified`` (the full :class:`~benchrun.stats.uncertified.UncertifiedInterval`).

    The interval to print (docs/methods.md §4.1) is ``interval_low``/``interval_high``:
    the certified CI when ``certified`` (then equal to ``ci_low``/``ci_high``), otherwise,
    from 3 readings on, the uncertified interval that assumes τ <= ``tau_bound``, whose
    mark ``interval_note`` ("independence not certified: assumes tau <= 2.4, 1.6x the
    i.i.d. width") must be printed with it. ``width_factor`` is the interval's half-width
    over the i.i.d. t interval's (None for zero widths). ``ci_low``/``ci_high`` stay None
    without a certified CI.
    """

    n: int
    warmup_readings: int
    subsession_size: int | None
    n_subsessions: int | None
    mean: float
    ci_low: float | None
    ci_high: float | None
    median: float | None
    median_ci_low: float | None
    median_ci_high: float | None
    std: float | None
    cov: float | None
    min: float | None
    q1: float | None
    q3: float | None
    max: float | None
    p90: float | None
    p99: float | None
    autocorrelation_lag1: float | None
    normality_p: float | None
    outliers: int | None
    deterministic: bool | None
    notes: tuple[str, ...]
    subsession_variance: float | None
    confidence: float
    ess: float | None
    enough_data: bool
    readings_needed: int | None = None
    tau: float | None = None
    subsessions: SubsessionChoice | None = None
    certified: bool = False
    interval_low: float | None = None
    interval_high: float | None = None
    tau_bound: float | None = None
    width_factor: float | None = None
    interval_note: str | None = None
    uncertified: UncertifiedInterval | None = None

    def to_dict(self) -> dict[str, object]:
        """JSON-serialisable dict with exactly the documented keys (floats/int/bool/None)."""
        out: dict[str, object] = {}
        for key in _KEYS:
            v = getattr(self, key)
            if key == "notes":
                out[key] = list(v)
            elif v is None or isinstance(v, bool | int | str):
                out[key] = v
            else:
                out[key] = opt_float(v)
        return out


def _warmup_count(x: np.ndarray, warmup: str | int, notes: list[str]) -> int:
    if isinstance(warmup, bool):
        raise ValueError("warmup must be 'mser5', 'none' or a number of readings")
    if isinstance(warmup, int | np.integer):
        k = int(warmup)
        if not 0 <= k < x.size:
            raise ValueError(
                f"warmup_readings = {k} must be in 0..{x.size - 1} for {x.size} readings"
            )
        if k:
            notes.append(f"{k} warm-up readings excluded (fixed)")
        return k
    if warmup == "none":
        return 0
    if warmup == "mser5":
        k = mser5(x)
        if k:
            notes.append(f"{k} warm-up readings excluded (MSER-5)")
        if mser5_at_limit(x):
            notes.append("MSER-5 truncated half the series: it may not have reached a steady state")
        return k
    raise ValueError(f"warmup must be 'mser5', 'none' or a number of readings, got {warmup!r}")


def summarize(
    values: Iterable[float] | np.ndarray,
    confidence: float = 0.95,
    warmup: Literal["mser5", "none"] | int = "mser5",
    *,
    deterministic_threshold: float = DETERMINISTIC_COV,
    outlier_k: float = 1.5,
    remove_outliers: bool = False,
    min_subsessions: int = MIN_SUBSESSIONS,
    max_subsessions: int = MAX_SUBSESSIONS,
) -> Summary:
    """Summarise one series of readings in time order (docs/methods.md §1-5).

    Parameters
    ----------
    values : array_like
        Readings in time order, finite, at least one (NaN/inf or empty: ValueError).
        Negative values are allowed.
    confidence : float
        Level of the mean and median CIs, in (0, 1).
    warmup : {"mser5", "none"} or int
        How warm-up readings are found (step 1).
    deterministic_threshold : float
        CoV below which the series counts as deterministic (see :func:`describe`).
    outlier_k : float
        Multiplier of Tukey's fences.
    remove_outliers : bool
        Whether readings outside Tukey's fences are removed (step 2).
    min_subsessions, max_subsessions : int
        Passed to :func:`~benchrun.stats.autocorr.subsession_size`.

    Returns
    -------
    Summary
        Descriptive statistics, the mean's ``confidence_interval`` over subsession means,
        the median CI, the subsession size and count, ``subsession_variance``,
        ``normality_p``, ``enough_data`` and ``notes``; values in the unit of ``values``.

    Notes
    -----
    1. Warm-up (§2): ``"mser5"`` (default) truncates the MSER-5 transient, an int drops a
       fixed number of readings, ``"none"`` keeps all. Dropped readings are only counted.
    2. Optional Tukey outlier removal (``remove_outliers=True``; §1), reported in notes.
    3. :func:`describe` of the analysed readings (§1).
    4. Subsession size by :func:`stats.autocorr.subsession_size` (§3); the mean CI is the
       Student t interval over subsession means (§4). If the series is too short for its
       correlation time, the CI is None and the notes say how many readings are needed;
       from 3 readings on, ``interval_low``/``interval_high`` then hold the uncertified
       interval of :func:`~benchrun.stats.uncertified.uncertified_mean_ci` (§4.1), marked
       by ``certified=False`` and ``interval_note``.
    5. Median CI: exact order-statistic interval (§4); when the readings are autocorrelated
       (q > 1) the ranks use the effective sample size n/τ_I of the indicator series
       ``x_t <= median`` (approximate; noted). None below n = 6 at 95 %.
    6. Shapiro-Wilk p of the subsession means (§5), with >= 3 of them.

    All values equal: deterministic, CI of zero width, with a note. One reading: n, mean,
    the rest None.

    References
    ----------
    .. [1] T. Hoefler and R. Belli, "Scientific benchmarking of parallel computing
       systems: twelve ways to tell the masses when reporting performance results",
       SC '15. doi:10.1145/2807591.2807644
    .. [2] Y. Li, Y. Gupta, E. L. Miller and D. D. E. Long, "Pilot: a framework that
       understands how to do performance benchmarks the right way", 24th IEEE MASCOTS, 2016.
       doi:10.1109/MASCOTS.2016.31

    Examples
    --------
    200 independent readings: no warm-up, 20 subsession means of 10 readings:

    >>> from scipy import stats as sps
    >>> y = np.random.default_rng(2).normal(50.0, 2.0, 200)
    >>> s = summarize(y)
    >>> s.warmup_readings, s.subsession_size, s.n_subsessions, s.enough_data
    (0, 10, 20, True)
    >>> round(s.mean, 4), round(s.confidence_interval.low, 4), round(s.confidence_interval.high, 4)
    (49.9845, 49.7872, 50.1817)

    The mean and its CI from the subsession means with numpy and scipy:

    >>> b = y.reshape(20, 10).mean(axis=1)
    >>> round(float(np.mean(y)), 4)
    49.9845
    >>> [round(float(v), 4) for v in sps.t.interval(0.95, 19, loc=b.mean(), scale=sps.sem(b))]
    [49.7872, 50.1817]
    >>> bool(abs(s.subsession_variance - np.var(b, ddof=1)) < 1e-12)
    True
    """
    c = check_confidence(confidence)
    x = as_series(values)
    notes: list[str] = []
    w = _warmup_count(x, warmup, notes)
    y = x[w:]
    if remove_outliers and y.size >= 4:
        fences = tukey_outliers(y, outlier_k)
        keep = (y >= fences.low_fence) & (y <= fences.high_fence)
        if fences.count:
            notes.append(
                f"{fences.count} Tukey outliers (k = {outlier_k:g}) removed on request "
                f"(outside [{fences.low_fence:.6g}, {fences.high_fence:.6g}])"
            )
        y = y[keep]
    d = describe(y, deterministic_threshold=deterministic_threshold, outlier_k=outlier_k)
    notes.extend(d.notes)
    n = d.n
    base: dict[str, Any] = dict(
        n=n,
        warmup_readings=w,
        mean=d.mean,
        median=d.median,
        std=d.std,
        cov=d.cov,
        min=d.min,
        q1=d.q1,
        q3=d.q3,
        max=d.max,
        p90=d.p90,
        p99=d.p99,
        outliers=d.outliers,
        deterministic=d.deterministic,
        confidence=c,
    )
    if n == 1:
        return Summary(
            **base,
            subsession_size=None,
            n_subsessions=None,
            ci_low=None,
            ci_high=None,
            median_ci_low=None,
            median_ci_high=None,
            autocorrelation_lag1=None,
            normality_p=None,
            notes=tuple(notes),
            subsession_variance=None,
            ess=None,
            enough_data=False,
            readings_needed=None,
        )
    if d.std == 0.0:
        notes.append("all readings equal: deterministic, the CI has zero width")
        med = quantile_ci(y, 0.5, c)
        return Summary(
            **base,
            subsession_size=1,
            n_subsessions=n,
            ci_low=d.mean,
            ci_high=d.mean,
            median_ci_low=med.low,
            median_ci_high=med.high,
            autocorrelation_lag1=None,
            normality_p=None,
            notes=tuple(notes + list(med.notes)),
            subsession_variance=0.0,
            ess=float(n),
            enough_data=True,
            certified=True,
            interval_low=d.mean,
            interval_high=d.mean,
        )
    lag1 = autocorrelation(y, 1)
    choice = subsession_size(y, c, min_subsessions=min_subsessions, max_subsessions=max_subsessions)
    notes.extend(choice.notes)
    ci_low = ci_high = s2 = norm_p = None
    med_low = med_high = None
    shown: dict[str, Any] = {}
    unc = None
    if choice.enough:
        b = subsession_means(y, choice.q)
        ci = mean_ci(b, c)
        ci_low, ci_high = ci.low, ci.high
        s2 = float(np.var(b, ddof=1))
        naive = mean_ci(y, c).half_width
        half = ci.half_width
        shown = dict(
            certified=True,
            interval_low=ci_low,
            interval_high=ci_high,
            width_factor=half / naive if naive and half is not None else None,
        )
        if choice.n_used < n:
            notes.append(
                f"{n - choice.n_used} trailing readings not in a complete subsession: "
                "the CI is centred on the mean of the other readings"
            )
        nr = normality(b)
        norm_p = nr.p_value
        notes.extend(f"normality: {t}" for t in nr.notes)
        med = quantile_ci(y, 0.5, c, ess=_indicator_ess(y, d.median) if choice.q_min > 1 else None)
        med_low, med_high = med.low, med.high
        notes.extend(med.notes)
    elif n >= MIN_READINGS:
        unc = uncertified_mean_ci(y, c)
        notes.append(
            f"no certified mean CI and no median CI until there is enough data; the mean "
            f"interval shown is not certified: it assumes tau <= {unc.tau_bound:.2f} readings "
            "(Geyer's initial positive sequence estimate, docs/methods.md §4.1)"
        )
        shown = dict(
            interval_low=unc.ci_low,
            interval_high=unc.ci_high,
            tau_bound=unc.tau_bound,
            width_factor=unc.width_factor,
            interval_note=unc.note,
        )
    else:
        notes.append("no mean or median CI until there is enough data")
    return Summary(
        **base,
        subsession_size=choice.q,
        n_subsessions=choice.n_subsessions,
        ci_low=ci_low,
        ci_high=ci_high,
        median_ci_low=med_low,
        median_ci_high=med_high,
        autocorrelation_lag1=lag1,
        normality_p=norm_p,
        notes=tuple(notes),
        subsession_variance=s2,
        ess=choice.ess,
        enough_data=choice.enough,
        readings_needed=choice.readings_needed,
        tau=choice.tau,
        subsessions=choice,
        uncertified=unc,
        **shown,
    )


def _indicator_ess(y: np.ndarray, median: float | None) -> float | None:
    """n / τ_I for the indicator series 1[y_t <= median] (None if it is constant)."""
    if median is None:
        return None
    ind = (y <= median).astype(float)
    if ind.min() == ind.max() or y.size < 3:
        return None
    tau = integrated_autocorrelation_time(ind)
    return y.size / max(tau, 1.0)
