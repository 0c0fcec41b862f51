"""The best mean interval of a series too short to certify independence (docs/methods.md §4.1).

benchrun's subsession rule (:func:`~benchrun.stats.autocorr.subsession_size`, docs/methods.md
§3) refuses a CI when the series is too short to measure its correlation time; from 30
readings nobody can certify that they are independent. Refusing leaves the user with a
bare mean, so this module gives the interval that the data *do* support under a stated
assumption, marked as such:

- :func:`initial_sequence_tau`: Geyer's initial positive sequence estimate of the
  integrated autocorrelation time τ.
- :func:`uncertified_mean_ci`: the Student t interval of the mean with the standard error
  inflated by √T, T = max(1, τ̂) the assumed bound on τ, and n/T - 1 degrees of freedom; the
  result says "independence not certified: assumes tau <= T" and how much wider than the
  i.i.d. interval that makes it.

The adaptive controller never stops on such an interval (it keeps requiring the certified
CI); it exists for outputs. Coverage by simulation: docs/methods.md §4.1.

Units: the interval has the unit of the readings; τ and T are in readings (lags).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from scipy import fft
from scipy.special import stdtrit

from benchrun.stats.autocorr import _fmean
from benchrun.stats.intervals import as_series, check_confidence, opt_float
from benchrun.stats.results import HasCI

__all__ = ["UncertifiedInterval", "initial_sequence_tau", "uncertified_mean_ci"]

#: fewest readings for an uncertified interval (lag-1 and lag-2 autocovariances, 2 df)
MIN_READINGS = 3


def _centred(x: np.ndarray) -> np.ndarray:
    """Rows of ``x`` minus their mean, with a second pass for accuracy."""
    d = x - x.mean(axis=-1, keepdims=True)
    return d - d.mean(axis=-1, keepdims=True)


def _sums(d: np.ndarray) -> np.ndarray:
    """``Σ_i d_i d_{i+k}``, k = 0..n-1, along the last axis of the centred ``d``, by FFT."""
    n = d.shape[-1]
    size = fft.next_fast_len(2 * n - 1, real=True)
    f = fft.rfft(d, size, axis=-1)
    c: np.ndarray = fft.irfft(f.real * f.real + f.imag * f.imag, size, axis=-1)[..., :n]
    return c


def _ips_tau(d: np.ndarray) -> np.ndarray:
    """Geyer's initial positive sequence τ̂ of each row of the centred 2-D array ``d``
    (rows not all zero): ``-1 + 2 Σ_{m <= M} (r_{2m} + r_{2m+1})`` with M the last m before
    the first pair sum that is <= 0 (autocorrelations r_k with denominator n, by FFT)."""
    n = d.shape[-1]
    c = _sums(d)
    r = c / c[..., :1]
    pairs = n // 2  # complete pairs (r_{2m}, r_{2m+1}), 2m + 1 <= n - 1
    big = r[..., 0 : 2 * pairs : 2] + r[..., 1 : 2 * pairs : 2]
    initial = np.cumprod(big > 0.0, axis=-1).astype(bool)
    out: np.ndarray = -1.0 + 2.0 * np.sum(np.where(initial, big, 0.0), axis=-1)
    return out


def _intervals(
    x: np.ndarray, confidence: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(mean, half-width, τ̂, T, df, naive half-width) of each row of the 2-D ``x``
    (rows of >= 3 readings, not all equal), vectorised: the engine of
    :func:`uncertified_mean_ci`, also used by the coverage simulations."""
    n = x.shape[-1]
    d = _centred(x)
    mean = x.mean(axis=-1) + d.mean(axis=-1)
    s = np.sqrt(np.sum(d * d, axis=-1) / (n - 1))
    tau = _ips_tau(d)
    bound = np.maximum(tau, 1.0)
    df = np.maximum(n / bound - 1.0, 1.0)
    p = 0.5 + confidence / 2.0
    half = stdtrit(df, p) * s * np.sqrt(bound / n)
    naive = stdtrit(n - 1, p) * s / math.sqrt(n)
    return mean, half, tau, bound, df, naive


