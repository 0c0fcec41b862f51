"""Warm-up (initial transient) detection with MSER-5 (METHODS.md §2).

Source: [MSER] K. P. White, *An effective truncation heuristic for bias reduction in
simulation output*, Simulation 69 (1997); MSER-5 as in White, Cobb & Spratt (2000).
HOEFLER §4.1.2 "Warmup". Readings before the returned index are flagged ``warmup``:
stored, not analysed. Units: the index counts readings.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from stats.intervals import as_series

__all__ = ["mser5", "BATCH"]

#: batch size of MSER-5
BATCH = 5
#: below this many complete batches no truncation is attempted (too little to compare)
MIN_BATCHES = 4


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


def mser5(values: Iterable[float] | np.ndarray) -> int:
    """Number of warm-up readings to truncate, by MSER-5 (METHODS.md §2). A multiple of 5.

    The n readings are grouped into k = n // 5 batches of 5 (a trailing incomplete batch
    is ignored for the detection) with batch means z_1..z_k. For each candidate
    d = 0, 1, ..., floor(k/2) (truncation over the first half of the series)

        MSER(d) = Σ_{j=d+1}^{k} (z_j - z̄_{>d})^2 / (k - d)^2,

    where z̄_{>d} is the mean of the batch means after d. The d* minimising MSER (the first
    one on ties) is chosen and ``5 · d*`` readings are truncated. Series with fewer than
    4 complete batches (n < 20) return 0: too short to tell a transient from noise.
    A result at the end of the admissible range (``mser5_at_limit``) means the series may
    not have reached a steady state at all.
    """
    curve = _mser_curve(values)
    if curve.size == 0:
        return 0
    return BATCH * int(np.argmin(curve))


def mser5_at_limit(values: Iterable[float] | np.ndarray) -> bool:
    """True when MSER-5 truncates at the last admissible point (half the series): the
    transient may be longer than that, i.e. no steady state was reached (METHODS.md §2)."""
    curve = _mser_curve(values)
    return bool(curve.size > 2 and int(np.argmin(curve)) == curve.size - 1)
