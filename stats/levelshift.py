"""Warm-up or level shift? Where a series' steady part starts (docs/methods.md §2.1).

MSER-5 (:mod:`benchrun.stats.warmup`) cuts the prefix that minimises the spread of what is
kept; it does not ask whether that prefix was *slower* than the rest. A warm-up is a start
that is worse (for a time: larger) than the steady state and decays towards it; a prefix
that is better than what is kept, or a step in the middle, is a level shift: the machine
changed (another process on the CPU, a frequency change), and no single mean describes the
campaign. :func:`steady_start` applies both rules:

1. **direction**: a cut MSER-5 proposes is warm-up only if the cut prefix's mean is worse
   than the kept mean in the metric's direction (``worse="higher"`` for times and sizes);
   otherwise nothing is cut and, when the two levels differ by at least ``min_change``
   and the change-point test of rule 2 confirms the step, it is a level shift at the
   least-squares change point of the series (after any warm-up of the first level);
2. **change point** on the kept series: the self-normalised CUSUM statistic of Shao and
   Zhang (2010) :func:`sn_statistic`, against :func:`sn_threshold`, a critical value
   calibrated by simulation (benchmarks/level_shift.py ``--calibrate``) so that stationary
   iid, lognormal and AR(1) series with φ up to 0.9 exceed it in at most ``ALPHA`` (1 %) of
   series at every length from 20 on; a significant step is a level shift when it is at
   least ``min_change`` (10 %) of the earlier level. A step to a *better* level within the
   first half of the kept series is a start worse than what follows, i.e. warm-up MSER-5
   did not cut (too short or too abrupt for its guard): it is cut, and the rest tested
   once more.

Units: indices count values of the series; changes are relative (0.2 = +20 %).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Literal

import numpy as np

from benchrun.stats.intervals import as_series
from benchrun.stats.warmup import mser5

__all__ = [
    "LevelShift",
    "SteadyStart",
    "sn_statistic",
    "sn_threshold",
    "change_point",
    "steady_start",
    "ALPHA",
    "MIN_CHANGE",
    "MIN_VALUES",
]

#: level of the change-point test (the false level-shift rate of a stationary series)
ALPHA = 0.01
#: smallest relative step called a level shift (smaller moves are left to the drift note
#: and the subsession CI). 10 %: on the 2-CPU VM of docs/methods.md §2.1, A/A campaigns of
#: gzip wandered by steps of up to ~6 % that the test (rightly) finds non-stationary; at
#: 5 % they never certified. 10 % is also what makes a drift material between campaigns
#: (runner/results/conditions.py DRIFT_MATERIAL)
MIN_CHANGE = 0.10
#: fewest values the change-point test looks at
MIN_VALUES = 20
#: (n, critical value of the SN statistic at ALPHA): the largest 99 % quantile over iid
#: normal, lognormal (σ 1) and AR(1) φ 0.5, 0.7 and 0.9 series of length n, 20 000 series
#: each, rounded up (benchmarks/level_shift.py --calibrate; φ 0.9 sets every row); log-log
#: interpolation between the rows, the last row beyond (the limit for independent values
#: is 68.6, Shao & Zhang 2010 Table 1; strong correlation at short lengths needs more)
SN_TABLE: tuple[tuple[int, float], ...] = (
    (20, 325.0),
    (25, 325.0),
    (30, 320.0),
    (40, 315.0),
    (50, 290.0),
    (70, 260.0),
    (100, 225.0),
    (150, 170.0),
    (200, 145.0),
    (300, 118.0),
    (500, 102.0),
    (1000, 87.0),
)

Worse = Literal["higher", "lower"]


@dataclass(frozen=True)
class LevelShift:
    """A level shift in a series (module docstring).

    Attributes:
        at: index of the first value at the new level (0-based, in the series given).
        before, after: means of the values before ``at`` and from ``at`` on (the series'
            unit; for a series of logs, logs).
        change: relative change of the level, ``after / before - 1`` (``exp(after -
            before) - 1`` for a series of logs); 0.2 = +20 %.
        statistic, threshold: the SN statistic and its critical value (over the series
            after any warm-up cut).
        how: ``"prefix"`` (MSER-5 proposed cutting a prefix that was better than the rest)
            or ``"change point"`` (the test on the kept series).
    """

    at: int
    before: float
    after: float
    change: float
    statistic: float | None
    threshold: float | None
    how: str

    def text(self, offset: int = 0) -> str:
        """``level shift at round 18 (+135 %)``; ``offset`` is added to the 0-based
        ``at`` before it is shown 1-based."""
        return f"level shift at round {self.at + offset + 1} ({100 * self.change:+.0f} %)"

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class SteadyStart:
    """What :func:`steady_start` decided: ``warmup`` values to cut, and a level shift in
    what is kept (None when there is none)."""

    warmup: int
    shift: LevelShift | None
    #: MSER-5's proposed cut, rejected because the prefix was not worse than the rest
    rejected_cut: int = 0


def sn_statistic(values: Iterable[float] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Self-normalised CUSUM change-point statistic (Shao & Zhang 2010), vectorised.

    Parameters
    ----------
    values : array_like
        One series (1-D) or several of one length (2-D, one per row), finite, length n >= 3.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        ``G`` (one per series, dimensionless) and ``k`` (the split maximising it: the
        first ``k`` values before, 1 <= k <= n - 1).

    Notes
    -----
    With partial sums ``S_{i,j} = x_i + ... + x_j`` (1-based),
    ``T(k) = n^{-1/2} (S_{1,k} - (k/n) S_{1,n})`` and
    ``V(k) = n^{-2} [Σ_{t<=k} (S_{1,t} - (t/k) S_{1,k})² + Σ_{t>k} (S_{t,n} - ((n-t+1)/(n-k)) S_{k+1,n})²]``,
    ``G = max_k T(k)² / V(k)``. V normalises by the within-segment fluctuation of the
    partial sums, so no long-run variance (bandwidth) is estimated; the limit under a
    constant mean is a functional of a Brownian motion whatever the short-range
    correlation (90/95/99 % quantiles 29.6, 40.1, 68.6). The sums over t are computed
    from prefix sums of ``S_t²`` and ``t·S_t`` (O(n) per series).

    References
    ----------
    .. [1] X. Shao and X. Zhang, "Testing for change points in time series", Journal of
       the American Statistical Association 105(491):1228-1240, 2010.
       doi:10.1198/jasa.2010.tm10103

    Examples
    --------
    >>> g, k = sn_statistic([1.0, 1.2, 0.9, 1.1, 1.0, 2.1, 1.9, 2.0, 2.2, 1.8])
    >>> int(k[0]), round(float(g[0]), 1)
    (5, 847.1)

    The same G written out with numpy, split by split:

    >>> x = np.array([1.0, 1.2, 0.9, 1.1, 1.0, 2.1, 1.9, 2.0, 2.2, 1.8]); n = x.size
    >>> def g_at(k):
    ...     t_k = (x[:k].sum() - k / n * x.sum()) / np.sqrt(n)
    ...     left = sum((x[:t].sum() - t / k * x[:k].sum()) ** 2 for t in range(1, k + 1))
    ...     right = sum((x[t - 1 :].sum() - (n - t + 1) / (n - k) * x[k:].sum()) ** 2
    ...                 for t in range(k + 1, n + 1))
    ...     return t_k**2 / ((left + right) / n**2)
    >>> round(float(max(g_at(k) for k in range(1, n))), 1)
    847.1
    """
    x = np.atleast_2d(np.asarray(values, dtype=np.float64))
    n = x.shape[1]
    if x.ndim != 2 or n < 3:
        raise ValueError("need series of at least 3 values")
    if not np.all(np.isfinite(x)):
        raise ValueError("values must be finite")
    x = x - x.mean(axis=1, keepdims=True)  # G is shift-invariant; centring keeps sums small
    s = np.cumsum(x, axis=1)  # S_{1,t}
    t = np.arange(1, n + 1, dtype=np.float64)
    sq = t * (t + 1.0) * (2.0 * t + 1.0) / 6.0  # Σ_{i<=t} i²
    k = t[:-1]
    sk = s[:, :-1]
    a, b = np.cumsum(s * s, axis=1), np.cumsum(t * s, axis=1)
    left = a[:, :-1] - 2.0 * (sk / k) * b[:, :-1] + (sk / k) ** 2 * sq[:-1]
    r = np.cumsum(x[:, ::-1], axis=1)  # r[u-1] = sum of the last u values
    ar, br = np.cumsum(r * r, axis=1), np.cumsum(t * r, axis=1)
    u = n - k
    ui = (n - 2 - np.arange(n - 1)).astype(np.intp)  # u - 1
    ru = r[:, ui]
    right = ar[:, ui] - 2.0 * (ru / u) * br[:, ui] + (ru / u) ** 2 * sq[ui]
    tk = sk - (k / n) * s[:, -1:]
    v = np.maximum(left + right, 0.0) / n
    with np.errstate(divide="ignore", invalid="ignore"):
        g = np.where(v > 1e-300, tk * tk / v, np.where(np.abs(tk) > 0, np.inf, 0.0))
    return g.max(axis=1), g.argmax(axis=1) + 1


