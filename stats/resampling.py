"""Resampling across a benchmark suite (docs/methods.md §9, [WANG]).

Two systems A and B, n benchmarks, runs per (benchmark, system) -- the same input shapes as
:func:`stats.hpt.hpt` (2-D benchmark x run arrays or dicts benchmark -> runs). The suite
summary is the ratio of geometric means

    R = (Π_τ T(A_τ))^(1/n) / (Π_τ T(B_τ))^(1/n) = exp( mean_τ [log T(A_τ) - log T(B_τ)] ),

with T the per-benchmark mean (default: a smooth statistic, which the BCa jackknife needs)
or median. R is dimensionless; R > 1 means A's values are larger (for times: A is slower).

- :func:`randomization_test`: permutation test of "A and B perform the same", labels
  permuted within each benchmark;
- :func:`gmean_ratio_ci`: hierarchical (stratified) bootstrap CI of R, runs resampled
  within each (benchmark, system), benchmarks fixed;
- :func:`runs_for_ci_width`: smallest run count m whose bootstrap CI is narrow enough;
- :func:`biplot`: PCA of the machine x benchmark matrix of (log) medians.
"""

from __future__ import annotations

import itertools
import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

from benchrun.stats.hpt import Suite, paired_suites
from benchrun.stats.intervals import Interval, check_confidence
from benchrun.stats.results import AsDict, HasPValue

_CENTERS = ("mean", "median")
_ALTERNATIVES = ("two-sided", "greater", "less")


def _center_fn(center: str) -> Any:
    if center not in _CENTERS:
        raise ValueError(f"center must be 'mean' or 'median', got {center!r}")
    return np.mean if center == "mean" else np.median


def _positive_suites(
    a: Suite, b: Suite, min_runs: int
) -> tuple[list[str], list[np.ndarray], list[np.ndarray]]:
    names, ra, rb = paired_suites(a, b)
    for name, x, y in zip(names, ra, rb, strict=True):
        if np.any(x <= 0) or np.any(y <= 0):
            raise ValueError(f"benchmark {name!r}: values must be > 0 (logarithms are taken)")
        if min(x.size, y.size) < min_runs:
            raise ValueError(f"benchmark {name!r}: needs at least {min_runs} runs per system")
    return names, ra, rb


def _log_ratio(ra: list[np.ndarray], rb: list[np.ndarray], fn: Any) -> float:
    return float(np.mean([np.log(fn(x)) - np.log(fn(y)) for x, y in zip(ra, rb, strict=True)]))


# ---------------------------------------------------------------------- randomization
@dataclass(frozen=True)
class RandomizationResult(HasPValue, AsDict):
    """Result of :func:`randomization_test`. ``statistic`` = log R; ``ratio`` = R."""

    statistic: float
    ratio: float
    p_value: float
    alternative: str
    exact: bool
    n_permutations: int
    center: str
    n_benchmarks: int
    notes: tuple[str, ...] = ()


def _exact_contributions(x: np.ndarray, y: np.ndarray, fn: Any) -> np.ndarray:
    pool = np.concatenate([x, y])
    combos = np.array(list(itertools.combinations(range(pool.size), x.size)))
    mask = np.zeros((len(combos), pool.size), dtype=bool)
    np.put_along_axis(mask, combos, True, axis=1)
    tiled = np.broadcast_to(pool, mask.shape)
    a_vals = tiled[mask].reshape(len(combos), x.size)
    b_vals = tiled[~mask].reshape(len(combos), y.size)
    return np.log(fn(a_vals, axis=1)) - np.log(fn(b_vals, axis=1))


