"""Realised α when the z boundaries of stats/groupseq.py are used with a t statistic (issue 28).

The boundaries assume Z_k = S(I_k)/√I_k with the sd known. The controller estimates the sd
from the passes, so at look k it has t_k = mean/(s/√n_k). Two ways to use the boundary:
compare t_k with c_k directly ("t vs c"), or compare the t test's p-value with the look's
nominal level 2Φ(-c_k) ("p_t vs nominal", i.e. c_k mapped through Student's t with n_k - 1
df). Seeded simulation of iid normal per-pass values under H0, looks at n0 = 10 passes
growing by ratio r up to 2000, spending F(n) = α(1 - (n0/n)^ρ) (ρ = 0.25) or log-uniform
to H = 2000; prints the share of runs with any rejection and its standard error.

Run: python benchmarks/groupseq_t_alpha.py  (about a minute)
"""

from __future__ import annotations

import math
import time

import numpy as np
from scipy import stats

from benchrun.stats.groupseq import empty_boundaries
from benchrun.stats.sequential import look_schedule

N0, LAST, RUNS, CHUNK = 10, 2000, 60_000, 1_000


def boundaries(looks: list[int], alpha: float, kind: str, r: float) -> np.ndarray:
    b = empty_boundaries()
    for n in looks:
        if kind == "rho0.25":
            f = alpha * (1.0 - (N0 / n) ** 0.25)
        else:
            f = alpha * min(1.0, math.log(n * r / N0) / math.log(LAST * r / N0))
        b = b.add(n, f)
    return np.asarray(b.bounds)


def main() -> None:
    t0 = time.perf_counter()
    rng = np.random.default_rng(20261127)
    print(
        f"{'r':>5} {'spending':<12} {'alpha':>6} {'F(last)':>8} {'t vs c':>8} {'p_t vs nominal':>15} {'z (sd known)':>13}  SE"
    )
    for r in (1.5, 1.1):
        looks = list(look_schedule(N0, LAST, r))
        idx = np.asarray(looks) - 1
        n = np.asarray(looks, dtype=float)
        for kind in ("rho0.25", "log-H2000"):
            for alpha in (0.05, 0.01):
                c = boundaries(looks, alpha, kind, r)
                spent = alpha * (1 - (N0 / LAST) ** 0.25) if kind == "rho0.25" else alpha
                nominal = 2 * stats.norm.sf(c)
                crit_t = stats.t.isf(nominal / 2, n - 1)  # inf where nominal is 0
                hit_t = hit_p = hit_z = 0
                for _ in range(RUNS // CHUNK):
                    x = rng.standard_normal((CHUNK, LAST))
                    s1 = np.cumsum(x, axis=1)[:, idx]
                    s2 = np.cumsum(x * x, axis=1)[:, idx]
                    mean = s1 / n
                    sd = np.sqrt((s2 - n * mean**2) / (n - 1))
                    t = np.abs(mean / (sd / np.sqrt(n)))
                    z = np.abs(s1 / np.sqrt(n))
                    hit_t += int((t >= c).any(axis=1).sum())
                    hit_p += int((t >= crit_t).any(axis=1).sum())
                    hit_z += int((z >= c).any(axis=1).sum())
                se = math.sqrt(spent * (1 - spent) / RUNS)
                print(
                    f"{r:>5} {kind:<12} {alpha:>6} {spent:>8.4f} {hit_t / RUNS:>8.4f}"
                    f" {hit_p / RUNS:>15.4f} {hit_z / RUNS:>13.4f}  {se:.4f}"
                )
    print(f"\n{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