def sn_threshold(n: int) -> float:
    """Critical value of :func:`sn_statistic` at ``ALPHA`` for a series of n values
    (``SN_TABLE``, log-log interpolation; inf below ``MIN_VALUES``)."""
    if n < MIN_VALUES:
        return math.inf
    ns = np.log([row[0] for row in SN_TABLE])
    cs = np.log([row[1] for row in SN_TABLE])
    return float(np.exp(np.interp(math.log(n), ns, cs)))


def _split(x: np.ndarray) -> int:
    """Least-squares change point: the k (1..n-1) maximising ``k(n-k)/n·(x̄_{>k} - x̄_{<=k})²``."""
    n = x.size
    c = np.cumsum(x - x.mean())[:-1]
    k = np.arange(1, n, dtype=np.float64)
    return int(np.argmax(c * c / (k * (n - k)))) + 1


def _change(before: float, after: float, log: bool) -> float:
    if log:
        return math.expm1(after - before)
    if before == 0.0:
        return math.inf if after != before else 0.0
    return (after - before) / abs(before)


def _shift_at(
    x: np.ndarray, k: int, log: bool, how: str, g: float | None, c: float | None
) -> LevelShift:
    before, after = float(x[:k].mean()), float(x[k:].mean())
    return LevelShift(k, before, after, _change(before, after, log), g, c, how)


