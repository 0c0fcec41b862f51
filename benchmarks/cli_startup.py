"""How long the ``benchrun`` command takes to start: each command line against
``python3 -c pass`` run in the same invocation, interleaved, medians over repeats.

    python benchmarks/cli_startup.py [--repeats 15] [--show results/demo]

Rows: ``--version``, ``--help``, ``validate configs/demo.yaml`` and ``show DIR``, the
demo's campaign (``results/demo`` of ``benchrun run configs/demo.yaml`` run in the
repository; ``--show`` names another; left out, with a line saying so, when there is
none). Columns: the median wall time (s), its ratio to the baseline's median (issue 30's
targets: ``--version`` within 8x ``python3 -c pass``, ``show`` of the demo under 0.5 s)
and the median CPU time (user + system, s) of the command, which a machine busy with other
jobs inflates less than the wall time. The console script of the current environment is
used (as a user runs it), else ``python -m benchrun.runner.cli``. The commands run with
their bytecode cached, as a user's do: without ``PYTHONDONTWRITEBYTECODE`` (set, it makes
every run compile benchrun's modules again, about 0.1 s of each command) and after one
untimed run of each.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: the campaign ``benchrun run configs/demo.yaml`` writes, run in the repository
DEMO_CAMPAIGN = REPO / "results" / "demo"


def _benchrun() -> list[str]:
    exe = shutil.which("benchrun")
    return [exe] if exe else [sys.executable, "-m", "benchrun.runner.cli"]


#: the children's environment: this one, with their bytecode written and read (module doc)
_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _run(argv: list[str]) -> tuple[float, float]:
    """Seconds from spawn to exit of ``argv`` (output discarded), and the CPU seconds
    (user + system) it used."""
    before = os.times()
    t0 = time.perf_counter()
    subprocess.run(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, env=_ENV
    )
    wall = time.perf_counter() - t0
    after = os.times()
    cpu = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    return wall, cpu


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=15, help="runs of each command (default 15)")
    ap.add_argument(
        "--show",
        type=Path,
        default=DEMO_CAMPAIGN,
        help="a campaign directory to time `show` on (default: the demo's, results/demo)",
    )
    args = ap.parse_args(argv)
    br = _benchrun()
    rows: dict[str, list[str]] = {
        "python3 -c pass": [sys.executable, "-c", "pass"],
        "benchrun --version": [*br, "--version"],
        "benchrun --help": [*br, "--help"],
        "benchrun validate configs/demo.yaml": [*br, "validate", str(REPO / "configs/demo.yaml")],
    }
    if (args.show / "benchrun.db").is_file() or args.show.is_file():
        rows[f"benchrun show {args.show}"] = [*br, "show", str(args.show)]
    else:
        print(f"no campaign in {args.show}: run `benchrun run configs/demo.yaml` for the show row")
    for cmd in rows.values():  # untimed: writes the bytecode the timed runs read
        _run(cmd)
    walls: dict[str, list[float]] = {k: [] for k in rows}
    cpus: dict[str, list[float]] = {k: [] for k in rows}
    for _ in range(args.repeats):  # interleaved: a slow moment of the machine hits every row
        for name, cmd in rows.items():
            wall, cpu = _run(cmd)
            walls[name].append(wall)
            cpus[name].append(cpu)
    base = statistics.median(walls["python3 -c pass"])
    print(f"{'command':<45} {'median s':>9} {'x baseline':>11} {'cpu s':>7}")
    for name, ts in walls.items():
        med = statistics.median(ts)
        print(f"{name:<45} {med:>9.3f} {med / base:>11.1f} {statistics.median(cpus[name]):>7.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
