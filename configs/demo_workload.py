"""Demo workload that reports its own readings: times ITERATIONS small sorts.

Prints one line ``time=<milliseconds> ms`` per iteration, which the demo experiment
captures with a regex (``readings:``). Usage: python3 demo_workload.py ITERATIONS
"""

import random
import sys
import time

iterations = int(sys.argv[1]) if len(sys.argv) > 1 else 20
rng = random.Random(42)
data = [rng.random() for _ in range(20_000)]
for _ in range(iterations):
    t0 = time.perf_counter_ns()
    sorted(data)
    print(f"time={(time.perf_counter_ns() - t0) / 1e6:.4f} ms")
