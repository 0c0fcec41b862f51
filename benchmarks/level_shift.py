"""Known-truth rows for the warm-up / level-shift rule (docs/methods.md §2.1, issue 27).

Run: python benchmarks/level_shift.py [--reps 500] [--seed 5] [--calibrate]   (seeded; ~15 s)

Per row (per-round values, time metric, lower is better; noise cv 1 % or 5 %; lengths 20,
40, 100): (a) a real warm-up, +50 % decaying with time constant 3 or 8 rounds; (b/c) a
step of +20 % / +100 % at the middle; (d) the same warm-up followed by the step; (e)
stationary iid, AR(1) φ 0.7 and 0.9 and lognormal (σ 1) series. Columns: **shift** = share of
series with a level shift reported (stats.levelshift.steady_start); **at ±2** = share of
those whose shift lies within 2 rounds of the truth; **cut** = share cut as warm-up now,
and **old cut** = share cut by the rule before (guarded MSER-5 at 0.001, the collector's
ROUNDS_WARMUP_ALPHA), with their median cut. Before issue 27 every row had shift 0 (the
rule did not exist) and the steps (b, c) were either cut as warm-up (the quiet first half
dropped, the disturbed half certified) or kept as one level. Then benchmarks/mser5_guard.py's
rows (a planted warm-up of 50 readings in 2 000, clean iid series) before and after.

``--calibrate`` prints the 99 % and 99.9 % quantiles of the SN statistic for iid, AR(1) φ
0.5, 0.7 and 0.9 and lognormal series of each length (20 000 series each, ~25 s): the source
of ``stats.levelshift.SN_TABLE``.
"""

from __future__ import annotations

import argparse

import numpy as np
from scipy import signal

from benchrun.stats.levelshift import sn_statistic, steady_start
from benchrun.stats.warmup import mser5


def ar1(phi: float, shape: tuple[int, int], rng: np.random.Generator) -> np.ndarray:
    """Stationary AR(1) rows with unit marginal variance."""
    e = rng.standard_normal(shape) * np.sqrt(1 - phi * phi)
    x0 = rng.standard_normal(shape[0])
    y, _ = signal.lfilter([1.0], [1.0, -phi], e, axis=-1, zi=(phi * x0)[:, None])
    return np.asarray(y)


def row(name: str, x: np.ndarray, truth: int | None) -> None:
    got = [steady_start(r, worse="higher") for r in x]
    old = np.array([mser5(r, alpha=0.001) for r in x])
    shift = np.array([s.shift is not None for s in got])
    cut = np.array([s.warmup for s in got])
    at = np.array([s.shift.at if s.shift else -99 for s in got])
    near = "-"
    if truth is not None and shift.any():
        near = f"{np.mean(np.abs(at[shift] - truth) <= 2):.3f}"
    print(
        f"{name:34s} {shift.mean():>6.3f} {near:>6s} {np.mean(cut > 0):>6.3f} "
        f"{np.median(cut):>5.0f} {np.mean(old > 0):>8.3f} {np.median(old):>5.0f}"
    )


def rows(reps: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    print(
        f"{'row':34s} {'shift':>6s} {'at ±2':>6s} {'cut':>6s} {'med':>5s} {'old cut':>8s} {'med':>5s}"
    )
    for n in (20, 40, 100):
        t = np.arange(n)
        k = n // 2
        for cv in (0.01, 0.05):
            z = cv * rng.standard_normal((reps, n))
            for tc in (3, 8):
                row(
                    f"(a) warm-up τ{tc} n{n} cv{cv:.0%}",
                    100 * (1 + 0.5 * np.exp(-t / tc) + z),
                    None,
                )
            for step in (0.2, 1.0):
                lvl = np.where(t < k, 1.0, 1.0 + step)
                row(f"(b/c) step +{step:.0%} n{n} cv{cv:.0%}", 100 * (1 + z) * lvl, k)
                warm = 1 + 0.5 * np.exp(-t / 3) + z
                row(f"(d) warm-up+step +{step:.0%} n{n} cv{cv:.0%}", 100 * warm * lvl, k)
            row(f"(e) iid n{n} cv{cv:.0%}", 100 * (1 + cv * rng.standard_normal((reps, n))), None)
            row(f"(e) AR(1) 0.7 n{n} cv{cv:.0%}", 100 * (1 + cv * ar1(0.7, (reps, n), rng)), None)
            row(f"(e) AR(1) 0.9 n{n} cv{cv:.0%}", 100 * (1 + cv * ar1(0.9, (reps, n), rng)), None)
            logn = (np.exp(rng.standard_normal((reps, n))) - np.exp(0.5)) / 2.16
            row(f"(e) lognormal n{n} cv{cv:.0%}", 100 * (1 + cv * logn), None)


def guard_rows(reps: int, seed: int) -> None:
    """benchmarks/mser5_guard.py's rows through the new rule: the planted warm-up (2 000
    readings, 8·exp(-t/25) for t < 50) and clean iid series (the cut at the collector's
    0.001 before and after; values 100 + N(0, 1))."""
    rng = np.random.default_rng(seed)
    n = 2000
    t = np.arange(n)
    x = 100 + rng.standard_normal((reps, n)) + np.where(t < 50, 8.0 * np.exp(-t / 25.0), 0.0)
    old = np.array([mser5(r, alpha=0.001) for r in x])
    got = [steady_start(r, worse="higher") for r in x]
    new = np.array([s.warmup for s in got])
    print(
        f"planted warm-up of 50 (mser5_guard): same cut as before {np.mean(old == new):.3f}, "
        f"within ±10: before {np.mean(np.abs(old - 50) <= 10):.3f}, "
        f"after {np.mean(np.abs(new - 50) <= 10):.3f}, "
        f"level shift {np.mean([s.shift is not None for s in got]):.3f}"
    )
    for n in (20, 40, 100, 400):
        x = 100 + rng.standard_normal((reps, n))
        old = np.array([mser5(r, alpha=0.001) for r in x])
        got = [steady_start(r, worse="higher") for r in x]
        print(
            f"clean iid n {n}: cut before {np.mean(old > 0):.3f}, "
            f"after {np.mean([s.warmup > 0 for s in got]):.3f}, "
            f"level shift {np.mean([s.shift is not None for s in got]):.3f}"
        )


def calibrate(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for n in (20, 25, 30, 40, 50, 70, 100, 150, 200, 300, 500, 1000):
        out = []
        for kind in ("iid", "ar0.5", "ar0.7", "ar0.9", "lognormal"):
            g = []
            for _ in range(4):
                if kind == "iid":
                    x = rng.standard_normal((5000, n))
                elif kind == "lognormal":
                    x = np.exp(rng.standard_normal((5000, n)))
                else:
                    x = ar1(float(kind[2:]), (5000, n), rng)
                g.append(sn_statistic(x)[0])
            q = np.quantile(np.concatenate(g), [0.99, 0.999])
            out.append(f"{kind} {q[0]:.1f}/{q[1]:.1f}")
        print(n, "; ".join(out), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=500)
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--calibrate", action="store_true")
    a = ap.parse_args()
    if a.calibrate:
        calibrate(a.seed)
    else:
        rows(a.reps, a.seed)
        guard_rows(a.reps, a.seed)


if __name__ == "__main__":
    main()