def _warmup_before(x: np.ndarray, k: int, worse: Worse, alpha: float) -> int:
    """A warm-up at the start of the first level ``x[:k]`` (MSER-5 on it, kept only when
    its prefix is worse than the rest of that level), so that it does not pull the change
    point of a warm-up followed by a step towards the start."""
    d = mser5(x[:k], alpha=alpha) if k >= MIN_VALUES else 0
    if not d:
        return 0
    head, rest = float(x[:d].mean()), float(x[d:k].mean())
    return d if ((head > rest) if worse == "higher" else (head < rest)) else 0


def change_point(
    values: Iterable[float] | np.ndarray, *, log: bool = False, min_change: float = MIN_CHANGE
) -> LevelShift | None:
    """The level shift in a series, or None (module docstring, rule 2).

    Parameters
    ----------
    values : array_like
        Values in time order (finite).
    log : bool
        The values are logs (a per-pass log-ratio series): the change is ``exp(Δ) - 1``.
    min_change : float
        Smallest relative step reported.

    Returns
    -------
    LevelShift or None
        A shift when the SN statistic exceeds :func:`sn_threshold` and the two levels at
        the least-squares split differ by at least ``min_change``; None otherwise and for
        fewer than ``MIN_VALUES`` values.

    References
    ----------
    .. [1] X. Shao and X. Zhang, "Testing for change points in time series", Journal of
       the American Statistical Association 105(491):1228-1240, 2010.
       doi:10.1198/jasa.2010.tm10103

    Examples
    --------
    >>> rng = np.random.default_rng(3)
    >>> x = 100 * (1 + 0.02 * rng.standard_normal(60)) * np.where(np.arange(60) < 40, 1.0, 1.2)
    >>> s = change_point(x)
    >>> s.at, round(s.change, 2), s.text()
    (40, 0.2, 'level shift at round 41 (+20 %)')
    >>> change_point(100 * (1 + 0.02 * rng.standard_normal(60))) is None
    True
    """
    x = as_series(values)
    n = x.size
    if n < MIN_VALUES:
        return None
    g = float(sn_statistic(x)[0][0])
    c = sn_threshold(n)
    if not g > c:
        return None
    s = _shift_at(x, _split(x), log, "change point", g, c)
    return s if abs(s.change) >= min_change else None


