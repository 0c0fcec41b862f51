"""Normality check: Shapiro-Wilk plus Q-Q plot points (docs/methods.md §5; HOEFLER Rule 6, TOUATI).

benchrun applies it to subsession means (and to raw readings only as a diagnostic). For
large n the test flags trivial departures, so reports show the Q-Q points beside the p-value.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from benchrun.stats.intervals import as_series, opt_float
from benchrun.stats.results import HasPValue

__all__ = ["NormalityResult", "normality"]

#: above this n scipy's p-value for Shapiro-Wilk may be inaccurate (its own warning)
SHAPIRO_MAX_N = 5000


@dataclass(frozen=True)
class NormalityResult(HasPValue):
    """Shapiro-Wilk result and Q-Q points.

    Attributes: ``statistic`` (W), ``p_value`` (None when the test cannot run), ``n``,
    ``alpha``, ``normal`` (p >= alpha, None without a p-value), ``qq_theoretical``
    (standard normal quantiles at Filliben's plotting positions) and ``qq_sample``
    (sorted values, same unit as the data), possibly thinned to ``max_points``; ``notes``.
    """

    statistic: float | None
    p_value: float | None
    n: int
    alpha: float
    normal: bool | None
    qq_theoretical: tuple[float, ...]
    qq_sample: tuple[float, ...]
    method: str = "shapiro-wilk"
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, object]:
        """JSON-serialisable dict."""
        return {
            "statistic": opt_float(self.statistic),
            "p_value": opt_float(self.p_value),
            "n": int(self.n),
            "alpha": float(self.alpha),
            "normal": self.normal,
            "qq_theoretical": [float(v) for v in self.qq_theoretical],
            "qq_sample": [float(v) for v in self.qq_sample],
            "method": self.method,
            "notes": list(self.notes),
        }


@functools.lru_cache(maxsize=256)
def _normal_order_medians(n: int) -> np.ndarray:
    """The theoretical quantiles of ``stats.probplot`` for n values (they depend on n only)."""
    from scipy import stats  # imported when used (0.3-0.5 s; `benchrun show` needs none)

    osm = stats.probplot(np.zeros(n), dist="norm", fit=False)[0]
    osm.setflags(write=False)
    return osm


def normality(
    values: Iterable[float] | np.ndarray, alpha: float = 0.05, *, max_points: int = 1000
) -> NormalityResult:
    """Shapiro-Wilk test of normality with Q-Q plot points (docs/methods.md §5).

    W and p from :func:`scipy.stats.shapiro` (Royston's algorithm); needs n >= 3. Above
    n = 5000 the p-value may be inaccurate (scipy) and any tiny departure is "significant":
    a note says so. Q-Q points from :func:`scipy.stats.probplot` (theoretical N(0, 1)
    quantiles at Filliben's plotting positions vs the sorted values); with more than
    ``max_points`` values, evenly spaced ranks are kept (first and last included).
    All values equal: no test (p None) and a note.

    Parameters
    ----------
    values : array_like of float
        The sample (e.g. subsession means), any unit.
    alpha : float, optional
        Level of the test: ``normal`` is ``p >= alpha`` (default 0.05).
    max_points : int, optional
        Most Q-Q points kept (default 1000, at least 2).

    Returns
    -------
    NormalityResult
        W (``statistic``), ``p_value``, ``n``, ``alpha``, ``normal`` and the Q-Q points
        (``qq_theoretical`` in standard normal units, ``qq_sample`` in the data's unit).

    References
    ----------
    .. [1] S. S. Shapiro and M. B. Wilk, "An analysis of variance test for normality
       (complete samples)", Biometrika 52(3/4):591-611, 1965.
    .. [2] P. Royston, "Remark AS R94: A remark on algorithm AS 181: The W-test for
       normality", Applied Statistics 44(4):547-551, 1995.
    .. [3] J. J. Filliben, "The probability plot correlation coefficient test for
       normality", Technometrics 17(1):111-117, 1975.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import stats
    >>> x = np.random.default_rng(1).normal(10.0, 0.5, 40)
    >>> r = normality(x)
    >>> bool(r.p_value == stats.shapiro(x).pvalue), r.normal, r.n
    (True, True, 40)
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be strictly between 0 and 1, got {alpha!r}")
    if max_points < 2:
        raise ValueError("max_points must be >= 2")
    x = as_series(values)
    n = x.size
    notes: list[str] = []
    osm, osr = _normal_order_medians(n), np.sort(x)  # stats.probplot(x, "norm", fit=False)
    if n > max_points:
        idx = np.unique(np.linspace(0, n - 1, max_points).round().astype(int))
        osm, osr = osm[idx], osr[idx]
    qq_t = tuple(float(v) for v in osm)
    qq_s = tuple(float(v) for v in osr)
    if n < 3:
        notes.append(f"n = {n}: Shapiro-Wilk needs at least 3 values")
        return NormalityResult(None, None, n, alpha, None, qq_t, qq_s, notes=tuple(notes))
    if float(np.ptp(x)) == 0.0:
        notes.append("all values equal: normality cannot be tested")
        return NormalityResult(None, None, n, alpha, None, qq_t, qq_s, notes=tuple(notes))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from scipy import stats

        w, p = stats.shapiro(x)
    if n > SHAPIRO_MAX_N:
        notes.append(
            f"n = {n} > {SHAPIRO_MAX_N}: the p-value may be inaccurate and trivial departures "
            "from normality are flagged; judge by the Q-Q plot"
        )
    w_f, p_f = opt_float(w), opt_float(p)
    return NormalityResult(
        w_f,
        p_f,
        n,
        alpha,
        None if p_f is None else bool(p_f >= alpha),
        qq_t,
        qq_s,
        notes=tuple(notes),
    )
