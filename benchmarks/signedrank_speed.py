"""Time per call of ``stats.signed_rank_test`` (docs/methods.md §13.1) against scipy.

The controller calls :func:`signed_rank_test` at every look on up to a few thousand
per-pass log ratios d. For each n, median over repeats of one call on the same data
(t(3) noise around a 1 % shift, rounded to 1e-4 so that ties occur as with real timers,
and without rounding), next to ``scipy.stats.wilcoxon`` (its default method) on the same
data in the same invocation. The three are timed in turn within each repeat, so that load
from other processes falls on all of them alike. ``signed_rank_test`` does three signed-rank tests (p and the
two TOST sides) and four order statistics of the Walsh averages (the Hodges-Lehmann
estimate and its CI), so a ratio near 3-4 means each part costs about one scipy call.

    python benchmarks/signedrank_speed.py [--n 100 1000 5000 100000] [--repeats 21]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from scipy import stats as sps

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchrun.stats.signedrank import hodges_lehmann, signed_rank_test  # noqa: E402


def median_time(fn: Callable[[], object], repeats: int) -> float:
    """Median wall time of one call, in seconds."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[100, 1000, 5000, 100_000])
    ap.add_argument("--repeats", type=int, default=21)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    print(
        f"{'n':>7} {'data':>8} {'signed_rank_test':>17} {'hodges_lehmann':>15} "
        f"{'scipy wilcoxon':>15} {'ratio':>6}"
    )
    for n in args.n:
        raw = 0.00995 + 0.02 * rng.standard_t(3, n)
        for label, d in (("untied", raw), ("ties", np.round(raw, 4))):
            reps = args.repeats if n <= 10_000 else max(3, args.repeats // 4)
            fns = (
                lambda d=d: signed_rank_test(d),
                lambda d=d: hodges_lehmann(d),
                lambda d=d: sps.wilcoxon(d),
            )
            times: list[list[float]] = [[], [], []]
            for _ in range(reps):
                for fn, out in zip(fns, times, strict=True):
                    out.append(median_time(fn, 1))
            ours, hl, ref = (statistics.median(t) for t in times)
            print(
                f"{n:>7} {label:>8} {ours * 1e3:>14.3f} ms {hl * 1e3:>12.3f} ms "
                f"{ref * 1e3:>12.3f} ms {ours / ref:>6.1f}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
