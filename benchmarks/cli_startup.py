"""How long the ``benchrun`` command takes to start: each command line against
``python3 -c pass`` run in the same invocation, interleaved, medians over repeats.

    python benchmarks/cli_startup.py [--repeats 15] [--show results/demo]

Rows: ``--version``, ``--help``, ``validate configs/demo.yaml`` and, with ``--show DIR``,
``show DIR``. Columns: the median wall time (s) and its ratio to the baseline's median
(issue 30's target: ``--version`` within 8x ``python3 -c pass``). The console script of the
current environment is used (as a user runs it), else ``python -m benchrun.runner.cli``.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _benchrun() -> list[str]:
    exe = shutil.which("benchrun")
    return [exe] if exe else [sys.executable, "-m", "benchrun.runner.cli"]


def _wall(argv: list[str]) -> float:
    """Seconds from spawn to exit of ``argv`` (output discarded)."""
    t0 = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=15, help="runs of each command (default 15)")
    ap.add_argument("--show", type=Path, help="a campaign directory to time `show` on")
    args = ap.parse_args(argv)
    br = _benchrun()
    rows: dict[str, list[str]] = {
        "python3 -c pass": [sys.executable, "-c", "pass"],
        "benchrun --version": [*br, "--version"],
        "benchrun --help": [*br, "--help"],
        "benchrun validate configs/demo.yaml": [*br, "validate", str(REPO / "configs/demo.yaml")],
    }
    if args.show is not None:
        rows[f"benchrun show {args.show}"] = [*br, "show", str(args.show)]
    times: dict[str, list[float]] = {k: [] for k in rows}
    for _ in range(args.repeats):  # interleaved: a slow moment of the machine hits every row
        for name, cmd in rows.items():
            times[name].append(_wall(cmd))
    base = statistics.median(times["python3 -c pass"])
    print(f"{'command':<45} {'median s':>9} {'x baseline':>11}")
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"{name:<45} {med:>9.3f} {med / base:>11.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
