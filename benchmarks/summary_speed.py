"""Wall time of ``stats.summarize`` on 1 000 000 readings (docs/methods.md §1-5).

Median over 5 repeats of ``summarize`` (default path: MSER-5 warm-up, FFT autocorrelation,
subsession CI, median CI, Shapiro-Wilk on subsession means) on two series, iid lognormal
and AR(1) φ = 0.9 plus a constant offset, and the ratio to ``numpy.sort`` of the same array
timed in the same script. Target: under 2 s.

    python benchmarks/summary_speed.py [--n 1000000] [--repeats 5] [--seed 1]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from scipy import signal

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchrun.stats.summary import summarize  # noqa: E402


def median_time(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    series = {
        "iid lognormal": rng.lognormal(0.0, 0.5, args.n),
        "AR(1) phi=0.9": 100.0 + signal.lfilter([1.0], [1.0, -0.9], rng.standard_normal(args.n)),
    }
    print(f"n = {args.n}, median of {args.repeats} repeats, seed {args.seed}")
    print(f"{'series':<16} {'summarize s':>12} {'np.sort s':>10} {'ratio':>7}  q x h")
    for name, x in series.items():
        summarize(x[:1000])  # warm imports
        t_sum = median_time(lambda x=x: summarize(x), args.repeats)
        t_sort = median_time(lambda x=x: np.sort(x), args.repeats)
        s = summarize(x)
        print(
            f"{name:<16} {t_sum:12.3f} {t_sort:10.4f} {t_sum / t_sort:7.1f}  "
            f"{s.subsession_size} x {s.n_subsessions}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
