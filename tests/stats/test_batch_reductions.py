"""stats/autocorr.py's fast reductions (``_fmean``, ``_fvar``, ``_batch_means``), which the
collector uses in place of numpy's calls for speed: equal to numpy's, bit for bit."""

from __future__ import annotations

import math

import numpy as np

from benchrun.stats.autocorr import _batch_means, _fmean, _fvar


def test_fast_mean_and_variance_are_numpys_bit_for_bit() -> None:
    """The helpers that replace np.mean, np.var(ddof=1) and mean(axis=1) of batches."""
    rng = np.random.default_rng(11)
    for n in (2, 3, 7, 8, 9, 16, 127, 128, 129, 1000, 8191, 8192, 8193, 50_001):
        x = rng.lognormal(3.0, 2.0, n) * rng.choice([-1.0, 1.0], n)
        assert _fmean(x) == float(np.mean(x))
        assert _fvar(x) == float(np.var(x, ddof=1))
        assert math.sqrt(_fvar(x)) == float(np.std(x, ddof=1))
        for q in (1, 2, 5, n // 3 or 1):
            h = n // q
            assert np.array_equal(_batch_means(x, h, q), x[: h * q].reshape(h, q).mean(axis=1))
