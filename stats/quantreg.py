"""Quantile regression by linear programming (docs/methods.md §7, HOEFLER Rule 8 and Fig. 4).

The τ-th regression quantile minimises the check loss ``Σ_i ρ_τ(y_i - x_iᵀβ)`` with
``ρ_τ(u) = u·(τ - 1[u < 0])`` (Koenker & Bassett, Econometrica 46, 1978). Written as a
linear program with ``u⁺, u⁻ >= 0``:

    minimise   τ·1ᵀu⁺ + (1 - τ)·1ᵀu⁻
    subject to Xβ + u⁺ - u⁻ = y,   β free,

solved with :func:`scipy.optimize.linprog` (HiGHS) in its dual form (Koenker, *Quantile
Regression*, 2005, §6.2): maximise ``yᵀd`` subject to ``Xᵀd = 0`` and ``τ - 1 <= d <= τ``;
β is the vector of Lagrange multipliers of ``Xᵀd = 0``. The dual has n bounded variables
and only p + 1 rows, so HiGHS solves it far faster than the primal (2n + p + 1 variables,
n rows). For benchrun's question -- "how does a
factor (system B instead of A) shift each percentile of the run-time distribution?" -- the
design is ``y = β0 + β1·1[group = B]``; then β0 is a τ-quantile of A and β0 + β1 one of B.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import optimize

from benchrun.stats.compare import _sample
from benchrun.stats.intervals import check_confidence
from benchrun.stats.results import AsDict

#: largest total sample solved by linprog; beyond it the (identical) closed form is used
LP_MAX_OBSERVATIONS = 20_000
DEFAULT_QUANTILES = tuple(round(0.05 * k, 2) for k in range(1, 20))


def _check_tau(tau: float) -> float:
    tau = float(tau)
    if not 0.0 < tau < 1.0:
        raise ValueError(f"quantile must be strictly between 0 and 1, got {tau}")
    return tau


def check_loss(residuals: np.ndarray, tau: float) -> float:
    """Koenker-Bassett check loss ``Σ ρ_τ(u) = Σ u·(τ - 1[u < 0])``."""
    r = np.asarray(residuals, dtype=float)
    return float(np.sum(r * (tau - (r < 0))))


def quantile_fit(y: ArrayLike, x: ArrayLike, tau: float) -> tuple[np.ndarray, float]:
    """τ-th regression quantile of y on covariates x (with intercept), by HiGHS LP.

    ``x`` is 1-D (one covariate) or 2-D (n x p). Returns ``(beta, loss)``: beta =
    [intercept, slope_1, ..., slope_p] in the units of y (per unit of each covariate) and the
    minimal check loss. y and the covariates are standardised before solving (the solution
    is equivariant, so this changes nothing but the solver's numerical tolerances, which are
    absolute) and the coefficients transformed back. The dual LP has n variables and p + 1
    rows (about 0.02 s for n = 5000, p = 1). When the minimiser is not unique any optimal
    vertex may be returned (an optimal vertex interpolates p + 1 observations).
    """
    tau = _check_tau(tau)
    yv = _sample(y, "y", min_n=1)
    xm = np.asarray(x, dtype=float)
    xm = xm[:, None] if xm.ndim == 1 else xm
    if xm.ndim != 2 or xm.shape[0] != yv.size:
        raise ValueError(f"x must have {yv.size} rows (one per observation), got shape {xm.shape}")
    if not np.all(np.isfinite(xm)):
        raise ValueError("x contains NaN or infinite values")
    n, p = xm.shape
    y_c, y_s = float(np.median(yv)), float(np.std(yv)) or 1.0
    x_c = xm.mean(axis=0)
    x_s = xm.std(axis=0)
    x_s[x_s == 0] = 1.0
    design = np.hstack([np.ones((n, 1)), (xm - x_c) / x_s])
    # dual LP: maximise yᵀd s.t. Xᵀd = 0, τ - 1 <= d <= τ; β = multipliers of Xᵀd = 0
    res = optimize.linprog(
        -(yv - y_c) / y_s,
        A_eq=design.T,
        b_eq=np.zeros(p + 1),
        bounds=(tau - 1.0, tau),
        method="highs",
    )
    if res.status != 0:
        raise ValueError(f"linear program for quantile {tau:g} failed: {res.message}")
    b_s = -np.asarray(res.eqlin.marginals, dtype=float)
    slopes = y_s * b_s[1:] / x_s
    intercept = y_c + y_s * b_s[0] - float(np.dot(slopes, x_c))
    beta = np.concatenate([[intercept], slopes])
    return beta, check_loss(yv - np.hstack([np.ones((n, 1)), xm]) @ beta, tau)


@dataclass(frozen=True)
class QuantileRegressionResult(AsDict):
    """Effect of group B (vs A) on each quantile (docs/methods.md §7), in the unit of the data.

    Per quantile τ: ``intercept`` (a τ-quantile of A), ``effect`` β1 (B minus A at that
    quantile), and the bootstrap percentile CI ``[ci_low, ci_high]`` of β1.
    """

    quantiles: tuple[float, ...]
    intercept: tuple[float, ...]
    effect: tuple[float, ...]
    ci_low: tuple[float, ...]
    ci_high: tuple[float, ...]
    confidence: float
    n_boot: int
    n_a: int
    n_b: int
    method: str
    notes: tuple[str, ...] = ()


def _group_quantiles(samples: np.ndarray, taus: np.ndarray) -> np.ndarray:
    """Inverted-CDF quantiles x_(ceil(nτ)) along the last axis: always a check-loss
    minimiser of its group (the smallest one when nτ is an integer)."""
    return np.quantile(samples, taus, axis=-1, method="inverted_cdf")


def quantile_regression(
    a: ArrayLike,
    b: ArrayLike,
    quantiles: tuple[float, ...] | list[float] = DEFAULT_QUANTILES,
    confidence: float = 0.95,
    n_boot: int = 1000,
    seed: int | None = None,
) -> QuantileRegressionResult:
    """Quantile regression of the runs on a binary factor (docs/methods.md §7, HOEFLER Rule 8).

    Parameters
    ----------
    a, b : array_like
        Runs of A and of B, one-dimensional, at least 2 each, in one unit.
    quantiles : sequence of float
        The quantile levels τ, each in (0, 1).
    confidence : float
        Coverage probability of the bootstrap intervals, in (0, 1).
    n_boot : int
        Number of bootstrap resamples, at least 100.
    seed : int or None
        Seed of the bootstrap.

    Returns
    -------
    QuantileRegressionResult
        Per τ: ``intercept`` (a τ-quantile of A), ``effect`` β1 (B minus A at that
        quantile) and its percentile CI ``ci_low``/``ci_high``, in the unit of the data.

    Notes
    -----
    Model ``y = β0(τ) + β1(τ)·1[run is from B]`` for each τ in ``quantiles``, fitted by the
    LP of :func:`quantile_fit` (HiGHS). With this single binary factor the LP's optimum is
    the pair of group quantiles: β0 minimises A's check loss and β0 + β1 B's, so β1 is a
    difference of sample quantiles; when n·τ is an integer a group's minimiser is any value
    between x_(nτ) and x_(nτ+1) and the LP returns one end.

    CIs: stratified bootstrap (the runs of A and of B resampled separately, sizes kept),
    ``n_boot`` resamples, percentile interval of β1. Each resample uses the closed form
    (inverted-CDF quantiles, an optimum of the same LP) instead of re-solving the LP, which
    makes the bootstrap vectorised. Percentile rather than BCa: the jackknife behind BCa's
    acceleration is inconsistent for quantiles.

    Above ``LP_MAX_OBSERVATIONS`` (20 000) runs in total the point estimates also use the
    closed form (noted in ``notes``); the LP would give an optimum of the same value.
    References
    ----------
    .. [1] R. Koenker and G. Bassett, "Regression quantiles", Econometrica 46(1):33-50,
       1978. doi:10.2307/1913643
    .. [2] T. Hoefler and R. Belli, "Scientific benchmarking of parallel computing
       systems: twelve ways to tell the masses when reporting performance results",
       SC '15. doi:10.1145/2807591.2807644

    Examples
    --------
    Seven runs each (n·τ not an integer, so every quantile is unique):

    >>> a = [10.2, 10.4, 9.9, 10.1, 10.3, 10.0, 10.6]
    >>> b = [10.9, 11.2, 10.7, 11.0, 11.5, 10.8, 11.1]
    >>> r = quantile_regression(a, b, quantiles=(0.1, 0.5, 0.9), seed=0)
    >>> [round(v, 4) for v in r.intercept], [round(v, 4) for v in r.effect]
    ([9.9, 10.2, 10.6], [0.8, 0.8, 0.9])

    The same as differences of numpy's group quantiles:

    >>> qa = np.quantile(a, [0.1, 0.5, 0.9], method="inverted_cdf")
    >>> qb = np.quantile(b, [0.1, 0.5, 0.9], method="inverted_cdf")
    >>> [round(float(v), 4) for v in qa], [round(float(v), 4) for v in qb - qa]
    ([9.9, 10.2, 10.6], [0.8, 0.8, 0.9])
    """
    xa, xb = _sample(a, "a", min_n=2), _sample(b, "b", min_n=2)
    c = check_confidence(confidence)
    if int(n_boot) < 100:
        raise ValueError(f"n_boot must be >= 100, got {n_boot}")
    taus = np.array([_check_tau(t) for t in quantiles])
    if taus.size == 0:
        raise ValueError("quantiles must not be empty")
    notes: list[str] = []
    n_a, n_b = xa.size, xb.size
    if n_a + n_b <= LP_MAX_OBSERVATIONS:
        y = np.concatenate([xa, xb])
        group = np.concatenate([np.zeros(n_a), np.ones(n_b)])
        fits = np.array([quantile_fit(y, group, t)[0] for t in taus])
        intercept, effect = fits[:, 0], fits[:, 1]
        method = "linprog (HiGHS)"
    else:
        qa, qb = _group_quantiles(xa, taus), _group_quantiles(xb, taus)
        intercept, effect = qa, qb - qa
        method = "closed form (difference of inverted-CDF group quantiles)"
        notes.append(
            f"{n_a + n_b} runs > {LP_MAX_OBSERVATIONS}: estimates from the closed form that "
            "the LP optimum equals for a binary factor"
        )
    extreme = [t for t in taus if min(n_a, n_b) * min(t, 1 - t) < 1]
    if extreme:
        notes.append(
            f"quantiles {', '.join(f'{t:g}' for t in extreme)} rest on the sample minimum or "
            "maximum of the smaller group: their CIs are not reliable; collect more runs"
        )
    rng = np.random.default_rng(seed)
    lo_q, hi_q = (1 - c) / 2, (1 + c) / 2
    boot = np.empty((taus.size, int(n_boot)))
    batch = max(1, 2_000_000 // (n_a + n_b))
    for start in range(0, int(n_boot), batch):
        k = min(batch, int(n_boot) - start)
        ra = xa[rng.integers(0, n_a, (k, n_a))]
        rb = xb[rng.integers(0, n_b, (k, n_b))]
        boot[:, start : start + k] = _group_quantiles(rb, taus) - _group_quantiles(ra, taus)
    ci = np.quantile(boot, [lo_q, hi_q], axis=1)
    return QuantileRegressionResult(
        quantiles=tuple(map(float, taus)),
        intercept=tuple(map(float, intercept)),
        effect=tuple(map(float, effect)),
        ci_low=tuple(map(float, ci[0])),
        ci_high=tuple(map(float, ci[1])),
        confidence=c,
        n_boot=int(n_boot),
        n_a=n_a,
        n_b=n_b,
        method=method,
        notes=tuple(notes),
    )
