"""Many workloads: Holm's correction, omnibus tests, and the ranking of results (docs/methods.md §7).

Sources: [PILOT] Li et al., MASCOTS 2016 ("Comparing Results"); [HOEFLER] Hoefler & Belli,
SC 2015, §3.2 (ANOVA, Kruskal-Wallis, effect size E); S. Holm, *A simple sequentially
rejective multiple test procedure*, Scand. J. Statist. 6 (1979).

:func:`rank_results` is what the adaptive controller (§10) and ``benchrun analyze compare``
call: it needs only the summaries (mean, s_q², n_q) of each result, never raw readings.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, Final, NamedTuple

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

from benchrun.stats.compare import (
    required_sample_size,
    tost_pvalues,
    welch_pvalues,
)
from benchrun.stats.results import HasPValue, jsonable

DIRECTIONS = ("lower_is_better", "higher_is_better")
SEPARATED: Final = "separated"
EQUIVALENT: Final = "equivalent"
UNDECIDED: Final = "undecided"


# ----------------------------------------------------------------------------- Holm
def holm(pvalues: ArrayLike) -> tuple[float, ...]:
    """Holm's step-down adjusted p-values, in the input order (docs/methods.md §7, Holm 1979).

    Parameters
    ----------
    pvalues : array_like
        One-dimensional p-values in [0, 1] (no NaN).

    Returns
    -------
    tuple of float
        The adjusted p-values p̃, in the order of ``pvalues``.

    Notes
    -----
    With p_(1) <= ... <= p_(m) sorted ascending,
    ``p̃_(i) = max_{j <= i} min(1, (m - j + 1)·p_(j))``. Rejecting every hypothesis with
    p̃ < α controls the family-wise error rate at α under any dependence.

    References
    ----------
    .. [1] S. Holm, "A simple sequentially rejective multiple test procedure",
       Scandinavian Journal of Statistics 6(2):65-70, 1979.

    Examples
    --------
    >>> holm([0.01, 0.04, 0.03, 0.005])
    (0.03, 0.06, 0.06, 0.02)

    Step down by hand over the sorted p-values 0.005, 0.01, 0.03, 0.04 (multipliers
    4, 3, 2, 1, then the running maximum):

    >>> import itertools
    >>> raw = [round(min(1.0, k * p), 6) for k, p in zip([4, 3, 2, 1], [0.005, 0.01, 0.03, 0.04])]
    >>> raw, list(itertools.accumulate(raw, max))
    ([0.02, 0.03, 0.06, 0.04], [0.02, 0.03, 0.06, 0.06])
    """
    p = np.asarray(pvalues, dtype=float)
    if p.ndim != 1:
        raise ValueError("pvalues must be a one-dimensional sequence")
    if not np.all((p >= 0) & (p <= 1)):
        raise ValueError("pvalues must be numbers in [0, 1] (no NaN)")
    m = p.size
    order = np.argsort(p, kind="stable")
    adjusted = np.maximum.accumulate(np.minimum(1.0, (m - np.arange(m)) * p[order]))
    out = np.empty(m)
    out[order] = adjusted
    return tuple(float(v) for v in out)


# ----------------------------------------------------------------------------- omnibus
@dataclass(frozen=True)
class PairEffect:
    """Effect size E = (m_a - m_b)/sqrt(within-group variance) of two groups ([HOEFLER] §3.2)."""

    a: str
    b: str
    e: float | None


@dataclass(frozen=True)
class OmnibusResult(HasPValue):
    """One-way ANOVA or Kruskal-Wallis over k groups (docs/methods.md §7, [HOEFLER] §3.2).

    ``statistic`` is F (ANOVA, df = (k-1, N-k)) or H (Kruskal-Wallis, df = (k-1,)).
    ``within_variance`` is the pooled within-group variance
    ``MS_within = Σ_i Σ_j (x_ij - m_i)² / (N - k)`` (unit²), and ``effect_sizes`` holds
    E = (m_a - m_b)/sqrt(MS_within) for every pair a < b of group means (unitless).
    """

    test: str
    statistic: float | None
    p_value: float
    df: tuple[float, ...]
    k: int
    n_total: int
    names: tuple[str, ...]
    sizes: tuple[int, ...]
    means: tuple[float, ...]
    medians: tuple[float, ...]
    within_variance: float
    effect_sizes: tuple[PairEffect, ...]
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, object]:
        """JSON-safe dict of the fields in order, ``effect_sizes`` as ``{a, b, e}`` dicts."""
        d: dict[str, object] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "effect_sizes":
                d[f.name] = [{"a": e.a, "b": e.b, "e": jsonable(e.e)} for e in value]
            else:
                d[f.name] = jsonable(value)
        return d


def _groups(groups: Mapping[str, ArrayLike] | Sequence[ArrayLike]) -> tuple[list, list]:
    if isinstance(groups, Mapping):
        names = [str(k) for k in groups]
        arrays = list(groups.values())
    else:
        arrays = list(groups)
        names = [str(i) for i in range(len(arrays))]
    if len(arrays) < 2:
        raise ValueError(f"need at least 2 groups, got {len(arrays)}")
    out = []
    for name, g in zip(names, arrays, strict=True):
        arr = np.asarray(g, dtype=float)
        if arr.ndim != 1 or arr.size < 2:
            raise ValueError(f"group {name!r} must be a one-dimensional sample of >= 2 values")
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"group {name!r} contains NaN or infinite values")
        out.append(arr)
    return names, out


def _omnibus(
    test: str,
    names: list[str],
    arrays: list[np.ndarray],
    stat: float | None,
    p: float,
    df: tuple[float, ...],
    notes: list[str],
    max_pairs: int | None = None,
) -> OmnibusResult:
    k, n_total = len(arrays), sum(a.size for a in arrays)
    means = [float(a.mean()) for a in arrays]
    ss_within = sum(float(np.sum((a - a.mean()) ** 2)) for a in arrays)
    msw = ss_within / (n_total - k)
    all_pairs = k * (k - 1) // 2
    if max_pairs is None or all_pairs <= max_pairs:
        first, second = np.triu_indices(k, 1)
    else:  # neighbours in the order given: k - 1 pairs, not k(k-1)/2
        first, second = np.arange(k - 1), np.arange(1, k)
        notes.append(
            f"effect sizes E for the {k - 1} neighbouring groups (in the order given) only: "
            f"all {all_pairs} pairs of {k} groups exceed the limit of {max_pairs} pairs"
        )
    if msw > 0:
        m = np.asarray(means)
        e_values: list[float | None] = ((m[first] - m[second]) / math.sqrt(msw)).tolist()
    else:
        e_values = [None] * first.size
    effects = [
        PairEffect(names[i], names[j], e)
        for i, j, e in zip(first.tolist(), second.tolist(), e_values, strict=True)
    ]
    if msw == 0:
        notes.append("within-group variance is 0: effect sizes E are undefined")
    return OmnibusResult(
        test=test,
        statistic=stat,
        p_value=p,
        df=df,
        k=k,
        n_total=n_total,
        names=tuple(names),
        sizes=tuple(a.size for a in arrays),
        means=tuple(means),
        medians=tuple(float(np.median(a)) for a in arrays),
        within_variance=msw,
        effect_sizes=tuple(effects),
        notes=tuple(notes),
    )


def anova(
    groups: Mapping[str, ArrayLike] | Sequence[ArrayLike], *, max_pairs: int | None = None
) -> OmnibusResult:
    """One-way ANOVA F-test of equal means (docs/methods.md §7, [HOEFLER] §3.2).

    Parameters
    ----------
    groups : mapping of str to array_like, or sequence of array_like
        At least 2 groups (named by the mapping's keys, else by position), each a
        one-dimensional sample of at least 2 finite values, in one unit.
    max_pairs : int, optional
        Most pairwise effect sizes E to compute; with more than ``max_pairs`` pairs of
        groups, only the k - 1 neighbours in the order given (with a note). None: all.

    Returns
    -------
    OmnibusResult
        ``statistic`` (F), ``df`` (k-1, N-k), ``pvalue``, group means and medians,
        ``within_variance`` (MS_within, unit²) and the pairwise effect sizes E.

    Notes
    -----
    ``F = (Σ n_i (m_i - m)²/(k-1)) / MS_within`` with df (k-1, N-k), via
    ``scipy.stats.f_oneway``. When every group is constant F is undefined: p is 0 if the
    means differ and 1 if not, and the result says so. E = (m_a - m_b)/sqrt(MS_within).

    References
    ----------
    .. [1] R. A. Fisher, *Statistical Methods for Research Workers*, Oliver and Boyd, 1925.
    .. [2] T. Hoefler and R. Belli, "Scientific benchmarking of parallel computing
       systems: twelve ways to tell the masses when reporting performance results",
       SC '15, §3.2. doi:10.1145/2807591.2807644

    Examples
    --------
    >>> g = {"a": [10.1, 10.3, 9.9, 10.2], "b": [10.6, 10.4, 10.9, 10.5],
    ...      "c": [10.0, 10.2, 10.1, 9.8]}
    >>> r = anova(g)
    >>> round(r.statistic, 4), round(r.pvalue, 6), r.df
    (10.7857, 0.004075, (2.0, 9.0))

    F written out from the between- and within-group sums of squares, p from scipy's F
    distribution:

    >>> from scipy.stats import f
    >>> x = [np.asarray(v) for v in g.values()]
    >>> m = np.mean(np.concatenate(x))
    >>> msb = sum(len(v) * (v.mean() - m) ** 2 for v in x) / 2
    >>> msw = sum(np.sum((v - v.mean()) ** 2) for v in x) / 9
    >>> round(float(msb / msw), 4), round(float(f.sf(msb / msw, 2, 9)), 6)
    (10.7857, 0.004075)
    >>> round(r.effect_sizes[0].e, 4), round(float((x[0].mean() - x[1].mean()) / msw**0.5), 4)
    (-2.539, -2.539)
    """
    names, arrays = _groups(groups)
    k, n = len(arrays), sum(a.size for a in arrays)
    df = (float(k - 1), float(n - k))
    if all(np.ptp(a) == 0 for a in arrays):
        same = len({float(a[0]) for a in arrays}) == 1
        note = "every group is constant: no F-test, the means are compared exactly"
        p = 1.0 if same else 0.0
        return _omnibus("one-way ANOVA", names, arrays, None, p, df, [note], max_pairs)
    res = stats.f_oneway(*arrays)
    stat, p = float(res.statistic), float(res.pvalue)
    return _omnibus("one-way ANOVA", names, arrays, stat, p, df, [], max_pairs)


def kruskal_wallis(
    groups: Mapping[str, ArrayLike] | Sequence[ArrayLike], *, max_pairs: int | None = None
) -> OmnibusResult:
    """Kruskal-Wallis H test that all groups come from one distribution (docs/methods.md §7).

    Parameters
    ----------
    groups : mapping of str to array_like, or sequence of array_like
        At least 2 groups (named by the mapping's keys, else by position), each a
        one-dimensional sample of at least 2 finite values, in one unit.
    max_pairs : int, optional
        Most pairwise effect sizes E to compute; with more than ``max_pairs`` pairs of
        groups, only the k - 1 neighbours in the order given (with a note). None: all.

    Returns
    -------
    OmnibusResult
        ``statistic`` (H), ``df`` (k-1,), ``pvalue``, group means and medians,
        ``within_variance`` and the pairwise effect sizes E as for :func:`anova`.

    Notes
    -----
    H on ranks with tie correction, χ² approximation with k-1 df, via ``scipy.stats.kruskal``.
    The effect sizes E are the same as for :func:`anova` (group means, MS_within). All
    values identical: H is undefined and p = 1.

    References
    ----------
    .. [1] W. H. Kruskal and W. A. Wallis, "Use of ranks in one-criterion variance
       analysis", Journal of the American Statistical Association 47(260):583-621, 1952.
       doi:10.1080/01621459.1952.10483441

    Examples
    --------
    >>> g = {"a": [10.1, 10.3, 9.9, 10.2], "b": [10.6, 10.4, 10.9, 10.5],
    ...      "c": [10.0, 10.2, 10.1, 9.8]}
    >>> r = kruskal_wallis(g)
    >>> round(r.statistic, 4), round(r.pvalue, 6)
    (7.7852, 0.020392)

    H from the mid-ranks, divided by the tie correction (two pairs of ties), p from χ²(2):

    >>> from scipy.stats import chi2, rankdata
    >>> ranks = rankdata(np.concatenate(list(g.values()))).reshape(3, 4)
    >>> h = 12 / (12 * 13) * np.sum(ranks.sum(axis=1) ** 2 / 4) - 3 * 13
    >>> h /= 1 - 2 * (2**3 - 2) / (12**3 - 12)
    >>> round(float(h), 4), round(float(chi2.sf(h, 2)), 6)
    (7.7852, 0.020392)
    """
    names, arrays = _groups(groups)
    df = (float(len(arrays) - 1),)
    if len({float(v) for a in arrays for v in a}) == 1:
        note = "all values are identical: H is undefined, p = 1"
        return _omnibus("Kruskal-Wallis", names, arrays, None, 1.0, df, [note], max_pairs)
    res = stats.kruskal(*arrays)
    stat, p = float(res.statistic), float(res.pvalue)
    return _omnibus("Kruskal-Wallis", names, arrays, stat, p, df, [], max_pairs)


# ----------------------------------------------------------------------------- ranking
@dataclass(frozen=True)
class PairVerdict:
    """Verdict on two neighbours a (better) and b in the ranking (docs/methods.md §7).

    ``difference = mean_b - mean_a`` (metric unit), ``relative_difference = difference/|mean_a|``;
    ``effect_size`` = difference / pooled SD of the subsession means (Cohen's d, unitless);
    ``welch_p`` two-sided, ``welch_p_holm`` Holm-adjusted over the k-1 adjacent pairs;
    ``tost_p`` for equivalence within ``margin``·|mean_a|; ``required_n`` (subsession means
    per side, for an undecided pair only) for a Welch test at level alpha/(k-1) and power 0.8.
    """

    a: str
    b: str
    verdict: str
    welch_p: float
    welch_p_holm: float
    tost_p: float
    ci_overlap: bool
    difference: float
    relative_difference: float | None
    effect_size: float | None
    required_n: int | None
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Ranking:
    """Results ordered best first, with a verdict for each adjacent pair (docs/methods.md §7)."""

    names: tuple[str, ...]
    estimates: tuple[float, ...]
    ci_low: tuple[float, ...]
    ci_high: tuple[float, ...]
    direction: str
    pairs: tuple[PairVerdict, ...]
    alpha: float
    margin: float
    confidence: float
    correction: str = "holm"
    notes: tuple[str, ...] = ()

    @property
    def decided(self) -> bool:
        """True when every adjacent pair is separated or equivalent (the §10 stop condition)."""
        return all(p.verdict != UNDECIDED for p in self.pairs)

    def to_dict(self) -> dict[str, object]:
        """JSON-safe dict of the fields in order (``pairs`` as dicts), then ``decided``."""
        d: dict[str, object] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "pairs":
                d[f.name] = [
                    {g.name: jsonable(getattr(p, g.name)) for g in fields(p)} for p in value
                ]
            else:
                d[f.name] = jsonable(value)
        d["decided"] = self.decided
        return d


def _field(item: Any, key: str, default: Any = ...) -> Any:
    if isinstance(item, Mapping):
        if key in item:
            return item[key]
    elif hasattr(item, key):
        return getattr(item, key)
    if default is ...:
        raise ValueError(f"each result needs a {key!r} field")
    return default


def rank_results(
    results: Sequence[Any],
    alpha: float = 0.01,
    margin: float = 0.01,
    confidence: float = 0.95,
) -> Ranking:
    """Rank results best first and decide each adjacent pair (docs/methods.md §7, [PILOT]).

    Parameters
    ----------
    results : sequence of objects or mappings
        Objects or mappings with ``name``, ``mean``, ``variance`` (s_q² of the
        subsession means), ``n`` (n_q), ``direction`` ("lower_is_better" or
        "higher_is_better", the same for all) and optionally ``ci_low``/``ci_high`` (otherwise
        the Student t interval ``mean ± t_{(1+confidence)/2, n-1}·sqrt(variance/n)``).
    alpha : float
        Level of the Holm-adjusted Welch tests and of each TOST test, in (0, 0.5).
    margin : float
        Equivalence margin relative to ``|mean_a|`` (0.01 = 1 %), > 0.
    confidence : float
        Level of the Student t intervals computed when ``ci_low``/``ci_high`` are absent.

    Returns
    -------
    Ranking
        ``names``, ``estimates`` and CIs best first, and one :class:`PairVerdict` per
        adjacent pair (``verdict``, ``welch_p``, ``welch_p_holm``, ``tost_p``,
        ``required_n``); ``decided`` when no pair is undecided.

    Notes
    -----
    Sorted by mean, best first (stable for ties). For each adjacent pair (a, b):
    CIs disjoint -> "separated"; else Holm-adjusted (over the k-1 adjacent tests) two-sided
    Welch p < ``alpha`` -> "separated"; else TOST within ±``margin``·|mean_a| at level
    ``alpha`` -> "equivalent"; else "undecided", with the n per side that a Welch test at
    alpha/(k-1) (Holm's first, strictest step) would need for power 0.8.

    References
    ----------
    .. [1] Y. Li, Y. Gupta, E. L. Miller and D. D. E. Long, "Pilot: a framework that
       understands how to do performance benchmarks the right way", 24th IEEE MASCOTS, 2016.
       doi:10.1109/MASCOTS.2016.31
    .. [2] S. Holm, "A simple sequentially rejective multiple test procedure",
       Scandinavian Journal of Statistics 6(2):65-70, 1979.

    Examples
    --------
    >>> r = rank_results([
    ...     {"name": "old", "mean": 2.10, "variance": 0.0004, "n": 30, "direction": "lower_is_better"},
    ...     {"name": "new", "mean": 2.00, "variance": 0.0004, "n": 30, "direction": "lower_is_better"},
    ... ])
    >>> r.names, r.pairs[0].verdict, r.decided
    (('new', 'old'), 'separated', True)

    Three results, two of them 0.25 % apart (equivalent within 1 %):

    >>> rs = [{"name": k, "mean": m, "variance": 0.0004, "n": 30, "direction": "lower_is_better"}
    ...       for k, m in (("c", 2.10), ("a", 2.00), ("b", 2.005))]
    >>> r = rank_results(rs)
    >>> r.names, [p.verdict for p in r.pairs]
    (('a', 'b', 'c'), ['equivalent', 'separated'])

    The Welch p-values from scipy, Holm-adjusted, and a Student t interval:

    >>> from scipy import stats as sps
    >>> p1 = sps.ttest_ind_from_stats(2.0, 0.02, 30, 2.005, 0.02, 30, equal_var=False).pvalue
    >>> p2 = sps.ttest_ind_from_stats(2.005, 0.02, 30, 2.1, 0.02, 30, equal_var=False).pvalue
    >>> [bool(abs(x - y) <= 1e-12 * y) for x, y in zip([p.welch_p_holm for p in r.pairs], holm([p1, p2]))]
    [True, True]
    >>> [round(float(v), 6) for v in sps.t.interval(0.95, 29, loc=2.0, scale=0.02 / 30**0.5)]
    [1.992532, 2.007468]
    >>> round(r.ci_low[0], 6), round(r.ci_high[0], 6)
    (1.992532, 2.007468)
    """
    alpha, margin, confidence = float(alpha), float(margin), float(confidence)
    if not 0 < alpha < 0.5:
        raise ValueError(f"alpha must be in (0, 0.5), got {alpha}")
    if not (math.isfinite(margin) and margin > 0):
        raise ValueError(f"margin must be a finite number > 0, got {margin}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    items = list(results)
    if not items:
        raise ValueError("rank_results needs at least one result")
    rows: list[_Row] = []
    for item in items:
        name = str(_field(item, "name"))
        mean, var, n = (
            float(_field(item, "mean")),
            float(_field(item, "variance")),
            _field(item, "n"),
        )
        direction = _field(item, "direction")
        if direction not in DIRECTIONS:
            raise ValueError(f"{name}: direction must be one of {DIRECTIONS}, got {direction!r}")
        if not (math.isfinite(mean) and math.isfinite(var) and var >= 0):
            raise ValueError(f"{name}: mean must be finite and variance finite and >= 0")
        if float(n) != int(n) or int(n) < 2:
            raise ValueError(f"{name}: n must be an integer >= 2, got {n}")
        n = int(n)
        lo, hi = _field(item, "ci_low", None), _field(item, "ci_high", None)
        if (lo is None) != (hi is None):
            raise ValueError(f"{name}: give both ci_low and ci_high, or neither")
        if lo is None:
            half = float(stats.t.ppf(0.5 + confidence / 2, n - 1)) * math.sqrt(var / n)
            lo, hi = mean - half, mean + half
        rows.append(_Row(name, mean, var, n, direction, float(lo), float(hi)))
    if len({r.direction for r in rows}) > 1:
        raise ValueError("results with different directions cannot be ranked together")
    if len({r.name for r in rows}) != len(rows):
        raise ValueError("result names must be unique")
    direction = rows[0].direction
    sign = 1.0 if direction == "lower_is_better" else -1.0
    rows.sort(key=lambda r: sign * r.mean)
    k = len(rows)
    # the k-1 adjacent pairs at once: the same numbers as one welch/tost_from_summary each
    a_side, b_side = rows[:-1], rows[1:]
    cols = (
        [r.mean for r in a_side],
        [r.var for r in a_side],
        [r.n for r in a_side],
        [r.mean for r in b_side],
        [r.var for r in b_side],
        [r.n for r in b_side],
    )
    welch_ps = [float(p) for p in welch_pvalues(*cols)] if k > 1 else []
    tost_p, tost_eq = (
        tost_pvalues(*cols, margin=margin, relative=[r.mean != 0 for r in a_side], alpha=alpha)
        if k > 1
        else (np.empty(0), np.empty(0, dtype=bool))
    )
    adjusted = holm(welch_ps)
    pairs = [
        _decide(a, b, p, p_holm, float(tp), bool(te), k, alpha)
        for (a, b), p, p_holm, tp, te in zip(
            itertools.pairwise(rows), welch_ps, adjusted, tost_p, tost_eq, strict=True
        )
    ]
    notes = ["adjacent Welch tests corrected with Holm's step-down method"] if k > 2 else []
    return Ranking(
        names=tuple(r.name for r in rows),
        estimates=tuple(r.mean for r in rows),
        ci_low=tuple(r.lo for r in rows),
        ci_high=tuple(r.hi for r in rows),
        direction=direction,
        pairs=tuple(pairs),
        alpha=alpha,
        margin=margin,
        confidence=confidence,
        correction="holm",
        notes=tuple(notes),
    )


class _Row(NamedTuple):
    name: str
    mean: float
    var: float
    n: int
    direction: str
    lo: float
    hi: float


def _decide(
    a: _Row,
    b: _Row,
    p: float,
    p_holm: float,
    tost_p: float,
    equivalent: bool,
    k: int,
    alpha: float,
) -> PairVerdict:
    """The §7 verdict for neighbours a (better) and b, given their Welch and TOST results."""
    notes: list[str] = []
    overlap = not (a.hi < b.lo or b.hi < a.lo)
    diff = b.mean - a.mean
    rel = diff / abs(a.mean) if a.mean != 0 else None
    if a.mean == 0:
        notes.append("mean of a is 0: no relative difference; TOST margin taken as absolute")
    sp2 = ((a.n - 1) * a.var + (b.n - 1) * b.var) / (a.n + b.n - 2)
    eff = diff / math.sqrt(sp2) if sp2 > 0 else None
    required = None
    if not overlap or p_holm < alpha:
        verdict = SEPARATED
    elif equivalent:
        verdict = EQUIVALENT
    else:
        verdict = UNDECIDED
        try:
            required = required_sample_size(a.mean, a.var, b.mean, b.var, alpha=alpha / (k - 1))
        except ValueError:
            notes.append("the means are too close: more than 10^9 subsession means needed")
        if required is None and diff == 0:
            notes.append("equal means: no n separates them; only TOST can end this pair")
    return PairVerdict(
        a=a.name,
        b=b.name,
        verdict=verdict,
        welch_p=p,
        welch_p_holm=p_holm,
        tost_p=tost_p,
        ci_overlap=overlap,
        difference=diff,
        relative_difference=rel,
        effect_size=eff,
        required_n=required,
        notes=tuple(notes),
    )
