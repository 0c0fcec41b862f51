"""What starting a round's child costs, by the way it is spawned and pinned (issue 18).

Each method starts ``true`` N times the way runner/execute/local.py does (stdin from
/dev/null, stdout and stderr to pipes, its own session), reaps it with ``os.wait4`` and
times it with ``time.monotonic_ns`` from just before the spawn to just after the reap (the
*wall* a round would store). Methods, interleaved over ``--repeats`` repeats:

  popen               ``subprocess.Popen`` (CPython's ``_posixsubprocess``: vfork + exec)
  posix_spawnp        ``os.posix_spawnp`` (glibc: clone(CLONE_VM | CLONE_VFORK) + exec)
  fork_exec           ``os.fork`` then ``execvp`` in the child (copies the page tables)
  popen thread        ``subprocess.Popen`` in a thread pinned to the workload CPU (what
                      LocalExecutor does with ``pin: auto``; two thread hand-offs a round)
  popen migrate       the launching thread moved to the workload CPU for the spawn and back
  posix_spawnp thread ``os.posix_spawnp`` in the pinned thread

Every method runs in two child processes: a *small* runner (this script only) and a *large*
one (numpy and scipy imported and 200 MiB allocated and touched: the size a runner has
after an adaptive campaign's first decision), so the cost of a large parent shows.

Reported per method: microseconds per spawn of the whole loop (what a campaign of `true`
pays per round for the spawn), the median and the 90th percentile of the wall, and the
loop's ratio to ``popen`` in the same runner. Medians over repeats.

Usage: python benchmarks/spawn_paths.py [--n 2000] [--repeats 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ARGV = ["true"]


def _pipes() -> tuple[int, int, int, int]:
    out_r, out_w = os.pipe2(os.O_CLOEXEC)
    err_r, err_w = os.pipe2(os.O_CLOEXEC)
    return out_r, out_w, err_r, err_w


def spawn_popen(devnull: int, out_w: int, err_w: int, env: dict[str, str]) -> int:
    """``subprocess.Popen`` as LocalExecutor calls it; the pid."""
    proc = subprocess.Popen(
        ARGV, stdin=devnull, stdout=out_w, stderr=err_w, env=env, start_new_session=True
    )
    proc.returncode = -1  # reaped by the caller
    return proc.pid


def spawn_posix(devnull: int, out_w: int, err_w: int, env: dict[str, str]) -> int:
    """``os.posix_spawnp`` with the same stdin, pipes and new session; the pid."""
    actions = [
        (os.POSIX_SPAWN_DUP2, devnull, 0),
        (os.POSIX_SPAWN_DUP2, out_w, 1),
        (os.POSIX_SPAWN_DUP2, err_w, 2),
    ]
    return os.posix_spawnp(ARGV[0], ARGV, env, file_actions=actions, setsid=True)


def spawn_fork(devnull: int, out_w: int, err_w: int, env: dict[str, str]) -> int:
    """``os.fork`` and ``execvpe`` in the child; the pid."""
    pid = os.fork()
    if pid == 0:  # the child: no Python exception may escape
        try:
            os.setsid()
            os.dup2(devnull, 0)
            os.dup2(out_w, 1)
            os.dup2(err_w, 2)
            os.execvpe(ARGV[0], ARGV, env)
        finally:
            os._exit(127)
    return pid


class PinnedThread:
    """A thread pinned to ``cpus`` that runs jobs on request (as LocalExecutor's spawner)."""

    def __init__(self, cpus: set[int]) -> None:
        self._go = threading.Semaphore(0)
        self._done = threading.Semaphore(0)
        self._job: Callable[[], tuple[int, int]] | None = None
        self._result = (0, 0)
        self._thread = threading.Thread(target=self._run, args=(cpus,), daemon=True)
        self._thread.start()

    def _run(self, cpus: set[int]) -> None:
        os.sched_setaffinity(0, cpus)
        while True:
            self._go.acquire()
            if self._job is None:
                return
            self._result = self._job()
            self._done.release()

    def call(self, job: Callable[[], tuple[int, int]]) -> tuple[int, int]:
        """Run ``job`` in the pinned thread; what it returned ((start ns, pid))."""
        self._job = job
        self._go.release()
        self._done.acquire()
        return self._result

    def close(self) -> None:
        self._job = None
        self._go.release()
        self._thread.join()


def run_method(name: str, n: int, cpus: set[int], thread: PinnedThread) -> dict[str, float]:
    """Spawn and reap ``true`` n times with method ``name``: loop us/spawn, wall median and
    p90 in us."""
    devnull = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    env = dict(os.environ)
    base = name.split()[0]
    spawn = {"popen": spawn_popen, "posix_spawnp": spawn_posix, "fork_exec": spawn_fork}[base]
    walls = []
    saved = os.sched_getaffinity(0)
    start = time.perf_counter_ns()
    for _ in range(n):
        out_r, out_w, err_r, err_w = _pipes()
        if name.endswith("thread"):

            def job(o: int = out_w, e: int = err_w) -> tuple[int, int]:
                t = time.monotonic_ns()
                return t, spawn(devnull, o, e, env)

            t0, pid = thread.call(job)
        elif name.endswith("migrate"):
            os.sched_setaffinity(0, cpus)
            t0 = time.monotonic_ns()
            pid = spawn(devnull, out_w, err_w, env)
            os.sched_setaffinity(0, saved)
        else:
            t0 = time.monotonic_ns()
            pid = spawn(devnull, out_w, err_w, env)
        os.close(out_w)
        os.close(err_w)
        os.wait4(pid, 0)
        walls.append(time.monotonic_ns() - t0)
        os.close(out_r)
        os.close(err_r)
    loop = (time.perf_counter_ns() - start) / n
    os.close(devnull)
    walls.sort()
    return {
        "loop_us": loop / 1e3,
        "wall_median_us": statistics.median(walls) / 1e3,
        "wall_p90_us": walls[int(0.9 * (len(walls) - 1))] / 1e3,
    }


METHODS = (
    "popen",
    "posix_spawnp",
    "fork_exec",
    "popen thread",
    "popen migrate",
    "posix_spawnp thread",
)


def child(n: int, repeats: int, large: bool) -> dict[str, Any]:
    """Every method, interleaved over repeats, in this process (made large if asked)."""
    keep: Any = None
    if large:
        import numpy as np
        import scipy.stats  # noqa: F401

        keep = np.ones(200 * 2**20 // 8)  # 200 MiB, touched
    allowed = sorted(os.sched_getaffinity(0))
    workload = {allowed[-1]}
    # the runner on the other CPUs, as `pin: auto` does (on a 1-CPU machine: the same one)
    os.sched_setaffinity(0, set(allowed[:-1]) or workload)
    thread = PinnedThread(workload)
    rows: dict[str, list[dict[str, float]]] = {m: [] for m in METHODS}
    for _ in range(repeats):
        for m in METHODS:
            rows[m].append(run_method(m, n, workload, thread))
    thread.close()
    with open("/proc/self/status", encoding="utf-8") as f:
        rss = next(line.split()[1] for line in f if line.startswith("VmRSS"))
    del keep
    return {
        "rss_kib": int(rss),
        "methods": {
            m: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for m, rs in rows.items()
        },
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2000, help="spawns per method and repeat")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", help="also write the figures to this file")
    ap.add_argument("--child", choices=("small", "large"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.n, args.repeats, args.child == "large")))
        return 0
    out: dict[str, Any] = {}
    for size in ("small", "large"):
        done = subprocess.run(
            [
                sys.executable,
                __file__,
                "--child",
                size,
                "--n",
                str(args.n),
                "--repeats",
                str(args.repeats),
            ],
            check=True,
            capture_output=True,
            text=True,
        )
        out[size] = json.loads(done.stdout.strip().splitlines()[-1])
    print(
        f"python {sys.version.split()[0]}, CPUs {sorted(os.sched_getaffinity(0))}, {args.n} "
        f"spawns of `true` per method, medians over {args.repeats} repeats; load average "
        f"{os.getloadavg()[0]:.1f}"
    )
    print(
        f"{'method':<22} {'runner':<16} {'loop us':>8} {'ratio':>6} {'wall med':>9} {'wall p90':>9}"
    )
    for m in METHODS:
        for size, doc in out.items():
            row = doc["methods"][m]
            ref = doc["methods"]["popen"]["loop_us"]
            label = f"{size} {doc['rss_kib'] // 1024} MiB"
            print(
                f"{m:<22} {label:<16} {row['loop_us']:8.1f} {row['loop_us'] / ref:6.2f} "
                f"{row['wall_median_us']:9.1f} {row['wall_p90_us']:9.1f}"
            )
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
