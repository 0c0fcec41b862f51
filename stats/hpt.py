"""Hierarchical Performance Testing (HPT) and r-speedup across a benchmark suite.

docs/methods.md §8, after [CHEN] T. Chen et al., *Statistical Performance Comparisons of
Computers*, HPCA 2012 / IEEE Trans. Computers 2015, §IV and Algorithm 1.

Two systems A and B are run on the same n benchmarks, m runs each (counts may differ per
benchmark and per system). Scores are "larger is better"; times are converted (see
:func:`hpt`). HPT works in two levels:

1. per benchmark τ, a one-sided Wilcoxon rank-sum (Mann-Whitney) test of A's runs against
   B's runs, in the direction of the observed medians, at level α_τ. Significant ->
   ``d_τ = median(A_τ) - median(B_τ)``, otherwise ``d_τ = 0``;
2. across benchmarks, a one-sided Wilcoxon signed-rank test over d_1..d_n with the zeros
   kept in the ranking and half of each zero's rank given to each side ("zero split").

The confidence that A outperforms B is ``1 - p`` of the level-2 test. Both levels are
rank-based, so HPT needs no normality and no independence between benchmarks.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import special, stats

from benchrun.stats.results import AsDict, HasPValue, jsonable

#: runs per side from which the rank-sum test uses the normal approximation (docs/methods.md §8.1)
NORMAL_FROM_RUNS = 12
#: benchmarks from which the signed-rank test uses the normal approximation (docs/methods.md §8.2)
NORMAL_FROM_BENCHMARKS = 25
#: relative gap below which two |d_τ| are treated as tied (floating-point noise, not data)
_TIE_RTOL = 1e-9

Suite = Mapping[str, ArrayLike] | ArrayLike


# ------------------------------------------------------------------------------ input


def _runs(values: ArrayLike, label: str) -> np.ndarray:
    arr = np.asarray(values, dtype=float).ravel()
    if arr.size == 0:
        raise ValueError(f"{label} has no runs")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{label} contains NaN or infinite values")
    return arr


def paired_suites(a: Suite, b: Suite) -> tuple[list[str], list[np.ndarray], list[np.ndarray]]:
    """Normalise two suites to (benchmark names, runs of A, runs of B), same benchmark order.

    Accepts two 2-D arrays (benchmark x run; same number of rows, run counts may differ
    between A and B) or two mappings benchmark -> runs with the same keys (A's key order is
    kept; run counts may differ per benchmark). Raises ValueError with a one-line message
    otherwise.
    """
    if isinstance(a, Mapping) != isinstance(b, Mapping):
        raise ValueError("a and b must both be dicts (benchmark -> runs) or both 2-D arrays")
    if isinstance(a, Mapping):
        assert isinstance(b, Mapping)
        if set(a) != set(b):
            missing = sorted(set(a) ^ set(b), key=str)
            raise ValueError(f"a and b must have the same benchmarks; differ in {missing}")
        names = [str(k) for k in a]
        runs_a = [_runs(a[k], f"benchmark {k!r} of a") for k in a]
        runs_b = [_runs(b[k], f"benchmark {k!r} of b") for k in a]
    else:
        arr_a, arr_b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
        if arr_a.ndim != 2 or arr_b.ndim != 2:
            raise ValueError(
                "a and b must be 2-D arrays (benchmark x run) or dicts benchmark -> runs"
            )
        if arr_a.shape[0] != arr_b.shape[0]:
            raise ValueError(f"a has {arr_a.shape[0]} benchmarks (rows) but b has {arr_b.shape[0]}")
        names = [str(i) for i in range(arr_a.shape[0])]
        runs_a = [_runs(r, f"row {i} of a") for i, r in enumerate(arr_a)]
        runs_b = [_runs(r, f"row {i} of b") for i, r in enumerate(arr_b)]
    if not names:
        raise ValueError("the suites contain no benchmarks")
    return names, runs_a, runs_b


def _to_scores(
    runs_a: list[np.ndarray], runs_b: list[np.ndarray], higher_is_better: bool, time_score: str
) -> tuple[list[np.ndarray], list[np.ndarray], str]:
    if higher_is_better:
        return runs_a, runs_b, "as given (higher is better)"
    if time_score not in ("normalized", "reciprocal"):
        raise ValueError(f"time_score must be 'normalized' or 'reciprocal', got {time_score!r}")
    if any(np.any(x <= 0) for x in runs_a + runs_b):
        raise ValueError("times (higher_is_better=False) must all be > 0 to convert to scores")
    if time_score == "reciprocal":
        return [1.0 / x for x in runs_a], [1.0 / x for x in runs_b], "1/t"
    refs = [float(np.median(np.concatenate([x, y]))) for x, y in zip(runs_a, runs_b, strict=True)]
    sa = [ref / x for ref, x in zip(refs, runs_a, strict=True)]
    sb = [ref / y for ref, y in zip(refs, runs_b, strict=True)]
    return sa, sb, "median(pooled t of the benchmark) / t"


# ------------------------------------------------------------------- level 1: rank-sum
@lru_cache(maxsize=4096)
def _rank_sum_null(doubled_ranks: tuple[int, ...], k: int) -> np.ndarray:
    """Exact permutation distribution of the sum of k of the given doubled mid-ranks.

    Counts of k-subsets by sum (index = sum of doubled ranks), computed by the subset-sum
    recursion ``N_j(s) <- N_j(s) + N_{j-1}(s - w)``; it is exact also with ties because the
    mid-ranks of the observed tie pattern are used (conditional distribution given ties).
    """
    top = sum(sorted(doubled_ranks)[-k:]) if k else 0
    counts = np.zeros((k + 1, top + 1))
    counts[0, 0] = 1.0
    for w in doubled_ranks:
        counts[1:, w:] += counts[:-1, : top + 1 - w].copy()
    return counts[k]


def rank_sum_pvalues(x: np.ndarray, y: np.ndarray) -> tuple[float, float, str]:
    """One-sided Wilcoxon rank-sum p-values (p_greater: x tends larger, p_less), method.

    Exact conditional distribution (given the tie pattern) when min(len x, len y) < 12,
    else the normal approximation of U with tie correction and no continuity correction,
    ``z = (U - mn/2) / sqrt(mn/12 · (N + 1 - Σ(t³ - t)/(N(N - 1))))`` (docs/methods.md §8.1).
    With every value tied both p-values are 1.
    """
    m, n = x.size, y.size
    pooled = np.concatenate([x, y])
    ranks = stats.rankdata(pooled)
    if np.all(pooled == pooled[0]):
        return 1.0, 1.0, "exact" if min(m, n) < NORMAL_FROM_RUNS else "normal"
    if min(m, n) < NORMAL_FROM_RUNS:
        doubled = np.rint(2.0 * ranks).astype(int)
        small_is_x = m <= n
        k = m if small_is_x else n
        obs = int(doubled[:m].sum()) if small_is_x else int(doubled[m:].sum())
        dist = _rank_sum_null(tuple(sorted(doubled.tolist())), k)
        total = dist.sum()
        upper = dist[obs:].sum() / total  # P(W_small >= obs)
        lower = dist[: obs + 1].sum() / total  # P(W_small <= obs)
        p_greater, p_less = (upper, lower) if small_is_x else (lower, upper)
        return float(min(1.0, p_greater)), float(min(1.0, p_less)), "exact"
    u = ranks[:m].sum() - m * (m + 1) / 2.0
    big_n = m + n
    _, t = np.unique(pooled, return_counts=True)
    var = m * n / 12.0 * ((big_n + 1) - np.sum(t**3 - t) / (big_n * (big_n - 1)))
    z = (u - m * n / 2.0) / math.sqrt(var)
    return float(special.ndtr(-z)), float(special.ndtr(z)), "normal"


# ----------------------------------------------------------------- level 2: signed-rank
def tied_ranks(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mid-ranks (1-based) of non-negative values and the sizes of the tie groups.

    Values whose sorted neighbours differ by at most 1e-9 of the largest value are tied,
    so floating-point noise (e.g. after rescaling) cannot split a real tie.
    """
    n = values.size
    order = np.argsort(values, kind="stable")
    xs = values[order]
    scale = xs[-1] if n and xs[-1] > 0 else 1.0
    group = np.concatenate([[0], np.cumsum(np.diff(xs) > _TIE_RTOL * scale)])
    _, first, counts = np.unique(group, return_index=True, return_counts=True)
    mid = first + (counts + 1) / 2.0  # 1-based mid-rank of each group
    ranks = np.empty(n)
    ranks[order] = mid[group]
    return ranks, counts