def steady_start(
    values: Iterable[float] | np.ndarray,
    *,
    worse: Worse | None,
    warmup: bool = True,
    warmup_alpha: float = 0.001,
    log: bool = False,
    min_change: float = MIN_CHANGE,
    step_warmup: bool = True,
) -> SteadyStart:
    """Warm-up to cut and level shift of a series of per-round values (module docstring).

    Parameters
    ----------
    values : array_like
        Per-round values in time order, finite.
    worse : {"higher", "lower"} or None
        Which way a warm-up lies: ``"higher"`` for metrics where lower is better (times,
        sizes), ``"lower"`` where higher is better; None (a log-ratio series, whose prefix
        can lie either way) accepts MSER-5's cut as before.
    warmup : bool
        Look for warm-up with MSER-5 at all (False: only the change-point test).
    warmup_alpha : float
        Level of MSER-5's significance check (``stats.warmup.mser5``).
    log, min_change
        As in :func:`change_point`.
    step_warmup : bool
        A step to a better level in the first half of the kept values is warm-up, cut
        (True, the default); False reports it as a level shift (when nothing may be cut).

    Returns
    -------
    SteadyStart
        ``warmup`` values to cut (a multiple of 5, or 0), ``shift`` with ``at`` counted in
        ``values`` (not in the kept part), and ``rejected_cut`` (MSER-5's proposal when the
        direction rule refused it).

    References
    ----------
    .. [1] K. P. White, "An effective truncation heuristic for bias reduction in simulation
       output", Simulation 69(6):323-334, 1997. doi:10.1177/003754979706900601
    .. [2] X. Shao and X. Zhang, "Testing for change points in time series", Journal of
       the American Statistical Association 105(491):1228-1240, 2010.
       doi:10.1198/jasa.2010.tm10103

    Examples
    --------
    Seventeen quiet rounds, then a disturbance (the issue's campaign): MSER-5 alone would
    cut the quiet rounds as warm-up and keep the disturbed ones.

    >>> rng = np.random.default_rng(0)
    >>> x = np.r_[115 + 2 * rng.standard_normal(17), 270 + 8 * rng.standard_normal(35)]
    >>> mser5(x, alpha=0.001)
    20
    >>> s = steady_start(x, worse="higher")
    >>> s.warmup, s.rejected_cut, s.shift.at, s.shift.how
    (0, 20, 17, 'prefix')

    A real warm-up (slower first rounds) is cut:

    >>> y = 100 * (1 + 0.5 * np.exp(-np.arange(60) / 3.0) + 0.01 * rng.standard_normal(60))
    >>> s = steady_start(y, worse="higher")
    >>> s.warmup > 0, s.shift is None
    (True, True)
    """
    x = as_series(values)
    d = mser5(x, alpha=warmup_alpha) if warmup else 0
    rejected = 0
    if d and worse is not None:
        head, kept = float(x[:d].mean()), float(x[d:].mean())
        if (head <= kept) if worse == "higher" else (head >= kept):
            rejected, d = d, 0
            w = _warmup_before(x, max(rejected, _split(x)), worse, warmup_alpha)
            k = w + _split(x[w:])
            for _ in range(3):
                # a split to a better level in the first half is a warm-up MSER-5's guard
                # left (too short for it): cut it and split the rest again
                before, after = float(x[w:k].mean()), float(x[k:].mean())
                if (after < before) != (worse == "higher") or 2 * k > x.size:
                    break
                w = k
                k = w + _split(x[w:])
            before, after = float(x[w:k].mean()), float(x[k:].mean())
            # MSER-5's guard is not calibrated for strongly correlated series (AR(1) φ 0.9:
            # 3 % false cuts at 100 rounds), so the step must pass the change-point test too
            # (over the rounds after the first level's start, as plain MSER-5 sees it, so
            # that a warm-up before the step does not hide it: high-low-high is no step)
            v = max(w, mser5(x[:k], alpha=None)) if k >= MIN_VALUES else w
            g = float(sn_statistic(x[v:])[0][0]) if x.size - v >= 3 else 0.0
            c = sn_threshold(x.size - v)
            change = _change(before, after, log)
            if g > c and abs(change) >= min_change and (after > before) == (worse == "higher"):
                return SteadyStart(
                    w, LevelShift(k, before, after, change, g, c, "prefix"), rejected
                )
    shift = change_point(x[d:], log=log, min_change=min_change)
    if (
        step_warmup
        and shift is not None
        and worse is not None
        and (shift.change < 0) == (worse == "higher")
        and 2 * shift.at <= x.size - d
    ):
        # a step to a better level in the first half of the kept rounds: a start that was
        # worse than what follows, i.e. warm-up that MSER-5 did not cut (a short or abrupt
        # one); cut it and look again
        d += shift.at
        shift = change_point(x[d:], log=log, min_change=min_change)
    if shift is not None and d:
        shift = LevelShift(
            shift.at + d,
            shift.before,
            shift.after,
            shift.change,
            shift.statistic,
            shift.threshold,
            shift.how,
        )
    return SteadyStart(d, shift, rejected)
