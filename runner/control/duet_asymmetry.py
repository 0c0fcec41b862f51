"""The asymmetry check of a duet campaign (docs/duet.md "Asymmetric interference").

A duet compares b with a while each disturbs the other. If a slows b by the factor
``s_b`` and b slows a by ``s_a``, the duet's ratio is ``(b/a) * s_b / s_a``: biased unless
``s_a = s_b``. The solo passes run a and b alone, one after the other, on the same pinned
CPUs, so their ratio is ``b/a`` itself, and

    asymmetry = s_b / s_a = (ratio in duet) / (ratio alone).

With ``d_p = ln b_p - ln a_p`` over the duets and ``e_q = ln b_q - ln a_q`` over the solo
passes, ``ln asymmetry`` is estimated by ``mean(d) - mean(e)`` with Welch's interval (the
two series are independent samples of different sizes and variances; a solo pass's ratio
is usually the noisier, its sides a round apart). The pair *interferes asymmetrically*
when that interval excludes 0, i.e. Welch's two-sided test rejects ``s_a = s_b`` at level
``1 - confidence``: under symmetric interference that happens at about that rate. Each
side's own slowdown is ``exp(mean ln x_duet - mean ln x_solo)``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from benchrun.runner.config.settings import DEFAULT_CONFIDENCE

__all__ = ["ASYMMETRY_EVENT", "MULTI_CPU_EVENT", "Asymmetry", "duet_asymmetry"]

#: kind of the event holding a duet campaign's asymmetry check (runner/campaign/duets.py)
ASYMMETRY_EVENT = "duet-asymmetry"
#: kind of the event stored when a duet side on more than one CPU stopped the campaign
MULTI_CPU_EVENT = "duet-multi-cpu"


@dataclass(frozen=True)
class Asymmetry:
    """The result of the asymmetry check (module docstring); ratios are b/a, unitless.

    ``asymmetry``, ``low``, ``high``: ``s_b / s_a`` and its interval at ``confidence``.
    ``duet_ratio``: b/a in the duets (geometric mean). ``solo_ratio``, ``solo_low``,
    ``solo_high``: b/a alone with its t interval (what the solo passes compare).
    ``slowdown_a``, ``slowdown_b``: each side's time in a duet over its time alone.
    ``pvalue``: Welch's two-sided p of ``s_a = s_b``. ``flagged``: the interval excludes 1.
    """

    asymmetry: float
    low: float
    high: float
    duet_ratio: float
    solo_ratio: float
    solo_low: float
    solo_high: float
    slowdown_a: float
    slowdown_b: float
    n_duet: int
    n_solo: int
    pvalue: float
    confidence: float
    flagged: bool

    def to_dict(self) -> dict[str, Any]:
        """The fields as a JSON-ready mapping (an event's data)."""
        return asdict(self)


def _logs(a: Mapping[int, float], b: Mapping[int, float]) -> tuple[np.ndarray, np.ndarray]:
    """ln a_p and ln b_p over the passes both have a positive value in, in pass order."""
    common = [p for p in sorted(set(a) & set(b)) if a[p] > 0 and b[p] > 0]
    la = np.log(np.array([a[p] for p in common], dtype=float))
    lb = np.log(np.array([b[p] for p in common], dtype=float))
    return la, lb


def duet_asymmetry(
    duet_a: Mapping[int, float],
    duet_b: Mapping[int, float],
    solo_a: Mapping[int, float],
    solo_b: Mapping[int, float],
    confidence: float = DEFAULT_CONFIDENCE,
) -> Asymmetry | None:
    """The asymmetry check of a pair (a, b) from per-pass values (module docstring).

    Parameters
    ----------
    duet_a, duet_b : mapping of int to float
        Pass index -> the round's value (its metric, any positive unit) of a and of b in
        the duets; passes where both have one are paired.
    solo_a, solo_b : mapping of int to float
        The same for the solo passes (each side alone, one after the other).
    confidence : float
        Level of the intervals, in (0, 1).

    Returns
    -------
    Asymmetry or None
        None with fewer than two paired duets or two paired solo passes.

    References
    ----------
    .. [1] L. Bulej, V. Horký, P. Tůma, F. Farquet and A. Prokopec, "Duet benchmarking:
       improving measurement accuracy in the cloud", Empirical Software Engineering
       25:4878-4914, 2020. doi:10.1007/s10664-020-09880-9 (the symmetry assumption).
    .. [2] B. L. Welch, "The generalization of 'Student's' problem when several different
       population variances are involved", Biometrika 34(1/2):28-35, 1947.

    Examples
    --------
    >>> duet_a = {0: 1.0, 1: 1.02, 2: 0.99, 3: 1.01}
    >>> duet_b = {p: 1.1 * v for p, v in duet_a.items()}  # b 10 % slower in every duet
    >>> solo = {4: 1.0, 9: 1.01, 14: 0.99}
    >>> r = duet_asymmetry(duet_a, duet_b, solo, {p: 1.0 * v for p, v in solo.items()})
    >>> round(r.asymmetry, 3), r.flagged
    (1.1, True)
    """
    # scipy only here, at the campaign's end: importing this module (the duet pass loop
    # does) must not load scipy before the first round (docs/loop.md, Startup)
    from scipy.special import stdtrit

    from benchrun.stats.compare import welch

    da, db = _logs(duet_a, duet_b)
    sa, sb = _logs(solo_a, solo_b)
    if da.size < 2 or sa.size < 2:
        return None
    d, e = db - da, sb - sa
    res = welch(d, e, confidence=confidence)  # both constant: exact, p 0 or 1
    diff = float(res.difference)
    ci = res.confidence_interval
    assert ci.low is not None and ci.high is not None  # two-sided: both bounds finite
    low, high = float(ci.low), float(ci.high)
    pvalue = res.p_value
    n_solo = e.size
    half = 0.0
    if n_solo > 1 and float(np.ptp(e)) > 0.0:
        sd = float(e.std(ddof=1))
        half = float(stdtrit(n_solo - 1, 0.5 + confidence / 2)) * sd / math.sqrt(n_solo)
    return Asymmetry(
        asymmetry=math.exp(diff),
        low=math.exp(low),
        high=math.exp(high),
        duet_ratio=math.exp(float(d.mean())),
        solo_ratio=math.exp(float(e.mean())),
        solo_low=math.exp(float(e.mean()) - half),
        solo_high=math.exp(float(e.mean()) + half),
        slowdown_a=math.exp(float(da.mean() - sa.mean())),
        slowdown_b=math.exp(float(db.mean() - sb.mean())),
        n_duet=int(d.size),
        n_solo=int(n_solo),
        pvalue=pvalue,
        confidence=confidence,
        flagged=not (low <= 0.0 <= high),
    )