@lru_cache(maxsize=64)
def _signed_rank_null(n: int) -> np.ndarray:
    """P(T = t), t = 0..n(n+1)/2, of the signed-rank statistic with untied ranks 1..n."""
    counts = np.zeros(n * (n + 1) // 2 + 1)
    counts[0] = 1.0
    for r in range(1, n + 1):
        counts[r:] = counts[r:] + counts[:-r].copy()
    return counts / 2.0**n


def signed_rank_zsplit(d: np.ndarray) -> tuple[float, float, float, float, str]:
    """(R_A, R_B, p_A, p_B, method): one-sided signed-rank tests with zeros split.

    ``R_A = Σ_{d>0} rank + ½ Σ_{d=0} rank``, ``R_B = Σ_{d<0} rank + ½ Σ_{d=0} rank``, ranks
    of |d| ascending with mid-ranks for ties (docs/methods.md §8.2). p_A is the p-value of
    "A outperforms B" (large R_A). For n < 25 the exact distribution of the statistic with
    untied ranks 1..n is used and a non-integer R (ties, zeros) is rounded conservatively:
    ``p_A = P(T >= floor(R_A))`` -- the rule of scipy.stats.wilcoxon(zero_method="zsplit",
    method="exact"). For n >= 25: ``z = (R_A - n(n+1)/4) / σ`` with
    ``σ² = (n(n+1)(2n+1) - ½ Σ(t³ - t))/24`` (tie groups t, zeros included; without ties this
    is the docs/methods.md formula), no continuity correction.
    """
    n = d.size
    ranks, ties = tied_ranks(np.abs(d))
    half_zero = 0.5 * ranks[d == 0].sum()
    r_a = float(ranks[d > 0].sum() + half_zero)
    r_b = float(ranks[d < 0].sum() + half_zero)
    if n < NORMAL_FROM_BENCHMARKS:
        pmf = _signed_rank_null(n)
        p_a = float(pmf[int(math.floor(r_a + 1e-9)) :].sum())
        p_b = float(pmf[int(math.floor(r_b + 1e-9)) :].sum())
        return r_a, r_b, min(1.0, p_a), min(1.0, p_b), "exact"
    var = (n * (n + 1) * (2 * n + 1) - 0.5 * np.sum(ties**3 - ties)) / 24.0
    if var <= 0:
        return r_a, r_b, 1.0, 1.0, "normal"
    z = (r_a - n * (n + 1) / 4.0) / math.sqrt(var)
    return r_a, r_b, float(special.ndtr(-z)), float(special.ndtr(z)), "normal"


# --------------------------------------------------------------------------- results
@dataclass(frozen=True)
class BenchmarkRow(AsDict):
    """One benchmark of an HPT comparison (level 1).

    ``median_a``/``median_b`` are in the unit of the input; ``d`` and the ranks are in score
    units (after conversion of times). ``p_value`` is the one-sided rank-sum p-value in the
    direction of the medians (None when the score medians are equal: d = 0 by definition).
    """

    benchmark: str
    n_a: int
    n_b: int
    median_a: float
    median_b: float
    p_value: float | None
    method: str
    alpha: float
    significant: bool
    winner: str
    d: float
    rank: float


@dataclass(frozen=True)
class HptResult(HasPValue):
    """Result of :func:`hpt` (docs/methods.md §8, [CHEN] §IV).

    ``confidence`` = 1 - p of the one-sided signed-rank test "A outperforms B";
    ``confidence_b`` the same for "B outperforms A". Swapping A and B swaps them exactly
    (``hpt(b, a).confidence == hpt(a, b).confidence_b``, R_A and R_B swap). Their sum is 1
    in the normal branch (n >= 25); in the exact branch the conservative rounding makes it
    <= 1, e.g. ``1 - P(T = R_A)`` when R_A is an integer (zeros or ties make R half-integer).
    """

    benchmarks: tuple[BenchmarkRow, ...]
    r_a: float
    r_b: float
    p_value: float
    confidence: float
    confidence_b: float
    method: str
    alpha: float
    winner: str | None
    verdict: str
    wins_a: int
    wins_b: int
    ties: int
    higher_is_better: bool
    score: str
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, object]:
        out = jsonable({k: v for k, v in asdict(self).items() if k != "benchmarks"})
        out["benchmarks"] = [row.to_dict() for row in self.benchmarks]
        return out


