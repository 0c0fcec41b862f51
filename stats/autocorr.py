"""Autocorrelation and subsession (batch) means (docs/methods.md §3).

Readings taken back to back are often autocorrelated, which makes a CI over raw readings
far too narrow. This module measures the correlation and chooses the *subsession size* q:
the series is cut into non-overlapping batches of q consecutive readings, the incomplete
trailing batch is left out of the analysis, and the batch ("subsession") means are treated
as independent observations (PILOT "Autocorrelation Detection and Mitigation").

Two rules are provided:

- :func:`pilot_subsession_size`: Pilot's rule, reproduced exactly (docs/methods.md §12).
- :func:`subsession_size`: benchrun's own rule, chosen by simulation (docs/subsessions.md):
  an integrated autocorrelation time τ with Sokal's automatic window sets the smallest
  admissible q, the number of subsessions is kept between 8 and 20, a lag-1 check on the
  subsession means doubles q if they are still correlated, and a series too short for its
  correlation time is declared "not enough data" with an estimate of the readings needed.

Units: q and counts are in readings; τ is in readings (lags); correlations have no unit.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from benchrun.stats.intervals import as_series, check_confidence, normal_quantile, opt_float

__all__ = [
    "SubsessionChoice",
    "autocorrelation",
    "acf",
    "integrated_autocorrelation_time",
    "subsession_means",
    "subsession_size",
    "pilot_subsession_size",
]

#: defaults of benchrun's rule (see docs/subsessions.md for the simulation behind them)
TAU_FACTOR = 5.0  # q >= 1 + c·(τ - 1)
SOKAL_WINDOW = 5.0  # smallest M with M >= 5·τ(M)
MIN_SUBSESSIONS = 8
MAX_SUBSESSIONS = 20


def _fmean(a: np.ndarray) -> float:
    """``float(np.mean(a))`` of a float64 array, bit for bit (numpy's mean is the same
    pairwise ``add.reduce`` divided by the count), without np.mean's Python overhead."""
    return float(np.add.reduce(a, axis=None)) / a.size


def _fvar(a: np.ndarray) -> float:
    """``float(np.var(a, ddof=1))`` of a float64 array (>= 2 values), bit for bit: numpy's
    two passes (mean, then the sum of squared deviations over n - 1) without its overhead."""
    dev = a - np.add.reduce(a, axis=None) / a.size
    return float(np.add.reduce(dev * dev, axis=None)) / (a.size - 1)


def _batch_means(x: np.ndarray, h: int, q: int) -> np.ndarray:
    """``x[:h*q].reshape(h, q).mean(axis=1)`` bit for bit (the same row sums over q)."""
    means: np.ndarray = np.add.reduce(x[: h * q].reshape(h, q), axis=1) / q
    return means


def _centre(x: np.ndarray) -> np.ndarray:
    """Deviations from the mean, with a second pass for accuracy (NumAcc-style data)."""
    m = _fmean(x)
    d = x - m
    return d - _fmean(d)


def autocorrelation(values: Iterable[float] | np.ndarray, lag: int = 1) -> float | None:
    """Lag-k sample autocorrelation (docs/methods.md §3; NIST StRD definition).

    Parameters
    ----------
    values : array_like
        A series in time order, finite.
    lag : int
        The lag k, in 1..n-1 (ValueError otherwise), in readings.

    Returns
    -------
    float or None
        ``r_k`` (no unit); None when every value is equal (0/0).

    Notes
    -----
    ``r_k = Σ_{i=1}^{n-k} (x_i - m)(x_{i+k} - m) / Σ_{i=1}^{n} (x_i - m)^2`` with m the mean
    of all n values.

    References
    ----------
    .. [1] G. E. P. Box and G. M. Jenkins, *Time Series Analysis: Forecasting and Control*,
       Holden-Day, 1970.
    .. [2] NIST Statistical Reference Datasets, univariate summary statistics (certified
       lag-1 autocorrelation). https://www.itl.nist.gov/div898/strd/

    Examples
    --------
    >>> autocorrelation([1.0, 2.0, 3.0, 4.0, 5.0])
    0.4

    docs/methods.md §12: Pilot's 48 Ferrari readings have lag-1 r 0.63655574361384437;
    the same with numpy:

    >>> x = np.array([1.21, 1.67, 1.71, 1.53, 2.03, 2.15, 1.88, 2.02, 1.75, 1.84, 1.61,
    ...               1.35, 1.43, 1.64, 1.52, 1.44, 1.17, 1.42, 1.64, 1.86, 1.68, 1.91,
    ...               1.73, 2.18, 2.27, 1.93, 2.19, 2.04, 1.92, 1.97, 1.65, 1.71, 1.89,
    ...               1.70, 1.62, 1.48, 1.55, 1.39, 1.45, 1.67, 1.62, 1.77, 1.88, 1.82,
    ...               1.93, 2.09, 2.24, 2.16])
    >>> round(autocorrelation(x), 12)
    0.636555743614
    >>> d = x - x.mean()
    >>> round(float(np.dot(d[:-1], d[1:]) / np.dot(d, d)), 12)
    0.636555743614
    """
    x = as_series(values)
    n = x.size
    if int(lag) != lag or not 1 <= lag < n:
        raise ValueError(f"lag must be an integer in 1..{n - 1} for {n} values, got {lag!r}")
    d = _centre(x)
    den = float(np.dot(d, d))
    if den == 0.0:
        return None
    return float(np.dot(d[:-lag], d[lag:]) / den)


