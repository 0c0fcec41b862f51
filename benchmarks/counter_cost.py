"""What counting costs per round: a round launched by the local executor without
counters, with the software perf counters, and with ``instructions`` (perf where a PMU
exists, else cachegrind), interleaved, medians over repeats.

    python benchmarks/counter_cost.py [--repeats 11] [--cachegrind-repeats 5]

Rows: each counting mode of two workloads, ``/bin/true`` (the fixed cost) and
``python3 -c "sum(range(3000000))"`` (issue 33's race). Columns: the median seconds a
``launch`` took as the runner sees it (spawn, barrier, counting, reaping, reading the
counts), its ratio to the same workload without counting, and the median of the value
counted with its CoV over the repeats (docs/metrics.md has the table of this VM).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from benchrun.runner.execute.counters import plan_counters
from benchrun.runner.execute.executor import RoundSpec
from benchrun.runner.execute.local import LocalExecutor

WORKLOADS = {
    "true": ("/bin/true",),
    "race": ("python3", "-c", "sum(range(3000000))"),
}
MODES: dict[str, tuple[str, ...]] = {
    "none": (),
    "task_clock": ("task_clock",),
    "software (3)": ("task_clock", "context_switches", "page_faults"),
    "instructions": ("instructions",),
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=11, help="rounds of each cheap mode")
    ap.add_argument(
        "--cachegrind-repeats", type=int, default=5, help="rounds of instructions by cachegrind"
    )
    args = ap.parse_args(argv)
    plan = plan_counters(("instructions",))
    slow = plan.cachegrind
    print(f"instructions come from: {'cachegrind' if slow else 'perf_event'}")
    ex = LocalExecutor()
    env = dict(os.environ)
    costs: dict[tuple[str, str], list[float]] = {}
    values: dict[tuple[str, str], list[float]] = {}
    try:
        for i in range(max(args.repeats, args.cachegrind_repeats)):
            for wname, command in WORKLOADS.items():
                for mode, counters in MODES.items():
                    n = (
                        args.cachegrind_repeats
                        if slow and "instructions" in counters
                        else args.repeats
                    )
                    if i >= n:
                        continue
                    spec = RoundSpec(wname, command, env, 600.0, counters=counters)
                    t0 = time.perf_counter()
                    out = ex.launch(spec)
                    costs.setdefault((wname, mode), []).append(time.perf_counter() - t0)
                    assert out.status == "ok", out.reason
                    if out.counters:
                        values.setdefault((wname, mode), []).append(out.counters[0].value)
    finally:
        ex.close()
    print(
        f"{'workload':8} {'mode':14} {'median s':>10} {'x none':>8} {'first value':>14} {'CoV':>8}"
    )
    for wname in WORKLOADS:
        base = statistics.median(costs[(wname, "none")])
        for mode in MODES:
            xs = costs[(wname, mode)]
            med = statistics.median(xs)
            vs = values.get((wname, mode), [])
            val = f"{statistics.median(vs):14.4g}" if vs else f"{'-':>14}"
            cov = (
                f"{statistics.stdev(vs) / statistics.fmean(vs) * 100:7.3f}%"
                if len(vs) > 1 and statistics.fmean(vs)
                else f"{'-':>8}"
            )
            print(f"{wname:8} {mode:14} {med:10.4f} {med / base:8.2f} {val} {cov}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