# ------------------------------------------------------------------------------- core
def _alpha_tau(alpha_benchmark: float | None, m: int) -> float:
    if alpha_benchmark is not None:
        return alpha_benchmark
    return 0.05 if m >= 5 else 0.10


def _level1(
    sa: list[np.ndarray], sb: list[np.ndarray], alpha_benchmark: float | None
) -> tuple[np.ndarray, list[tuple[float | None, str, float, bool, str]]]:
    d = np.zeros(len(sa))
    rows: list[tuple[float | None, str, float, bool, str]] = []
    for i, (x, y) in enumerate(zip(sa, sb, strict=True)):
        alpha_t = _alpha_tau(alpha_benchmark, min(x.size, y.size))
        med_x, med_y = float(np.median(x)), float(np.median(y))
        if med_x == med_y:
            method = "exact" if min(x.size, y.size) < NORMAL_FROM_RUNS else "normal"
            rows.append((None, method, alpha_t, False, "tie"))
            continue
        p_greater, p_less, method = rank_sum_pvalues(x, y)
        p = p_greater if med_x > med_y else p_less
        significant = p <= alpha_t
        if significant:
            d[i] = med_x - med_y
        winner = ("A" if med_x > med_y else "B") if significant else "tie"
        rows.append((p, method, alpha_t, significant, winner))
    return d, rows


