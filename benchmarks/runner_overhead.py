"""The runner's own cost per round: LocalExecutor.launch vs a bare subprocess loop vs hyperfine.

For each command (``true`` and ``python3 -c pass``) and each repeat, every method runs the
same number of rounds back to back; the methods are interleaved within a repeat so that
machine noise hits them alike. Reported per method: the median over repeats of
(loop wall time / rounds), i.e. what one round costs end to end including the runner's own
work, and the ratio to the bare ``subprocess.run`` loop. For LocalExecutor and hyperfine the
median of the per-round times they *record* is shown too (what ends up in the results).

Methods:
  subprocess.run            bare loop, output not captured (the baseline)
  subprocess.run+capture    bare loop with capture_output=True (benchrun always reads pipes)
  benchrun                  LocalExecutor.launch, not pinned
  benchrun pinned           LocalExecutor.launch with cpus=(last allowed CPU,)
  hyperfine -N              one hyperfine invocation of N runs (--shell=none, --export-json)

Usage: python benchmarks/runner_overhead.py [--rounds 200] [--repeats 5] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

from benchrun.runner.execute.executor import RoundSpec
from benchrun.runner.execute.local import LocalExecutor


def loop_bare(argv: list[str], n: int, capture: bool) -> tuple[float, list[float]]:
    t = time.perf_counter()
    for _ in range(n):
        subprocess.run(argv, capture_output=capture, check=True)
    return (time.perf_counter() - t) / n, []


def loop_benchrun(
    ex: LocalExecutor, argv: list[str], n: int, cpus: tuple[int, ...] | None
) -> tuple[float, list[float]]:
    spec = RoundSpec("bench", tuple(argv), dict(os.environ), timeout=60.0, cpus=cpus)
    recorded: list[float] = []
    t = time.perf_counter()
    for _ in range(n):
        out = ex.launch(spec)
        recorded.append(out.wall_ns / 1e9)
    per_round = (time.perf_counter() - t) / n
    if out.status != "ok":
        raise SystemExit(f"benchrun round failed: {out.reason}")
    return per_round, recorded


def loop_hyperfine(argv: list[str], n: int) -> tuple[float, list[float]]:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "h.json")
        cmd = ["hyperfine", "-N", "--runs", str(n), "--warmup", "0", "--style", "none"]
        cmd += ["--export-json", path, " ".join(argv)]
        t = time.perf_counter()
        subprocess.run(cmd, capture_output=True, check=True)
        per_round = (time.perf_counter() - t) / n
        with open(path) as fh:
            times = json.load(fh)["results"][0]["times"]
    return per_round, [float(x) for x in times]


def measure(argv: list[str], n: int, repeats: int) -> dict[str, dict[str, float | None]]:
    ex = LocalExecutor()
    last_cpu = max(os.sched_getaffinity(0))
    methods: dict[str, Callable[[], tuple[float, list[float]]]] = {
        "subprocess.run": lambda: loop_bare(argv, n, False),
        "subprocess.run+capture": lambda: loop_bare(argv, n, True),
        "benchrun": lambda: loop_benchrun(ex, argv, n, None),
        "benchrun pinned": lambda: loop_benchrun(ex, argv, n, (last_cpu,)),
    }
    if shutil.which("hyperfine"):
        methods["hyperfine -N"] = lambda: loop_hyperfine(argv, n)
    per_round: dict[str, list[float]] = {m: [] for m in methods}
    recorded: dict[str, list[float]] = {m: [] for m in methods}
    loop_bare(argv, 3, True)  # warm-up: page cache, first-use costs
    loop_benchrun(ex, argv, 3, None)
    for _ in range(repeats):
        for name, fn in methods.items():
            wall, rec = fn()
            per_round[name].append(wall)
            recorded[name].extend(rec)
    ex.close()
    base = statistics.median(per_round["subprocess.run"])
    result: dict[str, dict[str, float | None]] = {}
    for name in methods:
        med = statistics.median(per_round[name])
        result[name] = {
            "per_round_ms": med * 1e3,
            "ratio": med / base,
            "recorded_median_ms": statistics.median(recorded[name]) * 1e3
            if recorded[name]
            else None,
        }
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=200, help="rounds per loop for `true`")
    ap.add_argument("--py-rounds", type=int, default=40, help="rounds per loop for python3")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json", help="also write the figures to this file")
    args = ap.parse_args(argv)
    commands = {
        "true": (["true"], args.rounds),
        "python3 -c pass": (["python3", "-c", "pass"], args.py_rounds),
    }
    print(
        f"python {sys.version.split()[0]}, CPUs {sorted(os.sched_getaffinity(0))}, "
        f"repeats {args.repeats}; per round = median over repeats of loop wall / rounds"
    )
    report: dict[str, object] = {}
    for label, (cmd, n) in commands.items():
        res = measure(cmd, n, args.repeats)
        report[label] = res
        print(f"\n{label}  ({n} rounds per loop)")
        print(f"  {'method':<24} {'per round ms':>12} {'ratio':>7} {'recorded median ms':>19}")
        for name, row in res.items():
            rec = row["recorded_median_ms"]
            rec_s = f"{rec:19.3f}" if rec is not None else f"{'-':>19}"
            print(f"  {name:<24} {row['per_round_ms']:12.3f} {row['ratio']:7.3f} {rec_s}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(report, fh, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