def autocovariance_sums(d: np.ndarray) -> np.ndarray:
    """``Σ_i d_i d_{i+k}`` for k = 0..n-1 of centred data ``d`` by FFT (zero-padded, so not
    circular): the numerators of the sample acf, shared by :func:`subsession_size` and
    :func:`~benchrun.stats.uncertified.uncertified_mean_ci` when one caller needs both
    (the collector)."""
    n = d.size
    from scipy import fft  # on first use: reading stored results needs none

    size = fft.next_fast_len(2 * n - 1, real=True)
    f = fft.rfft(d, size)
    c: np.ndarray = fft.irfft(f.real * f.real + f.imag * f.imag, size)[:n]
    return c


def _acf_centred(d: np.ndarray, max_lag: int) -> np.ndarray:
    """r_0..r_max_lag of centred data ``d`` by FFT (zero-padded, so not circular)."""
    c = autocovariance_sums(d)[: max_lag + 1]
    return c / c[0]


def acf(values: Iterable[float] | np.ndarray, max_lag: int | None = None) -> np.ndarray:
    """Sample autocorrelation function r_0 = 1, r_1, ..., r_max_lag (docs/methods.md §3).

    Parameters
    ----------
    values : array_like
        A series in time order, finite, not all equal (ValueError otherwise).
    max_lag : int, optional
        Largest lag, in 0..n-1; defaults to n - 1.

    Returns
    -------
    ndarray
        ``r_0, ..., r_max_lag`` (no unit), ``r_0 = 1``.

    Notes
    -----
    Same estimator as :func:`autocorrelation` (mean of all n values, denominator the total
    sum of squares), computed for all lags at once by FFT in O(n log n).

    References
    ----------
    .. [1] G. E. P. Box and G. M. Jenkins, *Time Series Analysis: Forecasting and Control*,
       Holden-Day, 1970.
    .. [2] NIST Statistical Reference Datasets, univariate summary statistics (certified
       lag-1 autocorrelation). https://www.itl.nist.gov/div898/strd/

    Examples
    --------
    >>> acf([1.0, 2.0, 3.0, 4.0, 5.0]).round(6).tolist()
    [1.0, 0.4, -0.1, -0.4, -0.4]

    The direct O(n²) sums with ``numpy.correlate``:

    >>> x = np.array([3.1, 2.7, 3.4, 3.9, 3.0, 2.6, 3.3, 3.8])
    >>> d = x - x.mean()
    >>> bool(np.allclose(acf(x, 4), np.correlate(d, d, "full")[7:12] / np.dot(d, d)))
    True
    """
    x = as_series(values)
    n = x.size
    if max_lag is None:
        max_lag = n - 1
    if int(max_lag) != max_lag or not 0 <= max_lag < n:
        raise ValueError(f"max_lag must be an integer in 0..{n - 1}, got {max_lag!r}")
    d = _centre(x)
    if not np.any(d):
        raise ValueError("all values are equal: the autocorrelation is undefined")
    return _acf_centred(d, int(max_lag))