def initial_sequence_tau(values: Iterable[float] | np.ndarray) -> float:
    """Geyer's initial positive sequence estimate of τ = 1 + 2 Σ_{k>=1} ρ_k (docs/methods.md §4.1).

    Parameters
    ----------
    values : array_like
        A series in time order, finite, at least 3 values, not all equal (ValueError
        otherwise).

    Returns
    -------
    float
        τ̂ in readings (lags); n/τ̂ is the effective sample size. Can be below 1 (negatively
        correlated series), down to -1.

    Notes
    -----
    With the sample autocorrelations r_k (mean of all n values, denominator the total sum
    of squares, as :func:`~benchrun.stats.autocorr.acf`), the pair sums
    ``Γ_m = r_{2m} + r_{2m+1}`` are positive for a reversible Markov chain (Geyer 1992,
    Theorem 3.1). The estimate sums them while they are, ``τ̂ = -1 + 2 Σ_{m=0}^{M} Γ_m``
    with M the last m before the first ``Γ_m <= 0``; this is ``var.pos / gamma0`` of R's
    ``mcmc::initseq``. Only complete pairs are used (lags up to n - 1 for even n, n - 2 for
    odd n). Unlike Sokal's window (:func:`~benchrun.stats.autocorr.integrated_autocorrelation_time`),
    it always returns a value, which is what a short series needs; from a few dozen readings
    it is noisy and biased low (docs/methods.md §4.1).

    References
    ----------
    .. [1] C. J. Geyer, "Practical Markov chain Monte Carlo", Statistical Science
       7(4):473-483, 1992, §3.3. doi:10.1214/ss/1177011137

    Examples
    --------
    >>> x = [3.1, 2.7, 3.4, 3.9, 3.0, 2.6, 3.3, 3.8]
    >>> round(initial_sequence_tau(x), 6)
    1.098875

    The same pair sums written out with numpy (r_0 + r_1 > 0, r_2 + r_3 < 0: stop):

    >>> d = np.array(x) - np.mean(x)
    >>> r = np.correlate(d, d, "full")[7:] / np.dot(d, d)
    >>> round(float(r[0] + r[1]), 6), round(float(r[2] + r[3]), 6)
    (1.049437, -0.879823)
    >>> round(float(-1 + 2 * (r[0] + r[1])), 6)
    1.098875
    """
    x = as_series(values)
    if x.size < MIN_READINGS:
        raise ValueError(f"at least {MIN_READINGS} values are needed to estimate tau, got {x.size}")
    d = _centred(x)
    if not np.any(d):
        raise ValueError("all values are equal: the autocorrelation is undefined")
    return float(_ips_tau(d[None, :])[0])


@dataclass(frozen=True)
class UncertifiedInterval(HasCI):
    """A mean interval whose independence assumption could not be checked (docs/methods.md §4.1).

    Attributes (units: those of the readings unless said):
        mean: mean of the n readings.
        ci_low, ci_high: ``mean ∓ t_{(1+c)/2, df} · s · sqrt(tau_bound / n)``.
        confidence: the nominal level c.
        n: readings.
        std: sample standard deviation s (ddof=1).
        tau_hat: Geyer's initial positive sequence τ̂ (readings; may be < 1); None when
            every reading is equal.
        tau_bound: T = max(1, τ̂), the bound on τ the interval assumes (readings).
        df: degrees of freedom ``max(1, n/T - 1)``.
        half_width: the interval's half-width.
        naive_half_width: the i.i.d. t interval's half-width ``t_{(1+c)/2, n-1} · s/√n``.
        width_factor: ``half_width / naive_half_width`` (None when both are 0).
        method: ``"geyer-ips"`` (or a caller's name for a widened variant).
    """

    mean: float
    ci_low: float
    ci_high: float
    confidence: float
    n: int
    std: float
    tau_hat: float | None
    tau_bound: float
    df: float
    half_width: float
    naive_half_width: float
    width_factor: float | None
    method: str = "geyer-ips"

    @property
    def note(self) -> str:
        """The one-line mark every output prints after the interval, e.g.
        ``"independence not certified: assumes tau <= 2.4, 1.6x the i.i.d. width"``."""
        wf = "" if self.width_factor is None else f", {self.width_factor:.1f}x the i.i.d. width"
        return f"independence not certified: assumes tau <= {self.tau_bound:.1f}{wf}"

    def to_dict(self) -> dict[str, object]:
        """JSON-serialisable dict (floats or None), with the ``note``."""
        return {
            "mean": opt_float(self.mean),
            "ci_low": opt_float(self.ci_low),
            "ci_high": opt_float(self.ci_high),
            "confidence": float(self.confidence),
            "n": int(self.n),
            "std": opt_float(self.std),
            "tau_hat": opt_float(self.tau_hat),
            "tau_bound": opt_float(self.tau_bound),
            "df": opt_float(self.df),
            "half_width": opt_float(self.half_width),
            "naive_half_width": opt_float(self.naive_half_width),
            "width_factor": opt_float(self.width_factor),
            "method": self.method,
            "note": self.note,
        }


