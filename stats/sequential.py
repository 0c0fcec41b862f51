"""Looks and alpha spending for the adaptive stopping rule (docs/methods.md §10).

Testing after every round and stopping at the first success ("peeking") inflates the
false-positive rate far above α. benchrun's controller therefore tests only at *looks*
placed on a geometric schedule in the number of rounds, and splits α over them:

- :func:`look_schedule`: ``n_1 = first``, ``n_{j+1} = max(n_j + 1, ⌈r · n_j⌉)`` (r = 1.5 by
  default, as docs/methods.md §10 suggests), ending with ``last`` (the round budget). Geometric
  looks cost little: the sample at any look is at most r times what was needed.
- :func:`alpha_spending`: the per-look levels α_1..α_K with ``Σ α_j = α``. Every test done
  at look j uses α_j, so by the union (Bonferroni) bound the probability of *any* false
  verdict over the whole campaign is at most ``Σ α_j = α``, whatever the correlation of
  the looks and whatever data-dependent choices (subsession size, allocation) were made
  between them. ``"uniform"`` (default) gives each look α/K; ``"pocock"`` and
  ``"obrien-fleming"`` are the Lan-DeMets spending functions (Lan & DeMets, *Discrete
  sequential boundaries for clinical trials*, Biometrika 70, 1983), used here only to
  split α, not for the exact group-sequential boundaries (which need independent
  increments of one statistic; benchrun's statistics re-choose q at every look).

A look that is skipped (the controller was called after two schedule points had passed)
may spend the α of both: what matters is that the α actually spent never exceeds α
(:func:`cumulative_alpha`).

The tests made at a look, from summaries (mean, s_q², n_q) only: :func:`confirm_separations`
(the "pass at q and 2q" check of §3 applied to separations), :func:`baseline_tests`
(a result against a stored or live baseline, Holm over baselines) and the planning estimate
:func:`growth_needed`. Pure functions, no I/O; counts are rounds or subsession means.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from scipy import stats
from scipy.special import ndtri

from benchrun.stats.compare import tost_from_summary, welch_from_summary
from benchrun.stats.multi import holm

__all__ = [
    "SPENDING_KINDS",
    "LookPlan",
    "look_schedule",
    "alpha_spending",
    "cumulative_alpha",
    "plan_looks",
    "Sample",
    "confirm_separations",
    "BaselineTest",
    "baseline_tests",
    "growth_needed",
]

SPENDING_KINDS = ("uniform", "pocock", "obrien-fleming")


def look_schedule(first: int, last: int, ratio: float = 1.5) -> tuple[int, ...]:
    """Sample sizes (rounds) at which the stopping rule looks (docs/methods.md §10).

    ``n_1 = first`` and ``n_{j+1} = max(n_j + 1, ⌈ratio · n_j⌉)`` while below ``last``;
    ``last`` (the budget) is always the final look. So the number of looks is
    ``K <= ⌈log(last/first) / log(ratio)⌉ + 1``. Example: ``look_schedule(8, 500)`` is
    ``(8, 12, 18, 27, 41, 62, 93, 140, 210, 315, 473, 500)``.

    Raises ValueError unless ``first, last >= 1`` and ``ratio > 1``. ``first >= last``
    gives the single look ``(first,)`` (testing only became possible at the budget).
    """
    if int(first) != first or first < 1:
        raise ValueError(f"first must be an integer >= 1, got {first!r}")
    if int(last) != last or last < 1:
        raise ValueError(f"last must be an integer >= 1, got {last!r}")
    if not (math.isfinite(ratio) and ratio > 1.0):
        raise ValueError(f"ratio must be a finite number > 1, got {ratio!r}")
    first, last = int(first), int(last)
    if first >= last:
        return (first,)
    out = [first]
    while True:
        nxt = max(out[-1] + 1, math.ceil(ratio * out[-1] - 1e-9))
        if nxt >= last:
            break
        out.append(nxt)
    out.append(last)
    return tuple(out)


def _cumulative_fraction(kind: str, t: np.ndarray, alpha: float) -> np.ndarray:
    """F(t)/α for the spending function ``kind`` at information fractions t in (0, 1]."""
    if kind == "uniform":
        return t
    if kind == "pocock":
        return np.log1p((math.e - 1.0) * t)
    if kind == "obrien-fleming":
        z = stats.norm.isf(alpha / 2.0)
        return 2.0 * stats.norm.sf(z / np.sqrt(t)) / alpha
    raise ValueError(f"spending must be one of {SPENDING_KINDS}, got {kind!r}")


def alpha_spending(
    n_looks: int,
    alpha: float,
    kind: str = "uniform",
    fractions: Sequence[float] | None = None,
) -> tuple[float, ...]:
    """Per-look significance levels α_1..α_K that add up to α (docs/methods.md §10).

    With information fractions ``0 < t_1 < ... < t_K = 1`` (default ``t_j = j/K``: for
    looks on a geometric schedule that is uniform in log n) and a spending function F with
    F(1) = α, ``α_j = F(t_j) - F(t_{j-1})`` (F(t_0) = 0), so ``Σ α_j = F(1) = α`` exactly:

    - ``"uniform"``: F(t) = α·t; with the default fractions every look gets α/K
      (Bonferroni over the looks).
    - ``"pocock"``: F(t) = α·ln(1 + (e - 1)·t) (Lan-DeMets, Pocock-like: spends early).
    - ``"obrien-fleming"``: F(t) = 2 - 2Φ(z_{1-α/2}/√t) (Lan-DeMets, O'Brien-Fleming-like:
      almost nothing early, most at the end).

    Using α_j as the level of the tests at look j bounds the probability of any false
    verdict by Σ α_j = α (union bound), under any dependence between looks.

    >>> alpha_spending(4, 0.01)
    (0.0025, 0.0025, 0.0025, 0.0025)
    """
    if int(n_looks) != n_looks or n_looks < 1:
        raise ValueError(f"n_looks must be an integer >= 1, got {n_looks!r}")
    alpha = float(alpha)
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be strictly between 0 and 1, got {alpha!r}")
    k = int(n_looks)
    if fractions is None and kind == "uniform":
        return (alpha / k,) * k
    if fractions is None:
        t = np.arange(1, k + 1, dtype=float) / k
    else:
        t = np.asarray(fractions, dtype=float)
        if t.shape != (k,):
            raise ValueError(f"fractions must hold {k} values, got {t.size}")
        if not (np.all(np.isfinite(t)) and t[0] > 0 and np.all(np.diff(t) > 0)):
            raise ValueError("fractions must be finite, > 0 and strictly increasing")
        if abs(t[-1] - 1.0) > 1e-12:
            raise ValueError(f"the last fraction must be 1, got {t[-1]!r}")
        t = t.copy()
        t[-1] = 1.0
    cum = alpha * _cumulative_fraction(kind, t, alpha)
    cum[-1] = alpha  # exactly α at t = 1, whatever the rounding
    per = np.diff(np.concatenate(([0.0], cum)))
    return tuple(float(max(v, 0.0)) for v in per)


def cumulative_alpha(alphas: Sequence[float], look_index: int) -> float:
    """α that may have been spent by the end of look ``look_index`` (0-based): Σ_{i<=j} α_i.

    The controller spends ``cumulative_alpha(alphas, j) - spent`` at a look that reaches
    schedule point j, so skipped points are not lost and the total never exceeds α.
    """
    if int(look_index) != look_index or not 0 <= look_index < len(alphas):
        raise ValueError(f"look_index must be in 0..{len(alphas) - 1}, got {look_index!r}")
    return float(math.fsum(alphas[: int(look_index) + 1]))


@dataclass(frozen=True)
class LookPlan:
    """A campaign's look schedule and the α of each look (docs/methods.md §10).

    ``schedule[j]`` is the round count of look j (0-based), ``alphas[j]`` its level;
    ``Σ alphas = alpha``.
    """

    schedule: tuple[int, ...]
    alphas: tuple[float, ...]
    alpha: float
    ratio: float
    spending: str

    @property
    def n_looks(self) -> int:
        return len(self.schedule)

    def point_index(self, rounds: int) -> int | None:
        """Index of the last schedule point <= ``rounds`` (None before the first)."""
        j = int(np.searchsorted(self.schedule, rounds, side="right")) - 1
        return None if j < 0 else j

    def to_dict(self) -> dict[str, object]:
        return {
            "schedule": [int(v) for v in self.schedule],
            "alphas": [float(v) for v in self.alphas],
            "alpha": float(self.alpha),
            "ratio": float(self.ratio),
            "spending": self.spending,
        }


def plan_looks(
    first: int, last: int, alpha: float, ratio: float = 1.5, spending: str = "uniform"
) -> LookPlan:
    """:func:`look_schedule` plus :func:`alpha_spending` in one object.

    Information fractions for the Lan-DeMets kinds are ``t_j = log(n_j/first·r)/log(n_K/first·r)``
    (uniform in log n, so every look of the geometric schedule counts alike); with
    ``"uniform"`` every look gets α/K.
    """
    schedule = look_schedule(first, last, ratio)
    k = len(schedule)
    if spending == "uniform" or k == 1:
        alphas = alpha_spending(k, alpha, "uniform" if spending == "uniform" else spending)
    else:
        logs = np.log(np.asarray(schedule, dtype=float) * ratio / schedule[0])
        alphas = alpha_spending(k, alpha, spending, logs / logs[-1])
    return LookPlan(schedule, alphas, float(alpha), float(ratio), spending)


# ----------------------------------------------------------------------------- tests at a look
class Sample(NamedTuple):
    """Summary of one result: mean, variance of its subsession means (s_q²), their count."""

    mean: float
    var: float
    n: int


def confirm_separations(
    pairs: Sequence[tuple[Sample, Sample]], alpha: float, lower_is_better: Sequence[bool]
) -> list[bool]:
    """Does each separation "a better than b" hold on a second summary of the same data?

    The controller's robustness check "pass at q and 2q" (docs/methods.md §3, §10): the pairs
    are given as summaries of the subsession means of size 2q; Welch's two-sided test
    (docs/methods.md §6.1), Holm-adjusted over the given pairs, must reject at ``alpha`` with
    a's mean in front (smaller when ``lower_is_better``, larger otherwise). When q is too
    small for the correlation of a series, the 2q means show the larger variance and the
    separation is not confirmed.
    """
    if len(pairs) != len(lower_is_better):
        raise ValueError("one direction per pair is needed")
    if not pairs:
        return []
    ps, ahead = [], []
    for (a, b), lower in zip(pairs, lower_is_better, strict=True):
        ps.append(welch_from_summary(a.mean, a.var, a.n, b.mean, b.var, b.n).p_value)
        ahead.append((a.mean < b.mean) if lower else (a.mean > b.mean))
    return [p < alpha and ok for p, ok in zip(holm(ps), ahead, strict=True)]


@dataclass(frozen=True)
class BaselineTest:
    """A current result against its baseline at one look (docs/methods.md §6.1, §6.4, §10).

    ``verdict``: "slower"/"faster" (worse/better in the metric's direction; Welch,
    Holm-adjusted over the baselines tested together, p < alpha), "equivalent" (TOST
    within ``margin``·|baseline mean| at alpha), else "undecided". ``relative_change`` =
    (current - baseline)/|baseline| (None for a zero baseline). ``notes``: the Welch
    test's notes (zero variances, one-sided intervals).
    """

    verdict: str
    welch_p: float
    welch_p_holm: float
    tost_p: float
    relative_change: float | None
    notes: tuple[str, ...] = ()


def baseline_tests(
    items: Sequence[tuple[Sample, Sample]],
    alpha: float,
    margin: float,
    lower_is_better: Sequence[bool],
) -> list[BaselineTest]:
    """Test every (current, baseline) summary pair at one look (see :class:`BaselineTest`)."""
    if len(items) != len(lower_is_better):
        raise ValueError("one direction per item is needed")
    raw = []
    for cur, base in items:
        w = welch_from_summary(cur.mean, cur.var, cur.n, base.mean, base.var, base.n)
        t = tost_from_summary(
            base.mean,
            base.var,
            base.n,
            cur.mean,
            cur.var,
            cur.n,
            margin=margin,
            relative=base.mean != 0,
            alpha=alpha,
        )
        raw.append((w.p_value, t, w.notes))
    adjusted = holm([p for p, _, _ in raw]) if raw else ()
    out = []
    for (cur, base), lower, (p, t, notes), ph in zip(
        items, lower_is_better, raw, adjusted, strict=True
    ):
        rel = (cur.mean - base.mean) / abs(base.mean) if base.mean != 0 else None
        if ph < alpha:
            verdict = "slower" if (cur.mean > base.mean) == lower else "faster"
        elif t.equivalent:
            verdict = "equivalent"
        else:
            verdict = "undecided"
        out.append(BaselineTest(verdict, float(p), float(ph), float(t.p_value), rel, notes))
    return out


def growth_needed(
    a: Sample,
    b: Sample,
    margin: float,
    alpha: float,
    power: float = 0.8,
    fixed: tuple[bool, bool] = (False, False),
) -> tuple[float | None, float | None]:
    """Factor f by which both sides' data must grow to separate resp. show equivalence.

    Planning estimate for the controller (docs/methods.md §6.1, §6.4, §10), normal
    approximation: the variance of a mean falls as 1/(amount of data) (§3), so growing a
    live side by f divides its s_q²/n_q by f (a ``fixed`` side, e.g. a stored baseline,
    stays). With d = |m_b - m_a| and δ = margin·|m_a|, separation needs
    ``se <= d / (z_{1-α/2} + z_power)`` and equivalence ``se <= (δ - d) / (z_{1-α} + z_power)``.
    Returns (f_separation, f_equivalence), each >= 1 or None when unreachable.
    """
    va, vb = a.var / a.n, b.var / b.n
    live = (0.0 if fixed[0] else va) + (0.0 if fixed[1] else vb)
    stuck = va + vb - live
    d = abs(b.mean - a.mean)
    delta = margin * abs(a.mean)
    zp = float(ndtri(power))

    def factor(se_target: float) -> float | None:
        room = se_target**2 - stuck
        if room <= 0:
            return None
        return max(1.0, live / room) if live > 0 else 1.0

    sep = factor(d / (zp - float(ndtri(alpha / 2)))) if d > 0 else None
    eq = factor((delta - d) / (zp - float(ndtri(alpha)))) if delta > d else None
    return sep, eq
