"""Ratios between campaigns on the log scale: a control's double ratio and the campaign level.

Two comparisons of an "old" and a "new" campaign (docs/methods.md §15, docs/conditions.md):

- **Double ratio by a control workload.** With a workload W and a control C measured in
  both campaigns, ``(W_new/W_old) / (C_new/C_old)`` cancels a speed factor common to all
  workloads of a campaign. On the log scale ``d = ln W_new - ln W_old - ln C_new + ln C_old``;
  the four means are independent estimates, so by the delta method
  ``se(d)² = Σ s_i²/(n_i m_i²)`` over the four (mean m_i, variance s_i² of its n_i
  independent units), with Welch-Satterthwaite degrees of freedom
  ``ν = (Σ u_i)² / Σ u_i²/(n_i - 1)``, ``u_i = s_i²/(n_i m_i²)``.
- **Campaign level** (Kalibera & Jones, ISMM 2013). With k_old and k_new campaigns per side,
  one value per campaign (its mean): Welch's t-test on the per-campaign log means, whose
  variance holds the between-campaign variation, with its real Welch-Satterthwaite ν
  (at most k_old + k_new - 2, at least min(k) - 1).

Both give ``d`` with ``se`` and ``ν``; :func:`log_ratio_test` turns that into the ratio
``exp(d)`` with its CI ``exp(d ± t se)``, the two-sided p-value of ``d = 0`` and the TOST
p-value of ``|d| < ln(1 + margin)``. Units: ratios and p-values are dimensionless.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import stdtr, stdtrit

from benchrun.stats.compare import welch_df
from benchrun.stats.results import AsDict

__all__ = [
    "LogRatioTest",
    "between_campaign_sd",
    "campaign_level_test",
    "double_ratio_test",
    "log_ratio_test",
]


@dataclass(frozen=True)
class LogRatioTest(AsDict):
    """A ratio new/old tested on the log scale (module docstring).

    ``ratio = exp(log_ratio)`` with its CI ``low``..``high`` at ``confidence``; ``se`` the
    standard error of ``log_ratio``, ``df`` its degrees of freedom (None: exact, both
    variances 0); ``p_value`` two-sided for ``log_ratio = 0``; ``tost_p`` for
    ``|log_ratio| < ln(1 + margin)``; ``n_old``/``n_new`` the units behind each side
    (campaigns, or subsession means).
    """

    ratio: float
    low: float
    high: float
    log_ratio: float
    se: float
    df: float | None
    p_value: float
    tost_p: float
    margin: float
    confidence: float
    n_old: int
    n_new: int


def log_ratio_test(
    d: float,
    se: float,
    df: float | None,
    *,
    margin: float,
    confidence: float,
    n_old: int,
    n_new: int,
) -> LogRatioTest:
    """The ratio ``exp(d)``, its t interval and tests, from a log ratio ``d`` with standard
    error ``se`` on ``df`` degrees of freedom (None or ``se == 0``: exact).

    The p-value is ``2 (1 - F_t(|d|/se))``; TOST's is the larger of the two one-sided
    p-values against ``±ln(1 + margin)`` (symmetric on the log scale).

    Parameters
    ----------
    d : float
        The log ratio ln(new/old) (dimensionless).
    se : float
        Its standard error (>= 0).
    df : float or None
        Its degrees of freedom; None (or ``se == 0``): known exactly, no t quantile.
    margin : float
        TOST margin, relative (0.01 = ±1 %).
    confidence : float
        Level of the CI, in (0, 1).
    n_old, n_new : int
        The units behind each side, carried into the result.

    Returns
    -------
    LogRatioTest
        ``ratio = exp(d)``, its CI ``exp(d ± t se)``, the two-sided p-value and TOST's.

    References
    ----------
    .. [1] D. J. Schuirmann, "A comparison of the two one-sided tests procedure and the
       power approach for assessing the equivalence of average bioavailability", Journal
       of Pharmacokinetics and Biopharmaceutics 15(6), 1987, pp. 657-680.

    Examples
    --------
    A log ratio of 0.05 with a standard error of 0.01 on 10 degrees of freedom:

    >>> r = log_ratio_test(0.05, 0.01, 10, margin=0.01, confidence=0.95, n_old=5, n_new=5)
    >>> round(r.ratio, 4), round(r.low, 4), round(r.high, 4)
    (1.0513, 1.0281, 1.075)

    The same p-value from scipy's t distribution:

    >>> from scipy import stats as sps
    >>> bool(math.isclose(r.p_value, 2 * sps.t.sf(5.0, 10)))
    True
    """
    if not 0 < confidence < 1:
        raise ValueError("confidence must be in (0, 1)")
    bound = math.log1p(margin)
    if se == 0 or df is None:
        p = 0.0 if d != 0 else 1.0
        tost = 0.0 if abs(d) < bound else 1.0
        return LogRatioTest(
            math.exp(d), math.exp(d), math.exp(d), d, 0.0, None, p, tost, margin, confidence,
            n_old, n_new,
        )  # fmt: skip
    t = float(stdtrit(df, 0.5 + confidence / 2))
    p = float(2 * stdtr(df, -abs(d) / se))
    p_low = float(stdtr(df, -(d + bound) / se))  # H0: d <= -bound
    p_high = float(stdtr(df, (d - bound) / se))  # H0: d >= +bound
    return LogRatioTest(
        ratio=math.exp(d),
        low=math.exp(d - t * se),
        high=math.exp(d + t * se),
        log_ratio=d,
        se=se,
        df=df,
        p_value=p,
        tost_p=max(p_low, p_high),
        margin=margin,
        confidence=confidence,
        n_old=n_old,
        n_new=n_new,
    )


def double_ratio_test(
    old: tuple[float, float, int],
    new: tuple[float, float, int],
    control_old: tuple[float, float, int],
    control_new: tuple[float, float, int],
    *,
    margin: float = 0.01,
    confidence: float = 0.95,
) -> LogRatioTest:
    """``(new/old) / (control_new/control_old)`` with its delta-method CI (module docstring).

    Parameters
    ----------
    old, new, control_old, control_new
        ``(mean, variance, n)`` of each of the four estimates: the mean (> 0, any unit
        shared by a workload's two sides), the sample variance of its n independent units
        (ddof=1, unit²) and n >= 2.
    margin, confidence
        TOST margin (relative: 0.01 = ±1 %) and the CI's level.

    Returns
    -------
    LogRatioTest
        The double ratio, its CI, p-value and TOST p-value; ``n_old``/``n_new`` are the
        workload's units on each side.

    References
    ----------
    .. [1] T. Kalibera and R. Jones, "Rigorous benchmarking in reasonable time",
       Proceedings of the 2013 International Symposium on Memory Management (ISMM '13),
       ACM, 2013, pp. 63-74. doi:10.1145/2464157.2464160
    .. [2] B. L. Welch, "The generalization of 'Student's' problem when several different
       population variances are involved", Biometrika 34(1/2), 1947, pp. 28-35.

    Examples
    --------
    Both campaigns' speed differs by 10 %; W and C were each scaled by it, so the double
    ratio is 1:

    >>> r = double_ratio_test((1.0, 1e-4, 10), (1.1, 1.21e-4, 10), (2.0, 4e-4, 10), (2.2, 4.84e-4, 10))
    >>> round(r.ratio, 12), round(r.low, 4), round(r.high, 4)
    (1.0, 0.9873, 1.0129)

    Written out: each term is ``1e-4/10 = 1e-5``, so ``se = sqrt(4e-5)`` on
    ``ν = (4e-5)² / (4 · 1e-10 / 9) = 36`` degrees of freedom:

    >>> from scipy import stats as sps
    >>> round(math.exp(-sps.t.ppf(0.975, 36) * math.sqrt(4e-5)), 4)
    0.9873
    """
    terms = []
    for m, v, n in (old, new, control_old, control_new):
        if not m > 0 or n < 2 or v < 0:
            raise ValueError("each side needs a mean > 0, variance >= 0 and n >= 2")
        terms.append(((math.sqrt(v) / m) ** 2 / n, n))  # (sd/m)²/n: no underflow of m²
    d = math.log(new[0] / old[0]) - math.log(control_new[0] / control_old[0])
    total = sum(u for u, _ in terms)
    denom = sum((u / total) ** 2 / (n - 1) for u, n in terms) if total > 0 else 0.0
    df = 1.0 / denom if denom > 0 else None
    return log_ratio_test(
        d,
        math.sqrt(total),
        df,
        margin=margin,
        confidence=confidence,
        n_old=old[2],
        n_new=new[2],
    )


def campaign_level_test(
    old_means: ArrayLike,
    new_means: ArrayLike,
    *,
    margin: float = 0.01,
    confidence: float = 0.95,
) -> LogRatioTest:
    """Welch on the per-campaign log means: the ratio new/old of geometric means over
    campaigns, with a CI and tests whose variance is the between-campaign one.

    Parameters
    ----------
    old_means, new_means : array_like
        One mean per campaign (> 0), at least 2 per side.
    margin, confidence
        TOST margin (relative) and the CI's level.

    Returns
    -------
    LogRatioTest
        ``log_ratio = mean(ln new) - mean(ln old)``, ``se² = s_old²/k_old + s_new²/k_new``
        over the log means, Welch-Satterthwaite ``df``; the statistic and p-value are
        scipy's ``ttest_ind(ln new, ln old, equal_var=False)``.

    References
    ----------
    .. [1] T. Kalibera and R. Jones, "Rigorous benchmarking in reasonable time",
       Proceedings of the 2013 International Symposium on Memory Management (ISMM '13),
       ACM, 2013, pp. 63-74. doi:10.1145/2464157.2464160
    .. [2] B. L. Welch, "The generalization of 'Student's' problem when several different
       population variances are involved", Biometrika 34(1/2), 1947, pp. 28-35.

    Examples
    --------
    Four campaigns per side, the new ones about 10 % slower:

    >>> old, new = [1.00, 1.02, 0.98, 1.01], [1.10, 1.12, 1.08, 1.11]
    >>> r = campaign_level_test(old, new)
    >>> round(r.ratio, 4), round(r.low, 4), round(r.high, 4)
    (1.0998, 1.0691, 1.1314)

    The p-value is scipy's Welch test on the log means:

    >>> from scipy import stats as sps
    >>> p = sps.ttest_ind(np.log(new), np.log(old), equal_var=False).pvalue
    >>> bool(math.isclose(r.p_value, p))
    True
    """
    a = np.log(np.asarray(old_means, dtype=np.float64))
    b = np.log(np.asarray(new_means, dtype=np.float64))
    if a.ndim != 1 or b.ndim != 1 or a.size < 2 or b.size < 2:
        raise ValueError("need at least 2 campaigns per side")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ValueError("campaign means must be finite and > 0")
    va, vb = float(np.var(a, ddof=1)), float(np.var(b, ddof=1))
    se = math.sqrt(va / a.size + vb / b.size)
    return log_ratio_test(
        float(b.mean() - a.mean()),
        se,
        welch_df(va, a.size, vb, b.size),
        margin=margin,
        confidence=confidence,
        n_old=int(a.size),
        n_new=int(b.size),
    )


def between_campaign_sd(means: Sequence[float] | ArrayLike) -> float | None:
    """Standard deviation (ddof=1) of the log of per-campaign means: the relative
    campaign-to-campaign variation (0.02 ≈ 2 %); None with fewer than 2 campaigns.

    Parameters
    ----------
    means : array_like
        One mean per campaign of the same workload on the same machine (> 0, any unit).

    Returns
    -------
    float or None
        ``std(ln means, ddof=1)`` (dimensionless), None with fewer than 2 campaigns or a
        mean <= 0.

    References
    ----------
    .. [1] T. Kalibera and R. Jones, "Rigorous benchmarking in reasonable time",
       Proceedings of the 2013 International Symposium on Memory Management (ISMM '13),
       ACM, 2013, pp. 63-74. doi:10.1145/2464157.2464160

    Examples
    --------
    >>> round(between_campaign_sd([1.0, 1.1, 0.9]), 4)
    0.1004
    >>> round(float(np.std(np.log([1.0, 1.1, 0.9]), ddof=1)), 4)
    0.1004
    """
    x = np.asarray(means, dtype=np.float64)
    if x.size < 2 or not np.all(x > 0):
        return None
    return float(np.std(np.log(x), ddof=1))