def _confidence(sa: list[np.ndarray], sb: list[np.ndarray], alpha_benchmark: float | None) -> float:
    d, _ = _level1(sa, sb, alpha_benchmark)
    return 1.0 - signed_rank_zsplit(d)[2]


def _check_alpha(value: float | None, name: str) -> None:
    if value is not None and not 0.0 < float(value) < 1.0:
        raise ValueError(f"{name} must be strictly between 0 and 1, got {value}")


def hpt(
    a: Suite,
    b: Suite,
    higher_is_better: bool = True,
    alpha_benchmark: float | None = None,
    *,
    alpha: float = 0.05,
    time_score: str = "normalized",
) -> HptResult:
    """Hierarchical Performance Testing of A against B over a benchmark suite (docs/methods.md §8).

    Parameters
    ----------
    a, b : 2-D arrays (benchmark x run, same benchmark order) or dicts benchmark -> runs.
    higher_is_better : True for scores (throughput, SPEC ratios); False for times, which are
        converted to scores first (see ``time_score``).
    alpha_benchmark : level α_τ of the per-benchmark rank-sum tests; default 0.05 when the
        smaller side has >= 5 runs, else 0.10 ([CHEN] §IV).
    alpha : level of the verdict of the across-benchmark test (confidence >= 1 - alpha).
    time_score : conversion of times t (only with ``higher_is_better=False``):
        ``"normalized"`` (default) score = c_τ / t with c_τ the median of the benchmark's
        pooled runs of A and B, so d_τ is a dimensionless relative difference and short
        benchmarks do not dominate the ranking; ``"reciprocal"`` score = 1/t.

    Invariance: level 1 (p-values, significance, and for odd run counts the winner) is the
    same for every conversion c_τ / t; only the ranking of |d_τ| across benchmarks, hence the
    confidence, depends on c_τ. Scaling all runs of both systems by one positive factor (a
    change of unit) leaves every p-value, winner, rank and the verdict unchanged for scores
    and for both time conversions.

    Returns
    -------
    HptResult with the per-benchmark table (medians, p, significant, winner, d, rank),
    R_A, R_B, the confidence 1 - p that A outperforms B, the same for B, and a verdict.

    References
    ----------
    .. [1] T. Chen, Q. Guo, O. Temam, Y. Wu, Y. Bao, Z. Xu and Y. Chen, "Statistical
       performance comparisons of computers", IEEE Transactions on Computers
       64(5):1442-1455, 2015 (HPCA 2012), §IV and Algorithm 1.
    .. [2] F. Wilcoxon, "Individual comparisons by ranking methods", Biometrics Bulletin
       1(6):80-83, 1945.

    Examples
    --------
    >>> a = [[11, 12, 13], [21, 22, 23], [31, 32, 33], [41, 42, 43], [51, 52, 53]]
    >>> b = [[1, 2, 3], [2, 3, 4], [3, 4, 5], [4, 5, 6], [5, 6, 7]]
    >>> round(hpt(a, b).confidence, 5)  # all 5 benchmarks won by A: 1 - 2**-5
    0.96875
    """
    _check_alpha(alpha_benchmark, "alpha_benchmark")
    _check_alpha(alpha, "alpha")
    names, runs_a, runs_b = paired_suites(a, b)
    sa, sb, score = _to_scores(runs_a, runs_b, higher_is_better, time_score)
    d, level1 = _level1(sa, sb, alpha_benchmark)
    r_a, r_b, p_a, p_b, method = signed_rank_zsplit(d)
    ranks, _ = tied_ranks(np.abs(d))
    rows = tuple(
        BenchmarkRow(
            benchmark=name,
            n_a=int(x.size),
            n_b=int(y.size),
            median_a=float(np.median(x)),
            median_b=float(np.median(y)),
            p_value=p,
            method=m,
            alpha=alpha_t,
            significant=sig,
            winner=win,
            d=float(d_i),
            rank=float(rank),
        )
        for name, x, y, (p, m, alpha_t, sig, win), d_i, rank in zip(
            names, runs_a, runs_b, level1, d, ranks, strict=True
        )
    )
    conf_a, conf_b = 1.0 - p_a, 1.0 - p_b
    if conf_a >= 1.0 - alpha:
        winner, verdict = "A", f"A outperforms B with confidence {conf_a:.4f}"
    elif conf_b >= 1.0 - alpha:
        winner, verdict = "B", f"B outperforms A with confidence {conf_b:.4f}"
    else:
        winner = None
        verdict = (
            f"no significant difference at confidence {1 - alpha:g} "
            f"(A over B: {conf_a:.4f}, B over A: {conf_b:.4f})"
        )
    return HptResult(
        benchmarks=rows,
        r_a=r_a,
        r_b=r_b,
        p_value=p_a,
        confidence=conf_a,
        confidence_b=conf_b,
        method=method,
        alpha=float(alpha),
        winner=winner,
        verdict=verdict,
        wins_a=sum(r.winner == "A" for r in rows),
        wins_b=sum(r.winner == "B" for r in rows),
        ties=sum(r.winner == "tie" for r in rows),
        higher_is_better=bool(higher_is_better),
        score=score,
        notes=_hpt_notes(rows, len(names), alpha),
    )


