"""Touati's Speedup-Test: is the optimised programme really faster? (docs/methods.md §6.2).

Source: [TOUATI] S.-A.-A. Touati, J. Worms, S. Briais, *The Speedup-Test: a statistical
methodology for programme speedup analysis and computation*, Concurrency and Computation:
Practice and Experience 25(10), 2013, §3 (one benchmark) and §4 (a suite of benchmarks).

X holds the execution times of the initial version, Y those of the optimised version (same
unit, > 0). A speedup means X is slower: speedup of the mean = mean(X)/mean(Y) > 1.
Every underlying test is scipy's (shapiro, ttest_ind, ks_2samp, mannwhitneyu), except the
two-sided F-test for equal variances (R's ``var.test``), which is written with
``scipy.stats.f``. The decision flow is hand-written because no library has it.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

from benchrun.stats.intervals import proportion_ci, proportion_sample_size
from benchrun.stats.results import AsDict, HasCI, jsonable

SPEEDUP = "speedup"
NO_SPEEDUP = "no speedup"
NOT_ENOUGH = "not enough data"
CONFIDENCE_WARNING = "1-alpha may not be the real confidence level"
_LARGE = 30  # TOUATI: "n > 30" is the large-sample threshold


def _times(x: ArrayLike, name: str) -> np.ndarray:
    arr = np.asarray(x, dtype=float)
    if arr.ndim != 1 or arr.size < 2:
        raise ValueError(f"{name} must be a one-dimensional sequence of at least 2 times")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values")
    if np.any(arr <= 0):
        raise ValueError(f"{name} must contain execution times > 0")
    return arr


@dataclass(frozen=True)
class SpeedupTestResult(AsDict):
    """Verdicts of the Speedup-Test for one benchmark (docs/methods.md §6.2, TOUATI §3).

    ``mean_verdict`` / ``median_verdict`` are "speedup", "no speedup" or "not enough data".
    ``mean_warning`` / ``median_warning`` flag "1-alpha may not be the real confidence level"
    (large but non-normal samples; location-shift model rejected by the KS test).
    p-values are None when the test was not run. ``speedup_*`` are observed ratios X/Y
    (unitless); the speedup of the minimum is observed only, never tested (TOUATI).
    """

    n_x: int
    n_y: int
    alpha: float
    mean_verdict: str
    median_verdict: str
    mean_warning: bool
    median_warning: bool
    shapiro_p_x: float | None
    shapiro_p_y: float | None
    normal_x: bool
    normal_y: bool
    f_test_p: float | None
    equal_variances: bool | None
    mean_test: str | None
    mean_p: float | None
    ks_p: float | None
    median_test: str | None
    median_p: float | None
    prob_superiority: float
    tests_used: tuple[str, ...]
    mean_x: float
    mean_y: float
    median_x: float
    median_y: float
    min_x: float
    min_y: float
    speedup_mean: float
    speedup_median: float
    speedup_min: float
    warnings: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


def f_test(x: np.ndarray, y: np.ndarray) -> float:
    """Two-sided F-test of equal variances (R ``var.test``): F = s_x²/s_y², df (n-1, m-1),
    ``p = 2·min(F_cdf(F), 1 - F_cdf(F))``. Zero variance on exactly one side gives p = 0."""
    vx, vy = float(np.var(x, ddof=1)), float(np.var(y, ddof=1))
    if vx == 0.0 and vy == 0.0:
        return 1.0
    if vx == 0.0 or vy == 0.0:
        return 0.0
    f = vx / vy
    dfx, dfy = x.size - 1, y.size - 1
    return float(min(1.0, 2.0 * min(stats.f.cdf(f, dfx, dfy), stats.f.sf(f, dfx, dfy))))


def _shapiro(x: np.ndarray) -> float | None:
    if x.size < 3:
        return None
    if np.ptp(x) == 0:
        return 1.0  # a constant sample is a point mass; shapiro itself returns 1 with a warning
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(stats.shapiro(x).pvalue)


def speedup_test(x: ArrayLike, y: ArrayLike, alpha: float = 0.05) -> SpeedupTestResult:
    """Touati's Speedup-Test for one benchmark (docs/methods.md §6.2, TOUATI §3, Figs. 1-2).

    Parameters
    ----------
    x : array_like
        Times of the initial version (n values), finite.
    y : array_like
        Times of the optimised version (m values), in the unit of ``x``.
    alpha : float
        Risk of every test, in (0, 0.5).

    Returns
    -------
    SpeedupTestResult
        ``mean_verdict`` and ``median_verdict`` ("speedup", "no speedup" or "not enough
        data") with their p-values (``mean_p``, ``median_p``), the tests used and their
        p-values, ``warnings``, and the observed speedups of the mean, median and minimum
        (``speedup_mean = mean(x)/mean(y)``, ...).

    Notes
    -----
    Mean: Shapiro-Wilk at ``alpha`` on X and on Y. If n <= 30 and X is not normal, or
    m <= 30 and Y is not normal -> "not enough data" (run more than 30 times). Otherwise an
    F-test for equal variances (two-sided, at ``alpha``) chooses a one-sided Student
    (equal) or Welch (unequal) unpaired t-test of H0: μ_X <= μ_Y vs Ha: μ_X > μ_Y; p < alpha
    -> "speedup", else "no speedup". When a sample is large (> 30) but not normal the test
    still runs on the strength of the central limit theorem, and the verdict carries the
    warning "1-alpha may not be the real confidence level". §6.2 names no other test for
    that case, so it takes the same F-test -> Student/Welch path.

    Median: KS two-sample test of X - med(X) vs Y - med(Y) (does the location-shift model
    hold?); if n <= 30 or m <= 30 -> "not enough data"; else one-sided Wilcoxon-Mann-Whitney
    of H0: F_X >= F_Y (X not stochastically greater); rejection means med(X) > med(Y) and
    P[X > Y] > 1/2 -> "speedup". If KS rejected the model (p < alpha), the verdict carries
    the same warning.

    Both samples constant: the verdicts are decided by comparing the values (noted).
    References
    ----------
    .. [1] S.-A.-A. Touati, J. Worms and S. Briais, "The Speedup-Test: a statistical
       methodology for programme speedup analysis and computation", Concurrency and
       Computation: Practice and Experience 25(10):1410-1426, 2013.
       doi:10.1002/cpe.2939
    .. [2] S. S. Shapiro and M. B. Wilk, "An analysis of variance test for normality
       (complete samples)", Biometrika 52(3/4):591-611, 1965. doi:10.1093/biomet/52.3-4.591
    .. [3] H. B. Mann and D. R. Whitney, "On a test of whether one of two random variables
       is stochastically larger than the other", Annals of Mathematical Statistics
       18(1):50-60, 1947. doi:10.1214/aoms/1177730491

    Examples
    --------
    35 runs each, the optimised version about 3 % faster. Shapiro-Wilk rejects normality
    at 5 % for both samples here, so the mean verdict carries the warning:

    >>> rng = np.random.default_rng(3)
    >>> x, y = rng.normal(10.0, 0.3, 35), rng.normal(9.7, 0.3, 35)
    >>> r = speedup_test(x, y)
    >>> r.mean_verdict, r.mean_test, r.median_verdict, r.mean_warning
    ('speedup', 'student', 'speedup', True)
    >>> round(r.speedup_mean, 4), round(float(x.mean() / y.mean()), 4)
    (1.0406, 1.0406)

    The one-sided tests in scipy give the same p-values:

    >>> t = stats.ttest_ind(x, y, equal_var=True, alternative="greater")
    >>> u = stats.mannwhitneyu(x, y, alternative="greater")
    >>> bool(abs(r.mean_p - t.pvalue) < 1e-12), bool(abs(r.median_p - u.pvalue) < 1e-12)
    (True, True)

    Ten runs with one slow outlier are not normal, and not enough for the mean:

    >>> x10 = [10.1, 10.0, 10.2, 10.1, 10.0, 10.1, 10.2, 10.0, 10.1, 13.0]
    >>> r = speedup_test(x10, [9.8, 9.7, 9.9, 9.8, 9.7, 9.8, 9.9, 9.7, 9.8, 9.8])
    >>> r.normal_x, bool(stats.shapiro(x10).pvalue < 0.05), r.mean_verdict
    (False, True, 'not enough data')
    """
    xs, ys = _times(x, "x"), _times(y, "y")
    alpha = float(alpha)
    if not 0.0 < alpha < 0.5:
        raise ValueError(f"alpha must be in (0, 0.5), got {alpha}")
    n, m = xs.size, ys.size
    notes: list[str] = []
    warns: list[str] = []
    used: list[str] = []

    # ---- mean
    sx, sy = _shapiro(xs), _shapiro(ys)
    used.append("Shapiro-Wilk")
    normal_x = sx is not None and sx >= alpha
    normal_y = sy is not None and sy >= alpha
    if sx is None or sy is None:
        notes.append("Shapiro-Wilk needs at least 3 values; such a sample counts as not normal")
    f_p: float | None = None
    equal_var: bool | None = None
    mean_test: str | None = None
    mean_p: float | None = None
    mean_warning = False
    const_x, const_y = np.ptp(xs) == 0, np.ptp(ys) == 0
    if (n <= _LARGE and not normal_x) or (m <= _LARGE and not normal_y):
        mean_verdict = NOT_ENOUGH
        notes.append("mean: a sample of 30 or fewer is not normal; run more than 30 times")
    elif const_x and const_y:
        mean_verdict = SPEEDUP if xs[0] > ys[0] else NO_SPEEDUP
        notes.append("both samples are constant: the mean verdict compares the values directly")
    else:
        if not (normal_x and normal_y):
            mean_warning = True
            warns.append(f"mean: {CONFIDENCE_WARNING} (large samples that are not normal)")
        f_p = f_test(xs, ys)
        used.append("F-test")
        equal_var = f_p >= alpha
        mean_test = "student" if equal_var else "welch"
        used.append("Student t-test" if equal_var else "Welch t-test")
        res = stats.ttest_ind(xs, ys, equal_var=equal_var, alternative="greater")
        mean_p = float(res.pvalue)
        mean_verdict = SPEEDUP if mean_p < alpha else NO_SPEEDUP
        if const_x or const_y:
            notes.append("one sample is constant: Welch's test with the other's n - 1 df")

    # ---- median
    ks = stats.ks_2samp(xs - np.median(xs), ys - np.median(ys))
    used.append("Kolmogorov-Smirnov")
    ks_p = float(ks.pvalue)
    wmw = stats.mannwhitneyu(xs, ys, alternative="greater", method="auto")
    prob_sup = float(wmw.statistic) / (n * m)  # U/(n·m) = P[X > Y] + ½·P[X = Y]
    median_test: str | None = None
    median_p: float | None = None
    median_warning = False
    if n <= _LARGE or m <= _LARGE:
        median_verdict = NOT_ENOUGH
        notes.append("median: needs more than 30 values in each sample")
    elif const_x and const_y:
        median_verdict = SPEEDUP if xs[0] > ys[0] else NO_SPEEDUP
        notes.append("both samples are constant: the median verdict compares the values")
    else:
        if ks_p < alpha:
            median_warning = True
            warns.append(f"median: {CONFIDENCE_WARNING} (KS rejected the location-shift model)")
        used.append("Wilcoxon-Mann-Whitney")
        median_test = "wilcoxon-mann-whitney"
        median_p = float(wmw.pvalue)
        median_verdict = SPEEDUP if median_p < alpha else NO_SPEEDUP

    mx, my = float(xs.mean()), float(ys.mean())
    medx, medy = float(np.median(xs)), float(np.median(ys))
    minx, miny = float(xs.min()), float(ys.min())
    notes.append("the speedup of the minimum is observed only, never tested (TOUATI)")
    return SpeedupTestResult(
        n_x=n,
        n_y=m,
        alpha=alpha,
        mean_verdict=mean_verdict,
        median_verdict=median_verdict,
        mean_warning=mean_warning,
        median_warning=median_warning,
        shapiro_p_x=sx,
        shapiro_p_y=sy,
        normal_x=normal_x,
        normal_y=normal_y,
        f_test_p=f_p,
        equal_variances=equal_var,
        mean_test=mean_test,
        mean_p=mean_p,
        ks_p=ks_p,
        median_test=median_test,
        median_p=median_p,
        prob_superiority=prob_sup,
        tests_used=tuple(used),
        mean_x=mx,
        mean_y=my,
        median_x=medx,
        median_y=medy,
        min_x=minx,
        min_y=miny,
        speedup_mean=mx / my,
        speedup_median=medx / medy,
        speedup_min=minx / miny,
        warnings=tuple(warns),
        notes=tuple(notes),
    )


# ----------------------------------------------------------------------------- suite (§4)
@dataclass(frozen=True)
class ShareResult(HasCI, AsDict):
    """Share a/b of benchmarks with a significant speedup, with its CI (TOUATI §4).

    ``ci_low``/``ci_high`` come from :func:`stats.intervals.proportion_ci` (Wilson with
    continuity correction, as R's ``prop.test``). ``valid`` is Touati's condition
    ``a·(1 - a/b) > 5``; ``benchmarks_needed`` is ``⌈z²·C(1-C)/r²⌉`` for precision
    ``r = precision`` with C = a/b (C = 0.5, the worst case, when a = 0 or a = b).
    """

    statistic: str
    a: int
    b: int
    not_enough_data: int
    proportion: float
    ci_low: float
    ci_high: float
    confidence: float
    validity_value: float
    valid: bool
    precision: float
    benchmarks_needed: int
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class SpeedupSuiteResult:
    """The Speedup-Test over b benchmarks (docs/methods.md §6.2, TOUATI §4).

    ``overall_speedup_mean = Σ W_j·mean(X_j) / Σ W_j·mean(Y_j)`` and
    ``gain_mean = 1 - 1/overall_speedup_mean`` (likewise with medians); unitless.
    ``share_mean`` / ``share_median`` count the benchmarks whose mean / median verdict is
    "speedup". ``names`` and ``results`` are in input order.
    """

    names: tuple[str, ...]
    results: tuple[SpeedupTestResult, ...]
    weights: tuple[float, ...]
    alpha: float
    overall_speedup_mean: float
    overall_speedup_median: float
    gain_mean: float
    gain_median: float
    share_mean: ShareResult
    share_median: ShareResult
    warnings: tuple[str, ...] = ()

    def result(self, name: str) -> SpeedupTestResult:
        """The per-benchmark result of ``name``."""
        return self.results[self.names.index(name)]

    def to_dict(self) -> dict[str, object]:
        return jsonable(
            {
                "benchmarks": {
                    n: r.to_dict() for n, r in zip(self.names, self.results, strict=True)
                },
                "weights": dict(zip(self.names, self.weights, strict=True)),
                "alpha": self.alpha,
                "overall_speedup_mean": self.overall_speedup_mean,
                "overall_speedup_median": self.overall_speedup_median,
                "gain_mean": self.gain_mean,
                "gain_median": self.gain_median,
                "share_mean": self.share_mean.to_dict(),
                "share_median": self.share_median.to_dict(),
                "warnings": list(self.warnings),
            }
        )


def _share(statistic: str, verdicts: list[str], confidence: float, precision: float) -> ShareResult:
    b = len(verdicts)
    a = sum(v == SPEEDUP for v in verdicts)
    ci = proportion_ci(a, b, confidence=confidence)
    assert ci.low is not None and ci.high is not None  # b >= 1 benchmarks: always bounded
    value = a * (1 - a / b)
    c = a / b
    notes: list[str] = []
    if a in (0, b):
        notes.append("a = 0 or a = b: benchmarks_needed uses the worst case C = 0.5")
        c = 0.5
    needed = proportion_sample_size(c, precision, confidence=confidence)
    if value <= 5:
        notes.append(
            f"{statistic}: a(1 - a/b) = {value:.3g} <= 5, the confidence interval of the "
            "proportion may not be valid (TOUATI §4)"
        )
    return ShareResult(
        statistic=statistic,
        a=a,
        b=b,
        not_enough_data=sum(v == NOT_ENOUGH for v in verdicts),
        proportion=a / b,
        ci_low=float(ci.low),
        ci_high=float(ci.high),
        confidence=confidence,
        validity_value=value,
        valid=value > 5,
        precision=precision,
        benchmarks_needed=needed,
        notes=tuple(notes),
    )


def speedup_suite(
    benchmarks: Mapping[str, tuple[ArrayLike, ArrayLike]],
    weights: Mapping[str, float] | Sequence[float] | None = None,
    alpha: float = 0.05,
    confidence: float = 0.95,
    precision: float = 0.05,
) -> SpeedupSuiteResult:
    """The Speedup-Test over a suite of benchmarks (docs/methods.md §6.2, TOUATI §4).

    Parameters
    ----------
    benchmarks : mapping of str to (array_like, array_like)
        Benchmark name -> (X, Y): times of the initial and the optimised version.
    weights : mapping of str to float, or sequence of float, optional
        Weight W_j of each benchmark, > 0 (default 1 each).
    alpha : float
        Risk of every per-benchmark test.
    confidence : float
        Level of the interval of the share of benchmarks with a speedup.
    precision : float
        Target half-width r of that interval, for ``benchmarks_needed``.

    Returns
    -------
    SpeedupSuiteResult
        Per-benchmark ``results``, ``overall_speedup_mean``/``_median``,
        ``gain_mean``/``_median``, and ``share_mean``/``share_median`` (a/b with its
        interval, validity and ``benchmarks_needed``), with ``warnings``.

    Notes
    -----
    ``benchmarks`` maps a name to (X, Y) times; each pair goes through :func:`speedup_test`
    at ``alpha``. Overall speedup ``S = Σ W_j T(C_j) / Σ W_j T(C'_j)`` with T = mean and
    T = median, weights W default 1; gain ``G = 1 - 1/S``. The share a/b of benchmarks with a
    significant speedup gets a ``confidence`` interval (R prop.test), Touati's validity
    warning when ``a(1 - a/b) <= 5``, and the number of benchmarks needed for a CI of
    half-width ``precision`` (r): ``b >= z² C(1-C)/r²``.
    References
    ----------
    .. [1] S.-A.-A. Touati, J. Worms and S. Briais, "The Speedup-Test: a statistical
       methodology for programme speedup analysis and computation", Concurrency and
       Computation: Practice and Experience 25(10):1410-1426, 2013.
       doi:10.1002/cpe.2939

    Examples
    --------
    >>> rng = np.random.default_rng(3)
    >>> x, y = rng.normal(10.0, 0.3, 35), rng.normal(9.7, 0.3, 35)
    >>> x2, y2 = rng.normal(5.0, 0.2, 35), rng.normal(5.0, 0.2, 35)
    >>> s = speedup_suite({"a": (x, y), "b": (x2, y2)})
    >>> s.share_mean.a, s.share_mean.b, s.share_mean.valid
    (1, 2, False)

    The overall speedup of the means with equal weights, and the gain, by hand:

    >>> big_s = (x.mean() + x2.mean()) / (y.mean() + y2.mean())
    >>> round(s.overall_speedup_mean, 4), round(float(big_s), 4)
    (1.0238, 1.0238)
    >>> round(s.gain_mean, 4), round(float(1 - 1 / big_s), 4)
    (0.0232, 0.0232)
    """
    if not isinstance(benchmarks, Mapping) or len(benchmarks) == 0:
        raise ValueError("benchmarks must be a non-empty mapping name -> (x, y)")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if not 0.0 < precision < 1.0:
        raise ValueError(f"precision must be in (0, 1), got {precision}")
    names = tuple(str(k) for k in benchmarks)
    if weights is None:
        w = [1.0] * len(names)
    elif isinstance(weights, Mapping):
        missing = set(names) - set(map(str, weights))
        extra = set(map(str, weights)) - set(names)
        if missing or extra:
            raise ValueError(
                f"weights must name exactly the benchmarks (missing {sorted(missing)}, "
                f"unknown {sorted(extra)})"
            )
        w = [float({str(k): v for k, v in weights.items()}[n]) for n in names]
    else:
        w = [float(v) for v in weights]
        if len(w) != len(names):
            raise ValueError(f"{len(w)} weights given for {len(names)} benchmarks")
    if not all(math.isfinite(v) and v > 0 for v in w):
        raise ValueError("weights must be finite numbers > 0")
    results = []
    for name, pair in benchmarks.items():
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise ValueError(f"benchmark {name!r} must map to a pair (x, y) of time samples")
        try:
            results.append(speedup_test(pair[0], pair[1], alpha=alpha))
        except ValueError as exc:
            raise ValueError(f"benchmark {name!r}: {exc}") from None
    wa = np.asarray(w)
    s_mean = float(wa @ [r.mean_x for r in results] / (wa @ [r.mean_y for r in results]))
    s_med = float(wa @ [r.median_x for r in results] / (wa @ [r.median_y for r in results]))
    share_mean = _share("mean", [r.mean_verdict for r in results], confidence, precision)
    share_med = _share("median", [r.median_verdict for r in results], confidence, precision)
    warns = tuple(n for s in (share_mean, share_med) for n in s.notes if "<= 5" in n)
    return SpeedupSuiteResult(
        names=names,
        results=tuple(results),
        weights=tuple(w),
        alpha=float(alpha),
        overall_speedup_mean=s_mean,
        overall_speedup_median=s_med,
        gain_mean=1 - 1 / s_mean,
        gain_median=1 - 1 / s_med,
        share_mean=share_mean,
        share_median=share_med,
        warnings=warns,
    )
