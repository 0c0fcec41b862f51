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
  the mean (the series' own, or a reference such as the estimate a table shows; e.g.
  -6 % ... +5 %), which says how large the drift was.

Units: VN and p are dimensionless; block levels relative (0.05 = 5 %).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import ndtr

from benchrun.stats.results import HasPValue

__all__ = ["DriftResult", "drift_check", "von_neumann_ratio"]


def von_neumann_ratio(values: ArrayLike) -> float:
    """``Σ (x_{i+1} - x_i)² / Σ (x_i - x̄)²`` (module docstring); nan for a constant series.

    Parameters
    ----------
    values : array_like
        A series in time order, one-dimensional, at least 3 values (ValueError otherwise).

    Returns
    -------
    float
        The von Neumann ratio VN (dimensionless); nan when all values are equal.

    Notes
    -----
    For independent values ``E[VN] = 2``; a slow drift (trend, level shift, positive
    autocorrelation) makes successive differences small against the spread, so VN < 2,
    and alternation makes VN > 2. :func:`drift_check` turns VN into a p-value.

    References
    ----------
    .. [1] J. von Neumann, "Distribution of the ratio of the mean square successive
       difference to the variance", Annals of Mathematical Statistics 12(4):367-395, 1941.
       doi:10.1214/aoms/1177731677

    Examples
    --------
    >>> round(von_neumann_ratio([1.0, 2.0, 3.0, 4.0]), 4)
    0.6

    The same ratio written out with numpy, for a series that alternates:

    >>> x = np.array([10.1, 9.8, 10.3, 9.9, 10.2, 9.7])
    >>> round(von_neumann_ratio(x), 4)
    3.0
    >>> round(float(np.sum(np.diff(x) ** 2) / np.sum((x - x.mean()) ** 2)), 4)
    3.0
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
        level_low, level_high: lowest and highest block mean relative to the mean
            (the series' own, or the ``reference`` given), minus 1 (None when it is 0).
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

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    def describe(self) -> str:
        """One line for a summary: what moved, by how much, and the test."""
        if not self.drifted:
            return "no drift detected"
        span = ""
        if self.level_low is not None and self.level_high is not None:
            span = (
                f"; means of {self.blocks} consecutive blocks from {100 * self.level_low:+.1f} % "
                f"to {100 * self.level_high:+.1f} % of the mean"
            )
        return f"the level moved during the campaign (von Neumann ratio {self.von_neumann:.2f}, p {self.p_value:.2g}{span})"


def drift_check(
    values: ArrayLike, alpha: float = 0.01, blocks: int = 5, reference: float | None = None
) -> DriftResult:
    """Test a series in time order for drift (module docstring) at level ``alpha``.

    Parameters
    ----------
    values : array_like
        A series in time order (e.g. one workload's rounds), one-dimensional and finite
        (ValueError otherwise), in the metric's unit.
    alpha : float
        Level of the one-sided test; ``drifted`` is ``pvalue < alpha``.
    blocks : int
        Number of consecutive blocks (``numpy.array_split``) whose means give the levels.
    reference : float or None
        The mean the levels are relative to (e.g. the estimate a table shows); None: the
        mean of ``values``.

    Returns
    -------
    DriftResult
        ``von_neumann`` (VN), its one-sided ``pvalue`` (small VN), ``drifted``, and the
        lowest and highest block mean relative to the mean (or ``reference``) (``level_low``,
        ``level_high``; 0.05 = 5 %). Needs at least ``2·blocks`` values for the levels and
        10 for the test; with fewer, the result says nothing (``drifted`` False, None
        fields). A constant series gives VN None and levels 0.

    Notes
    -----
    ``p = Φ((VN - 2)/sd)`` with ``sd = sqrt(4(n - 2)/((n + 1)(n - 1)))``, the normal
    approximation to the null distribution of VN (variance exact for normal data).

    References
    ----------
    .. [1] J. von Neumann, "Distribution of the ratio of the mean square successive
       difference to the variance", Annals of Mathematical Statistics 12(4):367-395, 1941.
       doi:10.1214/aoms/1177731677

    Examples
    --------
    A slow upward trend of about 7 % over twelve rounds:

    >>> x = [10.0, 10.2, 9.9, 10.1, 10.3, 10.2, 10.5, 10.4, 10.6, 10.8, 10.7, 10.9]
    >>> r = drift_check(x)
    >>> r.drifted, round(r.von_neumann, 4), round(r.pvalue, 6)
    (True, 0.3959, 0.001211)
    >>> round(r.level_low, 4), round(r.level_high, 4)
    (-0.0337, 0.0401)

    The p-value from scipy's normal distribution, and the levels from numpy:

    >>> from scipy.stats import norm
    >>> n, vn = len(x), von_neumann_ratio(x)
    >>> round(float(norm.cdf((vn - 2) / math.sqrt(4 * (n - 2) / ((n + 1) * (n - 1))))), 6)
    0.001211
    >>> levels = [b.mean() / np.mean(x) - 1 for b in np.array_split(np.array(x), 5)]
    >>> round(float(min(levels)), 4), round(float(max(levels)), 4)
    (-0.0337, 0.0401)

    Too short a series says nothing:

    >>> drift_check(x[:8]).pvalue is None
    True
    """
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1:
        raise ValueError("values must be one-dimensional")
    if not np.all(np.isfinite(x)):
        raise ValueError("values must be finite")
    n = int(x.size)
    if n < max(10, 2 * blocks):
        return DriftResult(
            n=n,
            von_neumann=None,
            p_value=None,
            drifted=False,
            level_low=None,
            level_high=None,
            blocks=blocks,
            alpha=alpha,
        )
    vn = von_neumann_ratio(x)
    if math.isnan(vn):
        return DriftResult(
            n=n,
            von_neumann=None,
            p_value=None,
            drifted=False,
            level_low=0.0,
            level_high=0.0,
            blocks=blocks,
            alpha=alpha,
        )
    sd = math.sqrt(4.0 * (n - 2) / ((n + 1) * (n - 1)))
    p = float(ndtr((vn - 2.0) / sd))
    m = float(x.mean()) if reference is None else float(reference)
    levels = np.array([b.mean() for b in np.array_split(x, blocks)])
    lo = float(levels.min() / m - 1.0) if m != 0 else None
    hi = float(levels.max() / m - 1.0) if m != 0 else None
    return DriftResult(
        n=n,
        von_neumann=vn,
        p_value=p,
        drifted=p < alpha,
        level_low=lo,
        level_high=hi,
        blocks=blocks,
        alpha=alpha,
    )
