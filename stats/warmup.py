"""Warm-up (initial transient) detection with MSER-5 (docs/methods.md §2).

Source: [MSER] K. P. White, *An effective truncation heuristic for bias reduction in
simulation output*, Simulation 69 (1997); MSER-5 as in White, Cobb & Spratt (2000).
HOEFLER §4.1.2 "Warmup". Readings before the returned index are flagged ``warmup``:
stored, not analysed. Units: the index counts readings.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from benchrun.stats.autocorr import integrated_autocorrelation_time
from benchrun.stats.intervals import as_series

__all__ = ["mser5", "BATCH"]

#: batch size of MSER-5
BATCH = 5
#: below this many complete batches no truncation is attempted (too little to compare)
MIN_BATCHES = 4
#: fewest kept batch means whose autocorrelation time the significance check estimates
TAU_MIN_BATCHES = 8


def _batch_tau(tail: np.ndarray) -> float:
    """Integrated autocorrelation time of the kept batch means (docs/methods.md §3), >= 1.

    1 (independent) with fewer than ``TAU_MIN_BATCHES`` batch means; capped at a quarter
    of the batches so at least 4 effective batches remain. ``tail`` must not be constant."""
    if tail.size < TAU_MIN_BATCHES:
        return 1.0
    tau = integrated_autocorrelation_time(tail)
    return float(min(max(tau, 1.0), tail.size / 4.0))


def _transient_p(head: np.ndarray, tail_mean: float, tail_sd: float, m: int, tau: float) -> float:
    """Two-sided p-value that the truncated batch means ``head`` come from the steady
    distribution of the m kept ones (mean ``tail_mean``, sd ``tail_sd``; docs/methods.md §2):
    under that null the head's mean has the kept batch means' variance, so ``t =
    (z̄_head - z̄_tail) / (s_tail·sqrt(τ/d + τ/m))`` with d head batch means, τ the kept
    ones' autocorrelation time (m/τ effective batches, docs/methods.md §3) and m/τ - 1 degrees
    of freedom. For a single head batch and τ = 1 this is a prediction interval. The upper
    tail is ``stdtr(df, -|t|)``, the function ``scipy.stats.t.sf(|t|, df)`` evaluates."""
    t = (float(head.mean()) - tail_mean) / (tail_sd * np.sqrt(tau / head.size + tau / m))
    from scipy.special import stdtr  # on first use: reading stored results needs none

    return 2.0 * float(stdtr(max(m / tau - 1.0, 1.0), -abs(t)))


def _mser_curve(values: Iterable[float] | np.ndarray) -> np.ndarray:
    """MSER(d) for d = 0 .. floor(k/2) batches; empty when the series is too short."""
    x = as_series(values)
    k = x.size // BATCH
    if k < MIN_BATCHES:
        return np.empty(0)
    z = x[: k * BATCH].reshape(k, BATCH).mean(axis=1)
    z = z - z.mean()  # shift for accuracy; MSER is shift-invariant
    # suffix sums over batches j >= d (0-based): S1[d] = Σ z_j, S2[d] = Σ z_j^2
    s1 = np.cumsum(z[::-1])[::-1]
    s2 = np.cumsum((z * z)[::-1])[::-1]
    d = np.arange(k // 2 + 1)
    m = k - d  # batches kept
    sse = s2[d] - s1[d] ** 2 / m  # Σ_{j>=d} (z_j - mean_{>=d})^2
    return np.maximum(sse, 0.0) / (m.astype(float) ** 2)


def mser5(values: Iterable[float] | np.ndarray, *, alpha: float | None = 0.01) -> int:
    """Number of warm-up readings to truncate, by MSER-5 (docs/methods.md §2). A multiple of 5.

    Parameters
    ----------
    values : array_like
        Readings in time order, finite.
    alpha : float or None
        Level of benchrun's two checks (step-back and significance, see Notes); None gives
        plain MSER-5.

    Returns
    -------
    int
        Number of readings to flag ``warmup``, a multiple of 5; 0 for series with fewer
        than 4 complete batches (n < 20).

    Notes
    -----
    The n readings are grouped into k = n // 5 batches of 5 (a trailing incomplete batch
    is ignored for the detection) with batch means z_1..z_k. For each candidate
    d = 0, 1, ..., floor(k/2) (truncation over the first half of the series)

        MSER(d) = Σ_{j=d+1}^{k} (z_j - z̄_{>d})^2 / (k - d)^2,

    where z̄_{>d} is the mean of the batch means after d, and d* minimises it (the first
    one on ties). With ``alpha=None`` that is the whole rule and ``5 · d*`` is returned.

    With ``alpha`` (default 0.01) benchrun adds two checks, because plain MSER-5 truncates
    pure noise: on iid normal series it cuts something in 30-58 % of series of 20-400
    readings, and half the series in 58 % of series of 20 (benchmarks/mser5_guard.py):

    1. step-back: past the transient MSER(d) wanders like a random walk and overshoots
       by 3+ batches in about 11 % of series; so, walking back from d*, each batch whose
       mean lies inside ``z̄_{>d*} ± z_{1-alpha/2} · s_{>d*}`` (s = standard deviation of
       the kept batch means) is given back to the steady part, stopping at the first one
       outside (d <= d*). Not done when d* is at the limit (no steady state, see
       ``mser5_at_limit``);
    2. significance: the d truncated batch means are kept out only if their mean differs
       from the kept ones' at level ``alpha / floor(k/2)`` (Bonferroni over the candidate
       d, since d was chosen to make the difference large). Under the null "the head is
       steady" the head has the kept batch means' variance, so the test is
       ``t = (z̄_{<=d} - z̄_{>d*}) / (s_{>d*}·sqrt(τ/d + τ/m))`` with m kept batch means,
       τ their integrated autocorrelation time (docs/methods.md §3; 1 below 8 batch means or
       at the limit) and m/τ - 1 degrees of freedom. It replaced Welch's test of head
       against tail, whose head variance (a decaying transient spreads widely) left a
       4σ transient over 20 of 200 iid readings undetected in 98 % of series; this test
       finds it in 96 % (tests/stats/test_warmup.py), and τ keeps a correlated steady
       series from looking like a transient. Otherwise nothing is truncated.

    Series with fewer than 4 complete batches (n < 20) return 0: too short to tell a
    transient from noise. A result at the end of the admissible range
    (``mser5_at_limit``) means the series may not have reached a steady state at all.

    References
    ----------
    .. [1] K. P. White, "An effective truncation heuristic for bias reduction in simulation
       output", Simulation 69(6):323-334, 1997. doi:10.1177/003754979706900601
    .. [2] K. P. White, M. J. Cobb and S. C. Spratt, "A comparison of five steady-state
       truncation heuristics for simulation", Proceedings of the 2000 Winter Simulation
       Conference, 2000.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(1)
    >>> x = rng.standard_normal(500) + np.where(np.arange(500) < 40, 6.0, 0.0)
    >>> mser5(x), mser5(x, alpha=None)  # planted: 40 readings; plain MSER-5 overshoots
    (40, 45)

    Plain MSER-5 written out over the 100 batch means:

    >>> z = x.reshape(100, 5).mean(axis=1)
    >>> curve = [np.sum((z[d:] - z[d:].mean()) ** 2) / (100 - d) ** 2 for d in range(51)]
    >>> 5 * int(np.argmin(curve))
    45
    """
    curve = _mser_curve(values)
    if curve.size == 0:
        return 0
    d = int(np.argmin(curve))
    if alpha is None or d == 0:
        return BATCH * d
    x = as_series(values)
    k = x.size // BATCH
    z = x[: k * BATCH].reshape(k, BATCH).mean(axis=1)
    head, tail = z[:d], z[d:]
    tail_mean, tail_sd = float(tail.mean()), float(tail.std(ddof=1))
    if tail_sd == 0.0:
        return BATCH * d if np.any(head != tail_mean) else 0
    if d == curve.size - 1:
        # at the limit (no steady state, mser5_at_limit): the tail's spread and its
        # "correlation" are the trend itself, so no step-back (it would give the trend
        # back) and the kept batch means count as independent
        tau = 1.0
    else:
        from scipy.special import ndtri

        limit = float(-ndtri(alpha / 2.0)) * tail_sd  # scipy.stats.norm.isf(alpha / 2)
        while d > 0 and abs(z[d - 1] - tail_mean) < limit:
            d -= 1
        if d == 0:
            return 0
        tau = _batch_tau(tail)
    p = _transient_p(z[:d], tail_mean, tail_sd, tail.size, tau)
    return BATCH * d if p < alpha / (curve.size - 1) else 0


def mser5_at_limit(values: Iterable[float] | np.ndarray) -> bool:
    """True when MSER-5 truncates at the last admissible point (half the series).

    Parameters
    ----------
    values : array_like
        Readings in time order, finite.

    Returns
    -------
    bool
        True when plain MSER-5's d* is floor(k/2), the end of the admissible range: the
        transient may be longer than that, i.e. no steady state was reached
        (docs/methods.md §2). False for series with fewer than 4 complete batches.

    Notes
    -----
    Uses the same MSER(d) curve as :func:`mser5` (``alpha=None``).

    References
    ----------
    .. [1] K. P. White, "An effective truncation heuristic for bias reduction in simulation
       output", Simulation 69(6):323-334, 1997. doi:10.1177/003754979706900601
    .. [2] K. P. White, M. J. Cobb and S. C. Spratt, "A comparison of five steady-state
       truncation heuristics for simulation", Proceedings of the 2000 Winter Simulation
       Conference, 2000.

    Examples
    --------
    A series that climbs all the way never settles; MSER-5 then cuts half of it:

    >>> import numpy as np
    >>> t = np.arange(100.0)
    >>> mser5_at_limit(t), mser5(t)
    (True, 50)
    >>> z = t.reshape(20, 5).mean(axis=1)
    >>> int(np.argmin([np.sum((z[d:] - z[d:].mean()) ** 2) / (20 - d) ** 2 for d in range(11)]))
    10
    """
    curve = _mser_curve(values)
    return bool(curve.size > 2 and int(np.argmin(curve)) == curve.size - 1)
