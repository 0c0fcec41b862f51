"""Cost per call of ``runner.control.collector.collect``.

Series: i.i.d. normal and AR(1) φ = 0.9, as one reading per round (the adaptive loop's
time metrics) and as rounds of 10 readings (lists), and as an n x 1 array (the paired
series), at n = 50 and 150 (the drift simulation's sizes), 1 000 and 10 000. Prints the
median over the repeats of the time per call (the history of these figures:
docs/testing.md).

    python benchmarks/collect_speed.py [--repeats 7] [--seed 1]
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchrun.runner.control.collector import collect  # noqa: E402


def per_call(fn: Callable[[], object], budget: float = 0.2) -> float:
    """Seconds per call: as many calls as fit in ``budget`` seconds (at least 3)."""
    calls, t0 = 0, time.perf_counter()
    while True:
        fn()
        calls += 1
        elapsed = time.perf_counter() - t0
        if calls >= 3 and elapsed >= budget:
            return elapsed / calls


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    print(f"median of {args.repeats} repeats, seed {args.seed}")
    print(f"{'series':<14} {'layout':<12} {'n':>6} {'ms/call':>9}")
    for name in ("iid", "AR(1) 0.9"):
        for n in (50, 150, 1000, 10_000):
            e = rng.standard_normal(n)
            x = 10.0 + (e if name == "iid" else signal.lfilter([1.0], [1.0, -0.9], e))
            # lists as runner.results.workloads passes them, an n x 1 array as pair_stats
            layouts: dict[str, object] = {
                "1/round": [[float(v)] for v in x],
                "n x 1 array": x[:, None],
            }
            if n >= 100:
                layouts["10/round"] = x.reshape(n // 10, 10).tolist()
            for layout, rounds in layouts.items():
                t = [per_call(lambda r=rounds: collect(r)) for _ in range(args.repeats)]
                print(f"{name:<14} {layout:<12} {n:>6} {statistics.median(t) * 1e3:9.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
