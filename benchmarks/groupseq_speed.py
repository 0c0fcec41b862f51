"""Time of one Boundaries.add (stats/groupseq.py) at looks 1..40 (issue 28; docs/methods.md §10.1).

Three schedules: close looks (information ratio 1.0001), the controller's geometric looks
(ratio 1.5) and far looks (ratio 1000 every 8th look, i.e. 1000^(1/8) ≈ 2.37 per look, plus
one jump of 1000 between two looks), α spent uniformly over 40 looks. Prints the median
and the largest wall time of an add, its median CPU time (the VM is shared: wall time
includes waiting for a core) and the wall time of crossing_probabilities for all 40 looks.

Run: python benchmarks/groupseq_speed.py
"""

from __future__ import annotations

import statistics
import time

from benchrun.stats.groupseq import crossing_probabilities, empty_boundaries

SCHEDULES = {
    "ratio 1.0001": [10 * 1.0001**k for k in range(40)],
    "ratio 1.5": [10 * 1.5**k for k in range(40)],
    "ratio 1000^(1/8)": [10 * 1000 ** (k / 8) for k in range(39)],
    "one jump of 1000": [1.0 + k for k in range(20)] + [1000.0 * (21 + k) for k in range(20)],
}


def main() -> None:
    print(
        f"{'schedule':<18} {'add median ms':>13} {'add max ms':>10} {'add CPU median ms':>17}"
        f" {'crossing 40 looks ms':>20}"
    )
    for name, info in SCHEDULES.items():
        times, cpu = [], []
        for _ in range(3):
            b = empty_boundaries()
            for k, i in enumerate(info):
                t, c = time.perf_counter(), time.process_time()
                b = b.add(i, 0.05 * (k + 1) / len(info))
                times.append(time.perf_counter() - t)
                cpu.append(time.process_time() - c)
        t = time.perf_counter()
        crossing_probabilities(b.info, b.bounds, drift=0.1)
        whole = time.perf_counter() - t
        print(
            f"{name:<18} {1e3 * statistics.median(times):>13.2f} {1e3 * max(times):>10.2f}"
            f" {1e3 * statistics.median(cpu):>17.2f} {1e3 * whole:>20.1f}"
        )


if __name__ == "__main__":
    main()
