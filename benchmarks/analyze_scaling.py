"""Wall time and peak memory of ``benchrun analyze summary`` and ``compare`` against input size.

Writes long-form CSVs (columns ``benchmark,value``; 10 rows per group, group means spread
evenly so that the ranking has separated, equivalent and undecided neighbours) of 1 000,
10 000, 100 000 and 200 000 rows into a temporary directory, runs each command on each
file in a fresh ``benchrun`` child process (terminal output to /dev/null) and reports,
per size, the median over the repeats of the wall time (s) and of the child's maximum
resident set size (MB, ``ru_maxrss`` of that child from ``os.wait4``), with both ratios to
the smallest size. A child that exceeds ``--timeout`` seconds is killed and reported as
``> timeout``; its address space is capped at ``--max-gb`` (a MemoryError is reported as
failed). Prints a markdown table (docs/imported-data.md, "Scaling").

    python benchmarks/analyze_scaling.py [--rows 1000,10000,100000,200000] [--repeats 3]
        [--commands summary,compare] [--timeout 300] [--max-gb 8] [--seed 1]
        [--benchrun "python -m benchrun.runner.cli"]

``--benchrun`` names the command to time (default: the ``benchrun`` next to this
interpreter); with ``PYTHONPATH`` pointing at an unpacked older tree (``git archive``) it
times that version, which is how the "before" column of docs/imported-data.md was made.
"""

from __future__ import annotations

import argparse
import os
import resource
import shlex
import signal
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
ROWS_PER_GROUP = 10


@dataclass(frozen=True)
class Run:
    """One child: wall time in s, max RSS in MB, exit code (None: killed at the timeout)."""

    wall: float
    rss_mb: float
    rc: int | None


def write_csv(path: Path, rows: int, seed: int) -> None:
    """``rows`` readings in groups of 10: mean 1 + 0.001·g, CoV 1 %, 6 significant digits."""
    rng = np.random.default_rng(seed)
    groups = rows // ROWS_PER_GROUP
    means = 1.0 + 0.001 * np.repeat(np.arange(groups), ROWS_PER_GROUP)
    values = rng.normal(means, 0.01 * means)
    names = np.repeat([f"b{g:06d}" for g in range(groups)], ROWS_PER_GROUP)
    with path.open("w") as out:
        out.write("benchmark,value\n")
        out.writelines(f"{n},{v:.6g}\n" for n, v in zip(names, values, strict=True))


def run_once(argv: list[str], timeout: float, max_gb: float) -> Run:
    """Run ``argv`` in a child; wall time and that child's own ru_maxrss (os.wait4)."""
    limit = int(max_gb * 2**30)

    def cap() -> None:  # in the child, before exec
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        os.setsid()

    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        try:
            cap()
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            os.execvp(argv[0], argv)
        finally:
            os._exit(127)
    deadline = t0 + timeout
    while True:
        got, status, usage = os.wait4(pid, os.WNOHANG)
        if got == pid:
            wall = time.perf_counter() - t0
            return Run(wall, usage.ru_maxrss / 1024.0, os.waitstatus_to_exitcode(status))
        if time.perf_counter() > deadline:
            os.killpg(pid, signal.SIGKILL)
            _, status, usage = os.wait4(pid, 0)
            return Run(time.perf_counter() - t0, usage.ru_maxrss / 1024.0, None)
        time.sleep(0.02)


def benchrun_argv() -> list[str]:
    """The ``benchrun`` entry point of the running interpreter's environment."""
    exe = Path(sys.executable).with_name("benchrun")
    if exe.exists():
        return [str(exe)]
    return [sys.executable, "-m", "benchrun.runner.cli"]


def fmt_wall(runs: list[Run], timeout: float) -> tuple[str, float | None]:
    if any(r.rc is None for r in runs):
        return f"> {timeout:g} (killed)", None
    if any(r.rc != 0 for r in runs):
        return f"failed (rc {runs[0].rc})", None
    wall = statistics.median(r.wall for r in runs)
    return f"{wall:.2f}", wall


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="1000,10000,100000,200000")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--commands", default="summary,compare")
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--max-gb", type=float, default=8.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--benchrun", default=None, help="command to time (default: benchrun)")
    args = ap.parse_args()
    sizes = [int(s) for s in args.rows.split(",")]
    commands = args.commands.split(",")
    base = shlex.split(args.benchrun) if args.benchrun else benchrun_argv()
    print(
        f"benchrun analyze, {ROWS_PER_GROUP} rows per group, median of {args.repeats} "
        f"repeats, timeout {args.timeout:g} s, address space cap {args.max_gb:g} GB"
    )
    print()
    print("| command | rows | groups | wall s | x 1st size | max RSS MB | x 1st size |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    with tempfile.TemporaryDirectory(prefix="analyze-scaling-") as tmp:
        files = {}
        for rows in sizes:
            files[rows] = Path(tmp) / f"rows{rows}.csv"
            write_csv(files[rows], rows, args.seed)
        for command in commands:
            first: tuple[float | None, float] | None = None
            for rows in sizes:
                argv = [*base, "analyze", command, str(files[rows])]
                runs = []
                for _ in range(args.repeats):
                    run = run_once(argv, args.timeout, args.max_gb)
                    runs.append(run)
                    if run.rc != 0:  # killed or failed: one is enough
                        break
                wall_text, wall = fmt_wall(runs, args.timeout)
                rss = statistics.median(r.rss_mb for r in runs)
                if first is None:
                    first = (wall, rss)
                wall_ratio = f"{wall / first[0]:.1f}" if wall and first[0] else "-"
                print(
                    f"| {command} | {rows} | {rows // ROWS_PER_GROUP} | {wall_text} | "
                    f"{wall_ratio} | {rss:.0f} | {rss / first[1]:.1f} |",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
