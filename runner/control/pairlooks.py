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
by simulation in tests/control/test_pairlooks.py and benchmarks/efficiency.py).
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
    "look_tests",
    "next_look_after",
]

#: the paired tests ``settings.paired_test`` names
PAIRED_TESTS = ("rank", "t")
PairedTestKind = Literal["rank", "t"]

#: share of alpha_pair the first look spends (so that a short series of one sign can decide)
FIRST_SHARE = 0.02
#: one-sided normal quantile of the lag-1 check that keeps the passes as units (Φ(-z) = 5 %)
LAG1_Z = 1.645
#: standard errors added to the units' lag-1 estimate before it sets the inflation
LAG1_SHIFT = 1.0
#: passes up to which that allowance is whole; beyond, it shrinks as LAG1_FULL/n
LAG1_FULL = 100.0
#: a separation must also hold on means of two consecutive units (see look_tests)
CONFIRM_2Q = False
#: exponent of the horizon-free spending after the first look (docs/methods.md §10.1)
SPEND_RHO = 0.5


def first_look(alpha_pair: float, min_rounds: int, first_share: float = FIRST_SHARE) -> int:
    """Passes at which a comparison is first tested: the fewest with which an exact
    signed-rank test can reject at the first look's level (all n signs alike give the
    two-sided p ``2/2^n``, which must be <= ``first_share·alpha_pair``), and at least
    ``min_rounds``.

    >>> first_look(0.01, 5)
    14
    >>> first_look(0.05, 5)
    11
    """
    n = math.ceil(math.log2(2.0 / (first_share * alpha_pair)) - 1e-12)
    return max(int(min_rounds), n, 2)


def cumulative_spend(
    info: float,
    n0: float,
    alpha: float,
    first_share: float = FIRST_SHARE,
    rho: float = SPEND_RHO,
) -> float:
    """α spent by the time a comparison's series holds ``info`` passes (first look at n0).

    ``F(n) = α·(s + (1 - s)·(1 - (n0/n)^ρ))`` for n >= n0 (0 before), with ``s`` =
    ``first_share`` and ρ = ``rho``: the first look spends ``s·α`` and F tends to α with no
    horizon, so a comparison keeps its power however long the time budget lets it run (the
    horizon-free family of docs/methods.md §10.1; the defaults were chosen on
    benchmarks/efficiency.py, docs/controller.md "Decision efficiency").

    >>> round(cumulative_spend(10, 10, 0.01), 6), round(cumulative_spend(160, 10, 0.01), 6)
    (0.0002, 0.00755)
    """
    if info < n0:
        return 0.0
    return alpha * (first_share + (1.0 - first_share) * (1.0 - (n0 / info) ** rho))


def next_look_after(n: int, n0: int, ratio: float) -> int:
    """The first look point > ``n`` of the schedule ``n0, ⌈r·n0⌉, ...`` (geometric, open)."""
    point = n0
    while point <= n:
        point = max(point + 1, math.ceil(ratio * point - 1e-9))
    return point


def _rank_lag1(x: np.ndarray) -> float:
    """Lag-1 autocorrelation of the ranks of ``x`` (0 for a constant series)."""
    ranks = stats.rankdata(x)
    c = ranks - ranks.mean()
    den = float(np.dot(c, c))
    return float(np.dot(c[:-1], c[1:]) / den) if den > 0 else 0.0