def _hpt_notes(rows: Sequence[BenchmarkRow], n: int, alpha: float) -> tuple[str, ...]:
    notes: list[str] = []
    weak = [
        r.benchmark
        for r in rows
        if r.method == "exact" and 1.0 / math.comb(r.n_a + r.n_b, min(r.n_a, r.n_b)) > r.alpha
    ]
    if weak:
        notes.append(
            f"{len(weak)} benchmark(s) have too few runs for the rank-sum test ever to reach "
            f"its level (e.g. {weak[0]!r}); they always count as ties"
        )
    if 2.0**-n > alpha:
        notes.append(
            f"with {n} benchmarks the highest attainable confidence is {1 - 2.0**-n:.4f} "
            f"< {1 - alpha:g}: HPT cannot conclude; add benchmarks"
        )
    return tuple(notes)


# -------------------------------------------------------------------------- r-speedup
@dataclass(frozen=True)
class RSpeedupResult(AsDict):
    """Result of :func:`r_speedup` (docs/methods.md §8.4-8.5, [CHEN] Algorithm 1, Table IV).

    ``gamma_grid`` is CHEN's answer on the 0.01 grid; ``gamma`` is refined by bisection
    inside the next grid step and is within ``precision`` below the true boundary.
    ``gmean_speedup`` is the geometric mean over benchmarks of the ratio of medians and
    ``gmean_confidence`` HPT's confidence that A is ``gmean_speedup`` times better.
    """

    r: float
    gamma: float | None
    gamma_grid: float | None
    precision: float | None
    confidence_at_gamma: float | None
    confidence_at_1: float
    gmean_speedup: float
    gmean_confidence: float
    evaluations: int
    higher_is_better: bool
    score: str
    notes: tuple[str, ...] = ()