def randomization_test(
    a: Suite,
    b: Suite,
    n_permutations: int = 10_000,
    seed: int | None = None,
    *,
    center: str = "mean",
    alternative: str = "two-sided",
) -> RandomizationResult:
    """Randomization test that A and B perform the same across the suite (docs/methods.md §9).

    Parameters
    ----------
    a, b : array_like or mapping of str to array_like
        Runs of systems A and B: 2-D (benchmark x run) arrays or dicts benchmark -> runs,
        the same benchmarks for both, values > 0.
    n_permutations : int
        Largest number of relabelings enumerated exactly, else the number drawn at random.
    seed : int or None
        Seed of the random relabelings.
    center : {"mean", "median"}
        Per-benchmark statistic T.
    alternative : {"two-sided", "greater", "less"}
        "greater": A larger; "less": A smaller.

    Returns
    -------
    RandomizationResult
        ``statistic`` (log R), ``ratio`` (R, dimensionless), ``pvalue``, ``exact`` and the
        number of relabelings used.

    Notes
    -----
    Under H0 the runs of A and B of one benchmark are exchangeable, so the system labels are
    permuted *within each benchmark* (run counts kept) and the statistic
    ``log R = mean_τ [log T(A_τ) - log T(B_τ)]`` recomputed. If the number of distinct
    relabelings ``Π_τ C(m_Aτ + m_Bτ, m_Aτ)`` is <= ``n_permutations`` all of them are
    enumerated and ``p = #{|log R*| >= |log R|} / count`` (exact); otherwise ``n_permutations``
    random relabelings give ``p = (1 + #{...}) / (1 + n_permutations)``, which is a valid
    p-value (Phipson & Smyth 2010). "greater": A larger; "less": A smaller.

    References
    ----------
    .. [1] B. Phipson and G. K. Smyth, "Permutation p-values should never be zero:
       calculating exact p-values when permutations are randomly drawn", Statistical
       Applications in Genetics and Molecular Biology 9(1), Article 39, 2010.
       doi:10.2202/1544-6115.1585

    Examples
    --------
    >>> a = {"x": [2.0, 2.1, 2.2], "y": [4.0, 4.1, 4.3]}
    >>> b = {"x": [1.0, 1.1, 1.2], "y": [2.0, 2.2, 2.1]}
    >>> res = randomization_test(a, b)
    >>> res.exact, res.n_permutations, round(res.pvalue, 4)  # 2 of 400 are as extreme
    (True, 400, 0.005)

    All 20 x 20 relabelings enumerated by hand:

    >>> def log_ratios(k):
    ...     pool = a[k] + b[k]
    ...     return [math.log(np.mean([pool[i] for i in c]))
    ...             - math.log(np.mean([pool[i] for i in range(6) if i not in c]))
    ...             for c in itertools.combinations(range(6), 3)]
    >>> all_r = [(u + v) / 2 for u in log_ratios("x") for v in log_ratios("y")]
    >>> sum(abs(r) >= abs(res.statistic) - 1e-12 for r in all_r), len(all_r)
    (2, 400)
    """
    fn = _center_fn(center)
    if alternative not in _ALTERNATIVES:
        raise ValueError(f"alternative must be one of {_ALTERNATIVES}, got {alternative!r}")
    if int(n_permutations) < 1:
        raise ValueError(f"n_permutations must be >= 1, got {n_permutations}")
    names, ra, rb = _positive_suites(a, b, min_runs=1)
    observed = _log_ratio(ra, rb, fn)
    n = len(names)
    count = 1
    for x, y in zip(ra, rb, strict=True):
        count *= math.comb(x.size + y.size, x.size)
        if count > n_permutations:
            break
    exact = count <= n_permutations
    if exact:
        dist = np.zeros(1)
        for x, y in zip(ra, rb, strict=True):
            dist = (dist[:, None] + _exact_contributions(x, y, fn)[None, :]).ravel()
    else:
        rng = np.random.default_rng(seed)
        dist = np.zeros(int(n_permutations))
        for x, y in zip(ra, rb, strict=True):
            pool = np.concatenate([x, y])
            perm = rng.permuted(np.broadcast_to(pool, (dist.size, pool.size)), axis=1)
            dist += np.log(fn(perm[:, : x.size], axis=1)) - np.log(fn(perm[:, x.size :], axis=1))
    dist /= n
    tol = 1e-9 * abs(observed) + 1e-14  # relabelings equal to the observed up to rounding
    if alternative == "two-sided":
        hits = np.count_nonzero(np.abs(dist) >= abs(observed) - tol)
    elif alternative == "greater":
        hits = np.count_nonzero(dist >= observed - tol)
    else:
        hits = np.count_nonzero(dist <= observed + tol)
    p = hits / dist.size if exact else (1 + hits) / (1 + dist.size)
    notes = () if exact else (f"Monte Carlo p-value from {dist.size} random relabelings",)
    return RandomizationResult(
        statistic=observed,
        ratio=math.exp(observed),
        p_value=float(p),
        alternative=alternative,
        exact=exact,
        n_permutations=int(dist.size),
        center=center,
        n_benchmarks=n,
        notes=notes,
    )