def _sokal(r: np.ndarray, window: float) -> tuple[float, int, bool]:
    """(τ, M, converged) from an acf r_0..r_L: τ(M) = 1 + 2 Σ_{k=1}^{M} r_k at the smallest
    M with M >= window·τ(M) (Sokal's automatic windowing); if no M <= L qualifies, the value
    at M = L (a lower bound for a positively correlated series) and converged=False."""
    lags = r.size - 1
    if lags < 1:
        return 1.0, 0, False
    taus = 1.0 + 2.0 * np.cumsum(r[1:])
    m = np.arange(1, lags + 1)
    ok = np.flatnonzero(m >= window * taus)
    if ok.size:
        i = int(ok[0])
        return float(taus[i]), i + 1, True
    return float(taus[-1]), lags, False


def integrated_autocorrelation_time(
    values: Iterable[float] | np.ndarray, window: float = SOKAL_WINDOW
) -> float:
    """Integrated autocorrelation time τ = 1 + 2 Σ_{k>=1} ρ_k, in readings (docs/methods.md §3).

    Parameters
    ----------
    values : array_like
        A series in time order, finite, at least 3 values, not all equal (ValueError
        otherwise).
    window : float
        Sokal's window constant c: the sum runs to the smallest M with ``M >= c·τ(M)``.

    Returns
    -------
    float
        τ, in readings; n/τ is the effective sample size.

    Notes
    -----
    Estimated from the sample acf (:func:`acf`) with Sokal's automatic window: the sum runs
    to the smallest M with ``M >= window · τ(M)`` (default window 5). Lags up to n/2 are
    searched; when none qualifies the series is too short for its correlation time and the
    value at M = n/2 is returned (an underestimate; :func:`subsession_size` reports this
    case). The variance of the mean is ``σ²·τ/n``, so n/τ is the effective sample size. For
    AR(1), τ = (1+φ)/(1-φ).

    References
    ----------
    .. [1] A. D. Sokal, "Monte Carlo methods in statistical mechanics: foundations and new
       algorithms", in *Functional Integration: Basics and Applications* (Cargèse, 1996),
       Plenum, 1997.

    Examples
    --------
    An AR(1) series with φ = 0.5, whose τ is (1 + 0.5)/(1 - 0.5) = 3:

    >>> from scipy.signal import lfilter
    >>> e = np.random.default_rng(0).standard_normal(20000)
    >>> y = lfilter([1.0], [1.0, -0.5], e)
    >>> tau = integrated_autocorrelation_time(y)
    >>> round(tau, 2)
    3.19

    The same window written out over the acf:

    >>> taus = 1 + 2 * np.cumsum(acf(y, 10000)[1:])
    >>> m = int(np.flatnonzero(np.arange(1, 10001) >= 5 * taus)[0])
    >>> bool(abs(taus[m] - tau) < 1e-12)
    True
    """
    x = as_series(values)
    if x.size < 3:
        raise ValueError("at least 3 values are needed to estimate an autocorrelation time")
    tau, _, _ = _sokal(acf(x, x.size // 2), window)
    return tau


def subsession_means(values: Iterable[float] | np.ndarray, q: int) -> np.ndarray:
    """Means of consecutive non-overlapping batches of q readings (docs/methods.md §3).

    Parameters
    ----------
    values : array_like
        Readings in time order, finite.
    q : int
        Subsession size in readings, 1 <= q <= n (ValueError otherwise).

    Returns
    -------
    ndarray
        The ``n // q`` subsession means, in the unit of ``values``.

    Notes
    -----
    The incomplete trailing batch (n mod q readings) is dropped from the analysis. The mean
    of the returned means equals the mean of the first ``(n // q) · q`` readings.

    References
    ----------
    .. [1] Y. Li, Y. Gupta, E. L. Miller and D. D. E. Long, "Pilot: a framework that
       understands how to do performance benchmarks the right way", 24th IEEE MASCOTS, 2016.
       doi:10.1109/MASCOTS.2016.31

    Examples
    --------
    >>> x = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
    >>> subsession_means(x, 3).tolist()
    [2.0, 5.0]
    >>> float(np.mean(subsession_means(x, 3))) == float(np.mean(x[:6]))
    True
    """
    x = as_series(values)
    if int(q) != q or q < 1:
        raise ValueError(f"subsession size q must be an integer >= 1, got {q!r}")
    q = int(q)
    h = x.size // q
    if h == 0:
        raise ValueError(f"subsession size q = {q} is larger than the {x.size} readings")
    return x[: h * q].reshape(h, q).mean(axis=1)


@dataclass(frozen=True)
class SubsessionChoice:
    """The subsession size chosen for one series and why (docs/methods.md §3).

    Attributes:
        q: subsession size in readings (the one used, or the one that would be needed).
        n_subsessions: complete subsessions of size q in the series (n // q).
        n: readings in the series; ``n_used = q · n_subsessions`` enter the analysis.
        lag1: lag-1 autocorrelation of the subsession means (None with < 3 of them).
        tau: integrated autocorrelation time of the readings (None if not estimated).
        ess: effective sample size n / τ (None if τ was not estimated).
        enough: True when a CI over the subsession means can be trusted.
        readings_needed: estimate of the readings that would be enough (None if enough).
        method: "benchrun", "pilot" or "deterministic".
        notes: human-readable explanations.
        q_min: smallest admissible size from τ alone (1 = no measurable correlation).
    """

    q: int
    n_subsessions: int
    n: int
    lag1: float | None
    tau: float | None
    ess: float | None
    enough: bool
    readings_needed: int | None
    method: str
    notes: tuple[str, ...] = ()
    q_min: int = 1

    @property
    def n_used(self) -> int:
        """Readings inside complete subsessions."""
        return self.q * self.n_subsessions

    def to_dict(self) -> dict[str, object]:
        """JSON-serialisable dict."""
        return {
            "q": int(self.q),
            "n_subsessions": int(self.n_subsessions),
            "n": int(self.n),
            "n_used": int(self.n_used),
            "lag1": opt_float(self.lag1),
            "tau": opt_float(self.tau),
            "ess": opt_float(self.ess),
            "enough": bool(self.enough),
            "readings_needed": None if self.readings_needed is None else int(self.readings_needed),
            "method": self.method,
            "notes": list(self.notes),
            "q_min": int(self.q_min),
        }


def _lag1_of_means(b: np.ndarray, centre: float) -> float | None:
    d = b - centre
    den = float(np.dot(d, d))
    if b.size < 3 or den == 0.0:
        return None
    return float(np.dot(d[:-1], d[1:]) / den)


def subsession_size(
    values: Iterable[float] | np.ndarray,
    confidence: float = 0.95,
    *,
    tau_factor: float = TAU_FACTOR,
    min_subsessions: int = MIN_SUBSESSIONS,
    max_subsessions: int = MAX_SUBSESSIONS,
    window: float = SOKAL_WINDOW,
    tau_upper: float | None = None,
) -> SubsessionChoice:
    """benchrun's subsession size rule (docs/methods.md §3; simulation in docs/subsessions.md).

    Parameters
    ----------
    values : array_like
        Readings in time order (or per-round values), finite.
    confidence : float
        Level of the CI the subsessions are for; also sets the lag-1 check (step 4).
    tau_factor : float
        c in ``q_min = 1 + ceil(c·(τ - 1))``, > 0.
    min_subsessions, max_subsessions : int
        Fewest subsessions that count as enough data, and the usual most (2 <= min <= max).
    window : float
        Sokal's window constant for τ, > 0.
    tau_upper : float, optional
        One-sided confidence level of an upper bound on τ used instead of τ (None = off).

    Returns
    -------
    SubsessionChoice
        ``q``, ``n_subsessions``, ``lag1`` of the subsession means, ``tau``, ``ess``,
        ``enough`` and, when not enough, ``readings_needed``; ``notes`` say why.

    Notes
    -----
    1. τ = integrated autocorrelation time (:func:`integrated_autocorrelation_time`, Sokal
       window 5, lags up to n/2). If the window never closes, the series is too short to
       measure its correlation time: not enough data.
    2. Smallest admissible size ``q_min = 1 + ceil(c · (τ - 1))`` (c = ``tau_factor`` = 5;
       1 when τ <= 1). For AR(1) the variance of batch means of size q underestimates the
       variance of the mean by ``Σ_k 2kρ_k / (qτ)``, about 1/(2c) = 10 % at q = q_min.
    3. ``q = max(q_min, ceil(n / h_max))`` with ``h_max = max(max_subsessions, ⌊n^(1/3)⌋)``:
       few subsessions (20 up to n = 8000, then growing slowly), so q grows with n and that
       bias shrinks (Schmeiser's 10-30 batches). The t quantile with h - 1 degrees of
       freedom accounts for the few subsessions; for independent readings the CI is about
       5 % wider than the t-interval over raw readings (20 subsessions).
    4. Lag-1 check of the h subsession means (centred on their mean): if
       ``r_1 > -1/h + z_{(1+conf)/2}/√h`` (they still look correlated at level
       1 - confidence) q is doubled while >= ``min_subsessions`` remain.
    5. Enough data iff at least ``min_subsessions`` (8) subsessions of size q fit and the
       check passed; otherwise ``enough=False`` and ``readings_needed`` =
       ``min_subsessions · q`` for the q that would be needed (never <= n).

    ``tau_upper`` (a one-sided confidence level, e.g. 0.95; None = off) replaces τ in step
    2 by an upper confidence bound ``max(τ, 1)·(1 + z·sqrt(2(2M + 1)/n))``, from the
    large-sample variance of the windowed estimator, ``var(τ̂) ≈ 2(2M + 1)τ²/n`` with M
    the window (Madras & Sokal 1988; Sokal 1996, eq. 3.19). A short
    series underestimates τ more often than not, and a rule that is re-applied as data
    arrives (the adaptive controller, docs/methods.md §10) accepts the series the first time τ̂
    happens to be low; the bound makes that acceptance wait until τ is known well
    enough. It costs data: independent readings need about 50 before 8 subsessions fit.
    The notes name what made the subsessions longer than one reading: "readings are
    autocorrelated (tau = 2.31)" when τ̂ itself exceeds 1, "independence not shown (tau =
    0.94, upper bound 1.17 > 1)" when only the upper bound does.

    The same rule serves series of per-round values (one reading per round, §3 "Rounds").
    All values equal -> q = 1, method "deterministic". Fewer than ``min_subsessions``
    readings -> not enough data.

    References
    ----------
    .. [1] A. D. Sokal, "Monte Carlo methods in statistical mechanics: foundations and new
       algorithms", in *Functional Integration: Basics and Applications* (Cargèse, 1996),
       Plenum, 1997.
    .. [2] N. Madras and A. D. Sokal, "The pivot algorithm: a highly efficient Monte Carlo
       method for the self-avoiding walk", Journal of Statistical Physics 50:109-186, 1988.
    .. [3] B. Schmeiser, "Batch size effects in the analysis of simulation output",
       Operations Research 30(3):556-568, 1982.

    Examples
    --------
    200 independent readings: no measurable correlation, so q only keeps the count of
    subsessions at 20:

    >>> x = np.random.default_rng(1).normal(10.0, 1.0, 200)
    >>> s = subsession_size(x)
    >>> s.q, s.n_subsessions, s.enough, s.q_min
    (10, 20, True, 1)

    The lag-1 r of the 20 subsession means, with numpy, passes the check of step 4:

    >>> b = x.reshape(20, 10).mean(axis=1)
    >>> d = b - b.mean()
    >>> r1 = float(np.dot(d[:-1], d[1:]) / np.dot(d, d))
    >>> from scipy import stats
    >>> round(r1, 4), round(s.lag1, 4), r1 <= -1 / 20 + stats.norm.ppf(0.975) / 20**0.5
    (-0.3006, -0.3006, True)
    """
    c = check_confidence(confidence)
    x = as_series(values)
    return choose_subsession_size(
        x,
        _centre(x),
        None,
        c,
        tau_factor=tau_factor,
        min_subsessions=min_subsessions,
        max_subsessions=max_subsessions,
        window=window,
        tau_upper=tau_upper,
    )


def choose_subsession_size(
    x: np.ndarray,
    d: np.ndarray,
    sums: np.ndarray | None,
    c: float,
    *,
    tau_factor: float = TAU_FACTOR,
    min_subsessions: int = MIN_SUBSESSIONS,
    max_subsessions: int = MAX_SUBSESSIONS,
    window: float = SOKAL_WINDOW,
    tau_upper: float | None = None,
) -> SubsessionChoice:
    """:func:`subsession_size` of the validated series ``x`` (:func:`as_series`), with
    ``d = _centre(x)``, ``sums`` its :func:`autocovariance_sums` (None: computed here when
    needed) and ``c`` a checked confidence: for a caller that also needs ``d`` or ``sums``
    (the collector), so they are computed once."""
    n = x.size
    if min_subsessions < 2 or max_subsessions < min_subsessions:
        raise ValueError("need 2 <= min_subsessions <= max_subsessions")
    if tau_factor <= 0 or window <= 0:
        raise ValueError("tau_factor and window must be > 0")
    if not np.any(d):
        note = "all readings equal: no variation, subsessions of 1 reading"
        return SubsessionChoice(
            q=1,
            n_subsessions=n,
            n=n,
            lag1=None,
            tau=None,
            ess=None,
            enough=True,
            readings_needed=None,
            method="deterministic",
            notes=(note,),
        )
    if n < max(min_subsessions, 3):
        note = (
            f"{n} readings: at least {min_subsessions} are needed to form subsessions and "
            "estimate their correlation"
        )
        need = max(min_subsessions, 3)
        return SubsessionChoice(
            q=1,
            n_subsessions=n,
            n=n,
            lag1=None,
            tau=None,
            ess=None,
            enough=False,
            readings_needed=need,
            method="benchrun",
            notes=(note,),
        )
    notes: list[str] = []
    if sums is None:
        sums = autocovariance_sums(d)
    half = sums[: n // 2 + 1]
    tau, window_m, converged = _sokal(half / half[0], window)
    ess = n / max(tau, 1.0 / n)
    tau_q = tau
    if tau_upper is not None:
        z_u = float(normal_quantile(tau_upper))  # scipy's norm.ppf, remembered per level
        tau_q = max(tau, 1.0) * (1.0 + z_u * math.sqrt(2.0 * (2 * window_m + 1) / n))
    q_min = 1 if tau_q <= 1.0 else 1 + int(math.ceil(tau_factor * (tau_q - 1.0) - 1e-9))

    def refuse(q: int, lag1: float | None, need: int, why: str) -> SubsessionChoice:
        need = max(need, n + 1)
        notes.append(f"not enough data: {why}; about {need} readings needed, have {n}")
        return SubsessionChoice(
            q=q,
            n_subsessions=n // q,
            n=n,
            lag1=lag1,
            tau=tau,
            ess=ess,
            enough=False,
            readings_needed=need,
            method="benchrun",
            notes=tuple(notes),
            q_min=q_min,
        )

    if not converged:
        return refuse(
            q_min,
            None,
            max(min_subsessions * q_min, 2 * n),
            f"correlation time not measurable in {n} readings (tau >= {tau:.1f})",
        )
    h_max = max(max_subsessions, int(math.floor(n ** (1.0 / 3.0) + 1e-9)))
    q = max(q_min, -(-n // h_max))
    if n // q < min_subsessions:
        h0 = n // q_min
        b = _batch_means(x, h0, q_min)
        lag1 = _lag1_of_means(b, _fmean(b)) if h0 >= 3 else None
        why = f"tau = {tau:.2f} readings needs {min_subsessions} subsessions of {q_min}"
        return refuse(q_min, lag1, min_subsessions * q_min, why)
    z = float(normal_quantile(0.5 + c / 2.0))
    while True:
        h = n // q
        b = _batch_means(x, h, q)
        lag1 = _lag1_of_means(b, _fmean(b))
        limit = -1.0 / h + z / math.sqrt(h)
        if lag1 is None or lag1 <= limit:
            break
        if n // (2 * q) < min_subsessions:
            why = f"subsession means of {q} readings still correlated (lag-1 r = {lag1:.2f})"
            return refuse(q, lag1, min_subsessions * 2 * q, why)
        notes.append(f"lag-1 r = {lag1:.2f} of size-{q} subsession means > {limit:.2f}: doubled q")
        q *= 2
    if q_min > 1 and tau > 1.0:
        notes.append(
            f"readings are autocorrelated (tau = {tau:.2f}): CI over {h} subsession means "
            f"of {q} readings"
        )
    elif q_min > 1:
        # only the upper bound of tau (tau_upper) exceeds 1: the estimate itself does not
        # say the readings are correlated, but it cannot rule it out
        notes.append(
            f"independence not shown (tau = {tau:.2f}, upper bound {tau_q:.2f} > 1): CI over "
            f"{h} subsession means of {q} readings"
        )
    elif q > 1:
        notes.append(
            f"no measurable autocorrelation (tau = {tau:.2f}); CI over {h} subsession means "
            f"of {q} readings, which stays valid if a slow correlation is hidden"
        )
    return SubsessionChoice(
        q=q,
        n_subsessions=h,
        n=n,
        lag1=lag1,
        tau=tau,
        ess=ess,
        enough=True,
        readings_needed=None,
        method="benchrun",
        notes=tuple(notes),
        q_min=q_min,
    )


def pilot_subsession_size(
    values: Iterable[float] | np.ndarray, limit: float, min_subsessions: int
) -> SubsessionChoice:
    """Pilot's subsession size rule, exactly (PILOT; docs/methods.md §3, §12).

    Parameters
    ----------
    values : array_like
        Readings in time order, finite.
    limit : float
        Largest accepted ``|r_1|`` of the batch means, > 0.
    min_subsessions : int
        Fewest batch means that must remain, at least 2.

    Returns
    -------
    SubsessionChoice
        ``q``, ``n_subsessions`` and ``lag1`` (r_1 of the batch means), method "pilot";
        ``enough=False`` if no q qualifies.

    Notes
    -----
    The smallest q in 1, 2, 3, ... such that the lag-1 autocorrelation of the non-overlapping
    batch means of size q, ``Σ (B_i - m)(B_{i+1} - m) / Σ (B_i - m)^2``, with m the mean of
    ALL n readings (as Pilot centres them), satisfies ``|r_1| <= limit`` while at least
    ``min_subsessions`` batch means remain. Pilot's presets: limit 0.8 / 0.2 / 0.1 with
    30 / 50 / 200 subsessions. Kept for comparison; its nominal 95 % CI covers far less
    often on correlated data (docs/subsessions.md).

    References
    ----------
    .. [1] Y. Li, Y. Gupta, E. L. Miller and D. D. E. Long, "Pilot: a framework that
       understands how to do performance benchmarks the right way", 24th IEEE MASCOTS, 2016.
       doi:10.1109/MASCOTS.2016.31

    Examples
    --------
    docs/methods.md §12: with limit 0.1 Pilot picks q = 4 for the 48 Ferrari readings,
    where r_1 = 0.08230986644266707:

    >>> x = np.array([1.21, 1.67, 1.71, 1.53, 2.03, 2.15, 1.88, 2.02, 1.75, 1.84, 1.61,
    ...               1.35, 1.43, 1.64, 1.52, 1.44, 1.17, 1.42, 1.64, 1.86, 1.68, 1.91,
    ...               1.73, 2.18, 2.27, 1.93, 2.19, 2.04, 1.92, 1.97, 1.65, 1.71, 1.89,
    ...               1.70, 1.62, 1.48, 1.55, 1.39, 1.45, 1.67, 1.62, 1.77, 1.88, 1.82,
    ...               1.93, 2.09, 2.24, 2.16])
    >>> s = pilot_subsession_size(x, 0.1, 2)
    >>> s.q, s.n_subsessions, round(s.lag1, 12)
    (4, 12, 0.082309866443)

    The same r_1 with numpy, batch means centred on the mean of all readings:

    >>> b = x.reshape(12, 4).mean(axis=1) - x.mean()
    >>> round(float(np.dot(b[:-1], b[1:]) / np.dot(b, b)), 12)
    0.082309866443
    """
    x = as_series(values)
    n = x.size
    if min_subsessions < 2:
        raise ValueError("min_subsessions must be >= 2")
    if not limit > 0:
        raise ValueError(f"limit must be > 0, got {limit!r}")
    m = float(np.mean(x))
    csum = np.concatenate(([0.0], np.cumsum(x - m)))
    for q in range(1, n // min_subsessions + 1):
        h = n // q
        b = (csum[q : h * q + 1 : q] - csum[0 : h * q : q]) / q  # batch means minus m
        den = float(np.dot(b, b))
        r1 = 0.0 if den == 0.0 else float(np.dot(b[:-1], b[1:]) / den)
        if abs(r1) <= limit:
            return SubsessionChoice(
                q=q,
                n_subsessions=h,
                n=n,
                lag1=r1,
                tau=None,
                ess=None,
                enough=True,
                readings_needed=None,
                method="pilot",
            )
    q = max(1, n // min_subsessions)
    return SubsessionChoice(
        q=q,
        n_subsessions=n // q,
        n=n,
        lag1=None,
        tau=None,
        ess=None,
        enough=False,
        readings_needed=None,
        method="pilot",
        notes=(
            f"no subsession size with |lag-1 r| <= {limit} leaves {min_subsessions} subsessions",
        ),
    )