def look_units(
    d: np.ndarray,
    tau: float | None,
    tau_factor: float = 5.0,
    z: float = LAG1_Z,
    shift: float = LAG1_SHIFT,
    full_until: float = LAG1_FULL,
) -> tuple[np.ndarray, int, float]:
    """The units a look tests and the variance inflation their tests allow for.

    ``r1`` is the lag-1 autocorrelation of the ranks of d (robust to the heavy tails of
    per-process noise). When ``r1 <= z/√n`` (no correlation at the one-sided level Φ(-z))
    the units are the passes themselves, otherwise means of
    ``q = max(2, 1 + ⌈c·(τ - 1)⌉)`` passes (the subsession rule's smallest size,
    docs/methods.md §3, from the series' integrated autocorrelation time τ; at least 8
    units remain). The inflation is the AR(1) integrated autocorrelation time
    ``(1 + r)/(1 - r)`` of the units' own rank lag-1 ``r1u``, raised by ``shift`` standard
    errors, ``r = max(0, r1u + shift/√m)`` over m units: what is left of the correlation,
    allowed for in the p-values and the CI. Beyond ``full_until`` passes the allowance
    shrinks as ``full_until/n`` (``shift·full_until/(n·√m)``): the lag-1 estimate is then
    precise and the looks spend little α. Below 16 passes nothing can be checked: the
    passes, inflation 1. Returns (units, q, inflation); the last incomplete group is
    dropped.
    """
    n = d.size
    if n < 16:
        return d, 1, 1.0
    r1 = _rank_lag1(d)
    if r1 <= z / math.sqrt(n):
        units, q = d, 1
    else:
        q = 2 if tau is None or tau <= 1.0 else max(2, 1 + math.ceil(tau_factor * (tau - 1.0)))
        q = max(1, min(q, n // 8))
        k = n // q
        units = d if q == 1 else d[: k * q].reshape(k, q).mean(axis=1)
        if q > 1:
            r1 = _rank_lag1(units)
    allowance = shift / math.sqrt(units.size) * min(1.0, full_until / n)
    r = min(0.9, max(0.0, r1 + allowance))
    return units, q, (1.0 + r) / (1.0 - r)


def _deflate(p: float, inflation: float, sides: int) -> float:
    """The p of a normal statistic whose variance is ``inflation`` times the one ``p`` was
    computed with: ``z = Φ⁻¹(1 - p/sides)`` divided by ``√inflation``."""
    if inflation <= 1.0 or not 0.0 < p < 1.0:
        return p
    zq = float(stats.norm.isf(p / sides)) / math.sqrt(inflation)
    return float(min(1.0, sides * stats.norm.sf(zq)))


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
        var: the units' sample variance times the inflation (natural-log units squared;
            0 with fewer than 2 units), for planning how many more passes are needed.
    """

    p: float
    tost_p: float
    estimate: float
    low: float | None
    high: float | None
    estimand: str
    units: int
    q: int
    var: float


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


def look_tests(
    units: np.ndarray,
    q: int,
    kind: PairedTestKind,
    margin: float,
    confidence: float,
    inflation: float = 1.0,
    confirm_2q: bool = CONFIRM_2Q,
) -> PairTestResult:
    """Separation and equivalence tests of ``units`` (see :class:`PairTestResult`).

    ``rank``: Wilcoxon signed-rank p (exact for small samples) and two one-sided signed-rank
    tests of ``units ∓ ln(1 + margin)``; the Hodges-Lehmann estimate (the pseudo-median of
    the units: the median per-pass log ratio when they are symmetric). ``t``: the one-sample
    t test and two one-sided t tests; the mean (the log of the geometric-mean ratio).
    ``inflation`` (>= 1, from :func:`look_units`): the variance of the statistics is taken
    that many times the independent one's, in the p-values (normal scale) and the CI's
    half-widths. ``confirm_2q``: the separation p is the larger of the units' and that of
    the means of two consecutive units (each with the inflation of its own lag-1).
    """
    delta = math.log1p(margin)
    if kind == "rank":
        p, _ = signed_rank_p(units)
        lo_p, _ = signed_rank_p(units, -delta, "greater")
        hi_p, _ = signed_rank_p(units, delta, "less")
        est, low, high = hodges_lehmann(units, confidence)
        estimand = "median per-pass ratio (Hodges-Lehmann)"
        if units.size >= 16 and low is not None and high is not None:
            # the CI contains the one over means of two consecutive units (q and 2q, as
            # the collector's CIs do, docs/controller.md): a stop chosen by the data
            k = units.size // 2
            _, low2, high2 = hodges_lehmann(units[: 2 * k].reshape(k, 2).mean(axis=1), confidence)
            if low2 is not None and high2 is not None:
                low, high = min(low, low2), max(high, high2)
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
    if inflation > 1.0:
        p = _deflate(p, inflation, 2)
        lo_p, hi_p = _deflate(lo_p, inflation, 1), _deflate(hi_p, inflation, 1)
    if confirm_2q and kind == "rank" and units.size >= 16:
        # "pass at q and 2q" (docs/methods.md §3): the separation must also hold on the
        # means of two consecutive units, whose correlation (and so the part of it the
        # inflation missed) is smaller
        k = units.size // 2
        pair_means = units[: 2 * k].reshape(k, 2).mean(axis=1)
        r2 = min(0.9, max(0.0, _rank_lag1(pair_means)))
        p = max(p, _deflate(signed_rank_p(pair_means)[0], (1 + r2) / (1 - r2), 2))
    if inflation > 1.0:
        w = math.sqrt(inflation)
        low = None if low is None else est - w * (est - low)
        high = None if high is None else est + w * (high - est)
    return PairTestResult(
        p=float(p),
        tost_p=float(max(lo_p, hi_p)),
        estimate=float(est),
        low=low,
        high=high,
        estimand=estimand,
        units=int(units.size),
        q=int(q),
        var=inflation * float(units.var(ddof=1)) if units.size >= 2 else 0.0,
    )


#: boundaries already solved, by (sides, looks so far, α spent so far, new look, its α):
#: comparisons with the same schedule (a campaign's pairs, a simulation's campaigns) share them
_SOLVED: dict[tuple[Any, ...], Boundaries] = {}


def _add(b: Boundaries, info: float, cumulative_alpha: float) -> Boundaries:
    """:meth:`Boundaries.add`, remembered (the boundaries depend on the schedule only)."""
    key = (b.sides, b.info, b.spent, info, cumulative_alpha)
    out = _SOLVED.get(key)
    if out is None:
        if len(_SOLVED) >= 4096:
            _SOLVED.clear()
        out = _SOLVED[key] = b.add(info, cumulative_alpha)
    return out


@dataclass
class PairLookState:
    """The looks one comparison has had: its schedule, boundaries and α level.

    ``n0``: passes at the first look; ``alpha_pair``: the level of its separation test
    (α over the pairs of its group); ``sep``: two-sided boundaries of the separation test;
    ``eq``: one-sided boundaries shared by the two one-sided tests of equivalence (each at
    ``alpha``, an intersection-union test); ``first_share``, ``rho``: the spending
    (:func:`cumulative_spend`); ``looks``: how many looks were made;
    ``next``: passes at the next look.
    """

    n0: int
    alpha_pair: float
    alpha: float
    ratio: float
    first_share: float = FIRST_SHARE
    rho: float = SPEND_RHO
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
            cum_sep = cumulative_spend(info, self.n0, self.alpha_pair, self.first_share, self.rho)
            cum_eq = cumulative_spend(info, self.n0, self.alpha, self.first_share, self.rho)
        self.sep = _add(self.sep, info, max(cum_sep, self.sep.spent[-1] if self.sep.spent else 0.0))
        self.eq = _add(self.eq, info, max(cum_eq, self.eq.spent[-1] if self.eq.spent else 0.0))
        self.looks += 1
        self.next = next_look_after(n, self.n0, self.ratio)
        return self.sep.nominal(), self.eq.nominal()

    def to_dict(self) -> dict[str, Any]:
        return {
            "n0": self.n0,
            "alpha_pair": self.alpha_pair,
            "alpha": self.alpha,
            "ratio": self.ratio,
            "first_share": self.first_share,
            "rho": self.rho,
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
            first_share=float(d.get("first_share", FIRST_SHARE)),
            rho=float(d.get("rho", SPEND_RHO)),
            sep=Boundaries.from_dict(d["sep"]),
            eq=Boundaries.from_dict(d["eq"]),
            looks=int(d["looks"]),
            next=int(d["next"]),
            spent_all=bool(d.get("spent_all", False)),
        )