# ------------------------------------------------------------------------- bootstrap CI
def _bootstrap_log_ratio(
    ra: list[np.ndarray],
    rb: list[np.ndarray],
    fn: Any,
    confidence: float,
    n_resamples: int,
    method: str,
    rng: np.random.Generator,
) -> tuple[float | None, float | None, list[str]]:
    n = len(ra)
    samples = tuple(s for pair in zip(ra, rb, strict=True) for s in pair)  # A_1, B_1, A_2, B_2, ...

    def statistic(*cells: np.ndarray, axis: int = -1) -> np.ndarray:
        logs = [np.log(fn(c, axis=axis)) for c in cells]
        return sum(logs[0::2]) / n - sum(logs[1::2]) / n

    total = sum(s.size for s in samples)
    batch = max(1, min(n_resamples, 4_000_000 // total))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = stats.bootstrap(
            samples,
            statistic,
            n_resamples=n_resamples,
            batch=batch,
            vectorized=True,
            confidence_level=confidence,
            method=method,
            rng=rng,
        )
    notes = [f"scipy: {str(w.message).splitlines()[0]}" for w in caught]
    low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
    if not (math.isfinite(low) and math.isfinite(high)):
        notes.append("bootstrap distribution degenerate (e.g. constant runs): no interval")
        return None, None, notes
    return low, high, notes


def _check_method(method: str) -> str:
    if method.lower() not in ("percentile", "bca"):
        raise ValueError(f"method must be 'percentile' or 'BCa', got {method!r}")
    return "BCa" if method.lower() == "bca" else "percentile"


def gmean_ratio_ci(
    a: Suite,
    b: Suite,
    confidence: float = 0.95,
    n_resamples: int = 10_000,
    method: str = "BCa",
    seed: int | None = None,
    *,
    center: str = "mean",
) -> Interval:
    """Hierarchical bootstrap CI of the ratio of geometric means R (docs/methods.md §9, §4).

    Parameters
    ----------
    a, b : array_like or mapping of str to array_like
        Runs of systems A and B: 2-D (benchmark x run) arrays or dicts benchmark -> runs,
        the same benchmarks for both, values > 0, at least
        2 runs per cell.
    confidence : float
        Coverage probability, in (0, 1).
    n_resamples : int
        Number of bootstrap resamples, at least 100.
    method : {"BCa", "percentile"}
        Interval method.
    seed : int or None
        Seed of the resampling.
    center : {"mean", "median"}
        Per-benchmark statistic T.

    Returns
    -------
    Interval
        ``estimate`` R and ``low``/``high`` (dimensionless); ``n`` counts all runs.

    Notes
    -----
    Benchmarks are fixed; the runs of each (benchmark, system) cell are resampled with
    replacement, independently (a stratified bootstrap with 2n strata), and
    ``R* = exp(mean_τ [log T(A*_τ) - log T(B*_τ)])`` recomputed, via
    :func:`scipy.stats.bootstrap` with one sample per cell. ``method="percentile"`` takes
    quantiles of R*; ``"BCa"`` corrects bias and skewness, with the acceleration from the
    per-stratum jackknife (Davison & Hinkley 1997, stratified form, as scipy computes it).
    Needs >= 2 runs per cell and positive values. The interval is of R (dimensionless);
    ``n`` counts all runs.

    References
    ----------
    .. [1] A. C. Davison and D. V. Hinkley, *Bootstrap Methods and their Application*,
       Cambridge University Press, 1997.
    .. [2] B. Efron, "Better bootstrap confidence intervals", Journal of the American
       Statistical Association 82(397):171-185, 1987. doi:10.1080/01621459.1987.10478410

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> b = rng.lognormal(0, 0.1, (4, 20)); a = 1.2 * rng.lognormal(0, 0.1, (4, 20))
    >>> ci = gmean_ratio_ci(a, b, n_resamples=2000, seed=1)
    >>> ci.low < 1.2 < ci.high
    True

    The estimate is the ratio of scipy's geometric means of the per-benchmark means:

    >>> round(ci.estimate, 6), round(float(stats.gmean(a.mean(axis=1)) / stats.gmean(b.mean(axis=1))), 6)
    (1.175843, 1.175843)
    """
    fn = _center_fn(center)
    c = check_confidence(confidence)
    meth = _check_method(method)
    if int(n_resamples) < 100:
        raise ValueError(f"n_resamples must be >= 100, got {n_resamples}")
    names, ra, rb = _positive_suites(a, b, min_runs=2)
    estimate = math.exp(_log_ratio(ra, rb, fn))
    low, high, notes = _bootstrap_log_ratio(
        ra, rb, fn, c, int(n_resamples), meth, np.random.default_rng(seed)
    )
    if center == "median" and meth == "BCa":
        notes.append("BCa acceleration from a jackknife of medians is unreliable; prefer mean")
    return Interval(
        estimate=estimate,
        low=None if low is None else math.exp(low),
        high=None if high is None else math.exp(high),
        confidence=c,
        method=f"hierarchical bootstrap {meth}, ratio of geometric means of {center}s",
        n=int(sum(x.size + y.size for x, y in zip(ra, rb, strict=True))),
        notes=tuple(notes),
    )


# --------------------------------------------------------------------- sample size
@dataclass(frozen=True)
class SampleSizeResult(AsDict):
    """Result of :func:`runs_for_ci_width`.

    ``m`` is the smallest run count (per benchmark and system) whose CI full width of R is
    <= ``width`` (None if not reached with the runs available); ``widths`` lists (m, width)
    for every m tried. ``extrapolated_m`` (only when not reached) is an *estimate*
    ``ceil(m_max · (w_max / width)²)`` from the 1/√m law, not a measurement.
    """

    m: int | None
    width: float
    confidence: float
    method: str
    widths: tuple[tuple[int, float | None], ...]
    m_available: int
    extrapolated_m: int | None
    notes: tuple[str, ...] = ()


def runs_for_ci_width(
    a: Suite,
    b: Suite,
    width: float,
    confidence: float = 0.95,
    n_resamples: int = 2_000,
    method: str = "percentile",
    seed: int | None = None,
    *,
    center: str = "mean",
    m_min: int = 3,
) -> SampleSizeResult:
    """Runs per benchmark needed for a CI of R no wider than ``width`` (docs/methods.md §9).

    Parameters
    ----------
    a, b : array_like or mapping of str to array_like
        Runs of systems A and B: 2-D (benchmark x run) arrays or dicts benchmark -> runs,
        the same benchmarks for both, values > 0, at least ``m_min`` runs per cell.
    width : float
        Largest accepted full width ``high - low`` of the CI of R, > 0.
    confidence : float
        Coverage probability, in (0, 1).
    n_resamples : int
        Bootstrap resamples per m.
    method : {"percentile", "BCa"}
        Interval method.
    seed : int or None
        Seed of the resampling (one generator for all m).
    center : {"mean", "median"}
        Per-benchmark statistic T.
    m_min : int
        First run count tried, at least 2.

    Returns
    -------
    SampleSizeResult
        ``m`` (None if not reached), ``widths`` (m, width) for every m tried and, when not
        reached, ``extrapolated_m``.

    Notes
    -----
    For m = m_min, m_min + 1, ... up to the smallest run count available in any cell, the
    *first* m runs of every (benchmark, system) cell -- the data one would have had after m
    runs -- get a hierarchical bootstrap CI (:func:`gmean_ratio_ci`); the first m whose full
    width ``high - low`` (in units of R, e.g. 0.02 = ±1 percentage point) is <= ``width``
    is returned. Widths are noisy in m, so this is the first crossing, not a guarantee
    for larger m. If no m suffices, ``m`` is None and ``extrapolated_m`` estimates the need.
    ``extrapolated_m = ceil(m_max · (w_max / width)²)`` follows the 1/√m law of the width:
    an estimate, not a measurement.

    References
    ----------
    .. [1] A. C. Davison and D. V. Hinkley, *Bootstrap Methods and their Application*,
       Cambridge University Press, 1997.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> b = rng.lognormal(0, 0.05, (4, 30)); a = 1.1 * rng.lognormal(0, 0.05, (4, 30))
    >>> r = runs_for_ci_width(a, b, 0.05, n_resamples=500, seed=1)
    >>> r.m, [(m, round(w, 4)) for m, w in r.widths]
    (6, [(3, 0.0703), (4, 0.0603), (5, 0.0518), (6, 0.0417)])

    A width the 30 runs cannot reach, and the extrapolation written out:

    >>> r = runs_for_ci_width(a, b, 0.005, n_resamples=500, seed=1)
    >>> r.m, r.extrapolated_m, math.ceil(30 * (r.widths[-1][1] / 0.005) ** 2)
    (None, 868, 868)
    """
    if not float(width) > 0:
        raise ValueError(f"width must be > 0, got {width}")
    c = check_confidence(confidence)
    meth = _check_method(method)
    fn = _center_fn(center)
    if int(m_min) < 2:
        raise ValueError(f"m_min must be >= 2, got {m_min}")
    _, ra, rb = _positive_suites(a, b, min_runs=int(m_min))
    m_available = min(min(x.size, y.size) for x, y in zip(ra, rb, strict=True))
    rng = np.random.default_rng(seed)
    widths: list[tuple[int, float | None]] = []
    notes: list[str] = []
    for m in range(int(m_min), m_available + 1):
        low, high, ci_notes = _bootstrap_log_ratio(
            [x[:m] for x in ra], [y[:m] for y in rb], fn, c, int(n_resamples), meth, rng
        )
        w = None if low is None or high is None else math.exp(high) - math.exp(low)
        widths.append((m, w))
        if w is not None and w <= width:
            return SampleSizeResult(m, float(width), c, meth, tuple(widths), m_available, None)
        if w is None:
            notes.extend(ci_notes)
    last = widths[-1][1]
    extrapolated = None if not last else math.ceil(m_available * (last / width) ** 2)
    notes.insert(
        0,
        f"width {width:g} not reached with the {m_available} runs available"
        + (f" (width {last:.4g} at m = {m_available})" if last else ""),
    )
    return SampleSizeResult(
        m=None,
        width=float(width),
        confidence=c,
        method=meth,
        widths=tuple(widths),
        m_available=m_available,
        extrapolated_m=extrapolated,
        notes=tuple(notes),
    )


# ------------------------------------------------------------------------------ biplot
@dataclass(frozen=True)
class BiplotResult(AsDict):
    """PCA of the centred log matrix (machines x benchmarks), see :func:`biplot`.

    ``scores[i][k]`` (machine i on component k) = (U S)_ik; ``loadings[j][k]`` (benchmark j)
    = V_jk; ``explained`` = s_k² / Σ s² (sums to 1); ``column_means`` = mean log value per
    benchmark. ``scores @ loadings.T + column_means`` reproduces the log matrix.
    """

    row_labels: tuple[str, ...]
    col_labels: tuple[str, ...]
    scores: tuple[tuple[float, ...], ...]
    loadings: tuple[tuple[float, ...], ...]
    explained: tuple[float, ...]
    singular_values: tuple[float, ...]
    column_means: tuple[float, ...]
    notes: tuple[str, ...] = ()


def biplot(
    matrix: ArrayLike,
    row_labels: list[str] | tuple[str, ...],
    col_labels: list[str] | tuple[str, ...],
) -> BiplotResult:
    """Principal components of a machine x benchmark matrix of medians (docs/methods.md §9, [WANG]).

    Parameters
    ----------
    matrix : array_like
        2-D, machines (rows, at least 2) x benchmarks (columns), finite values > 0.
    row_labels : sequence of str
        One label per machine.
    col_labels : sequence of str
        One label per benchmark.

    Returns
    -------
    BiplotResult
        ``scores`` (machines), ``loadings`` (benchmarks), ``explained`` share per
        component, ``singular_values`` and ``column_means`` (mean log value per benchmark).

    Notes
    -----
    ``X = log(matrix)`` (so speed ratios become differences and the unit of each benchmark
    drops out), columns centred: ``X_c = X - mean over machines``. SVD ``X_c = U S Vᵀ``
    (numpy). Scores U·S place machines, loadings V place benchmarks (the "form" biplot:
    distances between machines are preserved); explained share of component k is
    ``s_k² / Σ s²``. Components with ``s_k <= 1e-12 · s_1`` are dropped; each component's
    sign makes its largest-magnitude loading positive. Needs >= 2 machines and positive
    values; raises if all machines are identical (no variance to decompose).
    References
    ----------
    .. [1] K. R. Gabriel, "The biplot graphic display of matrices with application to
       principal component analysis", Biometrika 58(3):453-467, 1971.
       doi:10.1093/biomet/58.3.453

    Examples
    --------
    >>> m = [[1.0, 2.0, 4.0], [2.0, 2.0, 2.0], [1.5, 3.0, 8.0]]
    >>> r = biplot(m, ["A", "B", "C"], ["x", "y", "z"])
    >>> [round(v, 4) for v in r.explained]
    [0.8276, 0.1724]

    The shares from the eigenvalues of the centred log matrix's cross-product, and the
    scores and loadings give back the log matrix:

    >>> xc = np.log(m) - np.log(m).mean(axis=0)
    >>> ev = np.linalg.eigvalsh(xc.T @ xc)[::-1]
    >>> [round(float(v), 4) for v in ev[:2] / ev.sum()]
    [0.8276, 0.1724]
    >>> back = np.array(r.scores) @ np.array(r.loadings).T + r.column_means
    >>> bool(np.allclose(back, np.log(m)))
    True
    """
    x = np.asarray(matrix, dtype=float)
    if x.ndim != 2 or x.shape[0] < 2 or x.shape[1] < 1:
        raise ValueError("matrix must be 2-D: at least 2 machines (rows) x 1 benchmark (column)")
    if len(row_labels) != x.shape[0] or len(col_labels) != x.shape[1]:
        raise ValueError(
            f"labels do not match the matrix shape {x.shape}: "
            f"{len(row_labels)} row and {len(col_labels)} column labels"
        )
    if not np.all(np.isfinite(x)) or np.any(x <= 0):
        raise ValueError("matrix values must be finite and > 0 (logarithms are taken)")
    logs = np.log(x)
    means = logs.mean(axis=0)
    u, s, vt = np.linalg.svd(logs - means, full_matrices=False)
    keep = s > 1e-12 * s[0] if s[0] > 0 else np.zeros_like(s, dtype=bool)
    if not keep.any():
        raise ValueError("all machines have the same values: no variance to decompose")
    u, s, vt = u[:, keep], s[keep], vt[keep]
    signs = np.sign(vt[np.arange(vt.shape[0]), np.argmax(np.abs(vt), axis=1)])
    u, vt = u * signs, vt * signs[:, None]
    return BiplotResult(
        row_labels=tuple(str(r) for r in row_labels),
        col_labels=tuple(str(c) for c in col_labels),
        scores=tuple(tuple(map(float, row)) for row in u * s),
        loadings=tuple(tuple(map(float, row)) for row in vt.T),
        explained=tuple(map(float, s**2 / np.sum(s**2))),
        singular_values=tuple(map(float, s)),
        column_means=tuple(map(float, means)),
        notes=(f"{int(keep.sum())} component(s) with non-zero variance",),
    )
