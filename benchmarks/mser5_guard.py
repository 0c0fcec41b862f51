"""Figure: how often MSER-5 truncates clean series, and how well it finds a planted warm-up,
plain (docs/methods.md §2 formula, ``alpha=None``) vs benchrun's guarded version (default).

Run: python benchmarks/mser5_guard.py   (seeded; ~20 s)
Clean: iid N(0,1), 1 000 series per n. Planted: x_t = e_t + 8 exp(-t/25) for t < 50,
2 000 readings, 1 000 series; the truth is 50 readings of warm-up.
"""

from __future__ import annotations

import numpy as np

from benchrun.stats.warmup import mser5


def main() -> None:
    rng = np.random.default_rng(7)
    print("clean iid series: share of series truncated (any / half or more)")
    print(f"{'n':>6} {'plain any':>10} {'plain half':>11} {'guarded any':>12} {'guarded half':>13}")
    for n in (20, 30, 40, 100, 400, 2000):
        x = rng.standard_normal((1000, n))
        plain = np.array([mser5(r, alpha=None) for r in x])
        guarded = np.array([mser5(r) for r in x])
        half = n // 2 - 5
        print(
            f"{n:>6} {np.mean(plain > 0):>10.3f} {np.mean(plain >= half):>11.3f}"
            f" {np.mean(guarded > 0):>12.3f} {np.mean(guarded >= half):>13.3f}"
        )
    n = 2000
    t = np.arange(n)
    x = rng.standard_normal((1000, n)) + np.where(t < 50, 8.0 * np.exp(-t / 25.0), 0.0)
    for label, kw in (("plain", {"alpha": None}), ("guarded", {})):
        d = np.array([mser5(r, **kw) for r in x]) - 50
        print(
            f"planted warm-up of 50, {label:>8}: within ±10 {np.mean(np.abs(d) <= 10):.3f},"
            f" early by >10 {np.mean(d < -10):.3f}, late by >10 {np.mean(d > 10):.3f}"
        )


if __name__ == "__main__":
    main()
