"""Did a series' level move over the campaign? (a trend or level shift: machine drift)

A workload's mean is a statement about the period it was measured over. When the machine's
speed drifts, the rounds of one workload wander together, and the campaign should say so.
Two numbers describe it:

- the von Neumann ratio ``VN = Σ (x_{i+1} - x_i)² / Σ (x_i - x̄)²`` (J. von Neumann,
  "Distribution of the ratio of the mean square successive difference to the variance",
  Ann. Math. Statist. 12, 1941). For independent values ``E[VN] = 2`` and
  ``Var[VN] = 4(n - 2)/((n + 1)(n - 1))`` (exact for normal data); a slow drift (trend,
  level shift, autocorrelation) makes successive differences small against the spread, so
  VN < 2. The one-sided p-value uses the normal approximation ``z = (VN - 2)/sd``.
- the spread of the level: the means of ``blocks`` consecutive equal blocks, relative to
  the overall mean (e.g. -6 % ... +5 %), which says how large the drift was.

Units: VN and p are dimensionless; block levels relative (0.05 = 5 %).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import ndtr

from benchrun.stats.results import HasPValue

__all__ = ["DriftResult", "drift_check", "von_neumann_ratio"]


def von_neumann_ratio(values: ArrayLike) -> float:
    """``Σ (x_{i+1} - x_i)² / Σ (x_i - x̄)²`` (module docstring); nan for a constant series.

    >>> round(von_neumann_ratio([1.0, 2.0, 3.0, 4.0]), 4)
    0.6
    """
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1 or x.size < 3:
        raise ValueError("need a 1-D series of at least 3 values")
    ss = float(np.sum((x - x.mean()) ** 2))
    if ss == 0.0:
        return math.nan
    return float(np.sum(np.diff(x) ** 2) / ss)


@dataclass(frozen=True)
class DriftResult(HasPValue):
    """Outcome of :func:`drift_check` (see the module docstring).

    Attributes:
        n: values in the series.
        von_neumann: VN; ``p_value`` one-sided (small VN), ``drifted`` = p < alpha.
        level_low, level_high: lowest and highest block mean relative to the overall
            mean, minus 1 (None when the mean is 0).
        blocks: number of blocks the levels come from.
    """

    n: int
    von_neumann: float | None
    p_value: float | None
    drifted: bool
    level_low: float | None
    level_high: float | None
    blocks: int
    alpha: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        """One line for a summary: what moved, by how much, and the test."""
        if not self.drifted:
            return "no drift detected"
        span = ""
        if self.level_low is not None and self.level_high is not None:
            span = (
                f"; means of {self.blocks} consecutive blocks from {100 * self.level_low:+.1f} % "
                f"to {100 * self.level_high:+.1f} % of the overall mean"
            )
        return f"the level moved during the campaign (von Neumann ratio {self.von_neumann:.2f}, p {self.p_value:.2g}{span})"


def drift_check(values: ArrayLike, alpha: float = 0.01, blocks: int = 5) -> DriftResult:
    """Test a series in time order for drift (module docstring) at level ``alpha``.

    Needs at least ``2·blocks`` values for the levels and 10 for the test; with fewer, the
    result says nothing (``drifted`` False, None fields).
    """
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1:
        raise ValueError("values must be one-dimensional")
    if not np.all(np.isfinite(x)):
        raise ValueError("values must be finite")
    n = int(x.size)
    if n < max(10, 2 * blocks):
        return DriftResult(n, None, None, False, None, None, blocks, alpha)
    vn = von_neumann_ratio(x)
    if math.isnan(vn):
        return DriftResult(n, None, None, False, 0.0, 0.0, blocks, alpha)
    sd = math.sqrt(4.0 * (n - 2) / ((n + 1) * (n - 1)))
    p = float(ndtr((vn - 2.0) / sd))
    m = float(x.mean())
    levels = np.array([b.mean() for b in np.array_split(x, blocks)])
    lo = float(levels.min() / m - 1.0) if m != 0 else None
    hi = float(levels.max() / m - 1.0) if m != 0 else None
    return DriftResult(n, vn, p, p < alpha, lo, hi, blocks, alpha)
