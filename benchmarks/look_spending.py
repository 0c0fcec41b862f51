"""How many passes each way of spending α over the looks costs (issue 28; docs/methods.md §10.1).

Looks at n0 = 10 passes, then n_{j+1} = max(n_j + 1, ⌈r·n_j⌉) (r = 1.5, 1.25, 1.1), a
two-sided test at α 0.01 of the per-pass mean with the per-pass sd known (the statistic is
Z_k = S(I_k)/√I_k, I = passes, S a Brownian motion with drift θ per pass). For a true
effect whose fixed-sample oracle (80 % power) is n* = ((z_.995 + z_.8)/θ)² passes, every
figure is computed exactly with stats/groupseq.py's crossing_probabilities (no
simulation), with a budget of 4·n* passes:

- P(n*): P(separated in the right direction by n* passes) (the oracle's is 0.8);
- power: P(separated in the right direction by the budget);
- median/n*: the median stopping passes over n* (inf when power < 0.5);
- mean/n*: E[min(stopping passes, budget)]/n*;
- α@budget: the α the rule has spent by the budget (P_H0 of any crossing).

Rules: (1) today's Bonferroni: α/K at each of the K looks up to 500 passes, nothing after;
(2) the recursive boundaries with the same α increments; (3) recursive boundaries with
F(I) = α·min(1, log(I·r/n0)/log(H·r/n0)) for a horizon H of 500 and 2000 passes (uniform
in log I up to H); (4) F(I) = α·(1 - (n0/I)^ρ), ρ = 0.25, 0.5, 1 (no horizon, tends to α; nothing at n0).
A second table: the nominal two-sided p level of the look at or just below 100, 500,
2000 and 8000 passes, per rule (r = 1.5).

Run: python benchmarks/look_spending.py  (about 20 s)
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import numpy as np
from scipy.stats import norm

from benchrun.stats.groupseq import Boundaries, crossing_probabilities, empty_boundaries
from benchrun.stats.sequential import look_schedule

ALPHA = 0.01
N0 = 10
RATIOS = (1.5, 1.25, 1.1)
ORACLES = (50, 200, 600, 2000)
BUDGET = 4  # the budget is BUDGET·n* passes
Z = norm.isf(ALPHA / 2) + norm.isf(0.2)


def _spending(r: float, looks: list[int], k: int) -> dict[str, Callable[[int], float]]:
    """Name -> F(I), the cumulative α that may have been spent by I passes."""

    def same_increments(n: int) -> float:
        return ALPHA * min(k, looks.index(n) + 1) / k

    def log_uniform(h: float) -> Callable[[int], float]:
        return lambda n: ALPHA * min(1.0, math.log(n * r / N0) / math.log(h * r / N0))

    def power(rho: float) -> Callable[[int], float]:
        return lambda n: ALPHA * (1.0 - (N0 / n) ** rho)

    return {
        "recursive, same increments": same_increments,
        "log-uniform to H=500": log_uniform(500.0),
        "log-uniform to H=2000": log_uniform(2000.0),
        "1-(n0/I)^0.25": power(0.25),
        "1-(n0/I)^0.5": power(0.5),
        "1-(n0/I)^1": power(1.0),
    }


def _spend(looks: list[int], cum: Callable[[int], float]) -> Boundaries:
    b = empty_boundaries()
    for n in looks:
        b = b.add(n, min(cum(n), ALPHA))
    return b


def main() -> None:
    t0 = time.perf_counter()
    cap = BUDGET * max(ORACLES)
    rows = []
    nominal: dict[str, list[float]] = {}
    for r in RATIOS:
        looks = list(look_schedule(N0, 10**7, r))
        looks = [n for n in looks if n <= cap]
        k = sum(1 for n in looks if n <= 500)
        bonf = [norm.isf(ALPHA / (2 * k)) if j < k else math.inf for j in range(len(looks))]
        designs = {f"Bonferroni a/K, K={k} to 500": bonf}
        for name, cum in _spending(r, looks, k).items():
            designs[name] = list(_spend(looks, cum).bounds)
        for name, bounds in designs.items():
            if r == 1.5:
                nominal[name] = [
                    2 * norm.sf(bounds[max(j for j, n in enumerate(looks) if n <= at)])
                    for at in (100, 500, 2000, 8000)
                ]
            for ns in ORACLES:
                theta = Z / math.sqrt(ns)
                m = sum(1 for n in looks if n <= BUDGET * ns)
                info, bd = looks[:m], bounds[:m]
                p = crossing_probabilities(info, bd, drift=theta, by_side=True)
                a0 = crossing_probabilities(info, bd).sum()
                up, tot = p[:, 0], p.sum(axis=1)
                power = up.sum()
                cdf = np.cumsum(tot)
                j = int(np.searchsorted(cdf, 0.5))
                median = info[j] / ns if j < m else math.inf
                mean = (np.dot(tot, info) + (1 - tot.sum()) * BUDGET * ns) / ns
                by_oracle = up[: sum(1 for n in info if n <= ns)].sum()
                rows.append((r, name, ns, by_oracle, power, median, mean, a0))
    print(
        f"two-sided alpha {ALPHA}, looks from n0 = {N0} passes at ratio r, budget {BUDGET}·n*; "
        "exact (stats/groupseq.py)"
    )
    head = f"{'r':>5}  {'rule':<28} {'n*':>5} {'P(n*)':>6} {'power':>6} {'median/n*':>9} {'mean/n*':>8} {'α@budget':>9}"
    print(head)
    print("-" * len(head))
    last = None
    for r, name, ns, by_oracle, power, median, mean, a0 in rows:
        if last is not None and (r, name) != last:
            print()
        last = (r, name)
        med = "inf" if math.isinf(median) else f"{median:.2f}"
        print(
            f"{r:>5}  {name:<28} {ns:>5} {by_oracle:>6.3f} {power:>6.3f} {med:>9} {mean:>8.2f} {a0:>9.5f}"
        )
    print("\nnominal two-sided p level of the look at or below n passes (r = 1.5)")
    print(f"{'rule':<28} " + " ".join(f"{n:>9}" for n in (100, 500, 2000, 8000)))
    for name, levels in nominal.items():
        print(f"{name:<28} " + " ".join(f"{v:>9.2e}" for v in levels))
    print(f"\n{time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