def uncertified_mean_ci(
    values: Iterable[float] | np.ndarray, confidence: float = 0.95
) -> UncertifiedInterval:
    """Mean interval of a series too short to certify independence (docs/methods.md §4.1).

    Parameters
    ----------
    values : array_like
        Readings in time order, finite, at least 3 (ValueError otherwise).
    confidence : float
        Nominal level, in (0, 1).

    Returns
    -------
    UncertifiedInterval
        The interval, the assumed bound ``tau_bound`` on τ, the ``width_factor`` relative
        to the i.i.d. t interval and the one-line ``note`` outputs print.

    Notes
    -----
    With m the mean, s the standard deviation (ddof=1) and τ̂ Geyer's initial positive
    sequence estimate (:func:`initial_sequence_tau`), the assumed bound is
    ``T = max(1, τ̂)`` and the interval

        ``m ± t_{(1+c)/2, ν} · s · sqrt(T / n)``,  ``ν = max(1, n/T - 1)``.

    The variance of the mean of a stationary series is about ``σ²·τ/n`` (Geyer 1992 §3),
    so the interval is the i.i.d. t interval with the standard error of a series whose τ
    is T; ν treats the series as its n/T effective readings (a heuristic that adds 1-3
    points of coverage on short correlated series, docs/methods.md §4.1). With T = 1 it is
    exactly the i.i.d. t interval (``width_factor`` 1).

    Nothing certifies that τ <= T: from a few dozen readings τ̂ is noisy and biased low.
    Simulated coverage (docs/methods.md §4.1, 20 000 series per row, n = 20 / 30 / 50):
    0.963 / 0.964 / 0.963 on i.i.d. normal readings, 0.920 / 0.931 / 0.938 for AR(1)
    φ = 0.3 (τ = 1.9), 0.881 / 0.901 / 0.921 for φ = 0.5 (τ = 3), 0.65 / 0.71 / 0.78 for
    φ = 0.9 (τ = 19); over the series where the assumption holds (T >= τ) it covers
    0.98-0.99. Hence the mark: a result built on it is not certified, and the adaptive
    controller does not stop on it.

    All readings equal: a zero-width interval (τ̂ None, T = 1, ``width_factor`` None).

    References
    ----------
    .. [1] C. J. Geyer, "Practical Markov chain Monte Carlo", Statistical Science
       7(4):473-483, 1992. doi:10.1214/ss/1177011137
    .. [2] T. Hoefler and R. Belli, "Scientific benchmarking of parallel computing
       systems: twelve ways to tell the masses when reporting performance results",
       SC '15, §3.1.2 (the t interval). doi:10.1145/2807591.2807644

    Examples
    --------
    Ten readings that move in runs (τ̂ = 2.17):

    >>> from scipy import stats as sps
    >>> x = [10.1, 10.3, 10.4, 10.2, 9.8, 9.7, 9.9, 10.2, 10.5, 10.4]
    >>> u = uncertified_mean_ci(x)
    >>> round(u.tau_bound, 4), round(u.ci_low, 4), round(u.ci_high, 4)
    (2.1654, 9.7837, 10.5163)
    >>> u.note
    'independence not certified: assumes tau <= 2.2, 1.9x the i.i.d. width'

    By hand: the t interval with n/T - 1 degrees of freedom and scale s·sqrt(T/n):

    >>> t = u.tau_bound
    >>> lo, hi = sps.t.interval(0.95, 10 / t - 1, loc=np.mean(x),
    ...                         scale=np.std(x, ddof=1) * np.sqrt(t / 10))
    >>> round(float(lo), 4), round(float(hi), 4)
    (9.7837, 10.5163)
    """
    c = check_confidence(confidence)
    x = as_series(values)
    n = x.size
    if n < MIN_READINGS:
        raise ValueError(f"an uncertified interval needs at least {MIN_READINGS} readings, got {n}")
    return uncertified_from(x, _centred(x), None, c)


def uncertified_from(
    x: np.ndarray, d: np.ndarray, sums: np.ndarray | None, c: float
) -> UncertifiedInterval:
    """:func:`uncertified_mean_ci` of the validated series ``x`` (>= 3 readings) with
    ``d = _centred(x)``, ``sums`` the lag sums ``Σ_i d_i d_{i+k}``, k = 0..n-1
    (:func:`~benchrun.stats.autocorr.autocovariance_sums`; None: computed here) and ``c`` a
    checked confidence: :func:`_intervals` for one series, on scalars (the same operations
    in the same order, so the same floats), for callers that already have ``d`` and
    ``sums`` (the collector)."""
    n = x.size
    if not d.any():
        m = float(x[0])
        return UncertifiedInterval(
            mean=m,
            ci_low=m,
            ci_high=m,
            confidence=c,
            n=n,
            std=0.0,
            tau_hat=None,
            tau_bound=1.0,
            df=n - 1.0,
            half_width=0.0,
            naive_half_width=0.0,
            width_factor=None,
        )
    if sums is None:
        sums = _sums(d)
    mean = _fmean(x) + _fmean(d)
    s = math.sqrt(float(np.add.reduce(d * d, axis=None)) / (n - 1))  # np.sum
    r = sums / sums[0]
    pairs = n // 2
    big = r[0 : 2 * pairs : 2] + r[1 : 2 * pairs : 2]
    initial = np.cumprod(big > 0.0).astype(bool)
    tau = -1.0 + 2.0 * float(np.add.reduce(np.where(initial, big, 0.0), axis=None))
    bound = max(tau, 1.0)
    df = max(n / bound - 1.0, 1.0)
    p = 0.5 + c / 2.0
    half = float(stdtrit(df, p)) * s * math.sqrt(bound / n)
    naive = float(stdtrit(n - 1, p)) * s / math.sqrt(n)
    return UncertifiedInterval(
        mean=mean,
        ci_low=mean - half,
        ci_high=mean + half,
        confidence=c,
        n=n,
        std=float(np.sqrt(np.dot(d, d) / (n - 1))),
        tau_hat=tau,
        tau_bound=bound,
        df=df,
        half_width=half,
        naive_half_width=naive,
        width_factor=half / naive,
    )
