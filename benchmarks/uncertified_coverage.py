"""Coverage of the uncertified 95 % interval on short series (docs/methods.md §4.1, issue 17).

Part 1, the marked interval alone (``stats.uncertified_mean_ci``, vectorised engine), on
SERIES stationary AR(1) series x_t = φ x_{t-1} + e_t (e_t iid N(0, 1), true mean 0,
τ = (1+φ)/(1-φ)) per row: coverage of the naive i.i.d. t interval, of the marked interval
("cov"), its mean width over the naive one ("width"), the median assumed bound T, the share
of series where the assumption T >= τ holds and the coverage over those.

Part 2, what a user is shown (``--shown``, slower: one call per series): the share of
series that ``stats.summarize`` (warm-up "none") and the collector (one reading per round,
warm-up "none") do not certify, and the coverage of what they print: the certified CI
where there is one, the marked interval otherwise.

    python benchmarks/uncertified_coverage.py [--series 20000] [--seed 7] [--shown 2000]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from scipy import signal

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchrun.runner.control.collector import collect  # noqa: E402
from benchrun.stats.summary import summarize  # noqa: E402
from benchrun.stats.uncertified import _intervals  # noqa: E402

PHIS = (0.0, 0.3, 0.5, 0.7, 0.9)
NS = (20, 30, 50, 100)


def ar1(phi: float, n: int, reps: int, rng: np.random.Generator) -> np.ndarray:
    e = rng.standard_normal((reps, n))
    x0 = rng.standard_normal(reps) / np.sqrt(1.0 - phi * phi)
    y, _ = signal.lfilter([1.0], [1.0, -phi], e, axis=1, zi=(phi * x0)[:, None])
    return y


def marked(series: int, seed: int) -> None:
    print(f"## the marked interval, {series} series per row, seed {seed}\n")
    print("| φ | τ | n | naive cov | cov | width | median T | T >= τ | cov if T >= τ |")
    print("|---|---|---|---|---|---|---|---|---|")
    rng = np.random.default_rng(seed)
    for phi in PHIS:
        tau = (1 + phi) / (1 - phi)
        for n in NS:
            x = ar1(phi, n, series, rng)
            mean, half, _, bound, _, naive = _intervals(x, 0.95)
            hit = np.abs(mean) <= half
            naive_cov = np.mean(np.abs(mean) <= naive)
            holds = bound >= tau - 1e-12
            cond = f"{hit[holds].mean():.3f}" if holds.any() else "-"
            print(
                f"| {phi:g} | {tau:.3g} | {n} | {naive_cov:.3f} | {hit.mean():.3f} | "
                f"{np.mean(half / naive):.2f} | {np.median(bound):.2f} | {holds.mean():.2f} "
                f"| {cond} |"
            )


def shown(series: int, seed: int) -> None:
    print(f"\n## what outputs print, {series} series per row, seed {seed}\n")
    print("| φ | n | summarize: not certified | cov shown | collector: not certified | cov shown |")
    print("|---|---|---|---|---|---|")
    rng = np.random.default_rng(seed + 1)
    for phi in (0.0, 0.3, 0.5):
        for n in (20, 30, 50):
            x = ar1(phi, n, series, rng)
            cells = []
            for fn in (
                lambda r: summarize(r, warmup="none"),
                lambda r: collect(r[:, None], warmup="none"),
            ):
                res = [fn(r) for r in x]
                unc = np.mean([not s.certified for s in res])
                cov = np.mean([s.interval_low <= 0.0 <= s.interval_high for s in res])
                cells += [f"{unc:.3f}", f"{cov:.3f}"]
            print(f"| {phi:g} | {n} | " + " | ".join(cells) + " |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--series", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--shown", type=int, default=2000, help="series per row of part 2 (0: skip)")
    a = ap.parse_args()
    t0 = time.perf_counter()
    marked(a.series, a.seed)
    if a.shown:
        shown(a.shown, a.seed)
    print(f"\n{time.perf_counter() - t0:.0f} s; naive = i.i.d. t interval, two-sided 95 %")


if __name__ == "__main__":
    main()
