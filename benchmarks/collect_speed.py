"""Cost per call of ``runner.control.collector.collect``, new against the old implementation.

The old implementation is the frozen copy in tests/runner/test_collect_equivalence.py (as of
commit d037409); both run in this one process on the same seeded series, interleaved, and
the script prints the median time per call of each and their ratio. Series: i.i.d. normal
and AR(1) φ = 0.9, as one reading per round (the adaptive loop's time metrics) and as rounds
of 10 readings (lists), and as an n x 1 array (the paired series), at n = 50 and 150 (the drift simulation's sizes), 1 000 and 10 000. Every
pair of results is also checked equal (the test does that thoroughly).

    python benchmarks/collect_speed.py [--repeats 7] [--seed 1]
"""

from __future__ import annotations

import argparse
import importlib.util
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


def _old_collect() -> Callable[..., object]:
    path = ROOT / "tests" / "runner" / "test_collect_equivalence.py"
    spec = importlib.util.spec_from_file_location("collect_reference", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    fn: Callable[..., object] = mod.old_collect
    return fn


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
    old = _old_collect()
    rng = np.random.default_rng(args.seed)
    print(f"median of {args.repeats} repeats (interleaved), seed {args.seed}")
    print(f"{'series':<14} {'layout':<12} {'n':>6} {'old ms':>9} {'new ms':>9} {'old/new':>8}")
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
                assert collect(rounds) == old(rounds), (name, n, layout)
                t_old, t_new = [], []
                for _ in range(args.repeats):
                    t_old.append(per_call(lambda r=rounds: old(r)))
                    t_new.append(per_call(lambda r=rounds: collect(r)))
                a, b = statistics.median(t_old), statistics.median(t_new)
                print(f"{name:<14} {layout:<12} {n:>6} {a * 1e3:9.3f} {b * 1e3:9.3f} {a / b:8.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
