"""Looks of one paired comparison on its own passes (docs/controller.md, "Decision efficiency").

Each paired comparison a~b (the per-pass log ratio ``d_p = ln y_bp - ln y_ap``,
runner/control/pairing.py) is tested at its own looks, on the number of passes in its own
series: the first look comes when the series could first give a verdict, not when every
workload of the campaign has enough data, and the looks grow geometrically from there with
no end fixed in advance. At every look:

- the units are the passes themselves when the series shows no autocorrelation that
  matters, else means of ``q`` consecutive passes, ``q`` from the series' integrated
  autocorrelation time (the subsession rule's ``q_min``, docs/methods.md §3);
- separation: the two-sided Wilcoxon signed-rank test of "d symmetric about 0"
  (``paired_test: rank``, the default; stats.signedrank) or the one-sample t test
  (``paired_test: t``), rejected when its p is at most the look's nominal level;
- equivalence: two one-sided tests against ``±ln(1 + margin)`` (rank or t), both at most
  the look's one-sided nominal level;
- the nominal levels come from group-sequential boundaries computed for the looks actually
  made (stats.groupseq), spending ``alpha_pair`` (α over the pairs the group can form) by the
  information (passes) reached, so correlated looks do not each pay for the others.

The probability that a comparison of two identical workloads is ever declared separated
is at most ``alpha_pair`` (the Brownian approximation of the cumulative statistic; checked
by simulation in tests/runner/test_pairlooks.py and benchmarks/efficiency.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from scipy import stats

from benchrun.stats.groupseq import Boundaries, empty_boundaries
from benchrun.stats.signedrank import hodges_lehmann, signed_rank_p

__all__ = [
    "PAIRED_TESTS",
    "PairTestResult",
    "PairLookState",
    "first_look",
    "cumulative_spend",
    "look_units",
    "test_units",
    "next_look_after",
]

#: the paired tests ``settings.paired_test`` names
PAIRED_TESTS = ("rank", "t")
PairedTestKind = Literal["rank", "t"]

#: share of alpha_pair spent by the first look (on an all-one-sign series of n0 passes)
FIRST_SHARE = 0.25
#: the information (in multiples of the first look's) at which half of alpha_pair is spent
HALF_SPEND = 40.0


def first_look(alpha_pair: float, min_rounds: int) -> int:
    """Passes at which a comparison is first tested: the fewest with which an exact
    signed-rank test can reject at the first look's level (all n signs alike give the
    two-sided p ``2/2^n``, which must be <= ``FIRST_SHARE·alpha_pair``), and at least
    ``min_rounds``.

    >>> first_look(0.01, 5)
    10
    >>> first_look(0.05, 5)
    8
    """
    n = math.ceil(math.log2(2.0 / (FIRST_SHARE * alpha_pair)) - 1e-12)
    return max(int(min_rounds), n, 2)


def cumulative_spend(info: float, n0: float, alpha_pair: float) -> float:
    """α spent by the time a comparison's series holds ``info`` passes (first look at n0).

    ``F(n) = α·(s + (1 - s)·(1 - h/(h + n/n0 - 1)))`` with ``s`` = FIRST_SHARE, ``h`` =
    HALF_SPEND - 1 (so ``F(n0) = s·α``, ``F(n0·HALF_SPEND) = (1 + s)/2·α``, and F tends to
    α with no horizon: the campaign may run as long as its time budget allows). Uniform
    in neither n nor log n: a geometric look schedule spends a decreasing share per look.
    """
    if info < n0:
        return 0.0
    h = HALF_SPEND - 1.0
    x = info / n0 - 1.0
    return alpha_pair * (FIRST_SHARE + (1.0 - FIRST_SHARE) * x / (h + x))


def next_look_after(n: int, n0: int, ratio: float) -> int:
    """The first look point > ``n`` of the schedule ``n0, ⌈r·n0⌉, ...`` (geometric, open)."""
    point = n0
    while point <= n:
        point = max(point + 1, math.ceil(ratio * point - 1e-9))
    return point


def look_units(d: np.ndarray, tau: float | None, tau_factor: float = 5.0) -> tuple[np.ndarray, int]:
    """The units a look tests: the passes themselves, or means of q consecutive passes.

    ``q = 1 + ⌈c·(τ - 1)⌉`` (the subsession rule's smallest size, docs/methods.md §3) from
    the series' integrated autocorrelation time τ (None or <= 1: q = 1), capped so that at
    least 8 units remain. Returns (units, q); the last incomplete group is dropped.
    """
    q = 1 if tau is None or tau <= 1.0 else 1 + math.ceil(tau_factor * (tau - 1.0))
    q = max(1, min(q, d.size // 8 if d.size >= 8 else 1))
    if q == 1:
        return d, 1
    k = d.size // q
    return d[: k * q].reshape(k, q).mean(axis=1), q


@dataclass(frozen=True)
class PairTestResult:
    """One look's tests on a comparison's units (natural-log ratios b/a).

    Attributes:
        p: two-sided p of separation; ``tost_p``: the larger one-sided p of equivalence.
        estimate, low, high: the log ratio's estimate and CI at ``confidence`` (Hodges-
            Lehmann and its Walsh-average interval for ``rank``; the mean and t interval
            for ``t``); bounds None when the units are too few for that confidence.
        estimand: what ``exp(estimate)`` estimates.
        units, q: units tested and passes per unit.
    """

    p: float
    tost_p: float
    estimate: float
    low: float | None
    high: float | None
    estimand: str
    units: int
    q: int


def _t_p(x: np.ndarray, shift: float, alternative: str) -> float:
    """One-sample t p of ``E[x] = shift`` (scipy.stats.ttest_1samp); a constant series
    gives 0 or 1 by the sign of its difference from ``shift``."""
    if np.ptp(x) == 0.0:
        diff = float(x[0]) - shift
        if alternative == "two-sided":
            return 1.0 if diff == 0 else 0.0
        if alternative == "greater":
            return 0.0 if diff > 0 else 1.0
        return 0.0 if diff < 0 else 1.0
    return float(stats.ttest_1samp(x, shift, alternative=alternative).pvalue)


def test_units(
    units: np.ndarray, q: int, kind: PairedTestKind, margin: float, confidence: float
) -> PairTestResult:
    """Separation and equivalence tests of ``units`` (see :class:`PairTestResult`).

    ``rank``: Wilcoxon signed-rank p (exact for small samples) and two one-sided signed-rank
    tests of ``units ∓ ln(1 + margin)``; the Hodges-Lehmann estimate (the pseudo-median of
    the units: the median per-pass log ratio when they are symmetric). ``t``: the one-sample
    t test and two one-sided t tests; the mean (the log of the geometric-mean ratio).
    """
    delta = math.log1p(margin)
    if kind == "rank":
        p, _ = signed_rank_p(units)
        lo_p, _ = signed_rank_p(units, -delta, "greater")
        hi_p, _ = signed_rank_p(units, delta, "less")
        est, low, high = hodges_lehmann(units, confidence)
        estimand = "median per-pass ratio (Hodges-Lehmann)"
    else:
        p = _t_p(units, 0.0, "two-sided")
        lo_p = _t_p(units, -delta, "greater")
        hi_p = _t_p(units, delta, "less")
        est = float(units.mean())
        if units.size >= 2 and np.ptp(units) > 0:
            half = float(stats.t.ppf(0.5 + confidence / 2, units.size - 1)) * float(
                units.std(ddof=1) / math.sqrt(units.size)
            )
            low, high = est - half, est + half
        else:
            low = high = est
        estimand = "geometric-mean ratio"
    return PairTestResult(
        p=float(p),
        tost_p=float(max(lo_p, hi_p)),
        estimate=float(est),
        low=low,
        high=high,
        estimand=estimand,
        units=int(units.size),
        q=int(q),
    )


@dataclass
class PairLookState:
    """The looks one comparison has had: its schedule, boundaries and α level.

    ``n0``: passes at the first look; ``alpha_pair``: the level of its separation test
    (α over the pairs of its group); ``sep``: two-sided boundaries of the separation test;
    ``eq``: one-sided boundaries shared by the two one-sided tests of equivalence (each at
    ``alpha``, an intersection-union test); ``looks``: how many looks were made;
    ``next``: passes at the next look.
    """

    n0: int
    alpha_pair: float
    alpha: float
    ratio: float
    sep: Boundaries = field(default_factory=lambda: empty_boundaries(2))
    eq: Boundaries = field(default_factory=lambda: empty_boundaries(1))
    looks: int = 0
    next: int = 0
    spent_all: bool = False

    def __post_init__(self) -> None:
        if self.next == 0:
            self.next = self.n0

    def due(self, n: int) -> bool:
        """Is a look due with ``n`` passes in the series?"""
        return not self.spent_all and n >= self.next

    def levels(self, n: int, final: bool) -> tuple[float, float]:
        """Add a look at ``n`` passes and return its (two-sided separation, one-sided
        equivalence) nominal levels; ``final`` spends all that is left."""
        last = self.sep.info[-1] if self.sep.info else 0.0
        info = float(n) if n > last else last * (1.0 + 1e-6)  # no new pass: same statistic
        if final:
            cum_sep, cum_eq = self.alpha_pair, self.alpha
            self.spent_all = True
        else:
            cum_sep = cumulative_spend(info, self.n0, self.alpha_pair)
            cum_eq = cumulative_spend(info, self.n0, self.alpha)
        self.sep = self.sep.add(info, max(cum_sep, self.sep.spent[-1] if self.sep.spent else 0.0))
        self.eq = self.eq.add(info, max(cum_eq, self.eq.spent[-1] if self.eq.spent else 0.0))
        self.looks += 1
        self.next = next_look_after(n, self.n0, self.ratio)
        return self.sep.nominal(), self.eq.nominal()

    def to_dict(self) -> dict[str, Any]:
        return {
            "n0": self.n0,
            "alpha_pair": self.alpha_pair,
            "alpha": self.alpha,
            "ratio": self.ratio,
            "sep": self.sep.to_dict(),
            "eq": self.eq.to_dict(),
            "looks": self.looks,
            "next": self.next,
            "spent_all": self.spent_all,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PairLookState:
        return cls(
            n0=int(d["n0"]),
            alpha_pair=float(d["alpha_pair"]),
            alpha=float(d["alpha"]),
            ratio=float(d["ratio"]),
            sep=Boundaries.from_dict(d["sep"]),
            eq=Boundaries.from_dict(d["eq"]),
            looks=int(d["looks"]),
            next=int(d["next"]),
            spent_all=bool(d.get("spent_all", False)),
        )
