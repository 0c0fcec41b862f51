"""How well each Linux signal measures a round's CPU wait (issue 27; docs/contention.md).

Known truth: a single-threaded CPU loop (``--loop`` iterations, ~100 ms) pinned to one CPU
waits for it only when something else runs there. Rounds alone, then with a hog (a busy
loop pinned to the same CPU), interleaved in blocks over ``--repeats`` repeats; per round,
read before the spawn and after the reap (outside the timed window):

  cgroup      ``some total=`` of the ``cpu.pressure`` of the cgroup the round runs in (the
              runner stays inside it, asleep in ``waitid`` while the round runs)
  system      ``some total=`` of ``/proc/pressure/cpu`` (the whole machine)
  schedstat   field 2 of the child's ``/proc/PID/schedstat`` (read before the reap)
  wall-cpu    wall time minus the child's user + sys time (from wait4)

Reported: per condition the median of each signal as a share of the round's wall time,
and the median absolute difference of cgroup and schedstat from wall - cpu (the truth of
a single-threaded CPU-bound round up to the spawn/reap overhead). The pressure files count
in µs (their resolution); schedstat in ns.

Usage: python benchmarks/contention_signal.py [--rounds 10] [--repeats 3] [--cpu N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchrun.runner.execute.containment import Containment
from benchrun.runner.execute.contention import (
    SYSTEM_PRESSURE,
    PressureReader,
    open_schedstat,
    read_run_delay_ns,
)


def one_round(containment: Containment, system: PressureReader, cpu: int, loop: int) -> dict:
    """One pinned loop, every signal read around it (ns)."""
    code = f"for _ in range({loop}): pass"
    c0, s0 = containment.cpu_wait_us(), system.some_us()
    t0 = time.monotonic_ns()
    pid = os.fork()
    if pid == 0:  # the child: pinned, then the loop
        os.sched_setaffinity(0, {cpu})
        os.execv(sys.executable, [sys.executable, "-S", "-c", code])
    fd = open_schedstat(pid)
    os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
    delay = read_run_delay_ns(fd) if fd is not None else None
    if fd is not None:
        os.close(fd)
    _, _, ru = os.wait4(pid, 0)
    wall = time.monotonic_ns() - t0
    c1, s1 = containment.cpu_wait_us(), system.some_us()
    return {
        "wall": wall,
        "cgroup": None if c0 is None or c1 is None else (c1 - c0) * 1000,
        "system": None if s0 is None or s1 is None else (s1 - s0) * 1000,
        "schedstat": delay,
        "wall-cpu": wall - int((ru.ru_utime + ru.ru_stime) * 1e9),
    }


def block(cpu: int, loop: int, n: int, hog: bool) -> list[dict]:
    containment = Containment.create()
    system = PressureReader(SYSTEM_PRESSURE)
    hog_proc = None
    if hog:
        code = f"import os\nos.sched_setaffinity(0, {{{cpu}}})\nwhile True: pass"
        hog_proc = subprocess.Popen([sys.executable, "-S", "-c", code])
        time.sleep(0.2)
    others = sorted(os.sched_getaffinity(0) - {cpu}) or [cpu]
    os.sched_setaffinity(0, others)  # the runner off the round's CPU
    try:
        containment.enter()  # the runner stays in the rounds' cgroup, as a campaign's does
        return [one_round(containment, system, cpu, loop) for _ in range(n)]
    finally:
        containment.leave()
        containment.close()
        system.close()
        if hog_proc is not None:
            hog_proc.kill()
            hog_proc.wait()


def summarize(rows: list[dict]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "rounds": len(rows),
        "wall_ms": statistics.median(r["wall"] for r in rows) / 1e6,
    }
    for k in ("cgroup", "system", "schedstat", "wall-cpu"):
        vals = [r[k] / r["wall"] for r in rows if r[k] is not None]
        out[f"{k}_share"] = statistics.median(vals) if vals else None
    for k in ("cgroup", "schedstat"):
        diffs = [abs(r[k] - r["wall-cpu"]) / 1e6 for r in rows if r[k] is not None]
        out[f"{k}_vs_wall-cpu_ms"] = statistics.median(diffs) if diffs else None
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=10, help="rounds per block")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--cpu", type=int, default=max(os.sched_getaffinity(0)))
    ap.add_argument("--loop", type=int, default=4_000_000, help="loop iterations (~100 ms)")
    ap.add_argument("--json", help="write the figures to this file")
    args = ap.parse_args()
    rows: dict[str, list[dict]] = {"alone": [], "hog": []}
    for _ in range(args.repeats):
        for cond in ("alone", "hog"):
            rows[cond] += block(args.cpu, args.loop, args.rounds, cond == "hog")
    result = {cond: summarize(r) for cond, r in rows.items()}
    result["load_average"] = os.getloadavg()[0]
    print(json.dumps(result, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
