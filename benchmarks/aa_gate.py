"""The gate on A/A campaign pairs: how often does identical code fail it? (issue 27)

Runs PAIRS pairs of campaigns of one experiment (a control ``sum(range(N))`` loop and a
zlib workload, adaptive mode with a budget of MAX_TIME s each, real processes), the first of each pair into store A and the
second into store B, and after each pair runs ``benchrun compare A B
--fail-on-regression 5% --json`` four ways: as is (conditions checked), with
``--allow-different-conditions`` (the verdicts as before issue 27),
``--normalise-by-control``, and both. The truth is "no change", so every exit 1 is a false
alarm. At the end it compares A and B with ``--campaign-level`` (PAIRS campaigns per
side). Prints the count of each exit code per variant and the reasons of the "not
comparable" verdicts.

    python benchmarks/aa_gate.py [--pairs 10] [--max-time 30] [--keep DIR]

The machine is shared while this runs (other helpers' tests): the figures are noisy.
"""

from __future__ import annotations

import argparse
import collections
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from control_workload import WORKLOADS

EXPERIMENT = (
    """\
name: {name}
settings:
  max_time: {max_time}s
  warmup_rounds: 2
"""
    + WORKLOADS
)

VARIANTS = {
    "conditions checked": [],
    "--allow-different-conditions": ["--allow-different-conditions"],
    "--normalise-by-control": ["--normalise-by-control"],
    "both": ["--allow-different-conditions", "--normalise-by-control"],
}


def compare(benchrun: Path, a: Path, b: Path, extra: list[str]) -> tuple[int, dict]:
    """Exit code and JSON document of one ``benchrun compare``."""
    proc = subprocess.run(
        [str(benchrun), "compare", str(a), str(b), "--fail-on-regression", "5%", "--json", *extra],
        capture_output=True,
        text=True,
        check=False,
    )
    return proc.returncode, (json.loads(proc.stdout) if proc.stdout.strip() else {})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=10)
    ap.add_argument("--max-time", type=int, default=30, help="budget of a campaign, s")
    ap.add_argument("--keep", help="directory for the stores (default: a temporary one)")
    args = ap.parse_args()
    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="aa-gate-"))
    base.mkdir(parents=True, exist_ok=True)
    benchrun = Path(sys.executable).with_name("benchrun")
    for side in ("A", "B"):
        (base / f"{side}.yaml").write_text(EXPERIMENT.format(name=side, max_time=args.max_time))
    codes: dict[str, collections.Counter[int]] = {v: collections.Counter() for v in VARIANTS}
    reasons: collections.Counter[str] = collections.Counter()
    start = time.perf_counter()
    for i in range(args.pairs):
        for side in ("A", "B"):
            subprocess.run(
                [str(benchrun), "run", str(base / f"{side}.yaml"), "-o", str(base), "-q"],
                check=True,
                stdout=subprocess.DEVNULL,
            )
        for name, extra in VARIANTS.items():
            rc, doc = compare(benchrun, base / "A", base / "B", extra)
            codes[name][rc] += 1
            if not extra:
                for r in doc.get("not_comparable", []):
                    reasons[r["reason"].split(":")[1].strip().split(" ")[0]] += 1
        print(f"pair {i + 1}/{args.pairs}: {dict(codes['conditions checked'])}", file=sys.stderr)
    print(f"{args.pairs} A/A pairs, adaptive, {args.max_time} s budget each, gate 5 %")
    print("| variant | exit 0 | exit 1 (false alarm) | exit 3 |")
    print("|---|---|---|---|")
    for name, c in codes.items():
        print(f"| {name} | {c[0]} | {c[1]} | {c[3]} |")
    print(f"not comparable, by first reason (workload-pairs): {dict(reasons)}")
    rc, doc = compare(benchrun, base / "A", base / "B", ["--campaign-level"])
    rows = {w["name"]: w["headline"] for w in doc.get("workloads", [])}
    print(f"--campaign-level ({args.pairs} vs {args.pairs} campaigns): exit {rc}; {rows}")
    rc, doc = compare(
        benchrun, base / "A", base / "B", ["--campaign-level", "--allow-different-conditions"]
    )
    rows = {w["name"]: w["headline"] for w in doc.get("workloads", [])}
    print(f"--campaign-level --allow-different-conditions: exit {rc}; {rows}")
    print(f"({time.perf_counter() - start:.0f} s, stores in {base})")


if __name__ == "__main__":
    main()
