"""Series of known truth shared by the stats tests."""

from __future__ import annotations

import numpy as np
from scipy import signal


def ar1(phi: float, n: int, reps: int, seed: int) -> np.ndarray:
    """reps stationary AR(1) series of length n (unit innovation variance, mean 0)."""
    rng = np.random.default_rng(seed)
    e = rng.standard_normal((reps, n))
    x0 = rng.standard_normal(reps) / np.sqrt(1.0 - phi * phi)
    y, _ = signal.lfilter([1.0], [1.0, -phi], e, axis=1, zi=(phi * x0)[:, None])
    return y
