"""What reading a round's CPU wait costs the runner (issue 27; docs/contention.md).

The wait is read outside the timed window: the rounds' cgroup's ``cpu.pressure`` before
the spawn and after the reap (two ``pread`` of a descriptor kept open, and parsing the
``some`` line), or without a cgroup the leader's ``/proc/PID/schedstat`` (an open after the
spawn, a ``pread`` before the reap, a close). Measured here, interleaved over
``--repeats`` repeats, medians:

  reads         the two reads of one round alone, N times (µs per round), for the
                cgroup's pressure (:meth:`Containment.cpu_wait_us`), the schedstat
                (open, pread, close of this process's own file), and /proc/pressure/cpu
  rounds        LocalExecutor launching ``true`` N times with the wait read (as a campaign
                runs) and with it turned off (the baseline: the reads patched out), the
                runner's µs per round for each and their ratio, in the same invocation

The issue's budget: at most 20 µs a round outside the timed window.

Usage: python benchmarks/contention_cost.py [--n 2000] [--repeats 5] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

from benchrun.runner.execute import local
from benchrun.runner.execute.containment import Containment
from benchrun.runner.execute.contention import (
    SYSTEM_PRESSURE,
    PressureReader,
    open_schedstat,
    read_run_delay_ns,
)
from benchrun.runner.execute.executor import RoundSpec
from benchrun.runner.execute.local import LocalExecutor

ENV = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}


def per_call_us(fn: Callable[[], object], n: int) -> float:
    """Microseconds per call of ``fn`` over ``n`` calls."""
    t0 = time.perf_counter_ns()
    for _ in range(n):
        fn()
    return (time.perf_counter_ns() - t0) / n / 1e3


def reads(n: int) -> dict[str, float]:
    """µs per round of each signal's reads (two for pressure, open+pread+close for
    schedstat). The containment is made here: the executors of :func:`rounds_us` make
    (and remove) the same cgroup, named after this process."""
    containment = Containment.create()
    system = PressureReader(SYSTEM_PRESSURE)
    pid = os.getpid()

    def cgroup() -> None:
        containment.cpu_wait_us()
        containment.cpu_wait_us()

    def schedstat() -> None:
        fd = open_schedstat(pid)
        if fd is not None:
            read_run_delay_ns(fd)
            os.close(fd)

    def system_pressure() -> None:
        system.some_us()
        system.some_us()

    out = {"empty": per_call_us(lambda: None, n)}
    if containment.cgroup is not None:
        out["cgroup cpu.pressure (2 reads)"] = per_call_us(cgroup, n)
    out["schedstat (open, read, close)"] = per_call_us(schedstat, n)
    out["/proc/pressure/cpu (2 reads)"] = per_call_us(system_pressure, n)
    system.close()
    if containment.cgroup is not None and containment.cpu_wait_us() is None:
        raise RuntimeError("the cgroup's cpu.pressure could not be read")
    containment.close()
    return out


def rounds_us(n: int, measure_wait: bool) -> float:
    """The runner's µs per round of ``true`` (wall of the loop / n), the wait read or not."""
    ex = LocalExecutor(stay_in_cgroup=True)
    saved_wait, saved_open = Containment.cpu_wait_us, local.open_schedstat
    if not measure_wait:
        Containment.cpu_wait_us = lambda self: None  # type: ignore[method-assign]
        local.open_schedstat = lambda pid: None  # type: ignore[assignment]
    try:
        spec = RoundSpec("true", ("true",), ENV, 10)
        ex.launch(spec)  # the cgroup and the spawner made
        t0 = time.perf_counter_ns()
        for _ in range(n):
            ex.launch(spec)
        return (time.perf_counter_ns() - t0) / n / 1e3
    finally:
        Containment.cpu_wait_us = saved_wait  # type: ignore[method-assign]
        local.open_schedstat = saved_open
        ex.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2000, help="reads (and rounds / 4) per repeat")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json", help="write the figures to this file")
    args = ap.parse_args()
    probe = Containment.create()
    print(f"containment: {probe.kind}; load average {os.getloadavg()[0]:.2f}")
    probe.close()
    read_runs: list[dict[str, float]] = []
    with_wait: list[float] = []
    without: list[float] = []
    n_rounds = max(50, args.n // 4)
    for _ in range(args.repeats):
        read_runs.append(reads(args.n))
        without.append(rounds_us(n_rounds, measure_wait=False))
        with_wait.append(rounds_us(n_rounds, measure_wait=True))
    result: dict[str, Any] = {
        "reads_us_per_round": {k: statistics.median(r[k] for r in read_runs) for k in read_runs[0]},
        "round_us_without_wait": statistics.median(without),
        "round_us_with_wait": statistics.median(with_wait),
        "ratio_with_to_without": statistics.median(
            w / b for w, b in zip(with_wait, without, strict=True)
        ),
        "n": args.n,
        "repeats": args.repeats,
    }
    for k, v in result["reads_us_per_round"].items():
        print(f"  {k:34s} {v:7.2f} µs per round")
    print(
        f"  rounds of `true`: {result['round_us_without_wait']:.0f} µs without the wait, "
        f"{result['round_us_with_wait']:.0f} µs with it "
        f"(ratio {result['ratio_with_to_without']:.3f}; medians of {args.repeats})"
    )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