def r_speedup(
    a: Suite,
    b: Suite,
    r: float = 0.95,
    higher_is_better: bool = True,
    *,
    alpha_benchmark: float | None = None,
    time_score: str = "normalized",
    tol: float = 1e-6,
    max_steps: int = 100_000,
) -> RSpeedupResult:
    """Largest γ >= 1 such that HPT(A/γ, B) still has confidence >= r (docs/methods.md §8.4).

    Parameters
    ----------
    a, b : array_like or mapping of str to array_like
        Runs of A and B: 2-D (benchmark x run) arrays or dicts benchmark -> runs, the same
        benchmarks for both (as for :func:`hpt`).
    r : float
        Required HPT confidence, in (0.5, 1).
    higher_is_better : bool
        Whether the values are scores (True) or times (False), as for :func:`hpt`.
    alpha_benchmark : float, optional
        Level of the per-benchmark rank-sum tests (default as in :func:`hpt`).
    time_score : str
        How times are turned into scores, as for :func:`hpt`.
    tol : float
        Precision of the bisection of γ.
    max_steps : int
        Most grid steps walked.

    Returns
    -------
    RSpeedupResult
        ``gamma`` (refined), ``gamma_grid`` (last passing grid point), ``precision``,
        ``confidence_at_gamma``, ``confidence_at_1``, ``gmean_speedup`` and
        ``gmean_confidence``; ``gamma`` None if HPT(A, B) itself is below r.

    Notes
    -----
    "A/γ" divides A's scores by γ (for times: multiplies A's times by γ), scores converted
    once as in :func:`hpt`. As in [CHEN] Algorithm 1 the grid γ = 1.00, 1.01, ... is walked
    up to the first grid point whose confidence falls below r; the last passing point is
    ``gamma_grid``. The boundary is then refined by bisection inside that 0.01 step down to
    ``tol`` (``gamma`` passes, ``gamma + precision`` fails). Cost: one HPT per grid step,
    i.e. ~100 per unit of speedup. If HPT(A, B) itself is below r, ``gamma`` is None.

    Also returns the geometric-mean speedup ``G = exp(mean_τ log(med A_τ / med B_τ))``
    (for times ``med B_τ / med A_τ``) and HPT's confidence that A is G times better (§8.5),
    which shows how much the single number overclaims ([CHEN] Table IV).

    References
    ----------
    .. [1] T. Chen, Q. Guo, O. Temam, Y. Wu, Y. Bao, Z. Xu and Y. Chen, "Statistical
       performance comparisons of computers", HPCA 2012 (Algorithm 1, Table IV).

    Examples
    --------
    >>> a = [[2.0, 2.02, 2.04], [4.0, 4.04, 4.08], [3.0, 3.03, 3.06], [5.0, 5.05, 5.1],
    ...      [6.0, 6.06, 6.12]]
    >>> b = [[1.0, 1.01, 1.02], [2.0, 2.02, 2.04], [1.5, 1.515, 1.53], [2.5, 2.525, 2.55],
    ...      [3.0, 3.03, 3.06]]
    >>> res = r_speedup(a, b, r=0.95)
    >>> res.gamma_grid  # 5 benchmarks, 3 runs: boundary 2*1.01/1.02
    1.98

    HPT itself at the grid point and the next one: 1 - 1/2⁵ when all five benchmarks
    favour A (exact signed-rank test), far less past the boundary:

    >>> hpt(np.divide(a, 1.98), b).confidence, 1 - 0.5**5
    (0.96875, 0.96875)
    >>> hpt(np.divide(a, 1.99), b).confidence < 0.95
    True
    >>> res.gmean_speedup, float(stats.gmean(np.median(a, axis=1) / np.median(b, axis=1)))
    (2.0, 2.0)
    """
    if not 0.5 < float(r) < 1.0:
        raise ValueError(f"r must be strictly between 0.5 and 1, got {r}")
    _check_alpha(alpha_benchmark, "alpha_benchmark")
    names, runs_a, runs_b = paired_suites(a, b)
    sa, sb, score = _to_scores(runs_a, runs_b, higher_is_better, time_score)
    if any(np.any(x <= 0) for x in sa + sb):
        raise ValueError("r-speedup needs scores > 0 (it divides A's performance by γ)")

    evaluations = 0

    def conf(gamma: float) -> float:
        nonlocal evaluations
        evaluations += 1
        return _confidence([x / gamma for x in sa], sb, alpha_benchmark)

    ratios = [float(np.median(x) / np.median(y)) for x, y in zip(runs_a, runs_b, strict=True)]
    gmean = float(stats.gmean(ratios)) if higher_is_better else float(1.0 / stats.gmean(ratios))
    gmean_conf = conf(gmean)
    conf1 = conf(1.0)
    notes: list[str] = []
    common: dict[str, Any] = dict(
        r=float(r),
        confidence_at_1=conf1,
        gmean_speedup=gmean,
        gmean_confidence=gmean_conf,
        higher_is_better=bool(higher_is_better),
        score=score,
    )
    if conf1 < r:
        notes.append(
            f"HPT's confidence that A outperforms B is {conf1:.4f} < r = {r:g} even at γ = 1: "
            "no r-speedup of A over B (try B over A)"
        )
        return RSpeedupResult(
            gamma=None,
            gamma_grid=None,
            precision=None,
            confidence_at_gamma=None,
            evaluations=evaluations,
            notes=tuple(notes),
            **common,
        )
    k, c_k = 0, conf1
    while True:
        if k + 1 > max_steps:
            raise ValueError(f"r-speedup exceeds {1 + max_steps / 100:g}; raise max_steps")
        c_next = conf(1.0 + (k + 1) / 100.0)
        if c_next < r:
            break
        k, c_k = k + 1, c_next
    lo, hi, c_lo = 1.0 + k / 100.0, 1.0 + (k + 1) / 100.0, c_k
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        c_mid = conf(mid)
        if c_mid >= r:
            lo, c_lo = mid, c_mid
        else:
            hi = mid
    if gmean_conf < r:
        notes.append(
            f"the geometric-mean speedup {gmean:.4g} holds only with confidence "
            f"{gmean_conf:.4f} < r = {r:g}"
        )
    return RSpeedupResult(
        gamma=lo,
        gamma_grid=round(1.0 + k / 100.0, 2),
        precision=hi - lo,
        confidence_at_gamma=c_lo,
        evaluations=evaluations,
        notes=tuple(notes),
        **common,
    )
